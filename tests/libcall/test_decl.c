/* test_decl.c — the compile side of libcall/: extern declarations in the text form and the
 * C API (parse, print, verify, bad declarations), and the offload pass as IR text in /
 * IR text out plus its numerics against the generated path around the guard boundary. */
#include <math.h>

#include "graph/graph_test_util.h"
#include "graph/offload.h"

#define OK_GRAPH(expr)                                                                   \
  do {                                                                                   \
    loom_status s_ = (expr);                                                             \
    if (s_) {                                                                            \
      cr_log_error("%s", loom_status_text(s_, 1));                                       \
      loom_status_free(s_);                                                              \
      cr_assert_fail("%s failed", #expr);                                                \
    }                                                                                    \
  } while (0)

/* Expects a failure whose message contains `needle`. */
#define FAILS_GRAPH(expr, needle)                                                        \
  do {                                                                                   \
    loom_status s_ = (expr);                                                             \
    cr_assert(s_ != LOOM_OK, "%s succeeded", #expr);                                     \
    bool has_ = strstr(loom_status_text(s_, 0), (needle)) != NULL;                       \
    if (!has_) cr_log_error("status was: %s", loom_status_text(s_, 0));                  \
    loom_status_free(s_);                                                                \
    cr_assert(has_, "expected '%s' in the error", (needle));                             \
  } while (0)

static char *print_module(loom_graph_module *m) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  char *r = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r;
}

/* Parses `text`, expects failure, and checks that the first diagnostic contains `needle`. */
static void parse_fails(const char *text, const char *needle) {
  char *err;
  loom_graph_module *m = gt_parse(text, &err);
  cr_assert(!m, "parsed: %s", text);
  cr_assert(err && strstr(err, needle), "expected '%s' in: %s", needle, err ? err : "(none)");
  free(err);
}

/* Verifies, expects failure naming `needle`. */
static void verify_fails(loom_graph_module *m, const char *needle) {
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_status st = loom_graph_verify(m, &dl);
  cr_assert(st, "verified");
  char *t = dl.items.len ? loom_diag_format(&dl.items.data[0]) : strdup(loom_status_message(st));
  cr_assert(strstr(t, needle), "expected '%s' in: %s", needle, t);
  free(t);
  loom_status_free(st);
  loom_diag_list_destroy(&dl);
}

static const char *decls =
    "extern @scale(x: Tensor[(n, m), f32], alpha: Tensor[(), f64], k: Scalar[i64]) -> Tensor[(n, m), f32] "
    "symbol=\"scale_rows\" library=\"libscale.so\" pure abi=c(x, n, m, f64(alpha), i32(k), 7, out) -> i32\n"
    "extern @mm(a: Tensor[(m, k), f32], b: Tensor[(k, n), f32]) -> Tensor[(m, n), f32] symbol=\"blas.sgemm\" pure\n"
    "extern @old: Func[(Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32]]\n"
    "\n"
    "fn @main(x: Tensor[(b, 8), f32], w: Tensor[(8, 3), f32]) -> Tensor[(b, 3), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 8), f32] = call_extern(@scale, (x, const(0.5, f64), sym(b + 1)), Tensor[(b, 8), f32])\n"
    "    z: Tensor[(b, 3), f32] = call_extern(@mm, (y, w), Tensor[(b, 3), f32])\n"
    "    output z\n"
    "  }\n"
    "  return z\n"
    "}\n";

LOOM_TEST(libcall_decl, declarations_parse_print_and_lower) {
  loom_graph_module *m = gt_parse_ok(decls);
  char *text = print_module(m);
  cr_assert_str_eq(text, decls);
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  OK_GRAPH(loom_graph_verify(m, &dl));
  loom_diag_list_destroy(&dl);
  /* the run-side signature: buffers x, alpha, out; symbols n, m, (alpha: none), n, m, k */
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_libcall_sig *sigs;
  size_t n;
  OK_GRAPH(loom_graph_module_libcall_sigs(m, &a, &sigs, &n));
  cr_assert_eq(n, 3);
  cr_assert_str_eq(sigs[0].symbol, "scale_rows");
  cr_assert(sigs[0].pure && sigs[0].abi == LOOM_LIBCALL_ABI_C && sigs[0].ret == LOOM_LIBCALL_CT_I32);
  cr_assert_eq(sigs[0].nbuf, 3);
  cr_assert_eq(sigs[0].nsym, 5);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_libcall_sig_print(&sigs[0], &sb);
  cr_assert_str_eq(loom_strbuf_cstr(&sb), "i32 scale_rows(f32*, i64, i64, f64, i32, i64, f32*)");
  loom_strbuf_free(&sb);
  const loom_libcall_carg *c = sigs[0].cargs;
  cr_assert(c[1].src == LOOM_LIBCALL_SRC_SYM && c[1].index == 0); /* n: x's axis 0 */
  cr_assert(c[2].src == LOOM_LIBCALL_SRC_SYM && c[2].index == 1); /* m */
  cr_assert(c[3].src == LOOM_LIBCALL_SRC_LOAD && c[3].index == 1 && c[3].load_dtype == LOOM_DTYPE_F64);
  cr_assert(c[4].src == LOOM_LIBCALL_SRC_SYM && c[4].index == 4 && c[4].type == LOOM_LIBCALL_CT_I32); /* k after 4 dims */
  cr_assert(c[5].src == LOOM_LIBCALL_SRC_CONST && c[5].value == 7);
  cr_assert(c[6].src == LOOM_LIBCALL_SRC_BUF && c[6].index == 2);
  cr_assert(sigs[1].abi == LOOM_LIBCALL_ABI_KERNEL && sigs[1].nbuf == 3 && sigs[1].nsym == 6);
  cr_assert(!strcmp(sigs[2].symbol, "old") && !sigs[2].pure && sigs[2].nsym == 4);
  loom_arena_destroy(&a);
  free(text);
  loom_graph_module_destroy(m);
}

LOOM_TEST(libcall_decl, c_api_declares_an_extern) {
  loom_graph_module *m;
  OK_GRAPH(loom_graph_module_create(NULL, &m));
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *n = loom_sym_var_new(cx, "n", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *d[1] = {n};
  const loom_sinfo *t = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 1, d, NULL);
  const loom_sinfo *ps[1] = {t};
  const loom_sinfo *sig = loom_sinfo_func(m, 1, ps, t);
  const char *names[1] = {"x"};
  loom_libcall_cref cr[3] = {{0, "x", 0}, {0, "n", 0}, {0, "out", 0}};
  loom_libcall_decl decl = {.symbol = "negate", .library = "libneg.so", .abi = LOOM_LIBCALL_ABI_C, .ncargs = 3, .cargs = cr};
  OK_GRAPH(loom_graph_module_declare_extern(m, "neg", sig, names, &decl));
  cr_assert(loom_graph_module_find_extern(m, "neg") != NULL);
  char *text = print_module(m);
  cr_assert_str_eq(text, "extern @neg(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] symbol=\"negate\" library=\"libneg.so\" "
                         "abi=c(x, n, out)\n");
  free(text);
  /* errors come back from the C API too */
  cr[1].name = "q";
  FAILS_GRAPH(loom_graph_module_declare_extern(m, "neg2", sig, names, &decl), "extern @neg2: C argument 1 'q' is not a parameter");
  cr[1].name = "n";
  FAILS_GRAPH(loom_graph_module_declare_extern(m, "neg", sig, names, &decl), "extern @neg is declared twice");
  decl.abi = LOOM_LIBCALL_ABI_KERNEL;
  FAILS_GRAPH(loom_graph_module_declare_extern(m, "neg3", sig, names, &decl), "a kernel-ABI extern takes no C argument list");
  loom_graph_module_destroy(m);
}

LOOM_TEST(libcall_decl, bad_declarations_are_reported_with_the_extern_named) {
  const char *t = "extern @f(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] abi=c(x, q, out)\n";
  parse_fails(t, "test.loom:1:8: error: extern @f: C argument 1 'q' is not a parameter, 'out' or a dim var of one");
  parse_fails("extern @f(x: Tensor[(n, 2), f32]) -> Tensor[(n,), f32] abi=c(f64(x), out)\n",
              "C argument 0: f64(x): only a rank-0 f32/f64/i32/i64 tensor converts to a number (this one has rank 2, dtype f32)");
  parse_fails("extern @f(out: Tensor[(n,), f32]) -> Tensor[(n,), f32]\n", "parameter 0 is named 'out'");
  parse_fails("extern @f(a: Scalar[f64]) -> Tensor[(2,), f32]\n",
              "parameter 0 ('a') is Scalar[f64]; scalars are i64 (a sym(...) value); pass a f64 as a rank-0 tensor");
  parse_fails("extern @f(a: Tensor[?, f32]) -> Tensor[(2,), f32]\n", "parameter 0 ('a') needs a known rank");
  parse_fails("extern @f(a: Tensor[(2,), f32]) -> Tuple[Tensor[(2,), f32]]\n", "the result must be a tensor");
  parse_fails("extern @f(a: Tensor[(2,), f32]) -> Tensor[(2,), f32] abi=fortran\n", "unknown ABI 'fortran'");
  parse_fails("extern @f(a: Tensor[(2,), f32]) -> Tensor[(2,), f32] abi=c(a, out) -> f64\n", "a C function returns void or i32");
  parse_fails("extern @f(a: Tensor[(2,), f32]) -> Tensor[(2,), f32] abi=c(a, 1.5, out)\n", "a constant C argument is an integer");
  parse_fails("extern @f(a: Tensor[(2,), f32]) -> Tensor[(2,), f32] symbol=\"x\" symbol=\"y\"\n", "'symbol' is given twice");
  parse_fails("extern @f(a: Tensor[(2,), f32]) -> Tensor[(n,), f32]\n", "n");
  parse_fails("extern @f(a: Tensor[(2,), f32]) -> Tensor[(2,), f32]\nextern @f(a: Tensor[(2,), f32]) -> Tensor[(2,), f32]\n",
              "extern @f is declared twice");
  parse_fails("extern @f(a: Tensor[(2,), f32], a: Tensor[(2,), f32]) -> Tensor[(2,), f32]\n", "parameter 'a' is given twice");
}

LOOM_TEST(libcall_decl, calls_are_checked_against_the_declaration) {
  static const char *head = "extern @f(x: Tensor[(n, 4), f32], k: Scalar[i64]) -> Tensor[(n, 4), f32] pure\n"
                            "extern @g(x: Tensor[(n, 4), f32]) -> Tensor[(n, 4), f32]\n";
  char buf[1024];
  snprintf(buf, sizeof buf, "%sfn @main(x: Tensor[(b, 4), f32]) -> Tensor[(b, 4), f32] {\n  y = call_extern(@f, (x,), "
                            "Tensor[(b, 4), f32])\n  return y\n}\n", head);
  parse_fails(buf, "call of extern @f: expects 2 arguments, got 1");
  snprintf(buf, sizeof buf, "%sfn @main(x: Tensor[(b, 4), i32]) -> Tensor[(b, 4), f32] {\n  y = call_extern(@f, (x, sym(b)), "
                            "Tensor[(b, 4), f32])\n  return y\n}\n", head);
  parse_fails(buf, "call of extern @f: argument 0 has dtype i32, parameter has f32");
  snprintf(buf, sizeof buf, "%sfn @main(x: Tensor[(b, 4), f32]) -> Tensor[(b, 3), f32] {\n  y = call_extern(@f, (x, sym(b)), "
                            "Tensor[(b, 3), f32])\n  return y\n}\n", head);
  parse_fails(buf, "call of extern @f: the call's result is Tensor[(b, 3), f32], the declaration gives Tensor[(b, 4), f32]");
  /* a pure extern may sit in a dataflow block; an impure one may not */
  snprintf(buf, sizeof buf, "%sfn @main(x: Tensor[(b, 4), f32]) -> Tensor[(b, 4), f32] {\n  dataflow {\n    y = call_extern(@f, "
                            "(x, sym(b)), Tensor[(b, 4), f32])\n    z = call_extern(@g, (y,), Tensor[(b, 4), f32])\n"
                            "    output z\n  }\n  return z\n}\n", head);
  loom_graph_module *m = gt_parse_ok(buf);
  verify_fails(m, "binding 'z': external call @g inside a dataflow block (the extern is not declared pure)");
  loom_graph_module_destroy(m);
}

/* ---- the offload pass ------------------------------------------------------------- */

static const char *mlp =
    "fn @main(x: Tensor[(b, 64), f32], w: Tensor[(32, 64), f32], bias: Tensor[(32,), f32], v: Tensor[(32, 16), f32]) "
    "-> Tensor[(b, 16), f32] {\n"
    "  dataflow {\n"
    "    h = linear(x, w, bias)\n"
    "    r = relu(h)\n"
    "    y = matmul(r, v)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

static const char *mlp_offloaded =
    "extern @blas_sgemm_nt_2_2(a: Tensor[(m, k), f32], b: Tensor[(n, k), f32]) -> Tensor[(m, n), f32] "
    "symbol=\"blas.sgemm_nt\" pure\n"
    "extern @blas_sgemm_2_2(a: Tensor[(m, k), f32], b: Tensor[(k, n), f32]) -> Tensor[(m, n), f32] symbol=\"blas.sgemm\" pure\n"
    "\n"
    "fn @main(x: Tensor[(b, 64), f32], w: Tensor[(32, 64), f32], bias: Tensor[(32,), f32], v: Tensor[(32, 16), f32]) "
    "-> Tensor[(b, 16), f32] {\n"
    "  h: Tensor[(b, 32), f32] = if (sym(b <= 5)) {\n"
    "    dataflow {\n"
    "      h_gen: Tensor[(b, 32), f32] = linear(x, w, bias)\n"
    "      output h_gen\n"
    "    }\n"
    "    return h_gen\n"
    "  } else {\n"
    "    dataflow {\n"
    "      h_blas0: Tensor[(b, 32), f32] = call_extern(@blas_sgemm_nt_2_2, (x, w), Tensor[(b, 32), f32])\n"
    "      h_blas: Tensor[(b, 32), f32] = add(h_blas0, bias)\n"
    "      output h_blas\n"
    "    }\n"
    "    return h_blas\n"
    "  }\n"
    "  dataflow {\n"
    "    r: Tensor[(b, 32), f32] = relu(h)\n"
    "    output r\n"
    "  }\n"
    "  y: Tensor[(b, 16), f32] = if (sym(b <= 5)) {\n"
    "    dataflow {\n"
    "      y_gen: Tensor[(b, 16), f32] = matmul(r, v)\n"
    "      output y_gen\n"
    "    }\n"
    "    return y_gen\n"
    "  } else {\n"
    "    dataflow {\n"
    "      y_blas: Tensor[(b, 16), f32] = call_extern(@blas_sgemm_2_2, (r, v), Tensor[(b, 16), f32])\n"
    "      output y_blas\n"
    "    }\n"
    "    return y_blas\n"
    "  }\n"
    "  return y\n"
    "}\n";

static loom_graph_module *offload_text(const char *text, int64_t thr, loom_graph_offload_stats *st) {
  loom_graph_module *m = gt_parse_ok(text);
  OK_GRAPH(loom_graph_offload(m, thr, st));
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  OK_GRAPH(loom_graph_verify(m, &dl));
  loom_diag_list_destroy(&dl);
  return m;
}

LOOM_TEST(libcall_offload, guarded_rewrite_as_ir_text) {
  loom_graph_offload_stats st;
  loom_graph_module *m = offload_text(mlp, 5, &st);
  char *out = print_module(m);
  cr_assert_str_eq(out, mlp_offloaded);
  cr_assert(st.guarded == 2 && st.library == 0 && st.generated == 0 && st.skipped == 0);
  /* the output is valid IR text: it parses back to the same module */
  loom_graph_module *again = gt_parse_ok(out);
  char *out2 = print_module(again);
  cr_assert_str_eq(out2, out);
  free(out), free(out2);
  loom_graph_module_destroy(again);
  loom_graph_module_destroy(m);
}

LOOM_TEST(libcall_offload, the_prover_decides_constant_and_bounded_rows) {
  static const char *t = "fn @main(x: Tensor[(%s, 64), f32], w: Tensor[(64, 8), f32], q: Tensor[(2, 3), i32], "
                         "p: Tensor[(3, 2), i32]) -> Tensor[(%s, 8), f32] {\n"
                         "  dataflow {\n    y = matmul(x, w)\n    z = matmul(q, p)\n    output y\n  }\n  return y\n}\n";
  char buf[1024];
  loom_graph_offload_stats st;
  snprintf(buf, sizeof buf, t, "4", "4");
  loom_graph_module *m = offload_text(buf, 16, &st);
  cr_assert(st.generated == 1 && st.guarded == 0 && st.library == 0 && st.skipped == 1, "i32 matmul is skipped");
  char *out = print_module(m);
  cr_assert(strstr(out, "y: Tensor[(4, 8), f32] = matmul(x, w)") && !strstr(out, "extern"), "%s", out);
  free(out);
  loom_graph_module_destroy(m);
  snprintf(buf, sizeof buf, t, "100", "100");
  m = offload_text(buf, 16, &st);
  cr_assert(st.library == 1 && st.guarded == 0, "always large: BLAS without a guard");
  out = print_module(m);
  cr_assert(strstr(out, "  dataflow {\n    y: Tensor[(100, 8), f32] = call_extern(@blas_sgemm_2_2, (x, w), "
                        "Tensor[(100, 8), f32])\n"),
            "%s", out);
  free(out);
  loom_graph_module_destroy(m);
  /* batched with broadcast batch dims is not a form BLAS takes here */
  m = offload_text("fn @main(a: Tensor[(1, n, 4), f32], b: Tensor[(3, 4, 5), f32]) -> Tensor[(3, n, 5), f32] {\n"
                   "  y = matmul(a, b)\n  return y\n}\n",
                   16, &st);
  cr_assert(st.skipped == 1 && st.guarded == 0);
  loom_graph_module_destroy(m);
}

/* Random tensor argument. */
static loom_graph_value rand_tensor(loom_test_rng *r, int nd, const int64_t *shape) {
  loom_graph_value v;
  memset(&v, 0, sizeof v);
  v.kind = LOOM_SINFO_TENSOR;
  OK_GRAPH(loom_graph_tensor_alloc(LOOM_DTYPE_F32, nd, shape, &v.t));
  for (size_t i = 0; i < v.t.numel; i++) ((float *)v.t.data)[i] = (float)loom_test_rng_range(r, -1000, 1000) / 1000.0f;
  return v;
}

/* Runs @main of `ref` and `off` on args (then frees them) and requires equal results within 1e-4;
 * `what` names the case. */
static void expect_same(loom_graph_module *ref, loom_graph_module *off, loom_graph_value *args, int n, const char *what) {
  loom_graph_value r1, r2;
  OK_GRAPH(loom_graph_eval(ref, "main", (size_t)n, args, NULL, &r1));
  OK_GRAPH(loom_graph_eval(off, "main", (size_t)n, args, NULL, &r2));
  cr_assert_eq(r1.t.numel, r2.t.numel);
  for (size_t i = 0; i < r1.t.numel; i++)
    cr_assert(fabsf(((float *)r1.t.data)[i] - ((float *)r2.t.data)[i]) <= 1e-4f, "%s element %zu: %g vs %g", what, i,
              ((float *)r1.t.data)[i], ((float *)r2.t.data)[i]);
  loom_graph_value_free(&r1), loom_graph_value_free(&r2);
  for (int i = 0; i < n; i++) loom_graph_value_free(&args[i]);
}

LOOM_TEST(libcall_offload, offloaded_and_generated_paths_agree_around_the_guard) {
  static const char *batched =
      "fn @main(x: Tensor[(b, s, 24), f32], w: Tensor[(20, 24), f32], bias: Tensor[(20,), f32], "
      "k: Tensor[(b, 20, 7), f32]) -> Tensor[(b, s, 7), f32] {\n"
      "  dataflow {\n    h = linear(x, w, bias)\n    g = gelu(h)\n    y = matmul(g, k)\n    output y\n  }\n  return y\n}\n";
  loom_test_rng rng = {loom_test_seed()};
  loom_graph_module *ref = gt_parse_ok(batched);
  loom_graph_offload_stats st;
  loom_graph_module *off = offload_text(batched, 12, &st);
  cr_assert_eq(st.guarded, 2);
  /* rows = b*s: around the threshold 12 (12 generated, 13 BLAS), and 0, 1, primes, large */
  static const int64_t bs[][2] = {{1, 0}, {1, 1}, {2, 6}, {1, 12}, {1, 13}, {13, 1}, {3, 5}, {2, 7}, {4, 97}};
  for (size_t t = 0; t < sizeof bs / sizeof bs[0]; t++) {
    int64_t b = bs[t][0], s = bs[t][1];
    int64_t sx[3] = {b, s, 24}, sw[2] = {20, 24}, sb[1] = {20}, sk[3] = {b, 20, 7};
    loom_graph_value args[4] = {rand_tensor(&rng, 3, sx), rand_tensor(&rng, 2, sw), rand_tensor(&rng, 1, sb),
                                rand_tensor(&rng, 3, sk)};
    char what[64];
    snprintf(what, sizeof what, "b=%lld s=%lld", (long long)b, (long long)s);
    expect_same(ref, off, args, 4, what);
  }
  loom_graph_module_destroy(ref);
  loom_graph_module_destroy(off);
}

/* Attention's Q @ K^T: a batched matmul with transpose_b goes to BLAS's transposed form, batch by
 * batch, and equals the generated one at 0, 1, primes. */
LOOM_TEST(libcall_offload, a_batched_transposed_b_matmul_goes_to_blas_and_agrees) {
  static const char *qk = "fn @main(q: Tensor[(b, 3, s, 8), f32], k: Tensor[(b, 3, t, 8), f32]) -> Tensor[(b, 3, s, t), f32] {\n"
                          "  dataflow {\n    y = matmul(q, k, transpose_b=true)\n    output y\n  }\n  return y\n}\n";
  loom_test_rng rng = {loom_test_seed()};
  loom_graph_module *ref = gt_parse_ok(qk);
  loom_graph_offload_stats st;
  loom_graph_module *off = offload_text(qk, 0, &st);
  cr_assert_eq(st.skipped, 0, "the batched transposed form is BLAS-shaped");
  char *out = print_module(off);
  cr_assert(strstr(out, "blas_sgemm_nt_4_4"), "%s", out);
  free(out);
  static const int64_t sizes[][3] = {{1, 1, 1}, {2, 5, 7}, {1, 13, 1}, {3, 2, 11}, {1, 0, 4}};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    int64_t b = sizes[t][0], sq = sizes[t][1], sk = sizes[t][2];
    int64_t shq[4] = {b, 3, sq, 8}, shk[4] = {b, 3, sk, 8};
    loom_graph_value args[2] = {rand_tensor(&rng, 4, shq), rand_tensor(&rng, 4, shk)};
    char what[64];
    snprintf(what, sizeof what, "b=%lld s=%lld t=%lld", (long long)b, (long long)sq, (long long)sk);
    expect_same(ref, off, args, 2, what);
  }
  loom_graph_module_destroy(ref);
  loom_graph_module_destroy(off);
}

LOOM_TEST(libcall_offload, loom_opt_runs_the_pass) {
  const char *path = "/tmp/loom-offload-test.loom";
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(mlp, f);
  fclose(f);
  loom_test_proc p = loom_test_run("LOOM_OFFLOAD_THRESHOLD=5 %s opt %s --passes=offload,legalize --print-after-all",
                                   loom_test_loom_bin(), path);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "// offload (threshold 5 rows): 2 guarded, 0 to BLAS, 0 kept generated, 0 not BLAS-shaped"), "%s", p.out);
  cr_assert(strstr(p.out, "if (sym(b <= 5))") && strstr(p.out, "call_tp("), "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("LOOM_OFFLOAD_THRESHOLD=-3 %s opt %s --passes=offload", loom_test_loom_bin(), path);
  cr_assert_neq(p.exit_code, 0);
  cr_assert(strstr(p.err, "LOOM_OFFLOAD_THRESHOLD='-3' is not a row count"), "%s", p.err);
  loom_test_proc_free(&p);
  remove(path);
}
