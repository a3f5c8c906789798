/* schedule_transpose.c — rule 0b of the default CPU rules (tp_schedule_cpu.h): a transposing
 * copy in tiles.
 *
 * A nest whose innermost loop v writes its output with unit stride while it reads some input
 * at a stride (v indexes an outer axis of that input, and an outer loop u indexes its last
 * axis) walks one of the two across memory: Y[i0, i1] = X[i1, i0] reads a column of X per row
 * of Y, one cache line per element once a column no longer fits the cache (a 768 x 3072
 * transpose ran 4x slower than ONNX Runtime), and with a power-of-two row pitch even a short
 * column maps to one cache set. Strip-mined by T along u, with u's T iterations innermost, each
 * v reads T consecutive elements of the input (one vector) and writes T rows of the output, whose
 * T lines stay in L1 across the next T values of v:
 *
 *     for .. { for u { .. for v { Y[.., u, .., v] = f(X[.., v, .., u], ..) } } }
 *  -> for u_o in 0..n // T { for .. { .. for v { for u_i in 0..T { .. } } } }
 *     for u_t in 0..n % T { for .. { .. for v { .. } } }                       (the rows left)
 *
 * (u reordered to the top, where its strips are the parallel work even for a batch of one;
 * split; u_i sunk below every loop). When the body is a plain copy (Y[..] = X[..], one dtype),
 * v is split by T as well and the tile becomes square:
 *
 *     for v_o in 0..m // T { for u_i in 0..T unroll { for v_i in 0..T vectorize { copy } } }
 *     for v_t in 0..m % T { for u_i in 0..T { copy } }                         (the columns left)
 *
 * which the CPU code generator turns into T vector loads of the input, an in-register transpose
 * and T vector stores (cg_transpose.c); the strip alone wrote every element with a scalar store.
 * T is one vector of the element type (4 to 16 elements; above 8 only where a tile row is a whole
 * 64-byte line). The nests are then
 * scheduled as any (rule 1: parallel outermost, fused with the next). */
#include "tensorprog/tp_schedule_cpu.h"

enum { MAX_NEST = 8, TILE = 8, SQUARE_MIN = 4, SQUARE_MAX = 16 };

static bool is_var(const loom_tp_expr *e, const loom_sym_expr *var) {
  return e->kind == LOOM_TP_EXPR_SYM && e->u.sym == var;
}

/* The loop (among loops[0..n-2]) whose variable is the last index of a load in `e` that uses
 * v in another index: the strided read. -1 when there is none. */
static int strided_load(const loom_tp_expr *e, const loom_sym_expr *v, loom_tp_stmt *const *loops, int n) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: {
      const loom_tp_buffer *b = e->u.load.buf;
      loom_tp_expr *const *idx = e->u.load.idx;
      if (b->ndim >= 2 && !loom_tp_expr_uses_var(idx[b->ndim - 1], v)) {
        bool strided = false;
        for (int d = 0; d < b->ndim - 1; d++) strided = strided || loom_tp_expr_uses_var(idx[d], v);
        for (int k = 0; k < n - 1 && strided; k++)
          if (is_var(idx[b->ndim - 1], loops[k]->u.loop.var)) return k;
      }
      return -1;
    }
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) {
        int k = strided_load(e->u.op.args[i], v, loops, n);
        if (k >= 0) return k;
      }
      return -1;
    case LOOM_TP_EXPR_CAST: return strided_load(e->u.cast_arg, v, loops, n);
    case LOOM_TP_EXPR_SELECT: {
      int k = strided_load(e->u.select.cond, v, loops, n);
      if (k < 0) k = strided_load(e->u.select.then_e, v, loops, n);
      return k >= 0 ? k : strided_load(e->u.select.else_e, v, loops, n);
    }
    default: return -1;
  }
}

/* The body is Y[..] = X[..]: one load of another buffer of Y's dtype. */
static bool plain_copy(const loom_tp_stmt *store) {
  const loom_tp_expr *v = store->u.store.value;
  return v->kind == LOOM_TP_EXPR_LOAD && v->u.load.buf != store->u.store.buf &&
         v->u.load.buf->dtype == store->u.store.buf->dtype;
}

/* The square tile of a plain copy: v (the loop around u_i, the strip) split by t, its inner
 * loop sunk below u_i, u_i unrolled and v_i vectorised. */
static loom_status square_tile(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *v, int64_t t) {
  loom_tp_stmt *vo = NULL, *vi = NULL, *vt = NULL;
  LOOM_PROPAGATE(loom_tp_split(a, cx, f, v, t, &vo, &vi, &vt));
  loom_tp_stmt *ui = loom_tp_child_loop(vi);
  LOOM_PROPAGATE(loom_tp_reorder(a, cx, f, vi)); /* headers swap: vi now holds u_i, ui holds v_i */
  LOOM_PROPAGATE(loom_tp_set_kind(cx, vi, LOOM_TP_LOOP_UNROLL));
  return loom_tp_set_kind(cx, ui, LOOM_TP_LOOP_VECTORIZE);
}

/* An extent below the tile: nothing to gain. */
static bool short_extent(const loom_sym_expr *n, int64_t tile) {
  int64_t c;
  return loom_sym_is_const(n, &c) && c < tile;
}

loom_status loom_tp_schedule_transpose(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                       const loom_tp_cpu_params *p, loom_strbuf *why) {
  loom_tp_stmt *loops[MAX_NEST];
  int n = 0;
  for (loom_tp_stmt *l = *slot; l && n < MAX_NEST; l = loom_tp_child_loop(l)) {
    bool kind_ok = l->u.loop.kind == LOOM_TP_LOOP_SERIAL || (n == 0 && l->u.loop.kind == LOOM_TP_LOOP_PARALLEL);
    if (l->u.loop.reduce || !kind_ok) return LOOM_OK;
    loops[n++] = l;
  }
  if (n < 2 || loom_tp_child_loop(loops[n - 1])) return LOOM_OK;
  loom_tp_stmt *body = loops[n - 1]->u.loop.body;
  while (body->kind == LOOM_TP_STMT_SEQ && body->u.seq.n == 1) body = body->u.seq.items[0];
  if (body->kind != LOOM_TP_STMT_STORE) return LOOM_OK;
  const loom_tp_buffer *y = body->u.store.buf;
  const loom_sym_expr *v = loops[n - 1]->u.loop.var;
  if (!is_var(body->u.store.idx[y->ndim - 1], v)) return LOOM_OK;
  int j = strided_load(body->u.store.value, v, loops, n);
  if (j < 0 || short_extent(loops[j]->u.loop.extent, TILE) || short_extent(loops[n - 1]->u.loop.extent, TILE)) return LOOM_OK;
  const char *un = loom_sym_var_name(loops[j]->u.loop.var), *vn = loom_sym_var_name(v);
  /* the square tile of a plain copy: one vector of the element type a side */
  int64_t t = TILE, lanes = p->vector_bytes / (int64_t)loom_dtype_size(y->dtype);
  lanes = lanes > SQUARE_MAX ? SQUARE_MAX : lanes;
  /* more than 8 output rows only where each tile row is a whole 64-byte line: a part line stays
   * in L1 for the next tile, and 16 rows of a power-of-two pitch share one set of an 8-way L1
   * (the strips of 16 of a (1, 4096, 85) transpose ran 3.7x slower than strips of 8) */
  if (lanes > TILE && lanes * (int64_t)loom_dtype_size(y->dtype) < 64) lanes = TILE;
  bool square = plain_copy(body) && lanes >= SQUARE_MIN && !short_extent(loops[j]->u.loop.extent, lanes) &&
                !short_extent(loops[n - 1]->u.loop.extent, lanes);
  if (square) t = lanes;

  /* u to the top (its strips are the parallel work; a batch of one still splits), split, and
   * its strip sunk below every loop */
  loom_status st = LOOM_OK;
  for (int k = 0; k < n && !st; k++) st = loom_tp_set_kind(cx, loops[k], LOOM_TP_LOOP_SERIAL);
  for (int k = j - 1; k >= 0 && !st; k--) st = loom_tp_reorder(a, cx, f, loops[k]);
  loom_tp_stmt *uo = NULL, *ui = NULL, *ut = NULL;
  if (!st) st = loom_tp_split(a, cx, f, loops[0], t, &uo, &ui, &ut);
  loom_tp_stmt *l = ui, *around = NULL; /* the loop around u_i once it is innermost: v */
  for (int k = 0; !st && k < n - 1; k++) {
    loom_tp_stmt *c = loom_tp_child_loop(l);
    st = loom_tp_reorder(a, cx, f, l);
    around = l;
    l = c;
  }
  if (!st && square && around) {
    loom_status sq = square_tile(a, cx, f, around, t);
    if (sq) { /* the strips stay (of t); a primitive that refused after the split left a correct program */
      loom_strbuf_printf(why, "loops %s, %s: no square tile (%s)\n", un, vn, loom_status_message(sq));
      loom_status_free(sq);
      square = false;
    }
  }
  loom_tp_stmt *next = !st && square && uo ? loom_tp_child_loop(uo) : NULL;
  if (next && !loom_tp_child_loop(next)) {
    /* u_o { b { v_o ..; v_t .. } }: rule 1 fuses only perfect nests; the batch shares the strips */
    loom_tp_stmt *fused;
    loom_status fs = loom_tp_fuse(a, cx, f, uo, &fused);
    if (!fs) loom_strbuf_printf(why, "loops %s_o, %s: fused (a batch of one still splits)\n", un, loom_sym_var_name(next->u.loop.var));
    loom_status_free(fs);
  }
  if (st) {
    /* every primitive keeps the program correct: a refusal leaves a partial tiling */
    loom_strbuf_printf(why, "loops %s, %s: transposed copy, tiling stopped (%s)\n", un, vn, loom_status_message(st));
    loom_status_free(st);
    return LOOM_OK;
  }
  if (square)
    loom_strbuf_printf(why, "loops %s, %s: transposed copy, square tiles of %lld x %lld (%s indexes the last axis of a read strided in %s)\n",
                       un, vn, (long long)t, (long long)t, un, vn);
  else
    loom_strbuf_printf(why, "loop %s: transposed copy, strips of %lld innermost (%s indexes the last axis of a read strided in %s)\n",
                       un, (long long)t, un, vn);
  return LOOM_OK;
}
