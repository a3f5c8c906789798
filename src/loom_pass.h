/* loom_pass.h — passes written outside Loom's tree, loaded at run time.
 *
 * A pass plugin is a shared library that exports one function, `loom_pass_plugin_v1`,
 * returning a table of passes. Each pass rewrites the module in place: the graph functions
 * (graph/graph.h: functions, blocks, bindings, calls) and, after `legalize`, the tensor
 * programs the module holds (tensorprog/tp.h). Loom's own functions (graph/graph.h,
 * symbolic/sym.h, base/status.h, ...) are exported by the `loom` program, so the library
 * links against nothing: build it with undefined symbols allowed (`zig build examples` builds
 * examples/passes/ this way).
 *
 *     static loom_status run(loom_graph_module *m, loom_diag_list *diags, void *user) { ... }
 *     static const loom_plugin_pass passes[] = {{"my_pass", "what it does", run, NULL}};
 *     static const loom_pass_plugin plugin = {LOOM_PASS_PLUGIN_ABI, "mine", 1, passes};
 *     LOOM_PASS_PLUGIN_EXPORT const loom_pass_plugin *loom_pass_plugin_v1(void) { return &plugin; }
 *
 *     loom opt model.loom --load-pass ./libmine.so --passes=normalize,my_pass,dce --check-passes
 *
 * A loaded pass runs in the pass manager like a built-in MODULE pass: the graph verifier runs
 * after it (an ill-formed module is an error naming the pass), `--print-after-all` prints what
 * it made, `--time` times it, and `--check-passes` runs the module in the reference
 * interpreter before and after it on random shapes and fails naming it when a result changed.
 * Its errors are loom_status values (LOOM_ERROR in base/status.h); it must not abort.
 * docs/passes.md, "Passes outside the tree". */
#ifndef LOOM_LOOM_PASS_H
#define LOOM_LOOM_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "base/status.h"
#include "graph/graph.h"

/* The version of this interface; a plugin built for another is refused at load. */
#define LOOM_PASS_PLUGIN_ABI 1u
/* Passes that may be loaded in one process, over all plugins. */
#define LOOM_PASS_PLUGIN_MAX 32

/* One pass: rewrites `m` in place; notes and warnings go to `diags` (may be NULL). */
typedef loom_status (*loom_plugin_pass_fn)(loom_graph_module *m, loom_diag_list *diags, void *user);

typedef struct loom_plugin_pass {
  const char *name;        /* as --passes takes it: letters, digits, '_' and '-', not a built-in pass's name */
  const char *purpose;     /* one line */
  loom_plugin_pass_fn run; /* the pass */
  void *user;              /* passed to run */
} loom_plugin_pass;

typedef struct loom_pass_plugin {
  uint32_t abi;                   /* LOOM_PASS_PLUGIN_ABI */
  const char *name;               /* the plugin's name (messages) */
  size_t npasses;
  const loom_plugin_pass *passes; /* must stay valid while the library is loaded */
} loom_pass_plugin;

/* The entry point's name and type. */
#define LOOM_PASS_PLUGIN_ENTRY "loom_pass_plugin_v1"
typedef const loom_pass_plugin *(*loom_pass_plugin_entry)(void);
#define LOOM_PASS_PLUGIN_EXPORT __attribute__((visibility("default")))
/* What a plugin defines (Loom itself does not). */
LOOM_PASS_PLUGIN_EXPORT const loom_pass_plugin *loom_pass_plugin_v1(void);

/* Loads the plugin at `path` (dlopen) and registers its passes with the pass manager, so
 * loom_pass_lookup (src/driver/pipeline.h) and `loom opt --passes` find them by name. Errors
 * name the file: it cannot be opened, has no entry point, was built for another ABI, or a
 * pass's name is empty, malformed, taken (built-in or loaded before) or over the limit.
 * Nothing is registered when any of its passes is refused. `*nadded` (may be NULL) gets the
 * number of passes registered. The library stays loaded for the process's life. */
loom_status loom_pass_plugin_load(const char *path, size_t *nadded);

#endif
