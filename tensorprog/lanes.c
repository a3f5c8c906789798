/* lanes.c — the form of a loop whose iterations a warp's lanes share (see tp_lanes.h). */
#include "tensorprog/tp_lanes.h"

#include <stdarg.h>
#include <stdio.h>

/* ---- small predicates ------------------------------------------------------------------ */

static bool const_index(const loom_tp_expr *e, int64_t *v) {
  if (e->kind == LOOM_TP_EXPR_CONST && !loom_dtype_is_float(e->dtype)) {
    *v = e->u.c.i;
    return true;
  }
  return e->kind == LOOM_TP_EXPR_SYM && loom_sym_is_const(e->u.sym, v);
}

/* The same index expression (symbols are interned: equal ones are one pointer). */
static bool same_index(const loom_tp_expr *a, const loom_tp_expr *b) {
  int64_t x, y;
  if (a->kind == LOOM_TP_EXPR_SYM && b->kind == LOOM_TP_EXPR_SYM) return a->u.sym == b->u.sym;
  return const_index(a, &x) && const_index(b, &y) && x == y;
}

static bool same_indices(const loom_tp_buffer *buf, loom_tp_expr *const *a, loom_tp_expr *const *b) {
  for (int d = 0; d < buf->ndim; d++)
    if (!same_index(a[d], b[d])) return false;
  return true;
}

/* Is `buf` allocated under `s`? */
static bool allocated_in(const loom_tp_stmt *s, const loom_tp_buffer *buf) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (allocated_in(s->u.seq.items[i], buf)) return true;
      return false;
    case LOOM_TP_STMT_FOR: return allocated_in(s->u.loop.body, buf);
    case LOOM_TP_STMT_IF:
      return allocated_in(s->u.if_.then_s, buf) || (s->u.if_.else_s && allocated_in(s->u.if_.else_s, buf));
    case LOOM_TP_STMT_ALLOC: return s->u.alloc == buf;
    default: return false;
  }
}

/* A dtype whose values a shuffle moves and whose identities exist: f16 / bf16 / f32 / f64,
 * 8- to 64-bit integers. */
static bool acc_dtype(loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_F16: case LOOM_DTYPE_BF16: case LOOM_DTYPE_F32: case LOOM_DTYPE_F64:
    case LOOM_DTYPE_I8: case LOOM_DTYPE_I16: case LOOM_DTYPE_I32: case LOOM_DTYPE_I64:
    case LOOM_DTYPE_U8: case LOOM_DTYPE_U16: case LOOM_DTYPE_U32: case LOOM_DTYPE_U64:
      return true;
    default:
      return false;
  }
}

/* `st` as `Q[c] = Q[c] OP e` or `Q[c] = e OP Q[c]` (c constant, OP + * max min): e and *op,
 * else NULL. */
static const loom_tp_expr *update_operand(const loom_tp_stmt *st, loom_tp_op *op) {
  const loom_tp_buffer *q = st->u.store.buf;
  const loom_tp_expr *v = st->u.store.value;
  int64_t c;
  for (int d = 0; d < q->ndim; d++)
    if (!const_index(st->u.store.idx[d], &c)) return NULL;
  if (v->kind != LOOM_TP_EXPR_OP) return NULL;
  loom_tp_op o = v->u.op.op;
  if (o != LOOM_TP_OP_ADD && o != LOOM_TP_OP_MUL && o != LOOM_TP_OP_MAX && o != LOOM_TP_OP_MIN) return NULL;
  for (int k = 0; k < 2; k++) {
    const loom_tp_expr *self = v->u.op.args[k];
    if (self->kind == LOOM_TP_EXPR_LOAD && self->u.load.buf == q && same_indices(q, self->u.load.idx, st->u.store.idx)) {
      *op = o;
      return v->u.op.args[1 - k];
    }
  }
  return NULL;
}

/* ---- walking the loads ------------------------------------------------------------------ */

/* stmt_loads' `form` that asks for the loads outside gpu_lanes loops only (no accumulators). */
static const loom_tp_lanes_form outside_lanes;

/* Every load under `s`; with `form`, an accumulator update's own load of its element is
 * skipped (its other operand is walked). The stores are the caller's (lanes_walk). */
static bool stmt_loads(const loom_tp_stmt *s, loom_tp_load_fn fn, void *ud, const loom_tp_lanes_form *form) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (stmt_loads(s->u.seq.items[i], fn, ud, form)) return true;
      return false;
    case LOOM_TP_STMT_FOR:
      if (s->u.loop.kind == LOOM_TP_LOOP_GPU_LANES && form == &outside_lanes) return false;
      return stmt_loads(s->u.loop.body, fn, ud, form);
    case LOOM_TP_STMT_IF:
      return loom_tp_expr_any_load(s->u.if_.cond, fn, ud) || stmt_loads(s->u.if_.then_s, fn, ud, form) ||
             (s->u.if_.else_s && stmt_loads(s->u.if_.else_s, fn, ud, form));
    case LOOM_TP_STMT_LET: return loom_tp_expr_any_load(s->u.let.value, fn, ud);
    case LOOM_TP_STMT_STORE: {
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (loom_tp_expr_any_load(s->u.store.idx[d], fn, ud)) return true;
      loom_tp_op op;
      const loom_tp_expr *e = NULL;
      if (form)
        for (size_t i = 0; i < form->naccs && !e; i++)
          if (form->accs[i].buf == s->u.store.buf) e = update_operand(s, &op);
      return loom_tp_expr_any_load(e ? e : s->u.store.value, fn, ud);
    }
    case LOOM_TP_STMT_PREFETCH:
      for (int d = 0; d < s->u.prefetch.buf->ndim; d++)
        if (loom_tp_expr_any_load(s->u.prefetch.idx[d], fn, ud)) return true;
      return false;
    default: return false;
  }
}

/* A load of `buf` at other indices than `idx`. */
typedef struct other_elem {
  const loom_tp_buffer *buf;
  loom_tp_expr *const *idx;
} other_elem;

static bool loads_other_elem(void *ud, const loom_tp_expr *load) {
  other_elem *o = ud;
  return load->u.load.buf == o->buf && !same_indices(o->buf, load->u.load.idx, o->idx);
}

/* A load of one of `bufs` (*found: which). */
typedef struct buf_hit {
  const loom_tp_buffer *const *bufs;
  size_t n;
  const loom_tp_buffer *found;
} buf_hit;

static bool loads_one_of(void *ud, const loom_tp_expr *load) {
  buf_hit *h = ud;
  for (size_t i = 0; i < h->n && !h->found; i++)
    if (h->bufs[i] == load->u.load.buf) h->found = load->u.load.buf;
  return h->found != NULL;
}

/* ---- the stores ------------------------------------------------------------------------- */

typedef struct lanes_walk {
  const loom_tp_stmt *loop;
  loom_tp_lanes_form *out;
  bool bad;
} lanes_walk;

static void refuse(lanes_walk *w, const char *fmt, ...) {
  if (w->bad) return;
  w->bad = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->out->why, sizeof w->out->why, fmt, ap);
  va_end(ap);
}

/* Records the accumulator update `st` (of an outer Local buffer). */
static void add_update(lanes_walk *w, const loom_tp_stmt *st) {
  const loom_tp_buffer *q = st->u.store.buf;
  loom_tp_op op;
  if (!update_operand(st, &op)) {
    refuse(w, "it stores to Local '%s' (allocated outside it) other than as '%s[c] = %s[c] OP e' with c constant and OP + * max min",
           q->name, q->name, q->name);
    return;
  }
  if (!acc_dtype(q->dtype)) {
    refuse(w, "its accumulator '%s' is %s (lanes combine f16, bf16, f32, f64 and 8- to 64-bit integers)", q->name,
           loom_dtype_name(q->dtype));
    return;
  }
  int64_t off = 0;
  for (int d = 0; d < q->ndim; d++) {
    int64_t c, n = 1;
    const_index(st->u.store.idx[d], &c);
    if (!loom_sym_is_const(q->dims[d], &n)) n = 1 << 20; /* a symbolic extent: any stride apart */
    off = off * n + c;
  }
  loom_tp_lanes_form *f = w->out;
  for (size_t i = 0; i < f->naccs; i++) {
    if (f->accs[i].buf != q || f->accs[i].offset != off) continue;
    if (f->accs[i].op != op)
      refuse(w, "its accumulator '%s' is updated with both '%s' and '%s'", q->name, loom_tp_op_spelling(f->accs[i].op),
             loom_tp_op_spelling(op));
    return;
  }
  if (f->naccs == LOOM_TP_LANES_MAX_ACCS) {
    refuse(w, "it updates more than %d accumulator elements", LOOM_TP_LANES_MAX_ACCS);
    return;
  }
  f->accs[f->naccs++] = (loom_tp_lanes_acc){q, st->u.store.idx, off, op};
}

static void walk_stores(lanes_walk *w, const loom_tp_stmt *s) {
  if (w->bad) return;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) walk_stores(w, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR: walk_stores(w, s->u.loop.body); return;
    case LOOM_TP_STMT_IF:
      walk_stores(w, s->u.if_.then_s);
      if (s->u.if_.else_s) walk_stores(w, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_STORE: break;
    default: return;
  }
  const loom_tp_buffer *b = s->u.store.buf;
  const loom_tp_stmt *loop = w->loop;
  if (allocated_in(loop->u.loop.body, b)) return; /* the iteration's own temporary */
  if (b->scope == LOOM_TP_SCOPE_LOCAL) {
    if (!loop->u.loop.reduce)
      refuse(w, "it stores to Local '%s' allocated outside it (each lane has its own copy)", b->name);
    else
      add_update(w, s);
    return;
  }
  if (!loop->u.loop.reduce) return;
  /* a reduction's other store: the iteration's own element only */
  bool own = false;
  for (int d = 0; d < b->ndim && !own; d++)
    own = s->u.store.idx[d]->kind == LOOM_TP_EXPR_SYM && s->u.store.idx[d]->u.sym == loop->u.loop.var;
  other_elem o = {b, s->u.store.idx};
  if (!own || stmt_loads(loop->u.loop.body, loads_other_elem, &o, NULL))
    refuse(w, "it stores to '%s' at an element other iterations may touch (not at its own index '%s')", b->name,
           loom_sym_var_name(loop->u.loop.var));
}

bool loom_tp_lanes_form_of(const loom_tp_stmt *loop, loom_tp_lanes_form *out) {
  out->naccs = 0;
  out->why[0] = 0;
  lanes_walk w = {.loop = loop, .out = out};
  walk_stores(&w, loop->u.loop.body);
  const loom_tp_buffer *accs[LOOM_TP_LANES_MAX_ACCS];
  for (size_t i = 0; i < out->naccs; i++) accs[i] = out->accs[i].buf;
  buf_hit r = {accs, out->naccs, NULL};
  if (!w.bad && out->naccs && stmt_loads(loop->u.loop.body, loads_one_of, &r, out))
    refuse(&w, "it reads its accumulator '%s' other than in its updates '%s[c] = %s[c] OP e'", r.found->name,
           r.found->name, r.found->name);
  return !w.bad;
}

/* ---- the code around the lanes loops --------------------------------------------------- */

/* The stores outside gpu_lanes loops (to buffers that are not Local): n of them, up to 16. */
typedef struct row_stores {
  const loom_tp_buffer *buf[16];
  size_t n;
  bool many; /* more than 16 */
} row_stores;

static void collect_row_stores(row_stores *r, const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) collect_row_stores(r, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      if (s->u.loop.kind != LOOM_TP_LOOP_GPU_LANES) collect_row_stores(r, s->u.loop.body);
      return;
    case LOOM_TP_STMT_IF:
      collect_row_stores(r, s->u.if_.then_s);
      if (s->u.if_.else_s) collect_row_stores(r, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_STORE:
      if (s->u.store.buf->scope == LOOM_TP_SCOPE_LOCAL) return;
      for (size_t i = 0; i < r->n; i++)
        if (r->buf[i] == s->u.store.buf) return;
      if (r->n == 16) r->many = true;
      else r->buf[r->n++] = s->u.store.buf;
      return;
    default:
      return;
  }
}

const loom_tp_buffer *loom_tp_lanes_row_conflict(const loom_tp_stmt *row) {
  row_stores r = {.n = 0};
  collect_row_stores(&r, row);
  if (r.many) return r.buf[0];
  buf_hit h = {r.buf, r.n, NULL};
  stmt_loads(row, loads_one_of, &h, &outside_lanes);
  return h.found;
}

/* ---- accumulators in memory ---------------------------------------------------------------- */

/* The first store under `s` to a buffer that is not Local, at indices free of `var`. */
static const loom_tp_stmt *memory_update(const loom_tp_stmt *s, const loom_sym_expr *var) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) {
        const loom_tp_stmt *u = memory_update(s->u.seq.items[i], var);
        if (u) return u;
      }
      return NULL;
    case LOOM_TP_STMT_FOR: return memory_update(s->u.loop.body, var);
    case LOOM_TP_STMT_IF: {
      const loom_tp_stmt *u = memory_update(s->u.if_.then_s, var);
      return u ? u : s->u.if_.else_s ? memory_update(s->u.if_.else_s, var) : NULL;
    }
    case LOOM_TP_STMT_STORE:
      if (s->u.store.buf->scope == LOOM_TP_SCOPE_LOCAL) return NULL;
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (loom_tp_expr_uses_var(s->u.store.idx[d], var)) return NULL;
      return s;
    default: return NULL;
  }
}

/* A load (not of `acc`) that uses `var` other than as its last index alone. */
typedef struct along_var {
  const loom_tp_buffer *acc;
  const loom_sym_expr *var;
} along_var;

static bool loads_across(void *ud, const loom_tp_expr *load) {
  along_var *v = ud;
  const loom_tp_buffer *b = load->u.load.buf;
  if (b == v->acc || b->ndim == 0) return false;
  for (int d = 0; d < b->ndim; d++) {
    const loom_tp_expr *x = load->u.load.idx[d];
    bool last_alone = d == b->ndim - 1 && x->kind == LOOM_TP_EXPR_SYM && x->u.sym == v->var;
    if (!last_alone && loom_tp_expr_uses_var(x, v->var)) return true;
  }
  return false;
}

const loom_tp_buffer *loom_tp_lanes_memory_acc(const loom_tp_stmt *loop) {
  if (!loop->u.loop.reduce) return NULL;
  const loom_tp_stmt *u = memory_update(loop->u.loop.body, loop->u.loop.var);
  if (!u) return NULL;
  along_var v = {u->u.store.buf, loop->u.loop.var};
  return stmt_loads(loop->u.loop.body, loads_across, &v, NULL) ? NULL : u->u.store.buf;
}
