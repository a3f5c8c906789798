/* parse_lex.c — the tensor-program parser's errors, lexer and names in scope (parse.c has the
 * grammar). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensorprog/parse_internal.h"

void tpp_error_at(parser *p, size_t offset, const char *fmt, ...) {
  if (p->failed) return;
  p->failed = true;
  va_list ap;
  va_start(ap, fmt);
  loom_diag_addv(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, offset}, fmt, ap);
  va_end(ap);
}

void tpp_oom(parser *p) { tpp_error_at(p, p->tok.start, "out of memory"); }

/* ---- lexer ---------------------------------------------------------------- */

static bool ident_start(int c) { return isalpha(c) || c == '_'; }

/* Splits a dtype suffix off the end of a numeric token like "1.5f16" or "3i32". */
static bool split_suffix(const char *s, size_t len, size_t *num_len, loom_dtype *t) {
  for (size_t i = 0; i < len; i++) {
    if (s[i] == 'f' || s[i] == 'i' || s[i] == 'u' || s[i] == 'b') {
      if (s[i] == 'b' && !(i + 1 < len && s[i + 1] == 'f') && strncmp(s + i, "bool", 4) != 0) continue;
      if (loom_dtype_parse(s + i, len - i, t)) {
        *num_len = i;
        return true;
      }
    }
  }
  return false;
}

void tpp_next(parser *p) {
  const char *t = p->src->text;
  size_t n = p->src->len;
  for (;;) {
    while (p->pos < n && isspace((unsigned char)t[p->pos])) p->pos++;
    if (p->pos < n && t[p->pos] == '#') {
      while (p->pos < n && t[p->pos] != '\n') p->pos++;
      continue;
    }
    break;
  }
  token *k = &p->tok;
  memset(k, 0, sizeof *k);
  k->start = p->pos;
  if (p->pos >= n) {
    k->kind = T_EOF;
    return;
  }
  unsigned char c = (unsigned char)t[p->pos];
  if (ident_start(c)) {
    size_t e = p->pos;
    while (e < n && (isalnum((unsigned char)t[e]) || t[e] == '_')) e++;
    k->kind = T_NAME;
    k->len = e - p->pos;
    p->pos = e;
    return;
  }
  if (isdigit(c)) {
    size_t e = p->pos;
    bool is_float = false;
    while (e < n && isdigit((unsigned char)t[e])) e++;
    if (e + 1 < n && t[e] == '.' && isdigit((unsigned char)t[e + 1])) {
      is_float = true;
      e++;
      while (e < n && isdigit((unsigned char)t[e])) e++;
    }
    if (e < n && (t[e] == 'e' || t[e] == 'E')) {
      size_t f = e + 1;
      if (f < n && (t[f] == '+' || t[f] == '-')) f++;
      if (f < n && isdigit((unsigned char)t[f])) {
        is_float = true;
        e = f;
        while (e < n && isdigit((unsigned char)t[e])) e++;
      }
    }
    size_t num_end = e;
    while (e < n && (isalnum((unsigned char)t[e]))) e++; /* suffix */
    k->len = e - p->pos;
    if (e > num_end) {
      size_t dummy;
      if (!loom_dtype_parse(t + num_end, e - num_end, &k->suffix) ||
          !split_suffix(t + p->pos, k->len, &dummy, &k->suffix)) {
        tpp_error_at(p, num_end, "unknown dtype suffix '%.*s' on a number", (int)(e - num_end), t + num_end);
        k->kind = T_EOF;
        return;
      }
      k->has_suffix = true;
    }
    char buf[128];
    size_t nl = num_end - p->pos < sizeof buf - 1 ? num_end - p->pos : sizeof buf - 1;
    memcpy(buf, t + p->pos, nl);
    buf[nl] = '\0';
    errno = 0;
    if (is_float || (k->has_suffix && loom_dtype_is_float(k->suffix))) {
      k->kind = T_FLOAT;
      k->fval = strtod(buf, NULL);
    } else {
      k->kind = T_INT;
      unsigned long long u = strtoull(buf, NULL, 10);
      if (errno == ERANGE || (u > (unsigned long long)INT64_MAX && !(k->has_suffix && k->suffix == LOOM_DTYPE_U64))) {
        tpp_error_at(p, p->pos, "integer literal '%s' does not fit in 64 bits", buf);
        k->kind = T_EOF;
        return;
      }
      k->ival = (int64_t)u;
    }
    p->pos = e;
    return;
  }
  static const char *const two[] = {"==", "!=", "<=", ">=", "&&", "||", "..", "//"};
  for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
    if (p->pos + 1 < n && t[p->pos] == two[i][0] && t[p->pos + 1] == two[i][1]) {
      k->kind = T_PUNCT;
      memcpy(k->punct, two[i], 2);
      k->len = 2;
      p->pos += 2;
      return;
    }
  }
  if (strchr("()[]{},:=<>+-*/%!@", c)) {
    k->kind = T_PUNCT;
    k->punct[0] = (char)c;
    k->len = 1;
    p->pos++;
    return;
  }
  tpp_error_at(p, p->pos, "unexpected character '%c'", c);
  k->kind = T_EOF;
}

bool tpp_is_punct(const parser *p, const char *s) {
  return p->tok.kind == T_PUNCT && strcmp(p->tok.punct, s) == 0;
}

bool tpp_is_name(const parser *p, const char *s) {
  return p->tok.kind == T_NAME && p->tok.len == strlen(s) &&
         memcmp(p->src->text + p->tok.start, s, p->tok.len) == 0;
}

const char *tpp_tok_text(const parser *p) { return p->src->text + p->tok.start; }

void tpp_describe_tok(const parser *p, char *buf, size_t cap) {
  if (p->tok.kind == T_EOF)
    snprintf(buf, cap, "end of input");
  else
    snprintf(buf, cap, "'%.*s'", (int)(p->tok.len > 40 ? 40 : p->tok.len), tpp_tok_text(p));
}

bool tpp_expect_punct(parser *p, const char *s) {
  if (p->failed) return false;
  if (!tpp_is_punct(p, s)) {
    char got[64];
    tpp_describe_tok(p, got, sizeof got);
    tpp_error_at(p, p->tok.start, "expected '%s', found %s", s, got);
    return false;
  }
  tpp_next(p);
  return true;
}

bool tpp_expect_name(parser *p, const char *what, const char **out, size_t *out_len) {
  if (p->failed) return false;
  if (p->tok.kind != T_NAME) {
    char got[64];
    tpp_describe_tok(p, got, sizeof got);
    tpp_error_at(p, p->tok.start, "expected %s, found %s", what, got);
    return false;
  }
  *out = tpp_tok_text(p);
  *out_len = p->tok.len;
  tpp_next(p);
  return true;
}

bool tpp_parse_dtype(parser *p, loom_dtype *out) {
  if (p->failed) return false;
  if (p->tok.kind != T_NAME || !loom_dtype_parse(tpp_tok_text(p), p->tok.len, out)) {
    char got[64];
    tpp_describe_tok(p, got, sizeof got);
    tpp_error_at(p, p->tok.start, "expected a dtype (f32, i64, ...), found %s", got);
    return false;
  }
  tpp_next(p);
  return true;
}

/* ---- names ---------------------------------------------------------------- */

const name_entry *tpp_lookup(const parser *p, const char *name, size_t len) {
  for (size_t i = p->names.len; i-- > 0;) {
    const name_entry *e = &p->names.data[i];
    if (e->len == len && memcmp(e->name, name, len) == 0) return e;
  }
  return NULL;
}

bool tpp_declare(parser *p, size_t at, const char *name, size_t len, name_kind kind, const void *ptr) {
  if (tpp_lookup(p, name, len)) {
    tpp_error_at(p, at, "'%.*s' is already defined in program @%s (names may not shadow)", (int)len, name,
             p->func_name);
    return false;
  }
  name_entry e = {name, len, kind, ptr};
  if (!LOOM_VEC_PUSH(NULL, &p->names, e)) {
    tpp_oom(p);
    return false;
  }
  return true;
}

/* In parameter shapes, an unknown name defines a symbolic variable (its first occurrence). */
const name_entry *tpp_define_shape_sym(parser *p, const char *name, size_t len, size_t at) {
  char nbuf[128];
  snprintf(nbuf, sizeof nbuf, "%.*s", (int)len, name);
  const loom_sym_expr *v = loom_sym_var_new(p->cx, nbuf, LOOM_SYM_VAR_SHAPE);
  const char *nm = loom_arena_strndup(p->arena, name, len);
  if (!v || !nm) {
    tpp_oom(p);
    return NULL;
  }
  if (!tpp_declare(p, at, nm, len, N_SYM, v)) return NULL;
  return &LOOM_VEC_LAST(&p->names);
}

