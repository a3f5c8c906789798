/* cmd_check.c — `loom check FILE.loom`: parse, verify, and print the module with the
 * inferred struct info of every binding, then a summary comment (functions, bindings,
 * unknown dims, runtime guards). Bad input: a located error and exit 1. */
#include <stdio.h>
#include <stdlib.h>

#include "driver/commands.h"
#include "driver/graph_file.h"
#include "graph/graph.h"

/* Counts dims that are not known (unknown rank, unknown shape) in a struct info. */
static size_t unknown_dims(const loom_sinfo *si) {
  size_t n = 0;
  if (si->kind == LOOM_SINFO_TENSOR || si->kind == LOOM_SINFO_SHAPE)
    n += (si->ndim < 0 || !si->dims) ? 1 : 0;
  for (size_t i = 0; i < si->nfields; i++) n += unknown_dims(si->fields[i]);
  return n;
}

static void count_seq(const loom_graph_seq *s, size_t *bindings, size_t *unknown, size_t *guards) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) {
      const loom_graph_binding *b = s->blocks[i]->bindings[j];
      (*bindings)++;
      *unknown += unknown_dims(b->var->sinfo);
      *guards += b->nguards;
      if (b->value->kind == LOOM_GRAPH_EXPR_IF) {
        count_seq(b->value->u.if_.then_seq, bindings, unknown, guards);
        count_seq(b->value->u.if_.else_seq, bindings, unknown, guards);
      } else if (b->value->kind == LOOM_GRAPH_EXPR_LOOP) {
        count_seq(b->value->u.loop.body, bindings, unknown, guards);
      }
    }
}

static int run(const loom_cli_args *args) {
  const char *path = args->positional[0];
  loom_graph_module *m;
  loom_diag_list dl;
  if (loom_driver_load_graph(path, &dl, &m)) return LOOM_EXIT_FAILURE;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  size_t bindings = 0, unknown = 0, guards = 0;
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++)
    count_seq(loom_graph_module_func_at(m, i)->body, &bindings, &unknown, &guards);
  fputs(loom_strbuf_cstr(&sb), stdout);
  printf("// check: %zu functions, %zu bindings, %zu unknown dims, %zu runtime guards\n",
         loom_graph_module_num_funcs(m), bindings, unknown, guards);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(m);
  loom_diag_list_destroy(&dl);
  return LOOM_EXIT_OK;
}

const loom_cli_command loom_cmd_check = {
    .name = "check",
    .summary = "parse and verify a .loom module; print the inferred struct info of every binding",
    .positional = "FILE.loom|FILE.onnx",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){{NULL, NULL, NULL, false}},
    .run = run,
};
