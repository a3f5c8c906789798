/* cg_lanes.c — whether a small constant VECTORIZE loop runs in lane mode (cg_lanes_ok); the
 * code itself is emitted by cg_stmt.c (emit_lanes) and cg_expr.c (lane loads, stores, iotas).
 *
 * `for v in 0..W vectorize { stores and lets }` with W a constant in [2, 64] whose
 * accesses use v only as `... + v` in their LAST index (unit stride) becomes straight-line
 * vector code: v is bound to 0, such loads/stores become <W x T> loads/stores at the
 * address of lane 0, values that do not depend on v stay scalar and are broadcast where
 * they meet a vector. A load may also use v as `... + s*v` with a constant stride s in
 * [2, 4] (s*W <= 64: a strided convolution's input): it becomes one masked load of the
 * s*(W-1)+1 elements it spans (no element past the last one read, so never outside the
 * buffer) and a shuffle that keeps every s-th (cg_lane_stride, cg_expr.c). v may also be a value
 * as `x + s*v` (s in [1, 4]): the vector x + <0, s, 2s, ..>. Anything else (nested loops, ifs,
 * v elsewhere in an index, gathers, f16/bf16/bool memory, libm calls, float->int casts) is left to LLVM's
 * loop vectoriser through the loop metadata. This is what keeps a register tile of
 * accumulators (a Local buffer indexed by unrolled constants and v) in vector registers. */
#include "targets/cpu/cg_internal.h"

/* The stride s of the lane variable in `x` (an index): x - s*var free of var, s in [1, 4];
 * 0 when there is none. */
unsigned cg_lane_stride(cg *g, const loom_sym_expr *x, const loom_sym_expr *var) {
  for (int64_t s = 1; s <= 4; s++) {
    const loom_sym_expr *sv = s == 1 ? var : loom_sym_mul(g->cx, loom_sym_const(g->cx, s), var);
    const loom_sym_expr *rest = sv ? loom_sym_sub(g->cx, x, sv) : NULL;
    if (rest && !loom_sym_uses_var(rest, var)) return (unsigned)s;
  }
  return 0;
}

bool cg_expr_uses_lane(cg *g, const loom_tp_expr *e) {
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST: return false;
    case LOOM_TP_EXPR_SYM: return loom_sym_uses_var(e->u.sym, g->lane_var);
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (cg_expr_uses_lane(g, e->u.load.idx[d])) return true;
      return false;
    case LOOM_TP_EXPR_LETREF:
      for (size_t i = g->lets.len; i-- > 0;)
        if (g->lets.data[i].let == e->u.let) return cg_is_vec(g->lets.data[i].v);
      return false;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (cg_expr_uses_lane(g, e->u.op.args[i])) return true;
      return false;
    case LOOM_TP_EXPR_CAST: return cg_expr_uses_lane(g, e->u.cast_arg);
    case LOOM_TP_EXPR_SELECT:
      return cg_expr_uses_lane(g, e->u.select.cond) || cg_expr_uses_lane(g, e->u.select.then_e) ||
             cg_expr_uses_lane(g, e->u.select.else_e);
  }
  return false;
}

static bool lane_dtype_ok(loom_dtype t) {
  return t != LOOM_DTYPE_F16 && t != LOOM_DTYPE_BF16 && t != LOOM_DTYPE_BOOL && !loom_dtype_is_lowp_float(t);
}

/* An access's indices: v only in the last one, as `x + v` with x free of v (a load: or
 * `x + s*v`, s in [2, 4], s*W <= 64). `uses` says whether v appears at all. */
static bool lane_access_ok(cg *g, const loom_tp_buffer *buf, loom_tp_expr *const *idx, const loom_sym_expr *var,
                           unsigned max_stride, bool *uses);
static bool lane_expr_ok(cg *g, const loom_tp_expr *e, const loom_sym_expr *var);

static bool lane_access_ok(cg *g, const loom_tp_buffer *buf, loom_tp_expr *const *idx, const loom_sym_expr *var,
                           unsigned max_stride, bool *uses) {
  *uses = false;
  for (int d = 0; d < buf->ndim; d++) {
    const loom_tp_expr *x = idx[d];
    if (x->kind != LOOM_TP_EXPR_SYM) return false; /* loaded indices: left to LLVM */
    if (!loom_sym_uses_var(x->u.sym, var)) continue;
    if (d != buf->ndim - 1) return false;
    unsigned s = cg_lane_stride(g, x->u.sym, var);
    if (s == 0 || s > max_stride) return false;
    *uses = true;
  }
  return lane_dtype_ok(buf->dtype) || !*uses;
}

static bool lane_expr_ok(cg *g, const loom_tp_expr *e, const loom_sym_expr *var) {
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST: return true;
    /* v as a value: `x + s*v` (s in [1, 4]) is lane 0's x plus the constant vector
     * <0, s, 2s, ..> (an attention kernel's causal test of key j against query row q0 + v) */
    case LOOM_TP_EXPR_SYM: return !loom_sym_uses_var(e->u.sym, var) || cg_lane_stride(g, e->u.sym, var) != 0;
    case LOOM_TP_EXPR_LETREF: return true;
    case LOOM_TP_EXPR_LOAD: {
      bool uses;
      /* an index that is not a symbol (read from memory, a select) must not vary by lane */
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (e->u.load.idx[d]->kind != LOOM_TP_EXPR_SYM &&
            (loom_tp_expr_uses_var(e->u.load.idx[d], var) || !lane_expr_ok(g, e->u.load.idx[d], var)))
          return false;
      if (!lane_access_ok(g, e->u.load.buf, e->u.load.idx, var, g->lane_max_stride, &uses)) return false;
      /* uniform loads must not hide v inside a loaded index */
      return true;
    }
    case LOOM_TP_EXPR_OP: {
      loom_tp_op op = e->u.op.op;
      loom_dtype t = e->u.op.args[0]->dtype;
      if (t == LOOM_DTYPE_F16 || t == LOOM_DTYPE_BF16) return false;
      if (loom_dtype_is_float(t)) {
        if (op == LOOM_TP_OP_TANH || op == LOOM_TP_OP_ERF) return false; /* libm calls */
      } else {
        switch (op) {
          case LOOM_TP_OP_DIV: case LOOM_TP_OP_MOD: case LOOM_TP_OP_FLOORDIV: case LOOM_TP_OP_FLOORMOD: return false;
          default: break;
        }
        if (t == LOOM_DTYPE_BOOL && (op == LOOM_TP_OP_AND || op == LOOM_TP_OP_OR) &&
            cg_expr_uses_lane(g, e->u.op.args[1]))
          return false;
      }
      for (int i = 0; i < loom_tp_op_arity(op); i++)
        if (!lane_expr_ok(g, e->u.op.args[i], var)) return false;
      return true;
    }
    case LOOM_TP_EXPR_CAST: {
      loom_dtype from = e->u.cast_arg->dtype, to = e->dtype;
      if (!lane_dtype_ok(from) || !lane_dtype_ok(to)) return false;
      if (loom_dtype_is_float(from) && !loom_dtype_is_float(to)) return false;
      if (!loom_dtype_is_float(from) && loom_dtype_bits(from) > 32 && loom_dtype_is_float(to)) return false;
      return lane_expr_ok(g, e->u.cast_arg, var);
    }
    case LOOM_TP_EXPR_SELECT:
      return lane_expr_ok(g, e->u.select.cond, var) && lane_expr_ok(g, e->u.select.then_e, var) &&
             lane_expr_ok(g, e->u.select.else_e, var);
  }
  return false;
}

static bool lane_stmt_ok(cg *g, const loom_tp_stmt *s, const loom_sym_expr *var) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!lane_stmt_ok(g, s->u.seq.items[i], var)) return false;
      return true;
    case LOOM_TP_STMT_STORE: {
      bool uses;
      if (!lane_access_ok(g, s->u.store.buf, s->u.store.idx, var, 1, &uses) || !uses) return false;
      if (!lane_dtype_ok(s->u.store.buf->dtype)) return false;
      return lane_expr_ok(g, s->u.store.value, var);
    }
    case LOOM_TP_STMT_LET:
      return lane_expr_ok(g, s->u.let.value, var);
    default:
      return false;
  }
}

/* Lanes run statement by statement, not iteration by iteration, so a buffer the body
 * writes must be accessed everywhere in the body at exactly the same indices (then lane
 * j only ever touches its own elements and the order does not matter). */
typedef struct access_list {
  const loom_tp_buffer *buf[64];
  loom_tp_expr *const *idx[64];
  size_t n;
  bool overflow;
} access_list;

static void collect_expr(const loom_tp_expr *e, access_list *l) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      if (l->n < 64) {
        l->buf[l->n] = e->u.load.buf;
        l->idx[l->n++] = e->u.load.idx;
      } else {
        l->overflow = true;
      }
      return;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) collect_expr(e->u.op.args[i], l);
      return;
    case LOOM_TP_EXPR_CAST: collect_expr(e->u.cast_arg, l); return;
    case LOOM_TP_EXPR_SELECT:
      collect_expr(e->u.select.cond, l);
      collect_expr(e->u.select.then_e, l);
      collect_expr(e->u.select.else_e, l);
      return;
    default: return;
  }
}

static void collect_stmt(const loom_tp_stmt *s, access_list *loads, access_list *stores) {
  if (s->kind == LOOM_TP_STMT_SEQ) {
    for (size_t i = 0; i < s->u.seq.n; i++) collect_stmt(s->u.seq.items[i], loads, stores);
  } else if (s->kind == LOOM_TP_STMT_STORE) {
    collect_expr(s->u.store.value, loads);
    if (stores->n < 64) {
      stores->buf[stores->n] = s->u.store.buf;
      stores->idx[stores->n++] = s->u.store.idx;
    } else {
      stores->overflow = true;
    }
  } else if (s->kind == LOOM_TP_STMT_LET) {
    collect_expr(s->u.let.value, loads);
  }
}

static bool same_index(const loom_tp_buffer *b, loom_tp_expr *const *x, loom_tp_expr *const *y) {
  for (int d = 0; d < b->ndim; d++)
    if (x[d]->kind != LOOM_TP_EXPR_SYM || y[d]->kind != LOOM_TP_EXPR_SYM || x[d]->u.sym != y[d]->u.sym) return false;
  return true;
}

static bool lane_independent(const loom_tp_stmt *body) {
  access_list loads = {.n = 0}, stores = {.n = 0};
  collect_stmt(body, &loads, &stores);
  if (loads.overflow || stores.overflow) return false;
  for (size_t i = 0; i < stores.n; i++) {
    for (size_t j = 0; j < stores.n; j++)
      if (stores.buf[j] == stores.buf[i] && !same_index(stores.buf[i], stores.idx[i], stores.idx[j])) return false;
    for (size_t j = 0; j < loads.n; j++)
      if (loads.buf[j] == stores.buf[i] && !same_index(stores.buf[i], stores.idx[i], loads.idx[j])) return false;
  }
  return true;
}

bool cg_lanes_ok(cg *g, const loom_tp_stmt *s) {
  return lane_stmt_ok(g, s->u.loop.body, s->u.loop.var) && lane_independent(s->u.loop.body);
}
