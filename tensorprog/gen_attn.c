/* gen_attn.c — attention's tensor programs (graph op `attention`, graph/op_nn.c):
 * Y = softmax(Q K^T * scale + mask) V over (b, h, s, d) queries and (b, hk, t, d) keys and
 * (b, hk, t, dv) values, hk dividing h (grouped-query attention: query head i1 reads K/V head
 * floordiv(i1, floordiv(h, hk)), K and V are never copied per query head).
 *
 * Two kernels, one program:
 *   - the ROW kernel (any float dtype, and f32 with fewer than LOOM_TP_ATTN_MIN_ROWS queries: a
 *     decode step): per query row, its scores against every key, softmax, then V's rows summed
 *     into the output row; each (batch, head, row) is one parallel item, so one row still splits
 *     over the threads by heads. K and V are read once per row. With `self_rows` (t == s, so
 *     t < 8 here) its softmax loop over the keys is a plain loop, not 16 lanes.
 *   - the FLASH kernel (f32, FlashAttention's online softmax; MLAS's flashattn.cpp tiles the same
 *     way): per (batch, head, tile of QT query rows) — one parallel item — the tile's queries
 *     are transposed once into Qt[d, QT] (scaled), and the keys are visited in steps of KT (flash_tile):
 *       S[KT, QT]  = K[step] . Qt                     (a KT x QT register tile: queries in the
 *                                                      lanes, keys unrolled, d the reduction)
 *       mask       (causal, the key tail, the mask operand) only in the steps that need it
 *       m' = max(m, max_j S[j]);  a = exp(m - m');  P = exp(S - m')
 *       l  = l * a + sum_j P[j];  Ot[e] = Ot[e] * a + sum_j P[j] * V[j, e]
 *     and Y[q, e] = Ot[e, q] / l[q] at the end. With queries in the lanes every statistic is a
 *     vector (no horizontal max or sum); the score tile never leaves registers and the s x t
 *     score matrix never exists. Causal tiles stop at the diagonal and mask only the steps that
 *     cross it; causal items are dealt in pairs of a cheap and an expensive tile so that each
 *     thread's static share holds equal work.
 * Rows with no unmasked key give 0 (the reference's rule), or NaN with empty_nan. */
#include <math.h>

#include "tensorprog/gen_internal.h"

/* The flash tile for vectors of `lanes` f32: query rows per tile in the lanes, two vector
 * registers (32 with AVX-512, 16 with AVX2, 8 with 16-byte vectors), and keys per step, the
 * unrolled rows of the score tile: 8 x 2 = 16 accumulators of AVX-512's 32 registers, 6 x 2 = 12
 * of AVX2's 16 (with the two Qt vectors and K's broadcast: 15; measured on Zen 3, 12 heads s=512:
 * 32 x 8 spilled, 26.6 ms against 17.9 ms for 16 x 6; in a later run 16 x 6 13.5 ms, 16 x 4
 * 14.1, 8 x 12 17.5, 16 x 7 24.6). */
enum { ATTN_KT_MAX = 8 };
static void flash_tile(int lanes, int *qt, int *kt) {
  if (lanes <= 0) lanes = 16;
  *qt = 2 * (lanes >= 16 ? 16 : lanes >= 8 ? 8 : 4);
  *kt = lanes >= 16 ? ATTN_KT_MAX : 6;
}

/* ---- the row kernel ---------------------------------------------------------------------- */

/* The row kernel over (b, h, s, t) = d0..d3, statistics in sn (f32, f64 for f64):
 *   for w in 0..d0 * d1 * d2 parallel {   (i0, i1, i2) = w split over (d0, d1, d2)
 *     alloc P: Local[(d3,), sn]  alloc R: Local[(2,), sn]  R[0] = -inf
 *     for i3 in 0..d3 { alloc S: Local[(1,), sn]
 *       for r in 0..dq reduce { S[0] = S[0] + sn(Q[i0, i1, i2, r]) * sn(K[i0, kv, i3, r]) }
 *       let sc: sn = S[0] * sn(scale) | S[0] * rsqrt(sn(dq))
 *       [let sm: sn = select(Mk[..], sc, -inf) (bool mask) | sc + sn(Mk[..])]
 *       [let sk: sn = select(i3 > i2 + (d3 - d2), -inf, cur) (causal)]
 *       P[i3] = cur  R[0] = max(R[0], cur) }
 *     for j in 0..d3 vectorize { P[j] = select(R[0] == -inf, 0.0, exp(P[j] - R[0]))  R[1] = R[1] + P[j] }
 *     alloc A: Local[(dv,), sn]  let inv: sn = select(R[1] > 0.0, 1.0 / R[1], 0.0)
 *     for j2 in 0..d3 { let w: sn = P[j2] * inv
 *       for e in 0..dv vectorize { A[e] = A[e] + w * sn(V[i0, kv, j2, e]) } }
 *     for e2 in 0..dv vectorize { Y[i0, i1, i2, e2] = T(A[e2])   [empty_nan: select(R[1] > 0.0, A[e2], nan)] } }
 * kv = floordiv(i1, floordiv(d1, hk)). The mask's broadcast load indexes (i0, i1, i2, i3). */
typedef struct attn_prog {
  loom_tpb *b;
  loom_arena *a;
  loom_sym_ctx *cx;
  loom_dtype t, sn;                   /* the operands' dtype; the statistics' */
  const loom_sym_expr *d[4];          /* b, h, s, t */
  const loom_sym_expr *dq, *dv, *hk;  /* head dims, K/V heads */
  const loom_tp_buffer *Q, *K, *V, *Mk, *Y;
  const char *scale_text;             /* a literal, or NULL: 1/sqrt(dq) */
  bool causal;
  int mask_rank;                      /* -1: no mask */
  const loom_tp_bcast *mask_modes;    /* the mask's axes against (b, h, s, t) */
  loom_dtype mask_t;
  bool empty_nan;                     /* a row without a positive sum gives NaN, else 0 */
  bool bshd;                          /* Q, K, V, Y laid out (batch, seq, heads, dim) */
  bool self_rows;                     /* the caller's t is its s: the row kernel runs at t < 8 only */
  int qt, kt;                         /* the flash tile: query rows (lanes), keys per step (flash_tile) */
} attn_prog;

/* A load of Q, K, V or Y at (batch, head, row, column) — idx in that order, reordered to the
 * buffer's layout. */
static loom_tp_expr *attn_load(attn_prog *p, const loom_tp_buffer *buf, loom_tp_expr *const *idx) {
  loom_tp_expr *x[4] = {idx[0], p->bshd ? idx[2] : idx[1], p->bshd ? idx[1] : idx[2], idx[3]};
  return loom_tpb_load(p->b, buf, x);
}

/* The store of Y at (batch, head, row, column). */
static void attn_store(attn_prog *p, loom_tp_expr *const *idx, loom_tp_expr *v) {
  loom_tp_expr *x[4] = {idx[0], p->bshd ? idx[2] : idx[1], p->bshd ? idx[1] : idx[2], idx[3]};
  loom_tpb_store(p->b, p->Y, x, v);
}

/* The scale as an expression of the statistics' dtype. */
static loom_tp_expr *attn_scale(attn_prog *p) {
  loom_tpb *b = p->b;
  return p->scale_text ? loom_tp_cast(p->a, p->sn, loom_tpb_parse(b, p->scale_text, NULL, NULL, 0, NULL))
                       : loom_tp_op1(p->a, LOOM_TP_OP_RSQRT, loom_tp_cast(p->a, p->sn, loom_tpb_idx(b, p->dq)));
}

/* The K/V head of query head i1. */
static const loom_sym_expr *attn_kv(attn_prog *p, const loom_sym_expr *i1) {
  return loom_sym_floordiv(p->cx, i1, loom_sym_floordiv(p->cx, p->d[1], p->hk));
}

static void row_kernel(attn_prog *p) {
  loom_tpb *b = p->b;
  loom_arena *a = p->a;
  loom_sym_ctx *cx = p->cx;
  loom_dtype sn = p->sn;
  const loom_sym_expr **d = p->d;
  const loom_sym_expr *hs = loom_sym_mul(cx, d[1], d[2]);
  const loom_sym_expr *w = loom_tpb_for(b, "w", loom_sym_mul(cx, d[0], hs), LOOM_TP_LOOP_PARALLEL, false);
  const loom_sym_expr *i0 = loom_sym_floordiv(cx, w, hs), *i1 = loom_sym_floormod(cx, loom_sym_floordiv(cx, w, d[2]), d[1]);
  const loom_sym_expr *i2 = loom_sym_floormod(cx, w, d[2]), *kv = attn_kv(p, i1);
  loom_tp_expr *oi[4] = {loom_tpb_idx(b, i0), loom_tpb_idx(b, i1), loom_tpb_idx(b, i2), NULL};
  const loom_sym_expr *one = loom_sym_const(cx, 1), *two = loom_sym_const(cx, 2);
  loom_tp_expr *z0 = loom_tpb_cidx(b, 0), *z1 = loom_tpb_cidx(b, 1);
  const loom_tp_buffer *P = loom_tpb_alloc(b, "P", sn, 1, &d[3], LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *R = loom_tpb_alloc(b, "R", sn, 1, &two, LOOM_TP_SCOPE_LOCAL);
  loom_tpb_store(b, R, &z0, loom_tp_const_f(a, sn, -INFINITY));
  const loom_sym_expr *i3 = loom_tpb_for(b, "i3", d[3], LOOM_TP_LOOP_SERIAL, false);
  oi[3] = loom_tpb_idx(b, i3);
  const loom_tp_buffer *S = loom_tpb_alloc(b, "S", sn, 1, &one, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *r = loom_tpb_idx(b, loom_tpb_for(b, "r", p->dq, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *qi[4] = {oi[0], oi[1], oi[2], r}, *ki[4] = {oi[0], loom_tpb_idx(b, kv), oi[3], r};
  loom_tp_expr *qk = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, sn, attn_load(p, p->Q, qi)), loom_tp_cast(a, sn, attn_load(p, p->K, ki)));
  loom_tpb_store(b, S, &z0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, S, &z0), qk));
  loom_tpb_end(b);
  loom_tp_expr *cur = loom_tpb_let(b, "sc", loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(b, S, &z0), attn_scale(p)));
  if (p->Mk) {
    loom_tp_expr *m = loom_tpg_bcast_load(b, p->Mk, 4, p->mask_modes, oi);
    loom_tp_expr *v = p->mask_t == LOOM_DTYPE_BOOL ? loom_tp_select(a, m, cur, loom_tp_const_f(a, sn, -INFINITY))
                                                   : loom_tp_op2(a, LOOM_TP_OP_ADD, cur, loom_tp_cast(a, sn, m));
    cur = loom_tpb_let(b, "sm", v);
  }
  if (p->causal) {
    const loom_sym_expr *lim = loom_sym_add(cx, i2, loom_sym_sub(cx, d[3], d[2]));
    loom_tp_expr *future = loom_tpb_cmp(b, LOOM_TP_OP_GT, i3, lim);
    cur = loom_tpb_let(b, "sk", loom_tp_select(a, future, loom_tp_const_f(a, sn, -INFINITY), cur));
  }
  loom_tpb_store(b, P, &oi[3], loom_tpb_dup(b, cur));
  loom_tpb_store(b, R, &z0, loom_tp_op2(a, LOOM_TP_OP_MAX, loom_tpb_load(b, R, &z0), loom_tpb_dup(b, cur)));
  loom_tpb_end(b);
  /* the softmax over the keys: SIMD lanes, unless the keys are the queries' own rows (t == s < 8:
   * a 16-lane body and its interleaved copies would never run, only be compiled) */
  loom_tp_loop_kind jk = p->self_rows ? LOOM_TP_LOOP_SERIAL : LOOM_TP_LOOP_VECTORIZE;
  loom_tp_expr *j = loom_tpb_idx(b, loom_tpb_for(b, "j", d[3], jk, false));
  loom_tp_expr *empty = loom_tp_op2(a, LOOM_TP_OP_EQ, loom_tpb_load(b, R, &z0), loom_tp_const_f(a, sn, -INFINITY));
  loom_tp_expr *ex = loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(b, P, &j), loom_tpb_load(b, R, &z0)));
  loom_tpb_store(b, P, &j, loom_tp_select(a, empty, loom_tp_const_f(a, sn, 0.0), ex));
  loom_tpb_store(b, R, &z1, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, R, &z1), loom_tpb_load(b, P, &j)));
  loom_tpb_end(b);
  /* the weighted sum of V's rows: each row of V read once, contiguously, for the whole output
   * row (A, vectorised over e), the normalisation a multiply by 1 / sum */
  const loom_tp_buffer *A = loom_tpb_alloc(b, "A", sn, 1, &p->dv, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *some = loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_load(b, R, &z1), loom_tp_const_f(a, sn, 0.0));
  loom_tp_expr *inv = loom_tpb_let(b, "inv", loom_tp_select(a, some, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_const_f(a, sn, 1.0),
                                                                                       loom_tpb_load(b, R, &z1)),
                                                             loom_tp_const_f(a, sn, p->empty_nan ? NAN : 0.0)));
  loom_tp_expr *j2 = loom_tpb_idx(b, loom_tpb_for(b, "j2", d[3], LOOM_TP_LOOP_SERIAL, false));
  loom_tp_expr *wt = loom_tpb_let(b, "wt", loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(b, P, &j2), loom_tpb_dup(b, inv)));
  loom_tp_expr *e = loom_tpb_idx(b, loom_tpb_for(b, "e", p->dv, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *vi[4] = {oi[0], loom_tpb_idx(b, kv), j2, e};
  loom_tp_expr *wv = loom_tp_op2(a, LOOM_TP_OP_MUL, wt, loom_tp_cast(a, sn, attn_load(p, p->V, vi)));
  loom_tpb_store(b, A, &e, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, A, &e), wv));
  loom_tpb_end_n(b, 2);
  loom_tp_expr *e2 = loom_tpb_idx(b, loom_tpb_for(b, "e2", p->dv, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *yi[4] = {oi[0], oi[1], oi[2], e2}, *acc = loom_tpb_load(b, A, &e2);
  if (p->empty_nan) /* also with no key at all (no weight carries inv's NaN) */
    acc = loom_tp_select(a, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_load(b, R, &z1), loom_tp_const_f(a, sn, 0.0)), acc,
                         loom_tp_const_f(a, sn, NAN));
  attn_store(p, yi, sn == p->t ? acc : loom_tp_cast(a, p->t, acc));
  loom_tpb_end_n(b, 2);
}

/* ---- the flash kernel -------------------------------------------------------------------- */

/* One flash work item's names (attn_prog's buffers plus the item's locals and indices). */
typedef struct flash_item {
  attn_prog *p;
  const loom_sym_expr *i0, *i1, *kv;  /* batch, query head, K/V head */
  const loom_sym_expr *q0;            /* the tile's first query row */
  const loom_tp_buffer *Qt;           /* (dq, QT): the tile's queries transposed, scaled */
  const loom_tp_buffer *Ot;           /* (dv, QT): the output accumulators, transposed */
  const loom_tp_buffer *M, *L;        /* (QT): running max and sum of each query */
  const loom_tp_buffer *Al, *Ms;      /* (QT): a step's rescale factor and (finite) max */
  bool mask_lanes;                    /* the mask varies along the query axis: packed per step */
} flash_item;

/* The mask operand at (query q, key j), q and j index expressions (copied). */
static loom_tp_expr *flash_mask_load(flash_item *it, loom_tp_expr *q, loom_tp_expr *j) {
  attn_prog *p = it->p;
  loom_tpb *b = p->b;
  loom_tp_expr *oi[4] = {loom_tpb_idx(b, it->i0), loom_tpb_idx(b, it->i1), q, j};
  return loom_tpg_bcast_load(b, p->Mk, 4, p->mask_modes, oi);
}

/* One step of KT keys starting at key kb * KT (kb a symbolic expression). Keys past t are clamped
 * for the loads; `edge` (a bool index expression, or NULL for never) says whether the step holds
 * keys past t or, causal, past some row's diagonal: only then the masks run. One body serves
 * every step (half the code to compile of a copy per kind). */
static void flash_step(flash_item *it, const loom_sym_expr *kb, loom_tp_expr *edge_cond) {
  attn_prog *p = it->p;
  loom_tpb *b = p->b;
  loom_arena *a = p->a;
  loom_sym_ctx *cx = p->cx;
  const loom_sym_expr *j0 = loom_sym_mul(cx, kb, loom_sym_const(cx, p->kt)), *t1 = loom_sym_sub(cx, p->d[3], loom_sym_const(cx, 1));
  char nm[16];
  const loom_sym_expr *tile[2] = {loom_sym_const(cx, p->kt), loom_sym_const(cx, p->qt)};
  const loom_tp_buffer *S = loom_tpb_alloc(b, "S", LOOM_DTYPE_F32, 2, tile, LOOM_TP_SCOPE_LOCAL);
  /* the key of unrolled row jj (clamped into K / V: the last step may pass t) */
  const loom_sym_expr *keys[ATTN_KT_MAX], *at[ATTN_KT_MAX];
  for (int jj = 0; jj < p->kt; jj++) {
    keys[jj] = loom_sym_add(cx, j0, loom_sym_const(cx, jj));
    at[jj] = loom_sym_min(cx, keys[jj], t1);
  }
  const loom_tp_buffer *Mt = NULL;
  if (p->Mk && it->mask_lanes) { /* the mask's (KT, QT) block, for the lanes to read contiguously */
    Mt = loom_tpb_alloc(b, "Mt", LOOM_DTYPE_F32, 2, tile, LOOM_TP_SCOPE_LOCAL);
    const loom_sym_expr *mi = loom_tpb_for(b, "mi", loom_sym_const(cx, p->qt), LOOM_TP_LOOP_SERIAL, false);
    loom_tp_expr *q = loom_tpb_idx(b, loom_sym_min(cx, loom_sym_add(cx, it->q0, mi), loom_sym_sub(cx, p->d[2], loom_sym_const(cx, 1))));
    for (int jj = 0; jj < p->kt; jj++) {
      loom_tp_expr *mx[2] = {loom_tpb_cidx(b, jj), loom_tpb_idx(b, mi)};
      loom_tpb_store(b, Mt, mx, loom_tp_cast(a, LOOM_DTYPE_F32, flash_mask_load(it, loom_tpb_dup(b, q), loom_tpb_idx(b, at[jj]))));
    }
    loom_tpb_end(b);
  }
  /* S = K[step] . Qt: per r, KT broadcasts of K and two vector loads of Qt for 2*KT FMAs */
  const loom_sym_expr *r = loom_tpb_for(b, "r", p->dq, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *jj = loom_tpb_for(b, "jj", loom_sym_const(cx, p->kt), LOOM_TP_LOOP_UNROLL, false);
  /* the unrolled row's key: at[jj] is a function of the constant jj, written with jj */
  const loom_sym_expr *kj = loom_sym_min(cx, loom_sym_add(cx, j0, jj), t1);
  loom_tp_expr *ki[4] = {loom_tpb_idx(b, it->i0), loom_tpb_idx(b, it->kv), loom_tpb_idx(b, kj), loom_tpb_idx(b, r)};
  loom_tp_expr *kr = loom_tpb_let(b, "kr", attn_load(p, p->K, ki));
  const loom_sym_expr *ii = loom_tpb_for(b, "ii", loom_sym_const(cx, p->qt), LOOM_TP_LOOP_VECTORIZE, false);
  loom_tp_expr *si[2] = {loom_tpb_idx(b, jj), loom_tpb_idx(b, ii)}, *qi[2] = {loom_tpb_idx(b, r), loom_tpb_idx(b, ii)};
  loom_tpb_store(b, S, si, loom_tp_op3(a, LOOM_TP_OP_FMA, loom_tpb_load(b, it->Qt, qi), kr, loom_tpb_load(b, S, si)));
  loom_tpb_end_n(b, 3);
  /* masks: the operand's (every step), the key tail and the causal diagonal (edge steps) */
  for (int pass = 0; pass < 2; pass++) {
    bool user = pass == 0, tail = pass == 1;
    if (user && !p->Mk) continue;
    if (tail && !edge_cond) continue;
    if (tail) loom_tpb_if(b, edge_cond);
    const loom_sym_expr *jm = loom_tpb_for(b, user ? "jm" : "jt", loom_sym_const(cx, p->kt), LOOM_TP_LOOP_UNROLL, false);
    const loom_sym_expr *im = loom_tpb_for(b, user ? "im" : "it", loom_sym_const(cx, p->qt), LOOM_TP_LOOP_VECTORIZE, false);
    const loom_sym_expr *key = loom_sym_add(cx, j0, jm);
    loom_tp_expr *mx[2] = {loom_tpb_idx(b, jm), loom_tpb_idx(b, im)};
    loom_tp_expr *v = loom_tpb_load(b, S, mx), *ninf = loom_tp_const_f(a, LOOM_DTYPE_F32, -INFINITY);
    if (user) {
      loom_tp_expr *m = Mt ? loom_tpb_load(b, Mt, mx)
                           : flash_mask_load(it, loom_tpb_cidx(b, 0), loom_tpb_idx(b, loom_sym_min(cx, key, t1)));
      /* packed: f32 (a bool as 1 / 0); in place: the operand's own dtype (a bool selects) */
      if (p->mask_t == LOOM_DTYPE_BOOL)
        v = loom_tp_select(a, Mt ? loom_tp_op2(a, LOOM_TP_OP_NE, m, loom_tp_const_f(a, LOOM_DTYPE_F32, 0.0)) : m, v, ninf);
      else
        v = loom_tp_op2(a, LOOM_TP_OP_ADD, v, m);
    }
    if (tail && p->causal) {
      const loom_sym_expr *lim = loom_sym_add(cx, loom_sym_add(cx, it->q0, im), loom_sym_sub(cx, p->d[3], p->d[2]));
      v = loom_tp_select(a, loom_tpb_cmp(b, LOOM_TP_OP_GT, key, lim), loom_tpb_dup(b, ninf), v);
    }
    if (tail) v = loom_tp_select(a, loom_tpb_cmp(b, LOOM_TP_OP_GT, key, t1), loom_tpb_dup(b, ninf), v);
    loom_tpb_store(b, S, mx, v);
    loom_tpb_end_n(b, tail ? 3 : 2);
  }
  /* the new running max (a select, not max(): one vmaxps), the rescale of what came before */
  loom_tp_expr *ia = loom_tpb_idx(b, loom_tpb_for(b, "ia", loom_sym_const(cx, p->qt), LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *mn = loom_tpb_load(b, it->M, &ia);
  for (int k = 0; k < p->kt; k++) {
    loom_tp_expr *sx2[2] = {loom_tpb_cidx(b, k), ia};
    loom_tp_expr *sk = loom_tpb_load(b, S, sx2);
    snprintf(nm, sizeof nm, "m%d", k);
    mn = loom_tpb_let(b, nm, loom_tp_select(a, loom_tp_op2(a, LOOM_TP_OP_GT, sk, mn), loom_tpb_dup(b, sk), loom_tpb_dup(b, mn)));
  }
  loom_tp_expr *fin = loom_tp_select(a, loom_tp_op2(a, LOOM_TP_OP_EQ, mn, loom_tp_const_f(a, LOOM_DTYPE_F32, -INFINITY)),
                                     loom_tp_const_f(a, LOOM_DTYPE_F32, 0.0), loom_tpb_dup(b, mn));
  loom_tp_expr *ms = loom_tpb_let(b, "ms", fin);
  loom_tpb_store(b, it->Al, &ia, loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(b, it->M, &ia), ms)));
  loom_tpb_store(b, it->Ms, &ia, loom_tpb_dup(b, ms));
  loom_tpb_store(b, it->M, &ia, loom_tpb_dup(b, mn));
  loom_tpb_end(b);
  /* P = exp(S - m') in place */
  const loom_sym_expr *jp = loom_tpb_for(b, "jp", loom_sym_const(cx, p->kt), LOOM_TP_LOOP_UNROLL, false);
  loom_tp_expr *ip = loom_tpb_idx(b, loom_tpb_for(b, "ip", loom_sym_const(cx, p->qt), LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *px[2] = {loom_tpb_idx(b, jp), ip};
  loom_tpb_store(b, S, px, loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(b, S, px), loom_tpb_load(b, it->Ms, &ip))));
  loom_tpb_end_n(b, 2);
  /* l = l * a + sum_j P[j] */
  loom_tp_expr *il = loom_tpb_idx(b, loom_tpb_for(b, "il", loom_sym_const(cx, p->qt), LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *sum = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(b, it->L, &il), loom_tpb_load(b, it->Al, &il));
  for (int k = 0; k < p->kt; k++) {
    loom_tp_expr *sx2[2] = {loom_tpb_cidx(b, k), il};
    sum = loom_tp_op2(a, LOOM_TP_OP_ADD, sum, loom_tpb_load(b, S, sx2));
  }
  loom_tpb_store(b, it->L, &il, sum);
  loom_tpb_end(b);
  /* Ot[e] = Ot[e] * a + sum_j P[j] * V[key j, e]: P stays in registers across e */
  const loom_sym_expr *e = loom_tpb_for(b, "e", p->dv, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *io = loom_tpb_idx(b, loom_tpb_for(b, "io", loom_sym_const(cx, p->qt), LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *ox[2] = {loom_tpb_idx(b, e), io};
  loom_tp_expr *acc = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(b, it->Ot, ox), loom_tpb_load(b, it->Al, &io));
  for (int k = 0; k < p->kt; k++) {
    loom_tp_expr *sx2[2] = {loom_tpb_cidx(b, k), io};
    loom_tp_expr *vi[4] = {loom_tpb_idx(b, it->i0), loom_tpb_idx(b, it->kv), loom_tpb_idx(b, at[k]), loom_tpb_idx(b, e)};
    acc = loom_tp_op3(a, LOOM_TP_OP_FMA, loom_tpb_load(b, S, sx2), attn_load(p, p->V, vi), acc);
  }
  loom_tpb_store(b, it->Ot, ox, acc);
  loom_tpb_end_n(b, 2);
}

/* The flash kernel (f32; QT query rows per tile, KT keys per step (flash_tile: 32 x 8 with
 * AVX-512); nq = ceil(d2 / QT)):
 *   for w in 0..d0 * d1 * nq parallel {   (i0, i1, qo) = w split; causal: qo dealt in pairs
 *     let q0 = qo * QT   alloc Qt: Local[(dq, QT), f32]  Ot: Local[(dv, QT), f32]  M, L, Al, Ms: Local[(QT,), f32]
 *     for ii in 0..QT vectorize { M[ii] = -inf }
 *     for qr in 0..dq { for qi in 0..QT vectorize { Qt[qr, qi] = Q[i0, i1, min(q0 + qi, d2 - 1), qr] * scale } }
 *     for kb in 0..nsteps { step(kb, edge = kb >= nfull) }   nfull: the steps no row of the tile masks
 *     for oi in 0..min(QT, d2 - q0) { let inv = select(L[oi] > 0, 1 / L[oi], 0 | nan)
 *       for oe in 0..dv vectorize { Y[i0, i1, q0 + oi, oe] = Ot[oe, oi] * inv } } }
 * step (flash_step), j0 = kb * KT, keys clamped to d3 - 1 for the loads:
 *     alloc S: Local[(KT, QT), f32]
 *     for r in 0..dq { for jj in 0..KT unroll { let kr = K[i0, kv, min(j0 + jj, d3 - 1), r]
 *       for ii in 0..QT vectorize { S[jj, ii] = fma(Qt[r, ii], kr, S[jj, ii]) } } }
 *     [for jm unroll { for im vectorize { S[jm, im] = S[jm, im] + mask | select(mask, S, -inf) } }]
 *     if kb >= nfull { for jt unroll { for it vectorize {
 *       S[jt, it] = select(key > d3 - 1, -inf, [select(key > q0 + it + d3 - d2, -inf,] S[jt, it]) } } }
 *     for ia vectorize { let m0..m7 = running max of M[ia], S[0..KT-1, ia]  let ms = select(m7 == -inf, 0, m7)
 *       Al[ia] = exp(M[ia] - ms)  Ms[ia] = ms  M[ia] = m7 }
 *     for jp unroll { for ip vectorize { S[jp, ip] = exp(S[jp, ip] - Ms[ip]) } }
 *     for il vectorize { L[il] = L[il] * Al[il] + S[0, il] + .. + S[KT-1, il] }
 *     for e in 0..dv { for io vectorize { Ot[e, io] = fma(S[KT-1, io], V[.., j0+KT-1, e], .. fma(S[0, io], V[.., j0, e], Ot[e, io] * Al[io])) } }
 * Causal, off = d3 - d2: row q sees keys j <= q + off; the tile's last row min(q0 + QT - 1, d2 - 1)
 * bounds the steps, its first row q0 the steps no row masks. */
static void flash_kernel(attn_prog *p) {
  loom_tpb *b = p->b;
  loom_arena *a = p->a;
  loom_sym_ctx *cx = p->cx;
  const loom_sym_expr **d = p->d;
  const loom_sym_expr *QT = loom_sym_const(cx, p->qt), *KT = loom_sym_const(cx, p->kt), *zero = loom_sym_const(cx, 0);
  const loom_sym_expr *one = loom_sym_const(cx, 1);
  const loom_sym_expr *nq = loom_sym_ceildiv(cx, d[2], QT);
  const loom_sym_expr *w = loom_tpb_for(b, "w", loom_sym_mul(cx, loom_sym_mul(cx, d[0], d[1]), nq), LOOM_TP_LOOP_PARALLEL, false);
  flash_item it = {.p = p};
  const loom_sym_expr *bh = loom_sym_floordiv(cx, w, nq), *qw = loom_sym_floormod(cx, w, nq);
  it.i0 = loom_sym_floordiv(cx, bh, d[1]);
  it.i1 = loom_sym_floormod(cx, bh, d[1]);
  it.kv = attn_kv(p, it.i1);
  const loom_sym_expr *qo = qw;
  if (p->causal) { /* 0, nq-1, 1, nq-2, ..: every run of items holds as much work as its length says */
    const loom_sym_expr *half = loom_sym_floordiv(cx, qw, loom_sym_const(cx, 2));
    const loom_sym_expr *even = loom_sym_cmp(cx, LOOM_SYM_EQ, loom_sym_floormod(cx, qw, loom_sym_const(cx, 2)), zero);
    qo = loom_sym_select(cx, even, half, loom_sym_sub(cx, loom_sym_sub(cx, nq, one), half));
  }
  it.q0 = loom_sym_mul(cx, qo, QT);
  const loom_sym_expr *qd[2] = {p->dq, QT}, *od[2] = {p->dv, QT};
  it.Qt = loom_tpb_alloc(b, "Qt", LOOM_DTYPE_F32, 2, qd, LOOM_TP_SCOPE_LOCAL);
  it.Ot = loom_tpb_alloc(b, "Ot", LOOM_DTYPE_F32, 2, od, LOOM_TP_SCOPE_LOCAL);
  it.M = loom_tpb_local(b, "M", LOOM_DTYPE_F32, p->qt);
  it.L = loom_tpb_local(b, "L", LOOM_DTYPE_F32, p->qt);
  it.Al = loom_tpb_local(b, "Al", LOOM_DTYPE_F32, p->qt);
  it.Ms = loom_tpb_local(b, "Ms", LOOM_DTYPE_F32, p->qt);
  it.mask_lanes = p->Mk && p->mask_rank >= 2 && p->mask_modes[p->mask_rank - 2] != LOOM_TP_BCAST_ONE;
  loom_tp_expr *mi = loom_tpb_idx(b, loom_tpb_for(b, "ii", QT, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tpb_store(b, it.M, &mi, loom_tp_const_f(a, LOOM_DTYPE_F32, -INFINITY));
  loom_tpb_end(b);
  /* the tile's queries, transposed and scaled (rows past d2 repeat the last row): gathered
   * along the queries, stored along Qt's rows (a gather is about twice a scatter's speed) */
  const loom_sym_expr *d21 = loom_sym_sub(cx, d[2], one);
  const loom_sym_expr *qr = loom_tpb_for(b, "qr", p->dq, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *qi = loom_tpb_for(b, "qi", QT, LOOM_TP_LOOP_VECTORIZE, false);
  loom_tp_expr *qx[4] = {loom_tpb_idx(b, it.i0), loom_tpb_idx(b, it.i1), loom_tpb_idx(b, loom_sym_min(cx, loom_sym_add(cx, it.q0, qi), d21)),
                         loom_tpb_idx(b, qr)};
  loom_tp_expr *tx[2] = {loom_tpb_idx(b, qr), loom_tpb_idx(b, qi)};
  loom_tpb_store(b, it.Qt, tx, loom_tp_op2(a, LOOM_TP_OP_MUL, attn_load(p, p->Q, qx), attn_scale(p)));
  loom_tpb_end_n(b, 2);
  /* the steps up to the last key any row sees; the first nfull no row of the tile masks */
  const loom_sym_expr *nfull, *nsteps;
  if (p->causal) {
    const loom_sym_expr *off = loom_sym_sub(cx, d[3], d[2]);
    const loom_sym_expr *last = loom_sym_min(cx, loom_sym_add(cx, it.q0, loom_sym_const(cx, p->qt - 1)), d21);
    const loom_sym_expr *klim = loom_sym_max(cx, loom_sym_min(cx, d[3], loom_sym_add(cx, loom_sym_add(cx, last, off), one)), zero);
    const loom_sym_expr *kfull = loom_sym_max(cx, loom_sym_min(cx, d[3], loom_sym_add(cx, loom_sym_add(cx, it.q0, off), one)), zero);
    nsteps = loom_sym_ceildiv(cx, klim, KT);
    nfull = loom_sym_floordiv(cx, kfull, KT);
  } else {
    nsteps = loom_sym_ceildiv(cx, d[3], KT);
    nfull = loom_sym_floordiv(cx, d[3], KT);
  }
  const loom_sym_expr *kb = loom_tpb_for(b, "kb", nsteps, LOOM_TP_LOOP_SERIAL, false);
  flash_step(&it, kb, loom_tpb_cmp(b, LOOM_TP_OP_GE, kb, nfull));
  loom_tpb_end(b);
  /* Y = Ot^T / l */
  const loom_sym_expr *oi = loom_tpb_for(b, "oi", loom_sym_min(cx, QT, loom_sym_sub(cx, d[2], it.q0)), LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *ol = loom_tpb_idx(b, oi);
  loom_tp_expr *some = loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_load(b, it.L, &ol), loom_tp_const_f(a, LOOM_DTYPE_F32, 0.0));
  loom_tp_expr *rec = loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_const_f(a, LOOM_DTYPE_F32, 1.0), loom_tpb_load(b, it.L, &ol));
  loom_tp_expr *inv = loom_tpb_let(b, "inv", loom_tp_select(a, some, rec, loom_tp_const_f(a, LOOM_DTYPE_F32, p->empty_nan ? NAN : 0.0)));
  const loom_sym_expr *oe = loom_tpb_for(b, "oe", p->dv, LOOM_TP_LOOP_VECTORIZE, false);
  loom_tp_expr *yx[4] = {loom_tpb_idx(b, it.i0), loom_tpb_idx(b, it.i1), loom_tpb_idx(b, loom_sym_add(cx, it.q0, oi)), loom_tpb_idx(b, oe)};
  loom_tp_expr *ox[2] = {loom_tpb_idx(b, oe), loom_tpb_idx(b, oi)};
  attn_store(p, yx, loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(b, it.Ot, ox), inv));
  loom_tpb_end_n(b, 3);
}

/* ---- the program ------------------------------------------------------------------------- */

loom_status loom_tp_gen_attention(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const char *scale_text,
                                  bool causal, int mask_rank, const loom_tp_bcast *mask_modes, loom_dtype mask_t,
                                  bool empty_nan, bool bshd, bool self_rows, int64_t head_dim, int64_t value_dim,
                                  int lanes, loom_tp_func **result) {
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "attention of %s is not supported", loom_dtype_name(t));
  if (mask_rank > 4) return LOOM_ERROR(INVALID_ARGUMENT, "attention mask of rank %d", mask_rank);
  if (head_dim < 0 || value_dim < 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "attention: head dims %lld / %lld", (long long)head_dim, (long long)value_dim);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  attn_prog p = {.b = &b, .a = a, .cx = cx, .t = t, .sn = loom_tpg_stat_type(t), .scale_text = scale_text,
                 .causal = causal, .mask_rank = mask_rank, .mask_modes = mask_modes, .mask_t = mask_t,
                 .empty_nan = empty_nan, .bshd = bshd, .self_rows = self_rows};
  flash_tile(lanes, &p.qt, &p.kt);
  loom_tpg_dims_d(&b, 3, p.d);
  p.dq = head_dim ? loom_sym_const(cx, head_dim) : loom_tpb_shape_sym(&b, "dq");
  int h = bshd ? 2 : 1, r = 3 - h; /* the axes of heads and rows */
  const loom_sym_expr *qd[4] = {p.d[0], NULL, NULL, p.dq};
  qd[h] = p.d[1], qd[r] = p.d[2];
  p.Q = loom_tpb_buffer(&b, "Q", t, 4, qd);
  p.hk = loom_tpb_shape_sym(&b, "hk");
  p.d[3] = loom_tpb_shape_sym(&b, "d3");
  const loom_sym_expr *kd[4] = {p.d[0], NULL, NULL, p.dq};
  kd[h] = p.hk, kd[r] = p.d[3];
  p.K = loom_tpb_buffer(&b, "K", t, 4, kd);
  p.dv = value_dim ? loom_sym_const(cx, value_dim) : loom_tpb_shape_sym(&b, "dv");
  const loom_sym_expr *vd[4] = {p.d[0], NULL, NULL, p.dv};
  vd[h] = p.hk, vd[r] = p.d[3];
  p.V = loom_tpb_buffer(&b, "V", t, 4, vd);
  p.Mk = mask_rank >= 0 ? loom_tpg_bcast_buffer(&b, "Mk", "m", mask_rank, 4, mask_modes, mask_t) : NULL;
  const loom_sym_expr *yd[4] = {p.d[0], NULL, NULL, p.dv};
  yd[h] = p.d[1], yd[r] = p.d[2];
  p.Y = loom_tpb_buffer(&b, "Y", t, 4, yd);
  bool flash = t == LOOM_DTYPE_F32 && (mask_rank < 0 || mask_t == LOOM_DTYPE_BOOL || mask_t == LOOM_DTYPE_F32);
  if (flash) {
    loom_tpb_if(&b, loom_tpb_cmp(&b, LOOM_TP_OP_LT, p.d[2], loom_sym_const(cx, LOOM_TP_ATTN_MIN_ROWS)));
    row_kernel(&p);
    loom_tpb_else(&b);
    flash_kernel(&p);
    loom_tpb_end(&b);
  } else {
    row_kernel(&p);
  }
  return loom_tpb_finish(&b, result);
}
