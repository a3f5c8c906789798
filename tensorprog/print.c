/* print.c — tensor programs as text (the form parse.c reads back).
 *
 * Literals print without a suffix when their dtype is the default (f32 for
 * floats, i64 for integers) and with one otherwise (`1.5f16`, `3i32`); binary
 * operators print infix with the fewest parentheses that keep the tree. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tensorprog/tp_ir.h"

/* Binding strength of an expression printed infix (higher binds tighter). */
static int prec_of(const loom_tp_expr *e) {
  if (e->kind == LOOM_TP_EXPR_SYM) {
    /* A symbolic index prints as its canonical text: a sum binds like '+', a product
     * like '*', a negative constant like unary minus. */
    int64_t v;
    switch (loom_sym_kind_of(e->u.sym)) {
      case LOOM_SYM_ADD: return 4;
      case LOOM_SYM_MUL: return 5;
      case LOOM_SYM_CONST: return loom_sym_is_const(e->u.sym, &v) && v < 0 ? 6 : 7;
      case LOOM_SYM_VAR: case LOOM_SYM_FLOORDIV: case LOOM_SYM_FLOORMOD: case LOOM_SYM_MIN:
      case LOOM_SYM_MAX: case LOOM_SYM_SELECT: return 7;
      default: return 3; /* comparisons and logic */
    }
  }
  if (e->kind != LOOM_TP_EXPR_OP) return 7;
  switch (e->u.op.op) {
    case LOOM_TP_OP_OR: return 1;
    case LOOM_TP_OP_AND: return 2;
    case LOOM_TP_OP_EQ: case LOOM_TP_OP_NE: case LOOM_TP_OP_LT:
    case LOOM_TP_OP_LE: case LOOM_TP_OP_GT: case LOOM_TP_OP_GE: return 3;
    case LOOM_TP_OP_ADD: case LOOM_TP_OP_SUB: return 4;
    case LOOM_TP_OP_MUL: case LOOM_TP_OP_DIV: case LOOM_TP_OP_MOD: return 5;
    case LOOM_TP_OP_NEG: case LOOM_TP_OP_NOT: return 6;
    default: return 7; /* call syntax */
  }
}

static bool is_infix(loom_tp_op op) {
  int p;
  switch (op) {
    case LOOM_TP_OP_NEG: case LOOM_TP_OP_NOT: return false;
    default: break;
  }
  loom_tp_expr probe = {.kind = LOOM_TP_EXPR_OP, .u.op.op = op};
  p = prec_of(&probe);
  return p < 6;
}

static void print_expr(const loom_tp_expr *e, loom_strbuf *sb);

static void print_child(const loom_tp_expr *child, int parent_prec, bool right, loom_strbuf *sb) {
  int p = prec_of(child);
  bool paren = p < parent_prec || (right && p == parent_prec && p < 6);
  if (paren) loom_strbuf_putc(sb, '(');
  print_expr(child, sb);
  if (paren) loom_strbuf_putc(sb, ')');
}

static void print_float(double v, loom_dtype t, loom_strbuf *sb) {
  if (isnan(v)) {
    loom_strbuf_puts(sb, "nan");
  } else if (isinf(v)) {
    loom_strbuf_puts(sb, v < 0 ? "-inf" : "inf");
  } else {
    char buf[64];
    /* %.9g round-trips every f32 (and f16/bf16); f64 needs %.17g. */
    snprintf(buf, sizeof buf, t == LOOM_DTYPE_F64 ? "%.17g" : "%.9g", v);
    loom_strbuf_puts(sb, buf);
    if (!strpbrk(buf, ".eE")) loom_strbuf_puts(sb, ".0");
  }
  if (t != LOOM_DTYPE_F32) loom_strbuf_puts(sb, loom_dtype_name(t));
}

static void print_const(const loom_tp_expr *e, loom_strbuf *sb) {
  loom_dtype t = e->dtype;
  if (t == LOOM_DTYPE_BOOL) {
    loom_strbuf_puts(sb, e->u.c.i ? "true" : "false");
  } else if (loom_dtype_is_float(t)) {
    print_float(e->u.c.f, t, sb);
  } else {
    if (t == LOOM_DTYPE_U64)
      loom_strbuf_printf(sb, "%" PRIu64, (uint64_t)e->u.c.i);
    else
      loom_strbuf_printf(sb, "%" PRId64, e->u.c.i);
    if (t != LOOM_DTYPE_I64) loom_strbuf_puts(sb, loom_dtype_name(t));
  }
}

static void print_indices(loom_tp_expr *const *idx, int n, loom_strbuf *sb) {
  loom_strbuf_putc(sb, '[');
  for (int i = 0; i < n; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    print_expr(idx[i], sb);
  }
  loom_strbuf_putc(sb, ']');
}

static void print_expr(const loom_tp_expr *e, loom_strbuf *sb) {
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST:
      print_const(e, sb);
      return;
    case LOOM_TP_EXPR_SYM: /* parenthesised by the caller according to prec_of */
      loom_sym_print(e->u.sym, sb);
      return;
    case LOOM_TP_EXPR_LOAD:
      loom_strbuf_puts(sb, e->u.load.buf->name);
      print_indices(e->u.load.idx, e->u.load.buf->ndim, sb);
      return;
    case LOOM_TP_EXPR_LETREF:
      loom_strbuf_puts(sb, e->u.let->u.let.name);
      return;
    case LOOM_TP_EXPR_CAST:
      loom_strbuf_printf(sb, "%s(", loom_dtype_name(e->dtype));
      print_expr(e->u.cast_arg, sb);
      loom_strbuf_putc(sb, ')');
      return;
    case LOOM_TP_EXPR_SELECT:
      loom_strbuf_puts(sb, "select(");
      print_expr(e->u.select.cond, sb);
      loom_strbuf_puts(sb, ", ");
      print_expr(e->u.select.then_e, sb);
      loom_strbuf_puts(sb, ", ");
      print_expr(e->u.select.else_e, sb);
      loom_strbuf_putc(sb, ')');
      return;
    case LOOM_TP_EXPR_OP:
      break;
  }
  loom_tp_op op = e->u.op.op;
  int p = prec_of(e);
  if (op == LOOM_TP_OP_NEG || op == LOOM_TP_OP_NOT) {
    loom_strbuf_putc(sb, op == LOOM_TP_OP_NEG ? '-' : '!');
    print_child(e->u.op.args[0], p, false, sb);
  } else if (is_infix(op)) {
    print_child(e->u.op.args[0], p, false, sb);
    loom_strbuf_printf(sb, " %s ", loom_tp_op_spelling(op));
    print_child(e->u.op.args[1], p, true, sb);
  } else {
    loom_strbuf_printf(sb, "%s(", loom_tp_op_spelling(op));
    for (int i = 0; i < loom_tp_op_arity(op); i++) {
      if (i) loom_strbuf_puts(sb, ", ");
      print_expr(e->u.op.args[i], sb);
    }
    loom_strbuf_putc(sb, ')');
  }
}

static void indent(loom_strbuf *sb, int depth) {
  for (int i = 0; i < depth; i++) loom_strbuf_puts(sb, "  ");
}

static void print_buffer_type(const loom_tp_buffer *b, loom_strbuf *sb) {
  static const char *const scope_names[] = {"Buffer", "Local", "Shared"};
  loom_strbuf_printf(sb, "%s[(", scope_names[b->scope]);
  for (int i = 0; i < b->ndim; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    loom_sym_print(b->dims[i], sb);
  }
  if (b->ndim == 1) loom_strbuf_putc(sb, ',');
  loom_strbuf_printf(sb, "), %s%s]", loom_dtype_name(b->dtype), b->uninit ? ", uninit" : "");
}

static void print_stmt(const loom_tp_stmt *s, int depth, loom_strbuf *sb);

static void print_block(const loom_tp_stmt *s, int depth, loom_strbuf *sb) {
  loom_strbuf_puts(sb, "{\n");
  print_stmt(s, depth + 1, sb);
  indent(sb, depth);
  loom_strbuf_putc(sb, '}');
}

static void print_stmt(const loom_tp_stmt *s, int depth, loom_strbuf *sb) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) print_stmt(s->u.seq.items[i], depth, sb);
      return;
    case LOOM_TP_STMT_FOR:
      indent(sb, depth);
      loom_strbuf_puts(sb, "for ");
      loom_strbuf_puts(sb, loom_sym_var_name(s->u.loop.var));
      loom_strbuf_puts(sb, " in 0..");
      {
        loom_sym_kind k = loom_sym_kind_of(s->u.loop.extent);
        bool atom = k == LOOM_SYM_CONST || k == LOOM_SYM_VAR || k == LOOM_SYM_FLOORDIV ||
                    k == LOOM_SYM_FLOORMOD || k == LOOM_SYM_MIN || k == LOOM_SYM_MAX;
        if (!atom) loom_strbuf_putc(sb, '(');
        loom_sym_print(s->u.loop.extent, sb);
        if (!atom) loom_strbuf_putc(sb, ')');
      }
      if (s->u.loop.kind != LOOM_TP_LOOP_SERIAL)
        loom_strbuf_printf(sb, " %s", loom_tp_loop_kind_name(s->u.loop.kind));
      if (s->u.loop.reduce) loom_strbuf_puts(sb, " reduce");
      loom_strbuf_putc(sb, ' ');
      print_block(s->u.loop.body, depth, sb);
      loom_strbuf_putc(sb, '\n');
      return;
    case LOOM_TP_STMT_STORE:
      indent(sb, depth);
      loom_strbuf_puts(sb, s->u.store.buf->name);
      print_indices(s->u.store.idx, s->u.store.buf->ndim, sb);
      loom_strbuf_puts(sb, " = ");
      print_expr(s->u.store.value, sb);
      loom_strbuf_putc(sb, '\n');
      return;
    case LOOM_TP_STMT_LET:
      indent(sb, depth);
      loom_strbuf_printf(sb, "let %s: %s = ", s->u.let.name, loom_dtype_name(s->u.let.value->dtype));
      print_expr(s->u.let.value, sb);
      loom_strbuf_putc(sb, '\n');
      return;
    case LOOM_TP_STMT_IF:
      indent(sb, depth);
      loom_strbuf_puts(sb, "if ");
      print_expr(s->u.if_.cond, sb);
      loom_strbuf_putc(sb, ' ');
      print_block(s->u.if_.then_s, depth, sb);
      if (s->u.if_.else_s) {
        loom_strbuf_puts(sb, " else ");
        print_block(s->u.if_.else_s, depth, sb);
      }
      loom_strbuf_putc(sb, '\n');
      return;
    case LOOM_TP_STMT_ALLOC:
      indent(sb, depth);
      loom_strbuf_printf(sb, "alloc %s: ", s->u.alloc->name);
      print_buffer_type(s->u.alloc, sb);
      loom_strbuf_putc(sb, '\n');
      return;
    case LOOM_TP_STMT_BARRIER:
      indent(sb, depth);
      loom_strbuf_puts(sb, "barrier\n");
      return;
    case LOOM_TP_STMT_PREFETCH:
      indent(sb, depth);
      loom_strbuf_printf(sb, "prefetch%s %s", s->u.prefetch.l2 ? "_l2" : "", s->u.prefetch.buf->name);
      print_indices(s->u.prefetch.idx, s->u.prefetch.buf->ndim, sb);
      loom_strbuf_putc(sb, '\n');
      return;
  }
}

void loom_tp_print_func(const loom_tp_func *f, loom_strbuf *sb) {
  loom_strbuf_printf(sb, "prim @%s(", f->name);
  for (size_t i = 0; i < f->nparams; i++) {
    const loom_tp_param *p = &f->params[i];
    if (i) loom_strbuf_puts(sb, ", ");
    if (p->is_buffer) {
      loom_strbuf_printf(sb, "%s: ", p->buf->name);
      print_buffer_type(p->buf, sb);
    } else {
      loom_strbuf_printf(sb, "%s: i64", p->scalar.name);
    }
  }
  loom_strbuf_puts(sb, ") ");
  print_block(f->body, 0, sb);
  loom_strbuf_putc(sb, '\n');
}
