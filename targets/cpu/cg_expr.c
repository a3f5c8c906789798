/* cg_expr.c — expressions of tensor programs (and their symbolic index arithmetic)
 * lowered to LLVM IR.
 *
 * Semantics follow the reference interpreter (tensorprog/interp.c):
 *   - index values are i64; floordiv/floormod round toward -inf; nsw is put on index
 *     adds and multiplies (an overflowing index is an error in the interpreter);
 *   - integer arithmetic wraps to the dtype; integer division by zero fails the kernel
 *     (ctx->set_error, return 1); INT_MIN / -1 gives INT_MIN (remainder 0), no UB;
 *   - f16/bf16 values live in float registers, rounded to the storage type after every
 *     operation; f32 arithmetic is done in f32 (the interpreter's double-then-round gives
 *     the same result for + - * / sqrt; math functions differ by at most a few ulp);
 *   - float min/max propagate NaN (llvm.minimum / llvm.maximum), except inside reduce loops
 *     without strict_fp, where they are maxnum/minnum with no-NaNs so they vectorise;
 *   - float -> int casts truncate toward zero and saturate at the target's range (NaN -> 0;
 *     llvm.fpto[su]i.sat at the target width), as the graph reference does; i64/u64 -> narrow
 *     floats go through double, as the interpreter does;
 *   - select, && and || evaluate lazily (branches) when an operand loads memory or
 *     divides, so a guarded out-of-bounds load is never executed; otherwise `select`.
 * f32 exp, tanh, erf (and sigmoid) are inline code that vectorises (cg_numeric.c: exp <= 2 ulp,
 * including subnormal results; tanh about 2e-7 relative; erf below 1.5e-7 absolute); f64 erf
 * and tanh call libm. Storage conversions (f16, bf16, float8 / float4) are in cg_numeric.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/lowp.h"

#include "targets/cpu/cg_internal.h"

void cg_error(cg *g, loom_status s) {
  if (!g->st) g->st = s;
  else loom_status_free(s);
}

LLVMValueRef cg_i64(cg *g, int64_t v) { return LLVMConstInt(g->t_i64, (unsigned long long)v, 1); }

/* Constants of type `ty`, splatted when `ty` is a vector (lane mode, cg_stmt.c). */
static LLVMValueRef splat_const(LLVMTypeRef ty, LLVMValueRef scalar) {
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef xs[LOOM_CPU_MAX_LANES];
  for (unsigned i = 0; i < n && i < LOOM_CPU_MAX_LANES; i++) xs[i] = scalar;
  return LLVMConstVector(xs, n);
}
LLVMValueRef cg_kf(LLVMTypeRef ty, double v) {
  if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind) return splat_const(ty, LLVMConstReal(LLVMGetElementType(ty), v));
  return LLVMConstReal(ty, v);
}
LLVMValueRef cg_ki(LLVMTypeRef ty, long long v) {
  if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind)
    return splat_const(ty, LLVMConstInt(LLVMGetElementType(ty), (unsigned long long)v, 1));
  return LLVMConstInt(ty, (unsigned long long)v, 1);
}
/* `scalar_ty`, as a vector of the same width when `like` is a vector. */
LLVMTypeRef cg_like_ty(LLVMTypeRef like, LLVMTypeRef scalar_ty) {
  if (LLVMGetTypeKind(like) == LLVMVectorTypeKind) return LLVMVectorType(scalar_ty, LLVMGetVectorSize(like));
  return scalar_ty;
}
bool cg_is_vec(LLVMValueRef v) { return LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind; }

LLVMValueRef cg_splat(cg *g, LLVMValueRef v, unsigned lanes) {
  if (cg_is_vec(v)) return v;
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), lanes);
  LLVMValueRef ins = LLVMBuildInsertElement(g->b, LLVMGetPoison(vt), v, LLVMConstInt(g->t_i32, 0, 0), "");
  return LLVMBuildShuffleVector(g->b, ins, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(g->t_i32, lanes)), "");
}

LLVMTypeRef cg_reg_type(cg *g, loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_BOOL: return g->t_i1;
    case LOOM_DTYPE_I8: case LOOM_DTYPE_U8: return g->t_i8;
    case LOOM_DTYPE_I4: case LOOM_DTYPE_U4: case LOOM_DTYPE_I2: case LOOM_DTYPE_U2: return g->t_i8; /* one per byte */
    case LOOM_DTYPE_I16: case LOOM_DTYPE_U16: return g->t_i16;
    case LOOM_DTYPE_I32: case LOOM_DTYPE_U32: return g->t_i32;
    case LOOM_DTYPE_I64: case LOOM_DTYPE_U64: return g->t_i64;
    case LOOM_DTYPE_F16: case LOOM_DTYPE_BF16: case LOOM_DTYPE_F32: return g->t_f32;
    case LOOM_DTYPE_F64: return g->t_f64;
    default: return loom_dtype_is_lowp_float(t) ? g->t_f32 : g->t_i64; /* float8 / float4: computed in f32 */
  }
}

LLVMTypeRef cg_mem_type(cg *g, loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_BOOL: return g->t_i8;
    case LOOM_DTYPE_F16: return g->t_f16;
    case LOOM_DTYPE_BF16: return g->t_i16;
    default: return loom_dtype_is_lowp_float(t) ? g->t_i8 : cg_reg_type(g, t);
  }
}

LLVMValueRef cg_call_intrinsic(cg *g, const char *name, LLVMTypeRef overload, LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef tys[2] = {overload, overload};
  unsigned ntys = overload ? 1 : 0;
  /* fpto[su]i.sat is overloaded on result and operand */
  if (!strncmp(name, "llvm.fptosi.sat", 15) || !strncmp(name, "llvm.fptoui.sat", 15)) {
    tys[0] = overload ? overload : g->t_i64; /* the result type */
    tys[1] = LLVMTypeOf(args[0]);
    ntys = 2;
  }
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(g->mod, id, tys, ntys);
  LLVMTypeRef fty = LLVMIntrinsicGetType(g->c, id, tys, ntys);
  return LLVMBuildCall2(g->b, fty, decl, args, n, "");
}

/* Calls a libm function `name` of type T(T...). */
static LLVMValueRef call_libm(cg *g, const char *name, LLVMTypeRef t, LLVMValueRef *args, unsigned n) {
  LLVMTypeRef ps[3] = {t, t, t};
  LLVMTypeRef fty = LLVMFunctionType(t, ps, n, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(g->mod, name);
  if (!fn) fn = LLVMAddFunction(g->mod, name, fty);
  return LLVMBuildCall2(g->b, fty, fn, args, n, "");
}

/* ---- failure exit ----------------------------------------------------------- */

void cg_fail_if(cg *g, LLVMValueRef bad, const char *msg) {
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->c, g->fn, "fail");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->c, g->fn, "ok");
  LLVMValueRef br = LLVMBuildCondBr(g->b, bad, fail, ok);
  (void)br;
  LLVMPositionBuilderAtEnd(g->b, fail);
  if (g->gpu) { /* *err = 1; return 1 (the host reports the kernel's failure) */
    LLVMBuildStore(g->b, LLVMConstInt(g->t_i32, 1, 0), g->ctxp);
    LLVMBuildRet(g->b, LLVMConstInt(g->t_i32, 1, 0));
    LLVMPositionBuilderAtEnd(g->b, ok);
    return;
  }
  /* ctx->set_error(ctx, msg); return 1 */
  LLVMValueRef slot = LLVMBuildStructGEP2(g->b, g->t_ctx, g->ctxp, 6, "");
  LLVMValueRef fnp = LLVMBuildLoad2(g->b, g->t_ptr, slot, "set_error");
  LLVMTypeRef ps[2] = {g->t_ptr, g->t_ptr};
  LLVMTypeRef fty = LLVMFunctionType(g->t_void, ps, 2, 0);
  LLVMValueRef text = LLVMBuildGlobalStringPtr(g->b, msg, "msg");
  LLVMValueRef args[2] = {g->ctxp, text};
  LLVMBuildCall2(g->b, fty, fnp, args, 2, "");
  LLVMBuildRet(g->b, LLVMConstInt(g->t_i32, 1, 0));
  LLVMPositionBuilderAtEnd(g->b, ok);
}

void cg_fail_index_if(cg *g, LLVMValueRef bad, const char *msg, LLVMValueRef index, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->c, g->fn, "fail_index");
  LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(g->c, g->fn, "ok");
  LLVMBuildCondBr(g->b, bad, fail, ok);
  LLVMPositionBuilderAtEnd(g->b, fail);
  if (g->gpu) { /* *err = 2; return 1 */
    LLVMBuildStore(g->b, LLVMConstInt(g->t_i32, 2, 0), g->ctxp);
    LLVMBuildRet(g->b, LLVMConstInt(g->t_i32, 1, 0));
    LLVMPositionBuilderAtEnd(g->b, ok);
    return;
  }
  /* ctx->set_error_index(ctx, msg, index, lo, hi); return 1 */
  LLVMValueRef slot = LLVMBuildStructGEP2(g->b, g->t_ctx, g->ctxp, 9, "");
  LLVMValueRef fnp = LLVMBuildLoad2(g->b, g->t_ptr, slot, "set_error_index");
  LLVMTypeRef ps[5] = {g->t_ptr, g->t_ptr, g->t_i64, g->t_i64, g->t_i64};
  LLVMTypeRef fty = LLVMFunctionType(g->t_void, ps, 5, 0);
  LLVMValueRef args[5] = {g->ctxp, LLVMBuildGlobalStringPtr(g->b, msg, "msg"), index, lo, hi};
  LLVMBuildCall2(g->b, fty, fnp, args, 5, "");
  LLVMBuildRet(g->b, LLVMConstInt(g->t_i32, 1, 0));
  LLVMPositionBuilderAtEnd(g->b, ok);
}

/* ---- symbolic expressions (i64) ---------------------------------------------- */

static LLVMValueRef lookup_sym(cg *g, const loom_sym_expr *var) {
  for (size_t i = g->syms.len; i-- > 0;)
    if (g->syms.data[i].var == var) return g->syms.data[i].v;
  cg_error(g, LOOM_ERROR(INTERNAL, "program @%s: symbolic variable '%s' is not bound in generated code",
                         g->f->name, loom_sym_var_name(var)));
  return cg_i64(g, 0);
}

static bool sym_nonneg(cg *g, const loom_sym_expr *e) {
  loom_sym_interval iv = loom_sym_bounds(g->cx, e);
  return !iv.lo_inf && iv.lo >= 0;
}

/* Integer division family on iN values. floor: round toward -inf (else toward zero);
 * mod: the remainder. Division by a non-constant divisor checks for zero, or, when !check
 * (a hoisted division, computed whether or not its use runs), divides by 1 instead. */
static LLVMValueRef int_divmod_at(cg *g, LLVMValueRef a, LLVMValueRef b, bool is_signed, bool floor, bool mod,
                                  bool a_nonneg, bool check) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
  bool bconst = LLVMIsAConstantInt(b) != NULL;
  long long bv = bconst ? LLVMConstIntGetSExtValue(b) : 0;
  if (bconst && bv == 0) {
    if (check) cg_fail_if(g, LLVMConstInt(g->t_i1, 1, 0), "integer division by zero");
    return zero;
  }
  if (!bconst && check) cg_fail_if(g, LLVMBuildICmp(g->b, LLVMIntEQ, b, zero, ""), "integer division by zero");
  if (!bconst && !check) b = LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntEQ, b, zero, ""), one, b, "");
  if (!is_signed) return mod ? LLVMBuildURem(g->b, a, b, "") : LLVMBuildUDiv(g->b, a, b, "");
  if (bconst && bv > 0 && a_nonneg) return mod ? LLVMBuildURem(g->b, a, b, "") : LLVMBuildUDiv(g->b, a, b, "");
  LLVMValueRef minus1 = LLVMConstAllOnes(t);
  LLVMValueRef is_m1 = NULL, d = b;
  if (!bconst || bv == -1) {
    is_m1 = LLVMBuildICmp(g->b, LLVMIntEQ, b, minus1, "");
    d = LLVMBuildSelect(g->b, is_m1, one, b, "");
  }
  LLVMValueRef q = LLVMBuildSDiv(g->b, a, d, ""), r = LLVMBuildSRem(g->b, a, d, "");
  if (floor) {
    /* r != 0 && (r ^ d) < 0: q -= 1, r += d */
    LLVMValueRef adj = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntNE, r, zero, ""),
                                    LLVMBuildICmp(g->b, LLVMIntSLT, LLVMBuildXor(g->b, r, d, ""), zero, ""), "");
    q = LLVMBuildSub(g->b, q, LLVMBuildZExt(g->b, adj, t, ""), "");
    r = LLVMBuildSelect(g->b, adj, LLVMBuildAdd(g->b, r, d, ""), r, "");
  }
  if (is_m1) {
    q = LLVMBuildSelect(g->b, is_m1, LLVMBuildSub(g->b, zero, a, ""), q, "");
    r = LLVMBuildSelect(g->b, is_m1, zero, r, "");
  }
  return mod ? r : q;
}

static LLVMValueRef int_divmod(cg *g, LLVMValueRef a, LLVMValueRef b, bool is_signed, bool floor, bool mod,
                               bool a_nonneg) {
  return int_divmod_at(g, a, b, is_signed, floor, mod, a_nonneg, true);
}

static LLVMValueRef bool64(cg *g, LLVMValueRef i1) { return LLVMBuildZExt(g->b, i1, g->t_i64, ""); }
static LLVMValueRef nz(cg *g, LLVMValueRef v) { return LLVMBuildICmp(g->b, LLVMIntNE, v, cg_i64(g, 0), ""); }

/* Lane mode, the lane variable as a value: lane 0's i64 value x (the variable bound to 0)
 * plus s * <0, 1, .., W-1>. */
static LLVMValueRef lane_iota(cg *g, LLVMValueRef x, unsigned s) {
  unsigned w = g->lanes;
  LLVMValueRef k[LOOM_CPU_MAX_LANES];
  for (unsigned i = 0; i < w; i++) k[i] = cg_i64(g, (int64_t)(s * i));
  return LLVMBuildAdd(g->b, cg_splat(g, x, w), LLVMConstVector(k, w), "");
}

/* ---- hoisted divisions ----------------------------------------------------------
 *
 * A floordiv / floormod of symbols by a non-constant divisor is computed once, at the hoist
 * point of the innermost scope binding one of its variables (a block that runs whenever
 * that scope does), with a divisor of 1 in place of 0; the use only checks the divisor for
 * zero. Besides saving a division per iteration, this keeps integer divisions out of
 * conditional code: LLVM 19's loop vectoriser computes a loop-invariant division guarded by
 * an `if` for the first lane only, under the first lane's condition, and then uses it for
 * every lane's address — a convolution's channel offset `floordiv(o_idx, o / groups)` read
 * under its padding test gave wrong results or read outside the input (issue 27). */

LLVMValueRef cg_hoist_point(cg *g) {
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->c, g->fn, "scope");
  LLVMValueRef br = LLVMBuildBr(g->b, next);
  LLVMPositionBuilderAtEnd(g->b, next);
  return br;
}

typedef struct innermost_probe {
  const cg *g;
  size_t depth; /* innermost binding used, as index + 1 into g->syms; 0 = none */
  bool unhoistable;
} innermost_probe;

static void innermost_fn(void *ud, const loom_sym_expr *v) {
  innermost_probe *p = ud;
  for (size_t i = p->g->syms.len; i-- > 0;)
    if (p->g->syms.data[i].var == v) {
      if (!p->g->syms.data[i].at) p->unhoistable = true;
      if (i + 1 > p->depth) p->depth = i + 1;
      return;
    }
  p->unhoistable = true; /* unbound: lookup_sym reports it */
}

static bool div_live(const cg *g, const cg_divval *d) {
  for (size_t i = 0; i < g->syms.len; i++)
    if (g->syms.data[i].at == d->at) return true;
  return false;
}

void cg_prune_divs(cg *g) {
  size_t k = 0;
  for (size_t i = 0; i < g->divs.len; i++)
    if (div_live(g, &g->divs.data[i])) g->divs.data[k++] = g->divs.data[i];
  g->divs.len = k;
}

static LLVMValueRef sym_divmod(cg *g, const loom_sym_expr *e, bool mod) {
  const loom_sym_expr *num = loom_sym_operand(e, 0), *den = loom_sym_operand(e, 1);
  bool nonneg = sym_nonneg(g, num);
  innermost_probe p = {g, 0, false};
  loom_sym_for_each_var(e, innermost_fn, &p);
  bool check = !g->hoisting; /* while hoisting, the use checks */
  if (loom_sym_kind_of(den) == LOOM_SYM_CONST || p.unhoistable || p.depth == 0)
    return int_divmod_at(g, cg_sym(g, num), cg_sym(g, den), true, true, mod, nonneg, check);
  LLVMValueRef at = g->syms.data[p.depth - 1].at, v = NULL;
  for (size_t i = 0; i < g->divs.len && !v; i++)
    if (g->divs.data[i].e == e && g->divs.data[i].at == at) v = g->divs.data[i].v;
  if (!v) { /* a builder of its own: the use's builder keeps its place */
    LLVMBuilderRef use = g->b;
    g->b = LLVMCreateBuilderInContext(g->c);
    LLVMPositionBuilderBefore(g->b, at);
    g->hoisting++;
    v = int_divmod_at(g, cg_sym(g, num), cg_sym(g, den), true, true, mod, nonneg, false);
    g->hoisting--;
    LLVMDisposeBuilder(g->b);
    g->b = use;
    if (!LOOM_VEC_PUSH(NULL, &g->divs, ((cg_divval){e, at, v}))) cg_error(g, LOOM_OOM());
  }
  if (check) cg_fail_if(g, LLVMBuildICmp(g->b, LLVMIntEQ, cg_sym(g, den), cg_i64(g, 0), ""), "integer division by zero");
  return v;
}

LLVMValueRef cg_sym(cg *g, const loom_sym_expr *e) {
  if (!e) {
    cg_error(g, LOOM_ERROR(INTERNAL, "null symbolic expression"));
    return cg_i64(g, 0);
  }
  loom_sym_kind k = loom_sym_kind_of(e);
  size_t n = loom_sym_num_operands(e);
  LLVMValueRef x[3] = {NULL, NULL, NULL};
  if (k == LOOM_SYM_FLOORDIV || k == LOOM_SYM_FLOORMOD) return sym_divmod(g, e, k == LOOM_SYM_FLOORMOD);
  if (k != LOOM_SYM_ADD && k != LOOM_SYM_MUL && k != LOOM_SYM_CONST && k != LOOM_SYM_VAR)
    for (size_t i = 0; i < n && i < 3; i++) x[i] = cg_sym(g, loom_sym_operand(e, i));
  switch (k) {
    case LOOM_SYM_CONST: {
      int64_t v;
      if (!loom_sym_is_const(e, &v)) {
        cg_error(g, LOOM_ERROR(OUT_OF_RANGE, "program @%s: a symbolic constant does not fit int64", g->f->name));
        return cg_i64(g, 0);
      }
      return cg_i64(g, v);
    }
    case LOOM_SYM_VAR:
      return lookup_sym(g, e);
    case LOOM_SYM_ADD:
    case LOOM_SYM_MUL: {
      LLVMValueRef acc = NULL;
      for (size_t i = 0; i < n; i++) {
        LLVMValueRef v = cg_sym(g, loom_sym_operand(e, i));
        if (!acc) acc = v;
        else if (k == LOOM_SYM_ADD) acc = LLVMBuildNSWAdd(g->b, acc, v, "");
        else acc = LLVMBuildNSWMul(g->b, acc, v, "");
      }
      return acc ? acc : cg_i64(g, k == LOOM_SYM_MUL ? 1 : 0);
    }
    case LOOM_SYM_MIN:
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, x[0], x[1], ""), x[0], x[1], "");
    case LOOM_SYM_MAX:
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSGT, x[0], x[1], ""), x[0], x[1], "");
    case LOOM_SYM_EQ: return bool64(g, LLVMBuildICmp(g->b, LLVMIntEQ, x[0], x[1], ""));
    case LOOM_SYM_NE: return bool64(g, LLVMBuildICmp(g->b, LLVMIntNE, x[0], x[1], ""));
    case LOOM_SYM_LT: return bool64(g, LLVMBuildICmp(g->b, LLVMIntSLT, x[0], x[1], ""));
    case LOOM_SYM_LE: return bool64(g, LLVMBuildICmp(g->b, LLVMIntSLE, x[0], x[1], ""));
    case LOOM_SYM_AND: return bool64(g, LLVMBuildAnd(g->b, nz(g, x[0]), nz(g, x[1]), ""));
    case LOOM_SYM_OR: return bool64(g, LLVMBuildOr(g->b, nz(g, x[0]), nz(g, x[1]), ""));
    case LOOM_SYM_NOT: return bool64(g, LLVMBuildICmp(g->b, LLVMIntEQ, x[0], cg_i64(g, 0), ""));
    case LOOM_SYM_SELECT: return LLVMBuildSelect(g->b, nz(g, x[0]), x[1], x[2], "");
    default: break;
  }
  cg_error(g, LOOM_ERROR(UNIMPLEMENTED, "program @%s: symbolic kind '%s' in generated code", g->f->name,
                         loom_sym_kind_name(k)));
  return cg_i64(g, 0);
}

/* ---- memory ----------------------------------------------------------------- */

static LLVMValueRef lookup_buf(cg *g, const loom_tp_buffer *buf) {
  for (size_t i = g->bufs.len; i-- > 0;)
    if (g->bufs.data[i].buf == buf) return g->bufs.data[i].ptr;
  cg_error(g, LOOM_ERROR(INTERNAL, "program @%s: buffer '%s' is not bound in generated code", g->f->name, buf->name));
  return LLVMConstPointerNull(g->t_ptr);
}

/* Are a and b the same value: one node, one let, one symbol, or a cast of the same? */
static bool tp_expr_same(const loom_tp_expr *a, const loom_tp_expr *b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->dtype != b->dtype) return false;
  switch (a->kind) {
  case LOOM_TP_EXPR_LETREF: return a->u.let == b->u.let;
  case LOOM_TP_EXPR_SYM: return a->u.sym == b->u.sym;
  case LOOM_TP_EXPR_CAST: return tp_expr_same(a->u.cast_arg, b->u.cast_arg);
  default: return false;
  }
}

/* Are a and b the same value within one expression: tp_expr_same, or loads of one buffer at
 * the same indices (nothing is stored while an expression is evaluated)? */
static bool same_value(const loom_tp_expr *a, const loom_tp_expr *b) {
  if (tp_expr_same(a, b)) return true;
  if (a->kind != LOOM_TP_EXPR_LOAD || b->kind != LOOM_TP_EXPR_LOAD || a->u.load.buf != b->u.load.buf) return false;
  for (int i = 0; i < a->u.load.buf->ndim; i++)
    if (!same_value(a->u.load.idx[i], b->u.load.idx[i])) return false;
  return true;
}

/* Is index e the wrapped form select(t < 0, t + dim, t) of a negative-allowed index t
 * (take, gather)? Then *raw is t's value, for the error message. */
static bool wrapped_index(cg *g, const loom_tp_expr *e, const loom_sym_expr *dim, LLVMValueRef *raw) {
  if (e->kind != LOOM_TP_EXPR_SELECT) return false;
  const loom_tp_expr *c = e->u.select.cond, *a = e->u.select.then_e, *t = e->u.select.else_e;
  if (c->kind != LOOM_TP_EXPR_OP || c->u.op.op != LOOM_TP_OP_LT || a->kind != LOOM_TP_EXPR_OP || a->u.op.op != LOOM_TP_OP_ADD)
    return false;
  const loom_tp_expr *z = c->u.op.args[1], *d = a->u.op.args[1];
  int64_t zv;
  bool zero = z->kind == LOOM_TP_EXPR_CONST && z->u.c.i == 0;
  if (!zero && z->kind == LOOM_TP_EXPR_SYM) zero = loom_sym_is_const(z->u.sym, &zv) && zv == 0;
  bool is_dim = d->kind == LOOM_TP_EXPR_SYM && d->u.sym == dim;
  if (!zero || !is_dim || !tp_expr_same(c->u.op.args[0], t) || !tp_expr_same(a->u.op.args[0], t)) return false;
  LLVMValueRef v = cg_expr(g, t);
  if (LLVMTypeOf(v) != g->t_i64) v = LLVMBuildSExt(g->b, v, g->t_i64, "");
  *raw = v;
  return true;
}

/* Lane mode, a load at stride s (cg_lane_stride): lanes 0, s, .., s*(W-1) from p. One masked
 * load of the s*W elements from p with only the first s*(W-1)+1 enabled (the last lane read is
 * the last element the access needs: a masked-off lane is never read, so never outside the
 * buffer), then a shuffle of every s-th. */
static LLVMValueRef strided_lane_load(cg *g, loom_dtype t, LLVMValueRef p, unsigned s) {
  unsigned w = g->lanes, n = s * w, used = s * (w - 1) + 1;
  LLVMTypeRef et = cg_mem_type(g, t), wide = LLVMVectorType(et, n);
  LLVMValueRef mask[LOOM_CPU_MAX_LANES], sel[LOOM_CPU_MAX_LANES];
  for (unsigned i = 0; i < n; i++) mask[i] = LLVMConstInt(g->t_i1, i < used, 0);
  for (unsigned i = 0; i < w; i++) sel[i] = LLVMConstInt(g->t_i32, i * s, 0);
  LLVMValueRef args[4] = {p, LLVMConstInt(g->t_i32, (unsigned long long)loom_dtype_size(t), 0), LLVMConstVector(mask, n),
                          LLVMGetPoison(wide)};
  LLVMTypeRef tys[2] = {wide, LLVMTypeOf(p)};
  unsigned id = LLVMLookupIntrinsicID("llvm.masked.load", strlen("llvm.masked.load"));
  LLVMValueRef decl = LLVMGetIntrinsicDeclaration(g->mod, id, tys, 2);
  LLVMValueRef v = LLVMBuildCall2(g->b, LLVMIntrinsicGetType(g->c, id, tys, 2), decl, args, 4, "");
  return LLVMBuildShuffleVector(g->b, v, LLVMGetPoison(wide), LLVMConstVector(sel, w), "");
}

LLVMValueRef cg_elem_ptr(cg *g, const loom_tp_buffer *buf, loom_tp_expr *const *idx) {
  LLVMValueRef base = lookup_buf(g, buf);
  LLVMValueRef off = NULL;
  for (int d = 0; d < buf->ndim; d++) {
    int run = 0;
    const loom_sym_expr *fused = loom_tp_fused_run(g->cx, buf, idx, d, &run);
    if (fused) { /* axes d..d+run-1 fused into one loop: off * (their extents' product) + x, no division */
      LLVMValueRef x = cg_sym(g, fused);
      if (off) {
        const loom_sym_expr *prod = buf->dims[d];
        for (int k = d + 1; k < d + run; k++) prod = loom_sym_mul(g->cx, prod, buf->dims[k]);
        x = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, off, cg_sym(g, prod), ""), x, "");
      }
      off = x;
      d += run - 1;
      continue;
    }
    /* a symbol is lane 0's index in lane mode (the variable bound to 0), never a vector */
    LLVMValueRef i = idx[d]->kind == LOOM_TP_EXPR_SYM ? cg_sym(g, idx[d]->u.sym) : cg_expr(g, idx[d]);
    if (LLVMTypeOf(i) != g->t_i64) i = LLVMBuildSExt(g->b, i, g->t_i64, "");
    if (loom_tp_expr_reads_memory(idx[d])) { /* data, not affine: checked (unsigned: negatives too) */
      char msg[256];
      LLVMValueRef dim = cg_sym(g, buf->dims[d]), raw, lo;
      if (wrapped_index(g, idx[d], buf->dims[d], &raw)) { /* select(t < 0, t + dim, t): report t in [-dim, dim - 1] */
        snprintf(msg, sizeof msg, "an index into axis %d of '%s' (read from data)", d, buf->name);
        lo = LLVMBuildNeg(g->b, dim, "");
      } else {
        snprintf(msg, sizeof msg, "an index into axis %d of '%s' (read from data)", d, buf->name);
        raw = i, lo = cg_i64(g, 0);
      }
      cg_fail_index_if(g, LLVMBuildICmp(g->b, LLVMIntUGE, i, dim, ""), msg, raw, lo,
                       LLVMBuildSub(g->b, dim, cg_i64(g, 1), ""));
    }
    if (!off) off = i;
    else off = LLVMBuildNSWAdd(g->b, LLVMBuildNSWMul(g->b, off, cg_sym(g, buf->dims[d]), ""), i, "");
  }
  if (!off) off = cg_i64(g, 0);
  return LLVMBuildInBoundsGEP2(g->b, cg_mem_type(g, buf->dtype), base, &off, 1, "");
}

/* Rounds a float register value to the precision of `t` (f16/bf16). */
/* A 4- or 2-bit integer result in its i8 register: the low bits, sign- or zero-extended. */
static LLVMValueRef wrap_narrow(cg *g, loom_dtype t, LLVMValueRef v) {
  unsigned w = loom_dtype_width(t);
  if (!loom_dtype_is_int(t) || w >= loom_dtype_bits(t)) return v;
  LLVMTypeRef ty = LLVMTypeOf(v);
  if (!loom_dtype_is_signed(t)) return LLVMBuildAnd(g->b, v, cg_ki(ty, (1ll << w) - 1), "");
  LLVMValueRef k = cg_ki(ty, 8 - (long long)w);
  return LLVMBuildAShr(g->b, LLVMBuildShl(g->b, v, k, ""), k, "");
}

static LLVMValueRef round_to(cg *g, loom_dtype t, LLVMValueRef v) {
  if (t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16) return cg_from_mem(g, t, cg_to_mem(g, t, v));
  if (loom_dtype_is_lowp_float(t)) return cg_round_lowp(g, t, v);
  return v;
}

/* ---- operators ------------------------------------------------------------------ */

static bool unsafe_to_speculate(const loom_tp_expr *e) { return cg_unsafe_to_speculate(e, NULL); }

/* cond ? then_e : else_e with branches (only the taken side runs). */
static LLVMValueRef lazy_select(cg *g, LLVMValueRef cond, const loom_tp_expr *then_e, const loom_tp_expr *else_e,
                                LLVMValueRef else_v) {
  LLVMBasicBlockRef bt = LLVMAppendBasicBlockInContext(g->c, g->fn, "sel.then");
  LLVMBasicBlockRef be = LLVMAppendBasicBlockInContext(g->c, g->fn, "sel.else");
  LLVMBasicBlockRef bj = LLVMAppendBasicBlockInContext(g->c, g->fn, "sel.join");
  LLVMBuildCondBr(g->b, cond, bt, be);
  LLVMPositionBuilderAtEnd(g->b, bt);
  LLVMValueRef vt = cg_expr(g, then_e);
  LLVMBasicBlockRef bt_end = LLVMGetInsertBlock(g->b);
  LLVMValueRef br_t = LLVMBuildBr(g->b, bj);
  LLVMPositionBuilderAtEnd(g->b, be);
  LLVMValueRef ve = else_e ? cg_expr(g, else_e) : else_v;
  LLVMBasicBlockRef be_end = LLVMGetInsertBlock(g->b);
  LLVMValueRef br_e = LLVMBuildBr(g->b, bj);
  if (cg_is_vec(vt) != cg_is_vec(ve)) { /* lane mode: a vector side and a scalar side; splat the scalar */
    LLVMPositionBuilderBefore(g->b, cg_is_vec(vt) ? br_e : br_t);
    if (cg_is_vec(vt)) ve = cg_splat(g, ve, g->lanes);
    else vt = cg_splat(g, vt, g->lanes);
  }
  LLVMPositionBuilderAtEnd(g->b, bj);
  LLVMValueRef phi = LLVMBuildPhi(g->b, LLVMTypeOf(vt), "");
  LLVMValueRef vals[2] = {vt, ve};
  LLVMBasicBlockRef bbs[2] = {bt_end, be_end};
  LLVMAddIncoming(phi, vals, bbs, 2);
  return phi;
}

static LLVMValueRef fast_flags(cg *g, LLVMValueRef v) {
  /* Inside reduce loops: reassociation and contraction, so reductions vectorise and
   * fuse into FMAs (results differ from the interpreter's order by rounding only). */
  if (g->reduce_depth > 0 && !g->strict_fp && LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v))
    LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc | LLVMFastMathAllowContract);
  return v;
}

static LLVMValueRef exp_any(cg *g, LLVMValueRef x) {
  if (LLVMTypeOf(x) == g->t_f32 || cg_like_ty(LLVMTypeOf(x), g->t_f32) == LLVMTypeOf(x)) return cg_exp_f32(g, x);
  return cg_call_intrinsic(g, "llvm.exp", LLVMTypeOf(x), &x, 1);
}

static LLVMValueRef float_op(cg *g, loom_tp_op op, loom_dtype t, LLVMValueRef *a) {
  LLVMTypeRef ty = LLVMTypeOf(a[0]);
  bool f32 = cg_like_ty(ty, g->t_f32) == ty;
  LLVMValueRef r = NULL;
  switch (op) {
    case LOOM_TP_OP_ADD: r = fast_flags(g, LLVMBuildFAdd(g->b, a[0], a[1], "")); break;
    case LOOM_TP_OP_SUB: r = fast_flags(g, LLVMBuildFSub(g->b, a[0], a[1], "")); break;
    case LOOM_TP_OP_MUL: r = fast_flags(g, LLVMBuildFMul(g->b, a[0], a[1], "")); break;
    case LOOM_TP_OP_DIV: r = LLVMBuildFDiv(g->b, a[0], a[1], ""); break;
    case LOOM_TP_OP_MOD: r = LLVMBuildFRem(g->b, a[0], a[1], ""); break;
    case LOOM_TP_OP_FLOORDIV: {
      LLVMValueRef q = LLVMBuildFDiv(g->b, a[0], a[1], "");
      r = cg_call_intrinsic(g, "llvm.floor", ty, &q, 1);
      break;
    }
    case LOOM_TP_OP_FLOORMOD: {
      LLVMValueRef q = LLVMBuildFDiv(g->b, a[0], a[1], "");
      q = cg_call_intrinsic(g, "llvm.floor", ty, &q, 1);
      r = LLVMBuildFSub(g->b, a[0], LLVMBuildFMul(g->b, a[1], q, ""), "");
      break;
    }
    case LOOM_TP_OP_MIN:
    case LOOM_TP_OP_MAX:
      if (g->reduce_depth > 0 && !g->strict_fp) {
        /* In a reduction: maxnum/minnum with no-NaNs, which the loop vectoriser turns into
         * vector max reductions (llvm.maximum reductions stay scalar in LLVM 19). The cost:
         * a NaN among the reduced values may be ignored instead of propagated (strict_fp
         * keeps the interpreter's NaN propagation). */
        r = cg_call_intrinsic(g, op == LOOM_TP_OP_MIN ? "llvm.minnum" : "llvm.maxnum", ty, a, 2);
        LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc | LLVMFastMathAllowContract | LLVMFastMathNoNaNs |
                                    LLVMFastMathNoSignedZeros);
      } else {
        r = cg_call_intrinsic(g, op == LOOM_TP_OP_MIN ? "llvm.minimum" : "llvm.maximum", ty, a, 2);
      }
      break;
    case LOOM_TP_OP_NEG: r = LLVMBuildFNeg(g->b, a[0], ""); break;
    case LOOM_TP_OP_ABS: r = cg_call_intrinsic(g, "llvm.fabs", ty, a, 1); break;
    case LOOM_TP_OP_EQ: return LLVMBuildFCmp(g->b, LLVMRealOEQ, a[0], a[1], "");
    case LOOM_TP_OP_NE: return LLVMBuildFCmp(g->b, LLVMRealUNE, a[0], a[1], "");
    case LOOM_TP_OP_LT: return LLVMBuildFCmp(g->b, LLVMRealOLT, a[0], a[1], "");
    case LOOM_TP_OP_LE: return LLVMBuildFCmp(g->b, LLVMRealOLE, a[0], a[1], "");
    case LOOM_TP_OP_GT: return LLVMBuildFCmp(g->b, LLVMRealOGT, a[0], a[1], "");
    case LOOM_TP_OP_GE: return LLVMBuildFCmp(g->b, LLVMRealOGE, a[0], a[1], "");
    case LOOM_TP_OP_EXP: r = exp_any(g, a[0]); break;
    case LOOM_TP_OP_LOG: r = cg_call_intrinsic(g, "llvm.log", ty, a, 1); break;
    case LOOM_TP_OP_SQRT: r = cg_call_intrinsic(g, "llvm.sqrt", ty, a, 1); break;
    case LOOM_TP_OP_RSQRT: {
      LLVMValueRef s = cg_call_intrinsic(g, "llvm.sqrt", ty, a, 1);
      r = LLVMBuildFDiv(g->b, cg_kf(ty, 1.0), s, "");
      break;
    }
    case LOOM_TP_OP_TANH: r = f32 ? cg_tanh_f32(g, a[0]) : call_libm(g, "tanh", ty, a, 1); break;
    case LOOM_TP_OP_ERF: r = f32 ? cg_erf_f32(g, a[0]) : call_libm(g, "erf", ty, a, 1); break;
    case LOOM_TP_OP_SIGMOID: {
      if (f32) {
        r = cg_sigmoid_f32(g, a[0], NULL);
        break;
      }
      LLVMValueRef m = LLVMBuildFNeg(g->b, a[0], "");
      LLVMValueRef e = exp_any(g, m);
      r = LLVMBuildFDiv(g->b, cg_kf(ty, 1.0), LLVMBuildFAdd(g->b, cg_kf(ty, 1.0), e, ""), "");
      break;
    }
    case LOOM_TP_OP_SIN: r = cg_call_intrinsic(g, "llvm.sin", ty, a, 1); break;
    case LOOM_TP_OP_COS: r = cg_call_intrinsic(g, "llvm.cos", ty, a, 1); break;
    case LOOM_TP_OP_ASIN: r = cg_call_intrinsic(g, "llvm.asin", ty, a, 1); break;
    case LOOM_TP_OP_ACOS: r = cg_call_intrinsic(g, "llvm.acos", ty, a, 1); break;
    case LOOM_TP_OP_ATAN: r = cg_call_intrinsic(g, "llvm.atan", ty, a, 1); break;
    case LOOM_TP_OP_FLOOR: r = cg_call_intrinsic(g, "llvm.floor", ty, a, 1); break;
    case LOOM_TP_OP_CEIL: r = cg_call_intrinsic(g, "llvm.ceil", ty, a, 1); break;
    case LOOM_TP_OP_ROUND: r = cg_call_intrinsic(g, "llvm.roundeven", ty, a, 1); break;
    case LOOM_TP_OP_POW: r = cg_call_intrinsic(g, "llvm.pow", ty, a, 2); break;
    case LOOM_TP_OP_FMA: r = cg_call_intrinsic(g, "llvm.fma", ty, a, 3); break;
    default:
      cg_error(g, LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' is not defined on %s", g->f->name,
                             loom_tp_op_spelling(op), loom_dtype_name(t)));
      return LLVMGetUndef(ty);
  }
  return round_to(g, t, r);
}

/* Lanes [c * chunk, (c + 1) * chunk) of the n-lane vector v (v itself when n == chunk). */
static LLVMValueRef chunk_of(cg *g, LLVMValueRef v, unsigned c, unsigned chunk, unsigned n) {
  if (n == chunk) return v;
  LLVMValueRef idx[64];
  for (unsigned i = 0; i < chunk; i++) idx[i] = LLVMConstInt(g->t_i32, c * chunk + i, 0);
  return LLVMBuildShuffleVector(g->b, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstVector(idx, chunk), "");
}

/* The n / chunk parts (each `chunk` lanes, n / chunk a power of two) concatenated in order;
 * parts is overwritten. */
static LLVMValueRef concat_chunks(cg *g, LLVMValueRef *parts, unsigned chunk, unsigned n) {
  LLVMValueRef idx[64];
  for (unsigned w = chunk; w < n; w *= 2) { /* concatenate pairs of equal widths */
    for (unsigned i = 0; i < 2 * w; i++) idx[i] = LLVMConstInt(g->t_i32, i, 0);
    LLVMValueRef sel = LLVMConstVector(idx, 2 * w);
    for (unsigned c = 0; c < n / (2 * w); c++) parts[c] = LLVMBuildShuffleVector(g->b, parts[2 * c], parts[2 * c + 1], sel, "");
  }
  return parts[0];
}

/* Whether an n-lane vector splits into chunks of `chunk` lanes, a power of two of them, at most 64 lanes. */
static bool chunks_fit(unsigned n, unsigned chunk) {
  return chunk && n % chunk == 0 && n <= 64 && !((n / chunk) & (n / chunk - 1));
}

/* dot2 on i32 (tp_ops.def): the products of the signed 16-bit halves, added. On vectors the
 * even and odd i16 lanes are shuffled apart, sign-extended, multiplied and added: the form the
 * X86 backend matches to one vpmaddwd per 8 lanes (AVX2); elsewhere plain arithmetic. */
static LLVMValueRef dot2(cg *g, LLVMValueRef a, LLVMValueRef b) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) {
    LLVMValueRef h[2][2];
    LLVMValueRef in[2] = {a, b};
    for (int k = 0; k < 2; k++) {
      h[k][0] = LLVMBuildSExt(g->b, LLVMBuildTrunc(g->b, in[k], g->t_i16, ""), ty, "");
      h[k][1] = LLVMBuildAShr(g->b, in[k], cg_ki(ty, 16), "");
    }
    return LLVMBuildAdd(g->b, LLVMBuildMul(g->b, h[0][0], h[1][0], ""), LLVMBuildMul(g->b, h[0][1], h[1][1], ""), "");
  }
  unsigned n = LLVMGetVectorSize(ty);
  unsigned chunk = g->avx2 ? 8 : g->x86 ? 4 : 0;
  if (chunks_fit(n, chunk)) {
    /* pmaddwd by chunks: InstCombine turns the generic form of a broadcast operand (a row of
     * A splatted) into per-half multiplies that the backend no longer matches */
    const char *name = chunk == 8 ? "llvm.x86.avx2.pmadd.wd" : "llvm.x86.sse2.pmadd.wd";
    LLVMTypeRef v16 = LLVMVectorType(g->t_i16, 2 * chunk);
    LLVMValueRef parts[8];
    for (unsigned c = 0; c < n / chunk; c++) {
      LLVMValueRef args[2] = {LLVMBuildBitCast(g->b, chunk_of(g, a, c, chunk, n), v16, ""),
                              LLVMBuildBitCast(g->b, chunk_of(g, b, c, chunk, n), v16, "")};
      parts[c] = cg_call_intrinsic(g, name, NULL, args, 2);
    }
    return concat_chunks(g, parts, chunk, n);
  }
  if (n > 64) n = 64;
  LLVMValueRef even[64], odd[64];
  for (unsigned i = 0; i < n; i++) {
    even[i] = LLVMConstInt(g->t_i32, 2 * i, 0);
    odd[i] = LLVMConstInt(g->t_i32, 2 * i + 1, 0);
  }
  LLVMValueRef me = LLVMConstVector(even, n), mo = LLVMConstVector(odd, n);
  LLVMTypeRef v16 = LLVMVectorType(g->t_i16, 2 * n);
  LLVMValueRef a16 = LLVMBuildBitCast(g->b, a, v16, ""), b16 = LLVMBuildBitCast(g->b, b, v16, "");
  LLVMValueRef un = LLVMGetPoison(v16);
  LLVMValueRef ae = LLVMBuildSExt(g->b, LLVMBuildShuffleVector(g->b, a16, un, me, ""), ty, "");
  LLVMValueRef ao = LLVMBuildSExt(g->b, LLVMBuildShuffleVector(g->b, a16, un, mo, ""), ty, "");
  LLVMValueRef be = LLVMBuildSExt(g->b, LLVMBuildShuffleVector(g->b, b16, un, me, ""), ty, "");
  LLVMValueRef bo = LLVMBuildSExt(g->b, LLVMBuildShuffleVector(g->b, b16, un, mo, ""), ty, "");
  return LLVMBuildAdd(g->b, LLVMBuildMul(g->b, ae, be, ""), LLVMBuildMul(g->b, ao, bo, ""), "");
}

/* dot4 on i32 (tp_ops.def): the four products of a's unsigned bytes and b's signed bytes, added
 * (to `acc` when given). With AVX512-VNNI, per 16 lanes one vpdpbusd (which adds acc itself);
 * dot4s (`pairs`: each byte pair's sum within i16) with AVX2, per 8 lanes vpmaddubsw (the pair
 * sums, saturating: exact for dot4s) and vpmaddwd by ones (the two pair sums of each lane);
 * elsewhere plain arithmetic. */
static LLVMValueRef dot4(cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc, bool pairs) {
  LLVMTypeRef ty = LLVMTypeOf(a);
  unsigned n = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetVectorSize(ty) : 0;
  if (n && g->vnni512 && chunks_fit(n, 16)) {
    LLVMValueRef parts[4];
    for (unsigned c = 0; c < n / 16; c++) {
      LLVMValueRef args[3] = {chunk_of(g, acc ? acc : LLVMConstNull(ty), c, 16, n), chunk_of(g, a, c, 16, n), chunk_of(g, b, c, 16, n)};
      parts[c] = cg_call_intrinsic(g, "llvm.x86.avx512.vpdpbusd.512", NULL, args, 3);
    }
    return concat_chunks(g, parts, 16, n);
  }
  if (n && pairs && g->avx2 && chunks_fit(n, 8)) {
    LLVMTypeRef v8 = LLVMVectorType(g->t_i8, 32), v16 = LLVMVectorType(g->t_i16, 16);
    LLVMValueRef ones = cg_ki(v16, 1), parts[8];
    for (unsigned c = 0; c < n / 8; c++) {
      LLVMValueRef args[2] = {LLVMBuildBitCast(g->b, chunk_of(g, a, c, 8, n), v8, ""),
                              LLVMBuildBitCast(g->b, chunk_of(g, b, c, 8, n), v8, "")};
      LLVMValueRef w[2] = {cg_call_intrinsic(g, "llvm.x86.avx2.pmadd.ub.sw", NULL, args, 2), ones};
      parts[c] = cg_call_intrinsic(g, "llvm.x86.avx2.pmadd.wd", NULL, w, 2);
    }
    LLVMValueRef r = concat_chunks(g, parts, 8, n);
    return acc ? LLVMBuildAdd(g->b, acc, r, "") : r;
  }
  LLVMValueRef s = acc;
  for (int i = 0; i < 4; i++) {
    LLVMValueRef ai = LLVMBuildAnd(g->b, LLVMBuildLShr(g->b, a, cg_ki(ty, 8 * i), ""), cg_ki(ty, 255), "");
    LLVMValueRef bi = LLVMBuildAShr(g->b, LLVMBuildShl(g->b, b, cg_ki(ty, 24 - 8 * i), ""), cg_ki(ty, 24), "");
    LLVMValueRef p = LLVMBuildMul(g->b, ai, bi, "");
    s = s ? LLVMBuildAdd(g->b, s, p, "") : p;
  }
  return s;
}

static LLVMValueRef int_op(cg *g, loom_tp_op op, loom_dtype t, LLVMValueRef *a) {
  bool s = loom_dtype_is_signed(t);
  LLVMTypeRef ty = LLVMTypeOf(a[0]);
  switch (op) {
    case LOOM_TP_OP_ADD: return LLVMBuildAdd(g->b, a[0], a[1], "");
    case LOOM_TP_OP_SUB: return LLVMBuildSub(g->b, a[0], a[1], "");
    case LOOM_TP_OP_MUL: return LLVMBuildMul(g->b, a[0], a[1], "");
    case LOOM_TP_OP_DOT2:
      if (t == LOOM_DTYPE_I32) return dot2(g, a[0], a[1]);
      break;
    case LOOM_TP_OP_DOT4:
    case LOOM_TP_OP_DOT4S:
      if (t == LOOM_DTYPE_I32) return dot4(g, a[0], a[1], NULL, op == LOOM_TP_OP_DOT4S);
      break;
    case LOOM_TP_OP_DIV: return int_divmod(g, a[0], a[1], s, false, false, false);
    case LOOM_TP_OP_MOD: return int_divmod(g, a[0], a[1], s, false, true, false);
    case LOOM_TP_OP_FLOORDIV: return int_divmod(g, a[0], a[1], s, true, false, false);
    case LOOM_TP_OP_FLOORMOD: return int_divmod(g, a[0], a[1], s, true, true, false);
    case LOOM_TP_OP_MIN:
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, s ? LLVMIntSLT : LLVMIntULT, a[0], a[1], ""), a[0], a[1], "");
    case LOOM_TP_OP_MAX:
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, s ? LLVMIntSGT : LLVMIntUGT, a[0], a[1], ""), a[0], a[1], "");
    case LOOM_TP_OP_NEG: return LLVMBuildSub(g->b, LLVMConstNull(ty), a[0], "");
    case LOOM_TP_OP_ABS: {
      LLVMValueRef n = LLVMBuildSub(g->b, LLVMConstNull(ty), a[0], "");
      return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, s ? LLVMIntSGT : LLVMIntUGT, a[0], n, ""), a[0], n, "");
    }
    case LOOM_TP_OP_EQ: return LLVMBuildICmp(g->b, LLVMIntEQ, a[0], a[1], "");
    case LOOM_TP_OP_NE: return LLVMBuildICmp(g->b, LLVMIntNE, a[0], a[1], "");
    case LOOM_TP_OP_LT: return LLVMBuildICmp(g->b, s ? LLVMIntSLT : LLVMIntULT, a[0], a[1], "");
    case LOOM_TP_OP_LE: return LLVMBuildICmp(g->b, s ? LLVMIntSLE : LLVMIntULE, a[0], a[1], "");
    case LOOM_TP_OP_GT: return LLVMBuildICmp(g->b, s ? LLVMIntSGT : LLVMIntUGT, a[0], a[1], "");
    case LOOM_TP_OP_GE: return LLVMBuildICmp(g->b, s ? LLVMIntSGE : LLVMIntUGE, a[0], a[1], "");
    case LOOM_TP_OP_AND: return LLVMBuildAnd(g->b, a[0], a[1], "");
    case LOOM_TP_OP_OR: return LLVMBuildOr(g->b, a[0], a[1], "");
    case LOOM_TP_OP_XOR: return LLVMBuildXor(g->b, a[0], a[1], "");
    case LOOM_TP_OP_NOT: return LLVMBuildXor(g->b, a[0], LLVMConstAllOnes(ty), "");
    case LOOM_TP_OP_LIKELY: return a[0]; /* the hint is read by the `if` (cg_stmt.c) */
    case LOOM_TP_OP_SHL:
    case LOOM_TP_OP_SHR: {
      /* LLVM's shifts are poison past the width: clamp the count, then select the defined result */
      long long w = (long long)LLVMGetIntTypeWidth(LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty);
      LLVMValueRef in = LLVMBuildICmp(g->b, LLVMIntULT, a[1], cg_ki(ty, w), "");
      LLVMValueRef cnt = LLVMBuildSelect(g->b, in, a[1], cg_ki(ty, op == LOOM_TP_OP_SHR && s ? w - 1 : 0), "");
      if (op == LOOM_TP_OP_SHR && s) return LLVMBuildAShr(g->b, a[0], cnt, "");
      LLVMValueRef r = op == LOOM_TP_OP_SHL ? LLVMBuildShl(g->b, a[0], cnt, "") : LLVMBuildLShr(g->b, a[0], cnt, "");
      return LLVMBuildSelect(g->b, in, r, LLVMConstNull(ty), "");
    }
    default: break;
  }
  cg_error(g, LOOM_ERROR(TYPE_ERROR, "program @%s: '%s' is not defined on %s", g->f->name, loom_tp_op_spelling(op),
                         loom_dtype_name(t)));
  return LLVMGetUndef(ty);
}

/* bitcast(x, literal of `to`): register -> memory form of x's dtype (f16 / bf16 are float registers,
 * half / i16 in memory), reinterpreted as `to`'s memory form, -> register. f16 / bf16 vectors go lane
 * by lane (cg_to_mem / cg_from_mem are scalar). */
static LLVMValueRef bitcast_scalar(cg *g, loom_dtype from, loom_dtype to, LLVMValueRef v) {
  LLVMValueRef m = cg_to_mem(g, from, v);
  m = LLVMBuildBitCast(g->b, m, cg_mem_type(g, to), "");
  return cg_from_mem(g, to, m);
}

static LLVMValueRef bitcast_expr(cg *g, loom_dtype from, loom_dtype to, LLVMValueRef v) {
  bool half = from == LOOM_DTYPE_F16 || from == LOOM_DTYPE_BF16 || to == LOOM_DTYPE_F16 || to == LOOM_DTYPE_BF16;
  if (!cg_is_vec(v)) return bitcast_scalar(g, from, to, v);
  if (!half) return LLVMBuildBitCast(g->b, v, cg_like_ty(LLVMTypeOf(v), cg_mem_type(g, to)), "");
  unsigned lanes = LLVMGetVectorSize(LLVMTypeOf(v));
  LLVMValueRef r = LLVMGetPoison(LLVMVectorType(cg_reg_type(g, to), lanes));
  for (unsigned i = 0; i < lanes; i++) {
    LLVMValueRef k = LLVMConstInt(g->t_i32, i, 0);
    r = LLVMBuildInsertElement(g->b, r, bitcast_scalar(g, from, to, LLVMBuildExtractElement(g->b, v, k, "")), k, "");
  }
  return r;
}

static LLVMValueRef op_expr(cg *g, const loom_tp_expr *e) {
  loom_tp_op op = e->u.op.op;
  int n = loom_tp_op_arity(op);
  loom_dtype t = e->u.op.args[0]->dtype;
  if (op == LOOM_TP_OP_BITCAST) return bitcast_expr(g, t, e->dtype, cg_expr(g, e->u.op.args[0]));
  if (t == LOOM_DTYPE_BOOL && (op == LOOM_TP_OP_AND || op == LOOM_TP_OP_OR) && !g->lanes &&
      unsafe_to_speculate(e->u.op.args[1])) {
    LLVMValueRef a0 = cg_expr(g, e->u.op.args[0]);
    /* a && b = a ? b : false;  a || b = a ? true : b */
    if (op == LOOM_TP_OP_AND) return lazy_select(g, a0, e->u.op.args[1], NULL, LLVMConstInt(g->t_i1, 0, 0));
    LLVMValueRef na = LLVMBuildNot(g->b, a0, "");
    return lazy_select(g, na, e->u.op.args[1], NULL, LLVMConstInt(g->t_i1, 1, 0));
  }
  if (op == LOOM_TP_OP_ADD && t == LOOM_DTYPE_I32 && g->vnni512) { /* acc + dot4(x, y): one vpdpbusd */
    for (int k = 0; k < 2; k++) {
      const loom_tp_expr *d = e->u.op.args[k];
      if (d->kind != LOOM_TP_EXPR_OP || (d->u.op.op != LOOM_TP_OP_DOT4 && d->u.op.op != LOOM_TP_OP_DOT4S)) continue;
      LLVMValueRef v[3] = {cg_expr(g, e->u.op.args[1 - k]), cg_expr(g, d->u.op.args[0]), cg_expr(g, d->u.op.args[1])};
      bool any = cg_is_vec(v[0]) || cg_is_vec(v[1]) || cg_is_vec(v[2]);
      bool pairs = d->u.op.op == LOOM_TP_OP_DOT4S;
      if (!any || !g->lanes) return wrap_narrow(g, e->dtype, LLVMBuildAdd(g->b, v[0], dot4(g, v[1], v[2], NULL, pairs), ""));
      for (int i = 0; i < 3; i++) v[i] = cg_splat(g, v[i], g->lanes);
      return dot4(g, v[1], v[2], v[0], pairs);
    }
  }
  if (op == LOOM_TP_OP_MUL && t == LOOM_DTYPE_F32) { /* m * sigmoid(x) in one division: SiLU (m = x), GELU's tanh form */
    for (int k = 0; k < 2; k++) {
      const loom_tp_expr *s = e->u.op.args[k], *x = e->u.op.args[1 - k];
      if (s->kind != LOOM_TP_EXPR_OP || s->u.op.op != LOOM_TP_OP_SIGMOID) continue;
      LLVMValueRef m = cg_expr(g, x);
      if (same_value(s->u.op.args[0], x)) return cg_sigmoid_f32(g, m, m);
      LLVMValueRef v = cg_expr(g, s->u.op.args[0]);
      if (g->lanes && (cg_is_vec(m) || cg_is_vec(v))) m = cg_splat(g, m, g->lanes), v = cg_splat(g, v, g->lanes);
      return cg_sigmoid_f32(g, v, m);
    }
  }
  LLVMValueRef a[3] = {NULL, NULL, NULL};
  for (int i = 0; i < n; i++) a[i] = cg_expr(g, e->u.op.args[i]);
  if (g->lanes) {
    bool any = false;
    for (int i = 0; i < n; i++) any = any || cg_is_vec(a[i]);
    if (any)
      for (int i = 0; i < n; i++) a[i] = cg_splat(g, a[i], g->lanes);
  }
  if (loom_dtype_is_float(t)) return float_op(g, op, t, a);
  return wrap_narrow(g, e->dtype, int_op(g, op, t, a));
}

LLVMValueRef cg_binop(cg *g, loom_tp_op op, loom_dtype t, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef a[3] = {x, y, NULL};
  if (loom_dtype_is_float(t)) return float_op(g, op, t, a);
  return wrap_narrow(g, t, int_op(g, op, t, a));
}

/* Float v -> the 8- / 16-bit integer `to` (LLVM type tt), truncating and saturating as
 * llvm.fpto[su]i.sat does (NaN -> 0), in a form that stays vectorised: NaN replaced by 0, the
 * value clamped to [min, max] of `to` (both exact in f32 / f64: vmaxps / vminps), converted to
 * i32 (vcvttps2dq) and truncated (vpmovdb). LLVM 19 scalarises fpto[su]i.sat to i8 / i16 vectors
 * lane by lane (4 instructions a lane): the quantizing casts of the int8 families spent most of
 * their time there. */
static LLVMValueRef narrow_sat(cg *g, loom_dtype to, LLVMValueRef v, LLVMTypeRef tt) {
  LLVMTypeRef ft = LLVMTypeOf(v);
  int bits = loom_dtype_bits(to);
  double lo = loom_dtype_is_signed(to) ? -ldexp(1.0, bits - 1) : 0.0;
  double hi = loom_dtype_is_signed(to) ? ldexp(1.0, bits - 1) - 1.0 : ldexp(1.0, bits) - 1.0;
  LLVMValueRef nan = LLVMBuildFCmp(g->b, LLVMRealUNO, v, v, "");
  v = LLVMBuildSelect(g->b, nan, cg_kf(ft, 0.0), v, "");
  v = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOLT, v, cg_kf(ft, lo), ""), cg_kf(ft, lo), v, "");
  v = LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOGT, v, cg_kf(ft, hi), ""), cg_kf(ft, hi), v, "");
  LLVMValueRef w = LLVMBuildFPToSI(g->b, v, cg_like_ty(ft, g->t_i32), "");
  return LLVMBuildTrunc(g->b, w, tt, "");
}

static LLVMValueRef cast_expr(cg *g, const loom_tp_expr *e) {
  LLVMValueRef v = cg_expr(g, e->u.cast_arg);
  loom_dtype from = e->u.cast_arg->dtype, to = e->dtype;
  LLVMTypeRef tt = cg_like_ty(LLVMTypeOf(v), cg_reg_type(g, to));
  bool ff = loom_dtype_is_float(from), tf = loom_dtype_is_float(to);
  if (ff && tf) {
    LLVMTypeRef ft = LLVMTypeOf(v);
    if (ft == cg_like_ty(ft, g->t_f64) && to != LOOM_DTYPE_F64) v = LLVMBuildFPTrunc(g->b, v, cg_like_ty(ft, g->t_f32), "");
    else if (ft == cg_like_ty(ft, g->t_f32) && to == LOOM_DTYPE_F64) v = LLVMBuildFPExt(g->b, v, cg_like_ty(ft, g->t_f64), "");
    return round_to(g, to, v);
  }
  if (ff) {
    if (to == LOOM_DTYPE_BOOL) return LLVMBuildFCmp(g->b, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0.0), "");
    if (loom_dtype_is_lowp(to)) { /* 4- / 2-bit: truncate to i64 (NaN 0, out of range INT64_MIN), keep the low bits */
      LLVMTypeRef t64 = cg_like_ty(LLVMTypeOf(v), g->t_i64);
      LLVMValueRef w = cg_call_intrinsic(g, "llvm.fptosi.sat", t64, &v, 1);
      LLVMValueRef big = LLVMBuildFCmp(g->b, LLVMRealOGE, v, cg_kf(LLVMTypeOf(v), 9223372036854775808.0), "");
      w = LLVMBuildSelect(g->b, big, cg_ki(t64, INT64_MIN), w, "");
      return wrap_narrow(g, to, LLVMBuildTrunc(g->b, w, tt, ""));
    }
    if (loom_dtype_bits(to) <= 16) return narrow_sat(g, to, v, tt);
    return cg_call_intrinsic(g, loom_dtype_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tt, &v, 1);
  }
  bool su = loom_dtype_kind_of(from) == LOOM_DTYPE_KIND_UINT || from == LOOM_DTYPE_BOOL;
  if (tf) {
    bool wide = loom_dtype_bits(from) > 32;
    LLVMTypeRef mid = (wide || tt == cg_like_ty(tt, g->t_f64)) ? cg_like_ty(tt, g->t_f64) : tt;
    LLVMValueRef r = su ? LLVMBuildUIToFP(g->b, v, mid, "") : LLVMBuildSIToFP(g->b, v, mid, "");
    if (mid != tt) r = LLVMBuildFPTrunc(g->b, r, tt, "");
    return round_to(g, to, r);
  }
  if (to == LOOM_DTYPE_BOOL) return LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "");
  return wrap_narrow(g, to, LLVMBuildIntCast2(g->b, v, tt, su ? 0 : 1, ""));
}

LLVMValueRef cg_expr(cg *g, const loom_tp_expr *e) {
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST: {
      LLVMTypeRef t = cg_reg_type(g, e->dtype);
      if (loom_dtype_is_float(e->dtype)) {
        LLVMValueRef c = LLVMConstReal(t, e->u.c.f);
        if (e->dtype == LOOM_DTYPE_F16 || e->dtype == LOOM_DTYPE_BF16) {
          /* round the literal to its storage precision on the host, once */
          float x = (float)e->u.c.f;
          x = e->dtype == LOOM_DTYPE_F16 ? loom_f16_to_f32(loom_f32_to_f16(x)) : loom_bf16_to_f32(loom_f32_to_bf16(x));
          c = LLVMConstReal(t, x);
        }
        return c;
      }
      return LLVMConstInt(t, (unsigned long long)e->u.c.i, 0);
    }
    case LOOM_TP_EXPR_SYM: {
      LLVMValueRef v = cg_sym(g, e->u.sym);
      LLVMTypeRef t = cg_reg_type(g, e->dtype);
      if (g->lanes && cg_expr_uses_lane(g, e)) v = lane_iota(g, v, cg_lane_stride(g, e->u.sym, g->lane_var));
      t = cg_like_ty(LLVMTypeOf(v), t);
      if (t == LLVMTypeOf(v)) return v;
      if (t == cg_like_ty(t, g->t_i1)) return LLVMBuildICmp(g->b, LLVMIntNE, v, cg_ki(LLVMTypeOf(v), 0), "");
      if (loom_dtype_is_float(e->dtype)) return LLVMBuildSIToFP(g->b, v, t, "");
      return LLVMBuildTrunc(g->b, v, t, "");
    }
    case LOOM_TP_EXPR_LOAD: {
      LLVMValueRef p = cg_elem_ptr(g, e->u.load.buf, e->u.load.idx);
      if (g->lanes && cg_expr_uses_lane(g, e)) {
        const loom_tp_buffer *buf = e->u.load.buf;
        unsigned s = cg_lane_stride(g, e->u.load.idx[buf->ndim - 1]->u.sym, g->lane_var);
        if (s > 1) return strided_lane_load(g, buf->dtype, p, s);
        LLVMTypeRef vt = LLVMVectorType(cg_mem_type(g, buf->dtype), g->lanes);
        LLVMValueRef v = LLVMBuildLoad2(g->b, vt, p, "");
        LLVMSetAlignment(v, (unsigned)loom_dtype_size(buf->dtype));
        return v;
      }
      LLVMValueRef v = LLVMBuildLoad2(g->b, cg_mem_type(g, e->u.load.buf->dtype), p, "");
      return cg_from_mem(g, e->u.load.buf->dtype, v);
    }
    case LOOM_TP_EXPR_LETREF:
      for (size_t i = g->lets.len; i-- > 0;)
        if (g->lets.data[i].let == e->u.let) return g->lets.data[i].v;
      cg_error(g, LOOM_ERROR(INTERNAL, "program @%s: let '%s' is not bound in generated code", g->f->name,
                             e->u.let->u.let.name));
      return LLVMGetUndef(cg_reg_type(g, e->dtype));
    case LOOM_TP_EXPR_OP:
      return op_expr(g, e);
    case LOOM_TP_EXPR_CAST:
      return cast_expr(g, e);
    case LOOM_TP_EXPR_SELECT: {
      LLVMValueRef c = cg_expr(g, e->u.select.cond);
      /* a per-lane condition cannot branch: vector code evaluates both sides (the loads of a
       * vectorised loop are at its own in-bounds indices) */
      const loom_tp_expr *known = e->u.select.cond;
      if (!cg_is_vec(c) &&
          (cg_unsafe_to_speculate(e->u.select.then_e, known) || cg_unsafe_to_speculate(e->u.select.else_e, known)))
        return lazy_select(g, c, e->u.select.then_e, e->u.select.else_e, NULL);
      LLVMValueRef a = cg_expr(g, e->u.select.then_e), b = cg_expr(g, e->u.select.else_e);
      if (g->lanes && (cg_is_vec(a) || cg_is_vec(b) || cg_is_vec(c))) {
        a = cg_splat(g, a, g->lanes);
        b = cg_splat(g, b, g->lanes);
      }
      return LLVMBuildSelect(g->b, c, a, b, "");
    }
  }
  cg_error(g, LOOM_ERROR(INTERNAL, "bad expression kind"));
  return cg_i64(g, 0);
}
