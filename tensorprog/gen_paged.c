/* gen_paged.c — the generator of paged attention (graph op `paged_attention`, graph/op_paged.c):
 * attention of a ragged batch of query tokens over a key/value cache kept in fixed-size pages
 * that a block table per sequence names, plus the batch's own new keys and values. It is what
 * `loom serve`'s models call (docs/serve.md). Built directly as IR (tp_build.h). */
#include <math.h>

#include "tensorprog/gen_internal.h"

/* Paged attention. Buffers: Q (t, h, d), Kn (t, hk, d), Vn (t, hk, dv) (the step's tokens),
 * Kc (n, pg, hk, d), Vc (n, pg, hk, dv) (the paged cache: n pages of pg slots), BT (b, m) i64
 * (sequence s's page of its key j is BT[s, floordiv(j, pg)], slot floormod(j, pg)), CTX (b,)
 * i64 (keys of sequence s already in the cache), SEQ (t,) and POS (t,) i64 (each token's
 * sequence and absolute position), Y (t, h, dv). Token i of sequence s = SEQ[i] with
 * nw = POS[i] - CTX[s] attends to the cached keys 0 .. CTX[s] - 1 and to the step's tokens
 * i - nw .. i (causal within the chunk). Cached keys whose page is outside [0, n), step
 * tokens before 0 and tokens whose sequence is outside [0, b) are absent (a row with no key
 * gives 0), so no value of the integer operands reads outside a buffer. Scores in sn (f32,
 * f64 for f64), two passes over the scores P (cached slots first, then the step's):
 *   for i0 in 0..t parallel { let sq: i64 = SEQ[i0]
 *     for i1 in 0..h { alloc A: Local[(dv,), sn]
 *       if sq >= 0 { if sq < b { let c: i64 = CTX[sq]  let nw: i64 = POS[i0] - c
 *         alloc P: Local[(m*pg + t,), sn]  alloc R: Local[(2,), sn]  R[0] = -inf
 *         for j0 in 0..m*pg + t { P[j0] = -inf }
 *         for j in 0..m*pg { if j < c { let blk: i64 = BT[sq, floordiv(j, pg)]
 *           if blk >= 0 { if blk < n { alloc S: Local[(1,), sn]
 *             for r in 0..d reduce { S[0] = S[0] + sn(Q[i0, i1, r]) * sn(Kc[blk, floormod(j, pg), kv, r]) }
 *             let sc: sn = S[0] * scale  P[j] = sc  R[0] = max(R[0], sc) } } } }
 *         for u in 0..t { if u <= nw { if nw <= i0 { alloc S2 ...
 *             Kn[i0 - nw + u, kv, r2] ...  P[m*pg + u] = sc2  R[0] = max(R[0], sc2) } } }
 *         for j1 in 0..m*pg + t { P[j1] = select(R[0] == -inf, 0.0, exp(P[j1] - R[0]))  R[1] = R[1] + P[j1] }
 *         let inv: sn = select(R[1] > 0.0, 1.0 / R[1], 0.0)
 *         for j2 in 0..m*pg { let w: sn = P[j2] * inv  if w > 0.0 { let blk2: i64 = BT[sq, floordiv(j2, pg)]
 *           for e in 0..dv vectorize { A[e] = A[e] + w * sn(Vc[blk2, floormod(j2, pg), kv, e]) } } }
 *         for u2 in 0..t { let w2: sn = P[m*pg + u2] * inv  if w2 > 0.0 {
 *           for e1 in 0..dv vectorize { A[e1] = A[e1] + w2 * sn(Vn[i0 - nw + u2, kv, e1]) } } } } }
 *       for e2 in 0..dv vectorize { Y[i0, i1, e2] = T(A[e2]) } } }
 * with kv = floordiv(i1, floordiv(h, hk)). A key's weight is positive exactly when its score
 * was stored, so the value passes read only what the score passes checked. */
loom_status loom_tp_gen_paged_attention(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const char *scale_text,
                                        loom_tp_func **result) {
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "paged_attention of %s is not supported", loom_dtype_name(t));
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
  const loom_tp_buffer *Kc = loom_tpb_buffer(&b, "Kc", t, 4, kcd);
  const loom_tp_buffer *Vc = loom_tpb_buffer(&b, "Vc", t, 4, vcd);
  const loom_sym_expr *B = loom_tpb_shape_sym(&b, "b"), *M = loom_tpb_shape_sym(&b, "m");
  const loom_sym_expr *btd[2] = {B, M};
  const loom_tp_buffer *BT = loom_tpb_buffer(&b, "BT", LOOM_DTYPE_I64, 2, btd);
  const loom_tp_buffer *CTX = loom_tpb_buffer(&b, "CTX", LOOM_DTYPE_I64, 1, &B);
  const loom_tp_buffer *SEQ = loom_tpb_buffer(&b, "SEQ", LOOM_DTYPE_I64, 1, &T);
  const loom_tp_buffer *POS = loom_tpb_buffer(&b, "POS", LOOM_DTYPE_I64, 1, &T);
  const loom_sym_expr *yd[3] = {T, H, DV};
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 3, yd);

  const loom_sym_expr *slots = loom_sym_mul(cx, M, PG), *nkeys = loom_sym_add(cx, slots, T);
  const loom_sym_expr *one = loom_sym_const(cx, 1), *two = loom_sym_const(cx, 2);
  loom_tp_expr *i0 = loom_tpb_idx(&b, loom_tpb_for(&b, "i0", T, LOOM_TP_LOOP_PARALLEL, false));
  loom_tp_expr *sq = loom_tpb_let(&b, "sq", loom_tpb_load(&b, SEQ, &i0));
  const loom_sym_expr *i1 = loom_tpb_for(&b, "i1", H, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *i1e = loom_tpb_idx(&b, i1);
  loom_tp_expr *kv = loom_tpb_idx(&b, i1 ? loom_sym_floordiv(cx, i1, loom_sym_floordiv(cx, H, HK)) : NULL);
  const loom_tp_buffer *A = loom_tpb_alloc(&b, "A", sn, 1, &DV, LOOM_TP_SCOPE_LOCAL);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_dup(&b, sq), loom_tpb_cidx(&b, 0)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(&b, sq), loom_tpb_idx(&b, B)));
  loom_tp_expr *c = loom_tpb_let(&b, "c", loom_tpb_load(&b, CTX, &sq));
  loom_tp_expr *nw = loom_tpb_let(&b, "nw", loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(&b, POS, &i0), loom_tpb_dup(&b, c)));
  const loom_tp_buffer *P = loom_tpb_alloc(&b, "P", sn, 1, &nkeys, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *R = loom_tpb_alloc(&b, "R", sn, 1, &two, LOOM_TP_SCOPE_LOCAL);
  loom_tpb_store_at(&b, R, 0, loom_tp_const_f(a, sn, -INFINITY));
  loom_tp_expr *j0 = loom_tpb_idx(&b, loom_tpb_for(&b, "j0", nkeys, LOOM_TP_LOOP_SERIAL, false));
  loom_tpb_store(&b, P, &j0, loom_tp_const_f(a, sn, -INFINITY));
  loom_tpb_end(&b);
  loom_tp_expr *scale = scale_text ? loom_tp_cast(a, sn, loom_tpb_parse(&b, scale_text, NULL, NULL, 0, NULL))
                                   : loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_cast(a, sn, loom_tpb_idx(&b, D)));

  /* the cached keys, through the block table */
  const loom_sym_expr *j = loom_tpb_for(&b, "j", slots, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *je = loom_tpb_idx(&b, j);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(&b, je), loom_tpb_dup(&b, c)));
  loom_tp_expr *bti[2] = {sq, loom_tpb_idx(&b, j ? loom_sym_floordiv(cx, j, PG) : NULL)};
  loom_tp_expr *blk = loom_tpb_let(&b, "blk", loom_tpb_load(&b, BT, bti));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_dup(&b, blk), loom_tpb_cidx(&b, 0)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(&b, blk), loom_tpb_idx(&b, N)));
  const loom_tp_buffer *S = loom_tpb_alloc(&b, "S", sn, 1, &one, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *r = loom_tpb_idx(&b, loom_tpb_for(&b, "r", D, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *slot = loom_tpb_idx(&b, j ? loom_sym_floormod(cx, j, PG) : NULL);
  loom_tp_expr *qi[3] = {i0, i1e, r}, *kci[4] = {blk, slot, kv, r};
  loom_tp_expr *qk = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, sn, loom_tpb_load(&b, Q, qi)), loom_tp_cast(a, sn, loom_tpb_load(&b, Kc, kci)));
  loom_tpb_store_at(&b, S, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_at(&b, S, 0), qk));
  loom_tpb_end(&b);
  loom_tp_expr *sc = loom_tpb_let(&b, "sc", loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_at(&b, S, 0), loom_tpb_dup(&b, scale)));
  loom_tpb_store(&b, P, &je, loom_tpb_dup(&b, sc));
  loom_tpb_store_at(&b, R, 0, loom_tp_op2(a, LOOM_TP_OP_MAX, loom_tpb_at(&b, R, 0), sc));
  loom_tpb_end_n(&b, 4);

  /* the step's own keys: i0 - nw .. i0 */
  const loom_sym_expr *u = loom_tpb_for(&b, "u", T, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *ue = loom_tpb_idx(&b, u);
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LE, loom_tpb_dup(&b, ue), loom_tpb_dup(&b, nw)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_LE, loom_tpb_dup(&b, nw), loom_tpb_dup(&b, i0)));
  const loom_tp_buffer *S2 = loom_tpb_alloc(&b, "S2", sn, 1, &one, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *r2 = loom_tpb_idx(&b, loom_tpb_for(&b, "r2", D, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *key = loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_dup(&b, i0), loom_tpb_dup(&b, nw)), loom_tpb_dup(&b, ue));
  loom_tp_expr *qi2[3] = {i0, i1e, r2}, *kni[3] = {key, kv, r2};
  loom_tp_expr *qk2 = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, sn, loom_tpb_load(&b, Q, qi2)), loom_tp_cast(a, sn, loom_tpb_load(&b, Kn, kni)));
  loom_tpb_store_at(&b, S2, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_at(&b, S2, 0), qk2));
  loom_tpb_end(&b);
  loom_tp_expr *sc2 = loom_tpb_let(&b, "sc2", loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_at(&b, S2, 0), loom_tpb_dup(&b, scale)));
  loom_tp_expr *pu = loom_tpb_idx(&b, u ? loom_sym_add(cx, slots, u) : NULL);
  loom_tpb_store(&b, P, &pu, loom_tpb_dup(&b, sc2));
  loom_tpb_store_at(&b, R, 0, loom_tp_op2(a, LOOM_TP_OP_MAX, loom_tpb_at(&b, R, 0), sc2));
  loom_tpb_end_n(&b, 3);

  /* exponentials and their sum over every slot (absent keys hold -inf: weight 0) */
  loom_tp_expr *j1 = loom_tpb_idx(&b, loom_tpb_for(&b, "j1", nkeys, LOOM_TP_LOOP_SERIAL, false));
  loom_tp_expr *empty = loom_tp_op2(a, LOOM_TP_OP_EQ, loom_tpb_at(&b, R, 0), loom_tp_const_f(a, sn, -INFINITY));
  loom_tp_expr *ex = loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(&b, P, &j1), loom_tpb_at(&b, R, 0)));
  loom_tpb_store(&b, P, &j1, loom_tp_select(a, empty, loom_tp_const_f(a, sn, 0.0), ex));
  loom_tpb_store_at(&b, R, 1, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_at(&b, R, 1), loom_tpb_load(&b, P, &j1)));
  loom_tpb_end(&b);
  loom_tp_expr *some = loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_at(&b, R, 1), loom_tp_const_f(a, sn, 0.0));
  loom_tp_expr *inv = loom_tpb_let(&b, "inv", loom_tp_select(a, some, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_const_f(a, sn, 1.0), loom_tpb_at(&b, R, 1)),
                                                              loom_tp_const_f(a, sn, 0.0)));

  /* the weighted sum of the cached values, then of the step's */
  const loom_sym_expr *j2 = loom_tpb_for(&b, "j2", slots, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *j2e = loom_tpb_idx(&b, j2);
  loom_tp_expr *w = loom_tpb_let(&b, "w", loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, P, &j2e), loom_tpb_dup(&b, inv)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_dup(&b, w), loom_tp_const_f(a, sn, 0.0)));
  loom_tp_expr *bti2[2] = {sq, loom_tpb_idx(&b, j2 ? loom_sym_floordiv(cx, j2, PG) : NULL)};
  loom_tp_expr *blk2 = loom_tpb_let(&b, "blk2", loom_tpb_load(&b, BT, bti2));
  loom_tp_expr *e = loom_tpb_idx(&b, loom_tpb_for(&b, "e", DV, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *vci[4] = {blk2, loom_tpb_idx(&b, j2 ? loom_sym_floormod(cx, j2, PG) : NULL), kv, e};
  loom_tp_expr *wv = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_dup(&b, w), loom_tp_cast(a, sn, loom_tpb_load(&b, Vc, vci)));
  loom_tpb_store(&b, A, &e, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, A, &e), wv));
  loom_tpb_end_n(&b, 3);
  const loom_sym_expr *u2 = loom_tpb_for(&b, "u2", T, LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *pu2 = loom_tpb_idx(&b, u2 ? loom_sym_add(cx, slots, u2) : NULL);
  loom_tp_expr *w2 = loom_tpb_let(&b, "w2", loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, P, &pu2), loom_tpb_dup(&b, inv)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_dup(&b, w2), loom_tp_const_f(a, sn, 0.0)));
  loom_tp_expr *e1 = loom_tpb_idx(&b, loom_tpb_for(&b, "e1", DV, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *key2 = loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_dup(&b, i0), loom_tpb_dup(&b, nw)),
                                   loom_tpb_idx(&b, u2));
  loom_tp_expr *vni[3] = {key2, kv, e1};
  loom_tp_expr *wv2 = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_dup(&b, w2), loom_tp_cast(a, sn, loom_tpb_load(&b, Vn, vni)));
  loom_tpb_store(&b, A, &e1, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, A, &e1), wv2));
  loom_tpb_end_n(&b, 5); /* e1, if w2, u2, the two ifs on sq */

  loom_tp_expr *e2 = loom_tpb_idx(&b, loom_tpb_for(&b, "e2", DV, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tp_expr *yi[3] = {i0, i1e, e2}, *acc = loom_tpb_load(&b, A, &e2);
  loom_tpb_store(&b, Y, yi, sn == t ? acc : loom_tp_cast(a, t, acc));
  return loom_tpb_finish(&b, result);
}
