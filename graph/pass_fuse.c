/* pass_fuse.c — graph-level fusion of tensor-program calls (docs/passes.md, "fuse").
 *
 * Runs after legalize. Over each dataflow block, `call_tp` bindings are grouped by the
 * access pattern loom_tp_classify reads off each program, and each group of two or more
 * calls becomes ONE call of ONE merged program (loom_tp_merge + loom_tp_inline_locals):
 *
 *   - groups grow backwards from a root (the last binding not yet in a group): a
 *     producer joins when it is an elementwise, broadcast or injective program, every
 *     use of its var is inside the group (otherwise it stays materialised), the members
 *     reading it are not out_fusable (matmul/conv: the schedule rules tile those, and a
 *     recomputed operand would be recomputed n times), and its struct info defines no
 *     symbol (a symbol's definition must not disappear);
 *   - the group reads the producer in one pass (every load in one innermost loop: loads
 *     in one statement are one value to LLVM), so it is not recomputed per pass; one that
 *     calls math intrinsics or divides (exp, tanh, erf, ...) must moreover be read once
 *     per element (one load, indexed by distinct loop variables covering the whole nest).
 *     softmax (three loops) and layer_norm (three) therefore take no producer: measured, the
 *     mask recomputed in softmax's serial reductions was slower than the separate call;
 *   - every trial group is merged: it is kept only when every intermediate disappears
 *     (inlined into its readers); an intermediate that would stay a Local buffer of full
 *     size keeps the group from growing by that producer.
 *
 * The fused call stands where the root stood, so nothing moves above a binding it was
 * below: every symbol the merged program takes as an i64 parameter (the group's shape
 * symbols, passed as `sym(...)` arguments before the tensor inputs) is checked to be
 * defined before the root (a match_cast above the group, a parameter), never after. The
 * root's guards and its members' guards stay on the fused binding. Merged programs are
 * named `fused_<root program>_<hash of its text>`, so equal groups share one program;
 * programs no call uses any more after fusion are removed from the module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/strbuf.h"
#include "graph/pass_fuse_internal.h"
#include "tensorprog/tp.h"
#include "tensorprog/tp_fuse.h"
#include "tensorprog/tp_ir.h"
#include "tensorprog/tp_pattern.h"


/* ---- the function before fusion: uses, positions, symbol definitions ---------------- */

static void count_leaf(fuser *fz, const loom_graph_expr *e) {
  if (!e || e->kind != LOOM_GRAPH_EXPR_VAR) return;
  uint64_t n = 0;
  loom_map_get(&fz->uses, e->u.var.id, &n);
  if (!loom_map_put(&fz->uses, e->u.var.id, n + 1)) fz->oom = true;
}

typedef struct def_walk {
  fuser *fz;
  size_t pos;
} def_walk;

static void define_cb(void *ud, const loom_sym_expr *var) {
  def_walk *w = ud;
  for (size_t i = 0; i < w->fz->defs.len; i++)
    if (w->fz->defs.data[i].var == var) return;
  sym_def d = {var, w->pos};
  if (!LOOM_VEC_PUSH(w->fz->m->alloc, &w->fz->defs, d)) w->fz->oom = true;
}

static void define_sinfo(def_walk *w, const loom_sinfo *si) {
  if (!si) return;
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], define_cb, w);
  if (si->value) loom_sym_for_each_var(si->value, define_cb, w);
  for (size_t i = 0; i < si->nfields; i++) define_sinfo(w, si->fields[i]);
  define_sinfo(w, si->ret);
}

static void prepass_seq(fuser *fz, const loom_graph_seq *s) {
  for (size_t bi = 0; bi < s->nblocks; bi++) {
    const loom_graph_block *blk = s->blocks[bi];
    for (size_t i = 0; i < blk->n; i++) {
      const loom_graph_binding *b = blk->bindings[i];
      const loom_graph_expr *v = b->value;
      switch (v->kind) {
      case LOOM_GRAPH_EXPR_CALL:
        for (size_t k = 0; k < v->u.call.nargs; k++) count_leaf(fz, v->u.call.args[k]);
        break;
      case LOOM_GRAPH_EXPR_TUPLE:
        for (size_t k = 0; k < v->u.tuple.n; k++) count_leaf(fz, v->u.tuple.items[k]);
        break;
      case LOOM_GRAPH_EXPR_TUPLE_GET:
        count_leaf(fz, v->u.get.tuple);
        break;
      case LOOM_GRAPH_EXPR_IF:
        count_leaf(fz, v->u.if_.cond);
        prepass_seq(fz, v->u.if_.then_seq);
        prepass_seq(fz, v->u.if_.else_seq);
        break;
      case LOOM_GRAPH_EXPR_LOOP: { /* its iteration var and locals are defined before its body */
        count_leaf(fz, v->u.loop.count);
        count_leaf(fz, v->u.loop.cond);
        for (size_t k = 0; k < v->u.loop.ncarry; k++) count_leaf(fz, v->u.loop.inits[k]);
        def_walk lw = {fz, ++fz->npos};
        define_cb(&lw, v->u.loop.iter);
        for (size_t k = 0; k < v->u.loop.nlocals; k++) define_cb(&lw, v->u.loop.locals[k]);
        prepass_seq(fz, v->u.loop.body);
        break;
      }
      default:
        count_leaf(fz, v);
        break;
      }
      if (!loom_map_put(&fz->pos, (uint64_t)(uintptr_t)b, ++fz->npos)) fz->oom = true;
      def_walk w = {fz, fz->npos};
      define_sinfo(&w, b->var->sinfo);
    }
  }
  count_leaf(fz, s->result);
}

static size_t uses_of(const fuser *fz, const loom_graph_expr *var) {
  uint64_t n = 0;
  loom_map_get(&fz->uses, var->u.var.id, &n);
  return (size_t)n;
}

size_t loom_fuse_pos_of(const fuser *fz, const loom_graph_binding *b) {
  uint64_t n = 0;
  loom_map_get(&fz->pos, (uint64_t)(uintptr_t)b, &n);
  return (size_t)n;
}


void loom_fuse_scope_cb(void *ud, const loom_sym_expr *var) {
  scope_probe *p = ud;
  for (size_t i = 0; i < p->fz->defs.len; i++)
    if (p->fz->defs.data[i].var == var) {
      if (p->fz->defs.data[i].pos >= p->before) p->ok = false;
      return;
    }
  p->ok = false;
}

/* Whether every symbol of `si` is defined above position `before`. */
static bool sinfo_defined_before(const fuser *fz, const loom_sinfo *si, size_t before) {
  scope_probe p = {fz, before, true};
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], loom_fuse_scope_cb, &p);
  if (si->value) loom_sym_for_each_var(si->value, loom_fuse_scope_cb, &p);
  return p.ok;
}

/* ---- programs: lookup, pattern, cost ---------------------------------------------------- */

loom_tp_func *loom_fuse_prog_of(fuser *fz, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_TP)
    return NULL;
  uint64_t p;
  return loom_map_get(&fz->progs, (uint64_t)(uintptr_t)v->u.call.target, &p) ? (loom_tp_func *)(uintptr_t)p : NULL;
}

static loom_tp_pattern pattern_of(fuser *fz, const loom_tp_func *tp) {
  uint64_t k;
  if (loom_map_get(&fz->kinds, (uint64_t)(uintptr_t)tp, &k)) return (loom_tp_pattern)(k - 1);
  loom_tp_pattern pat = loom_tp_classify(tp).pattern;
  if (!loom_map_put(&fz->kinds, (uint64_t)(uintptr_t)tp, (uint64_t)pat + 1)) fz->oom = true;
  return pat;
}

typedef struct var_probe {
  const loom_sym_expr *var;
  bool found;
} var_probe;

static void probe_cb(void *ud, const loom_sym_expr *v) {
  var_probe *p = ud;
  if (v == p->var) p->found = true;
}

/* Whether e depends on the loop variable `inner` (through a symbol or a load's index; NULL:
 * outside every loop, never). A let is assumed to (its value is not looked at). */
static bool expr_varies(const loom_tp_expr *e, const loom_sym_expr *inner) {
  if (!inner) return false;
  switch (e->kind) {
  case LOOM_TP_EXPR_SYM: {
    var_probe p = {inner, false};
    loom_sym_for_each_var(e->u.sym, probe_cb, &p);
    return p.found;
  }
  case LOOM_TP_EXPR_LETREF:
    return true;
  case LOOM_TP_EXPR_LOAD:
    for (int d = 0; d < e->u.load.buf->ndim; d++)
      if (expr_varies(e->u.load.idx[d], inner)) return true;
    return false;
  case LOOM_TP_EXPR_OP:
    for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++)
      if (expr_varies(e->u.op.args[k], inner)) return true;
    return false;
  case LOOM_TP_EXPR_CAST:
    return expr_varies(e->u.cast_arg, inner);
  case LOOM_TP_EXPR_SELECT:
    return expr_varies(e->u.select.cond, inner) || expr_varies(e->u.select.then_e, inner) ||
           expr_varies(e->u.select.else_e, inner);
  default:
    return false;
  }
}

/* A math intrinsic or a division that varies along the innermost loop `inner` (one that does
 * not, such as batch_norm's rsqrt(var[c] + eps) in a loop over the columns, is computed once
 * per row: LLVM hoists it out of the loop it does not depend on). */
static bool expr_costly(const loom_tp_expr *e, const loom_sym_expr *inner) {
  switch (e->kind) {
  case LOOM_TP_EXPR_LOAD:
    for (int d = 0; d < e->u.load.buf->ndim; d++)
      if (expr_costly(e->u.load.idx[d], inner)) return true;
    return false;
  case LOOM_TP_EXPR_OP:
    if ((e->u.op.op == LOOM_TP_OP_DIV || e->u.op.op == LOOM_TP_OP_MOD ||
         (loom_tp_op_class_of(e->u.op.op) == LOOM_TP_CLASS_MATH && e->u.op.op != LOOM_TP_OP_FMA)) &&
        expr_varies(e, inner))
      return true;
    for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++)
      if (expr_costly(e->u.op.args[k], inner)) return true;
    return false;
  case LOOM_TP_EXPR_CAST:
    return expr_costly(e->u.cast_arg, inner);
  case LOOM_TP_EXPR_SELECT:
    return expr_costly(e->u.select.cond, inner) || expr_costly(e->u.select.then_e, inner) ||
           expr_costly(e->u.select.else_e, inner);
  default:
    return false;
  }
}

/* Whether a program computes a math intrinsic or a division per element (one that varies
 * along the innermost loop around it). */
static bool stmt_costly_in(const loom_tp_stmt *s, const loom_sym_expr *inner) {
  switch (s->kind) {
  case LOOM_TP_STMT_SEQ:
    for (size_t i = 0; i < s->u.seq.n; i++)
      if (stmt_costly_in(s->u.seq.items[i], inner)) return true;
    return false;
  case LOOM_TP_STMT_FOR:
    return stmt_costly_in(s->u.loop.body, s->u.loop.var);
  case LOOM_TP_STMT_STORE:
    return expr_costly(s->u.store.value, inner);
  case LOOM_TP_STMT_LET:
    return expr_costly(s->u.let.value, inner);
  case LOOM_TP_STMT_IF:
    return expr_costly(s->u.if_.cond, inner) || stmt_costly_in(s->u.if_.then_s, inner) ||
           (s->u.if_.else_s && stmt_costly_in(s->u.if_.else_s, inner));
  default:
    return false;
  }
}

static bool stmt_costly(const loom_tp_stmt *s) { return stmt_costly_in(s, NULL); }

/* Counts the loads of `buf` and whether each reads every element once: its indices are
 * distinct enclosing loop variables, as many as there are enclosing loops. */
typedef struct read_scan {
  const loom_tp_buffer *buf;
  const loom_sym_expr *loops[32];
  const loom_tp_stmt *nests[32]; /* the enclosing FOR statements */
  int depth;
  int loads;
  bool once;
  const loom_tp_stmt *pass; /* the innermost loop of the first load (NULL: none or outside loops) */
  bool one_pass;            /* every load lies in that same innermost loop */
  loom_sym_ctx *cx;         /* evaluates loop extents at the sample shape (NULL: no count) */
  loom_sym_env *env;        /* every signature symbol bound to READ_SAMPLE */
  double trips[32];         /* iterations of the enclosing loops, outermost first, at the sample */
  double reads;             /* loads executed on the longest path at the sample */
  bool counted;             /* every loop extent around a load evaluated at the sample */
} read_scan;

/* The value of every shape symbol when read_kind counts the loads a reader executes per element
 * of its input: large, so that the count says how many times each element is read as the shape
 * grows (a plane halved five times by strided convolutions is still 129 wide) and the borders of
 * a guarded copy, whose guard the count does not evaluate, weigh little; a prime, not a multiple
 * of a vector chunk; small enough that a product of four extents fits in int64 (an extent that
 * overflows leaves the count out). READ_ONCE_SLACK: the count up to which a read still counts as
 * once per element (conv_pad's 2 + 2 rows of border around a 129-row plane: 1.03; a second load
 * or a broadcast read is 2 or more). */
enum { READ_SAMPLE = 4099 };
#define READ_ONCE_SLACK 1.25

static void scan_reads_expr(read_scan *r, const loom_tp_expr *e) {
  switch (e->kind) {
  case LOOM_TP_EXPR_LOAD:
    for (int d = 0; d < e->u.load.buf->ndim; d++) scan_reads_expr(r, e->u.load.idx[d]);
    if (e->u.load.buf != r->buf) return;
    {
      const loom_tp_stmt *inner = r->depth ? r->nests[r->depth - 1] : NULL;
      if (r->loads && inner != r->pass) r->one_pass = false;
      r->pass = inner;
    }
    r->loads++;
    {
      double t = 1.0;
      for (int k = 0; k < r->depth; k++) t *= r->trips[k];
      r->reads += t;
    }
    if (r->depth != r->buf->ndim) r->once = false;
    for (int d = 0; d < r->buf->ndim && r->once; d++) {
      const loom_tp_expr *x = e->u.load.idx[d];
      if (x->kind != LOOM_TP_EXPR_SYM || !loom_sym_is_var(x->u.sym)) {
        r->once = false;
        break;
      }
      bool enclosing = false;
      for (int k = 0; k < r->depth; k++) enclosing |= r->loops[k] == x->u.sym;
      for (int k = 0; k < d; k++)
        if (e->u.load.idx[k]->u.sym == x->u.sym) enclosing = false;
      if (!enclosing) r->once = false;
    }
    return;
  case LOOM_TP_EXPR_OP:
    for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++) scan_reads_expr(r, e->u.op.args[k]);
    return;
  case LOOM_TP_EXPR_CAST:
    scan_reads_expr(r, e->u.cast_arg);
    return;
  case LOOM_TP_EXPR_SELECT:
    scan_reads_expr(r, e->u.select.cond);
    scan_reads_expr(r, e->u.select.then_e);
    scan_reads_expr(r, e->u.select.else_e);
    return;
  default:
    return;
  }
}

static void scan_reads(read_scan *r, const loom_tp_stmt *s) {
  switch (s->kind) {
  case LOOM_TP_STMT_SEQ:
    for (size_t i = 0; i < s->u.seq.n; i++) scan_reads(r, s->u.seq.items[i]);
    return;
  case LOOM_TP_STMT_FOR:
    if (r->depth >= 32) {
      r->once = false;
      return;
    }
    r->nests[r->depth] = s;
    r->trips[r->depth] = 0.0;
    if (r->cx && r->counted) {
      int64_t v = 0;
      loom_status st = loom_sym_eval(r->cx, s->u.loop.extent, r->env, &v);
      if (st == LOOM_OK)
        r->trips[r->depth] = v > 0 ? (double)v : 0.0;
      else
        r->counted = false; /* an extent that depends on an outer loop: no count */
      loom_status_free(st);
    }
    r->loops[r->depth++] = s->u.loop.var;
    scan_reads(r, s->u.loop.body);
    r->depth--;
    return;
  case LOOM_TP_STMT_STORE:
    for (int d = 0; d < s->u.store.buf->ndim; d++) scan_reads_expr(r, s->u.store.idx[d]);
    scan_reads_expr(r, s->u.store.value);
    return;
  case LOOM_TP_STMT_LET:
    scan_reads_expr(r, s->u.let.value);
    return;
  case LOOM_TP_STMT_IF: {
    /* the two branches exclude each other: each is scanned from the state before the `if`,
     * loads count per path (the larger branch), and loads in different innermost loops of
     * the two branches are still one pass (conv_pad's row chunks or whole short rows) unless
     * another load follows */
    scan_reads_expr(r, s->u.if_.cond);
    read_scan t = *r, e = *r;
    scan_reads(&t, s->u.if_.then_s);
    if (s->u.if_.else_s) scan_reads(&e, s->u.if_.else_s);
    bool tl = t.loads > r->loads, el = e.loads > r->loads;
    static const loom_tp_stmt branches; /* the pass after loads in two different loops */
    r->once = t.once && e.once;
    r->one_pass = t.one_pass && e.one_pass;
    r->counted = t.counted && e.counted;
    r->reads = t.reads > e.reads ? t.reads : e.reads;
    r->pass = tl && el && t.pass != e.pass ? &branches : tl ? t.pass : el ? e.pass : r->pass;
    r->loads = t.loads > e.loads ? t.loads : e.loads;
    return;
  }
  default:
    return;
  }
}

/* How program f reads its parameter buffer named `name`: *one_pass when every load lies
 * in one innermost loop (a recomputed producer is then computed once per iteration there:
 * loads of one statement are one value to LLVM; the two branches of an `if` are two paths,
 * each may have its own loop), *once when there is one load per path, indexed by distinct
 * loop variables covering its whole loop nest, or when, every signature symbol set to
 * READ_SAMPLE, the loads executed on the longest path are at most READ_ONCE_SLACK times the
 * buffer's elements (conv_pad reads x[q // c, q % c, r0 - 1, min(8*zo, w - 8) + zi]: each
 * element once but the last chunk's overlap). Loops whose extent depends on an outer loop
 * variable, or a symbol that fails to evaluate, leave the count out (the first test only). */
static loom_status read_kind(fuser *fz, const loom_tp_func *f, const char *name, bool *one_pass, bool *once) {
  *one_pass = *once = false;
  for (size_t i = 0; i < f->nparams; i++) {
    if (!f->params[i].is_buffer || strcmp(f->params[i].buf->name, name)) continue;
    loom_sym_env *env = NULL;
    LOOM_PROPAGATE(loom_sym_env_create(fz->m->alloc, &env));
    loom_status st = LOOM_OK;
    for (size_t k = 0; k < f->nsyms && st == LOOM_OK; k++) st = loom_sym_env_set(env, f->syms[k], READ_SAMPLE);
    if (st != LOOM_OK) {
      loom_sym_env_destroy(env);
      return st;
    }
    read_scan r = {.buf = f->params[i].buf, .once = true, .one_pass = true, .cx = fz->cx, .env = env, .counted = true};
    scan_reads(&r, f->body);
    double elems = 1.0;
    for (int d = 0; d < r.buf->ndim && r.counted; d++) {
      int64_t v = 0;
      loom_status es = loom_sym_eval(fz->cx, r.buf->dims[d], env, &v);
      if (es != LOOM_OK) r.counted = false;
      loom_status_free(es);
      elems *= (double)v;
    }
    loom_sym_env_destroy(env);
    *one_pass = r.one_pass;
    *once = (r.loads == 1 && r.once) || (r.counted && r.loads > 0 && elems > 0.0 && r.reads <= READ_ONCE_SLACK * elems);
    return LOOM_OK;
  }
  return LOOM_OK;
}

/* ---- grouping over a dataflow block ---------------------------------------------------- */

/* Index in blk (below `before`) of the binding that defines var `e`, or -1. */
static int def_index(const loom_graph_block *blk, const loom_graph_expr *e, size_t before) {
  if (e->kind != LOOM_GRAPH_EXPR_VAR) return -1;
  for (size_t i = 0; i < before; i++)
    if (blk->bindings[i]->var->u.var.id == e->u.var.id) return (int)i;
  return -1;
}

/* Occurrences of var `e` among the members' operands. */
static size_t uses_in_group(const loom_graph_block *blk, const size_t *mem, size_t n, const loom_graph_expr *e) {
  size_t k = 0;
  for (size_t j = 0; j < n; j++) {
    const loom_graph_expr *c = blk->bindings[mem[j]]->value;
    for (size_t i = 0; i < c->u.call.nargs; i++)
      k += c->u.call.args[i]->kind == LOOM_GRAPH_EXPR_VAR && c->u.call.args[i]->u.var.id == e->u.var.id;
  }
  return k;
}

/* Whether a member reading `e` is out_fusable (it takes no producer). */
static bool read_by_out_fusable(fuser *fz, const loom_graph_block *blk, const size_t *mem, size_t n,
                                const loom_graph_expr *e) {
  for (size_t j = 0; j < n; j++) {
    const loom_graph_binding *b = blk->bindings[mem[j]];
    const loom_graph_expr *c = b->value;
    for (size_t i = 0; i < c->u.call.nargs; i++)
      if (c->u.call.args[i]->kind == LOOM_GRAPH_EXPR_VAR && c->u.call.args[i]->u.var.id == e->u.var.id &&
          pattern_of(fz, loom_fuse_prog_of(fz, b)) == LOOM_TP_PATTERN_OUT_FUSABLE)
        return true;
  }
  return false;
}

/* Name of the buffer parameter of merged program `g` holding input `e`, or NULL. */
static const char *input_name(const merged *g, const loom_graph_expr *e) {
  size_t k = 0;
  for (size_t i = 0; i < g->prog->nparams; i++) {
    if (!g->prog->params[i].is_buffer) continue;
    if (k < g->ninputs && loom_fuse_same_leaf(g->inputs[k], e)) return g->prog->params[i].buf->name;
    k++;
  }
  return NULL;
}

/* Names `f` `fused_<root>_<hash of its text>` and adds it to the module, or finds the
 * equal program an earlier group made. */
static loom_status install(fuser *fz, loom_tp_func *f, const char *root_prog, const char **out_name) {
  loom_arena *a = loom_graph_module_arena(fz->m);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  f->name = loom_arena_printf(a, "fused_%s", root_prog);
  if (!f->name) return LOOM_OOM();
  loom_tp_print_func(f, &sb);
  uint64_t h = loom_hash_bytes(loom_strbuf_cstr(&sb), strlen(loom_strbuf_cstr(&sb)));
  loom_status st = LOOM_OK;
  for (unsigned k = 0;; k++) {
    f->name = k ? loom_arena_printf(a, "fused_%s_%016llx_%u", root_prog, (unsigned long long)h, k)
                : loom_arena_printf(a, "fused_%s_%016llx", root_prog, (unsigned long long)h);
    const char *in = f->name ? loom_graph_module_intern(fz->m, f->name, strlen(f->name)) : NULL;
    if (!in) {
      st = LOOM_OOM();
      break;
    }
    uint64_t p;
    if (!loom_map_get(&fz->progs, (uint64_t)(uintptr_t)in, &p)) {
      if ((st = loom_graph_module_add_tp(fz->m, f))) break;
      if (!loom_map_put(&fz->progs, (uint64_t)(uintptr_t)in, (uint64_t)(uintptr_t)f)) st = LOOM_OOM();
      fz->stats.programs++;
      *out_name = in;
      break;
    }
    /* The same name: the same program when the texts agree. */
    loom_strbuf x, y;
    loom_strbuf_init(&x, NULL);
    loom_strbuf_init(&y, NULL);
    loom_tp_print_func((const loom_tp_func *)(uintptr_t)p, &x);
    loom_tp_print_func(f, &y);
    bool same = !x.oom && !y.oom && !strcmp(loom_strbuf_cstr(&x), loom_strbuf_cstr(&y));
    loom_strbuf_free(&x);
    loom_strbuf_free(&y);
    if (same) {
      *out_name = in;
      break;
    }
  }
  loom_strbuf_free(&sb);
  return st;
}

/* Replaces the members of a group by one call of its merged program at the root (an
 * epilogue group: loom_fuse_merge_group). */
static loom_status rewrite_group(fuser *fz, loom_graph_block *blk, const size_t *mem, size_t n, bool epilogue,
                                 bool *drop) {
  loom_graph_module *m = fz->m;
  loom_arena *a = loom_graph_module_arena(m);
  loom_graph_binding *root = blk->bindings[mem[n - 1]];
  const loom_tp_func *root_tp = loom_fuse_prog_of(fz, root);
  merged g;
  bool ok;
  LOOM_PROPAGATE(loom_fuse_merge_group(fz, blk, mem, n, epilogue, a, "fused", &g, &ok));
  if (!ok) return LOOM_ERROR(INTERNAL, "fuse: the group rooted at '%s' merged as a trial but not in the module",
                             root->var->u.var.name);
  const char *name = NULL;
  LOOM_PROPAGATE(install(fz, g.prog, root_tp->name, &name));
  /* Operands: the symbols, then the tensor inputs (the result is the last parameter). */
  size_t nargs = g.prog->nparams - 1, k = 0;
  loom_graph_expr **args = LOOM_ARENA_ARRAY(a, loom_graph_expr *, nargs ? nargs : 1);
  if (!args) return LOOM_OOM();
  for (size_t i = 0; i < nargs; i++) {
    const loom_tp_param *p = &g.prog->params[i];
    args[i] = p->is_buffer ? (loom_graph_expr *)g.inputs[k++] : loom_graph_sym_new(m, p->scalar.var);
    if (!args[i]) return LOOM_OOM();
  }
  loom_graph_expr *call = loom_graph_call_tp(m, name, nargs, args, root->var->sinfo);
  if (!call) return LOOM_OOM();
  call->sinfo = root->var->sinfo;
  call->loc = root->value->loc;
  /* Every member's guards stay: they are what made its struct info exact. */
  size_t ng = 0;
  for (size_t j = 0; j < n; j++) ng += blk->bindings[mem[j]]->nguards;
  const loom_sym_expr **guards = LOOM_ARENA_ARRAY(a, const loom_sym_expr *, ng ? ng : 1);
  const char **why = LOOM_ARENA_ARRAY(a, const char *, ng ? ng : 1);
  if (!guards || !why) return LOOM_OOM();
  size_t gi = 0;
  for (size_t j = 0; j < n; j++) {
    const loom_graph_binding *b = blk->bindings[mem[j]];
    for (size_t q = 0; q < b->nguards; q++) {
      bool dup = false;
      for (size_t r = 0; r < gi && !dup; r++) dup = guards[r] == b->guards[q];
      if (dup) continue;
      guards[gi] = b->guards[q];
      why[gi++] = b->guard_why ? b->guard_why[q] : "";
    }
  }
  for (size_t j = 0; j < n; j++) {
    const char *t = blk->bindings[mem[j]]->value->u.call.target;
    if (!loom_map_put(&fz->absorbed_progs, (uint64_t)(uintptr_t)t, 1)) return LOOM_OOM();
    if (j + 1 < n) drop[mem[j]] = true;
  }
  root->value = call;
  root->nguards = gi;
  root->guards = guards;
  root->guard_why = why;
  fz->stats.groups++;
  fz->stats.absorbed += n - 1;
  return LOOM_OK;
}

static void insert_sorted(size_t *mem, size_t *n, size_t x) {
  size_t i = (*n)++;
  while (i > 0 && mem[i - 1] > x) {
    mem[i] = mem[i - 1];
    i--;
  }
  mem[i] = x;
}

static bool matmul_program(const loom_tp_func *tp);

/* Whether the elementwise / broadcast binding p reads, through elementwise / broadcast bindings
 * each used once, a matmul result used once: that chain is the matmul's epilogue (on its
 * register tile), which a group rooted at a copy (a permute) would take from it. */
static bool feeds_epilogue(fuser *fz, const loom_graph_block *blk, size_t p, int depth) {
  const loom_graph_expr *c = blk->bindings[p]->value;
  if (depth > 16 || c->kind != LOOM_GRAPH_EXPR_CALL) return false;
  for (size_t i = 0; i < c->u.call.nargs; i++) {
    const loom_graph_expr *e = c->u.call.args[i];
    int q = def_index(blk, e, p);
    if (q < 0 || uses_of(fz, e) != 1) continue;
    const loom_tp_func *tp = loom_fuse_prog_of(fz, blk->bindings[q]);
    if (!tp) continue;
    if (matmul_program(tp)) return true;
    loom_tp_pattern pat = pattern_of(fz, tp);
    if ((pat == LOOM_TP_PATTERN_ELEMWISE || pat == LOOM_TP_PATTERN_BROADCAST) && feeds_epilogue(fz, blk, (size_t)q, depth + 1))
      return true;
  }
  return false;
}

/* Whether `tp` is a row program of legalization that reads its input row in several passes
 * (softmax's max, sum and normalise; a norm's statistics and scaling): with reread_rows it
 * takes cheap producers recomputed in each pass. */
static bool reread_row_program(const loom_tp_func *tp) {
  static const char *const prefixes[] = {"softmax_", "log_softmax_", "layer_norm_", "rms_norm_"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(tp->name, prefixes[i], strlen(prefixes[i]))) return true;
  return false;
}

/* Grows the group rooted at blk->bindings[r] (see the banner); *nm members in mem. */
static loom_status grow_group(fuser *fz, loom_graph_block *blk, size_t r, bool *assigned, bool *rejected, size_t *mem,
                              size_t *nm) {
  merged cur;
  bool ok;
  loom_arena_reset(&fz->scratch);
  LOOM_PROPAGATE(loom_fuse_merge_group(fz, blk, mem, *nm, false, &fz->scratch, "trial", &cur, &ok));
  if (!ok) return LOOM_OK;
  const loom_tp_func *rtp = loom_fuse_prog_of(fz, blk->bindings[r]);
  loom_tp_pattern rpat = rtp ? pattern_of(fz, rtp) : LOOM_TP_PATTERN_OPAQUE;
  bool copy_root = rpat != LOOM_TP_PATTERN_ELEMWISE && rpat != LOOM_TP_PATTERN_BROADCAST;
  for (bool grew = true; grew && *nm < MAX_GROUP;) {
    grew = false;
    for (size_t jj = 0; jj < *nm && !grew; jj++) {
      const loom_graph_expr *c = blk->bindings[mem[jj]]->value;
      for (size_t i = 0; i < c->u.call.nargs && !grew; i++) {
        const loom_graph_expr *e = c->u.call.args[i];
        int p = def_index(blk, e, r);
        if (p < 0 || assigned[p] || rejected[p]) continue;
        const loom_graph_binding *pb = blk->bindings[p];
        const loom_tp_func *ptp = loom_fuse_prog_of(fz, pb);
        loom_tp_pattern pat = ptp ? pattern_of(fz, ptp) : LOOM_TP_PATTERN_OPAQUE;
        if ((pat != LOOM_TP_PATTERN_ELEMWISE && pat != LOOM_TP_PATTERN_BROADCAST && pat != LOOM_TP_PATTERN_INJECTIVE) ||
            read_by_out_fusable(fz, blk, mem, *nm, e) || !sinfo_defined_before(fz, pb->var->sinfo, loom_fuse_pos_of(fz, pb)) ||
            (copy_root && pat != LOOM_TP_PATTERN_INJECTIVE && feeds_epilogue(fz, blk, (size_t)p, 0))) {
          rejected[p] = true;
          continue;
        }
        if (uses_in_group(blk, mem, *nm, e) != uses_of(fz, e)) continue; /* used outside: stays materialised */
        /* Recomputation: the group must read the producer in one pass (softmax's three
         * loops would each recompute it, in serial reductions) unless the target re-reads
         * rows cheaply (reread_rows, a row program's root), and read each element of a
         * costly one once. */
        const char *bn = input_name(&cur, e);
        bool one_pass = false, once = false;
        if (bn) LOOM_PROPAGATE(read_kind(fz, cur.prog, bn, &one_pass, &once));
        bool reread = bn && fz->opts.reread_rows && rtp && reread_row_program(rtp);
        if ((!one_pass && !reread) || (!once && stmt_costly(ptp->body))) {
          rejected[p] = true;
          continue;
        }
        size_t trial[MAX_GROUP], nt = *nm;
        memcpy(trial, mem, *nm * sizeof *mem);
        insert_sorted(trial, &nt, (size_t)p);
        merged next;
        LOOM_PROPAGATE(loom_fuse_merge_group(fz, blk, trial, nt, false, &fz->scratch, "trial", &next, &ok));
        if (!ok) {
          rejected[p] = true;
          continue;
        }
        memcpy(mem, trial, nt * sizeof *trial);
        *nm = nt;
        assigned[p] = true;
        cur = next;
        grew = true;
      }
    }
  }
  return fz->oom ? LOOM_OOM() : LOOM_OK;
}

/* Keeps the bindings of blk not marked in drop[0..blk->n). */
static loom_status drop_marked(fuser *fz, loom_graph_block *blk, const bool *drop) {
  loom_graph_binding **kept = LOOM_ARENA_ARRAY(loom_graph_module_arena(fz->m), loom_graph_binding *, blk->n ? blk->n : 1);
  if (!kept) return LOOM_OOM();
  size_t nk = 0;
  for (size_t i = 0; i < blk->n; i++)
    if (!drop[i]) kept[nk++] = blk->bindings[i];
  blk->bindings = kept;
  blk->n = nk;
  return LOOM_OK;
}

/* ---- epilogues into matmul --------------------------------------------------------------- */

/* Whether `tp` is a matmul or linear program of legalization (the CPU matmul rule keeps an
 * epilogue on its register tile; other out_fusable programs, convolutions, keep theirs apart). */
static bool matmul_program(const loom_tp_func *tp) {
  return !strncmp(tp->name, "matmul_", 7) || !strncmp(tp->name, "linear_", 7);
}

/* Whether `tp` is a rows program of legalization (depthwise_rows, pool_rows: each output
 * element stored once from a register, never read back), whose stores take an epilogue: its
 * activation (batch_norm + Clip, SiLU) computed where the sum is stored, not in a pass of its own. */
static bool rows_program(const loom_tp_func *tp) {
  static const char *const prefixes[] = {"depthwise_rows_", "max_pool_rows_", "avg_pool_rows_", "avgpad_pool_rows_",
                                          /* with a producer inside (the _fused forms read their input once, in a copy) */
                                          "fused_depthwise_rows_", "fused_max_pool_rows_", "fused_avgpad_pool_rows_"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
    if (!strncmp(tp->name, prefixes[i], strlen(prefixes[i]))) return true;
  return false;
}

/* Each matmul (or rows program) whose result only one elementwise or broadcast call reads (after the groups
 * above are fused: bias + activation + residual is one call) takes that call as its
 * epilogue: the two become one call where the reader stood, its program the matmul nest
 * with the reader's computation in the output loop (loom_tp_fuse_epilogue). */
static loom_status epilogue_block(fuser *fz, loom_graph_block *blk) {
  size_t n = blk->n;
  bool *drop = calloc(n ? n : 1, sizeof *drop);
  if (!drop) return LOOM_OOM();
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const loom_graph_binding *mb = blk->bindings[i];
    const loom_tp_func *mtp = loom_fuse_prog_of(fz, mb);
    if (drop[i] || !mtp || !(matmul_program(mtp) || rows_program(mtp)) || uses_of(fz, mb->var) != 1) continue;
    size_t j = i + 1;
    for (; j < n; j++) {
      const loom_graph_expr *c = blk->bindings[j]->value;
      bool reads = false;
      if (c->kind == LOOM_GRAPH_EXPR_CALL)
        for (size_t k = 0; k < c->u.call.nargs && !reads; k++)
          reads = c->u.call.args[k]->kind == LOOM_GRAPH_EXPR_VAR && c->u.call.args[k]->u.var.id == mb->var->u.var.id;
      if (reads) break;
    }
    if (j == n) continue;
    const loom_graph_binding *eb = blk->bindings[j];
    const loom_tp_func *etp = loom_fuse_prog_of(fz, eb);
    loom_tp_pattern pat = etp ? pattern_of(fz, etp) : LOOM_TP_PATTERN_OPAQUE;
    if ((pat != LOOM_TP_PATTERN_ELEMWISE && pat != LOOM_TP_PATTERN_BROADCAST) ||
        !sinfo_defined_before(fz, eb->var->sinfo, loom_fuse_pos_of(fz, eb)))
      continue;
    size_t mem[2] = {i, j};
    merged g;
    bool ok;
    loom_arena_reset(&fz->scratch);
    st = loom_fuse_merge_group(fz, blk, mem, 2, true, &fz->scratch, "trial", &g, &ok);
    if (!st && ok) st = rewrite_group(fz, blk, mem, 2, true, drop);
  }
  if (!st) st = drop_marked(fz, blk, drop);
  free(drop);
  return st;
}

static loom_status epilogue_seq(fuser *fz, loom_graph_seq *s) {
  for (size_t bi = 0; bi < s->nblocks; bi++) {
    loom_graph_block *blk = s->blocks[bi];
    if (blk->dataflow) {
      LOOM_PROPAGATE(epilogue_block(fz, blk));
      continue;
    }
    for (size_t i = 0; i < blk->n; i++) {
      loom_graph_expr *v = blk->bindings[i]->value;
      if (v->kind == LOOM_GRAPH_EXPR_LOOP) LOOM_PROPAGATE(epilogue_seq(fz, v->u.loop.body));
      if (v->kind != LOOM_GRAPH_EXPR_IF) continue;
      LOOM_PROPAGATE(epilogue_seq(fz, v->u.if_.then_seq));
      LOOM_PROPAGATE(epilogue_seq(fz, v->u.if_.else_seq));
    }
  }
  return LOOM_OK;
}

/* ---- the groups ------------------------------------------------------------------------------ */

static loom_status fuse_block(fuser *fz, loom_graph_block *blk) {
  size_t n = blk->n;
  bool *flags = calloc(3 * (n ? n : 1), sizeof *flags);
  if (!flags) return LOOM_OOM();
  bool *assigned = flags, *rejected = flags + n, *drop = flags + 2 * n;
  loom_status st = LOOM_OK;
  for (size_t r = n; r-- > 0 && !st;) {
    if (assigned[r] || !loom_fuse_prog_of(fz, blk->bindings[r])) continue;
    assigned[r] = true;
    memset(rejected, 0, n * sizeof *rejected);
    size_t mem[MAX_GROUP] = {r}, nm = 1;
    st = grow_group(fz, blk, r, assigned, rejected, mem, &nm);
    if (!st && nm > 1) st = rewrite_group(fz, blk, mem, nm, false, drop);
  }
  if (!st) st = drop_marked(fz, blk, drop);
  free(flags);
  return st;
}

static loom_status fuse_seq(fuser *fz, loom_graph_seq *s) {
  for (size_t bi = 0; bi < s->nblocks; bi++) {
    loom_graph_block *blk = s->blocks[bi];
    if (blk->dataflow) {
      LOOM_PROPAGATE(fuse_block(fz, blk));
      continue;
    }
    for (size_t i = 0; i < blk->n; i++) {
      loom_graph_expr *v = blk->bindings[i]->value;
      if (v->kind == LOOM_GRAPH_EXPR_LOOP) LOOM_PROPAGATE(fuse_seq(fz, v->u.loop.body));
      if (v->kind != LOOM_GRAPH_EXPR_IF) continue;
      LOOM_PROPAGATE(fuse_seq(fz, v->u.if_.then_seq));
      LOOM_PROPAGATE(fuse_seq(fz, v->u.if_.else_seq));
    }
  }
  return LOOM_OK;
}

/* ---- programs no call uses any more ----------------------------------------------------- */

static loom_status mark_called(loom_map *called, const loom_graph_seq *s) {
  for (size_t bi = 0; bi < s->nblocks; bi++)
    for (size_t i = 0; i < s->blocks[bi]->n; i++) {
      const loom_graph_expr *v = s->blocks[bi]->bindings[i]->value;
      if (v->kind == LOOM_GRAPH_EXPR_IF) {
        LOOM_PROPAGATE(mark_called(called, v->u.if_.then_seq));
        LOOM_PROPAGATE(mark_called(called, v->u.if_.else_seq));
      } else if (v->kind == LOOM_GRAPH_EXPR_LOOP) {
        LOOM_PROPAGATE(mark_called(called, v->u.loop.body));
      } else if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_TP &&
                 !loom_map_put(called, (uint64_t)(uintptr_t)v->u.call.target, 1)) {
        return LOOM_OOM();
      }
    }
  return LOOM_OK;
}

static loom_status drop_unused_programs(fuser *fz) {
  loom_graph_module *m = fz->m;
  loom_map called;
  loom_map_init(&called, m->alloc);
  loom_status st = LOOM_OK;
  for (size_t fi = 0; fi < m->funcs.len && !st; fi++) st = mark_called(&called, m->funcs.data[fi]->body);
  size_t k = 0;
  for (size_t i = 0; i < m->tps.len && !st; i++) {
    loom_tp_func *tp = m->tps.data[i];
    const char *in = loom_graph_module_intern(m, tp->name, strlen(tp->name));
    if (!in) st = LOOM_OOM();
    else if (!loom_map_contains(&fz->absorbed_progs, (uint64_t)(uintptr_t)in) ||
             loom_map_contains(&called, (uint64_t)(uintptr_t)in))
      m->tps.data[k++] = tp;
  }
  if (!st) m->tps.len = k;
  loom_map_destroy(&called);
  return st;
}

/* ---- the pass ----------------------------------------------------------------------------- */

loom_status loom_graph_fuse(loom_graph_module *m, loom_graph_fuse_stats *out) { return loom_graph_fuse_with(m, NULL, out); }

loom_status loom_graph_fuse_with(loom_graph_module *m, const loom_graph_fuse_options *o, loom_graph_fuse_stats *out) {
  fuser fz = {.m = m, .cx = m->cx};
  if (o) fz.opts = *o;
  loom_arena_init(&fz.scratch, m->alloc, 0);
  loom_map_init(&fz.progs, m->alloc);
  loom_map_init(&fz.kinds, m->alloc);
  loom_map_init(&fz.uses, m->alloc);
  loom_map_init(&fz.pos, m->alloc);
  loom_map_init(&fz.absorbed_progs, m->alloc);
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < m->tps.len && !st; i++) {
    const char *in = loom_graph_module_intern(m, m->tps.data[i]->name, strlen(m->tps.data[i]->name));
    if (!in || !loom_map_put(&fz.progs, (uint64_t)(uintptr_t)in, (uint64_t)(uintptr_t)m->tps.data[i])) st = LOOM_OOM();
  }
  for (size_t fi = 0; fi < m->funcs.len && !st; fi++) {
    loom_graph_func *f = m->funcs.data[fi];
    loom_map_clear(&fz.uses);
    loom_map_clear(&fz.pos);
    fz.defs.len = 0;
    fz.npos = 0;
    def_walk w = {&fz, 0};
    for (size_t i = 0; i < f->nparams; i++) define_sinfo(&w, f->params[i]->sinfo);
    prepass_seq(&fz, f->body);
    st = fz.oom ? LOOM_OOM() : fuse_seq(&fz, f->body);
    if (!st) { /* epilogues: on the fused function, its uses and positions counted again */
      loom_map_clear(&fz.uses);
      loom_map_clear(&fz.pos);
      fz.defs.len = 0;
      fz.npos = 0;
      for (size_t i = 0; i < f->nparams; i++) define_sinfo(&w, f->params[i]->sinfo);
      prepass_seq(&fz, f->body);
      st = fz.oom ? LOOM_OOM() : epilogue_seq(&fz, f->body);
    }
    if (!st) st = loom_pass_fix_outputs(m, f->body);
    if (st) st = loom_status_annotate(st, __FILE__, __LINE__, "while fusing @%s", f->name);
  }
  if (!st) st = drop_unused_programs(&fz);
  if (!st && out) *out = fz.stats;
  LOOM_VEC_FREE(m->alloc, &fz.defs);
  loom_map_destroy(&fz.progs);
  loom_map_destroy(&fz.kinds);
  loom_map_destroy(&fz.uses);
  loom_map_destroy(&fz.pos);
  loom_map_destroy(&fz.absorbed_progs);
  loom_arena_destroy(&fz.scratch);
  return st;
}
