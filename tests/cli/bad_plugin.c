/* bad_plugin.c — pass plugins that must be refused or caught (tests/cli/test_cli_plugins.c),
 * one per define (build.zig builds each as its own library):
 *   BAD_ABI            built for another interface version: refused at load
 *   BAD_TAKEN_NAME     a pass named like a built-in one (`dce`): refused at load
 *   BAD_NO_ENTRY       no loom_pass_plugin_v1: refused at load
 *   BAD_WRONG_REWRITE  `twice_to_square` rewrites mul(x, 2) to mul(x, x): loads and runs,
 *                      and --check-passes must name it */
#include <string.h>

#include "loom_pass.h"

static loom_status wrong(loom_graph_module *m, loom_diag_list *diags, void *user) {
  (void)diags, (void)user;
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++) {
    loom_graph_seq *s = loom_graph_module_func_at(m, i)->body;
    for (size_t k = 0; k < s->nblocks; k++)
      for (size_t j = 0; j < s->blocks[k]->n; j++) {
        loom_graph_binding *b = s->blocks[k]->bindings[j];
        loom_graph_expr *v = b->value;
        if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP || v->u.call.op != LOOM_GRAPH_OP_MUL ||
            v->u.call.args[1]->kind != LOOM_GRAPH_EXPR_CONST || !loom_sinfo_equal(v->u.call.args[0]->sinfo, b->var->sinfo))
          continue;
        loom_graph_expr *args[2] = {v->u.call.args[0], v->u.call.args[0]};
        loom_graph_expr *sq = loom_graph_call_op(m, LOOM_GRAPH_OP_MUL, 2, args, 0, NULL);
        if (!sq) return LOOM_OOM();
        sq->sinfo = b->var->sinfo;
        b->value = sq;
      }
  }
  return LOOM_OK;
}

#if defined(BAD_TAKEN_NAME)
#define PASS_NAME "dce"
#else
#define PASS_NAME "twice_to_square"
#endif
#if defined(BAD_ABI)
#define ABI 999u
#else
#define ABI LOOM_PASS_PLUGIN_ABI
#endif

static const loom_plugin_pass passes[] = {{PASS_NAME, "a wrong rewrite", wrong, NULL}};
static const loom_pass_plugin plugin = {ABI, "bad", 1, passes};

#if defined(BAD_NO_ENTRY)
LOOM_PASS_PLUGIN_EXPORT const loom_pass_plugin *loom_pass_plugin_v0(void);
LOOM_PASS_PLUGIN_EXPORT const loom_pass_plugin *loom_pass_plugin_v0(void) { return &plugin; }
#else
LOOM_PASS_PLUGIN_EXPORT const loom_pass_plugin *loom_pass_plugin_v1(void) { return &plugin; }
#endif
