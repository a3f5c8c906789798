/* sinfo.c — struct info: constructors, equality, "is base of" (three-valued), printing. */
#include <string.h>

#include "graph/graph_internal.h"

static loom_sinfo *sinfo_new(loom_graph_module *m, loom_sinfo_kind k) {
  loom_sinfo *s = LOOM_ARENA_NEW(&m->arena, loom_sinfo);
  if (!s) return NULL;
  s->kind = k;
  s->dtype = LOOM_DTYPE_UNKNOWN;
  s->ndim = LOOM_SINFO_NDIM_UNKNOWN;
  return s;
}

const loom_sinfo *loom_sinfo_object(loom_graph_module *m) {
  if (!m->object) m->object = sinfo_new(m, LOOM_SINFO_OBJECT);
  return m->object;
}

const loom_sinfo *loom_sinfo_scalar(loom_graph_module *m, loom_dtype dt, const loom_sym_expr *value) {
  loom_sinfo *s = sinfo_new(m, LOOM_SINFO_SCALAR);
  if (!s) return NULL;
  s->dtype = dt;
  s->value = value;
  return s;
}

static const loom_sym_expr *const *copy_dims(loom_graph_module *m, int ndim,
                                             const loom_sym_expr *const *dims, bool *ok) {
  *ok = true;
  if (ndim < 0 || (!dims && ndim > 0)) return NULL;
  /* A rank-0 shape is always known: an empty, non-NULL dims array. */
  const loom_sym_expr **d = loom_graph_dims_new(m, (size_t)ndim);
  if (!d && ndim > 0) {
    *ok = false;
    return NULL;
  }
  for (int i = 0; i < ndim; i++) {
    if (!dims[i]) *ok = false;
    d[i] = dims[i];
  }
  return d;
}

const loom_sinfo *loom_sinfo_shape(loom_graph_module *m, int ndim, const loom_sym_expr *const *dims) {
  loom_sinfo *s = sinfo_new(m, LOOM_SINFO_SHAPE);
  if (!s) return NULL;
  bool ok;
  s->ndim = ndim;
  s->dims = copy_dims(m, ndim, dims, &ok);
  return ok ? s : NULL;
}

const loom_sinfo *loom_sinfo_tensor(loom_graph_module *m, loom_dtype dt, int ndim,
                                    const loom_sym_expr *const *dims, const char *device) {
  loom_sinfo *s = sinfo_new(m, LOOM_SINFO_TENSOR);
  if (!s) return NULL;
  bool ok;
  s->dtype = dt;
  s->ndim = ndim;
  s->dims = copy_dims(m, ndim, dims, &ok);
  s->device = device;
  return ok ? s : NULL;
}

const loom_sinfo *loom_sinfo_tuple(loom_graph_module *m, size_t n, const loom_sinfo *const *fields) {
  loom_sinfo *s = sinfo_new(m, LOOM_SINFO_TUPLE);
  if (!s) return NULL;
  const loom_sinfo **f = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, n ? n : 1);
  if (!f) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!fields[i]) return NULL;
    f[i] = fields[i];
  }
  s->nfields = n;
  s->fields = f;
  return s;
}

const loom_sinfo *loom_sinfo_func(loom_graph_module *m, size_t nparams,
                                  const loom_sinfo *const *params, const loom_sinfo *ret) {
  const loom_sinfo *t = loom_sinfo_tuple(m, nparams, params);
  if (!t || !ret) return NULL;
  loom_sinfo *s = (loom_sinfo *)t;
  s->kind = LOOM_SINFO_FUNC;
  s->ret = ret;
  return s;
}

const loom_sinfo *loom_sinfo_list(loom_graph_module *m, const loom_sinfo *item, const loom_sym_expr *len,
                                  bool optional) {
  loom_sinfo *s = item ? sinfo_new(m, LOOM_SINFO_LIST) : NULL;
  if (!s) return NULL;
  s->ret = item;
  s->value = len;
  s->optional = optional;
  return s;
}

bool loom_sinfo_equal(const loom_sinfo *a, const loom_sinfo *b) {
  if (a == b) return true;
  if (!a || !b || a->kind != b->kind) return false;
  switch (a->kind) {
  case LOOM_SINFO_OBJECT:
    return true;
  case LOOM_SINFO_SCALAR:
    return a->dtype == b->dtype && a->value == b->value;
  case LOOM_SINFO_SHAPE:
  case LOOM_SINFO_TENSOR:
    if (a->kind == LOOM_SINFO_TENSOR && (a->dtype != b->dtype || a->device != b->device)) return false;
    if (a->ndim != b->ndim || (a->dims == NULL) != (b->dims == NULL)) return false;
    if (a->dims)
      for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
  case LOOM_SINFO_TUPLE:
  case LOOM_SINFO_FUNC:
    if (a->nfields != b->nfields) return false;
    for (size_t i = 0; i < a->nfields; i++)
      if (!loom_sinfo_equal(a->fields[i], b->fields[i])) return false;
    return a->kind == LOOM_SINFO_TUPLE || loom_sinfo_equal(a->ret, b->ret);
  case LOOM_SINFO_LIST:
    return a->optional == b->optional && a->value == b->value && loom_sinfo_equal(a->ret, b->ret);
  }
  return false;
}

/* Combines answers: FALSE wins, then UNKNOWN. */
static loom_sym_truth and3(loom_sym_truth a, loom_sym_truth b) {
  if (a == LOOM_SYM_FALSE || b == LOOM_SYM_FALSE) return LOOM_SYM_FALSE;
  if (a == LOOM_SYM_UNKNOWN || b == LOOM_SYM_UNKNOWN) return LOOM_SYM_UNKNOWN;
  return LOOM_SYM_TRUE;
}

/* Dims of `derived` against `base`: both known rank/dims here. */
static loom_sym_truth dims_base_of(loom_sym_ctx *cx, const loom_sinfo *base, const loom_sinfo *derived) {
  if (base->ndim == LOOM_SINFO_NDIM_UNKNOWN) return LOOM_SYM_TRUE;
  if (derived->ndim == LOOM_SINFO_NDIM_UNKNOWN) return LOOM_SYM_UNKNOWN;
  if (base->ndim != derived->ndim) return LOOM_SYM_FALSE;
  if (!base->dims) return LOOM_SYM_TRUE;
  if (!derived->dims) return LOOM_SYM_UNKNOWN;
  loom_sym_truth r = LOOM_SYM_TRUE;
  for (int i = 0; i < base->ndim; i++) {
    loom_sym_truth t = base->dims[i] == derived->dims[i]
                           ? LOOM_SYM_TRUE
                           : loom_sym_prove_eq(cx, base->dims[i], derived->dims[i]);
    r = and3(r, t);
  }
  return r;
}

loom_sym_truth loom_sinfo_is_base_of(loom_sym_ctx *cx, const loom_sinfo *base,
                                     const loom_sinfo *derived) {
  if (base->kind == LOOM_SINFO_OBJECT) return LOOM_SYM_TRUE;
  if (derived->kind == LOOM_SINFO_OBJECT) return LOOM_SYM_UNKNOWN;
  if (base->kind != derived->kind) return LOOM_SYM_FALSE;
  switch (base->kind) {
  case LOOM_SINFO_OBJECT:
    return LOOM_SYM_TRUE;
  case LOOM_SINFO_SCALAR: {
    loom_sym_truth r = LOOM_SYM_TRUE;
    if (base->dtype != LOOM_DTYPE_UNKNOWN) {
      if (derived->dtype == LOOM_DTYPE_UNKNOWN) r = LOOM_SYM_UNKNOWN;
      else if (derived->dtype != base->dtype) return LOOM_SYM_FALSE;
    }
    if (base->value) {
      if (!derived->value) r = and3(r, LOOM_SYM_UNKNOWN);
      else if (base->value != derived->value) r = and3(r, loom_sym_prove_eq(cx, base->value, derived->value));
    }
    return r;
  }
  case LOOM_SINFO_TENSOR: {
    loom_sym_truth r = LOOM_SYM_TRUE;
    if (base->dtype != LOOM_DTYPE_UNKNOWN) {
      if (derived->dtype == LOOM_DTYPE_UNKNOWN) r = LOOM_SYM_UNKNOWN;
      else if (derived->dtype != base->dtype) return LOOM_SYM_FALSE;
    }
    if (base->device && derived->device && base->device != derived->device) return LOOM_SYM_FALSE;
    return and3(r, dims_base_of(cx, base, derived));
  }
  case LOOM_SINFO_SHAPE:
    return dims_base_of(cx, base, derived);
  case LOOM_SINFO_TUPLE:
  case LOOM_SINFO_FUNC: {
    if (base->nfields != derived->nfields) return LOOM_SYM_FALSE;
    loom_sym_truth r = LOOM_SYM_TRUE;
    for (size_t i = 0; i < base->nfields; i++) {
      /* Function params are contravariant; a runtime check cannot tell, so treat any
       * difference as UNKNOWN at worst. */
      loom_sym_truth t = base->kind == LOOM_SINFO_TUPLE
                             ? loom_sinfo_is_base_of(cx, base->fields[i], derived->fields[i])
                             : loom_sinfo_is_base_of(cx, derived->fields[i], base->fields[i]);
      r = and3(r, t);
    }
    if (base->kind == LOOM_SINFO_FUNC) r = and3(r, loom_sinfo_is_base_of(cx, base->ret, derived->ret));
    return r;
  }
  case LOOM_SINFO_LIST: {
    /* an optional is a list of at most one: a list is one only where its length says so */
    if (base->optional && !derived->optional) return LOOM_SYM_FALSE;
    loom_sym_truth r = loom_sinfo_is_base_of(cx, base->ret, derived->ret);
    if (base->value) {
      if (!derived->value) r = and3(r, LOOM_SYM_UNKNOWN);
      else if (base->value != derived->value) r = and3(r, loom_sym_prove_eq(cx, base->value, derived->value));
    }
    return r;
  }
  }
  return LOOM_SYM_FALSE;
}

static void print_dims(int ndim, const loom_sym_expr *const *dims, loom_strbuf *sb) {
  if (ndim == LOOM_SINFO_NDIM_UNKNOWN) {
    loom_strbuf_putc(sb, '?');
    return;
  }
  if (!dims) {
    loom_strbuf_printf(sb, "%d", ndim);
    return;
  }
  loom_strbuf_putc(sb, '(');
  for (int i = 0; i < ndim; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    loom_sym_print(dims[i], sb);
  }
  if (ndim == 1) loom_strbuf_putc(sb, ',');
  loom_strbuf_putc(sb, ')');
}

static const char *dtype_str(loom_dtype dt) {
  return dt == LOOM_DTYPE_UNKNOWN ? "?" : loom_dtype_name(dt);
}

/* Text forms:
 *   Object | Scalar[f32] | Scalar[i64, n + 1] | Shape[(b, s)] | Shape[2] | Shape[?]
 *   Tensor[(b, s, 768), f32] | Tensor[3, f32] | Tensor[?, ?] | Tensor[(n,), f32, device=cuda]
 *   Tuple[A, B] | Func[(A, B) -> C] | List[A] | List[A, n] | Optional[A] */
void loom_sinfo_print(const loom_sinfo *s, loom_strbuf *sb) {
  switch (s->kind) {
  case LOOM_SINFO_OBJECT:
    loom_strbuf_puts(sb, "Object");
    return;
  case LOOM_SINFO_SCALAR:
    loom_strbuf_printf(sb, "Scalar[%s", dtype_str(s->dtype));
    if (s->value) {
      loom_strbuf_puts(sb, ", ");
      loom_sym_print(s->value, sb);
    }
    loom_strbuf_putc(sb, ']');
    return;
  case LOOM_SINFO_SHAPE:
    loom_strbuf_puts(sb, "Shape[");
    print_dims(s->ndim, s->dims, sb);
    loom_strbuf_putc(sb, ']');
    return;
  case LOOM_SINFO_TENSOR:
    loom_strbuf_puts(sb, "Tensor[");
    print_dims(s->ndim, s->dims, sb);
    loom_strbuf_printf(sb, ", %s", dtype_str(s->dtype));
    if (s->device) loom_strbuf_printf(sb, ", device=%s", s->device);
    loom_strbuf_putc(sb, ']');
    return;
  case LOOM_SINFO_TUPLE:
    loom_strbuf_puts(sb, "Tuple[");
    for (size_t i = 0; i < s->nfields; i++) {
      if (i) loom_strbuf_puts(sb, ", ");
      loom_sinfo_print(s->fields[i], sb);
    }
    loom_strbuf_putc(sb, ']');
    return;
  case LOOM_SINFO_FUNC:
    loom_strbuf_puts(sb, "Func[(");
    for (size_t i = 0; i < s->nfields; i++) {
      if (i) loom_strbuf_puts(sb, ", ");
      loom_sinfo_print(s->fields[i], sb);
    }
    loom_strbuf_puts(sb, ") -> ");
    loom_sinfo_print(s->ret, sb);
    loom_strbuf_putc(sb, ']');
    return;
  case LOOM_SINFO_LIST:
    loom_strbuf_puts(sb, s->optional ? "Optional[" : "List[");
    loom_sinfo_print(s->ret, sb);
    if (s->value) {
      loom_strbuf_puts(sb, ", ");
      loom_sym_print(s->value, sb);
    }
    loom_strbuf_putc(sb, ']');
    return;
  }
}

bool loom_sinfo_holds_string(const loom_sinfo *s) {
  if (!s) return false;
  if (s->kind == LOOM_SINFO_TUPLE) {
    for (size_t k = 0; k < s->nfields; k++)
      if (loom_sinfo_holds_string(s->fields[k])) return true;
    return false;
  }
  if (s->kind == LOOM_SINFO_LIST) return loom_sinfo_holds_string(s->ret);
  return (s->kind == LOOM_SINFO_TENSOR || s->kind == LOOM_SINFO_SCALAR) && loom_dtype_is_string(s->dtype);
}
