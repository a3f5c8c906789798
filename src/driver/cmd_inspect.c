/* cmd_inspect.c — `loom inspect FILE --memory|--kernels|--shapes`: what compiling a module
 * decides, without making machine code: the memory plan with its symbolic peak, the kernels
 * and their access patterns, and the symbolic shapes of every function. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/commands.h"
#include "graph/memplan.h"
#include "loom.h"
#include "targets/cpu/codegen.h"
#include "tensorprog/tp.h"
#include "tensorprog/tp_ir.h"
#include "tensorprog/tp_pattern.h"
#include "vm/exec.h"

static loom_status print_memory(loom_graph_module *m) {
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++) {
    loom_memplan *p;
    LOOM_PROPAGATE(loom_memplan_build(m, loom_graph_module_func_at(m, i), &p));
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_memplan_print(p, &sb);
    const loom_sym_expr *total;
    loom_status st = loom_memplan_total_peak(m, loom_graph_module_func_at(m, i), &total);
    if (st) {
      loom_strbuf_free(&sb);
      loom_memplan_free(p);
      return st;
    }
    if (total != p->peak) {
      loom_strbuf_puts(&sb, "  with the functions it calls: ");
      loom_sym_print(total, &sb);
      loom_strbuf_puts(&sb, " bytes\n");
    }
    fputs(loom_strbuf_cstr(&sb), stdout);
    loom_strbuf_free(&sb);
    loom_memplan_free(p);
  }
  return LOOM_OK;
}

/* The kernels, each with its content's place in the kernel cache: the first kernel of a
 * content is a cache hit or miss (a miss is compiled by LLVM), later ones are the same code. */
static loom_status print_kernels(const loom_compiled *c, bool no_cache, const char *key_of) {
  const loom_vm_exec *e = loom_compiled_exec(c);
  loom_graph_module *m = loom_compiled_module(c);
  const loom_tp_func **fs = calloc(e->nkernels + 1, sizeof *fs);
  loom_strbuf *keys = calloc(e->nkernels + 1, sizeof *keys);
  char(*digest)[33] = calloc(e->nkernels + 1, sizeof *digest);
  loom_status st = fs && keys && digest ? LOOM_OK : LOOM_OOM();
  for (uint32_t k = 0; k < e->nkernels && !st; k++) {
    loom_strbuf_init(&keys[k], NULL);
    fs[k] = loom_graph_module_find_tp(m, loom_vm_exec_str(e, e->kernels[k].name));
    if (!fs[k]) st = LOOM_ERROR(INTERNAL, "kernel '%s' has no program", loom_vm_exec_str(e, e->kernels[k].name));
  }
  if (!st) st = loom_cpu_kernel_keys(NULL, loom_graph_module_sym(m), fs, e->nkernels, keys);
  loom_kcache *kc = no_cache || st ? NULL : loom_kcache_open(NULL, 0, NULL);
  uint32_t unique = 0, hits = 0;
  if (!st) printf("%u kernels\n", e->nkernels);
  for (uint32_t k = 0; k < e->nkernels && !st; k++) {
    const char *name = loom_vm_exec_str(e, e->kernels[k].name);
    loom_tp_class cl = loom_tp_classify(fs[k]);
    printf("  %-40s %-26s buffers %u, symbols (", name, loom_tp_pattern_name(cl.pattern), e->kernels[k].nbuf);
    for (size_t j = 0; j < fs[k]->nsyms; j++) printf("%s%s", j ? ", " : "", loom_sym_var_name(fs[k]->syms[j]));
    loom_kcache_digest(loom_strbuf_cstr(&keys[k]), keys[k].len, digest[k]);
    if (key_of && !strcmp(key_of, name)) printf(")\n  key:\n%s", loom_strbuf_cstr(&keys[k]));
    uint32_t same = 0;
    while (same < k && strcmp(digest[same], digest[k])) same++;
    if (same < k) {
      printf("%s same code as %s\n", key_of && !strcmp(key_of, name) ? "  ->" : "),", loom_vm_exec_str(e, e->kernels[same].name));
      continue;
    }
    unique++;
    bool hit = loom_kcache_probe(kc, loom_strbuf_cstr(&keys[k]), keys[k].len);
    hits += hit;
    printf("%s cache %s %.12s\n", key_of && !strcmp(key_of, name) ? "  ->" : "),", hit ? "hit" : "miss", digest[k]);
  }
  if (!st)
    printf("kernel cache%s%s: %u kernels, %u distinct, %u cache hits, %u misses\n", kc ? " " : "",
           kc ? loom_kcache_dir(kc) : " (not used)", e->nkernels, unique, hits, unique - hits);
  loom_kcache_close(kc);
  for (uint32_t k = 0; keys && k < e->nkernels; k++) loom_strbuf_free(&keys[k]);
  free(keys);
  free(fs);
  free(digest);
  return st;
}

/* The struct info of every binding of s, `depth` levels in (an `if`'s branches and a loop's body
 * one more), with its guards, counted in *guards. */
static void shapes_seq(const loom_graph_seq *s, int depth, loom_strbuf *sb, size_t *guards) {
  for (size_t bi = 0; bi < s->nblocks; bi++) {
    const loom_graph_block *blk = s->blocks[bi];
    for (size_t j = 0; j < blk->n; j++) {
      const loom_graph_binding *b = blk->bindings[j];
      for (int d = 0; d < depth; d++) loom_strbuf_puts(sb, "  ");
      loom_strbuf_printf(sb, "%-6s %-12s ", b->kind == LOOM_GRAPH_BIND_MATCH_CAST ? "match" : "let", b->var->u.var.name);
      loom_sinfo_print(b->var->sinfo, sb);
      for (size_t g = 0; g < b->nguards; g++) {
        loom_strbuf_puts(sb, g ? ", " : "   guard ");
        loom_sym_print(b->guards[g], sb);
      }
      *guards += b->nguards;
      loom_strbuf_puts(sb, "\n");
      const loom_graph_expr *v = b->value;
      if (v->kind == LOOM_GRAPH_EXPR_IF) {
        shapes_seq(v->u.if_.then_seq, depth + 1, sb, guards);
        shapes_seq(v->u.if_.else_seq, depth + 1, sb, guards);
      } else if (v->kind == LOOM_GRAPH_EXPR_LOOP) {
        for (size_t k = 0; k < v->u.loop.ncarry; k++) {
          for (int d = 0; d <= depth; d++) loom_strbuf_puts(sb, "  ");
          loom_strbuf_printf(sb, "%-6s %-12s ", "carry", v->u.loop.params[k]->u.var.name);
          loom_sinfo_print(v->u.loop.params[k]->sinfo, sb);
          loom_strbuf_puts(sb, "\n");
        }
        shapes_seq(v->u.loop.body, depth + 1, sb, guards);
      }
    }
  }
}

static void print_shapes(loom_graph_module *m) {
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++) {
    const loom_graph_func *f = loom_graph_module_func_at(m, i);
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_strbuf_printf(&sb, "@%s\n", f->name);
    for (size_t k = 0; k < f->nparams; k++) {
      loom_strbuf_printf(&sb, "  param  %-12s ", f->params[k]->u.var.name);
      loom_sinfo_print(f->params[k]->sinfo, &sb);
      loom_strbuf_puts(&sb, "\n");
    }
    size_t guards = 0;
    shapes_seq(f->body, 1, &sb, &guards);
    loom_strbuf_printf(&sb, "  returns ");
    loom_sinfo_print(f->ret, &sb);
    loom_strbuf_printf(&sb, "\n  %zu run-time guards\n", guards);
    fputs(loom_strbuf_cstr(&sb), stdout);
    loom_strbuf_free(&sb);
  }
}

static int run(const loom_cli_args *args) {
  bool mem = loom_cli_flag(args, "--memory"), ker = loom_cli_flag(args, "--kernels"), shp = loom_cli_flag(args, "--shapes");
  if (!mem && !ker && !shp) return loom_cli_usage_error(args, "say what to inspect: --memory, --kernels or --shapes");
  loom_compile_options o = {.report = stderr};
  loom_compiled *c;
  loom_status st = loom_compile_file(args->positional[0], &o, &c);
  if (!st) {
    if (shp) print_shapes(loom_compiled_module(c));
    if (ker) st = print_kernels(c, loom_cli_flag(args, "--no-cache"), loom_cli_get(args, "--key"));
    if (mem && !st) st = print_memory(loom_compiled_module(c));
    loom_compiled_free(c);
  }
  return loom_cli_exit(st);
}

const loom_cli_command loom_cmd_inspect = {
    .name = "inspect",
    .summary = "show what compiling a module decides: memory plan, kernels, symbolic shapes",
    .positional = "FILE",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){
        {"--memory", NULL, "the memory plan of every function: storages, lifetimes, symbolic peak", false},
        {"--kernels", NULL, "the kernels: access pattern, buffers, symbols, kernel cache hit or miss", false},
        {"--no-cache", NULL, "with --kernels: do not look in the kernel cache", false},
        {"--key", "KERNEL", "with --kernels: also print the kernel cache key (the canonical text) of KERNEL", false},
        {"--shapes", NULL, "the symbolic struct info of every binding and the run-time guards", false},
        {NULL, NULL, NULL, false},
    },
    .run = run,
    .details = "Example: loom inspect models/gpt2_block.loom --memory  (peak = ... bytes, a formula in b and s)",
};
