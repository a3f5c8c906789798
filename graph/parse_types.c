/* parse_types.c — struct info in the text format: Object, Scalar[dtype, v], Shape[dims],
 * Tensor[dims, dtype, device=d], Tuple[...], Func[(...) -> r]; and skipping an annotation to
 * read it after the value it describes. */
#include <string.h>

#include "graph/parse_internal.h"

/* ---- struct info ---------------------------------------------------------------------- */

loom_status gp_dtype_tok(parser *p, loom_dtype *out) {
  if (gp_accept(p, "?")) {
    *out = LOOM_DTYPE_UNKNOWN;
    return LOOM_OK;
  }
  size_t b = (gp_skip_ws(p), p->pos);
  const char *s;
  size_t n;
  if (!gp_ident(p, &s, &n) || !loom_dtype_parse(s, n, out)) return gp_err(p, b, "expected a dtype (f32, i64, bool, ...)");
  return LOOM_OK;
}

/* dims := '?' | INT | '(' syms ')' */
static loom_status dims(parser *p, int *ndim, const loom_sym_expr ***out) {
  *out = NULL;
  if (gp_accept(p, "?")) {
    *ndim = LOOM_SINFO_NDIM_UNKNOWN;
    return LOOM_OK;
  }
  if (gp_accept(p, "(")) {
    LOOM_VEC(const loom_sym_expr *) v = {0};
    loom_status st = gp_sym_list(p, ')', (void *)&v);
    if (!st && v.len > 64) st = gp_err(p, p->pos, "more than 64 dimensions");
    if (!st) {
      *ndim = (int)v.len;
      *out = loom_graph_dims_new(p->m, v.len);
      if (!*out) st = LOOM_OOM();
      else if (v.len) memcpy(*out, v.data, v.len * sizeof **out);
    }
    LOOM_VEC_FREE(p->m->alloc, &v);
    return st;
  }
  double d;
  bool is_int;
  int64_t iv = 0;
  size_t b = (gp_skip_ws(p), p->pos);
  LOOM_PROPAGATE(gp_number(p, &d, &is_int, &iv));
  if (!is_int || iv < 0 || iv > 64) return gp_err(p, b, "expected a rank (0 to 64), '?' or a shape '(...)'");
  *ndim = (int)iv;
  return LOOM_OK;
}


static loom_status sinfo_list(parser *p, char close, LOOM_VEC(const loom_sinfo *) * v) {
  while (gp_peek(p) != close) {
    const loom_sinfo *s;
    LOOM_PROPAGATE(gp_sinfo(p, &s));
    if (!LOOM_VEC_PUSH(p->m->alloc, v, s)) return LOOM_OOM();
    if (!gp_accept(p, ",")) break;
  }
  char t[2] = {close, 0};
  return gp_expect(p, t);
}

/* sinfo := 'Object' | 'Scalar' '[' dtype (',' sym)? ']' | 'Shape' '[' dims ']'
 *        | 'Tensor' '[' dims ',' dtype (',' 'device' '=' ident)? ']'
 *        | 'Tuple' '[' sinfo,* ']' | 'Func' '[' '(' sinfo,* ')' '->' sinfo ']'
 *        | ('List' | 'Optional') '[' sinfo (',' sym)? ']' */
static loom_status sinfo_inner(parser *p, const loom_sinfo **out);

loom_status gp_sinfo(parser *p, const loom_sinfo **out) {
  if (p->depth >= MAX_DEPTH) return gp_err(p, p->pos, "struct info nested more than %d deep", MAX_DEPTH);
  p->depth++;
  loom_status st = sinfo_inner(p, out);
  p->depth--;
  return st;
}

static loom_status sinfo_inner(parser *p, const loom_sinfo **out) {
  size_t b = (gp_skip_ws(p), p->pos);
  const char *s;
  size_t n;
  loom_graph_module *m = p->m;
  if (!gp_ident(p, &s, &n)) return gp_err(p, b, "expected struct info (Tensor[...], Shape[...], Scalar[...], ...)");
  if (gp_is_kw(s, n, "Object")) {
    *out = loom_sinfo_object(m);
    return *out ? LOOM_OK : LOOM_OOM();
  }
  LOOM_PROPAGATE(gp_expect(p, "["));
  if (gp_is_kw(s, n, "Scalar")) {
    loom_dtype dt;
    const loom_sym_expr *v = NULL;
    LOOM_PROPAGATE(gp_dtype_tok(p, &dt));
    if (gp_accept(p, ",")) LOOM_PROPAGATE(gp_sym_expr(p, &v));
    LOOM_PROPAGATE(gp_expect(p, "]"));
    *out = loom_sinfo_scalar(m, dt, v);
  } else if (gp_is_kw(s, n, "Shape")) {
    int nd;
    const loom_sym_expr **d;
    LOOM_PROPAGATE(dims(p, &nd, &d));
    LOOM_PROPAGATE(gp_expect(p, "]"));
    *out = loom_sinfo_shape(m, nd, d);
  } else if (gp_is_kw(s, n, "Tensor")) {
    int nd;
    const loom_sym_expr **d;
    loom_dtype dt;
    const char *dev = NULL;
    LOOM_PROPAGATE(dims(p, &nd, &d));
    LOOM_PROPAGATE(gp_expect(p, ","));
    LOOM_PROPAGATE(gp_dtype_tok(p, &dt));
    if (gp_accept(p, ",")) {
      const char *k;
      size_t kn;
      if (!gp_ident(p, &k, &kn) || !gp_is_kw(k, kn, "device")) return gp_err(p, p->pos, "expected 'device='");
      LOOM_PROPAGATE(gp_expect(p, "="));
      LOOM_PROPAGATE(gp_expect_ident(p, "a device name", &dev));
    }
    LOOM_PROPAGATE(gp_expect(p, "]"));
    *out = loom_sinfo_tensor(m, dt, nd, d, dev);
  } else if (gp_is_kw(s, n, "Tuple")) {
    LOOM_VEC(const loom_sinfo *) v = {0};
    loom_status st = sinfo_list(p, ']', (void *)&v);
    if (!st) *out = loom_sinfo_tuple(m, v.len, v.data);
    LOOM_VEC_FREE(m->alloc, &v);
    LOOM_PROPAGATE(st);
  } else if (gp_is_kw(s, n, "Func")) {
    LOOM_VEC(const loom_sinfo *) v = {0};
    const loom_sinfo *r = NULL;
    loom_status st = gp_expect(p, "(");
    if (!st) st = sinfo_list(p, ')', (void *)&v);
    if (!st) st = gp_expect(p, "->");
    if (!st) st = gp_sinfo(p, &r);
    if (!st) st = gp_expect(p, "]");
    if (!st) *out = loom_sinfo_func(m, v.len, v.data, r);
    LOOM_VEC_FREE(m->alloc, &v);
    LOOM_PROPAGATE(st);
  } else if (gp_is_kw(s, n, "List") || gp_is_kw(s, n, "Optional")) {
    bool opt = gp_is_kw(s, n, "Optional");
    const loom_sinfo *item;
    const loom_sym_expr *len = NULL;
    size_t ib = (gp_skip_ws(p), p->pos);
    LOOM_PROPAGATE(gp_sinfo(p, &item));
    if (item->kind != LOOM_SINFO_TENSOR && item->kind != LOOM_SINFO_LIST)
      return gp_err(p, ib, "the items of a %s must be tensors or lists", opt ? "Optional" : "List");
    if (gp_accept(p, ",")) LOOM_PROPAGATE(gp_sym_expr(p, &len));
    LOOM_PROPAGATE(gp_expect(p, "]"));
    *out = loom_sinfo_list(m, item, len, opt);
  } else {
    return gp_err(p, b, "unknown struct info '%.*s' (expected Object, Scalar, Shape, Tensor, Tuple, Func, List or "
                  "Optional)", (int)n, s);
  }
  return *out ? LOOM_OK : LOOM_OOM();
}

/* Skips balanced text up to (not including) `stop` at depth 0 ('=' never matches '=='
 * or '->'). Used to read annotations after the value they describe. */
loom_status gp_skip_to(parser *p, char stop) {
  size_t b = p->pos;
  int depth = 0;
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c == '\n' && stop == '=' && depth == 0) break;
    if (c == '(' || c == '[') depth++;
    else if (c == ')' || c == ']') depth--;
    else if (depth == 0 && c == stop) {
      bool eqeq = stop == '=' && ((p->pos + 1 < p->len && p->s[p->pos + 1] == '=') ||
                                  (p->pos > 0 && strchr("=!<>", p->s[p->pos - 1])));
      if (!eqeq) return LOOM_OK;
      p->pos++;
    }
    if (depth < 0) break;
    p->pos++;
  }
  return gp_err(p, b, "expected '%c' after the struct info", stop);
}
