/* module_build.c — expression constructors (vars, shapes, constants, tuples, calls) and the C
 * builder that keeps functions in A-normal form (operands bound first, inference as each
 * binding is made). */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"

/* ---- expressions ---------------------------------------------------------------- */

static loom_graph_expr *expr_new(loom_graph_module *m, loom_graph_expr_kind k) {
  loom_graph_expr *e = LOOM_ARENA_NEW(&m->arena, loom_graph_expr);
  if (e) e->kind = k;
  return e;
}

loom_graph_expr *loom_graph_var_new(loom_graph_module *m, const char *name, const loom_sinfo *si) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_VAR);
  if (!e) return NULL;
  e->u.var.name = loom_graph_module_intern(m, name, strlen(name));
  e->u.var.id = m->next_var_id++;
  e->sinfo = si;
  return e->u.var.name ? e : NULL;
}

loom_graph_expr *loom_graph_shape_new(loom_graph_module *m, size_t n, const loom_sym_expr *const *dims) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_SHAPE);
  const loom_sym_expr **d = loom_graph_dims_new(m, n);
  if (!e || !d) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!dims[i]) return NULL;
    d[i] = dims[i];
  }
  e->u.shape.n = n;
  e->u.shape.dims = d;
  e->sinfo = loom_sinfo_shape(m, (int)n, d);
  return e->sinfo ? e : NULL;
}

loom_graph_expr *loom_graph_sym_new(loom_graph_module *m, const loom_sym_expr *v) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_SYM);
  if (!e || !v) return NULL;
  e->u.sym = v;
  e->sinfo = loom_sinfo_scalar(m, LOOM_DTYPE_I64, v);
  return e->sinfo ? e : NULL;
}

loom_graph_expr *loom_graph_const_new(loom_graph_module *m, const loom_sinfo *si, const void *data,
                                      size_t nbytes) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_CONST);
  if (!e || !si) return NULL;
  e->sinfo = si;
  e->u.cnst.data = loom_arena_alloc(&m->arena, nbytes ? nbytes : 1, 16);
  if (!e->u.cnst.data) return NULL;
  if (nbytes) memcpy(e->u.cnst.data, data, nbytes);
  e->u.cnst.nbytes = nbytes;
  return e;
}

loom_graph_expr *loom_graph_const_borrow(loom_graph_module *m, const loom_sinfo *si, const void *data, size_t nbytes) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_CONST);
  if (!e || !si) return NULL;
  e->sinfo = si;
  e->u.cnst.data = (void *)data; /* read-only from here on: passes make new constants, never write one */
  e->u.cnst.nbytes = nbytes;
  return e;
}

loom_graph_expr *loom_graph_const_scalar(loom_graph_module *m, loom_dtype dt, double v) {
  loom_graph_tensor t = {.dtype = dt, .ndim = 0, .numel = 1};
  unsigned char buf[8] = {0};
  t.data = buf;
  loom_graph_tensor_set_f64(&t, 0, v);
  return loom_graph_const_new(m, loom_sinfo_tensor(m, dt, 0, NULL, NULL), buf, loom_dtype_size(dt));
}

static loom_graph_expr **copy_exprs(loom_graph_module *m, size_t n, loom_graph_expr *const *src) {
  loom_graph_expr **a = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, n ? n : 1);
  if (!a) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!src[i]) return NULL;
    a[i] = src[i];
  }
  return a;
}

loom_graph_expr *loom_graph_tuple_new(loom_graph_module *m, size_t n, loom_graph_expr *const *items) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_TUPLE);
  loom_graph_expr **a = copy_exprs(m, n, items);
  if (!e || !a) return NULL;
  e->u.tuple.n = n;
  e->u.tuple.items = a;
  return e;
}

loom_graph_expr *loom_graph_tuple_get_new(loom_graph_module *m, loom_graph_expr *t, size_t index) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_TUPLE_GET);
  if (!e || !t) return NULL;
  e->u.get.tuple = t;
  e->u.get.index = index;
  return e;
}

static loom_graph_expr *call_named(loom_graph_module *m, loom_graph_callee_kind k, const char *name, size_t nargs,
                                   loom_graph_expr *const *args, const loom_sinfo *out) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_CALL);
  loom_graph_expr **a = copy_exprs(m, nargs, args);
  if (!e || !a || !name) return NULL;
  e->u.call.callee = k;
  e->u.call.target = loom_graph_module_intern(m, name, strlen(name));
  e->u.call.nargs = nargs;
  e->u.call.args = a;
  e->u.call.out_sinfo = out;
  return e->u.call.target ? e : NULL;
}

loom_graph_expr *loom_graph_call_func(loom_graph_module *m, const char *name, size_t nargs,
                                      loom_graph_expr *const *args) {
  return call_named(m, LOOM_GRAPH_CALLEE_FUNC, name, nargs, args, NULL);
}

loom_graph_expr *loom_graph_call_tp(loom_graph_module *m, const char *name, size_t nargs,
                                    loom_graph_expr *const *args, const loom_sinfo *out) {
  return out ? call_named(m, LOOM_GRAPH_CALLEE_TP, name, nargs, args, out) : NULL;
}

loom_graph_expr *loom_graph_call_extern(loom_graph_module *m, const char *name, size_t nargs,
                                        loom_graph_expr *const *args, const loom_sinfo *out) {
  return out ? call_named(m, LOOM_GRAPH_CALLEE_EXTERN, name, nargs, args, out) : NULL;
}

bool loom_graph_expr_is_leaf(const loom_graph_expr *e) {
  return e->kind == LOOM_GRAPH_EXPR_VAR || e->kind == LOOM_GRAPH_EXPR_CONST ||
         e->kind == LOOM_GRAPH_EXPR_SHAPE || e->kind == LOOM_GRAPH_EXPR_SYM;
}

const loom_sym_expr **loom_graph_dims_new(loom_graph_module *m, size_t n) {
  return LOOM_ARENA_ARRAY(&m->arena, const loom_sym_expr *, n ? n : 1);
}

const char *loom_graph_sym_str(loom_graph_module *m, const loom_sym_expr *e) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, m->alloc);
  if (e) loom_sym_print(e, &sb);
  else loom_strbuf_puts(&sb, "?");
  const char *r = loom_arena_strdup(&m->arena, loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r ? r : "?";
}

const char *loom_graph_dims_str(loom_graph_module *m, int n, const loom_sym_expr *const *d) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, m->alloc);
  loom_strbuf_putc(&sb, '(');
  for (int i = 0; i < n; i++) {
    if (i) loom_strbuf_puts(&sb, ", ");
    if (d) loom_sym_print(d[i], &sb);
    else loom_strbuf_putc(&sb, '?');
  }
  loom_strbuf_putc(&sb, ')');
  const char *r = loom_arena_strdup(&m->arena, loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r ? r : "?";
}

const loom_sym_expr *loom_graph_dims_prod(loom_sym_ctx *cx, int n, const loom_sym_expr *const *d) {
  const loom_sym_expr *p = loom_sym_const(cx, 1);
  for (int i = 0; i < n; i++) p = loom_sym_mul(cx, p, d[i]);
  return p;
}

/* ---- builder ---------------------------------------------------------------------- */

loom_graph_expr *loom_graph_call_op(loom_graph_module *m, loom_graph_op op, size_t nargs,
                                    loom_graph_expr *const *args, size_t nattrs,
                                    const loom_graph_attr *attrs) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_CALL);
  loom_graph_expr **a = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, nargs ? nargs : 1);
  loom_graph_attr *at = LOOM_ARENA_ARRAY(&m->arena, loom_graph_attr, nattrs ? nattrs : 1);
  if (!e || !a || !at) return NULL;
  for (size_t i = 0; i < nargs; i++) a[i] = args[i];
  for (size_t i = 0; i < nattrs; i++) {
    if (!attrs[i].name) return NULL;
    at[i] = attrs[i];
  }
  e->u.call.callee = LOOM_GRAPH_CALLEE_OP;
  e->u.call.op = op;
  e->u.call.nargs = nargs;
  e->u.call.args = a;
  e->u.call.nattrs = nattrs;
  e->u.call.attrs = at;
  return e;
}

void loom_graph_builder_begin(loom_graph_builder *b, loom_graph_module *m, const char *name) {
  memset(b, 0, sizeof *b);
  b->m = m;
  b->name = loom_graph_module_intern(m, name, strlen(name));
}

void loom_graph_builder_reset(loom_graph_builder *b) {
  LOOM_VEC_FREE(b->m->alloc, &b->params);
  LOOM_VEC_FREE(b->m->alloc, &b->blocks);
  LOOM_VEC_FREE(b->m->alloc, &b->cur);
}

loom_graph_expr *loom_graph_builder_param(loom_graph_builder *b, const char *name, const loom_sinfo *si) {
  if (!si) return NULL;
  loom_graph_expr *v = loom_graph_var_new(b->m, name, si);
  if (!v || !LOOM_VEC_PUSH(b->m->alloc, &b->params, v)) return NULL;
  return v;
}

static loom_status close_block(loom_graph_builder *b) {
  if (!b->cur.len) return LOOM_OK;
  loom_graph_module *m = b->m;
  loom_graph_block *blk = LOOM_ARENA_NEW(&m->arena, loom_graph_block);
  loom_graph_binding **bs = LOOM_ARENA_ARRAY(&m->arena, loom_graph_binding *, b->cur.len);
  if (!blk || !bs) return LOOM_OOM();
  memcpy(bs, b->cur.data, b->cur.len * sizeof *bs);
  blk->dataflow = b->cur_dataflow;
  blk->n = b->cur.len;
  blk->bindings = bs;
  if (blk->dataflow) {
    /* Every var of a dataflow block stays visible (the builder does not know which are
     * used later); passes may narrow the outputs. */
    loom_graph_expr **outs = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, b->cur.len);
    if (!outs) return LOOM_OOM();
    for (size_t i = 0; i < b->cur.len; i++) outs[i] = b->cur.data[i]->var;
    blk->outputs = outs;
    blk->noutputs = b->cur.len;
  }
  if (!LOOM_VEC_PUSH(m->alloc, &b->blocks, blk)) return LOOM_OOM();
  b->cur.len = 0;
  return LOOM_OK;
}

loom_status loom_graph_builder_block(loom_graph_builder *b, bool dataflow) {
  LOOM_PROPAGATE(close_block(b));
  b->cur_dataflow = dataflow;
  return LOOM_OK;
}

static const char *gen_name(loom_graph_builder *b, char *buf, size_t cap) {
  snprintf(buf, cap, "t%u", b->tmp++);
  return buf;
}

static loom_status bind(loom_graph_builder *b, loom_graph_binding_kind kind, loom_graph_expr *value,
                        const loom_sinfo *cast_to, const char *name, loom_graph_expr **out_var);

/* ANF: non-leaf operands of calls and tuples are bound to vars first. */
static loom_status normalize_operands(loom_graph_builder *b, loom_graph_expr *value) {
  loom_graph_expr **items = NULL;
  size_t n = 0;
  if (value->kind == LOOM_GRAPH_EXPR_CALL) {
    items = (loom_graph_expr **)value->u.call.args;
    n = value->u.call.nargs;
  } else if (value->kind == LOOM_GRAPH_EXPR_TUPLE) {
    items = (loom_graph_expr **)value->u.tuple.items;
    n = value->u.tuple.n;
  } else if (value->kind == LOOM_GRAPH_EXPR_TUPLE_GET && !loom_graph_expr_is_leaf(value->u.get.tuple)) {
    return bind(b, LOOM_GRAPH_BIND_VAR, value->u.get.tuple, NULL, NULL, &value->u.get.tuple);
  } else if (value->kind == LOOM_GRAPH_EXPR_LOOP) {
    if (value->u.loop.count && !loom_graph_expr_is_leaf(value->u.loop.count))
      LOOM_PROPAGATE(bind(b, LOOM_GRAPH_BIND_VAR, value->u.loop.count, NULL, NULL, &value->u.loop.count));
    if (value->u.loop.cond && !loom_graph_expr_is_leaf(value->u.loop.cond))
      LOOM_PROPAGATE(bind(b, LOOM_GRAPH_BIND_VAR, value->u.loop.cond, NULL, NULL, &value->u.loop.cond));
    items = (loom_graph_expr **)value->u.loop.inits;
    n = value->u.loop.ncarry;
  }
  for (size_t i = 0; i < n; i++)
    if (!loom_graph_expr_is_leaf(items[i]))
      LOOM_PROPAGATE(bind(b, LOOM_GRAPH_BIND_VAR, items[i], NULL, NULL, &items[i]));
  return LOOM_OK;
}

/* Struct info of a non-call expression (`name`: the binding, which names a loop's fresh symbols). */
static loom_status infer_simple(loom_graph_module *m, loom_graph_expr *e, const char *name) {
  if (e->sinfo) return LOOM_OK;
  if (e->kind == LOOM_GRAPH_EXPR_LOOP) return loom_graph_loop_infer(m, e, name, &e->sinfo);
  if (e->kind == LOOM_GRAPH_EXPR_TUPLE) {
    const loom_sinfo **f = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, e->u.tuple.n ? e->u.tuple.n : 1);
    if (!f) return LOOM_OOM();
    for (size_t i = 0; i < e->u.tuple.n; i++) f[i] = e->u.tuple.items[i]->sinfo;
    e->sinfo = loom_sinfo_tuple(m, e->u.tuple.n, f);
  } else if (e->kind == LOOM_GRAPH_EXPR_TUPLE_GET) {
    const loom_sinfo *t = e->u.get.tuple->sinfo;
    if (t->kind != LOOM_SINFO_TUPLE) return LOOM_ERROR(TYPE_ERROR, "tuple-get of %s", loom_graph_sinfo_kind_word(t));
    if (e->u.get.index >= t->nfields)
      return LOOM_ERROR(TYPE_ERROR, "tuple-get index %zu out of range for a tuple of %zu", e->u.get.index,
                        t->nfields);
    e->sinfo = t->fields[e->u.get.index];
  }
  return e->sinfo ? LOOM_OK : LOOM_OOM();
}

static loom_status bind(loom_graph_builder *b, loom_graph_binding_kind kind, loom_graph_expr *value,
                        const loom_sinfo *cast_to, const char *name, loom_graph_expr **out_var) {
  loom_graph_module *m = b->m;
  char buf[32];
  if (!value) return LOOM_OOM();
  LOOM_PROPAGATE(normalize_operands(b, value));
  if (!name) name = gen_name(b, buf, sizeof buf);
  loom_graph_binding *bd = LOOM_ARENA_NEW(&m->arena, loom_graph_binding);
  if (!bd) return LOOM_OOM();
  bd->kind = kind;
  bd->value = value;
  if (value->kind == LOOM_GRAPH_EXPR_CALL) {
    loom_graph_infer_result r;
    LOOM_RETURN_IF_ERROR(loom_graph_infer_call(m, value, name, &r), "while building '%s' in @%s", name, b->name);
    value->sinfo = r.sinfo;
    bd->nguards = r.nguards;
    bd->guards = r.guards;
    bd->guard_why = r.guard_why;
  } else {
    LOOM_RETURN_IF_ERROR(infer_simple(m, value, name), "while building '%s' in @%s", name, b->name);
  }
  const loom_sinfo *si = value->sinfo;
  if (kind == LOOM_GRAPH_BIND_MATCH_CAST) {
    if (loom_sinfo_is_base_of(m->cx, cast_to, value->sinfo) == LOOM_SYM_FALSE && value->sinfo->kind != LOOM_SINFO_OBJECT)
      return LOOM_ERROR(TYPE_ERROR, "match_cast '%s' in @%s can never succeed", name, b->name);
    si = cast_to;
  }
  bd->var = loom_graph_var_new(m, name, si);
  if (!bd->var || !LOOM_VEC_PUSH(m->alloc, &b->cur, bd)) return LOOM_OOM();
  if (out_var) *out_var = bd->var;
  return LOOM_OK;
}

loom_status loom_graph_builder_emit(loom_graph_builder *b, loom_graph_expr *value, const char *name,
                                    loom_graph_expr **out_var) {
  return bind(b, LOOM_GRAPH_BIND_VAR, value, NULL, name, out_var);
}

loom_status loom_graph_builder_match_cast(loom_graph_builder *b, loom_graph_expr *value,
                                          const loom_sinfo *si, const char *name,
                                          loom_graph_expr **out_var) {
  if (!si) return LOOM_OOM();
  return bind(b, LOOM_GRAPH_BIND_MATCH_CAST, value, si, name, out_var);
}

loom_status loom_graph_builder_op(loom_graph_builder *b, const char *op, size_t nargs,
                                  loom_graph_expr *const *args, size_t nattrs,
                                  const loom_graph_attr *attrs, const char *name,
                                  loom_graph_expr **out_var) {
  loom_graph_op id;
  if (!loom_graph_op_lookup(op, strlen(op), &id)) return LOOM_ERROR(NOT_FOUND, "unknown operator '%s'", op);
  return bind(b, LOOM_GRAPH_BIND_VAR, loom_graph_call_op(b->m, id, nargs, args, nattrs, attrs), NULL, name, out_var);
}

/* Swaps the builder's open sequence with a saved one (its closed blocks and open block). */
static void swap_seq(loom_graph_builder *b, loom_graph_builder_nest *s) {
  loom_graph_block **bd = b->blocks.data;
  size_t bl = b->blocks.len, bc = b->blocks.cap;
  b->blocks.data = s->blocks.data, b->blocks.len = s->blocks.len, b->blocks.cap = s->blocks.cap;
  s->blocks.data = bd, s->blocks.len = bl, s->blocks.cap = bc;
  loom_graph_binding **cd = b->cur.data;
  size_t cl = b->cur.len, cc = b->cur.cap;
  b->cur.data = s->cur.data, b->cur.len = s->cur.len, b->cur.cap = s->cur.cap;
  s->cur.data = cd, s->cur.len = cl, s->cur.cap = cc;
  bool df = b->cur_dataflow;
  b->cur_dataflow = s->cur_dataflow;
  s->cur_dataflow = df;
}

loom_status loom_graph_builder_nest_begin(loom_graph_builder *b, loom_graph_builder_nest *saved, bool dataflow) {
  memset(saved, 0, sizeof *saved);
  saved->cur_dataflow = dataflow;
  swap_seq(b, saved);
  return LOOM_OK;
}

loom_status loom_graph_builder_nest_end(loom_graph_builder *b, loom_graph_builder_nest *saved, loom_graph_expr *result,
                                        loom_graph_seq **out) {
  loom_graph_module *m = b->m;
  loom_status st = LOOM_OK;
  loom_graph_seq *seq = NULL;
  if (result) {
    if (!loom_graph_expr_is_leaf(result)) st = bind(b, LOOM_GRAPH_BIND_VAR, result, NULL, NULL, &result);
    if (!st) st = close_block(b);
    seq = st ? NULL : LOOM_ARENA_NEW(&m->arena, loom_graph_seq);
    loom_graph_block **bl = st ? NULL : LOOM_ARENA_ARRAY(&m->arena, loom_graph_block *, b->blocks.len ? b->blocks.len : 1);
    if (!st && (!seq || !bl)) st = LOOM_OOM();
    if (!st) {
      if (b->blocks.len) memcpy(bl, b->blocks.data, b->blocks.len * sizeof *bl);
      seq->nblocks = b->blocks.len;
      seq->blocks = bl;
      seq->result = result;
    }
  }
  swap_seq(b, saved);
  LOOM_VEC_FREE(m->alloc, &saved->blocks);
  LOOM_VEC_FREE(m->alloc, &saved->cur);
  if (out) *out = st ? NULL : seq;
  return st;
}

loom_status loom_graph_builder_nest_splice(loom_graph_builder *b, loom_graph_builder_nest *saved) {
  loom_graph_module *m = b->m;
  loom_status st = close_block(b);
  swap_seq(b, saved); /* saved: the nested blocks */
  if (!st) st = close_block(b);
  for (size_t i = 0; !st && i < saved->blocks.len; i++)
    if (!LOOM_VEC_PUSH(m->alloc, &b->blocks, saved->blocks.data[i])) st = LOOM_OOM();
  LOOM_VEC_FREE(m->alloc, &saved->blocks);
  LOOM_VEC_FREE(m->alloc, &saved->cur);
  return st;
}

loom_status loom_graph_builder_end(loom_graph_builder *b, loom_graph_expr *result,
                                   const loom_sinfo *ret, loom_graph_func **out) {
  loom_graph_module *m = b->m;
  loom_status st = LOOM_OK;
  if (!result) st = LOOM_OOM();
  if (!st && !loom_graph_expr_is_leaf(result)) st = bind(b, LOOM_GRAPH_BIND_VAR, result, NULL, NULL, &result);
  if (!st) st = close_block(b);
  loom_graph_func *f = LOOM_ARENA_NEW(&m->arena, loom_graph_func);
  loom_graph_seq *seq = LOOM_ARENA_NEW(&m->arena, loom_graph_seq);
  loom_graph_expr **ps = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, b->params.len ? b->params.len : 1);
  loom_graph_block **bl = LOOM_ARENA_ARRAY(&m->arena, loom_graph_block *, b->blocks.len ? b->blocks.len : 1);
  if (!st && (!f || !seq || !ps || !bl)) st = LOOM_OOM();
  if (!st) {
    if (b->params.len) memcpy(ps, b->params.data, b->params.len * sizeof *ps);
    if (b->blocks.len) memcpy(bl, b->blocks.data, b->blocks.len * sizeof *bl);
    seq->nblocks = b->blocks.len;
    seq->blocks = bl;
    seq->result = result;
    f->name = b->name;
    f->nparams = b->params.len;
    f->params = ps;
    f->body = seq;
    f->ret = ret ? ret : result->sinfo;
    st = loom_graph_module_add_func(m, f);
  }
  loom_graph_builder_reset(b);
  if (!st && out) *out = f;
  return st;
}
