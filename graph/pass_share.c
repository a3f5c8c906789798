/* pass_share.c — programs identical up to constant extents share one program.
 *
 * Two tensor programs that differ only in integer constants (the two bias + residual
 * matmuls of a transformer block: K = 768 and K = 3072) are one kernel with those constants
 * as symbols: each position where the programs' constants differ becomes a symbol (one per
 * distinct tuple of values), bound at each call from the shapes of its arguments like any
 * other buffer dim. The compile then makes one kernel where it made several.
 *
 * Constant extents feed the schedule rules (tile sizes, row tiles, chunk widths), so a group
 * is shared only when scheduling the shared program and substituting each member's values
 * gives exactly the member's own schedule: the shared kernel runs the same loops per call.
 *
 * The comparison is on the printed programs (the printer's form is canonical and parses
 * back): token by token, where every differing token must be an integer literal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/strbuf.h"
#include "graph/pass_internal.h"
#include "graph/tp_bridge.h"
#include "tensorprog/tp.h"
#include "tensorprog/tp_ir.h"

typedef struct tok {
  size_t at, len; /* the token's bytes in its program's text */
  int param;      /* a parameter's name: its position (names compare by position); else -1 */
} tok;

/* One program: its text from the parameter list on (the name left out) and its tokens. */
typedef struct prog {
  loom_tp_func *tp;
  loom_strbuf text;
  LOOM_VEC(tok) toks;
  bool grouped; /* already in a group (or tried as a group's first) */
} prog;

typedef struct sharer {
  loom_graph_module *m;
  loom_graph_schedule_fn schedule; /* the target's schedule of one program */
  void *ud;
  prog *progs;
  size_t n;
  bool oom;
} sharer;

static bool is_ident(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Splits text into identifiers, numbers (a float's exponent sign included) and single
 * characters; spaces separate. */
static bool tokenize(const char *s, size_t n, prog *p) {
  size_t i = 0;
  while (i < n) {
    if (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') {
      i++;
      continue;
    }
    size_t j = i + 1;
    if (is_ident(s[i]))
      while (j < n && (is_ident(s[j]) || (is_digit(s[i]) && ((s[j] == '.' && j + 1 < n && is_digit(s[j + 1])) ||
                                                             ((s[j] == '-' || s[j] == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))))
        j++;
    if (!LOOM_VEC_PUSH(NULL, &p->toks, ((tok){i, j - i, -1}))) return false;
    i = j;
  }
  /* the parameters: `name :` at depth 1 of the header's parentheses */
  size_t np = 0, depth = 0, k = 0;
  for (; k < p->toks.len && s[p->toks.data[k].at] != '{'; k++) {
    char c = s[p->toks.data[k].at];
    depth += c == '(';
    depth -= c == ')';
    if (depth == 1 && is_ident(c) && k + 1 < p->toks.len && s[p->toks.data[k + 1].at] == ':') p->toks.data[k].param = (int)np++;
  }
  for (size_t a = 0; a < p->toks.len; a++) {
    if (p->toks.data[a].param >= 0) continue;
    for (size_t b = 0; b < k; b++)
      if (p->toks.data[b].param >= 0 && p->toks.data[b].len == p->toks.data[a].len &&
          !memcmp(s + p->toks.data[b].at, s + p->toks.data[a].at, p->toks.data[a].len))
        p->toks.data[a].param = p->toks.data[b].param;
  }
  return true;
}

static const char *tok_s(const prog *p, size_t k) { return loom_strbuf_cstr(&p->text) + p->toks.data[k].at; }
static size_t tok_n(const prog *p, size_t k) { return p->toks.data[k].len; }

static bool tok_eq(const prog *a, const prog *b, size_t k) {
  if (a->toks.data[k].param >= 0 || b->toks.data[k].param >= 0) return a->toks.data[k].param == b->toks.data[k].param;
  return tok_n(a, k) == tok_n(b, k) && !memcmp(tok_s(a, k), tok_s(b, k), tok_n(a, k));
}

static bool tok_int(const prog *p, size_t k) {
  for (size_t i = 0; i < tok_n(p, k); i++)
    if (!is_digit(tok_s(p, k)[i])) return false;
  return true;
}

/* The text after `prim @name`: from the parameter list on. */
static const char *after_name(const char *t) {
  const char *paren = strchr(t, '(');
  return paren ? paren : t;
}

/* Whether a and b are the same program but for integer literals. */
static bool alike(const prog *a, const prog *b) {
  if (a->toks.len != b->toks.len) return false;
  for (size_t k = 0; k < a->toks.len; k++)
    if (!tok_eq(a, b, k) && !(tok_int(a, k) && tok_int(b, k))) return false;
  return true;
}

/* Parses `prim @name` + body into the module (a program of its own). */
static loom_tp_func *parse_prog(sharer *sh, const char *name, const char *body) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s%s", name, body);
  loom_tp_func *out = NULL;
  if (!sb.oom) {
    loom_source src = {"<share>", loom_strbuf_cstr(&sb), strlen(loom_strbuf_cstr(&sb))};
    loom_diag_list dl;
    loom_diag_list_init(&dl, NULL);
    size_t pos = 0;
    loom_status s = loom_graph_tp_parse(sh->m, &src, &pos, &dl, &out);
    if (s) {
      loom_status_free(s);
      out = NULL;
    }
    loom_diag_list_destroy(&dl);
  } else {
    sh->oom = true;
  }
  loom_strbuf_free(&sb);
  return out;
}

/* The printed program after its name, into sb. */
static void print_body(const loom_tp_func *tp, loom_strbuf *sb) {
  loom_strbuf full;
  loom_strbuf_init(&full, NULL);
  loom_graph_tp_print(tp, &full);
  loom_strbuf_puts(sb, after_name(loom_strbuf_cstr(&full)));
  if (full.oom) sb->oom = true;
  loom_strbuf_free(&full);
}

/* A group: members g[0..ng), the differing token positions and the symbol each one becomes. */
typedef struct group {
  size_t *g, ng;
  LOOM_VEC(size_t) slot;   /* token positions that differ between members */
  LOOM_VEC(size_t) var_of; /* for each slot, its symbol's index */
  size_t nvars;
  LOOM_VEC(size_t) rep;    /* for each symbol, a slot that holds it (its values) */
} group;

static void var_name(char *buf, size_t cap, size_t v) { snprintf(buf, cap, "kshared%zu", v); }

/* p's text with each slot replaced by its symbol's name. */
static void splice(const group *gr, const prog *p, loom_strbuf *out) {
  const char *t = loom_strbuf_cstr(&p->text);
  size_t at = 0;
  for (size_t s = 0; s < gr->slot.len; s++) {
    const tok *k = &p->toks.data[gr->slot.data[s]];
    loom_strbuf_append(out, t + at, k->at - at);
    char nm[32];
    var_name(nm, sizeof nm, gr->var_of.data[s]);
    loom_strbuf_puts(out, nm);
    at = k->at + k->len;
  }
  loom_strbuf_puts(out, t + at);
}

/* Assigns a symbol to each differing position: positions with the same values in every
 * member share one. */
static bool find_slots(sharer *sh, group *gr) {
  const prog *p0 = &sh->progs[gr->g[0]];
  for (size_t k = 0; k < p0->toks.len; k++) {
    bool same = true;
    for (size_t i = 1; i < gr->ng && same; i++) same = tok_eq(p0, &sh->progs[gr->g[i]], k);
    if (same) continue;
    size_t v = gr->nvars;
    for (size_t r = 0; r < gr->rep.len && v == gr->nvars; r++) {
      bool eq = true;
      for (size_t i = 0; i < gr->ng && eq; i++) {
        const prog *q = &sh->progs[gr->g[i]];
        size_t a = gr->rep.data[r];
        eq = tok_n(q, a) == tok_n(q, k) && !memcmp(tok_s(q, a), tok_s(q, k), tok_n(q, k));
      }
      if (eq) v = r;
    }
    if (v == gr->nvars) {
      if (!LOOM_VEC_PUSH(NULL, &gr->rep, k)) return false;
      gr->nvars++;
    }
    if (!LOOM_VEC_PUSH(NULL, &gr->slot, k) || !LOOM_VEC_PUSH(NULL, &gr->var_of, v)) return false;
  }
  return true;
}

/* Whether each new symbol is a whole dim of a parameter buffer (the VM binds it from the call). */
static bool vars_bound(const group *gr, const loom_tp_func *tp) {
  for (size_t v = 0; v < gr->nvars; v++) {
    char nm[32];
    var_name(nm, sizeof nm, v);
    bool found = false;
    for (size_t i = 0; i < tp->nparams && !found; i++) {
      const loom_tp_param *p = &tp->params[i];
      if (!p->is_buffer) continue;
      for (int d = 0; d < p->buf->ndim && !found; d++)
        found = loom_sym_is_var(p->buf->dims[d]) && !strcmp(loom_sym_var_name(p->buf->dims[d]), nm);
    }
    if (!found) return false;
  }
  return true;
}

/* Whether no program's text names a symbol kshared<v> already. */
static bool names_free(const sharer *sh, const group *gr) {
  for (size_t i = 0; i < gr->ng; i++)
    if (strstr(loom_strbuf_cstr(&sh->progs[gr->g[i]].text), "kshared")) return false;
  return true;
}

/* Whether two printed programs are the same program (parameter names compared by position). */
static bool same_text(const char *a, const char *b) {
  prog pa = {0}, pb = {0};
  loom_strbuf_init(&pa.text, NULL);
  loom_strbuf_init(&pb.text, NULL);
  loom_strbuf_puts(&pa.text, a);
  loom_strbuf_puts(&pb.text, b);
  bool ok = !pa.text.oom && !pb.text.oom && tokenize(a, strlen(a), &pa) && tokenize(b, strlen(b), &pb) &&
            pa.toks.len == pb.toks.len;
  for (size_t k = 0; k < pa.toks.len && ok; k++) ok = tok_eq(&pa, &pb, k);
  loom_strbuf_free(&pa.text);
  loom_strbuf_free(&pb.text);
  LOOM_VEC_FREE(NULL, &pa.toks);
  LOOM_VEC_FREE(NULL, &pb.toks);
  return ok;
}

/* Whether expression e, computed as a value (not an index), mentions one of the vars. */
static bool value_uses(const loom_tp_expr *e, const loom_sym_expr *const *vars, size_t n) {
  if (!e) return false;
  switch (e->kind) {
  case LOOM_TP_EXPR_SYM:
    for (size_t v = 0; v < n; v++)
      if (loom_sym_uses_var(e->u.sym, vars[v])) return true;
    return false;
  case LOOM_TP_EXPR_OP:
    for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
      if (value_uses(e->u.op.args[i], vars, n)) return true;
    return false;
  case LOOM_TP_EXPR_CAST: return value_uses(e->u.cast_arg, vars, n);
  case LOOM_TP_EXPR_SELECT:
    return value_uses(e->u.select.cond, vars, n) || value_uses(e->u.select.then_e, vars, n) ||
           value_uses(e->u.select.else_e, vars, n);
  default: return false; /* constants, loads (their indices are addresses), let references */
  }
}

static bool dims_use(const loom_tp_buffer *b, const loom_sym_expr *const *vars, size_t n) {
  for (int d = 0; d < b->ndim; d++)
    for (size_t v = 0; v < n; v++)
      if (loom_sym_uses_var(b->dims[d], vars[v])) return true;
  return false;
}

/* Whether the vars stay out of what codegen specialises on a constant: a local buffer's size,
 * a vectorised or unrolled loop's trip count, a value the program computes, a branch's
 * condition. Serial and parallel trip counts, parameter dims and indices may use them. */
static bool extents_ok(const loom_tp_stmt *s, const loom_sym_expr *const *vars, size_t n) {
  if (!s) return true;
  switch (s->kind) {
  case LOOM_TP_STMT_SEQ:
    for (size_t i = 0; i < s->u.seq.n; i++)
      if (!extents_ok(s->u.seq.items[i], vars, n)) return false;
    return true;
  case LOOM_TP_STMT_FOR:
    if (s->u.loop.kind == LOOM_TP_LOOP_VECTORIZE || s->u.loop.kind == LOOM_TP_LOOP_UNROLL)
      for (size_t v = 0; v < n; v++)
        if (loom_sym_uses_var(s->u.loop.extent, vars[v])) return false;
    return extents_ok(s->u.loop.body, vars, n);
  case LOOM_TP_STMT_STORE: return !value_uses(s->u.store.value, vars, n);
  case LOOM_TP_STMT_LET: return !value_uses(s->u.let.value, vars, n);
  case LOOM_TP_STMT_IF:
    return !value_uses(s->u.if_.cond, vars, n) && extents_ok(s->u.if_.then_s, vars, n) &&
           extents_ok(s->u.if_.else_s, vars, n);
  case LOOM_TP_STMT_ALLOC: return !dims_use(s->u.alloc, vars, n);
  default: return true;
  }
}

/* extents_ok for the new symbols (kshared0..) of a scheduled shared program. */
static bool extents_only(const loom_tp_func *tp, size_t nvars) {
  const loom_sym_expr *vars[16];
  size_t n = 0;
  if (nvars > LOOM_ARRAY_LEN(vars)) return false;
  for (size_t j = 0; j < tp->nsyms; j++) {
    const char *nm = loom_sym_var_name(tp->syms[j]);
    if (!strncmp(nm, "kshared", 7)) vars[n++] = tp->syms[j];
  }
  return n == nvars && extents_ok(tp->body, vars, n);
}

/* Schedules a parsed copy of `body` and prints the result (after its name) into out. */
static bool scheduled(sharer *sh, const char *body, loom_strbuf *out, loom_tp_func **out_tp) {
  loom_tp_func *tp = parse_prog(sh, "share_check", body);
  if (out_tp) *out_tp = tp;
  if (!tp) return false;
  loom_status s = sh->schedule(sh->ud, sh->m, tp);
  if (s) {
    loom_status_free(s);
    return false;
  }
  print_body(tp, out);
  return !out->oom;
}

/* Whether scheduling the shared program and substituting member i's values gives member
 * i's own schedule, for every member. */
static bool same_schedules(sharer *sh, group *gr, const char *shared_body) {
  loom_strbuf gs;
  loom_strbuf_init(&gs, NULL);
  loom_tp_func *gtp = NULL;
  bool ok = scheduled(sh, shared_body, &gs, &gtp) && extents_only(gtp, gr->nvars);
  prog sp = {0};
  if (ok) {
    loom_strbuf_init(&sp.text, NULL);
    loom_strbuf_puts(&sp.text, loom_strbuf_cstr(&gs));
    ok = !sp.text.oom && tokenize(loom_strbuf_cstr(&sp.text), strlen(loom_strbuf_cstr(&sp.text)), &sp);
  }
  for (size_t i = 0; i < gr->ng && ok; i++) {
    const prog *p = &sh->progs[gr->g[i]];
    loom_strbuf mine, theirs, subst;
    loom_strbuf_init(&mine, NULL);
    loom_strbuf_init(&theirs, NULL);
    loom_strbuf_init(&subst, NULL);
    ok = scheduled(sh, loom_strbuf_cstr(&p->text), &mine, NULL);
    /* the shared schedule with member i's values in place of the symbols */
    const char *t = loom_strbuf_cstr(&sp.text);
    size_t at = 0;
    for (size_t k = 0; k < sp.toks.len && ok; k++) {
      const char *s = tok_s(&sp, k);
      if (tok_n(&sp, k) < 8 || strncmp(s, "kshared", 7)) continue;
      size_t v = (size_t)strtoul(s + 7, NULL, 10);
      if (v >= gr->nvars) continue;
      loom_strbuf_append(&subst, t + at, sp.toks.data[k].at - at);
      loom_strbuf_append(&subst, tok_s(p, gr->rep.data[v]), tok_n(p, gr->rep.data[v]));
      at = sp.toks.data[k].at + sp.toks.data[k].len;
    }
    loom_strbuf_puts(&subst, t + at);
    if (ok) {
      loom_tp_func *back = parse_prog(sh, "share_check", loom_strbuf_cstr(&subst));
      ok = back != NULL;
      if (ok) print_body(back, &theirs);
      ok = ok && !theirs.oom && !mine.oom && same_text(loom_strbuf_cstr(&mine), loom_strbuf_cstr(&theirs));
    }
    loom_strbuf_free(&mine);
    loom_strbuf_free(&theirs);
    loom_strbuf_free(&subst);
  }
  loom_strbuf_free(&gs);
  loom_strbuf_free(&sp.text);
  LOOM_VEC_FREE(NULL, &sp.toks);
  return ok;
}

/* Calls of the programs named in `from` now call `to`. */
static void retarget(loom_graph_seq *s, const loom_map *from, const char *to) {
  for (size_t bi = 0; bi < s->nblocks; bi++)
    for (size_t i = 0; i < s->blocks[bi]->n; i++) {
      loom_graph_expr *v = s->blocks[bi]->bindings[i]->value;
      if (v->kind == LOOM_GRAPH_EXPR_IF) {
        retarget(v->u.if_.then_seq, from, to);
        retarget(v->u.if_.else_seq, from, to);
      } else if (v->kind == LOOM_GRAPH_EXPR_LOOP) {
        retarget(v->u.loop.body, from, to);
      } else if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_TP &&
                 loom_map_contains(from, (uint64_t)(uintptr_t)v->u.call.target)) {
        v->u.call.target = to;
      }
    }
}

/* A name no program has: the first member's with `_k` (and a number if taken). */
static const char *shared_name(sharer *sh, const char *base) {
  char buf[512];
  for (int n = 0; n < 1000; n++) {
    if (n) snprintf(buf, sizeof buf, "%s_k%d", base, n);
    else snprintf(buf, sizeof buf, "%s_k", base);
    if (!loom_graph_module_find_tp(sh->m, buf)) return loom_graph_module_intern(sh->m, buf, strlen(buf));
  }
  return NULL;
}

/* Tries one group; on success the module has the shared program and the calls use it. */
static loom_status share_group(sharer *sh, group *gr, size_t *shared) {
  if (!find_slots(sh, gr)) return LOOM_OOM();
  if (!gr->nvars || !names_free(sh, gr)) return LOOM_OK;
  const prog *p0 = &sh->progs[gr->g[0]];
  loom_strbuf body;
  loom_strbuf_init(&body, NULL);
  splice(gr, p0, &body);
  loom_status st = body.oom ? LOOM_OOM() : LOOM_OK;
  const char *name = st ? NULL : shared_name(sh, loom_graph_tp_name(p0->tp));
  loom_tp_func *tp = name ? parse_prog(sh, name, loom_strbuf_cstr(&body)) : NULL;
  if (!st && tp && vars_bound(gr, tp) && same_schedules(sh, gr, loom_strbuf_cstr(&body))) {
    loom_map from;
    loom_map_init(&from, NULL);
    for (size_t i = 0; i < gr->ng && !st; i++) {
      const char *nm = loom_graph_tp_name(sh->progs[gr->g[i]].tp);
      const char *in = loom_graph_module_intern(sh->m, nm, strlen(nm));
      if (!in || !loom_map_put(&from, (uint64_t)(uintptr_t)in, 1)) st = LOOM_OOM();
    }
    if (!st) st = loom_graph_module_add_tp(sh->m, tp);
    for (size_t fi = 0; fi < sh->m->funcs.len && !st; fi++) retarget(sh->m->funcs.data[fi]->body, &from, name);
    if (!st) { /* the members go */
      size_t k = 0;
      for (size_t i = 0; i < sh->m->tps.len; i++) {
        const char *nm = loom_graph_tp_name(sh->m->tps.data[i]);
        const char *in = loom_graph_module_intern(sh->m, nm, strlen(nm));
        if (!in || !loom_map_contains(&from, (uint64_t)(uintptr_t)in)) sh->m->tps.data[k++] = sh->m->tps.data[i];
      }
      sh->m->tps.len = k;
      *shared += gr->ng;
    }
    loom_map_destroy(&from);
  }
  if (sh->oom && !st) st = LOOM_OOM();
  loom_strbuf_free(&body);
  return st;
}

loom_status loom_graph_share_programs(loom_graph_module *m, loom_graph_schedule_fn schedule, void *ud,
                                      size_t *out_shared) {
  sharer sh = {.m = m, .schedule = schedule, .ud = ud, .n = m->tps.len};
  size_t shared = 0;
  loom_status st = LOOM_OK;
  sh.progs = calloc(sh.n ? sh.n : 1, sizeof *sh.progs);
  if (!sh.progs) return LOOM_OOM();
  for (size_t i = 0; i < sh.n && !st; i++) {
    prog *p = &sh.progs[i];
    p->tp = m->tps.data[i];
    loom_strbuf full;
    loom_strbuf_init(&full, NULL);
    loom_strbuf_init(&p->text, NULL);
    loom_graph_tp_print(p->tp, &full);
    loom_strbuf_puts(&p->text, after_name(loom_strbuf_cstr(&full)));
    if (full.oom || p->text.oom || !tokenize(loom_strbuf_cstr(&p->text), strlen(loom_strbuf_cstr(&p->text)), p))
      st = LOOM_OOM();
    loom_strbuf_free(&full);
  }
  size_t *members = calloc(sh.n ? sh.n : 1, sizeof *members);
  if (!members && !st) st = LOOM_OOM();
  for (size_t i = 0; i < sh.n && !st; i++) {
    if (sh.progs[i].grouped) continue;
    group gr = {.g = members, .ng = 0};
    members[gr.ng++] = i;
    for (size_t j = i + 1; j < sh.n; j++)
      if (!sh.progs[j].grouped && alike(&sh.progs[i], &sh.progs[j])) members[gr.ng++] = j;
    for (size_t k = 0; k < gr.ng; k++) sh.progs[members[k]].grouped = true;
    if (gr.ng > 1) st = share_group(&sh, &gr, &shared);
    LOOM_VEC_FREE(NULL, &gr.slot);
    LOOM_VEC_FREE(NULL, &gr.var_of);
    LOOM_VEC_FREE(NULL, &gr.rep);
  }
  for (size_t i = 0; i < sh.n; i++) {
    loom_strbuf_free(&sh.progs[i].text);
    LOOM_VEC_FREE(NULL, &sh.progs[i].toks);
  }
  free(members);
  free(sh.progs);
  if (!st && out_shared) *out_shared = shared;
  return st;
}

