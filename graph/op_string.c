/* op_string.c — the string operators (docs/ir.md "Strings"): string_concat, string_split,
 * string_normalize, regex_full_match, label_encode, and cast's conversions to and from strings
 * (loom_graph_cast_string). Their tensors have dtype string, whose
 * element is a loom_str handle (base/dtype.h); a graph tensor owns its elements' bytes
 * (graph/tensor.c: loom_graph_tensor_set_str). These ops have no tensor programs: they run on
 * the reference interpreter, and the legalize pass keeps every call that touches a string as
 * an operator (flag STR), which a compiled pipeline refuses by name. Equal on strings is
 * equal's (op_elemwise.c).
 *
 * ONNX's RegexFullMatch specifies RE2 syntax; Loom matches with POSIX extended regular
 * expressions (glibc's regcomp, no extra dependency) after rewriting the RE2 spellings that
 * have a POSIX counterpart (\d, and \w \s \d inside brackets); the RE2 features POSIX lacks
 * ((?...) groups, lazy quantifiers, \p classes, \A \z) are refused at inference, by name. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "graph/graph_internal.h"

static const loom_graph_attr_spec no_attrs[] = {{0}};

/* Requires operand i to be a string tensor of known rank; *out is its struct info. */
static loom_status str_operand(loom_graph_icx *ic, size_t i, bool need_dims, const loom_sinfo **out) {
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, need_dims, out));
  if ((*out)->dtype != LOOM_DTYPE_STRING && (*out)->dtype != LOOM_DTYPE_UNKNOWN)
    return loom_graph_icx_error(ic, "operand %zu has dtype %s, expected string", i, loom_dtype_name((*out)->dtype));
  if ((*out)->ndim < 0) return loom_graph_icx_error(ic, "operand %zu needs a known rank", i);
  return LOOM_OK;
}

/* Whether the n bytes at s are well-formed UTF-8 (no overlong forms, surrogates or code
 * points above U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
    if (k == 9 || i + k >= n) return false; /* not a lead byte, or cut short */
    uint32_t cp = k == 0 ? c : k == 1 ? c & 0x1f : k == 2 ? c & 0x0f : c & 0x07;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += k + 1;
  }
  return true;
}

/* INVALID_ARGUMENT naming the op, the operand and the element when element i of t is not
 * UTF-8 (the ops that read characters need it). */
static loom_status need_utf8(loom_graph_ecx *ec, const loom_graph_tensor *t, size_t i) {
  loom_str e = loom_graph_tensor_get_str(t, i);
  if (utf8_valid((const unsigned char *)e.data, (size_t)e.len)) return LOOM_OK;
  const loom_graph_expr *x = ec->call->u.call.args[0];
  return LOOM_ERROR(INVALID_ARGUMENT, "%s: element %zu of operand 0%s%s%s is not valid UTF-8", ec->op, i,
                    x->kind == LOOM_GRAPH_EXPR_VAR ? " ('" : "", x->kind == LOOM_GRAPH_EXPR_VAR ? x->u.var.name : "",
                    x->kind == LOOM_GRAPH_EXPR_VAR ? "')" : "");
}

/* ---- string_concat ---------------------------------------------------------------------------- */

/* string_concat(a, b): a[i] followed by b[i] per element, with NumPy broadcasting. */
static loom_status infer_concat(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *a, *b;
  LOOM_PROPAGATE(str_operand(ic, 0, true, &a));
  LOOM_PROPAGATE(str_operand(ic, 1, true, &b));
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)nd);
  if (!d) return LOOM_OOM();
  LOOM_PROPAGATE(loom_graph_icx_broadcast(ic, 0, a->ndim, a->dims, 1, b->ndim, b->dims, d));
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_STRING, nd, d, a->device);
  return LOOM_OK;
}

static loom_status eval_concat(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *a = &args[0].t, *b = &args[1].t;
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  int64_t shape[8];
  for (int k = 0; k < nd; k++) {
    int ka = k - (nd - a->ndim), kb = k - (nd - b->ndim);
    int64_t da = ka < 0 ? 1 : a->shape[ka], db = kb < 0 ? 1 : b->shape[kb];
    if (da != db && da != 1 && db != 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 0 axis %d is %lld, operand 1 axis %d is %lld", ec->op, ka,
                        (long long)da, kb, (long long)db);
    shape[k] = da == 1 ? db : da;
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_STRING, nd, shape, out));
  if (!out->t.numel) return LOOM_OK;
  int64_t idx[8] = {0};
  size_t o = 0;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_status st = LOOM_OK;
  do {
    loom_str x = loom_graph_tensor_get_str(a, loom_graph_bcast_index(a, nd, idx));
    loom_str y = loom_graph_tensor_get_str(b, loom_graph_bcast_index(b, nd, idx));
    loom_strbuf_clear(&sb);
    loom_strbuf_append(&sb, x.data ? x.data : "", (size_t)x.len);
    loom_strbuf_append(&sb, y.data ? y.data : "", (size_t)y.len);
    if (sb.oom) st = LOOM_OOM();
    else st = loom_graph_tensor_set_str(&out->t, o++, sb.data, sb.len);
  } while (!st && loom_graph_index_next(nd, out->t.shape, idx));
  loom_strbuf_free(&sb);
  return st;
}

/* ---- string_split ----------------------------------------------------------------------------- */

/* string_split(x, delimiter?, maxsplit=-1): Tuple(substrings x.shape + (m,), i64 counts
 * x.shape), m (fresh) the most pieces of any element; shorter rows are padded with "". With
 * a delimiter, Python's str.split(delimiter, maxsplit) (empty pieces kept); without one (or
 * ""), str.split(None, maxsplit): runs of whitespace separate, leading / trailing ones drop.
 * maxsplit < 0: no limit. */
static const loom_graph_attr_spec split_attrs[] = {{"delimiter", LOOM_GRAPH_ATTR_STR, .dflt_str = ""},
                                                   {"maxsplit", LOOM_GRAPH_ATTR_INT, .dflt = -1},
                                                   {0}};

static loom_status infer_split(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(str_operand(ic, 0, true, &x));
  if (x->ndim >= 8) return loom_graph_icx_error(ic, "result rank %d above 8", x->ndim + 1);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim + 1);
  if (!d) return LOOM_OOM();
  for (int k = 0; k < x->ndim; k++) d[k] = x->dims[k];
  if (!(d[x->ndim] = loom_graph_icx_fresh(ic, "pieces"))) return loom_sym_ctx_take_error(ic->cx);
  const loom_sinfo *f[2] = {loom_sinfo_tensor(ic->m, LOOM_DTYPE_STRING, x->ndim + 1, d, x->device),
                            loom_sinfo_tensor(ic->m, LOOM_DTYPE_I64, x->ndim, x->dims, x->device)};
  *out = loom_sinfo_tuple(ic->m, 2, f);
  return LOOM_OK;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* The pieces of s: (start, length) pairs into pos[2 * k] (NULL: count only); returns the count. */
static size_t split_one(loom_str s, const char *delim, size_t dlen, int64_t maxsplit, size_t *pos) {
  const char *p = s.data ? s.data : "";
  size_t n = (size_t)s.len, k = 0, i = 0;
  if (!dlen) {
    for (;;) {
      while (i < n && is_space(p[i])) i++;
      if (i >= n) break;
      size_t b = i;
      if (maxsplit >= 0 && (int64_t)k == maxsplit) {
        size_t e = n;
        while (e > b && is_space(p[e - 1])) e--;
        i = n;
        if (pos) pos[2 * k] = b, pos[2 * k + 1] = e - b;
        k++;
        break;
      }
      while (i < n && !is_space(p[i])) i++;
      if (pos) pos[2 * k] = b, pos[2 * k + 1] = i - b;
      k++;
    }
    return k;
  }
  size_t b = 0;
  for (i = 0; i + dlen <= n && (maxsplit < 0 || (int64_t)k < maxsplit);) {
    if (memcmp(p + i, delim, dlen) == 0) {
      if (pos) pos[2 * k] = b, pos[2 * k + 1] = i - b;
      k++;
      i += dlen;
      b = i;
    } else i++;
  }
  if (pos) pos[2 * k] = b, pos[2 * k + 1] = n - b;
  return k + 1;
}

static loom_status eval_split(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  const char *delim = loom_graph_call_str(ec->call, "delimiter");
  size_t dlen = strlen(delim);
  int64_t maxsplit = loom_graph_call_int(ec->call, "maxsplit");
  size_t m = 0;
  for (size_t i = 0; i < x->numel; i++) {
    size_t k = split_one(loom_graph_tensor_get_str(x, i), delim, dlen, maxsplit, NULL);
    if (k > m) m = k;
  }
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_TUPLE;
  if (!(out->items = calloc(2, sizeof *out->items))) return LOOM_OOM();
  out->n = 2;
  int64_t sh[9];
  memcpy(sh, x->shape, (size_t)x->ndim * sizeof *sh);
  sh[x->ndim] = (int64_t)m;
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_STRING, x->ndim + 1, sh, &out->items[0]));
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_I64, x->ndim, x->shape, &out->items[1]));
  size_t *pos = malloc((m ? m : 1) * 2 * sizeof *pos);
  if (!pos) return LOOM_OOM();
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < x->numel && !st; i++) {
    loom_str s = loom_graph_tensor_get_str(x, i);
    size_t k = split_one(s, delim, dlen, maxsplit, pos);
    loom_graph_tensor_set_i64(&out->items[1].t, i, (int64_t)k);
    for (size_t j = 0; j < k && !st; j++)
      st = loom_graph_tensor_set_str(&out->items[0].t, i * m + j, (s.data ? s.data : "") + pos[2 * j], pos[2 * j + 1]);
  }
  free(pos);
  return st;
}

/* ---- string_normalize ------------------------------------------------------------------------- */

/* string_normalize(x, case="NONE"|"LOWER"|"UPPER", case_sensitive=false, stopwords=[...]): ONNX
 * StringNormalizer. x is (c) or (1, c); the elements equal to a stopword (ignoring ASCII case
 * unless case_sensitive) are dropped, the rest changed to lower / upper case, in order. The
 * result is (n) or (1, n), n fresh; when every element goes, one empty string stays. Case
 * changes map ASCII letters only (other UTF-8 characters pass unchanged); the elements must be
 * valid UTF-8. */
static const loom_graph_attr_spec norm_attrs[] = {{"case", LOOM_GRAPH_ATTR_STR, .dflt_str = "NONE"},
                                                  {"case_sensitive", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                  {"stopwords", LOOM_GRAPH_ATTR_STRS, .required = false},
                                                  {0}};

static loom_status infer_norm(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(str_operand(ic, 0, true, &x));
  const char *c = loom_graph_call_str(ic->call, "case");
  if (strcmp(c, "NONE") && strcmp(c, "LOWER") && strcmp(c, "UPPER"))
    return loom_graph_icx_error(ic, "case \"%s\" is not NONE, LOWER or UPPER", c);
  if (x->ndim != 1 && x->ndim != 2) return loom_graph_icx_error(ic, "operand 0 has rank %d, expected 1 or 2", x->ndim);
  if (x->ndim == 2) {
    int64_t v;
    if (!loom_sym_is_const(x->dims[0], &v) || v != 1)
      return loom_graph_icx_error(ic, "operand 0 has shape %s, expected (c) or (1, c)", loom_graph_dims_str(ic->m, 2, x->dims));
  }
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  d[0] = x->dims[0];
  if (!(d[x->ndim - 1] = loom_graph_icx_fresh(ic, "kept"))) return loom_sym_ctx_take_error(ic->cx);
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_STRING, x->ndim, d, x->device);
  return LOOM_OK;
}

/* ASCII case-insensitive equality of s and the NUL-terminated w. */
static bool equal_nocase(loom_str s, const char *w) {
  size_t n = strlen(w);
  if (n != s.len) return false;
  for (size_t i = 0; i < n; i++) {
    char a = s.data[i], b = w[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

static loom_status eval_norm(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  size_t nstop;
  const char *const *stop = loom_graph_call_strs(ec->call, "stopwords", &nstop);
  bool sensitive = loom_graph_call_int(ec->call, "case_sensitive") != 0;
  const char *cs = loom_graph_call_str(ec->call, "case");
  int change = !strcmp(cs, "LOWER") ? 1 : !strcmp(cs, "UPPER") ? 2 : 0;
  bool *keep = calloc(x->numel ? x->numel : 1, sizeof *keep);
  if (!keep) return LOOM_OOM();
  size_t kept = 0;
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < x->numel && !st; i++) {
    if ((st = need_utf8(ec, x, i))) break;
    loom_str s = loom_graph_tensor_get_str(x, i);
    keep[i] = true;
    for (size_t w = 0; w < nstop && keep[i]; w++)
      keep[i] = !(sensitive ? loom_graph_str_equal(s, (loom_str){stop[w], strlen(stop[w])}) : equal_nocase(s, stop[w]));
    kept += keep[i];
  }
  int64_t sh[2] = {1, 1};
  if (!st) {
    sh[x->ndim - 1] = kept ? (int64_t)kept : 1;
    st = loom_graph_value_tensor(LOOM_DTYPE_STRING, x->ndim, sh, out);
  }
  for (size_t i = 0, o = 0; i < x->numel && !st; i++) {
    if (!keep[i]) continue;
    loom_str s = loom_graph_tensor_get_str(x, i);
    if ((st = loom_graph_tensor_set_str(&out->t, o, s.data, (size_t)s.len))) break;
    char *p = (char *)loom_graph_tensor_get_str(&out->t, o++).data; /* out's own copy */
    for (size_t j = 0; j < s.len; j++) {
      if (change == 1 && p[j] >= 'A' && p[j] <= 'Z') p[j] = (char)(p[j] - 'A' + 'a');
      if (change == 2 && p[j] >= 'a' && p[j] <= 'z') p[j] = (char)(p[j] - 'a' + 'A');
    }
  }
  free(keep);
  return st;
}

/* ---- regex_full_match ------------------------------------------------------------------------- */

/* Rewrites RE2 pattern `re` into a POSIX ERE matching whole strings, "^(...)$", into sb; on a
 * feature POSIX lacks, writes its name into why and returns false. */
static bool re2_to_posix(const char *re, loom_strbuf *sb, char *why, size_t cap) {
  loom_strbuf_puts(sb, "^(");
  bool in_class = false, dash = false; /* inside [...]; an escaped '-' seen there (written last: literal in POSIX) */
  for (const char *p = re; *p; p++) {
    char c = *p;
    if (in_class) {
      if (c == ']') {
        if (dash) loom_strbuf_putc(sb, '-');
        in_class = dash = false, loom_strbuf_putc(sb, c);
      } else if (c == '\\' && p[1] == '-') dash = true, p++;
      else if (c == '\\') {
        char e = *++p;
        if (e == 'w') loom_strbuf_puts(sb, "[:alnum:]_");
        else if (e == 'd') loom_strbuf_puts(sb, "[:digit:]");
        else if (e == 's') loom_strbuf_puts(sb, "[:space:]");
        else if (e == '\\') loom_strbuf_putc(sb, '\\');
        else if (e && strchr(".^$|?*+()[{}/", e)) loom_strbuf_putc(sb, e);
        else return snprintf(why, cap, "the escape \\%c inside [...]", e ? e : ' '), false;
      } else loom_strbuf_putc(sb, c);
      continue;
    }
    if (c == '[') {
      in_class = true;
      loom_strbuf_putc(sb, c);
      if (p[1] == '^') loom_strbuf_putc(sb, *++p);
      if (p[1] == ']') loom_strbuf_putc(sb, *++p);
      continue;
    }
    if (c == '(' && p[1] == '?') return snprintf(why, cap, "(?...) groups and flags"), false;
    if (strchr("*+?}", c) && p[1] == '?') return snprintf(why, cap, "lazy quantifiers (%c?)", c), false;
    if (c == '\\') {
      char e = *++p;
      if (e == 'd') loom_strbuf_puts(sb, "[0-9]");
      else if (e == 'D') loom_strbuf_puts(sb, "[^0-9]");
      else if (e == 'n') loom_strbuf_putc(sb, '\n');
      else if (e == 't') loom_strbuf_putc(sb, '\t');
      else if (e && (strchr("wWsSbB", e) || strchr(".^$|?*+()[]{}\\/-", e))) loom_strbuf_putc(sb, '\\'), loom_strbuf_putc(sb, e);
      else return snprintf(why, cap, "the escape \\%c", e ? e : ' '), false;
      continue;
    }
    loom_strbuf_putc(sb, c);
  }
  if (in_class) return snprintf(why, cap, "an unterminated [...]"), false;
  loom_strbuf_puts(sb, ")$");
  return true;
}

/* Compiles attribute `pattern` of call into *re; errors name the pattern and why. */
static loom_status compile_pattern(const loom_graph_expr *call, const char *op, regex_t *re) {
  const char *pat = loom_graph_call_str(call, "pattern");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  char why[160];
  if (!re2_to_posix(pat, &sb, why, sizeof why)) {
    loom_strbuf_free(&sb);
    return LOOM_ERROR(UNIMPLEMENTED, "%s: pattern \"%s\" uses %s, which the POSIX regex engine does not have", op, pat, why);
  }
  if (sb.oom) return loom_strbuf_free(&sb), LOOM_OOM();
  int rc = regcomp(re, loom_strbuf_cstr(&sb), REG_EXTENDED | REG_NOSUB);
  loom_strbuf_free(&sb);
  if (rc) {
    char msg[200];
    regerror(rc, re, msg, sizeof msg);
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: pattern \"%s\" does not compile: %s", op, pat, msg);
  }
  return LOOM_OK;
}

/* regex_full_match(x, pattern): bool, whether each element matches `pattern` as a whole. */
static const loom_graph_attr_spec regex_attrs[] = {{"pattern", LOOM_GRAPH_ATTR_STR, .required = true}, {0}};

static loom_status infer_regex(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(str_operand(ic, 0, false, &x));
  regex_t re;
  LOOM_PROPAGATE(compile_pattern(ic->call, ic->op, &re));
  regfree(&re);
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_BOOL, x->ndim, x->dims, x->device);
  return LOOM_OK;
}

static loom_status eval_regex(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  regex_t re;
  LOOM_PROPAGATE(compile_pattern(ec->call, ec->op, &re));
  loom_status st = loom_graph_value_tensor(LOOM_DTYPE_BOOL, x->ndim, x->shape, out);
  for (size_t i = 0; i < x->numel && !st; i++) {
    if ((st = need_utf8(ec, x, i))) break;
    loom_str s = loom_graph_tensor_get_str(x, i);
    if (s.len && memchr(s.data, 0, (size_t)s.len)) {
      st = LOOM_ERROR(INVALID_ARGUMENT, "%s: element %zu of operand 0 holds a NUL byte", ec->op, i);
      break;
    }
    loom_graph_tensor_set_i64(&out->t, i, regexec(&re, s.data ? s.data : "", 0, NULL, 0) == 0);
  }
  regfree(&re);
  return st;
}

/* ---- label_encode ----------------------------------------------------------------------------- */

/* label_encode(x, keys=[...], values=[...], default, dtype): ai.onnx.ml LabelEncoder from
 * strings to integers: values[i] where x equals keys[i] (the first such key), else `default`;
 * the result has x's shape and `dtype` (an integer dtype). */
static const loom_graph_attr_spec label_attrs[] = {{"keys", LOOM_GRAPH_ATTR_STRS, .required = true},
                                                   {"values", LOOM_GRAPH_ATTR_SYMS, .required = true},
                                                   {"default", LOOM_GRAPH_ATTR_INT, .dflt = -1},
                                                   {"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_I64},
                                                   {0}};

static loom_status infer_label(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(str_operand(ic, 0, false, &x));
  size_t nk;
  loom_graph_call_strs(ic->call, "keys", &nk);
  const loom_graph_attr *v = loom_graph_call_attr(ic->call, "values");
  if (v->n != nk) return loom_graph_icx_error(ic, "%zu keys but %zu values", nk, v->n);
  for (size_t i = 0; i < v->n; i++)
    if (!loom_sym_is_const(v->syms[i], &(int64_t){0})) return loom_graph_icx_error(ic, "value %zu is not a constant", i);
  loom_dtype dt = loom_graph_call_dtype(ic->call, "dtype");
  if (!loom_dtype_is_int(dt) || loom_dtype_is_lowp(dt))
    return loom_graph_icx_error(ic, "dtype %s is not an integer dtype", loom_dtype_name(dt));
  *out = loom_sinfo_tensor(ic->m, dt, x->ndim, x->dims, x->device);
  return LOOM_OK;
}

static loom_status eval_label(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  size_t nk;
  const char *const *keys = loom_graph_call_strs(ec->call, "keys", &nk);
  const loom_graph_attr *v = loom_graph_call_attr(ec->call, "values");
  int64_t dflt = loom_graph_call_int(ec->call, "default");
  LOOM_PROPAGATE(loom_graph_value_tensor(loom_graph_call_dtype(ec->call, "dtype"), x->ndim, x->shape, out));
  for (size_t i = 0; i < x->numel; i++) {
    loom_str s = loom_graph_tensor_get_str(x, i);
    int64_t r = dflt;
    for (size_t k = 0; k < nk; k++)
      if (loom_graph_str_equal(s, (loom_str){keys[k], strlen(keys[k])})) {
        loom_sym_is_const(v->syms[k], &r);
        break;
      }
    loom_graph_tensor_set_i64(&out->t, i, r);
  }
  return LOOM_OK;
}

/* ---- cast to and from strings (cast's record is op_elemwise.c's) ------------------------------ */

/* Whether the decimal text t reads back as v in dtype dt's precision. */
static bool reads_back(const char *t, double v, loom_dtype dt) {
  double r = strtod(t, NULL);
  switch (dt) {
  case LOOM_DTYPE_F32: return (float)r == (float)v;
  case LOOM_DTYPE_F16: return loom_f32_to_f16((float)r) == loom_f32_to_f16((float)v);
  case LOOM_DTYPE_BF16: return loom_f32_to_bf16((float)r) == loom_f32_to_bf16((float)v);
  default: return r == v;
  }
}

/* NumPy's str() of a float of dtype dt (ONNX's reference casts with astype(str)): the fewest
 * significant digits that read back as v in dt's precision, positional when 1e-4 <= |v| < M
 * ("1.0", "0.001", "123.5"), else scientific ("1e-05", "1.5e+20"); "nan", "inf", "-inf". M is
 * NumPy's per type: 1e16 for f64, 1e6 for f32, 1e3 for f16 (and bf16, which NumPy lacks). */
static void float_str(double v, loom_dtype dt, char *buf, size_t cap) {
  if (isnan(v)) return (void)snprintf(buf, cap, "nan");
  if (isinf(v)) return (void)snprintf(buf, cap, v < 0 ? "-inf" : "inf");
  if (v == 0) return (void)snprintf(buf, cap, signbit(v) ? "-0.0" : "0.0");
  char e[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    if (reads_back(e, v, dt)) break;
  }
  /* e is [-]d[.ddd]e[+-]XX: its digits without trailing zeros, and the exponent */
  char digits[24];
  size_t nd = 0;
  const char *q = e + (e[0] == '-');
  for (; *q && *q != 'e'; q++)
    if (*q != '.') digits[nd++] = *q;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = 0;
  int x = atoi(q + 1);
  char *o = buf;
  size_t left = cap;
#define PUT(...) do { int w_ = snprintf(o, left, __VA_ARGS__); if (w_ < 0 || (size_t)w_ >= left) return; o += w_, left -= (size_t)w_; } while (0)
  if (v < 0) PUT("-");
  double a = fabs(v);
  double max_positional = dt == LOOM_DTYPE_F64 ? 1e16 : dt == LOOM_DTYPE_F32 ? 1e6 : 1e3;
  if (a >= 1e-4 && a < max_positional) {
    if (x >= 0) {
      for (int i = 0; i <= x; i++) PUT("%c", i < (int)nd ? digits[i] : '0');
      PUT(".");
      if ((int)nd > x + 1) PUT("%s", digits + x + 1);
      else PUT("0");
    } else {
      PUT("0.");
      for (int i = 0; i < -x - 1; i++) PUT("0");
      PUT("%s", digits);
    }
  } else {
    PUT("%c", digits[0]);
    if (nd > 1) PUT(".%s", digits + 1);
    PUT("e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  }
#undef PUT
}

/* Parses element i of string tensor x as a number: an integer literal exactly, else strtod's
 * forms (decimal, scientific, "inf" / "infinity" / "nan" in any case, signed), blanks around it
 * allowed; false when the text is not a number. */
static bool parse_number(loom_str s, bool *is_int, int64_t *iv, double *dv) {
  char buf[128];
  if (s.len >= sizeof buf) return false;
  if (s.len) memcpy(buf, s.data, (size_t)s.len);
  buf[s.len] = 0;
  char *end;
  *dv = strtod(buf, &end); /* "-0" stays -0.0 for a float */
  while (end != buf && is_space(*end)) end++;
  if (end == buf || *end) return false;
  errno = 0;
  long long ll = strtoll(buf, &end, 10);
  while (end != buf && is_space(*end)) end++;
  *is_int = end != buf && !*end && !errno, *iv = ll;
  return true;
}

loom_status loom_graph_cast_string(loom_graph_ecx *ec, const loom_graph_tensor *x, loom_graph_tensor *y) {
  const loom_graph_expr *xe = ec->call->u.call.args[0];
  const char *xn = xe->kind == LOOM_GRAPH_EXPR_VAR ? xe->u.var.name : "operand 0";
  for (size_t i = 0; i < x->numel; i++) {
    if (x->dtype == LOOM_DTYPE_STRING && y->dtype == LOOM_DTYPE_STRING) {
      loom_str s = loom_graph_tensor_get_str(x, i);
      LOOM_PROPAGATE(loom_graph_tensor_set_str(y, i, s.data, (size_t)s.len));
    } else if (x->dtype == LOOM_DTYPE_STRING) {
      loom_str s = loom_graph_tensor_get_str(x, i);
      bool is_int;
      int64_t iv;
      double dv;
      if (!parse_number(s, &is_int, &iv, &dv))
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: element %zu of '%s', \"%.*s\", is not a number", ec->op, i, xn,
                          (int)(s.len > 40 ? 40 : s.len), s.data ? s.data : "");
      if (loom_dtype_is_int(y->dtype)) {
        if (!is_int) { /* "100.5" -> 100 (toward zero, as ONNX's Cast describes) */
          if (!(dv > -9.3e18 && dv < 9.3e18))
            return LOOM_ERROR(OUT_OF_RANGE, "%s: element %zu of '%s' (%g) is out of range for %s", ec->op, i, xn, dv,
                              loom_dtype_name(y->dtype));
          iv = (int64_t)dv;
        }
        loom_graph_tensor_set_i64(y, i, iv);
      } else loom_graph_tensor_set_f64(y, i, dv);
    } else {
      char buf[64];
      if (loom_dtype_is_float(x->dtype)) float_str(loom_graph_tensor_get_f64(x, i), x->dtype, buf, sizeof buf);
      else if (x->dtype == LOOM_DTYPE_BOOL) snprintf(buf, sizeof buf, "%s", loom_graph_tensor_get_i64(x, i) ? "True" : "False");
      else if (loom_dtype_is_signed(x->dtype)) snprintf(buf, sizeof buf, "%lld", (long long)loom_graph_tensor_get_i64(x, i));
      else snprintf(buf, sizeof buf, "%llu", (unsigned long long)loom_graph_tensor_get_i64(x, i));
      LOOM_PROPAGATE(loom_graph_tensor_set_str(y, i, buf, strlen(buf)));
    }
  }
  return LOOM_OK;
}

/* ---- the records -------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_string_concat = {no_attrs, infer_concat, eval_concat, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_string_split = {split_attrs, infer_split, eval_split, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_string_normalize = {norm_attrs, infer_norm, eval_norm, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_regex_full_match = {regex_attrs, infer_regex, eval_regex, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_label_encode = {label_attrs, infer_label, eval_label, NULL, NULL};
