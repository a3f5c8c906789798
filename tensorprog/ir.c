/* ir.c — tensor-program node constructors and the operator/loop-kind tables. */
#include <string.h>

#include "tensorprog/tp_ir.h"

typedef struct op_info {
  const char *spelling;
  int arity;
  loom_tp_op_class cls;
} op_info;

static const op_info op_infos[] = {
#define LOOM_TP_OP(name, spelling, arity, cls) {spelling, arity, LOOM_TP_CLASS_##cls},
#include "tensorprog/tp_ops.def"
#undef LOOM_TP_OP
};
_Static_assert(sizeof(op_infos) / sizeof(op_infos[0]) == LOOM_TP_OP_COUNT,
               "tp_ops.def and op_infos disagree");

const char *loom_tp_op_spelling(loom_tp_op op) { return op_infos[op].spelling; }
int loom_tp_op_arity(loom_tp_op op) { return op_infos[op].arity; }
loom_tp_op_class loom_tp_op_class_of(loom_tp_op op) { return op_infos[op].cls; }

static const char *const loop_kind_names[] = {"serial", "parallel", "vectorize", "unroll",
                                              "gpu_block", "gpu_thread", "gpu_lanes"};
_Static_assert(sizeof(loop_kind_names) / sizeof(loop_kind_names[0]) == LOOM_TP_LOOP_KIND_COUNT,
               "loop kinds and their names disagree");

const char *loom_tp_loop_kind_name(loom_tp_loop_kind k) { return loop_kind_names[k]; }

const char *loom_tp_func_name(const loom_tp_func *f) { return f->name; }

static loom_tp_expr *new_expr(loom_arena *a, loom_tp_expr_kind kind, loom_dtype t) {
  loom_tp_expr *e = LOOM_ARENA_NEW(a, loom_tp_expr);
  if (e) {
    e->kind = kind;
    e->dtype = t;
  }
  return e;
}

loom_tp_expr *loom_tp_const_f(loom_arena *a, loom_dtype t, double v) {
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_CONST, t);
  if (e) {
    e->u.c.f = v;
    /* The integer view of a float literal; 0 where it has none (inf, nan, out of range). */
    e->u.c.i = v > -9.2e18 && v < 9.2e18 ? (int64_t)v : 0;
  }
  return e;
}

loom_tp_expr *loom_tp_const_i(loom_arena *a, loom_dtype t, int64_t v) {
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_CONST, t);
  if (e) {
    e->u.c.i = v;
    e->u.c.f = (double)v;
  }
  return e;
}

loom_tp_expr *loom_tp_sym(loom_arena *a, const loom_sym_expr *s) {
  if (!s) return NULL;
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_SYM, LOOM_DTYPE_I64);
  if (e) e->u.sym = s;
  return e;
}

loom_tp_expr *loom_tp_load(loom_arena *a, const loom_tp_buffer *buf, loom_tp_expr **idx) {
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_LOAD, buf->dtype);
  if (e) {
    e->u.load.buf = buf;
    e->u.load.idx = idx;
  }
  return e;
}

loom_tp_expr *loom_tp_letref(loom_arena *a, const loom_tp_stmt *let) {
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_LETREF, let->u.let.value->dtype);
  if (e) e->u.let = let;
  return e;
}

static loom_tp_expr *new_op(loom_arena *a, loom_tp_op op, loom_tp_expr *x, loom_tp_expr *y,
                            loom_tp_expr *z) {
  if (!x) return NULL;
  loom_dtype t = op_infos[op].cls == LOOM_TP_CLASS_CMP ? LOOM_DTYPE_BOOL : x->dtype;
  if (op_infos[op].cls == LOOM_TP_CLASS_BITS) {
    if (!y) return NULL;
    t = y->dtype;
  }
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_OP, t);
  if (e) {
    e->u.op.op = op;
    e->u.op.args[0] = x;
    e->u.op.args[1] = y;
    e->u.op.args[2] = z;
  }
  return e;
}

loom_tp_expr *loom_tp_op1(loom_arena *a, loom_tp_op op, loom_tp_expr *x) {
  return new_op(a, op, x, NULL, NULL);
}

loom_tp_expr *loom_tp_op2(loom_arena *a, loom_tp_op op, loom_tp_expr *x, loom_tp_expr *y) {
  return y ? new_op(a, op, x, y, NULL) : NULL;
}

loom_tp_expr *loom_tp_op3(loom_arena *a, loom_tp_op op, loom_tp_expr *x, loom_tp_expr *y,
                          loom_tp_expr *z) {
  return y && z ? new_op(a, op, x, y, z) : NULL;
}

loom_tp_expr *loom_tp_cast(loom_arena *a, loom_dtype t, loom_tp_expr *x) {
  if (!x) return NULL;
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_CAST, t);
  if (e) e->u.cast_arg = x;
  return e;
}

loom_tp_expr *loom_tp_select(loom_arena *a, loom_tp_expr *c, loom_tp_expr *x, loom_tp_expr *y) {
  if (!c || !x || !y) return NULL;
  loom_tp_expr *e = new_expr(a, LOOM_TP_EXPR_SELECT, x->dtype);
  if (e) {
    e->u.select.cond = c;
    e->u.select.then_e = x;
    e->u.select.else_e = y;
  }
  return e;
}

static loom_tp_stmt *new_stmt(loom_arena *a, loom_tp_stmt_kind kind) {
  loom_tp_stmt *s = LOOM_ARENA_NEW(a, loom_tp_stmt);
  if (s) s->kind = kind;
  return s;
}

loom_tp_stmt *loom_tp_seq(loom_arena *a, loom_tp_stmt **items, size_t n) {
  loom_tp_stmt *s = new_stmt(a, LOOM_TP_STMT_SEQ);
  if (!s) return NULL;
  s->u.seq.items = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, n ? n : 1);
  if (!s->u.seq.items) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!items[i]) return NULL;
    s->u.seq.items[i] = items[i];
  }
  s->u.seq.n = n;
  return s;
}

loom_tp_stmt *loom_tp_for(loom_arena *a, const loom_sym_expr *var, const loom_sym_expr *extent,
                          loom_tp_loop_kind kind, bool reduce, loom_tp_stmt *body) {
  if (!var || !extent || !body) return NULL;
  loom_tp_stmt *s = new_stmt(a, LOOM_TP_STMT_FOR);
  if (s) {
    s->u.loop.var = var;
    s->u.loop.extent = extent;
    s->u.loop.kind = kind;
    s->u.loop.reduce = reduce;
    s->u.loop.body = body;
  }
  return s;
}

loom_tp_stmt *loom_tp_store(loom_arena *a, const loom_tp_buffer *buf, loom_tp_expr **idx,
                            loom_tp_expr *value) {
  if (!value) return NULL;
  loom_tp_stmt *s = new_stmt(a, LOOM_TP_STMT_STORE);
  if (s) {
    s->u.store.buf = buf;
    s->u.store.idx = idx;
    s->u.store.value = value;
  }
  return s;
}

loom_tp_stmt *loom_tp_let(loom_arena *a, const char *name, loom_tp_expr *value) {
  if (!value || !name) return NULL;
  loom_tp_stmt *s = new_stmt(a, LOOM_TP_STMT_LET);
  if (s) {
    s->u.let.name = name;
    s->u.let.value = value;
  }
  return s;
}

loom_tp_stmt *loom_tp_if(loom_arena *a, loom_tp_expr *cond, loom_tp_stmt *then_s,
                         loom_tp_stmt *else_s) {
  if (!cond || !then_s) return NULL;
  loom_tp_stmt *s = new_stmt(a, LOOM_TP_STMT_IF);
  if (s) {
    s->u.if_.cond = cond;
    s->u.if_.then_s = then_s;
    s->u.if_.else_s = else_s;
  }
  return s;
}

loom_tp_stmt *loom_tp_barrier(loom_arena *a) { return new_stmt(a, LOOM_TP_STMT_BARRIER); }

loom_tp_stmt *loom_tp_prefetch(loom_arena *a, const loom_tp_buffer *buf, loom_tp_expr **idx, bool l2) {
  if (!buf || !idx) return NULL;
  loom_tp_stmt *s = new_stmt(a, LOOM_TP_STMT_PREFETCH);
  if (s) {
    s->u.prefetch.buf = buf;
    s->u.prefetch.idx = idx;
    s->u.prefetch.l2 = l2;
  }
  return s;
}

loom_tp_stmt *loom_tp_alloc_stmt(loom_arena *a, loom_tp_buffer *buf) {
  if (!buf) return NULL;
  loom_tp_stmt *s = new_stmt(a, LOOM_TP_STMT_ALLOC);
  if (s) s->u.alloc = buf;
  return s;
}

loom_tp_buffer *loom_tp_buffer_new(loom_arena *a, const char *name, loom_dtype t, int ndim,
                                   const loom_sym_expr *const *dims, loom_tp_scope scope) {
  loom_tp_buffer *b = LOOM_ARENA_NEW(a, loom_tp_buffer);
  if (!b) return NULL;
  b->name = loom_arena_strdup(a, name);
  b->dtype = t;
  b->ndim = ndim;
  b->scope = scope;
  b->param_index = -1;
  b->uninit = false;
  b->dims = LOOM_ARENA_ARRAY(a, const loom_sym_expr *, ndim ? (size_t)ndim : 1);
  if (!b->name || !b->dims) return NULL;
  for (int i = 0; i < ndim; i++) {
    if (!dims[i]) return NULL;
    b->dims[i] = dims[i];
  }
  return b;
}

/* Whether e holds a floordiv or floormod node. */
static bool has_divmod(const loom_sym_expr *e) {
  loom_sym_kind k = loom_sym_kind_of(e);
  if (k == LOOM_SYM_FLOORDIV || k == LOOM_SYM_FLOORMOD) return true;
  for (size_t i = 0; i < loom_sym_num_operands(e); i++)
    if (has_divmod(loom_sym_operand(e, i))) return true;
  return false;
}

static const loom_sym_expr *fused_run_exact(loom_sym_ctx *cx, const loom_tp_buffer *buf, loom_tp_expr *const *idx, int d,
                                            int *naxes);

const loom_sym_expr *loom_tp_fused_run(loom_sym_ctx *cx, const loom_tp_buffer *buf, loom_tp_expr *const *idx, int d,
                                       int *naxes) {
  const loom_sym_expr *x = fused_run_exact(cx, buf, idx, d, naxes);
  if (x || !cx || d + 1 >= buf->ndim || idx[d]->kind != LOOM_TP_EXPR_SYM || !has_divmod(idx[d]->u.sym)) return x;
  /* the run's linear offset idx[d]*(extents after) + ..: fused loops' indices after the simplifier
   * took whole multiples out of them (the tail tile of 196*b rows: [b - 1 + floordiv(i + 190, 196),
   * floordiv(floormod(i + 190, 196), 49), floormod(i + 43, 49)]) sum back to one plain index
   * (the simplifier's E*floordiv(u, E) + floormod(u, E) == u) */
  x = idx[d]->u.sym;
  for (int k = 1; d + k < buf->ndim && idx[d + k]->kind == LOOM_TP_EXPR_SYM; k++) {
    x = loom_sym_add(cx, loom_sym_mul(cx, x, buf->dims[d + k]), idx[d + k]->u.sym);
    if (!x) return NULL;
    if (!has_divmod(x)) {
      *naxes = k + 1;
      return x;
    }
  }
  return NULL;
}

static const loom_sym_expr *fused_run_exact(loom_sym_ctx *cx, const loom_tp_buffer *buf, loom_tp_expr *const *idx, int d,
                                            int *naxes) {
  if (d + 1 >= buf->ndim || idx[d]->kind != LOOM_TP_EXPR_SYM || idx[d + 1]->kind != LOOM_TP_EXPR_SYM) return NULL;
  const loom_sym_expr *q = idx[d]->u.sym, *r = idx[d + 1]->u.sym;
  if (loom_sym_kind_of(q) != LOOM_SYM_FLOORDIV) return NULL;
  const loom_sym_expr *x = loom_sym_operand(q, 0), *e = loom_sym_operand(q, 1);
  if (loom_sym_kind_of(r) == LOOM_SYM_FLOORMOD && loom_sym_operand(r, 0) == x && loom_sym_operand(r, 1) == e &&
      buf->dims[d + 1] == e) {
    *naxes = 2;
    return x;
  }
  /* three or more loops fused: the axes from d + 1 on are a run whose one index is x mod E,
   * E the product of their extents */
  int inner = 0;
  const loom_sym_expr *y = cx ? loom_tp_fused_run(cx, buf, idx, d + 1, &inner) : NULL;
  if (!y || loom_sym_kind_of(y) != LOOM_SYM_FLOORMOD || loom_sym_operand(y, 0) != x || loom_sym_operand(y, 1) != e)
    return NULL;
  const loom_sym_expr *prod = buf->dims[d + 1];
  for (int k = d + 2; k <= d + inner && prod; k++) prod = loom_sym_mul(cx, prod, buf->dims[k]);
  if (!prod || (prod != e && loom_sym_prove_eq(cx, prod, e) != LOOM_SYM_TRUE)) return NULL;
  *naxes = inner + 1;
  return x;
}

bool loom_tp_expr_any_load(const loom_tp_expr *e, loom_tp_load_fn fn, void *ud) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      if (fn(ud, e)) return true;
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (loom_tp_expr_any_load(e->u.load.idx[d], fn, ud)) return true;
      return false;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (loom_tp_expr_any_load(e->u.op.args[i], fn, ud)) return true;
      return false;
    case LOOM_TP_EXPR_CAST: return loom_tp_expr_any_load(e->u.cast_arg, fn, ud);
    case LOOM_TP_EXPR_SELECT:
      return loom_tp_expr_any_load(e->u.select.cond, fn, ud) || loom_tp_expr_any_load(e->u.select.then_e, fn, ud) ||
             loom_tp_expr_any_load(e->u.select.else_e, fn, ud);
    default: return false; /* a let's value is walked at the let */
  }
}

static bool load_of(void *buf, const loom_tp_expr *load) { return load->u.load.buf == buf; }

bool loom_tp_expr_loads(const loom_tp_expr *e, const loom_tp_buffer *buf) {
  return loom_tp_expr_any_load(e, load_of, (void *)buf);
}

bool loom_tp_stmt_loads(const loom_tp_stmt *s, const loom_tp_buffer *buf) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (loom_tp_stmt_loads(s->u.seq.items[i], buf)) return true;
      return false;
    case LOOM_TP_STMT_FOR: return loom_tp_stmt_loads(s->u.loop.body, buf);
    case LOOM_TP_STMT_LET: return loom_tp_expr_loads(s->u.let.value, buf);
    case LOOM_TP_STMT_IF:
      return loom_tp_expr_loads(s->u.if_.cond, buf) || loom_tp_stmt_loads(s->u.if_.then_s, buf) ||
             (s->u.if_.else_s && loom_tp_stmt_loads(s->u.if_.else_s, buf));
    case LOOM_TP_STMT_STORE:
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (loom_tp_expr_loads(s->u.store.idx[d], buf)) return true;
      return loom_tp_expr_loads(s->u.store.value, buf);
    default: return true;
  }
}

bool loom_tp_expr_reads_memory(const loom_tp_expr *e) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: return true;
    case LOOM_TP_EXPR_LETREF: return loom_tp_expr_reads_memory(e->u.let->u.let.value);
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (loom_tp_expr_reads_memory(e->u.op.args[i])) return true;
      return false;
    case LOOM_TP_EXPR_CAST: return loom_tp_expr_reads_memory(e->u.cast_arg);
    case LOOM_TP_EXPR_SELECT:
      return loom_tp_expr_reads_memory(e->u.select.cond) || loom_tp_expr_reads_memory(e->u.select.then_e) ||
             loom_tp_expr_reads_memory(e->u.select.else_e);
    default: return false;
  }
}

bool loom_tp_expr_uses_var(const loom_tp_expr *e, const loom_sym_expr *var) {
  switch (e->kind) {
    case LOOM_TP_EXPR_SYM: return loom_sym_uses_var(e->u.sym, var);
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (loom_tp_expr_uses_var(e->u.load.idx[d], var)) return true;
      return false;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (loom_tp_expr_uses_var(e->u.op.args[i], var)) return true;
      return false;
    case LOOM_TP_EXPR_CAST: return loom_tp_expr_uses_var(e->u.cast_arg, var);
    case LOOM_TP_EXPR_SELECT:
      return loom_tp_expr_uses_var(e->u.select.cond, var) || loom_tp_expr_uses_var(e->u.select.then_e, var) ||
             loom_tp_expr_uses_var(e->u.select.else_e, var);
    default: return false;
  }
}

bool loom_tp_stmt_scatters(const loom_tp_stmt *s) {
  if (!s) return false;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (loom_tp_stmt_scatters(s->u.seq.items[i])) return true;
      return false;
    case LOOM_TP_STMT_FOR: return loom_tp_stmt_scatters(s->u.loop.body);
    case LOOM_TP_STMT_IF: return loom_tp_stmt_scatters(s->u.if_.then_s) || loom_tp_stmt_scatters(s->u.if_.else_s);
    case LOOM_TP_STMT_STORE:
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (loom_tp_expr_reads_memory(s->u.store.idx[d])) return true;
      return false;
    default: return false;
  }
}
