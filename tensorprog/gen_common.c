/* gen_common.c — what the program generators share, on top of the program builder (tp_build.h):
 * dims and loop nests named as generated programs name them, broadcast dims and loads, index
 * reads, reduction identities, f64 constants and named lets, the cubic kernel. */
#include <assert.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "tensorprog/gen_internal.h"

uint64_t loom_tp_gen_key(const void *params, size_t size) { return loom_hash_bytes(params, size); }

loom_status loom_tpg_check_rank(int rank) {
  if (rank < 0 || rank > LOOM_TP_GEN_MAX_RANK)
    return LOOM_ERROR(INVALID_ARGUMENT, "rank %d is outside [0, %d]", rank, LOOM_TP_GEN_MAX_RANK);
  return LOOM_OK;
}

/* The accumulation dtype for statistics of t. */
loom_dtype loom_tpg_stat_type(loom_dtype t) { return t == LOOM_DTYPE_F64 ? LOOM_DTYPE_F64 : LOOM_DTYPE_F32; }

void loom_tpg_dims_d(loom_tpb *b, int rank, const loom_sym_expr **dims) {
  for (int k = 0; k < rank; k++) dims[k] = loom_tpb_shape_sym(b, loom_tpg_var('d', k));
}

loom_tp_expr *loom_tpg_walk(loom_tpb *b, const char *var, const loom_sym_expr *extent) {
  return loom_tpb_idx(b, loom_tpb_for(b, var, extent, LOOM_TP_LOOP_SERIAL, true));
}

void loom_tpg_increment(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *i) {
  loom_tpb_store(b, buf, &i, loom_tp_op2(b->a, LOOM_TP_OP_ADD, loom_tpb_load(b, buf, &i), loom_tpb_lit_i(b, LOOM_DTYPE_I64, 1)));
}

void loom_tpg_nest(loom_tpb *b, int rank, const loom_sym_expr *const *dims, loom_tp_expr **idx) {
  for (int k = 0; k < rank; k++)
    idx[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('i', k), dims[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
}

loom_tp_buffer *loom_tpg_buffer_a(loom_tpb *b, const char *buf, int rank, loom_dtype t, const loom_sym_expr **dims) {
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) d[k] = loom_tpb_shape_sym(b, loom_tpg_var('a', k));
  if (dims)
    for (int k = 0; k < rank; k++) dims[k] = d[k];
  return loom_tpb_buffer(b, buf, t, rank, d);
}

loom_tp_buffer *loom_tpg_output_nest(loom_tpb *b, int rank, loom_dtype t, const loom_sym_expr **iv, loom_tp_expr **yi) {
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(b, rank, d);
  loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", t, rank, d);
  loom_tpg_nest(b, rank, d, yi);
  if (iv)
    for (int k = 0; k < rank; k++) iv[k] = yi[k] ? yi[k]->u.sym : NULL;
  return Y;
}

loom_tp_expr *loom_tpg_index_let(loom_tpb *b, const char *name, const loom_tp_buffer *I, loom_tp_expr *const *idx) {
  return loom_tpb_let(b, name, loom_tp_cast(b->a, LOOM_DTYPE_I64, loom_tpb_load(b, I, idx)));
}

loom_tp_expr *loom_tpg_wrap_index(loom_tpb *b, const loom_tp_expr *t, const loom_sym_expr *extent) {
  loom_tp_expr *neg = loom_tp_op2(b->a, LOOM_TP_OP_LT, loom_tpb_dup(b, t), loom_tpb_cidx(b, 0));
  loom_tp_expr *wrapped = loom_tp_op2(b->a, LOOM_TP_OP_ADD, loom_tpb_dup(b, t), loom_tpb_idx(b, extent));
  return loom_tp_select(b->a, neg, wrapped, loom_tpb_dup(b, t));
}

void loom_tpg_bcast_dims(loom_tpb *b, const char *prefix, int r, int R, const loom_tp_bcast *m,
                           const loom_sym_expr **dims) {
  for (int j = 0; j < r; j++) {
    int d = j + R - r; /* aligned output axis */
    char nm[16];
    switch (m[j]) {
      case LOOM_TP_BCAST_FULL: dims[j] = loom_tpb_shape_sym(b, loom_tpg_var('d', d)); break;
      case LOOM_TP_BCAST_ONE: dims[j] = loom_tpb_dim(b, "1"); break;
      case LOOM_TP_BCAST_GUARD:
        snprintf(nm, sizeof nm, "%s%d", prefix, d);
        dims[j] = loom_tpb_shape_sym(b, nm);
        break;
    }
  }
}

loom_tp_buffer *loom_tpg_bcast_buffer(loom_tpb *b, const char *buf, const char *prefix, int r, int R,
                                        const loom_tp_bcast *m, loom_dtype t) {
  const loom_sym_expr *dims[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_bcast_dims(b, prefix, r, R, m, dims);
  return loom_tpb_buffer(b, buf, t, r, dims);
}

/* FULL: i<d>; ONE: 0; GUARD: select(<dim> == 1, 0, i<d>). */
void loom_tpg_bcast_index(loom_tpb *b, const loom_sym_expr *const *dims, int r, int R, const loom_tp_bcast *m,
                            loom_tp_expr *const *oi, loom_tp_expr **idx) {
  for (int j = 0; j < r; j++) {
    int d = j + R - r;
    switch (m[j]) {
      case LOOM_TP_BCAST_FULL: idx[j] = loom_tp_expr_copy(b->a, oi[d]); break;
      case LOOM_TP_BCAST_ONE: idx[j] = loom_tpb_idx(b, loom_sym_const(b->cx, 0)); break;
      case LOOM_TP_BCAST_GUARD: {
        loom_tp_expr *eq = loom_tp_op2(b->a, LOOM_TP_OP_EQ, loom_tpb_idx(b, dims[j]), loom_tpb_idx(b, loom_sym_const(b->cx, 1)));
        idx[j] = loom_tp_select(b->a, eq, loom_tpb_idx(b, loom_sym_const(b->cx, 0)), loom_tp_expr_copy(b->a, oi[d]));
        break;
      }
    }
  }
}

loom_tp_expr *loom_tpg_bcast_load(loom_tpb *b, const loom_tp_buffer *buf, int R, const loom_tp_bcast *m,
                                    loom_tp_expr *const *oi) {
  if (!buf) return NULL;
  loom_tp_expr *idx[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_bcast_index(b, buf->dims, buf->ndim, R, m, oi, idx);
  return loom_tpb_load(b, buf, idx);
}

loom_tp_expr *loom_tpg_reduce_init(loom_tpb *b, loom_tp_reduce_op op, loom_dtype t) {
  bool fl = loom_dtype_is_float(t);
  switch (op) {
    case LOOM_TP_REDUCE_SUM: case LOOM_TP_REDUCE_MEAN:
      return fl ? loom_tp_const_f(b->a, t, 0.0) : loom_tpb_lit_i(b, t, 0);
    case LOOM_TP_REDUCE_PROD:
      return fl ? loom_tp_const_f(b->a, t, 1.0) : loom_tpb_lit_i(b, t, 1);
    case LOOM_TP_REDUCE_MAX: case LOOM_TP_REDUCE_MIN: {
      bool mx = op == LOOM_TP_REDUCE_MAX;
      if (fl) return loom_tp_const_f(b->a, t, mx ? -INFINITY : INFINITY);
      if (t == LOOM_DTYPE_BOOL) return loom_tp_const_i(b->a, t, !mx);
      unsigned bits = loom_dtype_bits(t);
      bool sgn = loom_dtype_is_signed(t);
      int64_t v;
      /* i64's lowest as `-9223372036854775807 - 1`: a program's text (the kernel cache's key, the
       * parser) has no literal for it; the interpreter and LLVM fold the subtraction */
      if (sgn && mx && bits == 64)
        return loom_tp_op2(b->a, LOOM_TP_OP_SUB, loom_tpb_lit_i(b, t, INT64_MIN + 1), loom_tpb_lit_i(b, t, 1));
      if (sgn && mx) v = -(INT64_C(1) << (bits - 1));
      else if (sgn) v = bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
      else if (mx) v = 0;
      else v = bits == 64 ? -1 /* all ones, as the parser reads 18446744073709551615u64 */ : (int64_t)((UINT64_C(1) << bits) - 1);
      return loom_tpb_lit_i(b, t, v);
    }
  }
  return NULL;
}

loom_tp_expr *loom_tpg_f64(loom_tpb *b, double v) { return loom_tp_const_f(b->a, LOOM_DTYPE_F64, isnan(v) ? NAN : v); }

loom_tp_expr *loom_tpg_letf(loom_tpb *b, loom_tp_expr *value, const char *fmt, ...) {
  char name[32];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  return loom_tpb_let(b, name, value);
}

loom_tp_expr *loom_tpg_cubic_weight(loom_tpb *b, const loom_tp_expr *u, double A) {
#define OP2(op, x, y) loom_tp_op2(b->a, LOOM_TP_OP_##op, (x), (y))
#define F(v) loom_tpg_f64(b, (v))
#define U() loom_tpb_dup(b, u)
  loom_tp_expr *near = OP2(ADD, OP2(MUL, OP2(MUL, OP2(SUB, OP2(MUL, OP2(ADD, F(A), F(2.0)), U()), OP2(ADD, F(A), F(3.0))), U()), U()), F(1.0));
  loom_tp_expr *far = OP2(SUB, OP2(MUL, OP2(ADD, OP2(MUL, OP2(SUB, OP2(MUL, F(A), U()), OP2(MUL, F(5.0), F(A))), U()), OP2(MUL, F(8.0), F(A))), U()),
                          OP2(MUL, F(4.0), F(A)));
  return loom_tp_select(b->a, OP2(LE, U(), F(1.0)), near, loom_tp_select(b->a, OP2(LT, U(), F(2.0)), far, F(0.0)));
}

loom_tp_expr *loom_tpg_cubic_dist(loom_tpb *b, const loom_tp_expr *q, int j) {
  switch (j) {
    case 0: return OP2(ADD, loom_tpb_dup(b, q), F(1.0));
    case 1: return loom_tpb_dup(b, q);
    case 2: return OP2(SUB, F(1.0), loom_tpb_dup(b, q));
    default: return OP2(SUB, F(2.0), loom_tpb_dup(b, q));
  }
#undef OP2
#undef F
#undef U
}

const char *loom_tpg_var(char var, int k) {
#define N8(c) {c "0", c "1", c "2", c "3", c "4", c "5", c "6", c "7"}
  static const char letters[] = "abcdefijkprstw";
  static const char *const names[][LOOM_TP_GEN_MAX_RANK] = {N8("a"), N8("b"), N8("c"), N8("d"), N8("e"), N8("f"), N8("i"),
                                                            N8("j"), N8("k"), N8("p"), N8("r"), N8("s"), N8("t"), N8("w")};
#undef N8
  _Static_assert(sizeof names / sizeof names[0] == sizeof letters - 1, "one row of names per letter");
  const char *at = strchr(letters, var);
  assert(var && at && k >= 0 && k < LOOM_TP_GEN_MAX_RANK && "a generator asked for a name it has no row for");
  return names[at - letters][k];
}
