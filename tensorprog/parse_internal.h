/* parse_internal.h — what tensorprog/parse.c (expressions, statements, programs) and
 * parse_lex.c (errors, the lexer, names in scope) share. */
#ifndef LOOM_TENSORPROG_PARSE_INTERNAL_H
#define LOOM_TENSORPROG_PARSE_INTERNAL_H

#include "base/diag.h"
#include "base/vec.h"
#include "tensorprog/tp_ir.h"

typedef enum tok_kind { T_EOF, T_NAME, T_INT, T_FLOAT, T_PUNCT } tok_kind;

typedef struct token {
  tok_kind kind;
  size_t start, len;  /* in src->text */
  char punct[3];      /* T_PUNCT: the operator text */
  int64_t ival;       /* T_INT */
  double fval;        /* T_FLOAT */
  bool has_suffix;    /* number with a dtype suffix */
  loom_dtype suffix;
} token;

typedef enum name_kind { N_SYM, N_LOOP, N_LET, N_BUF, N_SCALAR, N_EXPR } name_kind;

typedef struct name_entry {
  const char *name;
  size_t len;
  name_kind kind;
  const void *ptr; /* sym expr, let stmt, buffer or (N_EXPR) an expression copied at each use */
} name_entry;

typedef struct parser {
  loom_arena *arena;
  loom_sym_ctx *cx;
  const loom_source *src;
  size_t pos;             /* next unread byte */
  token tok;              /* current token */
  loom_diag_list *diags;
  bool failed;            /* an error was reported: unwind */
  LOOM_VEC(name_entry) names; /* scope stack (innermost last) */
  bool defining_shapes;   /* unknown names define symbolic vars (param shapes) */
  const char *func_name;
} parser;

/* A parsed operand: the expression and whether it is an untyped literal. */
typedef struct operand {
  loom_tp_expr *e;
  bool literal;
} operand;

/* parse_lex.c: errors (the first one wins; tpp_oom at the current token), the lexer (tpp_next
 * reads the next token into p->tok), token tests and expectations, and the scope stack. */
void tpp_error_at(parser *p, size_t offset, const char *fmt, ...) LOOM_PRINTF(3, 4);
void tpp_oom(parser *p);
void tpp_next(parser *p);
bool tpp_is_punct(const parser *p, const char *s);
bool tpp_is_name(const parser *p, const char *s);
const char *tpp_tok_text(const parser *p);
void tpp_describe_tok(const parser *p, char *buf, size_t cap);
bool tpp_expect_punct(parser *p, const char *s);
bool tpp_expect_name(parser *p, const char *what, const char **out, size_t *out_len);
bool tpp_parse_dtype(parser *p, loom_dtype *out);
const name_entry *tpp_lookup(const parser *p, const char *name, size_t len);
bool tpp_declare(parser *p, size_t at, const char *name, size_t len, name_kind kind, const void *ptr);
const name_entry *tpp_define_shape_sym(parser *p, const char *name, size_t len, size_t at);

#endif
