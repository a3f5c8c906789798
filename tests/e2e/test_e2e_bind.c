/* test_e2e_bind.c — the C API made for language bindings (src/loom.h "for language
 * bindings", src/loomrt.h borrow / packed calls), under ASan: models from memory, the memory
 * peak as text, the interpreter on runtime tensors against the compiled call, `loom sym` on
 * text, borrowed host memory (a result viewing it is marked), packed calls and their
 * malformed descriptions. The Python package (python/tests) uses the same functions. */
#include <stdlib.h>
#include <string.h>

#include "loom.h"
#include "support/loom_test.h"

static const char add_src[] =
    "fn @main(x: Tensor[(n), f32], y: Tensor[(n), f32]) -> Tensor[(n), f32] {\n"
    "  dataflow {\n"
    "    z = add(x, y)\n"
    "    output z\n"
    "  }\n"
    "  return z\n"
    "}\n"
    "fn @same(x: Tensor[(n), i32]) -> Tensor[(n), i32] {\n"
    "  return x\n"
    "}\n";

static void ok(loom_status s) {
  if (s) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", loom_status_text(s, 1));
    loom_status_free(s);
    cr_assert_fail("unexpected error: %s", msg);
  }
}

/* The status's text contains `want`; frees it. */
static void fails_with(loom_status s, const char *want) {
  cr_assert_not_null(s, "expected an error containing '%s'", want);
  const char *t = loom_status_text(s, 0);
  bool has = strstr(t, want) != NULL;
  char copy[1024];
  snprintf(copy, sizeof copy, "%s", t);
  loom_status_free(s);
  cr_assert(has, "error '%s' lacks '%s'", copy, want);
}

typedef struct opened {
  loom_compiled *c;
  loom_rt *rt;
} opened;

static opened open_add(void) {
  opened o;
  loom_compile_options co = {.no_cache = true};
  ok(loom_compile_buffer(add_src, strlen(add_src), "add.loom", NULL, &co, &o.c));
  loom_rt_options ro = {.threads = 1};
  ok(loom_compiled_open(o.c, &ro, &o.rt));
  return o;
}

static void close_opened(opened *o) {
  loom_rt_close(o->rt);
  loom_compiled_free(o->c);
}

LOOM_TEST(e2e_bind, compile_buffer_sniffs_text_and_reports_parse_errors) {
  loom_compiled *c;
  loom_compile_options co = {.no_cache = true};
  /* no suffix: told apart by content */
  ok(loom_compile_buffer(add_src, strlen(add_src), "<bytes>", NULL, &co, &c));
  loom_compiled_free(c);
  static const char bad[] = "fn @main(x: Tensor[(n), f32]) -> Tensor[(n), f32] {\n  return frob(x)\n}\n";
  fails_with(loom_compile_buffer(bad, strlen(bad), "bad.loom", NULL, &co, &c), "bad.loom:2:");
  cr_assert_null(c);
  /* binary bytes are read as ONNX, and junk is an error naming the buffer */
  static const unsigned char junk[] = {0x08, 0x07, 0x12, 0x04, 'j', 'u', 'n', 'k', 0xff, 0xff};
  fails_with(loom_compile_buffer(junk, sizeof junk, "junk", NULL, &co, &c), "junk");
  fails_with(loom_compile_buffer(add_src, strlen(add_src), "x", "tflite", &co, &c), "unknown format 'tflite'");
}

LOOM_TEST(e2e_bind, memory_peak_is_symbolic_text) {
  opened o = open_add();
  char *peak;
  ok(loom_compiled_memory_peak(o.c, "main", &peak));
  cr_assert_str_eq(peak, "4*n", "peak %s", peak); /* the f32(n) result */
  int64_t v;
  const char *names[] = {"n"};
  int64_t vals[] = {10};
  ok(loom_sym_text_eval(peak, names, vals, 1, &v));
  cr_assert_eq(v, 40);
  free(peak);
  fails_with(loom_compiled_memory_peak(o.c, "nope", &peak), "no graph function 'nope'");
  close_opened(&o);
}

LOOM_TEST(e2e_bind, sym_on_text) {
  char *s;
  ok(loom_sym_text_simplify("floordiv(4*n + 8, 4)", NULL, 0, &s));
  cr_assert_str_eq(s, "n + 2");
  free(s);
  const char *facts[] = {"s <= 100"};
  ok(loom_sym_text_simplify("min(s, 4096)", facts, 1, &s));
  cr_assert_str_eq(s, "s");
  free(s);
  int32_t t;
  ok(loom_sym_text_prove("n < n + 1", NULL, 0, &t));
  cr_assert_eq(t, 1);
  ok(loom_sym_text_prove("n + 1 <= n", NULL, 0, &t));
  cr_assert_eq(t, 0);
  ok(loom_sym_text_prove("n <= m", NULL, 0, &t));
  cr_assert_eq(t, -1);
  const char *names[] = {"n", "m"};
  int64_t vals[] = {3, 5}, v;
  ok(loom_sym_text_eval("2*n + floordiv(m, 2)", names, vals, 2, &v));
  cr_assert_eq(v, 8);
  fails_with(loom_sym_text_eval("n + q", names, vals, 2, &v), "q");
  fails_with(loom_sym_text_simplify("n + * 2", NULL, 0, &s), "^");
  const char *bad_fact[] = {"n >="};
  fails_with(loom_sym_text_prove("n <= 4", bad_fact, 1, &t), "while assuming 'n >='");
}

LOOM_TEST(e2e_bind, borrowed_inputs_packed_call_and_interpreter_agree) {
  opened o = open_add();
  enum { N = 37 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.5f, y[i] = 1.0f - (float)i;
  float *xp = x;
  /* x by address, y by the address of its address */
  int64_t desc[] = {LOOM_RT_ARG_HOST,    LOOM_DTYPE_F32, 1, N, (int64_t)(uintptr_t)x,   sizeof x,
                    LOOM_RT_ARG_HOST_AT, LOOM_DTYPE_F32, 1, N, (int64_t)(uintptr_t)&xp, sizeof x};
  loom_rt_outputs out;
  int64_t res[16];
  ok(loom_rt_call_packed(o.rt, "main", desc, 12, 2, &out, res, 16));
  cr_assert_eq(res[0], 1);
  cr_assert_eq(res[1], LOOM_VM_OBJ_TENSOR);
  cr_assert_eq(res[2], LOOM_DTYPE_F32);
  cr_assert_eq(res[3], 1);
  cr_assert_eq(res[4], N);
  cr_assert_eq(res[6], 0); /* a fresh result, not borrowed */
  const float *z = (const float *)(uintptr_t)res[5];
  for (int i = 0; i < N; i++) cr_assert_eq(z[i], x[i] + x[i]);
  loom_rt_outputs_free(&out);

  /* the interpreter on borrowed tensors with no runtime equals the compiled call */
  loom_tensor *in[2];
  int64_t n = N;
  ok(loom_rt_tensor_borrow(NULL, LOOM_DTYPE_F32, 1, &n, x, sizeof x, &in[0]));
  ok(loom_rt_tensor_borrow(NULL, LOOM_DTYPE_F32, 1, &n, y, sizeof y, &in[1]));
  cr_assert(loom_tensor_is_borrowed(in[0]));
  loom_rt_outputs ref, got;
  ok(loom_interp_call_buffer(add_src, strlen(add_src), "add.loom", NULL, "main", in, 2, &ref));
  ok(loom_rt_call(o.rt, "main", in, 2, &got));
  cr_assert_eq(ref.count, 1);
  const loom_tensor *a = (const loom_tensor *)ref.items[0], *b = (const loom_tensor *)got.items[0];
  cr_assert(!loom_tensor_is_borrowed(a));
  cr_assert_eq(a->shape[0], N);
  cr_assert_eq(memcmp(a->data, b->data, sizeof x), 0);
  for (int i = 0; i < N; i++) cr_assert_eq(((const float *)a->data)[i], x[i] + y[i]);
  loom_rt_outputs_free(&ref);
  loom_rt_outputs_free(&got);
  /* the interpreter's errors name the function */
  fails_with(loom_interp_call_buffer(add_src, strlen(add_src), "add.loom", NULL, "nope", in, 2, &ref), "nope");
  loom_tensor_release(in[0]);
  loom_tensor_release(in[1]);

  /* a tensor the caller owns, in a packed call; too little room to describe the results */
  loom_tensor *t;
  ok(loom_rt_tensor_new(o.rt, LOOM_DTYPE_F32, 1, &n, &t));
  memcpy(t->data, y, sizeof y);
  int64_t desc2[] = {LOOM_RT_ARG_TENSOR, (int64_t)(uintptr_t)t, LOOM_RT_ARG_TENSOR, (int64_t)(uintptr_t)t};
  ok(loom_rt_call_packed(o.rt, "main", desc2, 4, 2, &out, res, 3));
  cr_assert_eq(res[0], -1);
  cr_assert_eq(((const float *)((loom_tensor *)out.items[0])->data)[3], 2 * y[3]);
  loom_rt_outputs_free(&out);
  loom_rt_outputs_free(&out); /* freed outputs are empty: a second free is harmless */
  loom_tensor_release(t);
  loom_rt_outputs_free(&(loom_rt_outputs){0});
  close_opened(&o);
}

LOOM_TEST(e2e_bind, identity_result_stays_borrowed) {
  opened o = open_add();
  int32_t v[5] = {1, 2, 3, 4, 5};
  int64_t desc[] = {LOOM_RT_ARG_HOST, LOOM_DTYPE_I32, 1, 5, (int64_t)(uintptr_t)v, sizeof v};
  loom_rt_outputs out;
  int64_t res[16];
  ok(loom_rt_call_packed(o.rt, "same", desc, 6, 1, &out, res, 16));
  cr_assert_eq(res[0], 1);
  cr_assert_eq(res[6], 1, "a result viewing borrowed memory is marked");
  cr_assert(loom_tensor_is_borrowed((loom_tensor *)out.items[0]));
  loom_rt_outputs_free(&out);
  close_opened(&o);
}

LOOM_TEST(e2e_bind, malformed_packed_descriptions_are_errors) {
  opened o = open_add();
  float x[4] = {0};
  loom_rt_outputs out;
  int64_t short_desc[] = {LOOM_RT_ARG_HOST, LOOM_DTYPE_F32, 1, 4};
  fails_with(loom_rt_call_packed(o.rt, "main", short_desc, 4, 1, &out, NULL, 0), "input 0");
  int64_t bad_kind[] = {7, 0};
  fails_with(loom_rt_call_packed(o.rt, "main", bad_kind, 2, 1, &out, NULL, 0), "kind 7");
  int64_t bad_rank[] = {LOOM_RT_ARG_HOST, LOOM_DTYPE_F32, 99, 4, 0, 0};
  fails_with(loom_rt_call_packed(o.rt, "main", bad_rank, 6, 1, &out, NULL, 0), "rank 99");
  int64_t bad_dtype[] = {LOOM_RT_ARG_HOST, 999, 1, 4, (int64_t)(uintptr_t)x, sizeof x};
  fails_with(loom_rt_call_packed(o.rt, "main", bad_dtype, 6, 1, &out, NULL, 0), "dtype 999");
  int64_t too_big[] = {LOOM_RT_ARG_HOST, LOOM_DTYPE_F32, 1, 5, (int64_t)(uintptr_t)x, sizeof x};
  fails_with(loom_rt_call_packed(o.rt, "main", too_big, 6, 1, &out, NULL, 0), "does not fit");
  /* a well-formed second input after a good first one: the first is released on the error */
  int64_t one_good[] = {LOOM_RT_ARG_HOST, LOOM_DTYPE_F32, 1, 4, (int64_t)(uintptr_t)x, sizeof x, 9, 9};
  fails_with(loom_rt_call_packed(o.rt, "main", one_good, 8, 2, &out, NULL, 0), "input 1");
  /* the VM's own checks: a dim that disagrees names the input, the axis and both values */
  float y[3] = {0};
  int64_t mismatch[] = {LOOM_RT_ARG_HOST, LOOM_DTYPE_F32, 1, 4, (int64_t)(uintptr_t)x, sizeof x,
                        LOOM_RT_ARG_HOST, LOOM_DTYPE_F32, 1, 3, (int64_t)(uintptr_t)y, sizeof y};
  fails_with(loom_rt_call_packed(o.rt, "main", mismatch, 12, 2, &out, NULL, 0), "'y'");
  cr_assert_eq(out.count, 0);
  close_opened(&o);
}

/* Every struct row ends with its size; the fields of a struct are in declaration order (rising
 * offsets) and within it. */
LOOM_TEST(e2e_bind, abi_tables_describe_each_struct_in_order) {
  const loom_abi_field *tabs[2];
  size_t ns[2];
  tabs[0] = loom_rt_abi(&ns[0]);
  tabs[1] = loom_compile_abi(&ns[1]);
  int structs = 0;
  for (int t = 0; t < 2; t++) {
    uint64_t end = 0;
    const char *type = NULL;
    for (size_t i = 0; i < ns[t]; i++) {
      const loom_abi_field *r = &tabs[t][i];
      if (type) cr_assert_str_eq(r->type, type);
      type = r->type;
      if (!r->field) {
        cr_assert_leq(end, r->size, "%s: fields end at %llu, sizeof %llu", r->type, (unsigned long long)end,
                      (unsigned long long)r->size);
        structs++;
        type = NULL;
        end = 0;
        continue;
      }
      cr_assert_geq(r->offset, end, "%s.%s overlaps the field before it", r->type, r->field);
      end = r->offset + r->size;
    }
    cr_assert_null(type, "the last struct has no size row");
  }
  cr_assert_eq(structs, 5);
  const loom_abi_field *rt = loom_rt_abi(&ns[0]);
  cr_assert_eq(rt[11].offset, offsetof(loom_rt_options, device));
}
