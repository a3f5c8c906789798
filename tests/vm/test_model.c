/* test_model.c — a small model-shaped executable (a KV-cache step): weights, symbolic
 * dims bound from two inputs, s + past computed by shape instructions, two kernels, a
 * tuple of results. Runs it at several shapes and checks its disassembly reads well
 * (the listing in docs/vm.md comes from here). */
#include <stdlib.h>

#include "vm_fixture.h"

#define D 4 /* model width */

/* concat(cache (b, past, D), x (b, s, D), out (b, past + s, D); b, past, s) */
static int32_t k_concat(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {
  (void)ctx;
  const float *c = buf[0], *x = buf[1];
  float *o = buf[2];
  int64_t b = sym[0], past = sym[1], s = sym[2];
  for (int64_t i = 0; i < b; i++) {
    memcpy(o + i * (past + s) * D, c + i * past * D, (size_t)(past * D) * sizeof(float));
    memcpy(o + (i * (past + s) + past) * D, x + i * s * D, (size_t)(s * D) * sizeof(float));
  }
  return 0;
}

/* matmul(x (rows, D), w (D, D), y (rows, D); rows) */
static int32_t k_matmul(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {
  (void)ctx;
  const float *x = buf[0], *w = buf[1];
  float *y = buf[2];
  for (int64_t r = 0; r < sym[0]; r++)
    for (int j = 0; j < D; j++) {
      float acc = 0;
      for (int k = 0; k < D; k++) acc += x[r * D + k] * w[k * D + j];
      y[r * D + j] = acc;
    }
  return 0;
}

static loom_kernel_fn model_resolve(void *ctx, const char *name, int is_extern) {
  (void)ctx, (void)is_extern;
  return !strcmp(name, "concat") ? k_concat : !strcmp(name, "matmul") ? k_matmul : NULL;
}

static loom_vm_exec *model_exec(void) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  float w[D * D];
  for (int i = 0; i < D * D; i++) w[i] = (i % (D + 1) == 0) ? 2.0f : 0.0f; /* 2 * identity */
  int64_t wd[2] = {D, D};
  uint32_t kw = loom_vm_builder_const(b, "wq", LOOM_DTYPE_F32, 2, wd, w);
  /* concat(cache: (b, past, 4), x: (b, s, 4), out: (b, past + s, 4); b, past, s) */
  enum { S = LOOM_VM_SIG_SYM, C = LOOM_VM_SIG_CONST, F32 = LOOM_DTYPE_F32 };
  uint32_t scat[] = {F32, 3, 1, S, 0, 1, S, 1, 1, C, D, 0,
                     F32, 3, 1, S, 0, 1, S, 2, 1, C, D, 0,
                     F32, 3, 1, S, 0, 3, S, 1, S, 2, LOOM_VM_SIG_ADD, 1, C, D, 0,
                     loom_vm_builder_str(b, "b"), loom_vm_builder_str(b, "past"), loom_vm_builder_str(b, "s")};
  /* matmul(x: [rows*4], w: (4, 4), y: [rows*4]; rows) */
  uint32_t smm[] = {F32, LOOM_VM_SIG_FLAT, 3, S, 0, C, D, 0, LOOM_VM_SIG_MUL,
                    F32, 2, 1, C, D, 0, 1, C, D, 0,
                    F32, LOOM_VM_SIG_FLAT, 3, S, 0, C, D, 0, LOOM_VM_SIG_MUL,
                    loom_vm_builder_str(b, "rows")};
  uint32_t kcat = loom_vm_builder_kernel(b, "concat", 3, 3, scat, LOOM_ARRAY_LEN(scat));
  uint32_t kmm = loom_vm_builder_kernel(b, "matmul", 3, 1, smm, LOOM_ARRAY_LEN(smm));
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "step");
  const char *xd[] = {"b", "s", "4"}, *cd[] = {"b", "past", "4"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 3, xd);
  uint32_t cache = loom_vm_fb_param(f, "cache", LOOM_DTYPE_F32, 3, cd);
  uint32_t newc = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR), rw = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t y = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR), out = loom_vm_fb_reg(f, LOOM_VM_OBJ_TUPLE);
  uint32_t ib = loom_vm_fb_ireg(f, "b"), is = loom_vm_fb_ireg(f, "s"), ip = loom_vm_fb_ireg(f, "past");
  uint32_t tot = loom_vm_fb_ireg(f, NULL), d = loom_vm_fb_ireg(f, NULL), rows = loom_vm_fb_ireg(f, NULL);
  uint32_t kd = loom_vm_builder_intconst(b, D);
  uint32_t px[] = {loom_vm_builder_str(b, "x"), LOOM_DTYPE_F32, 3, LOOM_VM_AXIS_BIND, ib, 1, 0, LOOM_VM_AXIS_BIND, is, 1, 0, LOOM_VM_AXIS_CONST, kd};
  uint32_t pc[] = {loom_vm_builder_str(b, "cache"), LOOM_DTYPE_F32, 3, LOOM_VM_AXIS_AFFINE, ib, 1, 0, LOOM_VM_AXIS_BIND, ip, 1, 0, LOOM_VM_AXIS_CONST, kd};
  loom_vm_fb_debug(f, "match_cast(x, R.Tensor((b, s, 4), f32))");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, x, loom_vm_fb_list(f, px, 13)));
  loom_vm_fb_debug(f, "match_cast(cache, R.Tensor((b, past, 4), f32))");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, cache, loom_vm_fb_list(f, pc, 13)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IADD, tot, ip, is));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, d, kd));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IMUL, rows, ib, is));
  uint32_t le1[] = {LOOM_DTYPE_F32, 0, 3, ib, tot, d};
  loom_vm_fb_debug(f, "lv0 = alloc_tensor((b, past + s, 4), f32)");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_EMPTY, newc, loom_vm_fb_list(f, le1, 6)));
  uint32_t lc[] = {3, cache, x, newc, 3, ib, ip, is};
  loom_vm_fb_debug(f, "concat(cache, x, lv0)");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, kcat, loom_vm_fb_list(f, lc, 8)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TCONST, rw, kw));
  uint32_t le2[] = {LOOM_DTYPE_F32, 0, 3, ib, is, d};
  loom_vm_fb_debug(f, "lv1 = alloc_tensor((b, s, 4), f32)");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_EMPTY, y, loom_vm_fb_list(f, le2, 6)));
  uint32_t lm[] = {3, x, rw, y, 1, rows};
  loom_vm_fb_debug(f, "matmul(x, wq, lv1)");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, kmm, loom_vm_fb_list(f, lm, 6)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_KILL, rw, 0, 0));
  uint32_t lt[] = {2, y, newc};
  loom_vm_fb_debug(f, "return (lv1, lv0)");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TUPLE, out, loom_vm_fb_list(f, lt, 3)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, out, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

static loom_tensor *t3(loom_device *dev, int64_t a, int64_t b, int64_t c, float base) {
  int64_t shape[3] = {a, b, c};
  loom_tensor *t;
  OK(loom_tensor_alloc(dev, LOOM_DTYPE_F32, 3, shape, &t));
  for (int64_t i = 0; i < a * b * c; i++) ((float *)t->data)[i] = base + (float)i;
  return t;
}

LOOM_TEST(model, kv_step_runs_at_every_shape_and_reports_bad_ones) {
  loom_vm_exec *e = model_exec();
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, model_resolve, NULL, NULL, &vm));
  loom_device *dev = loom_vm_device(vm);
  int64_t shapes[][3] = {{1, 1, 0}, {1, 1, 5}, {2, 3, 7}, {3, 0, 2}};
  for (size_t k = 0; k < LOOM_ARRAY_LEN(shapes); k++) {
    int64_t b = shapes[k][0], s = shapes[k][1], past = shapes[k][2];
    loom_tensor *x = t3(dev, b, s, D, 0), *c = t3(dev, b, past, D, 1000);
    loom_vm_obj *args[2] = {&x->hdr, &c->hdr}, *out;
    OK(loom_vm_call(vm, 0, args, 2, &out));
    loom_tuple *tu = (loom_tuple *)out;
    loom_tensor *y = (loom_tensor *)tu->items[0], *nc = (loom_tensor *)tu->items[1];
    cr_assert_eq(nc->shape[1], s + past);
    for (int64_t i = 0; i < b * s * D; i++) cr_assert_float_eq(((float *)y->data)[i], 2.0f * (float)i, 0);
    if (s > 0) cr_assert_float_eq(((float *)nc->data)[past * D], 0.0f, 0); /* x[0] after the cache */
    if (past > 0) cr_assert_float_eq(((float *)nc->data)[0], 1000.0f, 0);    /* cache[0] first */
    loom_vm_obj_release(out);
    loom_vm_obj_release(&x->hdr);
    loom_vm_obj_release(&c->hdr);
  }
  loom_tensor *x = t3(dev, 2, 3, D, 0), *c = t3(dev, 3, 5, D, 0);
  loom_vm_obj *args[2] = {&x->hdr, &c->hdr}, *out;
  FAILS_WITH(loom_vm_call(vm, 0, args, 2, &out), "input 'cache' axis 0: expected b = 2 (b = 2 from input 'x' axis 0), got 3");
  loom_vm_obj_release(&c->hdr);
  c = t3(dev, 2, 5, 8, 0);
  args[1] = &c->hdr;
  FAILS_WITH(loom_vm_call(vm, 0, args, 2, &out), "input 'cache' axis 2: expected 4, got 8");
  loom_vm_obj_release(&c->hdr);
  loom_vm_obj_release(&x->hdr);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(model, kv_step_disassembly_reads_well) {
  loom_vm_exec *e = model_exec();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_vm_exec_disasm(e, &sb);
  const char *t = loom_strbuf_cstr(&sb);
  if (getenv("LOOM_PRINT_DISASM")) fputs(t, stderr);
  const char *want[] = {
      "func 0 step(x: f32(b, s, 4), cache: f32(b, past, 4))",
      "MATCH     r1, 'cache' f32(i0, bind i2, 4)",
      "IADD      i3, i2, i1",
      "CALLK     concat(r1, r0, r2; i0, i2, i1)",
      "; matmul(x, wq, lv1)",
      "TUPLE     r5, (r4, r2)",
      "const 0 'wq': f32(4, 4) at data+0, 64 bytes",
  };
  for (size_t i = 0; i < LOOM_ARRAY_LEN(want); i++) cr_assert(strstr(t, want[i]) != NULL, "missing '%s' in:\n%s", want[i], t);
  loom_strbuf_free(&sb);
  loom_vm_exec_free(e);
}
