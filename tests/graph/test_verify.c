/* test_verify.c — the verifier: the models verify, and one negative test per rule (IR made
 * by the parser, then broken the way a buggy pass would break it). */
#include "tests/graph/graph_test_util.h"

static const char *base_text =
    "fn @main(x: Tensor[(n, 4), f32], flag: Tensor[(), bool]) -> Object {\n"
    "  dataflow {\n    a = relu(x)\n    b = softmax(a, axis=1)\n    output a, b\n  }\n"
    "  c = if (flag) {\n    u = neg(b)\n    return u\n  } else {\n    return b\n  }\n"
    "  return c\n}\n";

/* Runs the verifier, expects failure with `want` in the first message. */
static void expect_verify_error(loom_graph_module *m, const char *want) {
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_status st = loom_graph_verify(m, &dl);
  cr_expect(st != LOOM_OK, "the verifier accepted broken IR (want '%s')", want);
  char *msg = dl.items.len ? loom_diag_format(&dl.items.data[0]) : NULL;
  cr_expect(msg && strstr(msg, want), "want '%s' in: %s", want, msg ? msg : "(none)");
  cr_expect(msg && strstr(msg, "in @main"), "names the function: %s", msg ? msg : "");
  free(msg);
  loom_status_free(st);
  loom_diag_list_destroy(&dl);
}

static loom_graph_binding *at(loom_graph_module *m, size_t blk, size_t i) {
  return (loom_graph_binding *)loom_graph_module_find_func(m, "main")->body->blocks[blk]->bindings[i];
}

LOOM_TEST(graph_verify, well_formed_passes) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  cr_assert(!loom_graph_verify(m, &dl));
  loom_diag_list_destroy(&dl);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, var_used_outside_scope) {
  loom_graph_module *m = gt_parse_ok(base_text);
  /* a = relu(b): b is bound after a. */
  loom_graph_binding *a = at(m, 0, 0), *b = at(m, 0, 1);
  ((loom_graph_expr **)a->value->u.call.args)[0] = b->var;
  expect_verify_error(m, "variable 'b' is used outside its scope");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, symbolic_var_outside_scope) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *k = loom_sym_var_new(cx, "k", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *d[] = {k, loom_sym_const(cx, 4)};
  at(m, 0, 0)->var->sinfo = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, d, NULL);
  expect_verify_error(m, "symbolic variable 'k'");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, not_anf) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_graph_binding *a = at(m, 0, 0), *b = at(m, 0, 1);
  ((loom_graph_expr **)b->value->u.call.args)[0] = a->value; /* a call as an argument */
  expect_verify_error(m, "not a leaf");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, control_flow_in_dataflow) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_graph_block *blk = (loom_graph_block *)loom_graph_module_find_func(m, "main")->body->blocks[1];
  blk->dataflow = true;
  expect_verify_error(m, "'if' inside a dataflow block");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, sinfo_disagrees_with_inference) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  loom_graph_binding *a = at(m, 0, 0);
  const loom_sym_expr *d[] = {a->var->sinfo->dims[0], loom_sym_const(cx, 5)};
  a->var->sinfo = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, d, NULL);
  expect_verify_error(m, "disagrees with re-inference");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, bad_attribute) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_graph_binding *b = at(m, 0, 1);
  ((loom_graph_attr *)b->value->u.call.attrs)[0].i = 7;
  expect_verify_error(m, "softmax: axis 7 is out of range");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, call_signature) {
  loom_graph_module *m = gt_parse_ok(
      "fn @f(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n  return x\n}\n"
      "fn @main(x: Tensor[(n,), f32], y: Tensor[(n,), i32]) -> Object {\n  z = @f(x)\n  return z\n}\n");
  loom_graph_binding *z = at(m, 0, 0);
  loom_graph_func *mainf = loom_graph_module_find_func(m, "main");
  ((loom_graph_expr **)z->value->u.call.args)[0] = mainf->params[1];
  expect_verify_error(m, "argument 0 has dtype i32, parameter has f32");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, bound_twice) {
  loom_graph_module *m = gt_parse_ok(base_text);
  at(m, 0, 1)->var = at(m, 0, 0)->var;
  expect_verify_error(m, "bound twice");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, dataflow_output_not_in_block) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_graph_block *blk = (loom_graph_block *)loom_graph_module_find_func(m, "main")->body->blocks[0];
  ((loom_graph_expr **)blk->outputs)[0] = loom_graph_module_find_func(m, "main")->params[1];
  expect_verify_error(m, "dataflow output 'flag' is not bound in its block");
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_verify, result_does_not_fit) {
  loom_graph_module *m = gt_parse_ok(base_text);
  loom_graph_func *f = loom_graph_module_find_func(m, "main");
  f->ret = loom_sinfo_tensor(m, LOOM_DTYPE_I32, 2, NULL, NULL);
  expect_verify_error(m, "declared result");
  loom_graph_module_destroy(m);
}
