/* legalize.c — operator calls to tensor programs (see legalize.h).
 *
 * One table per op family maps an operator to its generator input: an expression
 * template over `x` (unary) or `a`, `b` (binary), a reduction kind, and so on. */
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"
#include "tensorprog/tp_ir.h"

typedef struct unary_entry {
  loom_graph_op op;
  const char *expr; /* over x; literals take x's dtype */
} unary_entry;

static const unary_entry unary_table[] = {
    {LOOM_GRAPH_OP_NEG, "-x"},
    {LOOM_GRAPH_OP_ABS, "abs(x)"},
    {LOOM_GRAPH_OP_EXP, "exp(x)"},
    {LOOM_GRAPH_OP_LOG, "log(x)"},
    {LOOM_GRAPH_OP_SQRT, "sqrt(x)"},
    {LOOM_GRAPH_OP_RSQRT, "rsqrt(x)"},
    {LOOM_GRAPH_OP_TANH, "tanh(x)"},
    {LOOM_GRAPH_OP_SIGMOID, "sigmoid(x)"},
    {LOOM_GRAPH_OP_RELU, "max(x, 0.0)"},
    {LOOM_GRAPH_OP_GELU, "0.5 * x * (1.0 + erf(x * 0.70710678118654752440))"},
    {LOOM_GRAPH_OP_GELU_TANH, "0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)))"},
    {LOOM_GRAPH_OP_SILU, "x * sigmoid(x)"},
    {LOOM_GRAPH_OP_ERF, "erf(x)"},
    {LOOM_GRAPH_OP_SIN, "sin(x)"},
    {LOOM_GRAPH_OP_COS, "cos(x)"},
    {LOOM_GRAPH_OP_ASIN, "asin(x)"},
    {LOOM_GRAPH_OP_ACOS, "acos(x)"},
    {LOOM_GRAPH_OP_ATAN, "atan(x)"},
    {LOOM_GRAPH_OP_FLOOR, "floor(x)"},
    {LOOM_GRAPH_OP_CEIL, "ceil(x)"},
    {LOOM_GRAPH_OP_ROUND, "round(x)"},
    {LOOM_GRAPH_OP_SIGN, "select(x > 0.0, 1.0, select(x < 0.0, -1.0, 0.0))"}, /* f32; others: legalize_unary */
    {LOOM_GRAPH_OP_NOT, "!x"},
    {LOOM_GRAPH_OP_DROPOUT, "x"},
    {LOOM_GRAPH_OP_BITWISE_NOT, "!x"}, /* on integers `!` is bitwise (tp_ops.def) */
};

typedef struct binary_entry {
  loom_graph_op op;
  const char *expr;     /* over a, b for float operands */
  const char *int_expr; /* for integer operands (NULL: same as expr) */
} binary_entry;

static const binary_entry binary_table[] = {
    {LOOM_GRAPH_OP_ADD, "a + b", NULL},
    {LOOM_GRAPH_OP_SUB, "a - b", NULL},
    {LOOM_GRAPH_OP_MUL, "a * b", NULL},
    {LOOM_GRAPH_OP_DIV, "a / b", "floordiv(a, b)"},
    {LOOM_GRAPH_OP_POW, "pow(a, b)", NULL},
    {LOOM_GRAPH_OP_MOD, "floormod(a, b)", NULL},
    {LOOM_GRAPH_OP_MAXIMUM, "max(a, b)", NULL},
    {LOOM_GRAPH_OP_MINIMUM, "min(a, b)", NULL},
    {LOOM_GRAPH_OP_EQUAL, "a == b", NULL},
    {LOOM_GRAPH_OP_NOT_EQUAL, "a != b", NULL},
    {LOOM_GRAPH_OP_LESS, "a < b", NULL},
    {LOOM_GRAPH_OP_LESS_EQUAL, "a <= b", NULL},
    {LOOM_GRAPH_OP_GREATER, "a > b", NULL},
    {LOOM_GRAPH_OP_GREATER_EQUAL, "a >= b", NULL},
    {LOOM_GRAPH_OP_LOGICAL_AND, "a && b", NULL},
    {LOOM_GRAPH_OP_LOGICAL_OR, "a || b", NULL},
    {LOOM_GRAPH_OP_LOGICAL_XOR, "xor(a, b)", NULL},
    {LOOM_GRAPH_OP_BITWISE_AND, "a && b", NULL}, /* bitwise on integers */
    {LOOM_GRAPH_OP_BITWISE_OR, "a || b", NULL},
    {LOOM_GRAPH_OP_BITWISE_XOR, "xor(a, b)", NULL},
    {LOOM_GRAPH_OP_SHIFT_LEFT, "shl(a, b)", NULL},
    {LOOM_GRAPH_OP_SHIFT_RIGHT, "shr(a, b)", NULL},
};

typedef struct reduce_entry {
  loom_graph_op op;
  loom_tp_reduce_op kind;
} reduce_entry;

static const reduce_entry reduce_table[] = {
    {LOOM_GRAPH_OP_SUM, LOOM_TP_REDUCE_SUM},   {LOOM_GRAPH_OP_MEAN, LOOM_TP_REDUCE_MEAN},
    {LOOM_GRAPH_OP_MAX, LOOM_TP_REDUCE_MAX},   {LOOM_GRAPH_OP_MIN, LOOM_TP_REDUCE_MIN},
    {LOOM_GRAPH_OP_PROD, LOOM_TP_REDUCE_PROD},
};

bool loom_legal_reduce_kind(loom_graph_op op, loom_tp_reduce_op *kind) {
  for (size_t i = 0; i < sizeof reduce_table / sizeof reduce_table[0]; i++)
    if (reduce_table[i].op == op) return *kind = reduce_table[i].kind, true;
  return false;
}


loom_status loom_legal_unsupported(const loom_graph_expr *call, const char *why) {
  return LOOM_ERROR(UNIMPLEMENTED, "%s: no legalization %s", loom_graph_op_name(call->u.call.op), why);
}

loom_status loom_graph_legal_guard(loom_graph_module *m, loom_graph_legal *r, const loom_sym_expr *cond, const char *why) {
  int64_t v;
  if (!cond) return loom_sym_ctx_take_error(loom_graph_module_sym(m));
  if (loom_sym_is_const(cond, &v) && v) return LOOM_OK;
  if (r->nguards == LOOM_GRAPH_LEGAL_MAX_GUARDS) return LOOM_ERROR(INTERNAL, "legalize: more than %d guards", LOOM_GRAPH_LEGAL_MAX_GUARDS);
  const char *w = loom_arena_strdup(loom_graph_module_arena(m), why);
  if (!w) return LOOM_OOM();
  r->guards[r->nguards] = cond;
  r->guard_why[r->nguards++] = w;
  return LOOM_OK;
}

loom_status loom_graph_legal_attach_guards(loom_graph_module *m, const loom_graph_legal *r, loom_graph_binding *b) {
  if (!r->nguards) return LOOM_OK;
  loom_arena *ar = loom_graph_module_arena(m);
  const loom_sym_expr **g = LOOM_ARENA_ARRAY(ar, const loom_sym_expr *, b->nguards + r->nguards);
  const char **w = LOOM_ARENA_ARRAY(ar, const char *, b->nguards + r->nguards);
  if (!g || !w) return LOOM_OOM();
  size_t n = 0;
  for (size_t k = 0; k < b->nguards; k++, n++) g[n] = b->guards[k], w[n] = b->guard_why ? b->guard_why[k] : "";
  for (size_t k = 0; k < r->nguards; k++) {
    bool dup = false; /* interned: equal conditions are one pointer */
    for (size_t j = 0; j < n && !dup; j++) dup = g[j] == r->guards[k];
    if (!dup) g[n] = r->guards[k], w[n++] = r->guard_why[k];
  }
  b->guards = g;
  b->guard_why = w;
  b->nguards = n;
  return LOOM_OK;
}

/* The name a message gives operand i of call: its variable's ("operand 1 'ids'"), or its index. */
void loom_legal_operand_name(const loom_graph_expr *call, size_t i, char *buf, size_t cap) {
  const loom_graph_expr *a = i < call->u.call.nargs ? call->u.call.args[i] : NULL;
  if (a && a->kind == LOOM_GRAPH_EXPR_VAR) snprintf(buf, cap, "operand %zu '%s'", i, a->u.var.name);
  else snprintf(buf, cap, "operand %zu", i);
}

loom_status loom_legal_tensor_arg(const loom_graph_expr *call, size_t i, const loom_sinfo **out) {
  if (i >= call->u.call.nargs) return loom_legal_unsupported(call, "(missing operand)");
  const loom_sinfo *s = call->u.call.args[i]->sinfo;
  if (!s || s->kind != LOOM_SINFO_TENSOR || s->ndim < 0 || !s->dims || s->dtype == LOOM_DTYPE_UNKNOWN)
    return loom_legal_unsupported(call, "for operands of unknown rank, dims or dtype");
  if (s->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "above rank 8");
  *out = s;
  return LOOM_OK;
}

/* Broadcast mode of each axis of `in` against the output dims (aligned right). Appends a
 * letter per axis to `key` (F, 1, G). */
static void modes_of(loom_sym_ctx *cx, const loom_sinfo *in, const loom_sym_expr *const *out_dims, int out_rank,
                     loom_tp_bcast *modes, char *key, size_t cap) {
  for (int j = 0; j < in->ndim; j++) {
    const loom_sym_expr *od = out_dims[j + out_rank - in->ndim];
    int64_t c;
    if (loom_sym_prove_eq(cx, in->dims[j], od) == LOOM_SYM_TRUE) modes[j] = LOOM_TP_BCAST_FULL;
    else if (loom_sym_is_const(in->dims[j], &c) && c == 1) modes[j] = LOOM_TP_BCAST_ONE;
    else modes[j] = LOOM_TP_BCAST_GUARD;
    size_t n = strlen(key);
    if (n + 1 < cap) {
      key[n] = modes[j] == LOOM_TP_BCAST_FULL ? 'F' : modes[j] == LOOM_TP_BCAST_ONE ? '1' : 'G';
      key[n + 1] = '\0';
    }
  }
}

static loom_status legalize_unary(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                  const char *expr, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  char typed_sign[256];
  if (call->u.call.op == LOOM_GRAPH_OP_SIGN && x->dtype != LOOM_DTYPE_F32) { /* literals of x's dtype */
    const char *t = loom_dtype_name(x->dtype), *f = loom_dtype_is_float(x->dtype) ? ".0" : "";
    if (loom_dtype_is_float(x->dtype) || loom_dtype_is_signed(x->dtype))
      snprintf(typed_sign, sizeof typed_sign, "select(x > 0%s%s, 1%s%s, select(x < 0%s%s, -1%s%s, 0%s%s))", f, t, f, t, f, t,
               f, t, f, t);
    else snprintf(typed_sign, sizeof typed_sign, "select(x > 0%s, 1%s, 0%s)", t, t, t);
    expr = typed_sign;
  }
  char name[256];
  snprintf(name, sizeof name, "%s_%s_%s_r%d", loom_graph_op_name(call->u.call.op), loom_dtype_name(x->dtype),
           loom_dtype_name(out->dtype), x->ndim);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_unary(loom_graph_module_arena(m), loom_graph_module_sym(m), name, expr, x->dtype,
                                   out->dtype, x->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_clip(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                 loom_tp_func **tp) {
  const loom_graph_attr *lo = loom_graph_call_attr(call, "min"), *hi = loom_graph_call_attr(call, "max");
  char expr[160] = "x", tmp[160];
  if (lo) {
    snprintf(tmp, sizeof tmp, "max(%s, %.17g)", expr, lo->kind == LOOM_GRAPH_ATTR_INT ? (double)lo->i : lo->f);
    strcpy(expr, tmp);
  }
  if (hi) {
    snprintf(tmp, sizeof tmp, "min(%s, %.17g)", expr, hi->kind == LOOM_GRAPH_ATTR_INT ? (double)hi->i : hi->f);
    strcpy(expr, tmp);
  }
  /* Bounds are part of the program: name them by their bits. */
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  char name[256];
  snprintf(name, sizeof name, "clip_%s_r%d_%016llx", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(expr, strlen(expr)));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_unary(loom_graph_module_arena(m), loom_graph_module_sym(m), name, expr, x->dtype,
                                   out->dtype, x->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

/* bitcast: between integers of one width and to / from bool the bits are the value (wrapped;
 * a bool is 0 or 1 and a byte read as bool is `!= 0`, as the reference normalises), so a value
 * cast does it; a float side needs the tensor-program `bitcast` operator. */
static loom_status legalize_bitcast(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (loom_dtype_bits(x->dtype) != loom_dtype_bits(out->dtype))
    return LOOM_ERROR(INVALID_ARGUMENT, "bitcast: %s and %s differ in width", loom_dtype_name(x->dtype),
                      loom_dtype_name(out->dtype));
  char expr[48];
  const char *to = loom_dtype_name(out->dtype);
  if (!loom_dtype_is_float(x->dtype) && !loom_dtype_is_float(out->dtype)) snprintf(expr, sizeof expr, "%s(x)", to);
  else if (loom_dtype_is_float(out->dtype)) snprintf(expr, sizeof expr, "bitcast(x, 0.0%s)", to);
  else snprintf(expr, sizeof expr, "bitcast(x, 0%s)", to);
  return legalize_unary(m, call, out, expr, tp);
}

/* det: the program reads the order from the last axis; matrices not provably square get the
 * run-time guard that they are (inference records the same one; this keeps the program's
 * assumption next to it). */
static loom_status legalize_det(loom_graph_module *m, const loom_graph_expr *call, loom_graph_legal *r) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim < 2 || !loom_dtype_is_float(x->dtype)) return loom_legal_unsupported(call, "for this operand (float matrices of rank >= 2)");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *rows = x->dims[x->ndim - 2], *cols = x->dims[x->ndim - 1];
  if (loom_sym_prove_eq(cx, rows, cols) != LOOM_SYM_TRUE) {
    char why[384], on[160];
    loom_legal_operand_name(call, 0, on, sizeof on);
    snprintf(why, sizeof why, "det: %s axes %d and %d (%s, %s) must be equal (square matrices)", on, x->ndim - 2,
             x->ndim - 1, loom_graph_sym_str(m, rows), loom_graph_sym_str(m, cols));
    LOOM_PROPAGATE(loom_graph_legal_guard(m, r, loom_sym_cmp(cx, LOOM_SYM_EQ, rows, cols), why));
  }
  char name[64];
  snprintf(name, sizeof name, "det_%s_r%d", loom_dtype_name(x->dtype), x->ndim);
  if ((r->tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_det(loom_graph_module_arena(m), cx, name, x->dtype, x->ndim, &r->tp));
  return loom_graph_module_add_tp(m, r->tp);
}

/* pow of integers (ONNX Pow on int32 / int64): the reference computes in double and converts
 * back, truncating, as the program's cast does. */
static loom_status legalize_int_pow(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *a,
                                    const loom_sinfo *out, const loom_tp_bcast *ma, const loom_sinfo *b,
                                    const loom_tp_bcast *mb, const char *key, loom_tp_func **tp) {
  if (!loom_dtype_is_int(a->dtype) || out->dtype != a->dtype) return loom_legal_unsupported(call, "for these operand dtypes");
  char expr[96], name[256];
  const char *an = loom_dtype_name(a->dtype);
  snprintf(expr, sizeof expr, "%s(pow(f64(a), f64(b)))", an);
  snprintf(name, sizeof name, "pow_%s_%s", an, key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_binary(loom_graph_module_arena(m), loom_graph_module_sym(m), name, expr, a->dtype, out->dtype,
                                    a->ndim, ma, b->ndim, mb, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_binary(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                   const binary_entry *e, loom_tp_func **tp) {
  const loom_sinfo *a, *b;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &a));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &b));
  if (out->ndim < 0 || !out->dims) return loom_legal_unsupported(call, "for a result of unknown shape");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  loom_tp_bcast ma[LOOM_TP_GEN_MAX_RANK], mb[LOOM_TP_GEN_MAX_RANK];
  char key[64] = "";
  modes_of(cx, a, out->dims, out->ndim, ma, key, sizeof key);
  strcat(key, "_");
  modes_of(cx, b, out->dims, out->ndim, mb, key, sizeof key);
  if (a->dtype != b->dtype) return loom_legal_unsupported(call, "for operands of different dtypes");
  if (e->op == LOOM_GRAPH_OP_POW && !loom_dtype_is_float(a->dtype)) return legalize_int_pow(m, call, a, out, ma, b, mb, key, tp);
  const char *expr = loom_dtype_is_float(a->dtype) || !e->int_expr ? e->expr : e->int_expr;
  char name[256];
  snprintf(name, sizeof name, "%s_%s_%s", loom_graph_op_name(call->u.call.op), loom_dtype_name(a->dtype), key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_binary(loom_graph_module_arena(m), cx, name, expr, a->dtype, out->dtype, a->ndim, ma,
                                    b->ndim, mb, tp));
  return loom_graph_module_add_tp(m, *tp);
}

/* Normalises an axis given possibly negative. */
bool loom_legal_norm_axis(int64_t ax, int ndim, int *out) {
  if (ax < 0) ax += ndim;
  if (ax < 0 || ax >= ndim) return false;
  *out = (int)ax;
  return true;
}

static loom_status legalize_reduce(loom_graph_module *m, const loom_graph_expr *call, loom_tp_reduce_op kind,
                                   loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  unsigned mask = 0;
  const loom_graph_attr *axes = loom_graph_call_attr(call, "axes");
  if (!axes) {
    mask = x->ndim ? (1u << x->ndim) - 1 : 0;
  } else {
    for (size_t i = 0; i < axes->n; i++) {
      int64_t v;
      int a;
      if (!loom_sym_is_const(axes->syms[i], &v) || !loom_legal_norm_axis(v, x->ndim, &a)) return loom_legal_unsupported(call, "for these axes");
      mask |= 1u << a;
    }
  }
  bool keep = loom_graph_attr_get_int(call, "keepdims", 0) != 0;
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%x%s", loom_graph_op_name(call->u.call.op), loom_dtype_name(x->dtype),
           x->ndim, mask, keep ? "_k" : "");
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_reduce(loom_graph_module_arena(m), loom_graph_module_sym(m), name, kind, x->dtype,
                                    x->ndim, mask, keep, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_softmax(loom_graph_module *m, const loom_graph_expr *call, bool log, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int axis;
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", -1), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%d", log ? "log_softmax" : "softmax", loom_dtype_name(x->dtype), x->ndim, axis);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_softmax(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim,
                                     axis, log, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_norm(loom_graph_module *m, const loom_graph_expr *call, bool rms, loom_tp_func **tp) {
  const loom_sinfo *x, *gamma;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &gamma));
  if (gamma->ndim != 1 || x->ndim < 1) return loom_legal_unsupported(call, "for a gamma that is not 1-d");
  double eps = loom_graph_attr_get_float(call, "eps", 1e-5);
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_%016llx", rms ? "rms_norm" : "layer_norm", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(&eps, sizeof eps));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_layer_norm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim,
                                        1, eps, rms, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_matmul(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                   loom_tp_func **tp) {
  const loom_sinfo *a, *b;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &a));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &b));
  if (a->dtype != b->dtype) return loom_legal_unsupported(call, "for operands of different dtypes");
  /* a 1-D operand (NumPy's vector forms) contributes no batch axes and no m / n axis */
  int nbatch = out->ndim - (a->ndim >= 2) - (b->ndim >= 2);
  if (out->ndim < 0 || !out->dims || nbatch < 0) return loom_legal_unsupported(call, "for a result of unknown shape");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  /* Batch modes against the output's batch dims. */
  loom_sinfo ab = *a, bb = *b;
  ab.ndim = a->ndim >= 2 ? a->ndim - 2 : 0;
  bb.ndim = b->ndim >= 2 ? b->ndim - 2 : 0;
  loom_tp_bcast ma[LOOM_TP_GEN_MAX_RANK], mb[LOOM_TP_GEN_MAX_RANK];
  char key[64] = "";
  modes_of(cx, &ab, out->dims, nbatch, ma, key, sizeof key);
  strcat(key, "_");
  modes_of(cx, &bb, out->dims, nbatch, mb, key, sizeof key);
  loom_dtype acc = a->dtype == LOOM_DTYPE_F16 || a->dtype == LOOM_DTYPE_BF16 ? LOOM_DTYPE_F32 : a->dtype;
  char name[256];
  snprintf(name, sizeof name, "matmul_%s_%d_%d_%s", loom_dtype_name(a->dtype), a->ndim, b->ndim, key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_matmul(loom_graph_module_arena(m), cx, name, a->dtype, acc, a->ndim, ma, b->ndim, mb, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_linear(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x, *w, *bias = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &w));
  if (call->u.call.nargs > 2) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &bias));
  if (x->ndim < 1 || w->ndim != 2 || (bias && bias->ndim != 1)) return loom_legal_unsupported(call, "for these ranks");
  if (x->dtype != w->dtype || (bias && bias->dtype != x->dtype)) return loom_legal_unsupported(call, "for mixed dtypes");
  loom_dtype acc = x->dtype == LOOM_DTYPE_F16 || x->dtype == LOOM_DTYPE_BF16 ? LOOM_DTYPE_F32 : x->dtype;
  char name[256];
  snprintf(name, sizeof name, "linear_%s_r%d%s", loom_dtype_name(x->dtype), x->ndim, bias ? "_bias" : "");
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_linear(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, acc, x->ndim,
                                    bias != NULL, tp));
  return loom_graph_module_add_tp(m, *tp);
}

/* reshape, expand_dims, squeeze, flatten: the output's dims come from inference; the
 * program only reinterprets the row-major order. */
static loom_status legalize_reshape(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (out->ndim < 0 || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this result rank");
  char name[256];
  snprintf(name, sizeof name, "reshape_%s_%d_%d", loom_dtype_name(x->dtype), x->ndim, out->ndim);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_reshape(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim,
                                     out->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_permute(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int perm[LOOM_TP_GEN_MAX_RANK];
  const loom_graph_attr *axes = loom_graph_call_attr(call, "axes");
  char key[64] = "";
  for (int k = 0; k < x->ndim; k++) {
    int64_t v = x->ndim - 1 - k;
    if (axes && ((size_t)k >= axes->n || !loom_sym_is_const(axes->syms[k], &v))) return loom_legal_unsupported(call, "for these axes");
    if (!loom_legal_norm_axis(v, x->ndim, &perm[k])) return loom_legal_unsupported(call, "for these axes");
    snprintf(key + strlen(key), sizeof key - strlen(key), "%d", perm[k]);
  }
  char name[256];
  snprintf(name, sizeof name, "permute_dims_%s_%s", loom_dtype_name(x->dtype), key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_permute(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim,
                                     perm, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_concat(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  for (size_t i = 1; i < call->u.call.nargs; i++) {
    const loom_sinfo *y;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &y));
    if (y->dtype != x->dtype || y->ndim != x->ndim) return loom_legal_unsupported(call, "for mixed dtypes or ranks");
  }
  int axis;
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", 0), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  char name[256];
  snprintf(name, sizeof name, "concat_%s_r%d_a%d_n%zu", loom_dtype_name(x->dtype), x->ndim, axis, call->u.call.nargs);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_concat(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, axis,
                                    (int)call->u.call.nargs, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_where(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                  loom_tp_func **tp) {
  const loom_sinfo *in[3];
  for (size_t i = 0; i < 3; i++) LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &in[i]));
  if (in[0]->dtype != LOOM_DTYPE_BOOL || in[1]->dtype != in[2]->dtype) return loom_legal_unsupported(call, "for these dtypes");
  if (out->ndim < 0 || !out->dims) return loom_legal_unsupported(call, "for a result of unknown shape");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  loom_tp_bcast modes[3][LOOM_TP_GEN_MAX_RANK];
  const loom_tp_bcast *mp[3] = {modes[0], modes[1], modes[2]};
  char key[64] = "";
  for (int i = 0; i < 3; i++) {
    if (i) strcat(key, "_");
    modes_of(cx, in[i], out->dims, out->ndim, modes[i], key, sizeof key);
  }
  char name[256];
  snprintf(name, sizeof name, "where_%s_%s", loom_dtype_name(in[1]->dtype), key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  const loom_dtype dts[3] = {LOOM_DTYPE_BOOL, in[1]->dtype, in[2]->dtype};
  const int ranks[3] = {in[0]->ndim, in[1]->ndim, in[2]->ndim};
  LOOM_PROPAGATE(loom_tp_gen_nary(loom_graph_module_arena(m), cx, name, "select(a, b, c)", 3, dts, out->dtype, ranks, mp, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_broadcast_to(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                         loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (out->ndim < 0 || !out->dims || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this result");
  if (out->ndim < x->ndim) return loom_legal_unsupported(call, "to a lower rank");
  loom_tp_bcast modes[LOOM_TP_GEN_MAX_RANK];
  char key[64] = "";
  modes_of(loom_graph_module_sym(m), x, out->dims, out->ndim, modes, key, sizeof key);
  char name[256];
  snprintf(name, sizeof name, "broadcast_to_%s_r%d_%s", loom_dtype_name(x->dtype), out->ndim, key);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_broadcast(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, modes,
                                       out->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_slice(loom_graph_module *m, const loom_graph_expr *call, loom_graph_legal *r) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_graph_attr *axes = loom_graph_call_attr(call, "axes"), *begin = loom_graph_call_attr(call, "begin");
  const loom_graph_attr *strides = loom_graph_call_attr(call, "strides");
  if (!begin) return loom_legal_unsupported(call, "without begin");
  size_t n = axes ? axes->n : begin->n;
  if (begin->n != n || (strides && strides->n != n) || n > 8) return loom_legal_unsupported(call, "for these attributes");
  int64_t st[LOOM_TP_GEN_MAX_RANK];
  const loom_sym_expr *beg[LOOM_TP_GEN_MAX_RANK] = {0};
  unsigned mask = 0;
  for (int k = 0; k < LOOM_TP_GEN_MAX_RANK; k++) st[k] = 1;
  for (size_t i = 0; i < n; i++) {
    int64_t v = (int64_t)i;
    int ax;
    if ((axes && !loom_sym_is_const(axes->syms[i], &v)) || !loom_legal_norm_axis(v, x->ndim, &ax))
      return loom_legal_unsupported(call, "for non-constant axes");
    int64_t sv = 1;
    if (strides && (!loom_sym_is_const(strides->syms[i], &sv) || sv <= 0))
      return loom_legal_unsupported(call, "for non-constant or non-positive strides yet");
    /* The program indexes from its begin parameter: pass the begin the reference uses (a
     * negative constant counts from the end, then clamped to [0, extent]; past the end the
     * result is empty), so no begin needs proving. */
    const loom_sym_expr *b0 = begin->syms[i], *zero = loom_sym_const(cx, 0), *dim = x->dims[ax];
    int64_t c;
    if (loom_sym_is_const(b0, &c) && c < 0) b0 = loom_sym_add(cx, dim, b0);
    if (b0 && loom_sym_prove_le(cx, zero, b0) != LOOM_SYM_TRUE) b0 = loom_sym_max(cx, b0, zero);
    if (b0 && loom_sym_prove_le(cx, b0, dim) != LOOM_SYM_TRUE) b0 = loom_sym_min(cx, b0, dim);
    if (!b0 || !(b0 = loom_sym_simplify(cx, b0))) return loom_sym_ctx_take_error(cx);
    mask |= 1u << ax;
    st[ax] = sv;
    beg[ax] = b0;
  }
  char key[128] = "";
  for (int k = 0; k < x->ndim; k++)
    if (mask >> k & 1) snprintf(key + strlen(key), sizeof key - strlen(key), "_a%ds%lld", k, (long long)st[k]);
  char name[256];
  snprintf(name, sizeof name, "strided_slice_%s_r%d%s", loom_dtype_name(x->dtype), x->ndim, key);
  if (!(r->tp = loom_graph_module_find_tp(m, name))) {
    LOOM_PROPAGATE(loom_tp_gen_slice(loom_graph_module_arena(m), cx, name, x->dtype, x->ndim, mask, st, &r->tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(m, r->tp));
  }
  for (int k = 0; k < x->ndim; k++)
    if (mask >> k & 1) r->scalars[r->nscalars++] = beg[k];
  return LOOM_OK;
}

static loom_status legalize_fill(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, double value,
                                 loom_tp_func **tp) {
  if (call->u.call.nargs != 0) return loom_legal_unsupported(call, "with a Shape operand yet");
  if (out->ndim < 0 || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this rank");
  char text[64];
  if (out->dtype == LOOM_DTYPE_BOOL) snprintf(text, sizeof text, "%s", value != 0 ? "true" : "false");
  else if (loom_dtype_is_float(out->dtype)) {
    snprintf(text, sizeof text, "%.17g", value);
    if (!strpbrk(text, ".eEn")) strcat(text, ".0");
  } else { /* the integer the reference stores (saturated, NaN 0): one conversion rule */
    uint64_t bits = 0;
    loom_graph_tensor one = {.dtype = out->dtype, .numel = 1, .data = &bits};
    loom_graph_tensor_set_f64(&one, 0, value);
    int64_t v = loom_graph_tensor_get_i64(&one, 0);
    if (out->dtype == LOOM_DTYPE_U64) snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    else snprintf(text, sizeof text, "%lld", (long long)v);
  }
  char name[256];
  snprintf(name, sizeof name, "fill_%s_r%d_%016llx", loom_dtype_name(out->dtype), out->ndim,
           (unsigned long long)loom_hash_bytes(&value, sizeof value));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_fill(loom_graph_module_arena(m), loom_graph_module_sym(m), name, out->dtype, out->ndim, text, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_tri(loom_graph_module *m, const loom_graph_expr *call, bool upper, loom_graph_legal *r) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim < 2) return loom_legal_unsupported(call, "below rank 2");
  const loom_graph_attr *k = loom_graph_call_attr(call, "k");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  /* a run-time k (operand 1, one integer) is read by the program from its buffer */
  const loom_sinfo *ks = NULL;
  if (call->u.call.nargs > 1) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &ks));
  if (ks && (ks->ndim > 1 || !loom_dtype_is_int(ks->dtype))) return loom_legal_unsupported(call, "for this k operand");
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d%s%s", upper ? "triu" : "tril", loom_dtype_name(x->dtype), x->ndim, ks ? "_k" : "",
           ks ? loom_dtype_name(ks->dtype) : "");
  if (ks && ks->ndim == 1) strncat(name, "v", sizeof name - strlen(name) - 1);
  if (!(r->tp = loom_graph_module_find_tp(m, name))) {
    LOOM_PROPAGATE(loom_tp_gen_tri(loom_graph_module_arena(m), cx, name, x->dtype, x->ndim, upper,
                                   ks ? ks->dtype : LOOM_DTYPE_I64, ks ? ks->ndim : -1, &r->tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(m, r->tp));
  }
  if (!ks) r->scalars[r->nscalars++] = k && k->n == 1 ? k->syms[0] : loom_sym_const(cx, 0);
  return LOOM_OK;
}

static loom_status legalize_take(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x, *idx;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &idx));
  if (!loom_dtype_is_int(idx->dtype)) return loom_legal_unsupported(call, "for non-integer indices");
  int axis;
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", 0), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  char name[256];
  snprintf(name, sizeof name, "take_%s_r%d_a%d_%s_r%d", loom_dtype_name(x->dtype), x->ndim, axis, loom_dtype_name(idx->dtype),
           idx->ndim);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_take(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, axis,
                                  idx->dtype, idx->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_argext(loom_graph_module *m, const loom_graph_expr *call, bool is_max, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int axis;
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", 0), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  bool keep = loom_graph_attr_get_int(call, "keepdims", 0) != 0;
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%d%s", is_max ? "argmax" : "argmin", loom_dtype_name(x->dtype), x->ndim, axis,
           keep ? "_k" : "");
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_argext(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, axis,
                                    is_max, keep, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_cumsum(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int axis;
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", 0), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  bool excl = loom_graph_attr_get_int(call, "exclusive", 0) != 0, prod = call->u.call.op == LOOM_GRAPH_OP_CUMPROD;
  bool rev = loom_graph_attr_get_int(call, "reverse", 0) != 0;
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%d%s%s", prod ? "cumprod" : "cumsum", loom_dtype_name(x->dtype), x->ndim, axis,
           excl ? "_x" : "", rev ? "_rev" : "");
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE((prod ? loom_tp_gen_cumprod : loom_tp_gen_cumsum)(loom_graph_module_arena(m), loom_graph_module_sym(m), name,
                                                                    x->dtype, x->ndim, axis, excl, rev, tp));
  return loom_graph_module_add_tp(m, *tp);
}

/* A float attribute as a literal of dtype t. */
void loom_legal_literal(loom_dtype t, double v, char *buf, size_t cap) {
  if (t == LOOM_DTYPE_BOOL) snprintf(buf, cap, "%s", v != 0 ? "true" : "false");
  else if (loom_dtype_is_float(t)) {
    snprintf(buf, cap, "%.17g", v);
    if (!strpbrk(buf, ".eEn")) strncat(buf, ".0", cap - strlen(buf) - 1);
  } else snprintf(buf, cap, "%lld", (long long)v);
}

static loom_status legalize_pad(loom_graph_module *m, const loom_graph_expr *call, loom_graph_legal *r) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  const loom_graph_attr *pads = loom_graph_call_attr(call, "pads");
  if (!pads || pads->n != (size_t)(2 * x->ndim)) return loom_legal_unsupported(call, "without one before/after pad per axis");
  double value = loom_graph_attr_get_float(call, "value", 0);
  char text[64];
  loom_legal_literal(x->dtype, value, text, sizeof text);
  char name[256];
  snprintf(name, sizeof name, "pad_%s_r%d_%016llx", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(&value, sizeof value));
  if (!(r->tp = loom_graph_module_find_tp(m, name))) {
    LOOM_PROPAGATE(loom_tp_gen_pad(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, text, false, -1,
                                   &r->tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(m, r->tp));
  }
  for (int k = 0; k < x->ndim; k++) r->scalars[r->nscalars++] = pads->syms[k];
  return LOOM_OK;
}

static loom_status legalize_arange(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                   loom_graph_legal *r) {
  if (out->ndim != 1) return loom_legal_unsupported(call, "for a result that is not 1-d");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_graph_attr *start = loom_graph_call_attr(call, "start"), *step = loom_graph_call_attr(call, "step");
  char name[64];
  snprintf(name, sizeof name, "arange_%s", loom_dtype_name(out->dtype));
  if (!(r->tp = loom_graph_module_find_tp(m, name))) {
    LOOM_PROPAGATE(loom_tp_gen_arange(loom_graph_module_arena(m), cx, name, out->dtype, &r->tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(m, r->tp));
  }
  r->scalars[r->nscalars++] = start && start->n == 1 ? start->syms[0] : loom_sym_const(cx, 0);
  r->scalars[r->nscalars++] = step && step->n == 1 ? step->syms[0] : loom_sym_const(cx, 1);
  return LOOM_OK;
}

static loom_status legalize_sym_tensor(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                       loom_graph_legal *r) {
  const loom_graph_attr *v = loom_graph_call_attr(call, "values");
  size_t cap = sizeof r->scalars / sizeof r->scalars[0];
  if (!v || v->n > cap) return loom_legal_unsupported(call, "with more values than a program takes scalars");
  bool scalar = out->ndim == 0;
  char name[64];
  snprintf(name, sizeof name, "sym_tensor_%s_n%zu%s", loom_dtype_name(out->dtype), v->n, scalar ? "_s" : "");
  if (!(r->tp = loom_graph_module_find_tp(m, name))) {
    LOOM_PROPAGATE(loom_tp_gen_sym_tensor(loom_graph_module_arena(m), loom_graph_module_sym(m), name, out->dtype, (int)v->n,
                                          scalar, &r->tp));
    LOOM_PROPAGATE(loom_graph_module_add_tp(m, r->tp));
  }
  for (size_t k = 0; k < v->n; k++) r->scalars[r->nscalars++] = v->syms[k];
  return LOOM_OK;
}

static loom_status legalize_tile(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  char name[64];
  snprintf(name, sizeof name, "tile_%s_r%d", loom_dtype_name(x->dtype), x->ndim);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_tile(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_repeat(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int axis;
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", 0), x->ndim, &axis)) return loom_legal_unsupported(call, "for this axis");
  int64_t reps = loom_graph_attr_get_int(call, "repeats", 1);
  if (reps < 1) return loom_legal_unsupported(call, "for repeats < 1");
  char name[128];
  snprintf(name, sizeof name, "repeat_%s_r%d_a%d_x%lld", loom_dtype_name(x->dtype), x->ndim, axis, (long long)reps);
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_repeat(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, axis,
                                    reps, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_one_hot(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_tp_func **tp) {
  const loom_sinfo *idx;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &idx));
  if (!loom_dtype_is_int(idx->dtype) || out->ndim != idx->ndim + 1) return loom_legal_unsupported(call, "for these indices");
  double on = loom_graph_attr_get_float(call, "on_value", 1), off = loom_graph_attr_get_float(call, "off_value", 0);
  char on_t[64], off_t[64];
  loom_legal_literal(out->dtype, on, on_t, sizeof on_t);
  loom_legal_literal(out->dtype, off, off_t, sizeof off_t);
  double key[2] = {on, off};
  char name[128];
  snprintf(name, sizeof name, "one_hot_%s_r%d_%s_%016llx", loom_dtype_name(idx->dtype), idx->ndim, loom_dtype_name(out->dtype),
           (unsigned long long)loom_hash_bytes(key, sizeof key));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_one_hot(loom_graph_module_arena(m), loom_graph_module_sym(m), name, idx->dtype, idx->ndim,
                                     out->dtype, on_t, off_t, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_batch_norm(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  for (size_t i = 1; i < 5; i++) {
    const loom_sinfo *p;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &p));
    if (p->ndim != 1 || p->dtype != x->dtype) return loom_legal_unsupported(call, "for these parameters");
  }
  double eps = loom_graph_attr_get_float(call, "eps", 1e-5);
  char name[128];
  snprintf(name, sizeof name, "batch_norm_%s_r%d_%016llx", loom_dtype_name(x->dtype), x->ndim,
           (unsigned long long)loom_hash_bytes(&eps, sizeof eps));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_batch_norm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, eps, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_group_norm(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  for (size_t i = 1; i < 3; i++) {
    const loom_sinfo *p;
    LOOM_PROPAGATE(loom_legal_tensor_arg(call, i, &p));
    if (p->ndim != 1 || p->dtype != x->dtype) return loom_legal_unsupported(call, "for these parameters");
  }
  double eps = loom_graph_attr_get_float(call, "eps", 1e-5);
  int64_t groups = loom_graph_attr_get_int(call, "num_groups", 1);
  char name[128];
  snprintf(name, sizeof name, "group_norm_%s_r%d_g%lld_%016llx", loom_dtype_name(x->dtype), x->ndim, (long long)groups,
           (unsigned long long)loom_hash_bytes(&eps, sizeof eps));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_group_norm(loom_graph_module_arena(m), loom_graph_module_sym(m), name, x->dtype, x->ndim, groups,
                                        eps, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_global_avg_pool2d(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim != 4) return loom_legal_unsupported(call, "for a non-NCHW input");
  char name[64];
  snprintf(name, sizeof name, "global_avg_pool2d_%s", loom_dtype_name(x->dtype));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_reduce(loom_graph_module_arena(m), loom_graph_module_sym(m), name, LOOM_TP_REDUCE_MEAN,
                                    x->dtype, 4, (1u << 2) | (1u << 3), true, tp));
  return loom_graph_module_add_tp(m, *tp);
}

static loom_status legalize_attention(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp) {
  const loom_sinfo *q, *k, *v, *mk = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &q));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &k));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &v));
  if (call->u.call.nargs > 3) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 3, &mk));
  if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || k->dtype != q->dtype || v->dtype != q->dtype)
    return loom_legal_unsupported(call, "for these operands");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_graph_attr *sc = loom_graph_call_attr(call, "scale");
  bool causal = loom_graph_attr_get_int(call, "causal", 0) != 0;
  char scale_text[64] = "", key[64] = "";
  if (sc) loom_legal_literal(LOOM_DTYPE_F64, sc->kind == LOOM_GRAPH_ATTR_INT ? (double)sc->i : sc->f, scale_text, sizeof scale_text);
  loom_tp_bcast modes[4];
  if (mk) {
    const loom_sym_expr *full[4] = {q->dims[0], q->dims[1], q->dims[2], k->dims[2]};
    modes_of(cx, mk, full, 4, modes, key, sizeof key);
  }
  char name[256];
  snprintf(name, sizeof name, "attention_%s%s%s%s%s_%016llx", loom_dtype_name(q->dtype), causal ? "_causal" : "",
           mk ? "_mask_" : "", mk ? loom_dtype_name(mk->dtype) : "", key,
           (unsigned long long)loom_hash_bytes(scale_text, strlen(scale_text)));
  if ((*tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_attention(loom_graph_module_arena(m), cx, name, q->dtype, sc ? scale_text : NULL, causal,
                                       mk ? mk->ndim : -1, modes, mk ? mk->dtype : LOOM_DTYPE_BOOL, tp));
  return loom_graph_module_add_tp(m, *tp);
}

/* The lowering of ops whose programs take no scalar parameters. */
static loom_status legalize_plain(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                  loom_tp_func **out_tp) {
  loom_graph_op op = call->u.call.op;
  for (size_t i = 0; i < sizeof unary_table / sizeof unary_table[0]; i++)
    if (unary_table[i].op == op) return legalize_unary(m, call, out, unary_table[i].expr, out_tp);
  for (size_t i = 0; i < sizeof binary_table / sizeof binary_table[0]; i++)
    if (binary_table[i].op == op) return legalize_binary(m, call, out, &binary_table[i], out_tp);
  loom_tp_reduce_op rk;
  if (loom_legal_reduce_kind(op, &rk)) return legalize_reduce(m, call, rk, out_tp);
  switch (op) {
    case LOOM_GRAPH_OP_CAST: {
      if (loom_dtype_is_lowp_float(out->dtype) && !loom_graph_attr_get_int(call, "saturate", 1))
        return loom_legal_unsupported(call, "to a float8 / float4 dtype with saturate=false (programs saturate)");
      char expr[32];
      snprintf(expr, sizeof expr, "%s(x)", loom_dtype_name(out->dtype));
      return legalize_unary(m, call, out, expr, out_tp);
    }
    case LOOM_GRAPH_OP_BITCAST: return legalize_bitcast(m, call, out, out_tp);
    case LOOM_GRAPH_OP_CLIP: return legalize_clip(m, call, out, out_tp);
    case LOOM_GRAPH_OP_SOFTMAX: return legalize_softmax(m, call, false, out_tp);
    case LOOM_GRAPH_OP_LOG_SOFTMAX: return legalize_softmax(m, call, true, out_tp);
    case LOOM_GRAPH_OP_LAYER_NORM: return legalize_norm(m, call, false, out_tp);
    case LOOM_GRAPH_OP_RMS_NORM: return legalize_norm(m, call, true, out_tp);
    case LOOM_GRAPH_OP_MATMUL: return legalize_matmul(m, call, out, out_tp);
    case LOOM_GRAPH_OP_LINEAR: return legalize_linear(m, call, out_tp);
    case LOOM_GRAPH_OP_RESHAPE:
      /* the target shape as a Shape argument is fine too: the program ignores it */
      if (call->u.call.nargs > 1) return loom_legal_unsupported(call, "with a Shape argument yet");
      return legalize_reshape(m, call, out, out_tp);
    case LOOM_GRAPH_OP_EXPAND_DIMS:
    case LOOM_GRAPH_OP_SQUEEZE:
    case LOOM_GRAPH_OP_FLATTEN: return legalize_reshape(m, call, out, out_tp);
    case LOOM_GRAPH_OP_PERMUTE_DIMS: return legalize_permute(m, call, out_tp);
    case LOOM_GRAPH_OP_CONCAT: return legalize_concat(m, call, out_tp);
    case LOOM_GRAPH_OP_WHERE: return legalize_where(m, call, out, out_tp);
    case LOOM_GRAPH_OP_BROADCAST_TO: return legalize_broadcast_to(m, call, out, out_tp);
    case LOOM_GRAPH_OP_FULL: return legalize_fill(m, call, out, loom_graph_attr_get_float(call, "value", 0), out_tp);
    case LOOM_GRAPH_OP_ONES: return legalize_fill(m, call, out, 1, out_tp);
    case LOOM_GRAPH_OP_ZEROS: return legalize_fill(m, call, out, 0, out_tp);
    case LOOM_GRAPH_OP_TAKE: return legalize_take(m, call, out_tp);
    case LOOM_GRAPH_OP_ARGMAX: return legalize_argext(m, call, true, out_tp);
    case LOOM_GRAPH_OP_ARGMIN: return legalize_argext(m, call, false, out_tp);
    case LOOM_GRAPH_OP_CUMSUM:
    case LOOM_GRAPH_OP_CUMPROD: return legalize_cumsum(m, call, out_tp);
    case LOOM_GRAPH_OP_TILE: return legalize_tile(m, call, out_tp);
    case LOOM_GRAPH_OP_REPEAT: return legalize_repeat(m, call, out_tp);
    case LOOM_GRAPH_OP_ONE_HOT: return legalize_one_hot(m, call, out, out_tp);
    case LOOM_GRAPH_OP_CONV1D:
    case LOOM_GRAPH_OP_CONV2D:
    case LOOM_GRAPH_OP_CONV:
    case LOOM_GRAPH_OP_MAX_POOL2D:
    case LOOM_GRAPH_OP_AVG_POOL2D:
    case LOOM_GRAPH_OP_MAX_POOL:
    case LOOM_GRAPH_OP_MAX_POOL_INDICES:
    case LOOM_GRAPH_OP_AVG_POOL:
    case LOOM_GRAPH_OP_LP_POOL:
    case LOOM_GRAPH_OP_CONV_TRANSPOSE: return loom_legalize_window(m, call, out_tp);
    case LOOM_GRAPH_OP_RESIZE:
    case LOOM_GRAPH_OP_RESIZE2D:
    case LOOM_GRAPH_OP_GRID_SAMPLE: return loom_legalize_image(m, call, out_tp);
    case LOOM_GRAPH_OP_GLOBAL_AVG_POOL2D: return legalize_global_avg_pool2d(m, call, out_tp);
    case LOOM_GRAPH_OP_BATCH_NORM: return legalize_batch_norm(m, call, out_tp);
    case LOOM_GRAPH_OP_GROUP_NORM: return legalize_group_norm(m, call, out_tp);
    case LOOM_GRAPH_OP_ATTENTION: return legalize_attention(m, call, out_tp);
    default: return loom_legal_unsupported(call, "yet");
  }
}

/* dft: the transform length, when given, is an i64 scalar parameter (symbolic at the call). */
static loom_status legalize_dft(loom_graph_module *m, const loom_graph_expr *call, loom_graph_legal *r) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int64_t c;
  int axis;
  if (x->ndim < 2 || !loom_dtype_is_float(x->dtype) || !loom_sym_is_const(x->dims[x->ndim - 1], &c) || (c != 1 && c != 2))
    return loom_legal_unsupported(call, "for this operand (float (..., 1) or (..., 2))");
  if (!loom_legal_norm_axis(loom_graph_attr_get_int(call, "axis", 0), x->ndim - 1, &axis)) return loom_legal_unsupported(call, "for this axis");
  bool inv = loom_graph_attr_get_int(call, "inverse", 0) != 0, one = loom_graph_attr_get_int(call, "onesided", 0) != 0;
  const loom_graph_attr *la = loom_graph_call_attr(call, "length");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  if (la && la->n != 1) return loom_legal_unsupported(call, "for a length of more than one value");
  if (la && loom_sym_prove_le(cx, loom_sym_const(cx, 1), la->syms[0]) != LOOM_SYM_TRUE) {
    char why[256];
    snprintf(why, sizeof why, "dft: length (%s) must be >= 1", loom_graph_sym_str(m, la->syms[0]));
    LOOM_PROPAGATE(loom_graph_legal_guard(m, r, loom_sym_cmp(cx, LOOM_SYM_LE, loom_sym_const(cx, 1), la->syms[0]), why));
  }
  char name[128];
  snprintf(name, sizeof name, "dft_%s_r%d_a%d_c%lld%s%s%s", loom_dtype_name(x->dtype), x->ndim, axis, (long long)c, inv ? "_inv" : "",
           one ? "_onesided" : "", la ? "_len" : "");
  if (la) r->scalars[r->nscalars++] = la->syms[0];
  if ((r->tp = loom_graph_module_find_tp(m, name))) return LOOM_OK;
  LOOM_PROPAGATE(loom_tp_gen_dft(loom_graph_module_arena(m), cx, name, x->dtype, x->ndim, axis, (int)c, inv, one, la != NULL, &r->tp));
  return loom_graph_module_add_tp(m, r->tp);
}

/* The name of the run-time operand (read when the op runs, e.g. ONNX axes given as a graph
 * input) that a call takes, or NULL: those forms have data-dependent dims and no tensor program. */
static const char *runtime_operand(const loom_graph_expr *call) {
  size_t n = call->u.call.nargs;
  switch (call->u.call.op) {
    case LOOM_GRAPH_OP_SUM: case LOOM_GRAPH_OP_MEAN: case LOOM_GRAPH_OP_MAX: case LOOM_GRAPH_OP_MIN:
    case LOOM_GRAPH_OP_PROD: case LOOM_GRAPH_OP_EXPAND_DIMS: case LOOM_GRAPH_OP_SQUEEZE: return n > 1 ? "axes" : NULL;
    case LOOM_GRAPH_OP_CUMSUM:
    case LOOM_GRAPH_OP_CUMPROD: return n > 1 ? "axis" : NULL;
    case LOOM_GRAPH_OP_RESHAPE:
      return n > 1 && call->u.call.args[1]->sinfo && call->u.call.args[1]->sinfo->kind == LOOM_SINFO_TENSOR ? "shape" : NULL;
    case LOOM_GRAPH_OP_STRIDED_SLICE: return n > 1 ? "starts/ends" : NULL;
    case LOOM_GRAPH_OP_PAD: return n > 1 ? "pads" : NULL;
    case LOOM_GRAPH_OP_ARANGE: return n > 0 ? "start/limit/delta" : NULL;
    default: return NULL;
  }
}

loom_status loom_graph_legalize_call(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                     loom_graph_legal *result) {
  memset(result, 0, sizeof *result);
  if (call->kind != LOOM_GRAPH_EXPR_CALL || call->u.call.callee != LOOM_GRAPH_CALLEE_OP)
    return LOOM_ERROR(INVALID_ARGUMENT, "legalize: not an operator call");
  if (!out || out->kind != LOOM_SINFO_TENSOR || out->dtype == LOOM_DTYPE_UNKNOWN)
    return loom_legal_unsupported(call, "for a non-tensor result");
  const char *rt = runtime_operand(call);
  if (rt) return LOOM_ERROR(UNIMPLEMENTED, "%s: no legalization for a run-time %s operand as one program (the legalize pass expands it: legalize_expand.c)",
                            loom_graph_op_name(call->u.call.op), rt);
  /* float8, int4, ...: the reference interpreter runs them; tensor programs do not take them */
  for (size_t i = 0; i <= call->u.call.nargs; i++) {
    const loom_sinfo *si = i < call->u.call.nargs ? call->u.call.args[i]->sinfo : out;
    if (si && si->kind == LOOM_SINFO_TENSOR && si->dtype == LOOM_DTYPE_F8E8M0)
      return LOOM_ERROR(UNIMPLEMENTED, "%s: no legalization for dtype %s (e8m0 runs on the interpreter only)",
                        loom_graph_op_name(call->u.call.op), loom_dtype_name(si->dtype));
  }
  switch (call->u.call.op) {
    case LOOM_GRAPH_OP_STRIDED_SLICE: return legalize_slice(m, call, result);
    case LOOM_GRAPH_OP_TRIL: return legalize_tri(m, call, false, result);
    case LOOM_GRAPH_OP_TRIU: return legalize_tri(m, call, true, result);
    case LOOM_GRAPH_OP_PAD: return legalize_pad(m, call, result);
    case LOOM_GRAPH_OP_ARANGE: return legalize_arange(m, call, out, result);
    case LOOM_GRAPH_OP_SYM_TENSOR: return legalize_sym_tensor(m, call, out, result);
    case LOOM_GRAPH_OP_DFT: return legalize_dft(m, call, result);
    case LOOM_GRAPH_OP_DET: return legalize_det(m, call, result);
    case LOOM_GRAPH_OP_GATHER_ELEMENTS:
    case LOOM_GRAPH_OP_SCATTER_ELEMENTS:
    case LOOM_GRAPH_OP_GATHER_ND:
    case LOOM_GRAPH_OP_SCATTER_ND: return loom_legalize_indexed(m, call, result);
    default: return legalize_plain(m, call, out, &result->tp);
  }
}

loom_status loom_legal_lower_call(loom_graph_module *m, const loom_graph_expr *v, loom_graph_binding *b, loom_graph_expr **out) {
  loom_graph_legal lg;
  LOOM_PROPAGATE(loom_graph_legalize_call(m, v, v->sinfo, &lg));
  LOOM_PROPAGATE(loom_graph_legal_attach_guards(m, &lg, b));
  loom_tp_func *tp = lg.tp;
  loom_arena *ar = loom_graph_module_arena(m);
  loom_graph_expr *call = LOOM_ARENA_NEW(ar, loom_graph_expr);
  if (!call) return LOOM_OOM();
  *call = *v;
  if (lg.nscalars) {
    /* Scalar parameters follow the tensor arguments, as sym(...) leaves. */
    size_t n = v->u.call.nargs + lg.nscalars;
    loom_graph_expr **args = LOOM_ARENA_ARRAY(ar, loom_graph_expr *, n);
    if (!args) return LOOM_OOM();
    for (size_t k = 0; k < v->u.call.nargs; k++) args[k] = v->u.call.args[k];
    for (size_t k = 0; k < lg.nscalars; k++)
      if (!(args[v->u.call.nargs + k] = loom_graph_sym_new(m, lg.scalars[k]))) return LOOM_OOM();
    call->u.call.args = args;
    call->u.call.nargs = n;
  }
  call->u.call.callee = LOOM_GRAPH_CALLEE_TP;
  call->u.call.target = loom_graph_module_intern(m, loom_tp_func_name(tp), strlen(loom_tp_func_name(tp)));
  call->u.call.nattrs = 0;
  call->u.call.attrs = NULL;
  call->u.call.out_sinfo = v->sinfo;
  if (!call->u.call.target) return LOOM_OOM();
  *out = call;
  return LOOM_OK;
}

/* Rewrites the bindings of one sequence (and of nested if branches). */
static loom_status legalize_seq(loom_graph_module *m, loom_graph_seq *seq, loom_diag_list *diags, size_t *done,
                                size_t *kept) {
  for (size_t bi = 0; bi < seq->nblocks; bi++) {
    loom_graph_block *blk = seq->blocks[bi];
    for (size_t i = 0; i < blk->n; i++) {
      loom_graph_binding *b = blk->bindings[i];
      loom_graph_expr *v = b->value;
      if (v->kind == LOOM_GRAPH_EXPR_IF) {
        LOOM_PROPAGATE(legalize_seq(m, v->u.if_.then_seq, diags, done, kept));
        LOOM_PROPAGATE(legalize_seq(m, v->u.if_.else_seq, diags, done, kept));
        continue;
      }
      if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP) continue;
      /* views keep their op: the VM gives them the input's memory (loom_graph_op_is_view) */
      if (loom_graph_op_is_view(v->u.call.op) && v->u.call.nargs == 1) continue;
      if (v->u.call.op == LOOM_GRAPH_OP_TENSOR_TO_SHAPE) continue; /* the VM reads the values (MATCHV) */
      bool expanded;
      loom_status s = loom_legalize_expand(m, blk, i, &expanded);
      if (!s && !expanded) {
        loom_graph_expr *call;
        s = loom_legal_lower_call(m, v, b, &call);
        if (!s) b->value = call;
      }
      if (s && loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED) {
        if (diags) loom_diag_add(diags, LOOM_DIAG_NOTE, v->loc, "kept as an operator: %s", loom_status_message(s));
        loom_status_free(s);
        (*kept)++;
        continue;
      }
      LOOM_PROPAGATE(s);
      (*done)++;
    }
  }
  return LOOM_OK;
}

loom_status loom_graph_legalize(loom_graph_module *m, loom_diag_list *diags, size_t *out_legalized, size_t *out_kept) {
  size_t done = 0, kept = 0;
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++)
    LOOM_RETURN_IF_ERROR(legalize_seq(m, loom_graph_module_func_at(m, i)->body, diags, &done, &kept),
                         "while legalizing @%s", loom_graph_module_func_at(m, i)->name);
  if (out_legalized) *out_legalized = done;
  if (out_kept) *out_kept = kept;
  return LOOM_OK;
}
