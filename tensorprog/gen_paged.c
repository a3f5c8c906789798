/* gen_paged.c — the generator of paged attention (graph op `paged_attention`, graph/op_paged.c):
 * attention of a ragged batch of query tokens over a key/value cache kept in fixed-size pages
 * that a block table per sequence names, plus the batch's own new keys and values. It is what
 * `loom serve`'s models call (docs/serve.md). Built directly as IR (tp_build.h). */
#include <math.h>

#include "tensorprog/gen_internal.h"

/* Cached keys scored together: a tile of a page (a constant, so its scores live on the stack). */
#define KT 16

/* What one key's update needs: the builder's operands shared by the cached and the step's keys. */
typedef struct paged_key {
  loom_tpb *b;                         /* the builder */
  loom_arena *a;                       /* its arena */
  loom_dtype sn;                       /* the dtype of scores and sums */
  const loom_tp_buffer *Q, *A, *R;     /* the queries, the row's accumulators (h, dv), R (h, 2) = (max, sum) a head */
  loom_tp_expr *i0, *i1, *kv;          /* the token, its head, that head's key/value head */
  const loom_sym_expr *D, *DV;         /* key and value widths */
  const loom_tp_expr *scale;           /* the score scale (copied at each use) */
} paged_key;

/* R[i1, j] of the current head, and R[i1, j] = v. */
static loom_tp_expr *r_at(paged_key *k, int j) {
  loom_tp_expr *idx[2] = {k->i1, loom_tpb_cidx(k->b, j)};
  return loom_tpb_load(k->b, k->R, idx);
}

static void r_set(paged_key *k, int j, loom_tp_expr *v) {
  loom_tp_expr *idx[2] = {k->i1, loom_tpb_cidx(k->b, j)};
  loom_tpb_store(k->b, k->R, idx, v);
}

/* A[i1, e] of the current head. */
static loom_tp_expr *a_at(paged_key *k, loom_tp_expr *e) {
  loom_tp_expr *idx[2] = {k->i1, e};
  return loom_tpb_load(k->b, k->A, idx);
}

static void a_set(paged_key *k, loom_tp_expr *e, loom_tp_expr *v) {
  loom_tp_expr *idx[2] = {k->i1, e};
  loom_tpb_store(k->b, k->A, idx, v);
}

/* Opens `for <var> in 0..h` over the heads and points k at it (its head and key/value head). */
static void for_heads(paged_key *k, const char *var, const loom_sym_expr *H, const loom_sym_expr *HK) {
  loom_sym_ctx *cx = k->b->cx;
  const loom_sym_expr *i1 = loom_tpb_for(k->b, var, H, LOOM_TP_LOOP_SERIAL, false);
  k->i1 = loom_tpb_idx(k->b, i1);
  k->kv = loom_tpb_idx(k->b, i1 ? loom_sym_floordiv(cx, i1, loom_sym_floordiv(cx, H, HK)) : NULL);
}

/* One key of the row, online softmax: its score s (a dot product over r, a reduce loop, which
 * the CPU codegen vectorises), then when s is a new maximum the sum and the accumulator are
 * rescaled by exp(max - s) (rare after the first keys), then the key's weight exp(s - max)
 * is added to the sum and its value row, times the weight, to A. kpre / vpre are the indices
 * of K / V before the last axis (nk / nv of them); `tag` makes the names distinct. */
static void online_key(paged_key *k, const loom_tp_buffer *K, loom_tp_expr *const *kpre, int nk, const loom_tp_buffer *V,
                       loom_tp_expr *const *vpre, int nv, const char *tag) {
  loom_tpb *b = k->b;
  loom_arena *a = k->a;
  loom_dtype sn = k->sn;
  char name[16];
  const loom_sym_expr *one = loom_sym_const(b->cx, 1);
  snprintf(name, sizeof name, "S%s", tag);
  const loom_tp_buffer *S = loom_tpb_alloc(b, name, sn, 1, &one, LOOM_TP_SCOPE_LOCAL);
  snprintf(name, sizeof name, "r%s", tag);
  loom_tp_expr *r = loom_tpb_idx(b, loom_tpb_for(b, name, k->D, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *qi[3] = {k->i0, k->i1, r}, *ki[4];
  for (int i = 0; i < nk; i++) ki[i] = kpre[i];
  ki[nk] = r;
  loom_tp_expr *qk = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, sn, loom_tpb_load(b, k->Q, qi)), loom_tp_cast(a, sn, loom_tpb_load(b, K, ki)));
  loom_tpb_store_at(b, S, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_at(b, S, 0), qk));
  loom_tpb_end(b);
  snprintf(name, sizeof name, "sc%s", tag);
  loom_tp_expr *sc = loom_tpb_let(b, name, loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_at(b, S, 0), loom_tpb_dup(b, k->scale)));
  /* a new maximum: what is summed so far is rescaled to it */
  loom_tpb_if(b, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_dup(b, sc), r_at(k, 0)));
  snprintf(name, sizeof name, "cr%s", tag);
  loom_tp_expr *cr = loom_tpb_let(b, name, loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, r_at(k, 0), loom_tpb_dup(b, sc))));
  r_set(k, 1, loom_tp_op2(a, LOOM_TP_OP_MUL, r_at(k, 1), loom_tpb_dup(b, cr)));
  snprintf(name, sizeof name, "ea%s", tag);
  loom_tp_expr *ea = loom_tpb_idx(b, loom_tpb_for(b, name, k->DV, LOOM_TP_LOOP_VECTORIZE, false));
  a_set(k, ea, loom_tp_op2(a, LOOM_TP_OP_MUL, a_at(k, ea), cr));
  loom_tpb_end(b);
  r_set(k, 0, loom_tpb_dup(b, sc));
  loom_tpb_end(b);
  /* the weight: 0 while every score is -inf (exp(-inf - -inf) would be NaN) */
  loom_tp_expr *none = loom_tp_op2(a, LOOM_TP_OP_EQ, r_at(k, 0), loom_tp_const_f(a, sn, -INFINITY));
  loom_tp_expr *ex = loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, sc, r_at(k, 0)));
  snprintf(name, sizeof name, "w%s", tag);
  loom_tp_expr *w = loom_tpb_let(b, name, loom_tp_select(a, none, loom_tp_const_f(a, sn, 0.0), ex));
  r_set(k, 1, loom_tp_op2(a, LOOM_TP_OP_ADD, r_at(k, 1), loom_tpb_dup(b, w)));
  snprintf(name, sizeof name, "e%s", tag);
  loom_tp_expr *e = loom_tpb_idx(b, loom_tpb_for(b, name, k->DV, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *vi[4];
  for (int i = 0; i < nv; i++) vi[i] = vpre[i];
  vi[nv] = e;
  loom_tp_expr *wv = loom_tp_op2(a, LOOM_TP_OP_MUL, w, loom_tp_cast(a, sn, loom_tpb_load(b, V, vi)));
  a_set(k, e, loom_tp_op2(a, LOOM_TP_OP_ADD, a_at(k, e), wv));
  loom_tpb_end(b);
}

/* Paged attention. Buffers: Q (t, h, d), Kn (t, hk, d), Vn (t, hk, dv) (the step's tokens),
 * Kc (n, pg, hk, d), Vc (n, pg, hk, dv) (the paged cache: n pages of pg slots, of dtype ct: t,
 * or f16 / bf16, each element widened to sn as it is read: half the bytes a key), BT (b, m) i64
 * (sequence s's page of its key j is BT[s, floordiv(j, pg)], slot floormod(j, pg)), CTX (b,)
 * i64 (keys of sequence s already in the cache), SEQ (t,) and POS (t,) i64 (each token's
 * sequence and absolute position), Y (t, h, dv). Token i of sequence s = SEQ[i] with
 * nw = POS[i] - CTX[s] attends to the cached keys 0 .. CTX[s] - 1 and to the step's tokens
 * i - nw .. i (causal within the chunk). Cached keys whose page is outside [0, n), step
 * tokens before 0 and tokens whose sequence is outside [0, b) are absent (a row with no key
 * gives 0), so no value of the integer operands reads outside a buffer.
 *
 * One pass, online softmax (scores in sn: f32, f64 for f64): each head's running maximum
 * R[h, 0], running sum R[h, 1] and unnormalised accumulator A[h, :] are updated as keys come.
 * The cached keys are walked page by page: a page wholly past the sequence's context costs one
 * comparison, so a row's work is proportional to its own context, not to the batch's longest
 * (m*pg). A page is scored in tiles of KT slots into P (h, KT): the dot products are
 * independent (they overlap in the core), a tile's maximum rescales what is summed only when
 * it is a new maximum, and the exponentials are one vectorised loop. Within a tile the slots
 * are outer and the heads inner, so the cache is read in the order it lies — a page holds
 * (slot, kv head, d): with the heads outer each head read 256-byte pieces 3 KB apart (GPT-2's
 * 12 heads), at ~10 GB/s; in order the same step's attention took 1.04 against 1.59 ms a
 * layer (16 decodes, GPT-2 small, 1 thread) — and the per-head state stays in L1:
 *   for i0 in 0..t parallel { let sq: i64 = SEQ[i0]
 *     alloc A: Local[(h, dv), sn]  alloc R: Local[(h, 2), sn]  alloc P: Local[(h, KT), sn]
 *     for h0 in 0..h { R[h0, 0] = -inf }
 *     if sq >= 0 { if sq < b { let c: i64 = CTX[sq]  let nw: i64 = POS[i0] - c
 *       for p in 0..m { if p*pg < c { let blk: i64 = BT[sq, p]  if blk >= 0 { if blk < n {
 *         for s0 in 0..floordiv(pg + KT-1, KT) {
 *           for s1 in 0..KT { for i1 in 0..h { P[i1, s1] = -inf }
 *             if KT*s0 + s1 < pg { if p*pg + KT*s0 + s1 < c { for i2 in 0..h { alloc S: Local[(1,), sn]
 *               for r in 0..d reduce { S[0] = S[0] + sn(Q[i0, i2, r]) * sn(Kc[blk, KT*s0 + s1, kv(i2), r]) }
 *               P[i2, s1] = S[0] * scale } } } }
 *           for i3 in 0..h { alloc TM: Local[(1,), sn]  TM[0] = R[i3, 0]
 *             for s2 in 0..KT reduce { TM[0] = max(TM[0], P[i3, s2]) }
 *             if TM[0] > R[i3, 0] { let cr: sn = exp(R[i3, 0] - TM[0])  R[i3, 1] = R[i3, 1] * cr
 *               for ea in 0..dv vectorize { A[i3, ea] = A[i3, ea] * cr }  R[i3, 0] = TM[0] }
 *             for s3 in 0..KT vectorize { P[i3, s3] = select(R[i3, 0] == -inf, 0.0, exp(P[i3, s3] - R[i3, 0])) }
 *             for s4 in 0..KT reduce { R[i3, 1] = R[i3, 1] + P[i3, s4] } }
 *           for s5 in 0..KT { for i4 in 0..h { let w: sn = P[i4, s5]  if w > 0.0 {
 *             for e in 0..dv vectorize { A[i4, e] = A[i4, e] + w * sn(Vc[blk, KT*s0 + s5, kv(i4), e]) } } } } } } } }
 *       for i5 in 0..h { for u in 0..t { if u <= nw { if nw <= i0 {
 *         KEY(Kn[i0 - nw + u, kv(i5), _], Vn[i0 - nw + u, kv(i5), _]) } } } } } }
 *     for i6 in 0..h { let inv: sn = select(R[i6, 1] > 0.0, 1.0 / R[i6, 1], 0.0)
 *       for ey in 0..dv vectorize { Y[i0, i6, ey] = T(A[i6, ey] * inv) } } }
 * where KEY(K, V), one step key at a time (a decode has one), for head i (= i5) is
 *   alloc S2: Local[(1,), sn]  for r2 in 0..d reduce { S2[0] = S2[0] + sn(Q[i0, i, r2]) * sn(K[r2]) }
 *   let sc2: sn = S2[0] * scale
 *   if sc2 > R[i, 0] { let cr2: sn = exp(R[i, 0] - sc2)  R[i, 1] = R[i, 1] * cr2
 *     for ea2 in 0..dv vectorize { A[i, ea2] = A[i, ea2] * cr2 }  R[i, 0] = sc2 }
 *   let w2: sn = select(R[i, 0] == -inf, 0.0, exp(sc2 - R[i, 0]))  R[i, 1] = R[i, 1] + w2
 *   for e2 in 0..dv vectorize { A[i, e2] = A[i, e2] + w2 * sn(V[e2]) }
 * A cached key's weight is positive only when its score was stored, so the value loop reads
 * only keys the score loop checked. The dot products are `reduce` loops over the head width,
 * which the CPU codegen vectorises (reassoc).
 * with kv(i) = floordiv(i, floordiv(h, hk)). */
loom_status loom_tp_gen_paged_attention(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype ct,
                                        const char *scale_text, loom_tp_func **result) {
  if (!loom_dtype_is_float(t) || !loom_dtype_is_float(ct))
    return LOOM_ERROR(INVALID_ARGUMENT, "paged_attention of %s over a %s cache is not supported", loom_dtype_name(t), loom_dtype_name(ct));
  loom_dtype sn = t == LOOM_DTYPE_F64 ? LOOM_DTYPE_F64 : LOOM_DTYPE_F32;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *T = loom_tpb_shape_sym(&b, "t"), *H = loom_tpb_shape_sym(&b, "h"), *D = loom_tpb_shape_sym(&b, "d");
  const loom_sym_expr *qd[3] = {T, H, D};
  const loom_tp_buffer *Q = loom_tpb_buffer(&b, "Q", t, 3, qd);
  const loom_sym_expr *HK = loom_tpb_shape_sym(&b, "hk");
  const loom_sym_expr *knd[3] = {T, HK, D};
  const loom_tp_buffer *Kn = loom_tpb_buffer(&b, "Kn", t, 3, knd);
  const loom_sym_expr *DV = loom_tpb_shape_sym(&b, "dv");
  const loom_sym_expr *vnd[3] = {T, HK, DV};
  const loom_tp_buffer *Vn = loom_tpb_buffer(&b, "Vn", t, 3, vnd);
  const loom_sym_expr *N = loom_tpb_shape_sym(&b, "n"), *PG = loom_tpb_shape_sym(&b, "pg");
  const loom_sym_expr *kcd[4] = {N, PG, HK, D}, *vcd[4] = {N, PG, HK, DV};
  const loom_tp_buffer *Kc = loom_tpb_buffer(&b, "Kc", ct, 4, kcd);
  const loom_tp_buffer *Vc = loom_tpb_buffer(&b, "Vc", ct, 4, vcd);
  const loom_sym_expr *B = loom_tpb_shape_sym(&b, "b"), *M = loom_tpb_shape_sym(&b, "m");
  const loom_sym_expr *btd[2] = {B, M};
  const loom_tp_buffer *BT = loom_tpb_buffer(&b, "BT", LOOM_DTYPE_I64, 2, btd);
  const loom_tp_buffer *CTX = loom_tpb_buffer(&b, "CTX", LOOM_DTYPE_I64, 1, &B);
  const loom_tp_buffer *SEQ = loom_tpb_buffer(&b, "SEQ", LOOM_DTYPE_I64, 1, &T);
  const loom_tp_buffer *POS = loom_tpb_buffer(&b, "POS", LOOM_DTYPE_I64, 1, &T);
  const loom_sym_expr *yd[3] = {T, H, DV};
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 3, yd);

  const loom_sym_expr *two = loom_sym_const(cx, 2), *kt = loom_sym_const(cx, KT);
  loom_tp_expr *i0 = loom_tpb_idx(&b, loom_tpb_for(&b, "i0", T, LOOM_TP_LOOP_PARALLEL, false));
  loom_tp_expr *sq = loom_tpb_let(&b, "sq", loom_tpb_load(&b, SEQ, &i0));
  const loom_sym_expr *ad[2] = {H, DV}, *rd[2] = {H, two}, *pd[2] = {H, kt};
  const loom_tp_buffer *A = loom_tpb_alloc(&b, "A", sn, 2, ad, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *R = loom_tpb_alloc(&b, "R", sn, 2, rd, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *P = loom_tpb_alloc(&b, "P", sn, 2, pd, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *scale = scale_text ? loom_tp_cast(a, sn, loom_tpb_parse(&b, scale_text, NULL, NULL, 0, NULL))
                                   : loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_cast(a, sn, loom_tpb_idx(&b, D)));
  paged_key k = {.b = &b, .a = a, .sn = sn, .Q = Q, .A = A, .R = R, .i0 = i0, .D = D, .DV = DV, .scale = scale};
  for_heads(&k, "h0", H, HK);
  r_set(&k, 0, loom_tp_const_f(a, sn, -INFINITY));
  loom_tpb_end(&b);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_dup(&b, sq), loom_tpb_cidx(&b, 0)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(&b, sq), loom_tpb_idx(&b, B)));
  loom_tp_expr *c = loom_tpb_let(&b, "c", loom_tpb_load(&b, CTX, &sq));
  loom_tp_expr *nw = loom_tpb_let(&b, "nw", loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(&b, POS, &i0), loom_tpb_dup(&b, c)));

  /* the cached keys, page by page through the block table, each page in tiles of KT slots */
  const loom_sym_expr *p = loom_tpb_for(&b, "p", M, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *first = p ? loom_sym_mul(cx, p, PG) : NULL;
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_idx(&b, first), loom_tpb_dup(&b, c)));
  loom_tp_expr *bti[2] = {sq, loom_tpb_idx(&b, p)};
  loom_tp_expr *blk = loom_tpb_let(&b, "blk", loom_tpb_load(&b, BT, bti));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_dup(&b, blk), loom_tpb_cidx(&b, 0)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(&b, blk), loom_tpb_idx(&b, N)));
  const loom_sym_expr *ntiles = loom_sym_floordiv(cx, loom_sym_add(cx, PG, loom_sym_const(cx, KT - 1)), kt);
  const loom_sym_expr *s0 = loom_tpb_for(&b, "s0", ntiles, LOOM_TP_LOOP_SERIAL, false);
  /* the tile's scores, slot by slot and every head of a slot in turn: the keys are read in the
   * order they lie in the page (-inf where there is no key) */
  const loom_sym_expr *s1 = loom_tpb_for(&b, "s1", kt, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *s1e = loom_tpb_idx(&b, s1);
  const loom_sym_expr *slot = s0 && s1 ? loom_sym_add(cx, loom_sym_mul(cx, s0, kt), s1) : NULL;
  for_heads(&k, "i1", H, HK);
  loom_tp_expr *pi[2] = {k.i1, s1e};
  loom_tpb_store(&b, P, pi, loom_tp_const_f(a, sn, -INFINITY));
  loom_tpb_end(&b);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_idx(&b, slot), loom_tpb_idx(&b, PG)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_idx(&b, slot && first ? loom_sym_add(cx, first, slot) : NULL), loom_tpb_dup(&b, c)));
  for_heads(&k, "i2", H, HK);
  const loom_sym_expr *one = loom_sym_const(cx, 1);
  const loom_tp_buffer *S = loom_tpb_alloc(&b, "S", sn, 1, &one, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *r = loom_tpb_idx(&b, loom_tpb_for(&b, "r", D, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *qi[3] = {i0, k.i1, r}, *kci[4] = {blk, loom_tpb_idx(&b, slot), k.kv, r};
  loom_tp_expr *qk = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, sn, loom_tpb_load(&b, Q, qi)), loom_tp_cast(a, sn, loom_tpb_load(&b, Kc, kci)));
  loom_tpb_store_at(&b, S, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_at(&b, S, 0), qk));
  loom_tpb_end(&b);
  loom_tp_expr *ps[2] = {k.i1, s1e};
  loom_tpb_store(&b, P, ps, loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_at(&b, S, 0), loom_tpb_dup(&b, scale)));
  loom_tpb_end_n(&b, 4); /* i2, two ifs, s1 */
  /* per head: the tile's maximum (a new one rescales the sum and the accumulator), the
   * weights (0 where there is no key, and while every score is -inf, vectorised) and their sum */
  for_heads(&k, "i3", H, HK);
  const loom_tp_buffer *TM = loom_tpb_alloc(&b, "TM", sn, 1, &one, LOOM_TP_SCOPE_LOCAL);
  loom_tpb_store_at(&b, TM, 0, r_at(&k, 0));
  loom_tp_expr *s2 = loom_tpb_idx(&b, loom_tpb_for(&b, "s2", kt, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *p2[2] = {k.i1, s2};
  loom_tpb_store_at(&b, TM, 0, loom_tp_op2(a, LOOM_TP_OP_MAX, loom_tpb_at(&b, TM, 0), loom_tpb_load(&b, P, p2)));
  loom_tpb_end(&b);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_at(&b, TM, 0), r_at(&k, 0)));
  loom_tp_expr *cr = loom_tpb_let(&b, "cr", loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, r_at(&k, 0), loom_tpb_at(&b, TM, 0))));
  r_set(&k, 1, loom_tp_op2(a, LOOM_TP_OP_MUL, r_at(&k, 1), loom_tpb_dup(&b, cr)));
  loom_tp_expr *ea = loom_tpb_idx(&b, loom_tpb_for(&b, "ea", DV, LOOM_TP_LOOP_VECTORIZE, false));
  a_set(&k, ea, loom_tp_op2(a, LOOM_TP_OP_MUL, a_at(&k, ea), cr));
  loom_tpb_end(&b);
  r_set(&k, 0, loom_tpb_at(&b, TM, 0));
  loom_tpb_end(&b);
  loom_tp_expr *s3 = loom_tpb_idx(&b, loom_tpb_for(&b, "s3", kt, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *p3[2] = {k.i1, s3};
  loom_tp_expr *none = loom_tp_op2(a, LOOM_TP_OP_EQ, r_at(&k, 0), loom_tp_const_f(a, sn, -INFINITY));
  loom_tp_expr *ex = loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(&b, P, p3), r_at(&k, 0)));
  loom_tpb_store(&b, P, p3, loom_tp_select(a, none, loom_tp_const_f(a, sn, 0.0), ex));
  loom_tpb_end(&b);
  loom_tp_expr *s4 = loom_tpb_idx(&b, loom_tpb_for(&b, "s4", kt, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *p4[2] = {k.i1, s4};
  r_set(&k, 1, loom_tp_op2(a, LOOM_TP_OP_ADD, r_at(&k, 1), loom_tpb_load(&b, P, p4)));
  loom_tpb_end_n(&b, 2); /* s4, i3 */
  /* the weighted values, slot by slot and head by head (the page's order again): a positive
   * weight is a stored score, so only keys present are read */
  const loom_sym_expr *s5 = loom_tpb_for(&b, "s5", kt, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *s5e = loom_tpb_idx(&b, s5);
  for_heads(&k, "i4", H, HK);
  loom_tp_expr *p5[2] = {k.i1, s5e};
  loom_tp_expr *w = loom_tpb_let(&b, "w", loom_tpb_load(&b, P, p5));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_dup(&b, w), loom_tp_const_f(a, sn, 0.0)));
  loom_tp_expr *e = loom_tpb_idx(&b, loom_tpb_for(&b, "e", DV, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *vci[4] = {blk, loom_tpb_idx(&b, s0 && s5 ? loom_sym_add(cx, loom_sym_mul(cx, s0, kt), s5) : NULL), k.kv, e};
  loom_tp_expr *wv = loom_tp_op2(a, LOOM_TP_OP_MUL, w, loom_tp_cast(a, sn, loom_tpb_load(&b, Vc, vci)));
  a_set(&k, e, loom_tp_op2(a, LOOM_TP_OP_ADD, a_at(&k, e), wv));
  loom_tpb_end_n(&b, 9); /* e, if w, i4, s5, s0, two ifs on blk, if page, p */

  /* the step's own keys: i0 - nw .. i0, head by head */
  for_heads(&k, "i5", H, HK);
  const loom_sym_expr *u = loom_tpb_for(&b, "u", T, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *ue = loom_tpb_idx(&b, u);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LE, loom_tpb_dup(&b, ue), loom_tpb_dup(&b, nw)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LE, loom_tpb_dup(&b, nw), loom_tpb_dup(&b, i0)));
  loom_tp_expr *key = loom_tpb_let(&b, "key", loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_dup(&b, i0), loom_tpb_dup(&b, nw)), ue));
  loom_tp_expr *npre[2] = {key, k.kv};
  online_key(&k, Kn, npre, 2, Vn, npre, 2, "2");
  loom_tpb_end_n(&b, 6); /* two ifs, u, i5, the two ifs on sq */

  for_heads(&k, "i6", H, HK);
  loom_tp_expr *some = loom_tp_op2(a, LOOM_TP_OP_GT, r_at(&k, 1), loom_tp_const_f(a, sn, 0.0));
  loom_tp_expr *inv = loom_tpb_let(&b, "inv", loom_tp_select(a, some, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_const_f(a, sn, 1.0), r_at(&k, 1)),
                                                              loom_tp_const_f(a, sn, 0.0)));
  loom_tp_expr *ey = loom_tpb_idx(&b, loom_tpb_for(&b, "ey", DV, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *yi[3] = {i0, k.i1, ey};
  loom_tp_expr *y = loom_tp_op2(a, LOOM_TP_OP_MUL, a_at(&k, ey), inv);
  loom_tpb_store(&b, Y, yi, sn == t ? y : loom_tp_cast(a, t, y));
  return loom_tpb_finish(&b, result);
}
