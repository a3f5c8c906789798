/* cg_transpose.c — a square transposing copy as vector code (cg_transpose_tile).
 *
 * The tile rule 0b makes of a plain transposing copy (tensorprog/schedule_transpose.c):
 *
 *     for a in 0..n unroll { for v in 0..n vectorize { Y[.., a .., y0 + v] = X[.., v .., x0 + a] } }
 *
 * (n a power of two up to 16; Y's last index unit-stride in v, X's last index unit-stride in a,
 * no other index of X using a, none of Y but the last using v). As scalar code every element is
 * a load and a store, and LLVM's vectoriser can only gather or scatter. Here it is n vector
 * loads (row k: X at v = k, a = 0..n-1), a transpose in registers, and n vector stores (row j:
 * Y at a = j, v = 0..n-1). The transpose is log2(n) stages of shuffles; stage b swaps bit b of
 * the row and column numbers (rows r and r + b exchange the off-diagonal b x b blocks of every
 * 2b x 2b block), one two-input shuffle per row, which x86 lowers to unpacks, blends and lane
 * permutes. The elements are copied as bits (memory types), so every dtype is exact. */
#include "targets/cpu/cg_internal.h"

enum { TILE_MAX = 16 };

static const loom_tp_stmt *only(const loom_tp_stmt *s) {
  while (s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) s = s->u.seq.items[0];
  return s;
}

/* idx is a symbol whose stride in var is exactly 1. */
static bool unit_in(cg *g, const loom_tp_expr *idx, const loom_sym_expr *var) {
  return idx->kind == LOOM_TP_EXPR_SYM && loom_sym_uses_var(idx->u.sym, var) && cg_lane_stride(g, idx->u.sym, var) == 1;
}

/* The copy under loop s, when the nest is the square tile; else NULL. */
static const loom_tp_stmt *square_copy(cg *g, const loom_tp_stmt *s, int64_t *out_n) {
  int64_t n, m;
  const loom_tp_stmt *w = only(s->u.loop.body);
  if (!loom_sym_is_const(s->u.loop.extent, &n) || n < 2 || n > TILE_MAX || (n & (n - 1)) || s->u.loop.reduce)
    return NULL;
  if (w->kind != LOOM_TP_STMT_FOR || w->u.loop.kind != LOOM_TP_LOOP_VECTORIZE || w->u.loop.reduce ||
      !loom_sym_is_const(w->u.loop.extent, &m) || m != n)
    return NULL;
  const loom_tp_stmt *st = only(w->u.loop.body);
  if (st->kind != LOOM_TP_STMT_STORE) return NULL;
  const loom_tp_expr *ld = st->u.store.value;
  const loom_tp_buffer *y = st->u.store.buf;
  if (ld->kind != LOOM_TP_EXPR_LOAD || ld->u.load.buf == y || ld->u.load.buf->dtype != y->dtype) return NULL;
  const loom_tp_buffer *x = ld->u.load.buf;
  const loom_sym_expr *a = s->u.loop.var, *v = w->u.loop.var;
  if (!unit_in(g, st->u.store.idx[y->ndim - 1], v)) return NULL;
  for (int d = 0; d < y->ndim - 1; d++)
    if (loom_tp_expr_uses_var(st->u.store.idx[d], v)) return NULL;
  if (!unit_in(g, ld->u.load.idx[x->ndim - 1], a) || loom_tp_expr_uses_var(ld->u.load.idx[x->ndim - 1], v)) return NULL;
  for (int d = 0; d < x->ndim - 1; d++)
    if (loom_tp_expr_uses_var(ld->u.load.idx[d], a)) return NULL;
  *out_n = n;
  return st;
}

/* The address of `buf[idx]` with a and v bound to constants. */
static LLVMValueRef at(cg *g, const loom_tp_buffer *buf, loom_tp_expr *const *idx, const loom_sym_expr *a, int64_t ai,
                       const loom_sym_expr *v, int64_t vi) {
  cg_push_sym(g, a, cg_i64(g, ai), NULL);
  cg_push_sym(g, v, cg_i64(g, vi), NULL);
  LLVMValueRef p = cg_elem_ptr(g, buf, idx);
  g->syms.len -= 2;
  return p;
}

bool cg_transpose_tile(cg *g, const loom_tp_stmt *s) {
  int64_t n;
  const loom_tp_stmt *st = square_copy(g, s, &n);
  if (!st) return false;
  const loom_sym_expr *a = s->u.loop.var, *v = only(s->u.loop.body)->u.loop.var;
  const loom_tp_expr *ld = st->u.store.value;
  const loom_tp_buffer *x = ld->u.load.buf, *y = st->u.store.buf;
  unsigned align = (unsigned)loom_dtype_size(y->dtype);
  LLVMTypeRef vt = LLVMVectorType(cg_mem_type(g, y->dtype), (unsigned)n);
  LLVMValueRef rows[TILE_MAX];
  for (int64_t k = 0; k < n; k++) { /* row k: X[v = k, a = 0..n-1] */
    rows[k] = LLVMBuildLoad2(g->b, vt, at(g, x, ld->u.load.idx, a, 0, v, k), "");
    LLVMSetAlignment(rows[k], align);
  }
  for (int64_t b = 1; b < n; b *= 2) {
    LLVMValueRef lo_mask[TILE_MAX], hi_mask[TILE_MAX];
    for (int64_t c = 0; c < n; c++) { /* operands: A's lanes 0..n-1, B's n..2n-1 */
      lo_mask[c] = LLVMConstInt(g->t_i32, (unsigned long long)((c & b) ? n + c - b : c), 0);
      hi_mask[c] = LLVMConstInt(g->t_i32, (unsigned long long)((c & b) ? n + c : c + b), 0);
    }
    LLVMValueRef lo = LLVMConstVector(lo_mask, (unsigned)n), hi = LLVMConstVector(hi_mask, (unsigned)n);
    for (int64_t r = 0; r < n; r++) {
      if (r & b) continue;
      LLVMValueRef A = rows[r], B = rows[r + b];
      rows[r] = LLVMBuildShuffleVector(g->b, A, B, lo, "");
      rows[r + b] = LLVMBuildShuffleVector(g->b, A, B, hi, "");
    }
  }
  for (int64_t j = 0; j < n; j++) { /* row j: Y[a = j, v = 0..n-1] */
    LLVMValueRef p = LLVMBuildStore(g->b, rows[j], at(g, y, st->u.store.idx, a, j, v, 0));
    LLVMSetAlignment(p, align);
  }
  return true;
}
