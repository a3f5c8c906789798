/* gen_nms.c — non_max_suppression (ONNX NonMaxSuppression) as the pair gen_select.c describes:
 * a `count` program (S = the number of rows selected) and one that writes the rows.
 *
 * Per batch and class the greedy selection in descending score order (ties: the lower index),
 * in O(n log n + n k) for n boxes and k kept: the boxes above the score threshold go on a
 * max-heap once, and each step pops the best one and tests it against the boxes kept so far
 * (their corners and areas kept in locals). Program loops have symbolic extents, so the walks
 * whose length is a run-time count (the heap's sift steps, the kept boxes) run over a bound
 * and skip the rest: sifts over dn = bitlen(n) steps (a scalar parameter), the kept boxes in
 * blocks of 64 whose tests skip a whole block past the count. (The scan this replaced looked
 * at all n boxes for each of the n steps: a detector's 27,000 boxes took 0.85 s.) */
#include <math.h>

#include "tensorprog/gen_internal.h"

#define OP2(op, x, y) loom_tp_op2(b->a, LOOM_TP_OP_##op, (x), (y))
#define AND(x, y) OP2(AND, x, y)
#define NOT(x) loom_tp_op1(b->a, LOOM_TP_OP_NOT, (x))
#define D(e) loom_tpb_dup(b, (e))
#define I64(v) loom_tpb_lit_i(b, LOOM_DTYPE_I64, (v))
#define F64(v) loom_tp_const_f(b->a, LOOM_DTYPE_F64, (v))
#define BOOL(v) loom_tp_const_i(b->a, LOOM_DTYPE_BOOL, (v))

/* The one value of scalar operand `buf` (form: -1 absent, 0 rank 0, 1 shape (1,)) as t(buf[]) /
 * t(buf[0]), or `dflt` when absent. */
static loom_tp_expr *scalar_value(loom_tpb *b, const loom_tp_buffer *buf, int form, loom_dtype t, loom_tp_expr *dflt) {
  if (form < 0) return dflt;
  return loom_tp_cast(b->a, t, form ? loom_tpb_at(b, buf, 0) : loom_tpb_load(b, buf, NULL));
}

/* Declares scalar operand `buf`: Buffer[(), t] (form 0), [(1,), t] (1) or [(0,), t] (absent). */
static const loom_tp_buffer *scalar_param(loom_tpb *b, const char *buf, int form, loom_dtype t) {
  const loom_sym_expr *n = loom_sym_const(b->cx, form == 1);
  return loom_tpb_buffer(b, buf, t, form ? 1 : 0, &n);
}

/* Corners of box `at` of batch `bi` as lets <p>y1, <p>x1, <p>y2, <p>x2 (f64): corners
 * y1 = min(c0, c2), y2 = max(..), x1 = min(c1, c3), x2 = max(..); center boxes
 * x1 = c0 - c2 / 2.0, x2 = c0 + c2 / 2.0, y1 = c1 - c3 / 2.0, y2 = c1 + c3 / 2.0 (ck = f64(BX[b, at, k])).
 * corner[] takes them in the order y1, x1, y2, x2. */
static void box_corners(loom_tpb *b, const loom_tp_buffer *BX, char p, loom_tp_expr *bi, loom_tp_expr *at, bool center,
                        loom_tp_expr **corner) {
  loom_tp_expr *c[4];
  for (int k = 0; k < 4; k++) c[k] = loom_tp_cast(b->a, LOOM_DTYPE_F64, loom_tpb_load(b, BX, (loom_tp_expr *[]){bi, at, loom_tpb_cidx(b, k)}));
  char nm[4] = {p, 0, 0, 0};
  static const char *const tails[4] = {"x1", "x2", "y1", "y2"};
  for (int s = 0; s < 4; s++) {
    int lo = s < 2 ? 0 : 1; /* center: x from c0, c2; y from c1, c3 (corners: y from c0, c2; x from c1, c3) */
    loom_tp_expr *v;
    int slot; /* y1, x1, y2, x2 */
    if (center) {
      loom_tp_expr *half = OP2(DIV, D(c[lo + 2]), F64(2.0));
      v = s % 2 ? OP2(ADD, D(c[lo]), half) : OP2(SUB, D(c[lo]), half);
      nm[1] = tails[s][0];
      nm[2] = tails[s][1];
      slot = (s < 2 ? 1 : 0) + (s % 2) * 2;
    } else {
      v = s % 2 ? OP2(MAX, D(c[lo]), D(c[lo + 2])) : OP2(MIN, D(c[lo]), D(c[lo + 2]));
      nm[1] = tails[(s + 2) % 4][0];
      nm[2] = tails[(s + 2) % 4][1];
      slot = (s < 2 ? 0 : 1) + (s % 2) * 2;
    }
    corner[slot] = loom_tpb_let(b, nm, v);
  }
}

/* The heap: scores HV (f64) and box indices HI in slots [0, HN[0]); C, W: the sift's cursors. */
typedef struct nms_heap {
  loom_tpb *b;
  const loom_tp_buffer *HV, *HI, *HN, *C, *W;
  const loom_sym_expr *depth; /* dn: sift steps */
} nms_heap;

static loom_tp_expr *slot(const nms_heap *h, const loom_tp_buffer *buf, const loom_tp_expr *at) {
  loom_tp_expr *i = loom_tpb_dup(h->b, at);
  return loom_tpb_load(h->b, buf, &i);
}

/* <slot p goes before slot q>: a higher score, or the same score and a lower box index. */
static loom_tp_expr *before(const nms_heap *h, const loom_tp_expr *p, const loom_tp_expr *q) {
  loom_tpb *b = h->b;
  loom_tp_expr *higher = OP2(GT, slot(h, h->HV, p), slot(h, h->HV, q));
  loom_tp_expr *tie = AND(OP2(EQ, slot(h, h->HV, p), slot(h, h->HV, q)), OP2(LT, slot(h, h->HI, p), slot(h, h->HI, q)));
  return OP2(OR, higher, tie);
}

/* <swap slots p, q> (tag names its lets). */
static void swap(const nms_heap *h, const loom_tp_expr *p, const loom_tp_expr *q, const char *tag) {
  loom_tpb *b = h->b;
  char vn[8], in[8];
  snprintf(vn, sizeof vn, "sv%s", tag);
  snprintf(in, sizeof in, "si%s", tag);
  loom_tp_expr *sv = loom_tpb_let(b, vn, slot(h, h->HV, p)), *si = loom_tpb_let(b, in, slot(h, h->HI, p));
  loom_tp_expr *pc = D(p), *qc = D(q);
  loom_tpb_store(b, h->HV, &pc, slot(h, h->HV, q));
  loom_tpb_store(b, h->HI, &pc, slot(h, h->HI, q));
  loom_tpb_store(b, h->HV, &qc, sv);
  loom_tpb_store(b, h->HI, &qc, si);
}

/* Sift slot C[0] up (after a push):
 *   for su in 0..dn reduce { if C[0] > 0 { let pa: i64 = (C[0] - 1) / 2
 *     if <C[0] before pa> { <swap> C[0] = pa } else { C[0] = 0 } } } */
static void sift_up(const nms_heap *h) {
  loom_tpb *b = h->b;
  loom_tpg_walk(b, "su", h->depth);
  loom_tpb_if(b, OP2(GT, loom_tpb_at(b, h->C, 0), I64(0)));
  loom_tp_expr *pa = loom_tpb_let(b, "pa", OP2(DIV, OP2(SUB, loom_tpb_at(b, h->C, 0), I64(1)), I64(2)));
  loom_tp_expr *cur = loom_tpb_at(b, h->C, 0);
  loom_tpb_if(b, before(h, cur, pa));
  swap(h, cur, pa, "u");
  loom_tpb_store_at(b, h->C, 0, D(pa));
  loom_tpb_else(b);
  loom_tpb_store_at(b, h->C, 0, I64(0));
  loom_tpb_end_n(b, 3); /* the ifs, su */
}

/* Sift slot 0 down within HN[0] (after a pop):
 *   C[0] = 0  for sd in 0..dn reduce { if C[0] >= 0 { let lc: i64 = 2 * C[0] + 1
 *     if lc < HN[0] { W[0] = lc  if lc + 1 < HN[0] { if <lc + 1 before lc> { W[0] = lc + 1 } }
 *       if <W[0] before C[0]> { <swap> C[0] = W[0] } else { C[0] = -1 } } else { C[0] = -1 } } } */
static void sift_down(const nms_heap *h) {
  loom_tpb *b = h->b;
  loom_tpb_store_at(b, h->C, 0, I64(0));
  loom_tpg_walk(b, "sd", h->depth);
  loom_tpb_if(b, OP2(GE, loom_tpb_at(b, h->C, 0), I64(0)));
  loom_tp_expr *lc = loom_tpb_let(b, "lc", OP2(ADD, OP2(MUL, I64(2), loom_tpb_at(b, h->C, 0)), I64(1)));
  loom_tpb_if(b, OP2(LT, D(lc), loom_tpb_at(b, h->HN, 0)));
  loom_tpb_store_at(b, h->W, 0, D(lc));
  loom_tp_expr *rc = OP2(ADD, D(lc), I64(1));
  loom_tpb_if(b, OP2(LT, D(rc), loom_tpb_at(b, h->HN, 0)));
  loom_tpb_if(b, before(h, rc, lc));
  loom_tpb_store_at(b, h->W, 0, rc);
  loom_tpb_end_n(b, 2);
  loom_tp_expr *w = loom_tpb_at(b, h->W, 0), *cur = loom_tpb_at(b, h->C, 0);
  loom_tpb_if(b, before(h, w, cur));
  swap(h, w, cur, "d");
  loom_tpb_store_at(b, h->C, 0, loom_tpb_at(b, h->W, 0));
  loom_tpb_else(b);
  loom_tpb_store_at(b, h->C, 0, I64(-1));
  loom_tpb_end(b);
  loom_tpb_else(b);
  loom_tpb_store_at(b, h->C, 0, I64(-1));
  loom_tpb_end_n(b, 3); /* the if lc < HN, the if C >= 0, sd */
}

/* The kept boxes' corners y1, x1, y2, x2 and areas, by keep order. */
typedef struct nms_kept {
  const loom_tp_buffer *corner[4], *area, *NK;
} nms_kept;

/* The overlap of box corners ac with kept box q as lets iw, ih (<tag>iw, <tag>ih). */
static void overlap(loom_tpb *b, const nms_kept *k, loom_tp_expr *const *ac, const loom_tp_expr *q, const char *tag,
                    loom_tp_expr **iw, loom_tp_expr **ih) {
  loom_tp_expr *kc[4];
  for (int s = 0; s < 4; s++) {
    loom_tp_expr *qi = D(q);
    kc[s] = loom_tpb_load(b, k->corner[s], &qi);
  }
  *iw = loom_tpg_letf(b, OP2(SUB, OP2(MIN, D(ac[3]), kc[3]), OP2(MAX, D(ac[1]), kc[1])), "%siw", tag);
  *ih = loom_tpg_letf(b, OP2(SUB, OP2(MIN, D(ac[2]), kc[2]), OP2(MAX, D(ac[0]), kc[0])), "%sih", tag);
}

/* A block's loop `for <tag> in 0..64 reduce {` and its `let <tag>q: i64 = base + <tag>`. */
static loom_tp_expr *block_lane(loom_tpb *b, const loom_sym_expr *base, const char *tag) {
  char qn[8];
  snprintf(qn, sizeof qn, "%sq", tag);
  const loom_sym_expr *l = loom_tpb_for(b, tag, loom_sym_const(b->cx, 64), LOOM_TP_LOOP_SERIAL, true);
  return loom_tpb_let(b, qn, loom_tpb_idx(b, l ? loom_sym_add(b->cx, base, l) : NULL));
}

/* buf[0] = buf[0] + select(cond, 1, 0) */
static void count_if(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *cond) {
  loom_tpb_store_at(b, buf, 0, OP2(ADD, loom_tpb_at(b, buf, 0), loom_tp_select(b->a, cond, I64(1), I64(0))));
}

/* SUP[0] = how many kept boxes overlap box corners ac (area aa) by more than thr, or more. The
 * kept boxes go in blocks of 64 (the locals hold 64 * ceil(n / 64)); a block past the count or
 * after a hit is skipped, and its tests have no branch (LLVM makes them vectors; lanes past the
 * count add nothing): first whether any box of the block overlaps at all, then, only if one does
 * (or when thr < 0, where boxes apart suppress too), the IoU with its division:
 *   let nk: i64 = NK[0]  let apart: bool = 0.0 > thr  SUP[0] = 0
 *   for qb in 0..(n + 63) // 64 reduce { if 64*qb < nk && SUP[0] == 0 {
 *     OV[0] = 0
 *     for ol in 0..64 reduce { let olq = 64*qb + ol  <overlap of olq as oliw, olih>
 *       OV[0] = OV[0] + select(olq < nk && oliw > 0.0 && olih > 0.0, 1, 0) }
 *     if OV[0] > 0 || apart { for ql in 0..64 reduce { let qlq = 64*qb + ql  <overlap as qliw, qlih>
 *       let inter: f64 = qliw * qlih  let uni: f64 = aa + KA[qlq] - inter
 *       let iou: f64 = select(qliw <= 0.0 || qlih <= 0.0, 0.0, select(uni > 0.0, inter / uni, 0.0))
 *       SUP[0] = SUP[0] + select(qlq < nk && iou > thr, 1, 0) } } } } */
static void test_kept(loom_tpb *b, const nms_kept *k, const loom_sym_expr *blocks, loom_tp_expr *const *ac, loom_tp_expr *aa,
                      loom_tp_expr *thr, const loom_tp_buffer *SUP, const loom_tp_buffer *OV) {
  loom_sym_ctx *cx = b->cx;
  const loom_sym_expr *c64 = loom_sym_const(cx, 64);
  loom_tp_expr *nk = loom_tpb_let(b, "nk", loom_tpb_at(b, k->NK, 0));
  loom_tp_expr *apart = loom_tpb_let(b, "apart", OP2(GT, F64(0.0), D(thr)));
  loom_tpb_store_at(b, SUP, 0, I64(0));
  const loom_sym_expr *qb = loom_tpb_for(b, "qb", blocks, LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *base = qb ? loom_sym_mul(cx, c64, qb) : NULL;
  loom_tpb_if(b, AND(OP2(LT, loom_tpb_idx(b, base), D(nk)), OP2(EQ, loom_tpb_at(b, SUP, 0), I64(0))));
  loom_tpb_store_at(b, OV, 0, I64(0));
  loom_tp_expr *q = block_lane(b, base, "ol"), *iw, *ih;
  overlap(b, k, ac, q, "ol", &iw, &ih);
  count_if(b, OV, AND(AND(OP2(LT, D(q), D(nk)), OP2(GT, D(iw), F64(0.0))), OP2(GT, D(ih), F64(0.0))));
  loom_tpb_end(b); /* ol */
  loom_tpb_if(b, OP2(OR, OP2(GT, loom_tpb_at(b, OV, 0), I64(0)), D(apart)));
  q = block_lane(b, base, "ql");
  overlap(b, k, ac, q, "ql", &iw, &ih);
  loom_tp_expr *qi = D(q);
  loom_tp_expr *ka = loom_tpb_load(b, k->area, &qi);
  loom_tp_expr *inter = loom_tpb_let(b, "inter", OP2(MUL, D(iw), D(ih)));
  loom_tp_expr *uni = loom_tpb_let(b, "uni", OP2(SUB, OP2(ADD, D(aa), ka), D(inter)));
  loom_tp_expr *ratio = loom_tp_select(b->a, OP2(GT, D(uni), F64(0.0)), OP2(DIV, D(inter), D(uni)), F64(0.0));
  loom_tp_expr *iou = loom_tpb_let(b, "iou", loom_tp_select(b->a, OP2(OR, OP2(LE, D(iw), F64(0.0)), OP2(LE, D(ih), F64(0.0))), F64(0.0), ratio));
  count_if(b, SUP, AND(OP2(LT, D(q), D(nk)), OP2(GT, D(iou), D(thr))));
  loom_tpb_end_n(b, 4); /* ql, the if OV, the if, qb */
}

/* BX: Buffer[(nb, n, 4)], SC: Buffer[(nb, nc, n)], M, I, T: scalar operands, dn: i64 = bitlen(n)
 * -> S: (1,) i64 | Y: (sel, 3) i64:
 *   let maxk: i64 = i64(M[..]) (0)  let thr: f64 = f64(I[..]) (0.0)  let sthr: f64 = f64(T[..]) (-inf)
 *   for b in 0..nb reduce { for c in 0..nc reduce {
 *     HN[0] = 0  NK[0] = 0  DONE[0] = false
 *     for i in 0..n reduce { let sc: f64 = f64(SC[b, c, i])
 *       if sc > sthr { HV[HN[0]] = sc  HI[HN[0]] = i  C[0] = HN[0]  HN[0] = HN[0] + 1  <sift up> } }
 *     for st in 0..n reduce { if !DONE[0] {
 *       if HN[0] == 0 || NK[0] >= maxk { DONE[0] = true } else {
 *         let top: i64 = HI[0]  HN[0] = HN[0] - 1  HV[0] = HV[HN[0]]  HI[0] = HI[HN[0]]  <sift down>
 *         <corners of top as a..>  let aa: f64 = (ax2 - ax1) * (ay2 - ay1)  <test kept>
 *         if SUP[0] == 0 { KY1[NK[0]] = ay1 .. KA[NK[0]] = aa  NK[0] = NK[0] + 1
 *           S[0] = S[0] + 1 | Y[CNT[0], 0] = b  Y[CNT[0], 1] = c  Y[CNT[0], 2] = top  CNT[0] = CNT[0] + 1 } } } } } } */
loom_status loom_tp_gen_nms(loom_arena *a, loom_sym_ctx *cx, const char *name, const loom_dtype *types, const int *forms,
                            bool center, bool count, loom_tp_func **result) {
  for (int i = 0; i < 2; i++)
    if (!loom_dtype_is_float(types[i]) || loom_dtype_is_lowp(types[i]))
      return LOOM_ERROR(INVALID_ARGUMENT, "non_max_suppression operand %d of %s", i, loom_dtype_name(types[i]));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *nb = loom_tpb_shape_sym(b, "nb"), *n = loom_tpb_shape_sym(b, "n");
  const loom_sym_expr *bxd[3] = {nb, n, loom_sym_const(cx, 4)};
  const loom_tp_buffer *BX = loom_tpb_buffer(b, "BX", types[0], 3, bxd);
  const loom_sym_expr *nc = loom_tpb_shape_sym(b, "nc"), *scd[3] = {nb, nc, n};
  const loom_tp_buffer *SC = loom_tpb_buffer(b, "SC", types[1], 3, scd);
  const loom_tp_buffer *M = scalar_param(b, "M", forms[0], types[2]);
  const loom_tp_buffer *I = scalar_param(b, "I", forms[1], types[3]);
  const loom_tp_buffer *T = scalar_param(b, "T", forms[2], types[4]);
  nms_heap h = {.b = b, .depth = loom_tpb_scalar(b, "dn")};
  const loom_tp_buffer *S = NULL, *Y = NULL, *CNT = NULL;
  if (count) {
    const loom_sym_expr *one = loom_sym_const(cx, 1);
    S = loom_tpb_buffer(b, "S", LOOM_DTYPE_I64, 1, &one);
    loom_tpb_store_at(b, S, 0, I64(0));
  } else {
    const loom_sym_expr *yd[2] = {loom_tpb_shape_sym(b, "sel"), loom_sym_const(cx, 3)};
    Y = loom_tpb_buffer(b, "Y", LOOM_DTYPE_I64, 2, yd);
    CNT = loom_tpb_local(b, "CNT", LOOM_DTYPE_I64, 1);
  }
  h.HV = loom_tpb_alloc(b, "HV", LOOM_DTYPE_F64, 1, &n, LOOM_TP_SCOPE_LOCAL);
  h.HI = loom_tpb_alloc(b, "HI", LOOM_DTYPE_I64, 1, &n, LOOM_TP_SCOPE_LOCAL);
  h.HN = loom_tpb_local(b, "HN", LOOM_DTYPE_I64, 1);
  h.C = loom_tpb_local(b, "C", LOOM_DTYPE_I64, 1);
  h.W = loom_tpb_local(b, "W", LOOM_DTYPE_I64, 1);
  nms_kept k = {.NK = loom_tpb_local(b, "NK", LOOM_DTYPE_I64, 1)};
  const loom_sym_expr *blocks = loom_sym_floordiv(cx, loom_sym_add(cx, n, loom_sym_const(cx, 63)), loom_sym_const(cx, 64));
  const loom_sym_expr *kn = loom_sym_mul(cx, loom_sym_const(cx, 64), blocks);
  static const char *const corner_names[4] = {"KY1", "KX1", "KY2", "KX2"};
  for (int s = 0; s < 4; s++) k.corner[s] = loom_tpb_alloc(b, corner_names[s], LOOM_DTYPE_F64, 1, &kn, LOOM_TP_SCOPE_LOCAL);
  k.area = loom_tpb_alloc(b, "KA", LOOM_DTYPE_F64, 1, &kn, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *SUP = loom_tpb_local(b, "SUP", LOOM_DTYPE_I64, 1), *OV = loom_tpb_local(b, "OV", LOOM_DTYPE_I64, 1);
  const loom_tp_buffer *DONE = loom_tpb_local(b, "DONE", LOOM_DTYPE_BOOL, 1);
  loom_tp_expr *maxk = loom_tpb_let(b, "maxk", scalar_value(b, M, forms[0], LOOM_DTYPE_I64, I64(0)));
  loom_tp_expr *thr = loom_tpb_let(b, "thr", scalar_value(b, I, forms[1], LOOM_DTYPE_F64, F64(0.0)));
  loom_tp_expr *sthr = loom_tpb_let(b, "sthr", scalar_value(b, T, forms[2], LOOM_DTYPE_F64, F64(-INFINITY)));
  loom_tp_expr *bi = loom_tpg_walk(b, "b", nb), *ci = loom_tpg_walk(b, "c", nc);
  loom_tpb_store_at(b, h.HN, 0, I64(0));
  loom_tpb_store_at(b, k.NK, 0, I64(0));
  loom_tpb_store_at(b, DONE, 0, BOOL(0));
  /* the candidates, pushed */
  loom_tp_expr *i = loom_tpg_walk(b, "i", n);
  loom_tp_expr *sc = loom_tpb_let(b, "sc", loom_tp_cast(a, LOOM_DTYPE_F64, loom_tpb_load(b, SC, (loom_tp_expr *[]){bi, ci, i})));
  loom_tpb_if(b, OP2(GT, D(sc), D(sthr)));
  loom_tp_expr *hn = loom_tpb_at(b, h.HN, 0);
  loom_tpb_store(b, h.HV, &hn, D(sc));
  loom_tpb_store(b, h.HI, &hn, D(i));
  loom_tpb_store_at(b, h.C, 0, D(hn));
  loom_tpg_increment(b, h.HN, loom_tpb_cidx(b, 0));
  sift_up(&h);
  loom_tpb_end_n(b, 2); /* the if, i */
  /* the steps: pop the best, keep it unless a kept box overlaps it */
  loom_tpg_walk(b, "st", n);
  loom_tpb_if(b, NOT(loom_tpb_at(b, DONE, 0)));
  loom_tpb_if(b, OP2(OR, OP2(EQ, loom_tpb_at(b, h.HN, 0), I64(0)), OP2(GE, loom_tpb_at(b, k.NK, 0), D(maxk))));
  loom_tpb_store_at(b, DONE, 0, BOOL(1));
  loom_tpb_else(b);
  loom_tp_expr *top = loom_tpb_let(b, "top", loom_tpb_at(b, h.HI, 0));
  loom_tpb_store_at(b, h.HN, 0, OP2(SUB, loom_tpb_at(b, h.HN, 0), I64(1)));
  loom_tp_expr *last = loom_tpb_at(b, h.HN, 0);
  loom_tpb_store_at(b, h.HV, 0, loom_tpb_load(b, h.HV, &last));
  loom_tpb_store_at(b, h.HI, 0, loom_tpb_load(b, h.HI, &last));
  sift_down(&h);
  loom_tp_expr *ac[4]; /* y1, x1, y2, x2 */
  box_corners(b, BX, 'a', bi, top, center, ac);
  loom_tp_expr *aa = loom_tpb_let(b, "aa", OP2(MUL, OP2(SUB, D(ac[3]), D(ac[1])), OP2(SUB, D(ac[2]), D(ac[0]))));
  test_kept(b, &k, blocks, ac, aa, thr, SUP, OV);
  loom_tpb_if(b, OP2(EQ, loom_tpb_at(b, SUP, 0), I64(0)));
  for (int s = 0; s < 4; s++) {
    loom_tp_expr *nk = loom_tpb_at(b, k.NK, 0);
    loom_tpb_store(b, k.corner[s], &nk, D(ac[s]));
  }
  loom_tp_expr *nk = loom_tpb_at(b, k.NK, 0);
  loom_tpb_store(b, k.area, &nk, D(aa));
  loom_tpg_increment(b, k.NK, loom_tpb_cidx(b, 0));
  if (count) {
    loom_tpg_increment(b, S, loom_tpb_cidx(b, 0));
  } else {
    loom_tp_expr *vals[3] = {bi, ci, top};
    for (int c = 0; c < 3; c++) loom_tpb_store(b, Y, (loom_tp_expr *[]){loom_tpb_at(b, CNT, 0), loom_tpb_cidx(b, c)}, D(vals[c]));
    loom_tpg_increment(b, CNT, loom_tpb_cidx(b, 0));
  }
  return loom_tpb_finish(b, result);
}
