/* test_onnx_str.c — string tensors from ONNX (onnx_tensor.c's string_data, onnx_import_str.c):
 * a STRING TensorProto decoded into loom_str handles (empty and UTF-8 elements, a 0-element
 * tensor), LabelEncoder from keys_strings / a STRING keys_tensor to integers, StringConcat and
 * RegexFullMatch imported and run on the interpreter, and the refusals: a number where a
 * string is required, float values for LabelEncoder, a compile of a string model. The node
 * suite's string tests run through tests/onnx/test_conformance_run.c's floor. */
#include "graph/graph.h"
#include "graph/legalize.h"
#include "loom.h"
#include "onnx/onnx_test.h"

/* Appends a STRINGS attribute `name` of n strings to attrs. */
static void strs_attr(pb *attrs, const char *name, size_t n, const char *const *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 8);
  for (size_t i = 0; i < n; i++) pb_str(&a, 9, v[i]);
  pb_msg(attrs, 5, &a);
}

/* Appends an INTS attribute `name` of n values to attrs. */
static void ints_attr(pb *attrs, const char *name, size_t n, const int64_t *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 7);
  for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
  pb_msg(attrs, 5, &a);
}

/* A graph value holding the n strings v (1-D). */
static loom_graph_value str_value(size_t n, const char *const *v) {
  loom_graph_value x;
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_STRING, 1, (int64_t[]){(int64_t)n}, &x));
  for (size_t i = 0; i < n; i++) cr_assert(!loom_graph_tensor_set_str(&x.t, i, v[i], strlen(v[i])));
  return x;
}

/* Builds a one-node model of domain `domain` (NULL: the default) and imports it. */
static loom_status import_node(const char *domain, const char *op, const onnx_test_io *ins, size_t nin,
                               const onnx_test_io *out, pb *attrs, loom_onnx_model **mm, loom_graph_module **gm) {
  pb g = {0}, model = {0}, n = {0}, opset = {0};
  for (size_t i = 0; i < nin; i++) pb_str(&n, 1, ins[i].name);
  pb_str(&n, 2, out->name), pb_str(&n, 3, "node"), pb_str(&n, 4, op);
  if (domain) pb_str(&n, 7, domain);
  if (attrs) pb_raw(&n, attrs->d, attrs->len), pb_free(attrs);
  pb_msg(&g, 1, &n);
  for (size_t i = 0; i < nin; i++) pb_value_info(&g, 11, ins[i].name, ins[i].elem, ins[i].rank, (const char **)ins[i].dims);
  pb_value_info(&g, 12, out->name, out->elem, out->rank, (const char **)out->dims);
  pb_model(&model, 21, &g);
  if (domain) pb_str(&opset, 1, domain), pb_int(&opset, 2, 4), pb_msg(&model, 8, &opset);
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, mm);
  pb_free(&model);
  *gm = NULL;
  return s ? s : loom_onnx_import(*mm, gm);
}

LOOM_TEST(onnx_str, string_tensor_decodes_to_handles) {
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  pb p = {0};
  pb_int(&p, 1, 3), pb_int(&p, 2, 8), pb_str(&p, 8, "names"), pb_str(&p, 6, "a"), pb_bytes(&p, 6, "", 0),
      pb_str(&p, 6, "\xe4\xb8\xad");
  loom_onnx_tensor *t;
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->dtype, LOOM_DTYPE_STRING);
  cr_assert_eq(t->nbytes, 3 * sizeof(loom_str));
  const loom_str *e = t->data;
  cr_assert(e[0].len == 1 && !memcmp(e[0].data, "a", 1));
  cr_assert(e[1].len == 0);
  cr_assert(e[2].len == 3 && !memcmp(e[2].data, "\xe4\xb8\xad", 3));
  /* a 0-element string tensor */
  pb_int(&p, 1, 0), pb_int(&p, 2, 8);
  cr_assert(onnx_test_parse_tensor(&p, &arena, &t) == LOOM_OK);
  cr_assert_eq(t->numel, 0);
  loom_arena_destroy(&arena);
}

LOOM_TEST(onnx_str, label_encoder_strings_to_ints) {
  onnx_test_io x = {"x", 8, 1, {"n"}}, y = {"y", 7, 1, {"n"}};
  pb attrs = {0};
  strs_attr(&attrs, "keys_strings", 3, (const char *[]){"a", "b", "c"});
  ints_attr(&attrs, "values_int64s", 3, (int64_t[]){10, 20, 30});
  onnx_test_int_attr(&attrs, "default_int64", -7);
  loom_onnx_model *mm;
  loom_graph_module *gm;
  cr_assert(import_node("ai.onnx.ml", "LabelEncoder", &x, 1, &y, &attrs, &mm, &gm) == LOOM_OK);
  /* lengths 0, 1 and 5 in one compilation of @main */
  for (size_t n = 0; n <= 5; n += n ? 4 : 1) {
    loom_graph_value in = str_value(n, (const char *[]){"c", "a", "zz", "", "b"}), out;
    cr_assert(loom_graph_eval(gm, "main", 1, &in, NULL, &out) == LOOM_OK);
    static const int64_t want[] = {30, 10, -7, -7, 20};
    cr_assert_eq(out.t.dtype, LOOM_DTYPE_I64);
    cr_assert_eq(out.t.numel, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(((int64_t *)out.t.data)[i], want[i], "n %zu element %zu", n, i);
    loom_graph_value_free(&out), loom_graph_value_free(&in);
  }
  loom_graph_module_destroy(gm), loom_onnx_model_free(mm);

  /* to floats: refused by name */
  pb a2 = {0}, fl = {0};
  strs_attr(&a2, "keys_strings", 1, (const char *[]){"a"});
  pb_str(&fl, 1, "values_floats"), pb_int(&fl, 20, 6), pb_f32(&fl, 7, 1.5f), pb_msg(&a2, 5, &fl);
  EXPECT_ERROR(import_node("ai.onnx.ml", "LabelEncoder", &x, 1, &y, &a2, &mm, &gm), UNIMPLEMENTED,
               "LabelEncoder to strings or floats is not supported");
  loom_onnx_model_free(mm);
  /* a number where a string is required */
  pb a3 = {0};
  strs_attr(&a3, "keys_strings", 1, (const char *[]){"a"});
  ints_attr(&a3, "values_int64s", 1, (int64_t[]){1});
  onnx_test_io xf = {"x", 1, 1, {"n"}};
  EXPECT_ERROR(import_node("ai.onnx.ml", "LabelEncoder", &xf, 1, &y, &a3, &mm, &gm), INVALID_ARGUMENT,
               "input 0 ('x') has element type f32; STRING is required");
  loom_onnx_model_free(mm);
}

LOOM_TEST(onnx_str, concat_and_regex_import) {
  onnx_test_io ins[2] = {{"a", 8, 1, {"n"}}, {"b", 8, 0, {NULL}}}, z = {"z", 8, 1, {"n"}};
  loom_onnx_model *mm;
  loom_graph_module *gm;
  cr_assert(onnx_test_import_one("StringConcat", "cat", ins, 2, &z, NULL, &mm, &gm) == LOOM_OK);
  loom_graph_value in[2] = {str_value(2, (const char *[]){"x", ""}), {0}}, out;
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_STRING, 0, NULL, &in[1]));
  cr_assert(!loom_graph_tensor_set_str(&in[1].t, 0, "!", 1));
  cr_assert(loom_graph_eval(gm, "main", 2, in, NULL, &out) == LOOM_OK);
  loom_str r0 = loom_graph_tensor_get_str(&out.t, 0), r1 = loom_graph_tensor_get_str(&out.t, 1);
  cr_assert(r0.len == 2 && !memcmp(r0.data, "x!", 2) && r1.len == 1 && r1.data[0] == '!');
  loom_graph_value_free(&out);
  /* compiled: the call runs as a host operator (docs/vm.md "Host operators"), same result */
  loom_compiled *c = NULL;
  loom_compile_options o = {.no_cache = true};
  cr_assert(loom_compile(gm, &o, &c) == LOOM_OK);
  loom_rt *rt;
  cr_assert(loom_compiled_open(c, NULL, &rt) == LOOM_OK);
  loom_tensor *t[2];
  cr_assert(loom_rt_tensor_strings(rt, 1, (int64_t[]){2}, (const char *[]){"x", ""}, NULL, &t[0]) == LOOM_OK);
  cr_assert(loom_rt_tensor_strings(rt, 0, NULL, (const char *[]){"!"}, (size_t[]){1}, &t[1]) == LOOM_OK);
  loom_rt_outputs ro = {0};
  cr_assert(loom_rt_call(rt, "main", t, 2, &ro) == LOOM_OK);
  const loom_tensor *rz = (const loom_tensor *)ro.items[0];
  const loom_str *rs = rz->data;
  cr_assert(rz->dtype == LOOM_DTYPE_STRING && rz->shape[0] == 2);
  cr_assert(rs[0].len == 2 && !memcmp(rs[0].data, "x!", 3) && rs[1].len == 1 && !strcmp(rs[1].data, "!")); /* NUL-terminated */
  loom_rt_outputs_free(&ro);
  loom_tensor_release(t[0]), loom_tensor_release(t[1]);
  loom_rt_close(rt);
  loom_compiled_free(c);
  /* legalize keeps a string call as an operator, saying why */
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  size_t done = 0, kept = 0;
  cr_assert(loom_graph_legalize(gm, &dl, &done, &kept) == LOOM_OK);
  cr_assert(done == 0 && kept == 1, "legalized %zu, kept %zu", done, kept);
  cr_assert(dl.items.len >= 1 && strstr(dl.items.data[0].message, "string_concat: string tensors run on the host"),
            "%s", dl.items.len ? dl.items.data[0].message : "(no note)");
  loom_diag_list_destroy(&dl);
  loom_graph_module_destroy(gm), loom_onnx_model_free(mm);
  for (int i = 0; i < 2; i++) loom_graph_value_free(&in[i]);

  onnx_test_io xs = {"x", 8, 1, {"n"}}, yb = {"y", 9, 1, {"n"}};
  pb attrs = {0}, pat = {0};
  pb_str(&pat, 1, "pattern"), pb_int(&pat, 20, 3), pb_str(&pat, 4, "[a-z]+@\\w+\\.com"), pb_msg(&attrs, 5, &pat);
  cr_assert(onnx_test_import_one("RegexFullMatch", "re", &xs, 1, &yb, &attrs, &mm, &gm) == LOOM_OK);
  loom_graph_value x = str_value(3, (const char *[]){"ab@cd.com", "ab@cd.comx", "@cd.com"});
  cr_assert(loom_graph_eval(gm, "main", 1, &x, NULL, &out) == LOOM_OK);
  cr_assert_eq(out.t.dtype, LOOM_DTYPE_BOOL);
  const uint8_t *b = out.t.data;
  cr_assert(b[0] == 1 && b[1] == 0 && b[2] == 0, "%d %d %d", b[0], b[1], b[2]);
  loom_graph_value_free(&out), loom_graph_value_free(&x);
  loom_graph_module_destroy(gm), loom_onnx_model_free(mm);
}

/* A STRING initializer: its bytes copied into the module (the model may go first), read by the
 * interpreter as a constant; constant folding (the importer's and the fold pass's) leaves string
 * calls alone, and the compiled path runs them on the constant as host operators. */
LOOM_TEST(onnx_str, string_initializer_is_a_module_constant) {
  pb g = {0}, model = {0}, n = {0}, init = {0}, opset = {0}, attrs = {0};
  pb_node(&g, "StringConcat", "cat", (const char *[]){"c", "c", NULL}, (const char *[]){"s", NULL}, NULL);
  strs_attr(&attrs, "keys_strings", 2, (const char *[]){"aa", "bb"});
  ints_attr(&attrs, "values_int64s", 2, (int64_t[]){1, 2});
  pb_str(&n, 1, "s"), pb_str(&n, 2, "y"), pb_str(&n, 3, "enc"), pb_str(&n, 4, "LabelEncoder"), pb_str(&n, 7, "ai.onnx.ml");
  pb_raw(&n, attrs.d, attrs.len), pb_free(&attrs);
  pb_msg(&g, 1, &n);
  pb_int(&init, 1, 3), pb_int(&init, 2, 8), pb_str(&init, 6, "a"), pb_str(&init, 6, "b"), pb_str(&init, 6, "c"), pb_str(&init, 8, "c");
  pb_msg(&g, 5, &init);
  pb_value_info(&g, 12, "y", 7, 1, (const char *[]){"3"});
  pb_model(&model, 21, &g);
  pb_str(&opset, 1, "ai.onnx.ml"), pb_int(&opset, 2, 4), pb_msg(&model, 8, &opset);
  loom_onnx_model *mm;
  loom_graph_module *gm = NULL;
  cr_assert(loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &mm) == LOOM_OK);
  pb_free(&model);
  cr_assert(loom_onnx_import(mm, &gm) == LOOM_OK);
  loom_onnx_model_free(mm); /* the module keeps its own copy of the strings */
  loom_graph_value out;
  cr_assert(loom_graph_eval(gm, "main", 0, NULL, NULL, &out) == LOOM_OK);
  cr_assert_eq(out.t.numel, 3);
  const int64_t *y = out.t.data;
  cr_assert(y[0] == 1 && y[1] == 2 && y[2] == -1, "%lld %lld %lld", (long long)y[0], (long long)y[1], (long long)y[2]);
  loom_graph_value_free(&out);
  /* compiled: the string constant is read in place (JIT), the calls run as host operators */
  loom_compiled *c = NULL;
  loom_compile_options o = {.no_cache = true};
  cr_assert(loom_compile(gm, &o, &c) == LOOM_OK);
  loom_rt *rt;
  cr_assert(loom_compiled_open(c, NULL, &rt) == LOOM_OK);
  loom_rt_outputs ro = {0};
  cr_assert(loom_rt_call(rt, "main", NULL, 0, &ro) == LOOM_OK);
  const int64_t *cy = ((const loom_tensor *)ro.items[0])->data;
  cr_assert(cy[0] == 1 && cy[1] == 2 && cy[2] == -1, "%lld %lld %lld", (long long)cy[0], (long long)cy[1], (long long)cy[2]);
  loom_rt_outputs_free(&ro);
  loom_rt_close(rt);
  loom_compiled_free(c);
  loom_graph_module_destroy(gm);
}

/* Cast to STRING and back (the graph cast; strings as NumPy prints them). */
LOOM_TEST(onnx_str, cast_to_and_from_string) {
  onnx_test_io x = {"x", 1, 1, {"n"}}, y = {"y", 8, 1, {"n"}};
  pb attrs = {0};
  onnx_test_int_attr(&attrs, "to", 8);
  loom_onnx_model *mm;
  loom_graph_module *gm;
  cr_assert(onnx_test_import_one("Cast", "c", &x, 1, &y, &attrs, &mm, &gm) == LOOM_OK);
  loom_graph_value in, out;
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, &in));
  ((float *)in.t.data)[0] = 0.5f, ((float *)in.t.data)[1] = -2e7f, ((float *)in.t.data)[2] = 0.1f;
  cr_assert(loom_graph_eval(gm, "main", 1, &in, NULL, &out) == LOOM_OK);
  static const char *want[] = {"0.5", "-2e+07", "0.1"};
  for (size_t i = 0; i < 3; i++) {
    loom_str s = loom_graph_tensor_get_str(&out.t, i);
    cr_assert(s.len == strlen(want[i]) && !memcmp(s.data, want[i], s.len), "element %zu: %.*s", i, (int)s.len, s.data);
  }
  loom_graph_value_free(&out), loom_graph_value_free(&in);
  loom_graph_module_destroy(gm), loom_onnx_model_free(mm);
}
