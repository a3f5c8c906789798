/* schedule_conv.c — the CPU rule for a convolution over packed weights (loom_tp_gen_conv_packed,
 * docs/codegen.md "Convolution over packed weights"): the nest
 *
 *   for i0 { for ob { for ii in 0..B { for j in 0..p {
 *     Y[.., j] = init
 *     for r reduce { for t0 reduce { .. for tl reduce { Y[.., j] = Y[.., j] + a * b } } } } } } }
 *
 * (a free of j: the packed weight's broadcast; b a load whose last index is `j + rest`: the input's
 * phase plane read with unit stride along the output positions) becomes register tiles of B rows
 * (ii) by V vectors of L lanes (j), their accumulators a Local that lane mode keeps in registers,
 * the innermost tap loop unrolled, b read where it lies:
 *
 *   for iq in 0..n*q parallel {                                    i0 = iq // q, ob = iq % q
 *     if p >= 12*L { tiles(V = 3) } else { if p >= 2*L { tiles(2) } else { if p >= L { tiles(1) } else { columns } } }
 *   tiles(V): for jt in 0..(p + V*L - 1) // (V*L) {                the last tile ends at p - 1
 *     jb = min(V*L*jt, p - V*L)
 *     alloc acc: Local[(B, V, L), f32]
 *     for ii unroll { for jv unroll { for ji vectorize { acc[ii, jv, ji] = init } } }
 *     for r reduce { .. for tl unroll reduce { for ii unroll { for jv unroll { for ji vectorize {
 *       acc[ii, jv, ji] = acc[ii, jv, ji] + a * b[j := jb + L*jv + ji] } } } } }
 *     for ii unroll { for jv unroll { for ji vectorize { Y[.., jb + L*jv + ji] = acc[ii, jv, ji] } } } }
 *
 * columns (p < L; parallel over (i0, ob, column tile) instead): tiles of C = 8, 4, 2 or 1 columns
 * (C < L, the widest with C <= p), the block's B output channels the vector:
 *   for jc unroll { for ii vectorize { acc[jc, 0, ii] = init } }
 *   for r reduce { .. { for jc unroll { for ii vectorize { acc[jc, 0, ii] += a * b[j := jb + jc] } } } }
 *   for jc unroll { for ii unroll { Y[.., jb + jc] = acc[jc, 0, ii] } }
 *
 * With 16-lane vectors (AVX-512) the 8 x 48 tile holds 24 accumulators and takes 8 broadcasts and 3
 * loads per 24 FMAs; narrower vectors take one vector per tile (8 accumulators fit 16 registers).
 * The overlapping last tile computes some columns twice, each time the same value (init does not
 * read Y). Built directly from the matched pieces (expressions copied with substitution), on a
 * match only; anything else is left to the other rules. */
#include <stdio.h>
#include <string.h>

#include "tensorprog/tp_schedule_cpu.h"

enum { MAX_RED = 1 + 6, MAX_UNROLL_TAPS = 16 };

/* The recognised pieces of the nest. */
typedef struct conv_nest {
  loom_tp_stmt *loops[4];          /* i0, ob, ii, j */
  int64_t rows;                    /* ii's extent B */
  const loom_tp_stmt *init;        /* Y[idx] = init */
  loom_tp_stmt *red[MAX_RED];      /* the reduction nest, outer to inner */
  int nred;
  const loom_tp_buffer *y;         /* the output */
  loom_tp_expr *const *idx;        /* its indices (init's) */
  const loom_tp_expr *a, *b;       /* the product's operands: a free of j, b the unit-stride load */
} conv_nest;

static bool uses(const loom_sym_expr *e, const loom_sym_expr *v) { return loom_sym_uses_var(e, v); }

static bool expr_uses(const loom_tp_expr *e, const loom_sym_expr *v) {
  switch (e->kind) {
    case LOOM_TP_EXPR_SYM: return uses(e->u.sym, v);
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (expr_uses(e->u.load.idx[d], v)) return true;
      return false;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (expr_uses(e->u.op.args[i], v)) return true;
      return false;
    case LOOM_TP_EXPR_CAST: return expr_uses(e->u.cast_arg, v);
    case LOOM_TP_EXPR_SELECT:
      return expr_uses(e->u.select.cond, v) || expr_uses(e->u.select.then_e, v) || expr_uses(e->u.select.else_e, v);
    case LOOM_TP_EXPR_LETREF: return true; /* a let's value: not tracked, so refused */
    default: return false;
  }
}

static loom_tp_stmt *strip(loom_tp_stmt *s) {
  while (s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) s = s->u.seq.items[0];
  return s;
}

/* Whether load e is buf at exactly the index symbols idx. */
static bool at(const loom_tp_expr *e, const loom_tp_buffer *buf, loom_tp_expr *const *idx) {
  if (e->kind != LOOM_TP_EXPR_LOAD || e->u.load.buf != buf) return false;
  for (int d = 0; d < buf->ndim; d++)
    if (e->u.load.idx[d]->kind != LOOM_TP_EXPR_SYM || e->u.load.idx[d]->u.sym != idx[d]->u.sym) return false;
  return true;
}

/* b: a load whose last index is `j + rest` (rest free of j and ii) and whose other indices are free of
 * j and ii. */
static bool unit_in_j(loom_sym_ctx *cx, const loom_tp_expr *b, const loom_sym_expr *j, const loom_sym_expr *ii) {
  if (b->kind != LOOM_TP_EXPR_LOAD) return false;
  int last = b->u.load.buf->ndim - 1;
  for (int d = 0; d < last; d++)
    if (expr_uses(b->u.load.idx[d], j) || expr_uses(b->u.load.idx[d], ii)) return false;
  const loom_tp_expr *x = b->u.load.idx[last];
  if (x->kind != LOOM_TP_EXPR_SYM) return false;
  const loom_sym_expr *rest = loom_sym_sub(cx, x->u.sym, j);
  return rest && !uses(rest, j) && !uses(rest, ii);
}

static bool match(loom_sym_ctx *cx, loom_tp_stmt *top, conv_nest *m) {
  *m = (conv_nest){0};
  loom_tp_stmt *l = strip(top);
  for (int k = 0; k < 4; k++) {
    if (l->kind != LOOM_TP_STMT_FOR || l->u.loop.reduce || l->u.loop.kind != LOOM_TP_LOOP_SERIAL) return false;
    m->loops[k] = l;
    if (k < 3) l = strip(l->u.loop.body);
  }
  if (!loom_sym_is_const(m->loops[2]->u.loop.extent, &m->rows) || m->rows < 2 || m->rows > 16) return false;
  loom_tp_stmt *body = m->loops[3]->u.loop.body;
  if (body->kind != LOOM_TP_STMT_SEQ || body->u.seq.n != 2) return false;
  const loom_tp_stmt *init = body->u.seq.items[0];
  loom_tp_stmt *r = body->u.seq.items[1];
  if (init->kind != LOOM_TP_STMT_STORE || init->u.store.buf->dtype != LOOM_DTYPE_F32) return false;
  m->init = init;
  m->y = init->u.store.buf;
  m->idx = init->u.store.idx;
  const loom_sym_expr *j = m->loops[3]->u.loop.var, *ii = m->loops[2]->u.loop.var;
  int nd = m->y->ndim;
  for (int d = 0; d < nd; d++)
    if (m->idx[d]->kind != LOOM_TP_EXPR_SYM || (d < nd - 1 && uses(m->idx[d]->u.sym, j))) return false;
  if (m->idx[nd - 1]->u.sym != j || loom_tp_expr_loads(init->u.store.value, m->y)) return false;
  while (r->kind == LOOM_TP_STMT_FOR && r->u.loop.reduce && r->u.loop.kind == LOOM_TP_LOOP_SERIAL && m->nred < MAX_RED) {
    m->red[m->nred++] = r;
    r = strip(r->u.loop.body);
  }
  if (!m->nred || r->kind != LOOM_TP_STMT_STORE || r->u.store.buf != m->y) return false;
  for (int d = 0; d < nd; d++) {
    if (r->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM || r->u.store.idx[d]->u.sym != m->idx[d]->u.sym) return false;
    for (int k = 0; k < m->nred; k++)
      if (uses(m->idx[d]->u.sym, m->red[k]->u.loop.var)) return false;
  }
  for (int k = 1; k < m->nred; k++) { /* the taps: constant extents */
    int64_t e;
    if (!loom_sym_is_const(m->red[k]->u.loop.extent, &e)) return false;
  }
  const loom_tp_expr *v = r->u.store.value;
  if (v->kind != LOOM_TP_EXPR_OP || v->u.op.op != LOOM_TP_OP_ADD) return false;
  const loom_tp_expr *prod = at(v->u.op.args[0], m->y, m->idx) ? v->u.op.args[1] : at(v->u.op.args[1], m->y, m->idx) ? v->u.op.args[0] : NULL;
  if (!prod || prod->kind != LOOM_TP_EXPR_OP || prod->u.op.op != LOOM_TP_OP_MUL) return false;
  const loom_tp_expr *x = prod->u.op.args[0], *y = prod->u.op.args[1];
  if (expr_uses(x, j)) {
    const loom_tp_expr *t = x;
    x = y;
    y = t;
  }
  if (expr_uses(x, j) || loom_tp_expr_loads(x, m->y) || loom_tp_expr_loads(y, m->y) || !unit_in_j(cx, y, j, ii)) return false;
  m->a = x;
  m->b = y;
  return true;
}

/* What building a tile needs: the matched nest, the substitutions of its variables. */
typedef struct conv_cx {
  loom_arena *a;
  loom_sym_ctx *cx;
  const conv_nest *m;
  const loom_sym_expr *i0, *ob; /* the values of loops 0 and 1 in the tiles being built (from their parallel loop) */
  const loom_sym_expr *obq;     /* column tiles of G blocks: the group (ob = min(G*obq + g, q - 1)) */
  int lanes, groups;            /* groups: G, the weight blocks of one column tile */
  bool oom;
} conv_cx;

static const loom_sym_expr *var(conv_cx *c, const char *name) {
  const loom_sym_expr *v = loom_sym_var_new(c->cx, name, LOOM_SYM_VAR_SHAPE);
  if (!v) c->oom = true;
  return v;
}

static const loom_sym_expr *K(conv_cx *c, int64_t v) { return loom_sym_const(c->cx, v); }

/* The index array [x, y, z] (index values of the three symbols), in the arena: stores and loads
 * keep the array they are given. */
static loom_tp_expr **idx3(conv_cx *c, const loom_sym_expr *x, const loom_sym_expr *y, const loom_sym_expr *z) {
  loom_tp_expr **r = LOOM_ARENA_ARRAY(c->a, loom_tp_expr *, 3);
  if (r) r[0] = loom_tp_sym(c->a, x), r[1] = loom_tp_sym(c->a, y), r[2] = loom_tp_sym(c->a, z);
  if (!r || !r[0] || !r[1] || !r[2]) c->oom = true;
  return c->oom ? NULL : r;
}

/* A copy of e with loops 0..3 at (i0, ob, ii, jv) and the reduction variables at rv (NULL: kept). */
static loom_tp_expr *subst(conv_cx *c, const loom_tp_expr *e, const loom_sym_expr *ii, const loom_sym_expr *jv,
                           const loom_sym_expr *const *rv) {
  const loom_sym_expr *vars[4 + MAX_RED], *vals[4 + MAX_RED];
  size_t n = 0;
  const loom_sym_expr *four[4] = {c->i0, c->ob, ii, jv};
  for (int k = 0; k < 4; k++) vars[n] = c->m->loops[k]->u.loop.var, vals[n++] = four[k];
  for (int k = 0; rv && k < c->m->nred; k++) vars[n] = c->m->red[k]->u.loop.var, vals[n++] = rv[k];
  loom_tp_expr *r = loom_tp_expr_copy_subst(c->a, c->cx, e, vars, vals, n);
  if (!r) c->oom = true;
  return r;
}

/* `for ii unroll { for jv unroll { for ji vectorize { body(ii, jb + L*jv + ji, acc[ii, jv, ji]) } } }`:
 * what(c, ii, j, accidx, ud) makes the body statement. */
typedef loom_tp_stmt *(*tile_body_fn)(conv_cx *c, const loom_sym_expr *ii, const loom_sym_expr *j, loom_tp_expr **acc_idx, void *ud);

static loom_tp_stmt *tile_nest(conv_cx *c, int V, const loom_sym_expr *jb, const char *tag, tile_body_fn what, void *ud) {
  char n1[32], n2[32], n3[32];
  snprintf(n1, sizeof n1, "ii_%s", tag);
  snprintf(n2, sizeof n2, "jv_%s", tag);
  snprintf(n3, sizeof n3, "ji_%s", tag);
  const loom_sym_expr *ii = var(c, n1), *jv = var(c, n2), *ji = var(c, n3);
  if (c->oom) return NULL;
  const loom_sym_expr *j = loom_sym_add(c->cx, jb, loom_sym_add(c->cx, loom_sym_mul(c->cx, jv, K(c, c->lanes)), ji));
  loom_tp_expr **ai = idx3(c, ii, jv, ji);
  loom_tp_stmt *s = ai && j ? what(c, ii, j, ai, ud) : NULL;
  s = loom_tp_for(c->a, ji, K(c, c->lanes), LOOM_TP_LOOP_VECTORIZE, false, s);
  s = loom_tp_for(c->a, jv, K(c, V), LOOM_TP_LOOP_UNROLL, false, s);
  s = loom_tp_for(c->a, ii, K(c, c->m->rows), LOOM_TP_LOOP_UNROLL, false, s);
  if (!s || !j) c->oom = true;
  return s;
}

typedef struct tile_ud {
  const loom_tp_buffer *acc;
  const loom_sym_expr *const *rv; /* the reduction's new variables */
} tile_ud;

static loom_tp_stmt *init_body(conv_cx *c, const loom_sym_expr *ii, const loom_sym_expr *j, loom_tp_expr **ai, void *ud) {
  const tile_ud *t = ud;
  return loom_tp_store(c->a, t->acc, ai, subst(c, c->m->init->u.store.value, ii, j, NULL));
}

static loom_tp_stmt *update_body(conv_cx *c, const loom_sym_expr *ii, const loom_sym_expr *j, loom_tp_expr **ai, void *ud) {
  const tile_ud *t = ud;
  loom_tp_expr **ai2 = idx3(c, ai[0]->u.sym, ai[1]->u.sym, ai[2]->u.sym);
  if (!ai2) return NULL;
  loom_tp_expr *prod = loom_tp_op2(c->a, LOOM_TP_OP_MUL, subst(c, c->m->a, ii, j, t->rv), subst(c, c->m->b, ii, j, t->rv));
  return loom_tp_store(c->a, t->acc, ai, loom_tp_op2(c->a, LOOM_TP_OP_ADD, loom_tp_load(c->a, t->acc, ai2), prod));
}

static loom_tp_stmt *store_body(conv_cx *c, const loom_sym_expr *ii, const loom_sym_expr *j, loom_tp_expr **ai, void *ud) {
  const tile_ud *t = ud;
  int nd = c->m->y->ndim;
  loom_tp_expr **yi = LOOM_ARENA_ARRAY(c->a, loom_tp_expr *, (size_t)nd);
  if (!yi) return NULL;
  for (int d = 0; d < nd; d++) yi[d] = subst(c, c->m->idx[d], ii, j, NULL);
  return loom_tp_store(c->a, c->m->y, yi, loom_tp_load(c->a, t->acc, ai));
}

/* `for jc unroll { [for g unroll {] for ii KIND { body(ii, jb + jc, acc[jc, g, ii]) } } }`: a column
 * tile of G weight blocks (ob = min(G*obq + g, q - 1): a last group short of blocks repeats the last
 * one, storing its equal values again), each block's B output channels a vector (init and update:
 * vectorize, the weight read contiguous in ii and the input broadcast once per column for all G
 * blocks; the store to Y, strided in ii: unrolled). */
static loom_tp_stmt *col_nest(conv_cx *c, int C, const loom_sym_expr *jb, const char *tag, loom_tp_loop_kind kind, tile_body_fn what,
                              void *ud) {
  char n1[32], n2[32], n3[32];
  snprintf(n1, sizeof n1, "ii_%s", tag);
  snprintf(n2, sizeof n2, "jc_%s", tag);
  snprintf(n3, sizeof n3, "g_%s", tag);
  const loom_sym_expr *ii = var(c, n1), *jc = var(c, n2), *g = c->groups > 1 ? var(c, n3) : K(c, 0);
  if (c->oom) return NULL;
  if (c->groups > 1)
    c->ob = loom_sym_min(c->cx, loom_sym_add(c->cx, loom_sym_mul(c->cx, c->obq, K(c, c->groups)), g),
                         loom_sym_sub(c->cx, c->m->loops[1]->u.loop.extent, K(c, 1)));
  const loom_sym_expr *j = loom_sym_add(c->cx, jb, jc);
  loom_tp_expr **ai = idx3(c, jc, g, ii);
  loom_tp_stmt *s = ai && j && c->ob ? what(c, ii, j, ai, ud) : NULL;
  s = loom_tp_for(c->a, ii, K(c, c->m->rows), kind, false, s);
  if (c->groups > 1) s = loom_tp_for(c->a, g, K(c, c->groups), LOOM_TP_LOOP_UNROLL, false, s);
  s = loom_tp_for(c->a, jc, K(c, C), LOOM_TP_LOOP_UNROLL, false, s);
  if (!s || !j || !c->ob) c->oom = true;
  return s;
}

/* The body of one tile: its accumulators acc (dims), init, the reduction (the innermost tap loop
 * unrolled up to MAX_UNROLL_TAPS), the store to Y; the tile `width` vectors of L lanes at jb
 * (tile_nest), or with cols `width` columns at jb, the block's rows the vector (col_nest). */
static loom_tp_stmt *tile_seq(conv_cx *c, const char *tag, const loom_sym_expr *const *dims, bool cols, int width, const loom_sym_expr *jb) {
  const conv_nest *m = c->m;
  char name[32];
  snprintf(name, sizeof name, "acc_%s", tag);
  loom_tp_buffer *acc = loom_tp_buffer_new(c->a, name, LOOM_DTYPE_F32, 3, dims, LOOM_TP_SCOPE_LOCAL);
  const loom_sym_expr *rv[MAX_RED];
  for (int k = 0; k < m->nred; k++) {
    snprintf(name, sizeof name, "%s_%s", loom_sym_var_name(m->red[k]->u.loop.var), tag);
    rv[k] = var(c, name);
  }
  if (!acc || !jb || c->oom) return NULL;
  tile_ud ud = {acc, rv};
  char t[3][24];
  tile_body_fn what[3] = {init_body, update_body, store_body};
  loom_tp_stmt *items[4] = {loom_tp_alloc_stmt(c->a, acc)};
  for (int i = 0; i < 3; i++) {
    snprintf(t[i], sizeof t[i], "%c%s", "ius"[i], tag);
    items[1 + i] = cols ? col_nest(c, width, jb, t[i], i < 2 ? LOOM_TP_LOOP_VECTORIZE : LOOM_TP_LOOP_UNROLL, what[i], &ud)
                        : tile_nest(c, width, jb, t[i], what[i], &ud);
  }
  for (int k = m->nred - 1; k >= 0; k--) {
    int64_t e = 0;
    bool unroll = k == m->nred - 1 && k > 0 && loom_sym_is_const(m->red[k]->u.loop.extent, &e) && e <= MAX_UNROLL_TAPS;
    items[2] = loom_tp_for(c->a, rv[k], m->red[k]->u.loop.extent, unroll ? LOOM_TP_LOOP_UNROLL : LOOM_TP_LOOP_SERIAL, true, items[2]);
  }
  loom_tp_stmt *s = loom_tp_seq(c->a, items, 4);
  if (!s || !items[0] || !items[1] || !items[2] || !items[3]) c->oom = true;
  return c->oom ? NULL : s;
}

/* X's elements a chunk of columns may read: a quarter of a 2 MiB L2 (docs/codegen.md).
 * PAR_MIN: the parallel iterations the columns are cut into at least (when there are as many
 * tiles), so that 2 to 4 threads, each claiming up to 4 chunks, find work of even size. */
enum { CHUNK_FLOATS = 1 << 17, PAR_MIN = 16 };

/* The chunked order of tiles of cw columns: a parallel loop over (i0, column chunk, block), block
 * one of nblk (weight blocks, or groups of them), and in it a serial loop over the chunk's tiles. A
 * chunk is at most as many tiles as keep the part of b they read (its buffer's elements per column:
 * the dims between its first and last, times the chunk's columns) within CHUNK_FLOATS, so the
 * blocks of one chunk reuse it from the cache; b smaller than that is one chunk, every block
 * reusing all of it -- unless batch x blocks are fewer than PAR_MIN, then the columns are cut into
 * more chunks, up to one tile each. The tiles are dealt evenly: chunk jc of nch holds tiles
 * floor(jc*T/nch) .. floor((jc+1)*T/nch) - 1 (a 269-tile stem in chunks of 227 and 42 became 135
 * and 134). chunk_open sets c->i0, *blk and *jt (the tile's index); chunk_close puts the loops
 * around the tile's body. */
typedef struct chunk_order {
  const loom_sym_expr *iq, *jt2;     /* the parallel and the serial loop's variables */
  const loom_sym_expr *n, *in_chunk; /* their extents */
} chunk_order;

static bool chunk_open(conv_cx *c, const char *tag, int64_t cw, const loom_sym_expr *nblk, chunk_order *o,
                       const loom_sym_expr **blk, const loom_sym_expr **jt) {
  loom_sym_ctx *cx = c->cx;
  const conv_nest *m = c->m;
  const loom_sym_expr *p = m->loops[3]->u.loop.extent;
  char name[32];
  const loom_tp_buffer *xb = m->b->u.load.buf;
  const loom_sym_expr *rows = K(c, 1);
  for (int d = 1; d + 1 < xb->ndim; d++) rows = loom_sym_mul(cx, rows, xb->dims[d]);
  const loom_sym_expr *ntiles = loom_sym_floordiv(cx, loom_sym_add(cx, p, K(c, cw - 1)), K(c, cw));
  const loom_sym_expr *ch = loom_sym_max(cx, loom_sym_floordiv(cx, K(c, CHUNK_FLOATS), loom_sym_mul(cx, rows, K(c, cw))), K(c, 1));
  const loom_sym_expr *nch = loom_sym_floordiv(cx, loom_sym_add(cx, ntiles, loom_sym_sub(cx, ch, K(c, 1))), ch);
  /* at least ceil(PAR_MIN / (n*nblk)) chunks, at most one per tile (ntiles >= 1: the caller's guard) */
  const loom_sym_expr *nb = loom_sym_max(cx, loom_sym_mul(cx, m->loops[0]->u.loop.extent, nblk), K(c, 1));
  const loom_sym_expr *want = loom_sym_floordiv(cx, loom_sym_add(cx, K(c, PAR_MIN - 1), nb), nb);
  nch = loom_sym_min(cx, loom_sym_max(cx, nch, want), ntiles);
  snprintf(name, sizeof name, "iq_%s", tag);
  o->iq = var(c, name);
  snprintf(name, sizeof name, "jt_%s", tag);
  o->jt2 = var(c, name);
  if (c->oom || !nch) return false;
  const loom_sym_expr *nq = loom_sym_mul(cx, nch, nblk);
  const loom_sym_expr *jc = loom_sym_floormod(cx, loom_sym_floordiv(cx, o->iq, nblk), nch);
  c->i0 = loom_sym_floordiv(cx, o->iq, nq);
  *blk = loom_sym_floormod(cx, o->iq, nblk);
  const loom_sym_expr *first = loom_sym_floordiv(cx, loom_sym_mul(cx, jc, ntiles), nch);
  *jt = loom_sym_add(cx, first, o->jt2);
  o->in_chunk = loom_sym_sub(cx, loom_sym_floordiv(cx, loom_sym_mul(cx, loom_sym_add(cx, jc, K(c, 1)), ntiles), nch), first);
  o->n = loom_sym_mul(cx, m->loops[0]->u.loop.extent, nq);
  if (!*jt || !o->in_chunk || !o->n) c->oom = true;
  return !c->oom;
}

static loom_tp_stmt *chunk_close(conv_cx *c, const chunk_order *o, loom_tp_stmt *body) {
  loom_tp_stmt *s = body ? loom_tp_for(c->a, o->jt2, o->in_chunk, LOOM_TP_LOOP_SERIAL, false, body) : NULL;
  s = s ? loom_tp_for(c->a, o->iq, o->n, LOOM_TP_LOOP_PARALLEL, false, s) : NULL;
  if (!s) c->oom = true;
  return s;
}

/* The tiles of V vectors over the columns (p >= V*L: the caller's guard), in the chunked order
 * over the weight blocks. */
static loom_tp_stmt *tiles(conv_cx *c, int V) {
  loom_sym_ctx *cx = c->cx;
  const conv_nest *m = c->m;
  const loom_sym_expr *p = m->loops[3]->u.loop.extent;
  int64_t cw = (int64_t)V * c->lanes;
  char tag[16];
  snprintf(tag, sizeof tag, "v%d", V);
  chunk_order o;
  const loom_sym_expr *jt;
  if (!chunk_open(c, tag, cw, m->loops[1]->u.loop.extent, &o, &c->ob, &jt)) return NULL;
  const loom_sym_expr *jb = loom_sym_min(cx, loom_sym_mul(cx, jt, K(c, cw)), loom_sym_sub(cx, p, K(c, cw)));
  const loom_sym_expr *dims[3] = {K(c, m->rows), K(c, V), K(c, c->lanes)};
  return chunk_close(c, &o, tile_seq(c, tag, dims, false, V, jb));
}

/* Column tiles: C columns (the last ending at p - 1; C = 1: one tile per column) by G weight
 * blocks, each block's B output channels a vector, C x G accumulators, per tap G loads of the
 * packed weight and C broadcasts of the input. One block (G = 1): fewer columns than a vector (a
 * 1-D convolution over a few frames, a patch embedding of a small image); CHANNEL_BLOCKS: the small
 * planes of a CNN's last stages. In parallel over (i0, group of G blocks, tile), or with `chunked`
 * in the chunked order over the groups (chunk_open: a large plane's input read from the cache by
 * every group; AVX2's channel tiles). */
static loom_tp_stmt *col_tiles(conv_cx *c, int C, int G, bool chunked) {
  loom_sym_ctx *cx = c->cx;
  const conv_nest *m = c->m;
  const loom_sym_expr *p = m->loops[3]->u.loop.extent, *qe = m->loops[1]->u.loop.extent;
  char tag[16], name[32];
  snprintf(tag, sizeof tag, G > 1 ? "c%dg%d" : "c%d", C, G);
  const loom_sym_expr *nt = loom_sym_floordiv(cx, loom_sym_add(cx, p, K(c, C - 1)), K(c, C));
  const loom_sym_expr *ng = G > 1 ? loom_sym_floordiv(cx, loom_sym_add(cx, qe, K(c, G - 1)), K(c, G)) : qe;
  if (!nt || !ng) return NULL;
  const loom_sym_expr *iq = NULL, *jt = NULL, *blk = NULL;
  chunk_order o;
  if (chunked) {
    if (!chunk_open(c, tag, C, ng, &o, &blk, &jt)) return NULL;
  } else {
    snprintf(name, sizeof name, "iq_%s", tag);
    iq = var(c, name);
    if (c->oom) return NULL;
    jt = loom_sym_floormod(cx, iq, nt);
    blk = loom_sym_floormod(cx, loom_sym_floordiv(cx, iq, nt), ng);
    c->i0 = loom_sym_floordiv(cx, iq, loom_sym_mul(cx, nt, ng));
  }
  c->obq = c->ob = blk;
  const loom_sym_expr *jb = C == 1 ? jt : loom_sym_min(cx, loom_sym_mul(cx, jt, K(c, C)), loom_sym_sub(cx, p, K(c, C)));
  const loom_sym_expr *dims[3] = {K(c, C), K(c, G), K(c, m->rows)};
  c->groups = G;
  loom_tp_stmt *s = tile_seq(c, tag, dims, true, C, jb);
  c->groups = 1;
  if (chunked) return chunk_close(c, &o, s);
  const loom_sym_expr *n = loom_sym_mul(cx, loom_sym_mul(cx, m->loops[0]->u.loop.extent, ng), nt);
  s = s && n ? loom_tp_for(c->a, iq, n, LOOM_TP_LOOP_PARALLEL, false, s) : NULL;
  if (!s) c->oom = true;
  return s;
}

/* Channel tiles (splits_512 machines; col_tiles of CHANNEL_COLS columns by CHANNEL_BLOCKS weight
 * blocks: 21 accumulators of 8 lanes, per tap 3 weight loads and 7 broadcasts): a plane of a CNN's
 * last stages (7 x 7, 14 x 14) has too few positions for vectors of 16 -- 49 were 64 computed --
 * where 7 columns by 24 output channels cover them (1x1 2048 -> 512 at 7 x 7: 1.14 -> 0.96 ms, ORT
 * 0.93). Chosen at run time where their columns, weighted CHANNEL_COST against the 16-lane tiles'
 * (20 for 3 vectors, 21 for 2, 23 for 1), cost less, on at most CHANNEL_MAX_GRID positions (each
 * group of blocks reads the whole input: a larger plane's outgrows the caches). */
enum { CHANNEL_COLS = 7, CHANNEL_BLOCKS = 3, CHANNEL_COST = 22, CHANNEL_MAX_GRID = 256 };

/* Channel tiles for AVX2, where a block of B = 8 output channels is one vector: NARROW_COLS columns by
 * NARROW_BLOCKS blocks (8 accumulators, per tap 4 broadcasts and 2 weight loads for 8 FMAs, against
 * the 8 x 8 tile's 8 broadcasts and 1 load), in the chunked order. The tile's store transposes:
 * 64 scalar stores, paid back only by a long reduction (input channels x taps >= NARROW_MIN_RED).
 * Measured on Zen 3 against ONNX Runtime, 1 thread (bench/ops, Loom / ORT, 8 x 8 tiles -> these):
 * 3x3 64->64 56x56 1.52 -> 1.07, 256->256 14x14 1.59 -> 1.13, s2 64->128 1.78 -> 1.53, dilated
 * 1.56 -> 1.17, stem 7x7 3->64 1.22 -> 1.05, 1-D k5 128 1.28 -> 0.89, 1x1 256->64 1.18 -> 1.00;
 * but 1x1 64->256 (a reduction of 64) 1.10 -> 1.40: kept on the 8 x 8 tiles. With taps unrolled
 * (3 x 3: the broadcasts shared between neighbouring taps live across them), 12 accumulators (6 x 2,
 * 4 x 3) spill and measured slower than 8 (3x3 64->64 56x56 3.1 -> 7.0 ms). A 1 x 1 kernel has one
 * tap: its loop holds only the accumulators, the blocks' weights and one column's broadcast, and
 * NARROW_BLOCKS_1X1 = 3 blocks (12 accumulators: FMA latency 4 x 2 pipes needs 8 chains in flight,
 * which 8 accumulators meet with no slack) measured faster where the three blocks' weights stay in
 * L1 (a reduction of at most NARROW_MAX_RED_1X1: 24 KiB; Zen 3, 1 thread, `loom run` minima of 200
 * calls alternated: 1x1 144->24 at 56x56 0.548 / 0.582 -> 0.363 / 0.368 ms, 160->960 at 7x7 0.294 /
 * 0.309 -> 0.281 / 0.276; 960->160 at 7x7, 92 KiB of weights a tile, 0.27 -> 0.28, and 400->400
 * level: left on two blocks), where the blocks rounded up to groups of 3 are at most 5/4 of those
 * rounded up to 2 (4 blocks: 6 against 4). */
enum { NARROW_COLS = 4, NARROW_BLOCKS = 2, NARROW_BLOCKS_1X1 = 3, NARROW_MIN_RED = 128, NARROW_MAX_RED_1X1 = 256 };

/* `lhs >= rhs` of two index values. */
static loom_tp_expr *ge(conv_cx *c, const loom_sym_expr *lhs, const loom_sym_expr *rhs) {
  loom_tp_expr *e = loom_tp_op2(c->a, LOOM_TP_OP_GE, loom_tp_sym(c->a, lhs), loom_tp_sym(c->a, rhs));
  if (!e) c->oom = true;
  return e;
}

/* ceil(p / w) * w: the columns tiles of w compute. */
static const loom_sym_expr *covered(conv_cx *c, const loom_sym_expr *p, int64_t w) {
  return loom_sym_mul(c->cx, loom_sym_floordiv(c->cx, loom_sym_add(c->cx, p, K(c, w - 1)), K(c, w)), K(c, w));
}

loom_status loom_tp_schedule_conv(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot, const loom_tp_cpu_params *p,
                                  loom_strbuf *why, bool *done) {
  (void)f;
  *done = false;
  conv_nest m;
  if (!match(cx, *slot, &m)) return LOOM_OK;
  int L = p->vector_bytes >= 64 ? 16 : p->vector_bytes >= 32 ? 8 : 4;
  conv_cx c = {.a = a, .cx = cx, .m = &m, .lanes = L, .groups = 1};
  const loom_sym_expr *P = m.loops[3]->u.loop.extent;
  /* fewer columns than a vector: column tiles of 8, 4, 2 or 1 (those narrower than a vector) */
  loom_tp_stmt *body = col_tiles(&c, 1, 1, false);
  for (int C = 2; C <= 8 && C < L; C *= 2) {
    loom_tp_stmt *t = col_tiles(&c, C, 1, false);
    body = body && t ? loom_tp_if(a, ge(&c, P, K(&c, C)), t, body) : NULL;
  }
  loom_strbuf_printf(why, "nest %s: convolution over packed weights, in parallel over batch x column chunks x weight blocks: ",
                     loom_sym_var_name(m.loops[0]->u.loop.var));
  if (L >= 16) {
    /* 3 vectors where the columns they compute beyond the grid cost less than 2 vectors' lower
     * speed (about 5 % per column: 20 * cover48 <= 21 * cover32), 2 from 2L columns, 1 from L */
    loom_tp_stmt *t1 = tiles(&c, 1), *t2 = tiles(&c, 2), *t3 = tiles(&c, 3);
    loom_tp_expr *c3 = loom_tp_op2(a, LOOM_TP_OP_AND, ge(&c, P, K(&c, 3 * L)),
                                   ge(&c, loom_sym_mul(cx, K(&c, 21), covered(&c, P, 2 * L)), loom_sym_mul(cx, K(&c, 20), covered(&c, P, 3 * L))));
    /* 2 vectors likewise against 1 (about 15 % per column: 20 * cover32 <= 23 * cover16): 35 columns
     * (a 7 x 5 plane) were two tiles of 32, 64 columns computed, now three of 16, 48 */
    loom_tp_expr *c2 = loom_tp_op2(a, LOOM_TP_OP_AND, ge(&c, P, K(&c, 2 * L)),
                                   ge(&c, loom_sym_mul(cx, K(&c, 23), covered(&c, P, L)), loom_sym_mul(cx, K(&c, 20), covered(&c, P, 2 * L))));
    body = body && t1 && t2 && t3 && c3 && c2
               ? loom_tp_if(a, c3, t3, loom_tp_if(a, c2, t2, loom_tp_if(a, ge(&c, P, K(&c, L)), t1, body)))
               : NULL;
    loom_strbuf_printf(why, "%lldx%d or %lldx%d register tiles where they waste fewer columns, else %lldx%d from %d columns; ",
                       (long long)m.rows, 3 * L, (long long)m.rows, 2 * L, (long long)m.rows, L, L);
    if (p->splits_512 && body) {
      /* the columns channel tiles compute (ceil(p / C) tiles) and their cost against each vector
       * count's that applies (below V vectors of columns: that one never) */
      const loom_sym_expr *qe = m.loops[1]->u.loop.extent; /* the tiles' blocks: q rounded up to groups, q the others' */
      const loom_sym_expr *cost = loom_sym_mul(cx, loom_sym_mul(cx, K(&c, CHANNEL_COST), covered(&c, P, CHANNEL_COLS)),
                                               covered(&c, qe, CHANNEL_BLOCKS));
      loom_tp_expr *cheaper = loom_tp_op2(a, LOOM_TP_OP_AND, ge(&c, P, K(&c, CHANNEL_COLS)), ge(&c, K(&c, CHANNEL_MAX_GRID), P));
      static const int64_t weight[3] = {23, 21, 20};
      for (int v = 1; v <= 3 && cheaper; v++) { /* cost <= weight * cover(P, vL) or P < vL */
        loom_tp_expr *beats = ge(&c, loom_sym_mul(cx, loom_sym_mul(cx, K(&c, weight[v - 1]), covered(&c, P, v * L)), qe), cost);
        loom_tp_expr *no_v = loom_tp_op2(a, LOOM_TP_OP_LT, loom_tp_sym(a, P), loom_tp_sym(a, K(&c, v * L)));
        cheaper = beats && no_v ? loom_tp_op2(a, LOOM_TP_OP_AND, cheaper, loom_tp_op2(a, LOOM_TP_OP_OR, no_v, beats)) : NULL;
      }
      loom_tp_stmt *ct = col_tiles(&c, CHANNEL_COLS, CHANNEL_BLOCKS, false);
      body = ct && cheaper && cost ? loom_tp_if(a, cheaper, ct, body) : NULL;
      loom_strbuf_printf(why, "%dx%lld channel tiles (%d columns by %d weight blocks of 8 lanes) where they compute fewer columns; ",
                         CHANNEL_COLS, (long long)m.rows * CHANNEL_BLOCKS, CHANNEL_COLS, CHANNEL_BLOCKS);
    }
  } else {
    loom_tp_stmt *t1 = tiles(&c, 1);
    body = body && t1 ? loom_tp_if(a, ge(&c, P, K(&c, L)), t1, body) : NULL;
    loom_strbuf_printf(why, "%lldx%d register tiles from %d columns; ", (long long)m.rows, L, L);
    if (L == m.rows) { /* AVX2: a block of output channels is one vector */
      const loom_sym_expr *red = K(&c, 1);
      int64_t taps = 1, e;
      for (int k = 0; k < m.nred; k++) {
        red = loom_sym_mul(cx, red, m.red[k]->u.loop.extent);
        if (k > 0) taps *= loom_sym_is_const(m.red[k]->u.loop.extent, &e) ? e : 2;
      }
      loom_tp_stmt *ct = col_tiles(&c, NARROW_COLS, NARROW_BLOCKS, true);
      if (taps == 1 && ct) { /* three blocks where their weights stay in L1 and rounding the blocks up to threes wastes at most a quarter */
        const loom_sym_expr *qe = m.loops[1]->u.loop.extent;
        loom_tp_expr *fits = ge(&c, loom_sym_mul(cx, K(&c, 5), covered(&c, qe, NARROW_BLOCKS)),
                                loom_sym_mul(cx, K(&c, 4), covered(&c, qe, NARROW_BLOCKS_1X1)));
        fits = fits ? loom_tp_op2(a, LOOM_TP_OP_AND, fits, ge(&c, K(&c, NARROW_MAX_RED_1X1), red)) : NULL;
        loom_tp_stmt *c3 = col_tiles(&c, NARROW_COLS, NARROW_BLOCKS_1X1, true);
        ct = c3 && fits ? loom_tp_if(a, fits, c3, ct) : NULL;
      }
      loom_tp_expr *use = loom_tp_op2(a, LOOM_TP_OP_AND, ge(&c, P, K(&c, NARROW_COLS)), ge(&c, red, K(&c, NARROW_MIN_RED)));
      body = body && ct && use ? loom_tp_if(a, use, ct, body) : NULL;
      loom_strbuf_printf(why, "%dx%lld channel tiles where the reduction is %d or longer", NARROW_COLS,
                         (long long)m.rows * NARROW_BLOCKS, NARROW_MIN_RED);
      if (taps == 1)
        loom_strbuf_printf(why, " (one tap: %dx%lld up to a reduction of %d where the blocks fit threes)", NARROW_COLS,
                           (long long)m.rows * NARROW_BLOCKS_1X1, NARROW_MAX_RED_1X1);
      loom_strbuf_printf(why, "; ");
    }
  }
  loom_strbuf_printf(why, "below %d columns, tiles of 8, 4, 2 or 1 columns by the block's %lld output channels as the vector\n", L,
                     (long long)m.rows);
  if (!body || c.oom) return LOOM_OOM();
  *slot = body;
  *done = true;
  return LOOM_OK;
}
