/* print.c — the text printer. Every binding is printed with its struct info; guards the
 * inference recorded follow as comments (the parser re-derives them). The grammar is in
 * docs/ir.md; parse(print(m)) prints the same text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/tp_bridge.h"

static void indent(loom_strbuf *sb, int n) {
  for (int i = 0; i < n; i++) loom_strbuf_puts(sb, "  ");
}

/* A float that reads back as the same double, always with a '.' or exponent. */
static void print_double(double v, loom_strbuf *sb) {
  if (isnan(v)) {
    loom_strbuf_puts(sb, "nan");
    return;
  }
  if (isinf(v)) {
    loom_strbuf_puts(sb, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  /* Shortest form that round-trips. */
  for (int p = 1; p <= 17; p++) {
    char t[64];
    snprintf(t, sizeof t, "%.*g", p, v);
    if (strtod(t, NULL) == v) {
      memcpy(buf, t, sizeof t);
      break;
    }
  }
  loom_strbuf_puts(sb, buf);
  if (!strpbrk(buf, ".e")) loom_strbuf_puts(sb, ".0");
}

static void print_syms(size_t n, const loom_sym_expr *const *d, loom_strbuf *sb) {
  for (size_t i = 0; i < n; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    loom_sym_print(d[i], sb);
  }
}

/* "text" with C escapes for '"', '\\' and bytes outside printable ASCII (\xHH), so any
 * string parses back (parse_expr.c's attr_value). */
static void print_quoted(const char *s, loom_strbuf *sb) {
  loom_strbuf_putc(sb, '"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') loom_strbuf_printf(sb, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f) loom_strbuf_printf(sb, "\\x%02x", *p);
    else loom_strbuf_putc(sb, (char)*p);
  }
  loom_strbuf_putc(sb, '"');
}

static void print_attr(const loom_graph_attr *a, loom_strbuf *sb) {
  loom_strbuf_printf(sb, "%s=", a->name);
  switch (a->kind) {
  case LOOM_GRAPH_ATTR_INT: loom_strbuf_printf(sb, "%lld", (long long)a->i); break;
  case LOOM_GRAPH_ATTR_FLOAT: print_double(a->f, sb); break;
  case LOOM_GRAPH_ATTR_BOOL: loom_strbuf_puts(sb, a->i ? "true" : "false"); break;
  case LOOM_GRAPH_ATTR_STR: loom_strbuf_printf(sb, "\"%s\"", a->s); break;
  case LOOM_GRAPH_ATTR_DTYPE: loom_strbuf_puts(sb, loom_dtype_name(a->dtype)); break;
  case LOOM_GRAPH_ATTR_SYMS:
    loom_strbuf_putc(sb, '[');
    print_syms(a->n, a->syms, sb);
    loom_strbuf_putc(sb, ']');
    break;
  case LOOM_GRAPH_ATTR_STRS:
    loom_strbuf_putc(sb, '[');
    for (size_t i = 0; i < a->n; i++) {
      if (i) loom_strbuf_puts(sb, ", ");
      print_quoted(a->strs[i], sb);
    }
    loom_strbuf_putc(sb, ']');
    break;
  }
}

static void print_const_data(const loom_graph_expr *e, loom_strbuf *sb) {
  loom_graph_tensor t = {.dtype = e->sinfo->dtype, .data = e->u.cnst.data};
  size_t n = e->u.cnst.nbytes / loom_dtype_size(t.dtype);
  loom_strbuf_putc(sb, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    if (t.dtype == LOOM_DTYPE_STRING) { /* for reading: the parser does not take string constants back yet */
      print_quoted(loom_graph_tensor_get_str(&t, i).data ? loom_graph_tensor_get_str(&t, i).data : "", sb);
      continue;
    }
    if (loom_dtype_is_float(t.dtype)) print_double(loom_graph_tensor_get_f64(&t, i), sb);
    else loom_strbuf_printf(sb, "%lld", (long long)loom_graph_tensor_get_i64(&t, i));
  }
  loom_strbuf_putc(sb, ']');
}

static void print_expr(const loom_graph_expr *e, int depth, loom_strbuf *sb);
static void print_seq(const loom_graph_seq *s, int depth, loom_strbuf *sb);

static void print_args(const loom_graph_expr *e, loom_strbuf *sb) {
  for (size_t i = 0; i < e->u.call.nargs; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    print_expr(e->u.call.args[i], 0, sb);
  }
}

static void print_expr(const loom_graph_expr *e, int depth, loom_strbuf *sb) {
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR:
    loom_strbuf_puts(sb, e->u.var.name);
    return;
  case LOOM_GRAPH_EXPR_CONST:
    if (e->u.cnst.name) {
      loom_strbuf_printf(sb, "@%s", e->u.cnst.name);
    } else {
      /* Inline constants are 0-d: const(value, dtype). */
      loom_graph_tensor t = {.dtype = e->sinfo->dtype, .data = e->u.cnst.data};
      loom_strbuf_puts(sb, "const(");
      if (loom_dtype_is_float(t.dtype)) print_double(loom_graph_tensor_get_f64(&t, 0), sb);
      else loom_strbuf_printf(sb, "%lld", (long long)loom_graph_tensor_get_i64(&t, 0));
      loom_strbuf_printf(sb, ", %s)", loom_dtype_name(t.dtype));
    }
    return;
  case LOOM_GRAPH_EXPR_SHAPE:
    loom_strbuf_puts(sb, "shape(");
    print_syms(e->u.shape.n, e->u.shape.dims, sb);
    loom_strbuf_putc(sb, ')');
    return;
  case LOOM_GRAPH_EXPR_SYM:
    loom_strbuf_puts(sb, "sym(");
    loom_sym_print(e->u.sym, sb);
    loom_strbuf_putc(sb, ')');
    return;
  case LOOM_GRAPH_EXPR_TUPLE:
    loom_strbuf_putc(sb, '(');
    for (size_t i = 0; i < e->u.tuple.n; i++) {
      if (i) loom_strbuf_puts(sb, ", ");
      print_expr(e->u.tuple.items[i], depth, sb);
    }
    if (e->u.tuple.n == 1) loom_strbuf_putc(sb, ',');
    loom_strbuf_putc(sb, ')');
    return;
  case LOOM_GRAPH_EXPR_TUPLE_GET:
    print_expr(e->u.get.tuple, depth, sb);
    loom_strbuf_printf(sb, ".%zu", e->u.get.index);
    return;
  case LOOM_GRAPH_EXPR_CALL:
    switch (e->u.call.callee) {
    case LOOM_GRAPH_CALLEE_OP:
      loom_strbuf_printf(sb, "%s(", loom_graph_op_name(e->u.call.op));
      print_args(e, sb);
      for (size_t i = 0; i < e->u.call.nattrs; i++) {
        if (i || e->u.call.nargs) loom_strbuf_puts(sb, ", ");
        print_attr(&e->u.call.attrs[i], sb);
      }
      loom_strbuf_putc(sb, ')');
      return;
    case LOOM_GRAPH_CALLEE_FUNC:
      loom_strbuf_printf(sb, "@%s(", e->u.call.target);
      print_args(e, sb);
      loom_strbuf_putc(sb, ')');
      return;
    case LOOM_GRAPH_CALLEE_TP:
    case LOOM_GRAPH_CALLEE_EXTERN:
      loom_strbuf_printf(sb, "%s(@%s, (", e->u.call.callee == LOOM_GRAPH_CALLEE_TP ? "call_tp" : "call_extern",
                         e->u.call.target);
      print_args(e, sb);
      if (e->u.call.nargs == 1) loom_strbuf_putc(sb, ',');
      loom_strbuf_puts(sb, "), ");
      loom_sinfo_print(e->u.call.out_sinfo, sb);
      loom_strbuf_putc(sb, ')');
      return;
    }
    return;
  case LOOM_GRAPH_EXPR_IF:
    loom_strbuf_puts(sb, "if (");
    print_expr(e->u.if_.cond, depth, sb);
    loom_strbuf_puts(sb, ") {\n");
    print_seq(e->u.if_.then_seq, depth + 1, sb);
    indent(sb, depth);
    loom_strbuf_puts(sb, "} else {\n");
    print_seq(e->u.if_.else_seq, depth + 1, sb);
    indent(sb, depth);
    loom_strbuf_putc(sb, '}');
    return;
  case LOOM_GRAPH_EXPR_LOOP:
    loom_strbuf_printf(sb, "loop (%s", loom_sym_var_name(e->u.loop.iter));
    if (e->u.loop.count) {
      loom_strbuf_puts(sb, " < ");
      print_expr(e->u.loop.count, depth, sb);
    }
    if (e->u.loop.cond) {
      loom_strbuf_puts(sb, ", while ");
      print_expr(e->u.loop.cond, depth, sb);
    }
    loom_strbuf_puts(sb, ") (");
    for (size_t i = 0; i < e->u.loop.ncarry; i++) {
      loom_strbuf_printf(sb, "%s%s: ", i ? ", " : "", e->u.loop.params[i]->u.var.name);
      loom_sinfo_print(e->u.loop.params[i]->sinfo, sb);
      loom_strbuf_puts(sb, " = ");
      print_expr(e->u.loop.inits[i], depth, sb);
    }
    loom_strbuf_puts(sb, ") {\n");
    print_seq(e->u.loop.body, depth + 1, sb);
    indent(sb, depth);
    loom_strbuf_putc(sb, '}');
    return;
  }
}

static void print_binding(const loom_graph_binding *b, int depth, loom_strbuf *sb) {
  indent(sb, depth);
  loom_strbuf_printf(sb, "%s: ", b->var->u.var.name);
  loom_sinfo_print(b->var->sinfo, sb);
  loom_strbuf_puts(sb, " = ");
  if (b->kind == LOOM_GRAPH_BIND_MATCH_CAST) {
    loom_strbuf_puts(sb, "match_cast(");
    print_expr(b->value, depth, sb);
    loom_strbuf_puts(sb, ", ");
    loom_sinfo_print(b->var->sinfo, sb);
    loom_strbuf_putc(sb, ')');
  } else {
    print_expr(b->value, depth, sb);
  }
  for (size_t i = 0; i < b->nguards; i++) {
    loom_strbuf_puts(sb, i ? "; " : "  // guard: ");
    loom_sym_print(b->guards[i], sb);
  }
  loom_strbuf_putc(sb, '\n');
}

static void print_seq(const loom_graph_seq *s, int depth, loom_strbuf *sb) {
  for (size_t i = 0; i < s->nblocks; i++) {
    const loom_graph_block *blk = s->blocks[i];
    if (blk->dataflow) {
      indent(sb, depth);
      loom_strbuf_puts(sb, "dataflow {\n");
    }
    for (size_t j = 0; j < blk->n; j++) print_binding(blk->bindings[j], depth + blk->dataflow, sb);
    if (blk->dataflow) {
      indent(sb, depth + 1);
      loom_strbuf_puts(sb, "output");
      for (size_t j = 0; j < blk->noutputs; j++)
        loom_strbuf_printf(sb, "%s%s", j ? ", " : " ", blk->outputs[j]->u.var.name);
      loom_strbuf_putc(sb, '\n');
      indent(sb, depth);
      loom_strbuf_puts(sb, "}\n");
    }
  }
  indent(sb, depth);
  loom_strbuf_puts(sb, "return ");
  print_expr(s->result, depth, sb);
  loom_strbuf_putc(sb, '\n');
}

void loom_graph_print_func(const loom_graph_module *m, const loom_graph_func *f, loom_strbuf *sb) {
  (void)m;
  loom_strbuf_printf(sb, "fn @%s(", f->name);
  for (size_t i = 0; i < f->nparams; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    loom_strbuf_printf(sb, "%s: ", f->params[i]->u.var.name);
    loom_sinfo_print(f->params[i]->sinfo, sb);
  }
  loom_strbuf_puts(sb, ") -> ");
  loom_sinfo_print(f->ret, sb);
  loom_strbuf_puts(sb, " {\n");
  print_seq(f->body, 1, sb);
  loom_strbuf_puts(sb, "}\n");
}

void loom_graph_print_module(const loom_graph_module *m, loom_strbuf *sb) {
  bool first = true;
  for (size_t i = 0; i < m->externs.len; i++) {
    const loom_graph_extern *e = &m->externs.data[i];
    if (e->param_names) {
      loom_strbuf_printf(sb, "extern @%s(", e->name);
      for (size_t k = 0; k < e->sig->nfields; k++) {
        loom_strbuf_printf(sb, "%s%s: ", k ? ", " : "", e->param_names[k]);
        loom_sinfo_print(e->sig->fields[k], sb);
      }
      loom_strbuf_puts(sb, ") -> ");
      loom_sinfo_print(e->sig->ret, sb);
    } else {
      loom_strbuf_printf(sb, "extern @%s: ", e->name);
      loom_sinfo_print(e->sig, sb);
    }
    loom_libcall_decl_print(e->decl, sb);
    loom_strbuf_putc(sb, '\n');
    first = false;
  }
  for (size_t i = 0; i < m->consts.len; i++) {
    const loom_graph_const *c = &m->consts.data[i];
    loom_strbuf_printf(sb, "const @%s: ", c->name);
    loom_sinfo_print(c->expr->sinfo, sb);
    loom_strbuf_puts(sb, " = ");
    if (c->file) loom_strbuf_printf(sb, "weights(\"%s\", \"%s\")", c->file, c->tensor);
    else print_const_data(c->expr, sb);
    loom_strbuf_putc(sb, '\n');
    first = false;
  }
  for (size_t i = 0; i < m->funcs.len; i++) {
    if (!first) loom_strbuf_putc(sb, '\n');
    loom_graph_print_func(m, m->funcs.data[i], sb);
    first = false;
  }
  for (size_t i = 0; i < m->tps.len; i++) {
    if (!first) loom_strbuf_putc(sb, '\n');
    loom_graph_tp_print(m->tps.data[i], sb);
    first = false;
  }
}

bool loom_graph_module_equal(const loom_graph_module *a, const loom_graph_module *b) {
  loom_strbuf sa, sb;
  loom_strbuf_init(&sa, NULL);
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(a, &sa);
  loom_graph_print_module(b, &sb);
  bool eq = !sa.oom && !sb.oom && sa.len == sb.len && !memcmp(loom_strbuf_cstr(&sa), loom_strbuf_cstr(&sb), sa.len);
  loom_strbuf_free(&sa);
  loom_strbuf_free(&sb);
  return eq;
}
