/* twice_to_add.c — an out-of-tree graph pass (src/loom_pass.h), the worked example of
 * docs/passes.md "Passes outside the tree".
 *
 * The pass `twice_to_add` rewrites every `y = mul(x, 2)` and `y = mul(2, x)` whose 2 is a
 * rank-0 floating-point constant into `y = add(x, x)`, when the new call's struct info is
 * provably y's (same dtype and dims: no broadcast hides in the rewrite). It walks every graph
 * function, every block, the branches of `if` and the bodies of loops; each rewrite is
 * reported as a note.
 *
 *     zig build examples     # zig-out/lib/libloom_example_passes.so
 *     loom opt examples/passes/twice.loom --load-pass zig-out/lib/libloom_example_passes.so \
 *         --passes=normalize,twice_to_add,dce --check-passes
 *
 * The library links against nothing: Loom's functions it calls (graph/graph.h, base/) are the
 * `loom` program's. */
#include <stdbool.h>
#include <string.h>

#include "loom_pass.h"

/* Whether leaf e is a rank-0 floating-point constant equal to 2. */
static bool is_two(const loom_graph_expr *e) {
  if (e->kind != LOOM_GRAPH_EXPR_CONST || e->sinfo->kind != LOOM_SINFO_TENSOR || e->sinfo->ndim != 0) return false;
  switch (e->sinfo->dtype) {
  case LOOM_DTYPE_F32: {
    float v;
    memcpy(&v, e->u.cnst.data, sizeof v);
    return v == 2.0f;
  }
  case LOOM_DTYPE_F64: {
    double v;
    memcpy(&v, e->u.cnst.data, sizeof v);
    return v == 2.0;
  }
  default:
    return false;
  }
}

typedef struct walk {
  loom_graph_module *m;
  loom_diag_list *diags;
  size_t rewrites;
} walk;

static loom_status rewrite_seq(walk *w, loom_graph_seq *s);

/* Rewrites binding b when it is mul(x, 2) or mul(2, x); recurses into `if` branches and loop
 * bodies. */
static loom_status rewrite_binding(walk *w, loom_graph_binding *b) {
  loom_graph_expr *v = b->value;
  if (v->kind == LOOM_GRAPH_EXPR_IF) {
    loom_status st = rewrite_seq(w, v->u.if_.then_seq);
    return st ? st : rewrite_seq(w, v->u.if_.else_seq);
  }
  if (v->kind == LOOM_GRAPH_EXPR_LOOP) return rewrite_seq(w, v->u.loop.body);
  if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP ||
      v->u.call.op != LOOM_GRAPH_OP_MUL || v->u.call.nattrs != 0)
    return LOOM_OK;
  loom_graph_expr *x = NULL;
  if (is_two(v->u.call.args[1])) x = v->u.call.args[0];
  else if (is_two(v->u.call.args[0])) x = v->u.call.args[1];
  if (!x) return LOOM_OK;
  loom_graph_expr *args[2] = {x, x};
  loom_graph_expr *add = loom_graph_call_op(w->m, LOOM_GRAPH_OP_ADD, 2, args, 0, NULL);
  if (!add) return LOOM_OOM();
  loom_graph_infer_result r;
  loom_status st = loom_graph_infer_call(w->m, add, NULL, &r);
  if (st) return st;
  /* the rewrite must keep y's struct info exactly, with no new run-time condition */
  if (r.nguards || !loom_sinfo_equal(r.sinfo, b->var->sinfo)) return LOOM_OK;
  add->sinfo = r.sinfo;
  add->loc = v->loc;
  b->value = add;
  w->rewrites++;
  if (w->diags) {
    const char *xn = x->kind == LOOM_GRAPH_EXPR_VAR ? x->u.var.name : "the operand";
    loom_diag_add(w->diags, LOOM_DIAG_NOTE, b->loc, "twice_to_add: %s = add(%s, %s) instead of a multiplication by 2",
                  b->var->u.var.name, xn, xn);
  }
  return LOOM_OK;
}

static loom_status rewrite_seq(walk *w, loom_graph_seq *s) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) {
      loom_status st = rewrite_binding(w, s->blocks[i]->bindings[j]);
      if (st) return st;
    }
  return LOOM_OK;
}

static loom_status twice_to_add(loom_graph_module *m, loom_diag_list *diags, void *user) {
  (void)user;
  walk w = {.m = m, .diags = diags};
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++) {
    loom_status st = rewrite_seq(&w, loom_graph_module_func_at(m, i)->body);
    if (st) return st;
  }
  return LOOM_OK;
}

static const loom_plugin_pass passes[] = {
    {"twice_to_add", "mul(x, 2) -> add(x, x) where the struct info is unchanged", twice_to_add, NULL},
};

static const loom_pass_plugin plugin = {LOOM_PASS_PLUGIN_ABI, "loom example passes", 1, passes};

LOOM_PASS_PLUGIN_EXPORT const loom_pass_plugin *loom_pass_plugin_v1(void) { return &plugin; }
