/* test_fuse.c — the fuse pass as IR text in, IR text out: a chain of elementwise calls, a
 * producer fused into a reduction and into layer_norm, a producer with a use outside the
 * group kept materialised, a costly producer kept out of a consumer that reads it thrice,
 * matmul (out_fusable) left alone, and a group whose symbol a match_cast defines between its
 * members. Every case runs legalize then fuse through the pass manager with the verifier
 * after each pass and the numeric check (interpreter before and after, random shapes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/pipeline.h"
#include "graph/passes.h"
#include "passes_test_util.h"
#include "support/loom_test.h"
#include "tensorprog/tp.h"

typedef struct fused {
  loom_graph_module *m;
  char *fn;   /* @main printed */
  char *text; /* the whole module printed */
} fused;

/* Parses `in`, runs legalize and fuse (and schedule if asked; verified and numerically checked after each), and
 * checks that the printed module parses back to itself. */
static fused run_passes(const char *in, bool schedule) {
  fused r = {.m = pt_parse(in)};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  static const loom_pass_id passes[] = {LOOM_PASS_legalize, LOOM_PASS_fuse, LOOM_PASS_schedule};
  loom_pass_options o = {.verify_each = true, .check_numerics = 3};
  loom_status s = loom_pipeline_run(r.m, passes, schedule ? 3 : 2, &o, &diags);
  if (s) loom_diag_list_print(stderr, &diags);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&diags);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_func(r.m, loom_graph_module_find_func(r.m, "main"), &sb);
  r.fn = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_clear(&sb);
  loom_graph_print_module(r.m, &sb);
  r.text = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  loom_source back_src = {"back.loom", r.text, strlen(r.text)};
  loom_graph_module *back = NULL;
  loom_diag_list_init(&diags, NULL);
  s = loom_graph_parse(&back_src, &diags, &back);
  cr_assert_null(s, "%s\n%s", loom_status_text(s, 0), r.text);
  cr_assert(loom_graph_module_equal(r.m, back), "the result does not parse back to itself:\n%s", r.text);
  loom_graph_module_destroy(back);
  loom_diag_list_destroy(&diags);
  return r;
}

static fused run_fuse(const char *in) { return run_passes(in, false); }

static void fused_free(fused *r) {
  free(r->fn);
  free(r->text);
  loom_graph_module_destroy(r->m);
}

/* The printed program @name. */
static char *prog_text(const fused *r, const char *name) {
  for (size_t i = 0; i < loom_graph_module_num_tps(r->m); i++) {
    loom_tp_func *tp = loom_graph_module_tp_at(r->m, i);
    if (strcmp(loom_tp_func_name(tp), name)) continue;
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_tp_print_func(tp, &sb);
    char *t = strdup(loom_strbuf_cstr(&sb));
    loom_strbuf_free(&sb);
    return t;
  }
  cr_assert_fail("no program @%s in\n%s", name, r->text);
  return NULL;
}

/* The name of the program the binding `var` calls (printed `var: ... = call_tp(@NAME, `). */
static char *callee_of(const fused *r, const char *var) {
  char key[64];
  snprintf(key, sizeof key, "    %s: ", var);
  const char *p = strstr(r->fn, key);
  cr_assert_not_null(p, "no binding '%s' in\n%s", var, r->fn);
  p = strstr(p, "call_tp(@");
  cr_assert_not_null(p);
  p += strlen("call_tp(@");
  return strndup(p, strcspn(p, ","));
}

LOOM_TEST(passes, fuse_merges_an_elementwise_chain_into_one_call) {
  fused r = run_fuse("fn @main(x: Tensor[(n, 4), f32], y: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32] {\n"
                     "  dataflow {\n"
                     "    a = add(x, y)\n"
                     "    b = relu(a)\n"
                     "    c = mul(b, const(2.0, f32))\n"
                     "    output c\n"
                     "  }\n"
                     "  return c\n"
                     "}\n");
  char *name = callee_of(&r, "c");
  char want[1024];
  snprintf(want, sizeof want,
           "fn @main(x: Tensor[(n, 4), f32], y: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32] {\n"
           "  dataflow {\n"
           "    c: Tensor[(n, 4), f32] = call_tp(@%s, (sym(n), x, y, const(2.0, f32)), Tensor[(n, 4), f32])\n"
           "    output c\n"
           "  }\n"
           "  return c\n"
           "}\n",
           name);
  cr_assert_str_eq(r.fn, want);
  cr_assert(!strncmp(name, "fused_mul_f32_", 14), "%s", name);
  char *p = prog_text(&r, name);
  snprintf(want, sizeof want,
           "prim @%s(n: i64, x: Buffer[(n, 4), f32], y: Buffer[(n, 4), f32], in2: Buffer[(), f32], "
           "c: Buffer[(n, 4), f32]) {\n"
           "  for i0 in 0..n parallel {\n"
           "    for i1 in 0..4 {\n"
           "      c[i0, i1] = max(x[i0, i1] + y[i0, i1], 0.0) * in2[]\n"
           "    }\n"
           "  }\n"
           "}\n",
           name);
  cr_assert_str_eq(p, want);
  cr_assert_eq(loom_graph_module_num_tps(r.m), 1, "the programs of the absorbed calls are gone:\n%s", r.text);
  free(p);
  free(name);
  fused_free(&r);
}

/* exp(o) is read once per element by the sum: it is computed inside the reduction. layer_norm
 * reads its input in several passes (the mean, the variance, then the normalisation): the
 * residual add would be computed again in each, so it stays a call. */
LOOM_TEST(passes, fuse_puts_a_producer_into_a_reduction_read_in_one_pass) {
  fused r = run_fuse("fn @main(x: Tensor[(b, s, 8), f32], o: Tensor[(b, s, 8), f32], g: Tensor[(8,), f32],\n"
                     "         be: Tensor[(8,), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    e = exp(o)\n"
                     "    t = sum(e, axes=[2])\n"
                     "    x1 = add(x, o)\n"
                     "    h = layer_norm(x1, g, be, eps=1e-05)\n"
                     "    out = (t, h)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  char *nt = callee_of(&r, "t"), *nh = callee_of(&r, "h");
  char want[2048];
  snprintf(want, sizeof want,
           "fn @main(x: Tensor[(b, s, 8), f32], o: Tensor[(b, s, 8), f32], g: Tensor[(8,), f32], be: Tensor[(8,), f32]) "
           "-> Object {\n"
           "  dataflow {\n"
           "    t: Tensor[(b, s), f32] = call_tp(@%s, (sym(b), sym(s), o), Tensor[(b, s), f32])\n"
           "    x1: Tensor[(b, s, 8), f32] = call_tp(@add_f32_FFF_FFF, (x, o), Tensor[(b, s, 8), f32])\n"
           "    h: Tensor[(b, s, 8), f32] = call_tp(@%s, (x1, g, be), Tensor[(b, s, 8), f32])\n"
           "    out: Tuple[Tensor[(b, s), f32], Tensor[(b, s, 8), f32]] = (t, h)\n"
           "    output out\n"
           "  }\n"
           "  return out\n"
           "}\n",
           nt, nh);
  cr_assert_str_eq(r.fn, want);
  cr_assert(!strncmp(nh, "layer_norm_f32_r3_", 18), "%s", nh);
  char *pt = prog_text(&r, nt);
  cr_assert(strstr(pt, "t[i0, i1] = t[i0, i1] + exp(o[i0, i1, ") != NULL, "%s", pt);
  cr_assert(strstr(pt, "alloc") == NULL, "%s", pt);
  free(pt);
  free(nt);
  free(nh);
  fused_free(&r);
}

LOOM_TEST(passes, fuse_keeps_a_producer_used_outside_the_group) {
  /* a feeds the sum and the tuple: it stays materialised; the sum fuses nothing. c (used
   * once) still fuses into d. */
  fused r = run_fuse("fn @main(x: Tensor[(n, 5), f32], y: Tensor[(n, 5), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    a = add(x, y)\n"
                     "    t = sum(a, axes=[1])\n"
                     "    c = sub(a, y)\n"
                     "    d = neg(c)\n"
                     "    out = (a, t, d)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  char *nd = callee_of(&r, "d");
  char want[2048];
  snprintf(want, sizeof want,
           "fn @main(x: Tensor[(n, 5), f32], y: Tensor[(n, 5), f32]) -> Object {\n"
           "  dataflow {\n"
           "    a: Tensor[(n, 5), f32] = call_tp(@add_f32_FF_FF, (x, y), Tensor[(n, 5), f32])\n"
           "    t: Tensor[(n,), f32] = call_tp(@sum_f32_r2_a2, (a,), Tensor[(n,), f32])\n"
           "    d: Tensor[(n, 5), f32] = call_tp(@%s, (sym(n), a, y), Tensor[(n, 5), f32])\n"
           "    out: Tuple[Tensor[(n, 5), f32], Tensor[(n,), f32], Tensor[(n, 5), f32]] = (a, t, d)\n"
           "    output out\n"
           "  }\n"
           "  return out\n"
           "}\n",
           nd);
  cr_assert_str_eq(r.fn, want);
  char *pd = prog_text(&r, nd);
  cr_assert(strstr(pd, "d[i0, i1] = -(a[i0, i1] - y[i0, i1])") != NULL, "%s", pd);
  free(pd);
  free(nd);
  fused_free(&r);
}

LOOM_TEST(passes, fuse_keeps_producers_out_of_repeated_reads_and_out_of_matmul) {
  /* softmax reads its input in three loops (max, sum, normalise): neither exp(x) nor the
   * cheap add is recomputed there; a costly producer read twice in one statement (e*e) stays
   * too; the chain feeding the where is one call. The matmul takes no producer (an operand
   * recomputed inside it would be recomputed n times); its bias add is its epilogue. */
  fused r = run_fuse("fn @main(x: Tensor[(n, 6), f32], y: Tensor[(n, 6), f32], w: Tensor[(6, 3), f32],\n"
                     "         bias: Tensor[(3,), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    e = exp(x)\n"
                     "    p = softmax(e, axis=-1)\n"
                     "    a = add(x, y)\n"
                     "    q = softmax(a, axis=-1)\n"
                     "    e2 = exp(y)\n"
                     "    sq = mul(e2, e2)\n"
                     "    m = mul(x, const(0.5, f32))\n"
                     "    k = greater(x, y)\n"
                     "    wm = where(k, m, y)\n"
                     "    z = sub(x, y)\n"
                     "    h = matmul(z, w)\n"
                     "    hb = add(h, bias)\n"
                     "    out = (p, q, hb, sq, wm)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  cr_assert(strstr(r.fn, "    e: Tensor[(n, 6), f32] = call_tp(@exp_f32_f32_r2, (x,), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    p: Tensor[(n, 6), f32] = call_tp(@softmax_f32_r2_a1, (e,), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    a: Tensor[(n, 6), f32] = call_tp(@add_f32_FF_FF, (x, y), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    q: Tensor[(n, 6), f32] = call_tp(@softmax_f32_r2_a1, (a,), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    e2: Tensor[(n, 6), f32] = call_tp(@exp_f32_f32_r2, (y,), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    wm: Tensor[(n, 6), f32] = call_tp(@fused_where_") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    m: ") == NULL && strstr(r.fn, "    k: ") == NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    z: Tensor[(n, 6), f32] = call_tp(@sub_f32_FF_FF, (x, y), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    h: ") == NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    hb: Tensor[(n, 3), f32] = call_tp(@fused_add_f32_FF_F_") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, ", (sym(n), z, w, bias), ") != NULL, "%s", r.fn);
  fused_free(&r);
}

/* A depthwise convolution's input padding (conv_pad: the row copied in 8-wide chunks, or whole
 * when shorter, in the two branches of an `if`) takes the batch_norm + clip before it: each path
 * reads its input in one loop, and batch_norm's rsqrt(var[c] + eps) does not vary along the row
 * (not a per-element cost). SiLU's sigmoid (EfficientNet's x * sigmoid(x) before each depthwise
 * convolution) does, but conv_pad reads each element once (the indices min(8*zo, w - 8) + zi are
 * no plain loop variables; counted at the sample shape, the reads are 1.00x the elements): it
 * joins too. A sigmoid broadcast over the plane (a squeeze-excite scale, read h*w times per
 * element) stays a call. */
/* reread_rows (the GPU target's): softmax and layer_norm take a cheap producer recomputed in each
 * of their passes (the attention mask's add), a costly one (exp) still stays out; checked
 * against the interpreter before and after. */
LOOM_TEST(passes, fuse_with_reread_rows_puts_cheap_producers_into_softmax_and_norms) {
  loom_graph_module *m = pt_parse("fn @main(x: Tensor[(n, 6), f32], y: Tensor[(1, 6), f32], g: Tensor[(6,), f32]) -> Object {\n"
                                  "  dataflow {\n"
                                  "    a = add(x, y)\n"
                                  "    p = softmax(a, axis=-1)\n"
                                  "    e = exp(x)\n"
                                  "    q = softmax(e, axis=-1)\n"
                                  "    b = sub(x, y)\n"
                                  "    l = layer_norm(b, g, g, eps=0.00001)\n"
                                  "    out = (p, q, l)\n"
                                  "    output out\n"
                                  "  }\n"
                                  "  return out\n"
                                  "}\n");
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  static const loom_pass_id legalize[] = {LOOM_PASS_legalize};
  loom_pass_options o = {.verify_each = true};
  cr_assert_null(loom_pipeline_run(m, legalize, 1, &o, &diags));
  loom_diag_list_destroy(&diags);
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 3, 17, NULL, &c));
  loom_graph_fuse_stats st;
  cr_assert_null(loom_graph_fuse_with(m, &(loom_graph_fuse_options){.reread_rows = true}, &st));
  pt_verify(m);
  loom_status s = loom_pipeline_check_after(c, "fuse");
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_pipeline_check_end(c);
  cr_assert_eq(st.groups, 2, "%zu groups", st.groups);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_func(m, loom_graph_module_find_func(m, "main"), &sb);
  const char *fn = loom_strbuf_cstr(&sb);
  cr_assert(strstr(fn, "    p: Tensor[(n, 6), f32] = call_tp(@fused_softmax_") != NULL && strstr(fn, "    a: ") == NULL, "%s", fn);
  cr_assert(strstr(fn, "    q: Tensor[(n, 6), f32] = call_tp(@softmax_f32_r2_a1, (e,), ") != NULL, "%s", fn);
  cr_assert(strstr(fn, "    l: Tensor[(n, 6), f32] = call_tp(@fused_layer_norm_") != NULL && strstr(fn, "    b: ") == NULL, "%s", fn);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(m);
}

LOOM_TEST(passes, fuse_puts_batch_norm_and_clip_into_the_padding_of_a_depthwise_convolution) {
  fused r = run_fuse("fn @main(x: Tensor[(n, 4, h, w), f32], k: Tensor[(4, 1, 3, 3), f32], g: Tensor[(4,), f32],\n"
                     "         b: Tensor[(4,), f32], m: Tensor[(4,), f32], v: Tensor[(4,), f32], s: Tensor[(n, 4, 1, 1), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    bn = batch_norm(x, g, b, m, v)\n"
                     "    c = clip(bn, min=0.0, max=6.0)\n"
                     "    y = conv2d(c, k, groups=4, padding=[1])\n"
                     "    e = sigmoid(x)\n"
                     "    f = mul(x, e)\n"
                     "    z = conv2d(f, k, groups=4, padding=[1])\n"
                     "    se = sigmoid(s)\n"
                     "    sx = mul(x, se)\n"
                     "    z2 = conv2d(sx, k, groups=4, padding=[1])\n"
                     "    out = (y, z, z2)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  cr_assert(strstr(r.fn, "    bn: ") == NULL && strstr(r.fn, "    c: ") == NULL, "%s", r.fn);
  /* the padding is the depthwise program's own copy of each plane (depthwise_fused): the producers
   * are computed there, and the convolutions read x itself */
  cr_assert(strstr(r.fn, "call_tp(@fused_depthwise_rows_f32_n2_k3x3_s1x1_d1x1_p1x1_q1x1_fused_") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "conv_pad") == NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, ", (sym(n), sym(h), sym(w), x, g, b, m, v, k), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    e: ") == NULL && strstr(r.fn, "    f: ") == NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, ", (sym(n), sym(h), sym(w), x, k), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    se: Tensor[(n, 4, 1, 1), f32] = call_tp(@sigmoid_f32_f32_r4, (s,), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, ", (sym(n), sym(h), sym(w), x, se, k), ") != NULL, "%s", r.fn);
  fused_free(&r);
}

/* A depthwise convolution's (or a pooling's) one elementwise reader moves into the stores of
 * its rows program (loom_tp_fuse_epilogue's store form): batch_norm + clip (MobileNet), batch_norm
 * + SiLU written as x * sigmoid(x) (EfficientNet), relu after max pooling; each is one call that
 * stores the activation of the sum where depthwise_rows stored the sum, in both paths (chunks of
 * 8, and rows shorter than a chunk summed in a Local row). Left apart: a result two calls read. */
LOOM_TEST(passes, fuse_moves_activations_into_the_stores_of_depthwise_and_pooling_rows) {
  fused r = run_fuse("fn @main(x: Tensor[(n, 4, h, w), f32], k: Tensor[(4, 1, 3, 3), f32], g: Tensor[(4,), f32],\n"
                     "         b: Tensor[(4,), f32], m: Tensor[(4,), f32], v: Tensor[(4,), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    y1 = conv2d(x, k, groups=4, padding=[1])\n"
                     "    bn1 = batch_norm(y1, g, b, m, v)\n"
                     "    c1 = clip(bn1, min=0.0, max=6.0)\n"
                     "    y2 = conv2d(x, k, groups=4, strides=[2, 2], padding=[1])\n"
                     "    bn2 = batch_norm(y2, g, b, m, v)\n"
                     "    s2 = sigmoid(bn2)\n"
                     "    o2 = mul(bn2, s2)\n"
                     "    p3 = max_pool(x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])\n"
                     "    r3 = relu(p3)\n"
                     "    y4 = conv2d(x, k, groups=4, padding=[1])\n"
                     "    r4 = relu(y4)\n"
                     "    o4 = add(y4, r4)\n"
                     "    out = (c1, o2, r3, o4, y4)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  cr_assert(strstr(r.fn, "    y1: ") == NULL && strstr(r.fn, "    bn1: ") == NULL && strstr(r.fn, "    y2: ") == NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    p3: ") == NULL && strstr(r.fn, "    s2: ") == NULL, "%s", r.fn);
  char *c1 = callee_of(&r, "c1"), *o2 = callee_of(&r, "o2"), *r3 = callee_of(&r, "r3");
  char *p1 = prog_text(&r, c1), *p2 = prog_text(&r, o2), *q3 = prog_text(&r, r3);
  /* the sum's stores, both paths, now store the activation of the accumulator */
  cr_assert(strstr(p1, ", 4), j0, ui2 + min(8*uo, ") != NULL && strstr(p1, "] = min(max((acc[ui2] - ") != NULL, "%s", p1);
  cr_assert(strstr(p1, ", 4), j0, u2] = min(max((accr[u2] - ") != NULL, "%s", p1);
  cr_assert(strstr(p2, "sigmoid(") != NULL && strstr(p2, "(acc[ui2] - ") != NULL && strstr(p2, "alloc t") == NULL, "%s", p2);
  cr_assert(strstr(q3, "r3[") != NULL && strstr(q3, "max(acc[ui2], 0.0)") != NULL, "%s", q3);
  /* left apart: y4 is read by relu, add and the output */
  cr_assert(strstr(r.fn, "    y4: Tensor[(n, 4, h, w), f32] = call_tp(@depthwise_rows_") != NULL, "%s", r.fn);
  free(c1);
  free(o2);
  free(r3);
  free(p1);
  free(p2);
  free(q3);
  fused_free(&r);
}

/* A matmul's elementwise reader (here bias + tanh-GELU + residual, fused into one call first)
 * moves into the matmul's output loop: one program whose nest stores hb after the reduction,
 * at the element the reduction made (loom_tp_fuse_epilogue); linear and batched matmul too.
 * A reader that changes the dtype (a cast to f64) is an epilogue too (the accumulator stays a
 * Local). Left apart: a result read by two calls and a reader that reads the result at another
 * index (a transposition). */
LOOM_TEST(passes, fuse_moves_elementwise_readers_into_the_matmul_output_loop) {
  fused r = run_fuse("fn @main(x: Tensor[(n, 6), f32], w: Tensor[(6, 5), f32], bias: Tensor[(5,), f32],\n"
                     "         res: Tensor[(n, 5), f32], q: Tensor[(b, n, 6), f32], wl: Tensor[(5, 6), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    h = matmul(x, w)\n"
                     "    hb = add(h, bias)\n"
                     "    g = gelu_tanh(hb)\n"
                     "    o1 = add(g, res)\n"
                     "    h2 = matmul(x, w)\n"
                     "    t2 = relu(h2)\n"
                     "    h3 = matmul(x, w)\n"
                     "    c3 = cast(h3, dtype=f64)\n"
                     "    h4 = matmul(q, w)\n"
                     "    s4 = mul(h4, const(2.0, f32))\n"
                     "    l5 = linear(q, wl, bias)\n"
                     "    r5 = relu(l5)\n"
                     "    h6 = matmul(x, w)\n"
                     "    h6t = permute_dims(h6)\n"
                     "    out = (o1, t2, h2, c3, s4, r5, h6t)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  cr_assert(strstr(r.fn, "    h: ") == NULL && strstr(r.fn, "    hb: ") == NULL && strstr(r.fn, "    g: ") == NULL, "%s", r.fn);
  char *o1 = callee_of(&r, "o1"), *s4 = callee_of(&r, "s4"), *r5 = callee_of(&r, "r5");
  char *p1 = prog_text(&r, o1), *p4 = prog_text(&r, s4), *p5 = prog_text(&r, r5);
  cr_assert(strstr(p1, "      o1[im, jn] = 0.0\n      for rk in 0..6 reduce {\n        o1[im, jn] = o1[im, jn] + x[im, rk] * w[rk, jn]\n      }\n"
                       "      o1[im, jn] = ") != NULL, "%s", p1);
  cr_assert(strstr(p1, "sigmoid(") != NULL && strstr(p1, "res[im, jn]") != NULL && strstr(p1, "alloc") == NULL, "%s", p1);
  cr_assert(strstr(p4, "s4[") != NULL && strstr(p4, "] * in2[]") != NULL && strstr(p4, "reduce") != NULL, "%s", p4);
  cr_assert(strstr(p5, "r5[") != NULL && strstr(p5, "max(") != NULL && strstr(p5, "reduce") != NULL, "%s", p5);
  /* left apart */
  cr_assert(strstr(r.fn, "    h2: Tensor[(n, 5), f32] = call_tp(@matmul_f32_2_2__, (x, w), ") != NULL, "%s", r.fn);
  cr_assert(strstr(r.fn, "    h3: ") == NULL && strstr(r.fn, "    c3: Tensor[(n, 5), f64] = call_tp(@fused_cast_f32_f64_") != NULL,
            "%s", r.fn);
  cr_assert(strstr(r.fn, "    h6: Tensor[(n, 5), f32] = call_tp(@matmul_f32_2_2__, (x, w), ") != NULL, "%s", r.fn);
  free(o1);
  free(s4);
  free(r5);
  free(p1);
  free(p4);
  free(p5);
  fused_free(&r);
}

/* An int32 matmul's requantization to u8 (another dtype) is an epilogue too: the accumulator
 * stays a Local of the merged program, the epilogue stores the u8 result; scheduled, the
 * register tile replaces the Local, which goes (loom_tp_drop_dead_locals). */
LOOM_TEST(passes, fuse_requantization_into_the_int8_matmul) {
  const char *in = "fn @main(a: Tensor[(m, 16), u8], b: Tensor[(16, 40), i8]) -> Object {\n"
                   "  dataflow {\n"
                   "    acc = matmul_integer(a, b, const(128, u8), const(0, i8))\n"
                   "    f = cast(acc, dtype=f32)\n"
                   "    s = mul(f, const(0.25, f32))\n"
                   "    r = round(s)\n"
                   "    c = clip(r, min=0.0, max=255.0)\n"
                   "    y = cast(c, dtype=u8)\n"
                   "    output y\n"
                   "  }\n"
                   "  return y\n"
                   "}\n";
  fused r = run_fuse(in);
  cr_assert(strstr(r.fn, "    acc: ") == NULL && strstr(r.fn, "    y: Tensor[(m, 40), u8] = call_tp(@fused_") != NULL, "%s", r.fn);
  char *y = callee_of(&r, "y"), *p = prog_text(&r, y);
  cr_assert(strstr(p, "alloc acc: Local[(m, 40), i32]") != NULL && strstr(p, "dot2(") != NULL && strstr(p, "y[im, jn] = u8(") != NULL,
            "%s", p);
  free(y);
  free(p);
  fused_free(&r);
  r = run_passes(in, true);
  y = callee_of(&r, "y");
  p = prog_text(&r, y);
  /* not allocated for every call: only in the few-rows variant that accumulates in it */
  cr_assert(strstr(p, "\n  alloc acc: Local[(m, 40)") == NULL && strstr(p, "\n    alloc acc: Local[(m, 40)") != NULL,
            "the accumulator stayed at the top:\n%s", p);
  cr_assert(strstr(p, "] = u8(") != NULL && strstr(p, "dot2(") != NULL, "%s", p);
  free(y);
  free(p);
  fused_free(&r);
}

/* The fused matmul + epilogue is tiled by the CPU matmul rule with the epilogue on the
 * register tile (applied to the accumulators before they are stored). */
LOOM_TEST(passes, fuse_epilogue_stays_on_the_matmul_register_tile) {
  fused r = run_passes("fn @main(x: Tensor[(n, 6), f32], w: Tensor[(6, 40), f32], bias: Tensor[(40,), f32]) -> Object {\n"
                       "  dataflow {\n"
                       "    h = matmul(x, w)\n"
                       "    hb = add(h, bias)\n"
                       "    y = relu(hb)\n"
                       "    output y\n"
                       "  }\n"
                       "  return y\n"
                       "}\n",
                       true);
  char *y = callee_of(&r, "y"), *p = prog_text(&r, y);
  cr_assert(strstr(p, "alloc acc: Local[(6, ") != NULL, "%s", p);
  cr_assert(strstr(p, "] = max(acc[") != NULL, "the epilogue is not on the register tile:\n%s", p);
  free(y);
  free(p);
  fused_free(&r);
}

LOOM_TEST(passes, fuse_places_the_group_after_the_match_cast_that_defines_its_symbol) {
  /* The group {a, c} needs k, defined by the match_cast between its members: the fused call
   * stands at c, below the match_cast, and passes sym(k) there (at a it would use k above
   * its definition). */
  fused r = run_fuse("fn @main(x: Tensor[(n, 4), f32], y: Tensor[(m, 4), f32]) -> Tensor[(n + k, 4), f32] {\n"
                     "  dataflow {\n"
                     "    a = relu(x)\n"
                     "    z = match_cast(y, Tensor[(k, 4), f32])\n"
                     "    c = concat(a, z, axis=0)\n"
                     "    output c\n"
                     "  }\n"
                     "  return c\n"
                     "}\n");
  char *nc = callee_of(&r, "c");
  char want[2048];
  snprintf(want, sizeof want,
           "fn @main(x: Tensor[(n, 4), f32], y: Tensor[(m, 4), f32]) -> Tensor[(n + k, 4), f32] {\n"
           "  dataflow {\n"
           "    z: Tensor[(k, 4), f32] = match_cast(y, Tensor[(k, 4), f32])\n"
           "    c: Tensor[(n + k, 4), f32] = call_tp(@%s, (sym(n), sym(k), x, z), Tensor[(n + k, 4), f32])\n"
           "    output c\n"
           "  }\n"
           "  return c\n"
           "}\n",
           nc);
  cr_assert_str_eq(r.fn, want);
  free(nc);
  fused_free(&r);
}

LOOM_TEST(passes, fuse_results_are_scheduled_like_generated_programs) {
  /* The merged program's loop nest stands at the top of its body: the CPU rules make the
   * outer loop parallel and vectorise the unit-stride inner loop. */
  fused r = run_passes("fn @main(x: Tensor[(n, 40), f32], y: Tensor[(40,), f32]) -> Tensor[(n, 40), f32] {\n"
                       "  dataflow {\n"
                       "    a = add(x, y)\n"
                       "    c = tanh(a)\n"
                       "    output c\n"
                       "  }\n"
                       "  return c\n"
                       "}\n",
                       true);
  char *nc = callee_of(&r, "c");
  char *pc = prog_text(&r, nc);
  cr_assert(strstr(pc, "for i0 in 0..n parallel {\n    for i1 in 0..40 vectorize {\n      c[i0, i1] = tanh(x[i0, i1] + y[i1])") !=
                NULL,
            "%s", pc);
  free(pc);
  free(nc);
  fused_free(&r);
}
