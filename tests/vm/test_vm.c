/* test_vm.c — the interpreter: each opcode, shape binding errors, calls, kernels. */
#include <stdlib.h>

#include "vm/object.h"
#include "vm_fixture.h"

typedef struct ctx {
  loom_vm_builder *b;
  loom_vm_fbuilder *f;
} ctx;

static ctx begin(void) {
  ctx c;
  OK(loom_vm_builder_new(NULL, &c.b));
  c.f = loom_vm_builder_func(c.b, "main");
  return c;
}

/* Kernel "fail" (kernel_fail) of one f32 buffer of n elements: fail(x; n). */
static uint32_t fail_kernel(ctx *c) {
  uint32_t sig[] = {LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0, loom_vm_builder_str(c->b, "n")};
  return loom_vm_builder_kernel(c->b, "fail", 1, 1, sig, 6);
}

static uint32_t iconst(ctx *c, int64_t v) {
  uint32_t r = loom_vm_fb_ireg(c->f, NULL);
  loom_vm_fb_emit(c->f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, r, loom_vm_builder_intconst(c->b, v)));
  return r;
}

/* Emits SHAPE of the given int regs into a new register and RET. */
static void ret_shape(ctx *c, const uint32_t *regs, uint32_t n) {
  uint32_t words[32] = {n};
  for (uint32_t i = 0; i < n; i++) words[1 + i] = regs[i];
  uint32_t r = loom_vm_fb_reg(c->f, LOOM_VM_OBJ_TENSOR);
  loom_vm_fb_emit(c->f, loom_vm_insn_abx(LOOM_VM_OP_SHAPE, r, loom_vm_fb_list(c->f, words, n + 1)));
  loom_vm_fb_emit(c->f, loom_vm_insn_abc(LOOM_VM_OP_RET, r, 0, 0));
}

/* Finishes, runs main with no inputs; returns status and the result's int64 values. */
static loom_status finish_run(ctx *c, int64_t *vals, uint32_t n) {
  loom_vm_exec *e;
  loom_status st = loom_vm_builder_finish(c->b, &e);
  loom_vm_builder_free(c->b);
  if (st) return st;
  loom_vm *vm;
  st = loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm);
  loom_vm_obj *out = NULL;
  if (!st) st = loom_vm_call(vm, 0, NULL, 0, &out);
  if (!st && out->kind == LOOM_VM_OBJ_TENSOR) {
    loom_tensor *t = (loom_tensor *)out;
    for (uint32_t i = 0; i < n && i < (uint32_t)t->shape[0]; i++) vals[i] = ((int64_t *)t->data)[i];
  }
  loom_vm_obj_release(out);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
  return st;
}

static loom_status binop(loom_vm_op op, int64_t a, int64_t b, int64_t *out) {
  ctx c = begin();
  uint32_t ra = iconst(&c, a), rb = iconst(&c, b), r = loom_vm_fb_ireg(c.f, NULL);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(op, r, ra, rb));
  ret_shape(&c, &r, 1);
  return finish_run(&c, out, 1);
}

static int64_t binop_ok(loom_vm_op op, int64_t a, int64_t b) {
  int64_t v = -999;
  OK(binop(op, a, b, &v));
  return v;
}

LOOM_TEST(vm, int_arithmetic) {
  cr_assert_eq(binop_ok(LOOM_VM_OP_IADD, 3, 4), 7);
  cr_assert_eq(binop_ok(LOOM_VM_OP_ISUB, 3, 4), -1);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IMUL, -3, 4), -12);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IFLOORDIV, 7, 2), 3);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IFLOORDIV, -7, 2), -4);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IFLOORDIV, 7, -2), -4);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IFLOORMOD, -7, 2), 1);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IFLOORMOD, 7, -2), -1);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IFLOORMOD, 6, 3), 0);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IMIN, 5, -2), -2);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IMAX, 5, -2), 5);
  cr_assert_eq(binop_ok(LOOM_VM_OP_IEQ, 5, 5), 1);
  cr_assert_eq(binop_ok(LOOM_VM_OP_INE, 5, 5), 0);
  cr_assert_eq(binop_ok(LOOM_VM_OP_ILT, 4, 5), 1);
  cr_assert_eq(binop_ok(LOOM_VM_OP_ILE, 5, 5), 1);
  cr_assert_eq(binop_ok(LOOM_VM_OP_ILT, 5, 4), 0);
}

LOOM_TEST(vm, int_overflow_is_an_error_never_a_wrap) {
  int64_t v;
  FAILS_WITH(binop(LOOM_VM_OP_IADD, INT64_MAX, 1, &v), "IADD overflows int64");
  FAILS_WITH(binop(LOOM_VM_OP_ISUB, INT64_MIN, 1, &v), "ISUB overflows int64");
  FAILS_WITH(binop(LOOM_VM_OP_IMUL, INT64_MAX / 2, 3, &v), "IMUL overflows int64");
  FAILS_WITH(binop(LOOM_VM_OP_IFLOORDIV, 5, 0, &v), "floordiv: division by zero");
  FAILS_WITH(binop(LOOM_VM_OP_IFLOORMOD, 5, 0, &v), "floormod: division by zero");
  FAILS_WITH(binop(LOOM_VM_OP_IFLOORDIV, INT64_MIN, -1, &v), "floordiv overflows");
  /* the error names the function, pc and instruction */
  FAILS_WITH(binop(LOOM_VM_OP_IADD, INT64_MAX, 1, &v), "in function 'main' at pc 2: IADD");
}

LOOM_TEST(vm, jumps_loop_sums_1_to_10) {
  ctx c = begin();
  uint32_t i = iconst(&c, 1), s = iconst(&c, 0), one = iconst(&c, 1), ten = iconst(&c, 10);
  uint32_t cond = loom_vm_fb_ireg(c.f, NULL);
  uint32_t top = loom_vm_fb_pc(c.f);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_IADD, s, s, i));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_IADD, i, i, one));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_ILE, cond, i, ten));
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_JMPIF, cond, top));
  /* JMPIFNOT not taken, JMP over a poisoned IMOV */
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_JMPIFNOT, one, 0));
  uint32_t j = loom_vm_fb_emit(c.f, 0);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_IMOV, s, ten, 0));
  loom_vm_fb_patch(c.f, j, loom_vm_insn_abx(LOOM_VM_OP_JMP, 0, loom_vm_fb_pc(c.f)));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_NOP, 0, 0, 0));
  uint32_t r2 = loom_vm_fb_ireg(c.f, NULL);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_IMOV, r2, s, 0));
  uint32_t regs[2] = {s, r2};
  ret_shape(&c, regs, 2);
  int64_t v[2] = {0};
  OK(finish_run(&c, v, 2));
  cr_assert_eq(v[0], 55);
  cr_assert_eq(v[1], 55);
}

/* ---------------------------------------------------------------- shape binding */

static loom_status call_add(loom_vm *vm, loom_device *d, int64_t x0, int64_t x1, int64_t y0, int64_t y1, loom_vm_obj **out) {
  loom_tensor *x = fixture_tensor(d, x0, x1, 0), *y = fixture_tensor(d, y0, y1, 100);
  loom_vm_obj *args[2] = {&x->hdr, &y->hdr};
  loom_status st = loom_vm_call(vm, 0, args, 2, out);
  loom_vm_obj_release(&x->hdr);
  loom_vm_obj_release(&y->hdr);
  return st;
}

LOOM_TEST(vm, kernel_call_adds_with_bound_shapes) {
  loom_vm_exec *e = fixture_add_exec();
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm));
  loom_vm_obj *out;
  OK(call_add(vm, loom_vm_device(vm), 4, 9, 4, 9, &out));
  loom_tensor *t = (loom_tensor *)out;
  cr_assert_eq(t->rank, 2);
  cr_assert_eq(t->shape[0], 4);
  cr_assert_eq(t->shape[1], 9);
  for (int i = 0; i < 36; i++) cr_assert_float_eq(((float *)t->data)[i], 100.0f + 2.0f * (float)i, 0);
  loom_vm_obj_release(out);
  /* zero-size shapes run too */
  OK(call_add(vm, loom_vm_device(vm), 0, 1, 0, 1, &out));
  cr_assert_eq(((loom_tensor *)out)->shape[0], 0);
  loom_vm_obj_release(out);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(vm, shape_errors_name_input_axis_expression_and_values) {
  loom_vm_exec *e = fixture_add_exec();
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm));
  loom_device *d = loom_vm_device(vm);
  loom_vm_obj *out;
  FAILS_WITH(call_add(vm, d, 4, 10, 4, 9, &out), "input 'x' axis 1: expected 2*n + 1 = 9 (n = 4 from axis 0), got 10");
  FAILS_WITH(call_add(vm, d, 4, 9, 4, 11, &out), "input 'y' axis 1: expected 2*n + 1 = 9 (n = 4 from input 'x' axis 0), got 11");
  FAILS_WITH(call_add(vm, d, 4, 9, 5, 9, &out), "input 'y' axis 0: expected n = 4 (n = 4 from input 'x' axis 0), got 5");
  /* the binding text from the debug info is in the context */
  FAILS_WITH(call_add(vm, d, 4, 10, 4, 9, &out), "[match_cast x]");
  /* the VM stays usable */
  OK(call_add(vm, d, 2, 5, 2, 5, &out));
  loom_vm_obj_release(out);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(vm, call_time_checks_count_dtype_rank_density) {
  loom_vm_exec *e = fixture_add_exec();
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm));
  loom_device *d = loom_vm_device(vm);
  loom_tensor *x = fixture_tensor(d, 3, 7, 0);
  loom_vm_obj *out, *args[2] = {&x->hdr, &x->hdr};
  FAILS_WITH(loom_vm_call(vm, 0, args, 1, &out), "function 'main' takes 2 inputs, got 1");
  int64_t shp[2] = {3, 7}, shp3[3] = {3, 7, 1};
  loom_tensor *xi, *x3;
  OK(loom_tensor_alloc(d, LOOM_DTYPE_I32, 2, shp, &xi));
  OK(loom_tensor_alloc(d, LOOM_DTYPE_F32, 3, shp3, &x3));
  args[1] = &xi->hdr;
  FAILS_WITH(loom_vm_call(vm, 0, args, 2, &out), "input 'y' of 'main': expected dtype f32, got i32");
  args[1] = &x3->hdr;
  FAILS_WITH(loom_vm_call(vm, 0, args, 2, &out), "input 'y' of 'main': expected rank 2, got 3");
  x->strides[0] = 1, x->strides[1] = 3; /* a transposed view */
  args[1] = &x->hdr;
  FAILS_WITH(loom_vm_call(vm, 0, args, 2, &out), "strided tensors are not supported");
  x->strides[0] = 7, x->strides[1] = 1;
  OK(loom_vm_call(vm, 0, args, 2, &out));
  loom_vm_obj_release(out);
  loom_vm_obj_release(&x->hdr);
  loom_vm_obj_release(&xi->hdr);
  loom_vm_obj_release(&x3->hdr);
  (void)shp;
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

/* One-input function with the given pattern; returns the status of running it on shape. */
static loom_status match_one(const uint32_t *pat_axes, uint32_t nwords, uint32_t rank, loom_dtype dt, int32_t trank,
                             const int64_t *tshape, int64_t *bound) {
  ctx c = begin();
  const char *dims[4] = {"a", "b", "c", "d"};
  uint32_t x = loom_vm_fb_param(c.f, "x", LOOM_VM_ANY_DTYPE, (uint32_t)trank, dims);
  uint32_t n = loom_vm_fb_ireg(c.f, "n"), m = loom_vm_fb_ireg(c.f, "m");
  (void)m;
  uint32_t w[64] = {loom_vm_builder_str(c.b, "x"), dt, rank};
  memcpy(w + 3, pat_axes, nwords * 4);
  /* int constants used by CONST items: index 0 = 768 */
  (void)loom_vm_builder_intconst(c.b, 768);
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, x, loom_vm_fb_list(c.f, w, 3 + nwords)));
  uint32_t regs[2] = {n, m};
  ret_shape(&c, regs, 2);
  loom_vm_exec *e;
  loom_status st = loom_vm_builder_finish(c.b, &e);
  loom_vm_builder_free(c.b);
  if (st) return st;
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, NULL, NULL, NULL, &vm));
  loom_tensor *t;
  OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, trank, tshape, &t));
  loom_vm_obj *out = NULL, *arg = &t->hdr;
  st = loom_vm_call(vm, 0, &arg, 1, &out);
  if (!st) bound[0] = ((int64_t *)((loom_tensor *)out)->data)[0], bound[1] = ((int64_t *)((loom_tensor *)out)->data)[1];
  loom_vm_obj_release(out);
  loom_vm_obj_release(&t->hdr);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
  return st;
}

LOOM_TEST(vm, match_binds_affine_and_checks_every_item_kind) {
  int64_t v[2] = {0};
  /* x: (4*n + 3, 768, ?, m) with m = 2*? no: EXPR checks I[n] */
  uint32_t p1[] = {LOOM_VM_AXIS_BIND, 0, 4, 3, LOOM_VM_AXIS_CONST, 0, LOOM_VM_AXIS_ANY, LOOM_VM_AXIS_BIND, 1, 1, 0};
  int64_t s1[4] = {11, 768, 5, 6};
  OK(match_one(p1, 11, 4, LOOM_DTYPE_F32, 4, s1, v));
  cr_assert_eq(v[0], 2);
  cr_assert_eq(v[1], 6);
  int64_t s2[4] = {12, 768, 5, 6};
  FAILS_WITH(match_one(p1, 11, 4, LOOM_DTYPE_F32, 4, s2, v), "input 'x' axis 0: expected 4*n + 3, got 12 (12 - 3 is not divisible by 4)");
  int64_t s3[4] = {11, 512, 5, 6};
  FAILS_WITH(match_one(p1, 11, 4, LOOM_DTYPE_F32, 4, s3, v), "input 'x' axis 1: expected 768, got 512");
  int64_t s4[4] = {1, 768, 5, 6};
  FAILS_WITH(match_one(p1, 11, 4, LOOM_DTYPE_F32, 4, s4, v), "input 'x' axis 0: expected 4*n + 3, got 1 (n would be negative)");
  FAILS_WITH(match_one(p1, 11, 4, LOOM_DTYPE_I64, 4, s1, v), "input 'x': expected dtype i64, got f32");
  FAILS_WITH(match_one(p1, 11, 3, LOOM_DTYPE_F32, 4, s1, v), "input 'x': expected rank 3, got 4");
  /* EXPR: axis 1 must equal I[n] (text "s + past"), vars listed with their origins */
  uint32_t p2[] = {LOOM_VM_AXIS_BIND, 0, 1, 2, LOOM_VM_AXIS_EXPR, 0, 0, 1, 0};
  int64_t s5[2] = {5, 3};
  OK(match_one(p2, 9, 2, LOOM_VM_ANY_DTYPE, 2, s5, v));
  cr_assert_eq(v[0], 3);
  int64_t s6[2] = {5, 4};
  FAILS_WITH(match_one(p2, 9, 2, LOOM_VM_ANY_DTYPE, 2, s6, v), "input 'x' axis 1: expected  = 3 (n = 3 from axis 0), got 4");
  /* AFFINE with a negative constant */
  uint32_t p3[] = {LOOM_VM_AXIS_BIND, 0, 1, 0, LOOM_VM_AXIS_AFFINE, 0, 3, -1u};
  int64_t s7[2] = {4, 12};
  FAILS_WITH(match_one(p3, 8, 2, LOOM_VM_ANY_DTYPE, 2, s7, v), "input 'x' axis 1: expected 3*n - 1 = 11 (n = 4 from axis 0), got 12");
  /* the verifier rejects a non-positive BIND coefficient and bad item kinds */
  uint32_t p4[] = {LOOM_VM_AXIS_BIND, 0, 0, 0};
  FAILS_WITH(match_one(p4, 4, 1, LOOM_VM_ANY_DTYPE, 1, s7, v), "coefficient 0 must be positive");
  uint32_t p5[] = {9};
  FAILS_WITH(match_one(p5, 1, 1, LOOM_VM_ANY_DTYPE, 1, s7, v), "unknown item kind 9");
}

/* ---------------------------------------------------------------- objects and calls */

LOOM_TEST(vm, memory_tuples_moves_kills_constants_builtins_and_calls) {
  ctx c = begin();
  loom_vm_builder *b = c.b;
  float w[6] = {1, 2, 3, 4, 5, 6};
  int64_t wd[2] = {2, 3};
  uint32_t kw = loom_vm_builder_const(b, "w", LOOM_DTYPE_F32, 2, wd, w);
  /* helper(t: tensor, k: int) -> SHAPE(k, dim0(t)) */
  loom_vm_fbuilder *g = loom_vm_builder_func(b, "helper");
  const char *gd[] = {"a", "b"};
  uint32_t gt = loom_vm_fb_param(g, "t", LOOM_DTYPE_F32, 2, gd);
  uint32_t gk = loom_vm_fb_int_param(g, "k");
  uint32_t gd0 = loom_vm_fb_ireg(g, NULL);
  loom_vm_fb_emit(g, loom_vm_insn_abc(LOOM_VM_OP_DIM, gd0, gt, 0));
  uint32_t gr = loom_vm_fb_reg(g, LOOM_VM_OBJ_TENSOR);
  uint32_t gl[] = {2, gk, gd0};
  loom_vm_fb_emit(g, loom_vm_insn_abx(LOOM_VM_OP_SHAPE, gr, loom_vm_fb_list(g, gl, 3)));
  loom_vm_fb_emit(g, loom_vm_insn_abc(LOOM_VM_OP_RET, gr, 0, 0));

  loom_vm_fbuilder *f = c.f;
  uint32_t rw = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR), rw2 = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t rs = loom_vm_fb_reg(f, LOOM_VM_OBJ_STORAGE), rv = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t rc = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR), rh = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t rt = loom_vm_fb_reg(f, LOOM_VM_OBJ_TUPLE), rg = loom_vm_fb_reg(f, LOOM_VM_OBJ_ANY);
  uint32_t nbytes = iconst(&c, 64), off = iconst(&c, 16), two = iconst(&c, 2), three = iconst(&c, 3), k = iconst(&c, 42);
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TCONST, rw, kw));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_MOV, rw2, rw, 0));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_KILL, rw, 0, 0));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_ALLOC, rs, nbytes, 0));
  uint32_t lv[] = {rs, LOOM_DTYPE_F32, off, 2, two, three};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_VIEW, rv, loom_vm_fb_list(f, lv, 6)));
  uint32_t lz[] = {1, rv, 0};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_ZERO, loom_vm_fb_list(f, lz, 3)));
  uint32_t lc[] = {2, rc, rw2, 0};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_COPY, loom_vm_fb_list(f, lc, 4)));
  uint32_t la[] = {0, 2, two, two};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_ASSERT_EQ, loom_vm_fb_list(f, la, 4)));
  uint32_t lcall[] = {1, 1, rc, 1, k};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALL, rh, loom_vm_fb_list(f, lcall, 5)));
  uint32_t lt[] = {4, rc, rv, rh, rw2};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TUPLE, rt, loom_vm_fb_list(f, lt, 5)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_TGET, rg, rt, 2));
  uint32_t rt2 = loom_vm_fb_reg(f, LOOM_VM_OBJ_TUPLE);
  uint32_t lt2[] = {2, rt, rg};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TUPLE, rt2, loom_vm_fb_list(f, lt2, 3)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, rt2, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, NULL, NULL, NULL, &vm));
  loom_vm_obj *out;
  OK(loom_vm_call(vm, 0, NULL, 0, &out));
  cr_assert_eq(out->kind, LOOM_VM_OBJ_TUPLE);
  loom_tuple *top = (loom_tuple *)out;
  loom_tuple *t = (loom_tuple *)top->items[0];
  loom_tensor *copy = (loom_tensor *)t->items[0], *view = (loom_tensor *)t->items[1], *h = (loom_tensor *)t->items[2];
  loom_tensor *wc = (loom_tensor *)t->items[3];
  cr_assert_eq(copy->shape[1], 3);
  cr_assert_float_eq(((float *)copy->data)[5], 6.0f, 0);
  cr_assert(copy->data != wc->data, "COPY made new memory");
  cr_assert_eq(((float *)view->data)[3], 0.0f);
  cr_assert_eq((char *)view->data - (char *)view->storage->data, 16);
  cr_assert_eq(((int64_t *)h->data)[0], 42);
  cr_assert_eq(((int64_t *)h->data)[1], 2);
  cr_assert_eq(top->items[1], &h->hdr, "TGET returned the same object");
  loom_vm_obj_release(out);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(vm, runtime_errors_keep_the_vm_usable) {
  /* main(x: f32(sel)): sel = dim 0 picks the failure: 0 kernel error, 1 TGET out of
   * range, 2 DIM past the rank, 3 RET of a register empty on that path (defined on the
   * others, so the verifier lets it through and the VM reports it), 4 success */
  ctx c = begin();
  loom_vm_fbuilder *f = c.f;
  uint32_t kf = fail_kernel(&c);
  const char *dims[] = {"sel"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 1, dims);
  uint32_t rt = loom_vm_fb_reg(f, LOOM_VM_OBJ_TUPLE), rg = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t re = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t sel = loom_vm_fb_ireg(f, "sel"), cond = loom_vm_fb_ireg(f, NULL), tmp = loom_vm_fb_ireg(f, NULL);
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_DIM, sel, x, 0));
  /* re := x unless sel == 3 */
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IEQ, cond, sel, iconst(&c, 3)));
  uint32_t skip = loom_vm_fb_emit(f, 0);
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_MOV, re, x, 0));
  loom_vm_fb_patch(f, skip, loom_vm_insn_abx(LOOM_VM_OP_JMPIF, cond, loom_vm_fb_pc(f)));
  uint32_t jumps[5];
  for (int64_t k = 0; k < 5; k++) {
    uint32_t kr = iconst(&c, k);
    loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IEQ, cond, sel, kr));
    jumps[k] = loom_vm_fb_emit(f, 0);
  }
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  uint32_t lk[] = {1, x, 1, sel};
  loom_vm_fb_patch(f, jumps[0], loom_vm_insn_abx(LOOM_VM_OP_JMPIF, cond, loom_vm_fb_pc(f)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, kf, loom_vm_fb_list(f, lk, 4)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  uint32_t lt[] = {1, x};
  loom_vm_fb_patch(f, jumps[1], loom_vm_insn_abx(LOOM_VM_OP_JMPIF, cond, loom_vm_fb_pc(f)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_TUPLE, rt, loom_vm_fb_list(f, lt, 2)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_TGET, rg, rt, 1));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_fb_patch(f, jumps[2], loom_vm_insn_abx(LOOM_VM_OP_JMPIF, cond, loom_vm_fb_pc(f)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_DIM, tmp, x, 5));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_fb_patch(f, jumps[3], loom_vm_insn_abx(LOOM_VM_OP_JMPIF, cond, loom_vm_fb_pc(f)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, re, 0, 0));
  loom_vm_fb_patch(f, jumps[4], loom_vm_insn_abx(LOOM_VM_OP_JMPIF, cond, loom_vm_fb_pc(f)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(c.b, &e));
  loom_vm_builder_free(c.b);
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm));
  const char *msgs[] = {"kernel 'fail' failed (code 7): deliberate failure", "TGET: item 1 of a 1-tuple",
                        "DIM: axis 5 of a rank-1 tensor", "register r3 is empty"};
  for (int round = 0; round < 2; round++)
    for (int64_t k = 0; k < 5; k++) {
      loom_tensor *t;
      OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, &k, &t));
      loom_vm_obj *out = NULL, *arg = &t->hdr;
      if (k < 4) FAILS_WITH(loom_vm_call(vm, 0, &arg, 1, &out), msgs[k]);
      else OK(loom_vm_call(vm, 0, &arg, 1, &out));
      cr_assert_eq(t->hdr.refs, k < 4 ? 1u : 2u, "no reference leaked on failure");
      loom_vm_obj_release(out);
      loom_vm_obj_release(&t->hdr);
    }
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(vm, kernel_failure_and_missing_kernel_are_reported) {
  ctx c = begin();
  uint32_t kf = fail_kernel(&c);
  const char *dims[] = {"n"};
  uint32_t x = loom_vm_fb_param(c.f, "x", LOOM_DTYPE_F32, 1, dims);
  uint32_t in = loom_vm_fb_ireg(c.f, "n");
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_DIM, in, x, 0));
  uint32_t lk[] = {1, x, 1, in};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, kf, loom_vm_fb_list(c.f, lk, 4)));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(c.b, &e));
  loom_vm_builder_free(c.b);
  loom_vm *vm;
  FAILS_WITH(loom_vm_create(NULL, e, NULL, NULL, NULL, &vm), "kernel 0 'fail' is not provided");
  OK(loom_vm_create(NULL, e, fixture_resolve, NULL, NULL, &vm));
  int64_t n = 4;
  loom_tensor *t;
  OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, &n, &t));
  loom_vm_obj *out, *arg = &t->hdr;
  FAILS_WITH(loom_vm_call(vm, 0, &arg, 1, &out), "kernel 'fail' failed (code 7): deliberate failure");
  FAILS_WITH(loom_vm_call(vm, 0, &arg, 1, &out), "kernel 'fail' failed (code 7): deliberate failure");
  loom_vm_obj_release(&t->hdr);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(vm, verifier_rejects_bad_bytecode_from_the_builder) {
  struct {
    loom_vm_insn in;
    const char *msg;
  } cases[] = {
      {loom_vm_insn_abc(LOOM_VM_OP_IADD, 0, 0, 9), "operand C: int register 9 out of range"},
      {loom_vm_insn_abc(LOOM_VM_OP_MOV, 0, 1, 0), "MOV r0 (tensor) := r1 (storage): kinds differ"},
      {loom_vm_insn_abx(LOOM_VM_OP_JMP, 0, 99), "operand Bx: jump target 99 out of range"},
      {loom_vm_insn_abx(LOOM_VM_OP_ICONST, 0, 5), "int constant 5 out of range"},
      {loom_vm_insn_abc(LOOM_VM_OP_DIM, 0, 1, 0), "register r1 is declared storage, needs tensor"},
      {(loom_vm_insn)200, "unknown opcode 200"},
      {loom_vm_insn_abc(LOOM_VM_OP_NOP, 0, 0, 0) | (1ull << 60), "reserved bits"},
      {loom_vm_insn_abx(LOOM_VM_OP_CALLK, 3, 0), "kernel 3 out of range"},
      {loom_vm_insn_abx(LOOM_VM_OP_CALLB, 1, 0), "objects: 0 given, signature needs 1"},
      {loom_vm_insn_abc(LOOM_VM_OP_ALLOC, 1, 0, 3), "ALLOC on device 3: only device 0 (the CPU) exists"},
  };
  for (size_t i = 0; i < LOOM_ARRAY_LEN(cases); i++) {
    ctx c = begin();
    loom_vm_fb_reg(c.f, LOOM_VM_OBJ_TENSOR);
    loom_vm_fb_reg(c.f, LOOM_VM_OBJ_STORAGE);
    loom_vm_fb_ireg(c.f, NULL);
    uint32_t zero = 0;
    loom_vm_fb_list(c.f, &zero, 1);
    loom_vm_fb_emit(c.f, cases[i].in);
    loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_RET, 0, 0, 0));
    loom_vm_exec *e;
    FAILS_WITH(loom_vm_builder_finish(c.b, &e), cases[i].msg);
    loom_vm_builder_free(c.b);
  }
  /* a function that can run off its end */
  ctx c = begin();
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_NOP, 0, 0, 0));
  loom_vm_exec *e;
  FAILS_WITH(loom_vm_builder_finish(c.b, &e), "execution could run off the end");
  loom_vm_builder_free(c.b);
}

LOOM_TEST(vm, dlpack_round_trip_without_copies) {
  loom_device *d;
  OK(loom_device_cpu_create(NULL, &d));
  loom_tensor *t = fixture_tensor(d, 2, 3, 1);
  DLManagedTensor *m;
  OK(loom_tensor_to_dlpack(t, &m));
  cr_assert_eq(m->dl_tensor.data, t->data);
  cr_assert_eq(m->dl_tensor.ndim, 2);
  cr_assert_eq(m->dl_tensor.shape[1], 3);
  cr_assert_eq(m->dl_tensor.dtype.code, kDLFloat);
  loom_tensor *back;
  OK(loom_tensor_from_dlpack(NULL, d, m, &back));
  cr_assert_eq(back->data, t->data);
  cr_assert_eq(back->shape[0], 2);
  cr_assert_eq(back->strides[0], 3);
  loom_vm_obj_release(&t->hdr); /* `back` keeps the memory alive through the DLPack owner */
  cr_assert_float_eq(((float *)back->data)[5], 6.0f, 0);
  loom_vm_obj_release(&back->hdr);
  loom_device_release(d);
}

LOOM_TEST(vm, storage_pool_reuses_blocks) {
  loom_device *d;
  OK(loom_device_cpu_create(NULL, &d));
  loom_storage *s1, *s2;
  OK(loom_storage_alloc(d, 1000, &s1));
  void *p = s1->data;
  loom_vm_obj_release(&s1->hdr);
  OK(loom_storage_alloc(d, 900, &s2));
  cr_assert_eq(s2->data, p, "same size class reuses the block");
  cr_assert_eq(d->pool_hits, 1);
  loom_vm_obj_release(&s2->hdr);
  loom_device_release(d);
}

LOOM_TEST(vm, storage_pool_lends_a_larger_free_block_to_a_smaller_request) {
  /* shapes that shrink from call to call: the smaller storage takes the larger free block
   * (its pages already faulted in) instead of mapping a new one, and the block goes back to
   * its own class, where a request of the larger size finds it again */
  loom_device *d;
  OK(loom_device_cpu_create(NULL, &d));
  loom_storage *big, *small, *again, *far, *fresh;
  OK(loom_storage_alloc(d, (size_t)3 << 20, &big)); /* class 4 MiB */
  void *p = big->data;
  loom_vm_obj_release(&big->hdr);
  OK(loom_storage_alloc(d, (size_t)600 << 10, &small)); /* class 1 MiB: 2 classes below */
  cr_assert_eq(small->data, p);
  cr_assert_eq(d->pool_hits, 1);
  cr_assert_eq(d->pool_misses, 1);
  cr_assert_eq(d->pooled_bytes, 0);
  loom_vm_obj_release(&small->hdr);
  cr_assert_eq(d->pooled_bytes, (size_t)4 << 20, "back in the 4 MiB class");
  OK(loom_storage_alloc(d, (size_t)4 << 20, &again));
  cr_assert_eq(again->data, p);
  loom_vm_obj_release(&again->hdr);
  /* more than LOOM_DEVICE_POOL_BORROW classes below: a block of its own */
  OK(loom_storage_alloc(d, 100, &far));
  cr_assert_neq(far->data, p);
  /* a larger request never takes a smaller block */
  OK(loom_storage_alloc(d, (size_t)5 << 20, &fresh));
  cr_assert_neq(fresh->data, p);
  cr_assert_eq(d->pooled_bytes, (size_t)4 << 20);
  loom_vm_obj_release(&far->hdr);
  loom_vm_obj_release(&fresh->hdr);
  loom_device_release(d);
}

static int ext_calls;
static int32_t ext_fn(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {
  (void)ctx;
  ext_calls++;
  ((float *)buf[0])[0] = (float)sym[0];
  return 0;
}
static loom_kernel_fn ext_resolve(void *ctx, const char *name, int is_extern) {
  (void)ctx;
  return is_extern && !strcmp(name, "host_fn") ? ext_fn : NULL;
}

LOOM_TEST(vm, externs_builtin_failures_and_call_depth) {
  ctx c = begin();
  uint32_t exsig[] = {LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0, loom_vm_builder_str(c.b, "n")};
  uint32_t ex = loom_vm_builder_extern(c.b, "host_fn", 1, 1, exsig, 6);
  const char *dims[] = {"n"};
  uint32_t x = loom_vm_fb_param(c.f, "x", LOOM_DTYPE_F32, 1, dims);
  uint32_t n = loom_vm_fb_ireg(c.f, "n"), one = iconst(&c, 1), two = iconst(&c, 2);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_DIM, n, x, 0));
  uint32_t lx[] = {1, x, 1, n};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALLX, ex, loom_vm_fb_list(c.f, lx, 4)));
  uint32_t lp[] = {1, x, 0};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_PRINT, loom_vm_fb_list(c.f, lp, 3)));
  uint32_t is3 = loom_vm_fb_ireg(c.f, NULL), three = iconst(&c, 3);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_IEQ, is3, n, three));
  uint32_t j = loom_vm_fb_emit(c.f, 0);
  uint32_t la[] = {0, 2, one, two};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_ASSERT_EQ, loom_vm_fb_list(c.f, la, 4)));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  /* n == 3: unbounded recursion main(x) -> main(x) */
  loom_vm_fb_patch(c.f, j, loom_vm_insn_abx(LOOM_VM_OP_JMPIF, is3, loom_vm_fb_pc(c.f)));
  uint32_t r = loom_vm_fb_reg(c.f, LOOM_VM_OBJ_TENSOR);
  uint32_t lc[] = {0, 1, x, 0};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALL, r, loom_vm_fb_list(c.f, lc, 4)));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_RET, r, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(c.b, &e));
  loom_vm_builder_free(c.b);
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, ext_resolve, NULL, NULL, &vm));
  for (int64_t len = 2; len <= 3; len++) {
    loom_tensor *t;
    OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, &len, &t));
    loom_vm_obj *out, *arg = &t->hdr;
    ext_calls = 0;
    FAILS_WITH(loom_vm_call(vm, 0, &arg, 1, &out), len == 2 ? "assertion failed: 1 != 2" : "call depth exceeds 200");
    cr_assert_eq(ext_calls, len == 2 ? 1 : 200, "extern ran %d times", ext_calls);
    cr_assert_float_eq(((float *)t->data)[0], (float)len, 0);
    cr_assert_eq(t->hdr.refs, 1u);
    loom_vm_obj_release(&t->hdr);
  }
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}

LOOM_TEST(vm, builder_out_of_memory_is_reported) {
  for (long k = 0; k < 300; k++) {
    loom_alloc_fail_after(k);
    loom_vm_builder *b = NULL;
    loom_status st = loom_vm_builder_new(NULL, &b);
    loom_vm_exec *e = NULL;
    if (!st) {
      uint32_t nm = loom_vm_builder_str(b, "n");
      uint32_t sig[] = {LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0, LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0,
                        LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0, nm};
      uint32_t kk = loom_vm_builder_kernel(b, "add", 3, 1, sig, 16);
      loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
      if (f) {
        const char *dims[] = {"n"};
        uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 1, dims);
        uint32_t n = loom_vm_fb_ireg(f, "n");
        uint32_t l[] = {3, x, x, x, 1, n};
        loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, kk, loom_vm_fb_list(f, l, 6)));
        loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
      }
      st = loom_vm_builder_finish(b, &e);
    }
    loom_alloc_fail_after(-1);
    bool ok = st == LOOM_OK;
    if (st) {
      cr_assert_eq(loom_status_code(st), LOOM_CODE_RESOURCE_EXHAUSTED, "allocation %ld: %s", k, loom_status_text(st, 1));
      loom_status_free(st);
    }
    loom_vm_exec_free(e);
    loom_vm_builder_free(b);
    if (ok) return;
  }
  cr_assert_fail("the builder never succeeded");
}

/* A loop's run-time pieces: ILOAD reads the count from a tensor; SCAN_PUT stacks x at row i
 * (the stack made from the first item, grown by doubling), y at the last row when y is given a
 * different shape is refused; ROWS cuts the stack to the rows run, or fails when none ran. */
LOOM_TEST(vm, iload_scan_put_and_rows) {
  ctx c = begin();
  const char *dx[] = {"n"}, *dy[] = {"m"}, *dc[] = {0};
  uint32_t x = loom_vm_fb_param(c.f, "x", LOOM_DTYPE_F32, 1, dx);
  uint32_t y = loom_vm_fb_param(c.f, "y", LOOM_DTYPE_F32, 1, dy);
  uint32_t cnt = loom_vm_fb_param(c.f, "c", LOOM_VM_ANY_DTYPE, 0, dc);
  uint32_t s = loom_vm_fb_reg(c.f, LOOM_VM_OBJ_TENSOR), r = loom_vm_fb_reg(c.f, LOOM_VM_OBJ_TENSOR);
  uint32_t n = loom_vm_fb_ireg(c.f, NULL), i = iconst(&c, 0), one = iconst(&c, 1), t = loom_vm_fb_ireg(c.f, NULL);
  uint32_t last = loom_vm_fb_ireg(c.f, NULL), big = iconst(&c, INT64_MAX);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_ILOAD, n, cnt, 0));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_ISUB, last, n, one));
  uint32_t top = loom_vm_fb_pc(c.f);
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_ILT, t, i, n));
  uint32_t jexit = loom_vm_fb_emit(c.f, 0);
  /* the item: y at the last row, x elsewhere (IEQ t := i == last; JMPIF t -> put y) */
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_IEQ, t, i, last));
  uint32_t jy = loom_vm_fb_emit(c.f, 0);
  uint32_t lx[] = {2, s, x, 2, i, big};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_SCAN_PUT, loom_vm_fb_list(c.f, lx, 6)));
  uint32_t jnext = loom_vm_fb_emit(c.f, 0);
  loom_vm_fb_patch(c.f, jy, loom_vm_insn_abx(LOOM_VM_OP_JMPIF, t, loom_vm_fb_pc(c.f)));
  uint32_t ly[] = {2, s, y, 2, i, big};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_SCAN_PUT, loom_vm_fb_list(c.f, ly, 6)));
  loom_vm_fb_patch(c.f, jnext, loom_vm_insn_abx(LOOM_VM_OP_JMP, 0, loom_vm_fb_pc(c.f)));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_IADD, i, i, one));
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_JMP, 0, top)); /* backward */
  loom_vm_fb_patch(c.f, jexit, loom_vm_insn_abx(LOOM_VM_OP_JMPIFNOT, t, loom_vm_fb_pc(c.f)));
  uint32_t lr[] = {2, r, s, 1, i};
  loom_vm_fb_emit(c.f, loom_vm_insn_abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_ROWS, loom_vm_fb_list(c.f, lr, 5)));
  loom_vm_fb_emit(c.f, loom_vm_insn_abc(LOOM_VM_OP_RET, r, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(c.b, &e)); /* the verifier takes the backward jump and the maybe-empty stack */
  loom_vm_builder_free(c.b);
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, NULL, NULL, NULL, &vm));
  loom_device *dev = loom_vm_device(vm);
  int64_t three = 3, two = 2;
  loom_tensor *tx, *ty, *ty2, *tc, *tf;
  OK(loom_tensor_alloc(dev, LOOM_DTYPE_F32, 1, &three, &tx));
  OK(loom_tensor_alloc(dev, LOOM_DTYPE_F32, 1, &three, &ty));
  OK(loom_tensor_alloc(dev, LOOM_DTYPE_F32, 1, &two, &ty2));
  OK(loom_tensor_alloc(dev, LOOM_DTYPE_I32, 0, NULL, &tc));
  OK(loom_tensor_alloc(dev, LOOM_DTYPE_F32, 0, NULL, &tf));
  for (int k = 0; k < 3; k++) ((float *)tx->data)[k] = (float)k, ((float *)ty->data)[k] = 10.0f + (float)k;
  static const int32_t counts[] = {1, 9, 20};
  for (size_t q = 0; q < 3; q++) {
    *(int32_t *)tc->data = counts[q];
    loom_vm_obj *args[3] = {&tx->hdr, &ty->hdr, &tc->hdr}, *out;
    OK(loom_vm_call(vm, 0, args, 3, &out));
    loom_tensor *o = (loom_tensor *)out;
    cr_assert(o->rank == 2 && o->shape[0] == counts[q] && o->shape[1] == 3, "(%lld, %lld)", (long long)o->shape[0], (long long)o->shape[1]);
    for (int32_t row = 0; row < counts[q]; row++)
      for (int k = 0; k < 3; k++)
        cr_assert_float_eq(((float *)o->data)[row * 3 + k], row == counts[q] - 1 ? 10.0f + (float)k : (float)k, 0);
    loom_vm_obj_release(out);
  }
  loom_vm_obj *out, *args[3] = {&tx->hdr, &ty2->hdr, &tc->hdr};
  *(int32_t *)tc->data = 4;
  FAILS_WITH(loom_vm_call(vm, 0, args, 3, &out), "scan item of iteration 3 is f32(2), the items before it f32(3)");
  args[1] = &ty->hdr;
  *(int32_t *)tc->data = 0;
  FAILS_WITH(loom_vm_call(vm, 0, args, 3, &out), "a loop ran no iteration, and the shape of its scan items is known only from them");
  args[2] = &tf->hdr;
  FAILS_WITH(loom_vm_call(vm, 0, args, 3, &out), "ILOAD: expected one bool or integer element, got f32 of 1 elements");
  loom_tensor *objs[] = {tx, ty, ty2, tc, tf};
  for (int k = 0; k < 5; k++) loom_vm_obj_release(&objs[k]->hdr);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
}
