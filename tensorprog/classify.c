/* classify.c — analysis feedback: the access pattern of a tensor program, read from
 * the program itself (not from a table of operators).
 *
 * The output is the one buffer the program stores to. Let S be the output store's
 * indices; the program is
 *   ELEMWISE    one store, S are the enclosing (non-reduce) loop variables in order,
 *               and every load uses exactly S;
 *   BROADCAST   as ELEMWISE, but some loads use a subsequence of S (constants allowed
 *               for size-1 axes);
 *   INJECTIVE   one store whose indices are the loop variables in order, loads indexed
 *               by any expression (transpose, reshape, slice, gather, pad with select);
 *   REDUCTION   an init store outside loops flagged `reduce` and an update store
 *               `O[S] = O[S] op e` inside them, S free of reduce variables;
 *   OUT_FUSABLE  a REDUCTION whose update is a multiply-accumulate of two loads
 *               from different buffers that both use the reduce variables (matmul,
 *               convolution), or dot2 / dot4 of packed int8 words (the int8 matmul): an
 *               elementwise epilogue can be fused into its output, a producer is not;
 *   OPAQUE      anything else (several outputs, data-dependent store indices, local
 *               buffers, stores that do not cover the loop nest).
 * Each verdict comes with a one-line reason, so `--print-after-all` can say why. */
#include <string.h>

#include "base/vec.h"
#include "tensorprog/tp_pattern.h"

static const char *const pattern_names[] = {
#define LOOM_TP_PATTERN(name, text) text,
#include "tensorprog/tp_patterns.def"
#undef LOOM_TP_PATTERN
};
_Static_assert(sizeof(pattern_names) / sizeof(pattern_names[0]) == LOOM_TP_PATTERN_COUNT,
               "tp_patterns.def and pattern_names disagree");

const char *loom_tp_pattern_name(loom_tp_pattern p) { return pattern_names[p]; }

typedef struct store_site {
  const loom_tp_stmt *store;
  size_t depth;   /* loops enclosing it */
  size_t nreduce; /* of which flagged reduce */
} store_site;

typedef struct walker {
  LOOM_VEC(const loom_tp_stmt *) loops; /* enclosing FOR statements */
  LOOM_VEC(store_site) stores;
  LOOM_VEC(const loom_tp_expr *) loads; /* every load of a non-output buffer */
  const loom_tp_buffer *output;
  bool opaque;
  const char *why;
  bool has_if;
  bool oom;
} walker;

static void mark_opaque(walker *w, const char *why) {
  if (!w->opaque) {
    w->opaque = true;
    w->why = why;
  }
}

static void walk_expr(walker *w, const loom_tp_expr *e) {
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST: case LOOM_TP_EXPR_SYM: case LOOM_TP_EXPR_LETREF:
      return;
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++) walk_expr(w, e->u.load.idx[d]);
      if (!LOOM_VEC_PUSH(NULL, &w->loads, e)) w->oom = true;
      return;
    case LOOM_TP_EXPR_OP:
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++) walk_expr(w, e->u.op.args[k]);
      return;
    case LOOM_TP_EXPR_CAST:
      walk_expr(w, e->u.cast_arg);
      return;
    case LOOM_TP_EXPR_SELECT:
      walk_expr(w, e->u.select.cond);
      walk_expr(w, e->u.select.then_e);
      walk_expr(w, e->u.select.else_e);
      return;
  }
}

static void walk_stmt(walker *w, const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) walk_stmt(w, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      if (!LOOM_VEC_PUSH(NULL, &w->loops, s)) w->oom = true;
      walk_stmt(w, s->u.loop.body);
      w->loops.len--;
      return;
    case LOOM_TP_STMT_STORE: {
      const loom_tp_buffer *b = s->u.store.buf;
      if (w->output && w->output != b) mark_opaque(w, "stores to more than one buffer");
      w->output = b;
      for (int d = 0; d < b->ndim; d++) {
        if (s->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM) mark_opaque(w, "a store index depends on data");
        walk_expr(w, s->u.store.idx[d]);
      }
      walk_expr(w, s->u.store.value);
      store_site site = {s, w->loops.len, 0};
      for (size_t i = 0; i < w->loops.len; i++) site.nreduce += w->loops.data[i]->u.loop.reduce;
      if (!LOOM_VEC_PUSH(NULL, &w->stores, site)) w->oom = true;
      return;
    }
    case LOOM_TP_STMT_LET:
      walk_expr(w, s->u.let.value);
      return;
    case LOOM_TP_STMT_IF:
      w->has_if = true;
      walk_expr(w, s->u.if_.cond);
      walk_stmt(w, s->u.if_.then_s);
      if (s->u.if_.else_s) walk_stmt(w, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_ALLOC:
      mark_opaque(w, "allocates a local buffer");
      return;
    case LOOM_TP_STMT_BARRIER:
      mark_opaque(w, "synchronises a GPU block");
      return;
    case LOOM_TP_STMT_PREFETCH: return; /* a hint: no access */
  }
}

/* True when `idx` are exactly the loop variables of `loops[0..n)` that are not reduce loops. */
static bool indices_are_spatial_loops(loom_tp_expr *const *idx, int ndim, const loom_tp_stmt *const *loops,
                                      size_t nloops) {
  int d = 0;
  for (size_t i = 0; i < nloops; i++) {
    if (loops[i]->u.loop.reduce) continue;
    if (d >= ndim || idx[d]->kind != LOOM_TP_EXPR_SYM || idx[d]->u.sym != loops[i]->u.loop.var) return false;
    d++;
  }
  return d == ndim;
}

static bool same_indices(loom_tp_expr *const *a, loom_tp_expr *const *b, int n) {
  for (int d = 0; d < n; d++)
    if (a[d]->kind != LOOM_TP_EXPR_SYM || b[d]->kind != LOOM_TP_EXPR_SYM || a[d]->u.sym != b[d]->u.sym) return false;
  return true;
}

/* Load indices are an in-order subsequence of the store's, or constants. */
static bool is_broadcast_of(loom_tp_expr *const *load_idx, int nload, loom_tp_expr *const *store_idx, int nstore) {
  int s = 0;
  for (int d = 0; d < nload; d++) {
    if (load_idx[d]->kind != LOOM_TP_EXPR_SYM) return false;
    int64_t c;
    if (loom_sym_is_const(load_idx[d]->u.sym, &c)) continue;
    while (s < nstore && (store_idx[s]->kind != LOOM_TP_EXPR_SYM || store_idx[s]->u.sym != load_idx[d]->u.sym)) s++;
    if (s == nstore) return false;
    s++;
  }
  return true;
}

loom_tp_class loom_tp_classify(const loom_tp_func *f) {
  walker w = {0};
  walk_stmt(&w, f->body);
  loom_tp_class out = {LOOM_TP_PATTERN_OPAQUE, "no store"};
  if (w.oom) {
    out.reason = "out of memory while classifying";
    goto done;
  }
  if (w.opaque) {
    out.reason = w.why;
    goto done;
  }
  if (w.stores.len == 0) goto done;
  const loom_tp_buffer *o = w.output;
  /* Reduction: init store(s) with no reduce loops, then update store(s) inside reduce loops. */
  size_t nreduce_stores = 0;
  for (size_t i = 0; i < w.stores.len; i++) nreduce_stores += w.stores.data[i].nreduce > 0;
  if (nreduce_stores > 0) {
    if (w.stores.len != 2 || w.stores.data[0].nreduce != 0 || w.stores.data[1].nreduce == 0) {
      out.reason = "reduce loops without one init store followed by one update store";
      goto done;
    }
    const loom_tp_stmt *init = w.stores.data[0].store, *upd = w.stores.data[1].store;
    if (!same_indices(init->u.store.idx, upd->u.store.idx, o->ndim)) {
      out.reason = "init and update stores use different indices";
      goto done;
    }
    const loom_tp_expr *v = upd->u.store.value;
    if (v->kind != LOOM_TP_EXPR_OP || loom_tp_op_arity(v->u.op.op) != 2) {
      out.reason = "the update is not `O[S] = O[S] op e`";
      goto done;
    }
    const loom_tp_expr *acc = v->u.op.args[0], *term = v->u.op.args[1];
    if (acc->kind != LOOM_TP_EXPR_LOAD || acc->u.load.buf != o || !same_indices(acc->u.load.idx, upd->u.store.idx, o->ndim)) {
      out.reason = "the update does not read its own output element";
      goto done;
    }
    out.pattern = LOOM_TP_PATTERN_REDUCTION;
    out.reason = "init store and update store over reduce loops";
    /* Multiply-accumulate of two different buffers: matmul / convolution. */
    if (v->u.op.op == LOOM_TP_OP_ADD && term->kind == LOOM_TP_EXPR_OP && term->u.op.op == LOOM_TP_OP_MUL) {
      const loom_tp_expr *x = term->u.op.args[0], *y = term->u.op.args[1];
      if (x->kind == LOOM_TP_EXPR_CAST) x = x->u.cast_arg;
      if (y->kind == LOOM_TP_EXPR_CAST) y = y->u.cast_arg;
      if (x->kind == LOOM_TP_EXPR_LOAD && y->kind == LOOM_TP_EXPR_LOAD && x->u.load.buf != y->u.load.buf) {
        out.pattern = LOOM_TP_PATTERN_OUT_FUSABLE;
        out.reason = "multiply-accumulate of two inputs over reduce loops";
      }
    }
    /* dot2 / dot4 of packed int8 words (the int8 matmul; its A operand may be a quad of byte
     * loads read in place): a producer fused into it would be recomputed per column panel */
    if (v->u.op.op == LOOM_TP_OP_ADD && term->kind == LOOM_TP_EXPR_OP &&
        (term->u.op.op == LOOM_TP_OP_DOT2 || term->u.op.op == LOOM_TP_OP_DOT4 || term->u.op.op == LOOM_TP_OP_DOT4S)) {
      out.pattern = LOOM_TP_PATTERN_OUT_FUSABLE;
      out.reason = "dot products of packed int8 words over reduce loops";
    }
    goto done;
  }
  if (w.stores.len != 1) {
    out.reason = "more than one store to the output";
    goto done;
  }
  const store_site *site = &w.stores.data[0];
  /* Reconstruct the loop nest of the store: a second walk is simpler than keeping copies. */
  const loom_tp_stmt *loops[64];
  size_t nloops = 0;
  const loom_tp_stmt *s = f->body;
  while (s && nloops < 64) {
    if (s->kind == LOOM_TP_STMT_FOR) {
      loops[nloops++] = s;
      s = s->u.loop.body;
    } else if (s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) {
      s = s->u.seq.items[0];
    } else {
      break;
    }
  }
  if (nloops != site->depth || s != site->store) {
    out.reason = "the store is not alone in a perfect loop nest";
    goto done;
  }
  loom_tp_expr *const *sidx = site->store->u.store.idx;
  if (!indices_are_spatial_loops(sidx, o->ndim, loops, nloops)) {
    out.reason = "the store's indices are not the loop variables in order";
    goto done;
  }
  bool elemwise = !w.has_if, broadcast = !w.has_if;
  for (size_t i = 0; i < w.loads.len; i++) {
    const loom_tp_expr *ld = w.loads.data[i];
    int n = ld->u.load.buf->ndim;
    bool same = n == o->ndim && same_indices(ld->u.load.idx, sidx, n);
    if (!same) elemwise = false;
    if (!same && !is_broadcast_of(ld->u.load.idx, n, sidx, o->ndim)) broadcast = false;
  }
  if (elemwise) {
    out.pattern = LOOM_TP_PATTERN_ELEMWISE;
    out.reason = "every load uses the output's indices";
  } else if (broadcast) {
    out.pattern = LOOM_TP_PATTERN_BROADCAST;
    out.reason = "loads use subsequences of the output's indices";
  } else {
    out.pattern = LOOM_TP_PATTERN_INJECTIVE;
    out.reason = "one store per output element; loads indexed freely";
  }
done:
  LOOM_VEC_FREE(NULL, &w.loops);
  LOOM_VEC_FREE(NULL, &w.stores);
  LOOM_VEC_FREE(NULL, &w.loads);
  return out;
}
