/* vm_fixture.h — small executables and kernels shared by the VM tests. */
#ifndef LOOM_TESTS_VM_FIXTURE_H
#define LOOM_TESTS_VM_FIXTURE_H

#include <string.h>

#include "support/loom_test.h"
#include "vm/exec.h"
#include "vm/vm.h"

#define OK(expr)                                                                         \
  do {                                                                                   \
    loom_status s_ = (expr);                                                             \
    if (s_) {                                                                            \
      cr_log_error("%s", loom_status_text(s_, 1));                                       \
      loom_status_free(s_);                                                              \
      cr_assert_fail("%s failed", #expr);                                                \
    }                                                                                    \
  } while (0)

/* Expects a failure whose text contains `needle`. */
#define FAILS_WITH(expr, needle)                                                         \
  do {                                                                                   \
    loom_status s_ = (expr);                                                             \
    cr_assert(s_ != LOOM_OK, "%s succeeded", #expr);                                     \
    const char *t_ = loom_status_text(s_, 0);                                            \
    bool has_ = strstr(t_, (needle)) != NULL;                                            \
    if (!has_) cr_log_error("status was: %s", t_);                                       \
    loom_status_free(s_);                                                                \
    cr_assert(has_, "expected '%s' in the error", (needle));                             \
  } while (0)

/* out[i] = a[i] + b[i] for i < sym[0], f32, in parallel chunks. */
typedef struct add_args {
  const float *a, *b;
  float *o;
} add_args;
static inline int32_t add_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  (void)w;
  add_args *x = arg;
  for (int64_t i = b; i < e; i++) x->o[i] = x->a[i] + x->b[i];
  return 0;
}
static inline int32_t kernel_add(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {
  add_args x = {buf[0], buf[1], buf[2]};
  return ctx->parallel_for(ctx->pool, sym[0], add_body, &x);
}
static inline int32_t kernel_fail(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {
  (void)buf, (void)sym;
  ctx->set_error(ctx, "deliberate failure");
  return 7;
}
static inline int32_t kernel_empty(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {
  (void)buf, (void)sym, (void)ctx;
  return 0;
}
static inline loom_kernel_fn fixture_resolve(void *ctx, const char *name, int is_extern) {
  (void)ctx, (void)is_extern;
  if (!strcmp(name, "add")) return kernel_add;
  if (!strcmp(name, "fail")) return kernel_fail;
  if (!strcmp(name, "empty") || !strcmp(name, "ext")) return kernel_empty;
  return NULL;
}

/* main(x: f32(n, 2*n + 1), y: f32(n, 2*n + 1)) -> x + y, through kernel "add". */
static inline loom_vm_exec *fixture_add_exec(void) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  /* add(x, y, out; numel): three dense f32 buffers of numel elements each */
  uint32_t nm = loom_vm_builder_str(b, "numel");
  uint32_t sig[] = {LOOM_DTYPE_F32, LOOM_VM_SIG_FLAT, 1, LOOM_VM_SIG_SYM, 0, LOOM_DTYPE_F32, LOOM_VM_SIG_FLAT, 1,
                    LOOM_VM_SIG_SYM, 0, LOOM_DTYPE_F32, LOOM_VM_SIG_FLAT, 1, LOOM_VM_SIG_SYM, 0, nm};
  uint32_t kadd = loom_vm_builder_kernel(b, "add", 3, 1, sig, 16);
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"n", "2*n + 1"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 2, dims);
  uint32_t y = loom_vm_fb_param(f, "y", LOOM_DTYPE_F32, 2, dims);
  uint32_t out = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t n = loom_vm_fb_ireg(f, "n"), m = loom_vm_fb_ireg(f, NULL), t = loom_vm_fb_ireg(f, NULL);
  uint32_t numel = loom_vm_fb_ireg(f, NULL);
  uint32_t px[] = {loom_vm_builder_str(b, "x"), LOOM_DTYPE_F32, 2, LOOM_VM_AXIS_BIND, n, 1, 0, LOOM_VM_AXIS_AFFINE, n, 2, 1};
  uint32_t py[] = {loom_vm_builder_str(b, "y"), LOOM_DTYPE_F32, 2, LOOM_VM_AXIS_AFFINE, n, 1, 0, LOOM_VM_AXIS_AFFINE, n, 2, 1};
  loom_vm_fb_debug(f, "match_cast x");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, x, loom_vm_fb_list(f, px, 11)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, y, loom_vm_fb_list(f, py, 11)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, t, loom_vm_builder_intconst(b, 2)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IMUL, m, n, t));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, t, loom_vm_builder_intconst(b, 1)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IADD, m, m, t));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IMUL, numel, n, m));
  uint32_t le[] = {LOOM_DTYPE_F32, 0, 2, n, m};
  loom_vm_fb_debug(f, "lv0 = alloc_tensor((n, 2*n + 1), f32)");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_EMPTY, out, loom_vm_fb_list(f, le, 5)));
  uint32_t lk[] = {3, x, y, out, 1, numel};
  loom_vm_fb_debug(f, "add(x, y, lv0)");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, kadd, loom_vm_fb_list(f, lk, 6)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, out, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

/* A dense f32 tensor with values base + i. */
static inline loom_tensor *fixture_tensor(loom_device *d, int64_t r0, int64_t r1, float base) {
  int64_t shape[2] = {r0, r1};
  loom_tensor *t;
  OK(loom_tensor_alloc(d, LOOM_DTYPE_F32, 2, shape, &t));
  for (int64_t i = 0; i < r0 * r1; i++) ((float *)t->data)[i] = base + (float)i;
  return t;
}

#endif
