/* test_onnx_model.c — loading ONNX models: what loads, and the messages for what does not. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "onnx/onnx_test.h"

/* Parses `p` (then frees it) and returns the status; the model, if any, is freed. */
static loom_status parse_pb(pb *p, loom_onnx_model **out) {
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_parse(p->d, p->len, "mem.onnx", NULL, &m);
  pb_free(p);
  if (out) *out = m;
  else loom_onnx_model_free(m);
  return s;
}

/* A graph: x: f32[N, ?, 3] -> Relu -> y */
static void relu_graph(pb *g) {
  const char *dims[] = {"N", "?", "3"};
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  pb_node(g, "Relu", "relu0", ins, outs, NULL);
  pb_str(g, 2, "g");
  pb_value_info(g, 11, "x", 1, 3, dims);
  pb_value_info(g, 12, "y", 1, 3, dims);
}

LOOM_TEST(onnx, loads_conformance_add) {
  loom_onnx_model *m;
  loom_status s = loom_onnx_model_load(NODE_DIR "/test_add/model.onnx", &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  cr_assert_eq(m->graph->n_inputs, 2);
  cr_assert_eq(m->graph->n_outputs, 1);
  cr_assert_eq(m->graph->n_nodes, 1);
  cr_assert_str_eq(m->graph->nodes[0].op_type, "Add");
  cr_assert_str_eq(m->graph->nodes[0].domain, "");
  cr_assert_geq(loom_onnx_model_opset(m, ""), 13);
  cr_assert_eq(loom_onnx_model_opset(m, "ai.onnx"), loom_onnx_model_opset(m, ""));
  const loom_onnx_value *x = &m->graph->inputs[0];
  cr_assert_eq(x->kind, LOOM_ONNX_TYPE_TENSOR);
  cr_assert_eq(x->elem_type, LOOM_ONNX_ELEM_FLOAT);
  cr_assert(x->has_shape);
  cr_assert_eq(x->rank, 3);
  cr_assert_eq(x->dims[0].kind, LOOM_ONNX_DIM_VALUE);
  cr_assert_eq(x->dims[0].value, 3);
  /* Names are interned: node input 0 is the very pointer of graph input 0. */
  cr_assert_eq(m->graph->nodes[0].inputs[0], x->name);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_onnx_model_print_sb(m, &sb);
  const char *text = loom_strbuf_cstr(&sb);
  cr_assert(strstr(text, "x: f32[3, 4, 5]") != NULL, "%s", text);
  cr_assert(strstr(text, "0  Add(x, y) -> (sum)") != NULL, "%s", text);
  loom_strbuf_free(&sb);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, symbolic_and_unnamed_dims) {
  pb g = {0}, model = {0};
  relu_graph(&g);
  pb_model(&model, 17, &g);
  loom_onnx_model *m;
  loom_status s = parse_pb(&model, &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  const loom_onnx_value *x = &m->graph->inputs[0];
  cr_assert_eq(x->dims[0].kind, LOOM_ONNX_DIM_PARAM);
  cr_assert_str_eq(x->dims[0].param, "N");
  cr_assert_eq(x->dims[1].kind, LOOM_ONNX_DIM_UNKNOWN);
  cr_assert_eq(x->dims[2].kind, LOOM_ONNX_DIM_VALUE);
  /* The same dim_param in two places is the same interned name. */
  cr_assert_eq(m->graph->outputs[0].dims[0].param, x->dims[0].param);
  cr_assert_eq(loom_onnx_model_opset(m, ""), 17);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_onnx_model_print_sb(m, &sb);
  cr_assert(strstr(loom_strbuf_cstr(&sb), "x: f32[N, ?, 3]") != NULL, "%s", loom_strbuf_cstr(&sb));
  cr_assert(strstr(loom_strbuf_cstr(&sb), "0  Relu 'relu0'(x) -> (y)") != NULL, "%s", loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, attributes_of_every_kind) {
  pb g = {0}, model = {0}, attrs = {0}, a = {0};
  pb_str(&a, 1, "alpha"), pb_int(&a, 20, 1), pb_f32(&a, 2, 0.5f), pb_msg(&attrs, 5, &a);
  pb_str(&a, 1, "axis"), pb_int(&a, 20, 2), pb_int(&a, 3, -1), pb_msg(&attrs, 5, &a);
  pb_str(&a, 1, "mode"), pb_int(&a, 20, 3), pb_str(&a, 4, "constant"), pb_msg(&attrs, 5, &a);
  pb_str(&a, 1, "perm"), pb_int(&a, 20, 7), pb_int(&a, 8, 2), pb_int(&a, 8, 0), pb_int(&a, 8, 1), pb_msg(&attrs, 5, &a);
  pb_str(&a, 1, "scales"), pb_int(&a, 20, 6), pb_f32(&a, 7, 1.5f), pb_f32(&a, 7, 2.0f), pb_msg(&attrs, 5, &a);
  pb_str(&a, 1, "names"), pb_int(&a, 20, 8), pb_str(&a, 9, "a"), pb_str(&a, 9, "bc"), pb_msg(&attrs, 5, &a);
  /* A tensor attribute: int64 [2] from int64_data. */
  pb t = {0};
  pb_int(&t, 1, 2), pb_int(&t, 2, 7), pb_int(&t, 7, 5), pb_int(&t, 7, -6), pb_str(&t, 8, "c");
  pb_str(&a, 1, "value"), pb_int(&a, 20, 4), pb_msg(&a, 5, &t), pb_msg(&attrs, 5, &a);
  /* No type field (old models): inferred from the field present. */
  pb_str(&a, 1, "untyped"), pb_int(&a, 3, 42), pb_msg(&attrs, 5, &a);
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Custom", NULL, ins, outs, &attrs);
  const char *dims[] = {"2"};
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_status s = parse_pb(&model, &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  const loom_onnx_node *n = &m->graph->nodes[0];
  cr_assert_eq(n->n_attrs, 8);
  cr_assert_float_eq(loom_onnx_node_attr(n, "alpha")->f, 0.5f, 0);
  cr_assert_eq(loom_onnx_node_attr(n, "axis")->i, -1);
  cr_assert_str_eq(loom_onnx_node_attr(n, "mode")->s, "constant");
  const loom_onnx_attr *perm = loom_onnx_node_attr(n, "perm");
  cr_assert_eq(perm->kind, LOOM_ONNX_ATTR_INTS);
  cr_assert_eq(perm->count, 3);
  cr_assert_eq(perm->ints[0], 2);
  cr_assert_float_eq(loom_onnx_node_attr(n, "scales")->floats[1], 2.0f, 0);
  cr_assert_str_eq(loom_onnx_node_attr(n, "names")->strings[1], "bc");
  const loom_onnx_attr *v = loom_onnx_node_attr(n, "value");
  cr_assert_eq(v->t->dtype, LOOM_DTYPE_I64);
  cr_assert_eq(((int64_t *)v->t->data)[1], -6);
  cr_assert_eq(loom_onnx_node_attr(n, "untyped")->kind, LOOM_ONNX_ATTR_INT);
  cr_assert_null(loom_onnx_node_attr(n, "nope"));
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, subgraphs_see_outer_names) {
  /* If(cond) { then: Identity(x) } else { Neg(x) } where x is an outer graph input. */
  pb g = {0}, model = {0}, attrs = {0}, a = {0}, then_g = {0}, else_g = {0};
  const char *dims[] = {"N"};
  const char *xin[] = {"x", NULL}, *tout[] = {"t", NULL}, *eout[] = {"e", NULL};
  pb_node(&then_g, "Identity", NULL, xin, tout, NULL);
  pb_str(&then_g, 2, "then_body");
  pb_value_info(&then_g, 12, "t", 1, 1, dims);
  pb_node(&else_g, "Neg", NULL, xin, eout, NULL);
  pb_str(&else_g, 2, "else_body");
  pb_value_info(&else_g, 12, "e", 1, 1, dims);
  pb_str(&a, 1, "then_branch"), pb_int(&a, 20, 5), pb_msg(&a, 6, &then_g), pb_msg(&attrs, 5, &a);
  pb_str(&a, 1, "else_branch"), pb_int(&a, 20, 5), pb_msg(&a, 6, &else_g), pb_msg(&attrs, 5, &a);
  const char *ins[] = {"c", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "If", "if0", ins, outs, &attrs);
  pb_value_info(&g, 11, "c", 9, 0, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_status s = parse_pb(&model, &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  const loom_onnx_attr *tb = loom_onnx_node_attr(&m->graph->nodes[0], "then_branch");
  cr_assert_eq(tb->kind, LOOM_ONNX_ATTR_GRAPH);
  cr_assert_str_eq(tb->g->nodes[0].op_type, "Identity");
  cr_assert_eq(tb->g->parent, m->graph);
  cr_assert_eq(tb->g->owner, &m->graph->nodes[0]);
  cr_assert_str_eq(tb->g->owner_attr, "then_branch");
  cr_assert_eq(loom_onnx_graph_find_value(tb->g, "t")->rank, 1);
  cr_assert_eq(loom_onnx_graph_find_value(m->graph, "c")->elem_type, LOOM_ONNX_ELEM_BOOL);
  cr_assert_null(loom_onnx_graph_find_value(m->graph, "t"));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_onnx_model_print_sb(m, &sb);
  cr_assert(strstr(loom_strbuf_cstr(&sb), "then_branch: graph 'then_body'") != NULL, "%s", loom_strbuf_cstr(&sb));
  cr_assert(strstr(loom_strbuf_cstr(&sb), "      0  Neg(x) -> (e)") != NULL, "%s", loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, file_errors) {
  loom_onnx_model *m = NULL;
  EXPECT_ERROR(loom_onnx_model_load("no/such/model.onnx", &m), NOT_FOUND,
               "cannot open 'no/such/model.onnx': No such file or directory");
  EXPECT_ERROR(loom_onnx_model_load("tests", &m), INVALID_ARGUMENT, "'tests' is not a regular file (a directory): refusing to read it as a model file");
  char path[] = "/tmp/loom-onnx-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  /* An empty file is a valid, empty ModelProto: it has no graph. */
  EXPECT_ERROR(loom_onnx_model_load(path, &m), INVALID_ARGUMENT, "the model has no graph");
  EXPECT_ERROR(loom_onnx_model_parse(NULL, 0, "nothing.onnx", NULL, &m), INVALID_ARGUMENT,
               "nothing.onnx: the model has no graph");
  FILE *f = fopen(path, "wb");
  fputs("this is not an onnx file\n", f);
  fclose(f);
  EXPECT_ERROR(loom_onnx_model_load(path, &m), DATA_LOSS, "malformed ONNX model");
  unlink(path);
  cr_assert_null(m);
}

LOOM_TEST(onnx, truncated_model_names_the_field) {
  FILE *f = fopen(NODE_DIR "/test_add/model.onnx", "rb");
  cr_assert_not_null(f);
  unsigned char buf[4096];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_parse(buf, n / 2, "add.onnx", NULL, &m);
  cr_assert(s != LOOM_OK);
  const char *t = loom_status_text(s, 0);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_DATA_LOSS, "%s", t);
  cr_assert(strstr(t, "add.onnx: malformed ONNX model: in ModelProto.graph") != NULL, "%s", t);
  cr_assert(strstr(t, "truncated") != NULL, "%s", t);
  loom_status_free(s);
  /* A corrupted length deep inside: the path names the node. */
  pb g = {0}, model = {0}, node = {0};
  relu_graph(&g);
  pb_str(&node, 4, "Relu");
  pb_key(&node, 2, 2), pb_varint(&node, 1000), pb_raw(&node, "y", 1); /* output: 1000 bytes declared */
  pb_msg(&g, 1, &node);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), DATA_LOSS,
               "in ModelProto.graph.node[1], field 2 (output) at byte");
}

LOOM_TEST(onnx, deep_nesting_is_refused) {
  /* 40 levels of If-in-If: each level is node -> attribute -> graph. */
  pb inner = {0};
  pb_str(&inner, 2, "leaf");
  for (int i = 0; i < 40; i++) {
    pb a = {0}, attrs = {0}, g = {0};
    pb_str(&a, 1, "then_branch"), pb_int(&a, 20, 5), pb_msg(&a, 6, &inner), pb_msg(&attrs, 5, &a);
    pb_node(&g, "If", NULL, NULL, NULL, &attrs);
    inner = g;
  }
  pb model = {0};
  pb_model(&model, 13, &inner);
  EXPECT_ERROR(parse_pb(&model, NULL), DATA_LOSS, "messages nested deeper than 96 levels");
}

LOOM_TEST(onnx, inconsistent_graphs) {
  const char *dims[] = {"2"};
  const char *x[] = {"x", NULL}, *y[] = {"y", NULL}, *q[] = {"q", NULL};
  pb g = {0}, model = {0};
  /* Two nodes define y. */
  pb_node(&g, "Relu", "a", x, y, NULL);
  pb_node(&g, "Neg", "b", x, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), ALREADY_EXISTS,
               "mem.onnx: node 1 (Neg 'b') output 0: the name 'y' is already defined in this graph");
  /* A node reads a name nothing defines. */
  pb_node(&g, "Relu", NULL, q, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), NOT_FOUND,
               "mem.onnx: node 0 (Relu): input 0 'q' is not a graph input, an initializer or an output of an earlier node");
  /* A graph output nothing produces. */
  pb_node(&g, "Relu", NULL, x, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "z", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), NOT_FOUND, "graph output 0 'z' is not produced");
  /* Duplicate graph inputs. */
  pb_node(&g, "Relu", NULL, x, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), ALREADY_EXISTS, "graph input 1: the name 'x' is already defined");
  /* Duplicate initializers. */
  for (int i = 0; i < 2; i++) {
    pb t = {0};
    float v[2] = {1, 2};
    pb_int(&t, 1, 2), pb_int(&t, 2, 1), pb_str(&t, 8, "w"), pb_bytes(&t, 9, v, sizeof v);
    pb_msg(&g, 5, &t);
  }
  pb_node(&g, "Relu", NULL, x, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), ALREADY_EXISTS, "initializer 1: the name 'w' is already used by another initializer");
  /* An initializer that disagrees with its graph input declaration. */
  {
    pb t = {0};
    float v[2] = {1, 2};
    pb_int(&t, 1, 2), pb_int(&t, 2, 1), pb_str(&t, 8, "x"), pb_bytes(&t, 9, v, sizeof v);
    pb_msg(&g, 5, &t);
  }
  const char *three[] = {"3"};
  pb_node(&g, "Relu", NULL, x, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, three);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), TYPE_ERROR,
               "mem.onnx: initializer 'x' (also graph input 0): dim 0 is 2 but the model declares 'x' with 3");
  /* The same attribute twice. */
  pb attrs = {0}, a = {0};
  pb_str(&a, 1, "alpha"), pb_int(&a, 20, 1), pb_f32(&a, 2, 0.5f), pb_msg(&attrs, 5, &a);
  pb_str(&a, 1, "alpha"), pb_int(&a, 20, 1), pb_f32(&a, 2, 0.7f), pb_msg(&attrs, 5, &a);
  pb_node(&g, "LeakyRelu", "lr", x, y, &attrs);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), ALREADY_EXISTS, "node 0 (LeakyRelu 'lr'): attribute 'alpha' appears twice");
  /* A node without op_type. */
  pb n = {0};
  pb_str(&n, 1, "x"), pb_str(&n, 2, "y"), pb_str(&n, 3, "mystery");
  pb_msg(&g, 1, &n);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), INVALID_ARGUMENT, "node 0 ('mystery') has no op_type");
  /* A node without outputs (the fuzzer's find: its handler bound a missing output name). */
  const char *none[] = {NULL};
  pb_node(&g, "Relu", "r", x, none, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "x", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), INVALID_ARGUMENT, "mem.onnx: node 0 (Relu 'r') has no outputs");
  /* An opset imported twice. */
  pb_node(&g, "Relu", NULL, x, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  pb op = {0};
  pb_str(&op, 1, "ai.onnx"), pb_int(&op, 2, 14), pb_msg(&model, 8, &op);
  EXPECT_ERROR(parse_pb(&model, NULL), ALREADY_EXISTS, "opset_import 1: domain 'ai.onnx' is imported twice");
  /* A negative declared dim. */
  const char *neg[] = {"-4"};
  pb_node(&g, "Relu", NULL, x, y, NULL);
  pb_value_info(&g, 11, "x", 1, 1, neg);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  EXPECT_ERROR(parse_pb(&model, NULL), INVALID_ARGUMENT, "graph input 'x': dim 0 is -4 (negative)");
}

LOOM_TEST(onnx, subgraph_errors_name_their_node) {
  pb g = {0}, model = {0}, attrs = {0}, a = {0}, body = {0};
  const char *zin[] = {"nowhere", NULL}, *tout[] = {"t", NULL};
  pb_node(&body, "Identity", NULL, zin, tout, NULL);
  pb_str(&a, 1, "then_branch"), pb_int(&a, 20, 5), pb_msg(&a, 6, &body), pb_msg(&attrs, 5, &a);
  const char *ins[] = {"c", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "If", "if0", ins, outs, &attrs);
  pb_value_info(&g, 11, "c", 9, 0, NULL);
  pb_model(&model, 13, &g);
  loom_status s = parse_pb(&model, NULL);
  cr_assert(s != LOOM_OK);
  const char *t = loom_status_text(s, 0);
  cr_assert(strstr(t, "input 0 'nowhere' is not a graph input") != NULL, "%s", t);
  cr_assert(strstr(t, "while loading the graph in attribute 'then_branch' of node 0 (If 'if0')") != NULL, "%s", t);
  loom_status_free(s);
}

LOOM_TEST(onnx, out_of_memory_at_every_allocation) {
  /* A model with subgraphs, attributes and initializers, then a test data set: every
   * allocation through Loom's allocators is made to fail in turn; each failure must come
   * back as an out-of-memory status, with nothing leaked. */
  const char *model = NODE_DIR "/test_loop11/model.onnx";
  size_t failures_seen = 0;
  for (long n = 0;; n++) {
    loom_onnx_model *m = NULL;
    loom_onnx_test_set *ts = NULL;
    loom_alloc_fail_after(n);
    loom_status s = loom_onnx_model_load(model, &m);
    if (!s) s = loom_onnx_test_set_load(NODE_DIR "/test_loop11/test_data_set_0", m, &ts);
    long injected = loom_alloc_injected_failures();
    loom_alloc_fail_after(-1);
    if (s) {
      cr_assert_eq(loom_status_code(s), LOOM_CODE_RESOURCE_EXHAUSTED, "n=%ld: %s", n, loom_status_text(s, 1));
      loom_status_free(s);
      failures_seen++;
    }
    loom_onnx_test_set_free(ts);
    loom_onnx_model_free(m);
    if (injected == 0) {
      cr_assert(s == LOOM_OK);
      break;
    }
    cr_assert(n < 100000);
  }
  cr_assert_gt(failures_seen, 10);
}

LOOM_TEST(onnx, cli_onnx_info) {
  loom_test_proc p = loom_test_run("%s onnx-info %s/test_if/model.onnx --data %s/test_if/test_data_set_0",
                                   loom_test_loom_bin(), NODE_DIR, NODE_DIR);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "0  If(cond) -> (res)") != NULL, "%s", p.out);
  cr_assert(strstr(p.out, "then_branch: graph 'then_body'") != NULL, "%s", p.out);
  cr_assert(strstr(p.out, "output_0: f32[5] res") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s onnx-info no/such.onnx", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "error: not found: cannot open 'no/such.onnx'") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("head -c 100 %s/test_add/model.onnx > /tmp/loom-onnx-cut.onnx && %s onnx-info /tmp/loom-onnx-cut.onnx",
                    NODE_DIR, loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "error: corrupt data: /tmp/loom-onnx-cut.onnx: malformed ONNX model: in ModelProto.graph") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  unlink("/tmp/loom-onnx-cut.onnx");
  p = loom_test_run("%s onnx-info", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 2);
  loom_test_proc_free(&p);
}

/* A model whose one initializer 'w' (f32[n], w[i] = i) is bigger than LOOM_ALLOC_LARGE_MIN:
 * its bytes go to a mapping of their own (onnx_model.c's protobuf allocator). */
static void big_initializer_model(pb *model, size_t n) {
  pb g = {0}, t = {0};
  float *v = malloc(n * sizeof *v);
  cr_assert_not_null(v);
  for (size_t i = 0; i < n; i++) v[i] = (float)i;
  pb_int(&t, 1, (int64_t)n), pb_int(&t, 2, 1), pb_str(&t, 8, "w"), pb_bytes(&t, 9, v, n * sizeof *v);
  free(v);
  pb_msg(&g, 5, &t);
  char len[32];
  snprintf(len, sizeof len, "%zu", n);
  const char *dims[] = {len}, *ins[] = {"w", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Relu", NULL, ins, outs, NULL);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(model, 13, &g);
}

/* w holds the ramp; copied (16-byte aligned) or, loaded from a file, where it lies in the file's
 * mapping (a view at any alignment: read bytewise). */
static void expect_ramp(const loom_onnx_model *m, size_t n) {
  const loom_onnx_tensor *w = loom_onnx_graph_find_initializer(m->graph, "w");
  cr_assert_not_null(w);
  cr_assert_eq(w->nbytes, n * sizeof(float));
  const uint8_t *d = w->data, *map = m->file_map;
  if (map) cr_assert(d >= map && d + w->nbytes <= map + m->file_len && m->view_bytes == w->nbytes, "not in the file");
  else cr_assert_eq((uintptr_t)w->data % 16, 0);
  float f;
  for (size_t i = 0; i < n; i += 4093) {
    memcpy(&f, d + 4 * i, 4);
    cr_assert_eq(f, (float)i, "w[%zu]", i);
  }
  memcpy(&f, d + 4 * (n - 1), 4);
  cr_assert_eq(f, (float)(n - 1));
}

LOOM_TEST(onnx, large_initializers_parse_load_and_report_out_of_memory) {
  const size_t n = LOOM_ALLOC_LARGE_MIN / 4 * 3 + 7; /* 3 MiB and a bit */
  pb model = {0};
  big_initializer_model(&model, n);
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  cr_assert_eq(m->nlarges, 1, "the raw_data is the one large allocation");
  expect_ramp(m, n);
  loom_onnx_model_free(m);
  /* from a file (mapped, not read; the weight used where it lies, not copied) */
  char path[] = "/tmp/loom-test-big-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, model.d, model.len), (ssize_t)model.len);
  close(fd);
  s = loom_onnx_model_load(path, &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  expect_ramp(m, n);
  loom_onnx_model_free(m);
  unlink(path);
  /* no memory for the weight's bytes: said so, not "does not parse" */
  loom_alloc_fail_after(0);
  m = NULL;
  s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &m);
  loom_alloc_fail_after(-1);
  pb_free(&model);
  cr_assert_null(m);
  EXPECT_ERROR(s, RESOURCE_EXHAUSTED, "mem.onnx: out of memory for an initializer's bytes");
}
