/* schedule.c — schedule primitives: split with symbolic tails, fuse, reorder, loop kinds. */
#include <stdio.h>
#include <string.h>

#include "tensorprog/tp_rewrite.h"

/* Finds the slot (pointer to the pointer) that holds `target` under `*slot`. */
static loom_tp_stmt **find_slot(loom_tp_stmt **slot, const loom_tp_stmt *target) {
  loom_tp_stmt *s = *slot;
  if (s == target) return slot;
  loom_tp_stmt **r = NULL;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n && !r; i++) r = find_slot(&s->u.seq.items[i], target);
      return r;
    case LOOM_TP_STMT_FOR:
      return find_slot(&s->u.loop.body, target);
    case LOOM_TP_STMT_IF:
      r = find_slot(&s->u.if_.then_s, target);
      if (!r && s->u.if_.else_s) r = find_slot(&s->u.if_.else_s, target);
      return r;
    default:
      return NULL;
  }
}

static loom_tp_stmt *find_loop_in(loom_tp_stmt *s, const char *name) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) {
        loom_tp_stmt *r = find_loop_in(s->u.seq.items[i], name);
        if (r) return r;
      }
      return NULL;
    case LOOM_TP_STMT_FOR:
      if (!strcmp(loom_sym_var_name(s->u.loop.var), name)) return s;
      return find_loop_in(s->u.loop.body, name);
    case LOOM_TP_STMT_IF: {
      loom_tp_stmt *r = find_loop_in(s->u.if_.then_s, name);
      return r ? r : s->u.if_.else_s ? find_loop_in(s->u.if_.else_s, name) : NULL;
    }
    default:
      return NULL;
  }
}

loom_tp_stmt *loom_tp_find_loop(loom_tp_func *f, const char *name) { return find_loop_in(f->body, name); }

loom_status loom_tp_replace(loom_tp_func *f, const loom_tp_stmt *old, loom_tp_stmt *with) {
  loom_tp_stmt **slot = find_slot(&f->body, old);
  if (!slot) return LOOM_ERROR(INVALID_ARGUMENT, "program @%s: the loop is not part of the program", f->name);
  *slot = with;
  return LOOM_OK;
}

static const loom_sym_expr *named_var(loom_sym_ctx *cx, const loom_sym_expr *base, const char *suffix) {
  char name[128];
  snprintf(name, sizeof name, "%s%s", loom_sym_var_name(base), suffix);
  return loom_sym_var_new(cx, name, LOOM_SYM_VAR_SHAPE);
}

static loom_status sym_error(loom_sym_ctx *cx) {
  loom_status s = loom_sym_ctx_take_error(cx);
  return s ? s : LOOM_OOM();
}

loom_tp_stmt *loom_tp_child_loop(loom_tp_stmt *outer) {
  loom_tp_stmt *b = outer->u.loop.body;
  while (b->kind == LOOM_TP_STMT_SEQ && b->u.seq.n == 1) b = b->u.seq.items[0];
  return b->kind == LOOM_TP_STMT_FOR ? b : NULL;
}

loom_status loom_tp_split(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                          loom_tp_stmt **out_outer, loom_tp_stmt **out_inner, loom_tp_stmt **out_tail) {
  if (loop->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "split: not a loop");
  const char *v = loom_sym_var_name(loop->u.loop.var);
  if (factor < 2)
    return LOOM_ERROR(FAILED_PRECONDITION, "split of loop '%s' does not apply: factor %lld is below 2", v,
                      (long long)factor);
  const loom_sym_expr *n = loop->u.loop.extent;
  loom_sym_interval b = loom_sym_bounds(cx, n);
  const loom_sym_expr *F = loom_sym_const(cx, factor);
  if (!F) return sym_error(cx);
  /* the bounds, or a fact the prover knows (the few-rows variant's batch*seq < 6) */
  if ((!b.hi_inf && b.hi <= factor) || loom_sym_prove_le(cx, n, F) == LOOM_SYM_TRUE)
    return LOOM_ERROR(FAILED_PRECONDITION, "split of loop '%s' does not apply: its extent is at most %lld", v,
                      (long long)factor);
  const loom_sym_expr *nmain = loom_sym_floordiv(cx, n, F), *ntail = loom_sym_floormod(cx, n, F);
  const loom_sym_expr *vo = named_var(cx, loop->u.loop.var, "_o"), *vi = named_var(cx, loop->u.loop.var, "_i");
  const loom_sym_expr *vt = named_var(cx, loop->u.loop.var, "_t");
  const loom_sym_expr *at_main = loom_sym_add(cx, loom_sym_mul(cx, vo, F), vi);
  const loom_sym_expr *at_tail = loom_sym_add(cx, loom_sym_mul(cx, nmain, F), vt);
  if (!nmain || !ntail || !at_main || !at_tail) return sym_error(cx);
  const loom_tp_stmt *body = loop->u.loop.body;
  loom_tp_stmt *main_body = loom_tp_stmt_copy_subst(a, cx, body, &loop->u.loop.var, &at_main, 1);
  loom_tp_loop_kind k = loop->u.loop.kind;
  bool inner_kind = k == LOOM_TP_LOOP_VECTORIZE || k == LOOM_TP_LOOP_UNROLL;
  bool reduce = loop->u.loop.reduce;
  loom_tp_stmt *inner = loom_tp_for(a, vi, F, inner_kind ? k : LOOM_TP_LOOP_SERIAL, reduce, main_body);
  loom_tp_stmt *outer = loom_tp_for(a, vo, nmain, inner_kind ? LOOM_TP_LOOP_SERIAL : k, reduce, inner);
  if (!outer) return LOOM_OOM();
  loom_tp_stmt *tail = NULL, *result = outer;
  if (loom_sym_prove_divisible(cx, n, factor) != LOOM_SYM_TRUE) {
    loom_tp_stmt *tail_body = loom_tp_stmt_copy_subst(a, cx, body, &loop->u.loop.var, &at_tail, 1);
    tail = loom_tp_for(a, vt, ntail, k == LOOM_TP_LOOP_PARALLEL ? LOOM_TP_LOOP_SERIAL : k == LOOM_TP_LOOP_UNROLL ? LOOM_TP_LOOP_SERIAL : k,
                       reduce, tail_body);
    loom_tp_stmt *both[2] = {outer, tail};
    result = tail ? loom_tp_seq(a, both, 2) : NULL;
    if (!result) return LOOM_OOM();
  }
  LOOM_PROPAGATE(loom_tp_replace(f, loop, result));
  if (out_outer) *out_outer = outer;
  if (out_inner) *out_inner = inner;
  if (out_tail) *out_tail = tail;
  return LOOM_OK;
}

loom_status loom_tp_split_ceil(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                               loom_tp_stmt **out_outer, loom_tp_stmt **out_inner) {
  if (loop->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "split_ceil: not a loop");
  const char *v = loom_sym_var_name(loop->u.loop.var);
  if (factor < 2)
    return LOOM_ERROR(FAILED_PRECONDITION, "split_ceil of loop '%s' does not apply: factor %lld is below 2", v,
                      (long long)factor);
  if (loop->u.loop.kind == LOOM_TP_LOOP_UNROLL)
    return LOOM_ERROR(FAILED_PRECONDITION, "split_ceil of loop '%s' does not apply: an unrolled loop needs constant extents", v);
  const loom_sym_expr *n = loop->u.loop.extent, *F = loom_sym_const(cx, factor);
  const loom_sym_expr *vo = named_var(cx, loop->u.loop.var, "_o"), *vi = named_var(cx, loop->u.loop.var, "_i");
  const loom_sym_expr *nouter = loom_sym_floordiv(cx, loom_sym_add(cx, n, loom_sym_const(cx, factor - 1)), F);
  const loom_sym_expr *ninner = loom_sym_min(cx, F, loom_sym_sub(cx, n, loom_sym_mul(cx, vo, F)));
  const loom_sym_expr *at = loom_sym_add(cx, loom_sym_mul(cx, vo, F), vi);
  if (!vo || !vi || !nouter || !ninner || !at) return sym_error(cx);
  loom_tp_stmt *body = loom_tp_stmt_copy_subst(a, cx, loop->u.loop.body, &loop->u.loop.var, &at, 1);
  loom_tp_loop_kind k = loop->u.loop.kind;
  bool inner_kind = k == LOOM_TP_LOOP_VECTORIZE;
  bool reduce = loop->u.loop.reduce;
  loom_tp_stmt *inner = loom_tp_for(a, vi, ninner, inner_kind ? k : LOOM_TP_LOOP_SERIAL, reduce, body);
  loom_tp_stmt *outer = loom_tp_for(a, vo, nouter, inner_kind ? LOOM_TP_LOOP_SERIAL : k, reduce, inner);
  if (!outer) return LOOM_OOM();
  LOOM_PROPAGATE(loom_tp_replace(f, loop, outer));
  if (out_outer) *out_outer = outer;
  if (out_inner) *out_inner = inner;
  return LOOM_OK;
}

static bool same_tuple(const loom_tp_buffer *b, loom_tp_expr *const *x, loom_tp_expr *const *y) {
  for (int d = 0; d < b->ndim; d++)
    if (x[d]->kind != LOOM_TP_EXPR_SYM || y[d]->kind != LOOM_TP_EXPR_SYM || x[d]->u.sym != y[d]->u.sym) return false;
  return true;
}

static bool reads_only_at(const loom_tp_expr *e, const loom_tp_buffer *buf, loom_tp_expr *const *idx) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      if (e->u.load.buf == buf && !same_tuple(buf, e->u.load.idx, idx)) return false;
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (!reads_only_at(e->u.load.idx[d], buf, idx)) return false;
      return true;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (!reads_only_at(e->u.op.args[i], buf, idx)) return false;
      return true;
    case LOOM_TP_EXPR_CAST: return reads_only_at(e->u.cast_arg, buf, idx);
    case LOOM_TP_EXPR_SELECT:
      return reads_only_at(e->u.select.cond, buf, idx) && reads_only_at(e->u.select.then_e, buf, idx) &&
             reads_only_at(e->u.select.else_e, buf, idx);
    default: return true;
  }
}

/* Every store under s is at *buf's one index tuple *idx (the first store fixes both) and reads
 * *buf only there; or it stores another buffer at the same indices (an epilogue's output of
 * another dtype), a value that does not read that buffer; *others collects those buffers. */
static bool writes_one_place(const loom_tp_stmt *s, const loom_tp_buffer **buf, loom_tp_expr *const **idx,
                             const loom_tp_buffer **others, int *nothers) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!writes_one_place(s->u.seq.items[i], buf, idx, others, nothers)) return false;
      return true;
    case LOOM_TP_STMT_FOR: return writes_one_place(s->u.loop.body, buf, idx, others, nothers);
    case LOOM_TP_STMT_STORE: {
      if (!*buf) *buf = s->u.store.buf, *idx = s->u.store.idx;
      const loom_tp_buffer *o = s->u.store.buf;
      if (o == *buf) return same_tuple(*buf, s->u.store.idx, *idx) && reads_only_at(s->u.store.value, *buf, *idx);
      if (o->ndim != (*buf)->ndim || !same_tuple(o, s->u.store.idx, *idx) || loom_tp_expr_loads(s->u.store.value, o) ||
          !reads_only_at(s->u.store.value, *buf, *idx) || *nothers == 4)
        return false;
      others[(*nothers)++] = o;
      return true;
    }
    default: return false; /* lets, ifs, allocs: not the simple nest this is for */
  }
}

/* The first statement `s` runs (descending into loops and sequences) stores at `buf` a value
 * that does not read it (an initialisation, not an update). */
static bool starts_with_store(const loom_tp_stmt *s, const loom_tp_buffer *buf) {
  while (s->kind == LOOM_TP_STMT_SEQ || s->kind == LOOM_TP_STMT_FOR) {
    if (s->kind == LOOM_TP_STMT_SEQ) {
      if (!s->u.seq.n) return false;
      s = s->u.seq.items[0];
    } else {
      s = s->u.loop.body;
    }
  }
  return s->kind == LOOM_TP_STMT_STORE && s->u.store.buf == buf && !loom_tp_expr_loads(s->u.store.value, buf);
}

/* loom_tp_split_clamped's main tiles, `loop` (extent n) replaced by
 *     for v_o in 0..floordiv(n + F - S - 1, F) { for v_i in 0..F {
 *       body[v := min(max(min(F*v_o, n - F), 0) + v_i, n - 1)] } }
 * followed by `tail` (its tile loop over v_t, built by split_overlap) unless its count is
 * proven 0. */
static loom_status clamped_main(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                int64_t small, loom_tp_stmt *tail, loom_tp_stmt *tail_inner, loom_tp_stmt **out_outer,
                                loom_tp_stmt **out_inner, loom_tp_stmt **out_tail, loom_tp_stmt **out_tail_inner) {
  const loom_sym_expr *n = loop->u.loop.extent, *F = loom_sym_const(cx, factor), *one = loom_sym_const(cx, 1);
  const loom_sym_expr *nmain = loom_sym_floordiv(cx, loom_sym_add(cx, n, loom_sym_const(cx, factor - small - 1)), F);
  const loom_sym_expr *vo = named_var(cx, loop->u.loop.var, "_o"), *vi = named_var(cx, loop->u.loop.var, "_i");
  const loom_sym_expr *start =
      loom_sym_max(cx, loom_sym_min(cx, loom_sym_mul(cx, vo, F), loom_sym_sub(cx, n, F)), loom_sym_const(cx, 0));
  /* the first S rows of a tile are below n without the clamp (n >= S, start <= max(n - F, 0)):
   * once the tile's rows are unrolled, those S rows are one base plus constant offsets and only
   * the other F - S rows carry a min (a 12-row tile held 12 row pointers, more than the GPRs) */
  const loom_sym_expr *row = loom_sym_add(cx, start, vi);
  const loom_sym_expr *at_main = loom_sym_select(cx, loom_sym_cmp(cx, LOOM_SYM_LT, vi, loom_sym_const(cx, small)), row,
                                                 loom_sym_min(cx, row, loom_sym_sub(cx, n, one)));
  if (!nmain || !vo || !vi || !at_main) return sym_error(cx);
  loom_tp_stmt *main_body = loom_tp_stmt_copy_subst(a, cx, loop->u.loop.body, &loop->u.loop.var, &at_main, 1);
  loom_tp_stmt *inner = main_body ? loom_tp_for(a, vi, F, LOOM_TP_LOOP_SERIAL, false, main_body) : NULL;
  loom_tp_stmt *outer = inner ? loom_tp_for(a, vo, nmain, LOOM_TP_LOOP_SERIAL, false, inner) : NULL;
  if (!outer) return LOOM_OOM();
  int64_t count = -1;
  bool no_tail = loom_sym_is_const(tail->u.loop.extent, &count) && count == 0;
  loom_tp_stmt *both[2] = {outer, tail}, *result = no_tail ? outer : loom_tp_seq(a, both, 2);
  if (!result) return LOOM_OOM();
  LOOM_PROPAGATE(loom_tp_replace(f, loop, result));
  if (out_outer) *out_outer = outer;
  if (out_inner) *out_inner = inner;
  if (out_tail) *out_tail = no_tail ? NULL : tail;
  if (out_tail_inner) *out_tail_inner = no_tail ? NULL : tail_inner;
  return LOOM_OK;
}

/* loom_tp_split_overlap, with `small` > 0 loom_tp_split_overlap_small, with `clamp` as well
 * loom_tp_split_clamped. */
static loom_status split_overlap(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                 int64_t small, bool clamp, loom_tp_stmt **out_outer, loom_tp_stmt **out_inner,
                                 loom_tp_stmt **out_tail, loom_tp_stmt **out_tail_inner) {
  if (loop->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "split_overlap: not a loop");
  const char *v = loom_sym_var_name(loop->u.loop.var);
  if (small < 0 || small >= factor)
    return LOOM_ERROR(INVALID_ARGUMENT, "split_overlap of loop '%s': tail tiles of %lld are not below %lld", v, (long long)small,
                      (long long)factor);
  const loom_sym_expr *n = loop->u.loop.extent;
  int64_t need = small > 0 ? small : factor;
  if (factor < 2 || loom_sym_prove_le(cx, loom_sym_const(cx, need), n) != LOOM_SYM_TRUE)
    return LOOM_ERROR(FAILED_PRECONDITION, "split_overlap of loop '%s' does not apply: its extent is not provably >= %lld",
                      v, (long long)need);
  if (loop->u.loop.reduce || loop->u.loop.kind != LOOM_TP_LOOP_SERIAL)
    return LOOM_ERROR(FAILED_PRECONDITION, "split_overlap of loop '%s' does not apply: not a serial spatial loop", v);
  const loom_tp_buffer *buf = NULL, *others[4];
  loom_tp_expr *const *idx = NULL;
  int nothers = 0;
  bool ok = writes_one_place(loop->u.loop.body, &buf, &idx, others, &nothers) && buf && starts_with_store(loop->u.loop.body, buf);
  for (int i = 0; i < nothers && ok; i++) ok = !loom_tp_stmt_loads(loop->u.loop.body, others[i]);
  if (!ok)
    return LOOM_ERROR(FAILED_PRECONDITION,
                      "split_overlap of loop '%s' does not apply: its body does not overwrite what it reads (running an "
                      "iteration twice could change the result)",
                      v);
  const loom_sym_expr *F = loom_sym_const(cx, factor);
  const loom_sym_expr *vt = named_var(cx, loop->u.loop.var, "_t"), *vti = named_var(cx, loop->u.loop.var, "_ti");
  const loom_sym_expr *at_tail, *ntail, *T;
  if (clamp) { /* one small tile ending at the last iteration when 1 <= n % F <= small */
    const loom_sym_expr *S = loom_sym_const(cx, small);
    const loom_sym_expr *r = loom_sym_floormod(cx, loom_sym_add(cx, n, loom_sym_const(cx, factor - small - 1)), F);
    ntail = loom_sym_floordiv(cx, loom_sym_add(cx, r, S), F);
    at_tail = loom_sym_add(cx, loom_sym_sub(cx, n, S), vti);
    T = S;
  } else if (small > 0) { /* K = ceil((n % F) / small) tiles, tile t starting at max(n - small*(K - t), 0) */
    const loom_sym_expr *S = loom_sym_const(cx, small);
    ntail = loom_sym_floordiv(cx, loom_sym_add(cx, loom_sym_floormod(cx, n, F), loom_sym_const(cx, small - 1)), S);
    const loom_sym_expr *start = loom_sym_sub(cx, n, loom_sym_mul(cx, S, loom_sym_sub(cx, ntail, vt)));
    at_tail = loom_sym_add(cx, loom_sym_max(cx, start, loom_sym_const(cx, 0)), vti);
    T = S;
  } else {
    at_tail = loom_sym_add(cx, loom_sym_sub(cx, n, F), vti);
    ntail = loom_sym_min(cx, loom_sym_floormod(cx, n, F), loom_sym_const(cx, 1));
    T = F;
  }
  if (!vt || !vti || !at_tail || !ntail || !T) return sym_error(cx);
  /* the tail tile is built from the body before the split replaces the loop */
  loom_tp_stmt *tail_body = loom_tp_stmt_copy_subst(a, cx, loop->u.loop.body, &loop->u.loop.var, &at_tail, 1);
  loom_tp_stmt *tail_inner = loom_tp_for(a, vti, T, LOOM_TP_LOOP_SERIAL, false, tail_body);
  loom_tp_stmt *tail = loom_tp_for(a, vt, ntail, LOOM_TP_LOOP_SERIAL, false, tail_inner);
  if (!tail) return LOOM_OOM();
  loom_tp_stmt *outer, *inner, *plain_tail;
  if (clamp) return clamped_main(a, cx, f, loop, factor, small, tail, tail_inner, out_outer, out_inner, out_tail, out_tail_inner);
  LOOM_PROPAGATE(loom_tp_split(a, cx, f, loop, factor, &outer, &inner, &plain_tail));
  if (plain_tail) LOOM_PROPAGATE(loom_tp_replace(f, plain_tail, tail));
  if (out_outer) *out_outer = outer;
  if (out_inner) *out_inner = inner;
  if (out_tail) *out_tail = plain_tail ? tail : NULL;
  if (out_tail_inner) *out_tail_inner = plain_tail ? tail_inner : NULL;
  return LOOM_OK;
}

loom_status loom_tp_split_overlap(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                  loom_tp_stmt **out_outer, loom_tp_stmt **out_inner, loom_tp_stmt **out_tail,
                                  loom_tp_stmt **out_tail_inner) {
  return split_overlap(a, cx, f, loop, factor, 0, false, out_outer, out_inner, out_tail, out_tail_inner);
}

loom_status loom_tp_split_overlap_small(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                        int64_t small, loom_tp_stmt **out_outer, loom_tp_stmt **out_inner,
                                        loom_tp_stmt **out_tail, loom_tp_stmt **out_tail_inner) {
  if (small < 1) return LOOM_ERROR(INVALID_ARGUMENT, "split_overlap_small: tail tiles of %lld", (long long)small);
  return split_overlap(a, cx, f, loop, factor, small, false, out_outer, out_inner, out_tail, out_tail_inner);
}

loom_status loom_tp_split_clamped(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                  int64_t small, loom_tp_stmt **out_outer, loom_tp_stmt **out_inner, loom_tp_stmt **out_tail,
                                  loom_tp_stmt **out_tail_inner) {
  if (small < 1) return LOOM_ERROR(INVALID_ARGUMENT, "split_clamped: tail tiles of %lld", (long long)small);
  return split_overlap(a, cx, f, loop, factor, small, true, out_outer, out_inner, out_tail, out_tail_inner);
}

loom_status loom_tp_fuse(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *outer,
                         loom_tp_stmt **out_fused) {
  if (outer->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "fuse: not a loop");
  const char *v = loom_sym_var_name(outer->u.loop.var);
  loom_tp_stmt *inner = loom_tp_child_loop(outer);
  if (!inner)
    return LOOM_ERROR(FAILED_PRECONDITION, "fuse of loop '%s' does not apply: its body is not a single loop", v);
  if (inner->u.loop.reduce != outer->u.loop.reduce)
    return LOOM_ERROR(FAILED_PRECONDITION, "fuse of loop '%s' does not apply: one loop is a reduction, the other not", v);
  if (loom_sym_uses_var(inner->u.loop.extent, outer->u.loop.var))
    return LOOM_ERROR(FAILED_PRECONDITION, "fuse of loop '%s' does not apply: the inner extent depends on '%s'", v, v);
  const loom_sym_expr *m = inner->u.loop.extent;
  const loom_sym_expr *k = named_var(cx, outer->u.loop.var, "_f");
  const loom_sym_expr *vars[2] = {outer->u.loop.var, inner->u.loop.var};
  const loom_sym_expr *vals[2] = {loom_sym_floordiv(cx, k, m), loom_sym_floormod(cx, k, m)};
  const loom_sym_expr *extent = loom_sym_mul(cx, outer->u.loop.extent, m);
  if (!vals[0] || !vals[1] || !extent) return sym_error(cx);
  loom_tp_stmt *body = loom_tp_stmt_copy_subst(a, cx, inner->u.loop.body, vars, vals, 2);
  loom_tp_stmt *fused = loom_tp_for(a, k, extent, outer->u.loop.kind, outer->u.loop.reduce, body);
  if (!fused) return LOOM_OOM();
  LOOM_PROPAGATE(loom_tp_replace(f, outer, fused));
  if (out_fused) *out_fused = fused;
  return LOOM_OK;
}

loom_status loom_tp_reorder(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *outer) {
  (void)a;
  (void)cx;
  if (outer->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "reorder: not a loop");
  const char *v = loom_sym_var_name(outer->u.loop.var);
  loom_tp_stmt *inner = loom_tp_child_loop(outer);
  if (!inner)
    return LOOM_ERROR(FAILED_PRECONDITION, "reorder of loop '%s' does not apply: its body is not a single loop", v);
  if (loom_sym_uses_var(inner->u.loop.extent, outer->u.loop.var))
    return LOOM_ERROR(FAILED_PRECONDITION, "reorder of loop '%s' does not apply: the inner extent depends on '%s'", v, v);
  /* Swap the headers, keep the bodies: the nest is perfect, so the body is unchanged. */
  loom_tp_stmt tmp = *outer;
  outer->u.loop.var = inner->u.loop.var;
  outer->u.loop.extent = inner->u.loop.extent;
  outer->u.loop.kind = inner->u.loop.kind;
  outer->u.loop.reduce = inner->u.loop.reduce;
  inner->u.loop.var = tmp.u.loop.var;
  inner->u.loop.extent = tmp.u.loop.extent;
  inner->u.loop.kind = tmp.u.loop.kind;
  inner->u.loop.reduce = tmp.u.loop.reduce;
  (void)f;
  return LOOM_OK;
}

loom_status loom_tp_set_kind(loom_sym_ctx *cx, loom_tp_stmt *loop, loom_tp_loop_kind kind) {
  if (loop->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "set kind: not a loop");
  const char *v = loom_sym_var_name(loop->u.loop.var);
  bool binds = kind == LOOM_TP_LOOP_PARALLEL || kind == LOOM_TP_LOOP_GPU_BLOCK || kind == LOOM_TP_LOOP_GPU_THREAD;
  if (binds && loop->u.loop.reduce)
    return LOOM_ERROR(FAILED_PRECONDITION, "%s of loop '%s' does not apply: it is a reduction loop (iterations would race)",
                      loom_tp_loop_kind_name(kind), v);
  if (binds && loom_tp_stmt_scatters(loop->u.loop.body))
    return LOOM_ERROR(FAILED_PRECONDITION,
                      "%s of loop '%s' does not apply: it stores at indices read from memory (iterations may write one element)",
                      loom_tp_loop_kind_name(kind), v);
  if (kind == LOOM_TP_LOOP_UNROLL) {
    int64_t n;
    if (!loom_sym_is_const(loop->u.loop.extent, &n) || n > 64)
      return LOOM_ERROR(FAILED_PRECONDITION, "unroll of loop '%s' does not apply: its extent is not a constant <= 64", v);
  }
  (void)cx;
  loop->u.loop.kind = kind;
  return LOOM_OK;
}

