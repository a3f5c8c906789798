/* pass_fuse_internal.h — what the fusion pass's files share: the pass state, and merging a
 * group of calls into one program (pass_fuse_merge.c). pass_fuse.c chooses the groups. */
#ifndef LOOM_GRAPH_PASS_FUSE_INTERNAL_H
#define LOOM_GRAPH_PASS_FUSE_INTERNAL_H

#include "base/map.h"
#include "graph/pass_internal.h"
#include "tensorprog/tp_ir.h"

enum {
  MAX_GROUP = 64,  /* calls in one group (bounds the work of the trial merges) */
  MAX_INPUTS = 64, /* tensor inputs of one group */
};

typedef struct sym_def {
  const loom_sym_expr *var;
  size_t pos; /* position of the binding that defines it first (0: a parameter) */
} sym_def;

typedef struct fuser {
  loom_graph_module *m;
  loom_sym_ctx *cx;
  loom_arena scratch;     /* trial merges, reset after each */
  loom_map progs;         /* interned program name -> loom_tp_func * */
  loom_map kinds;         /* loom_tp_func * -> pattern + 1 */
  loom_map uses;          /* var id -> uses in the function */
  loom_map pos;           /* binding address -> position in the function (1, 2, ...) */
  LOOM_VEC(sym_def) defs; /* symbols of the function, where first defined */
  size_t npos;
  loom_map absorbed_progs; /* programs of absorbed calls: removed if no call is left */
  loom_graph_fuse_stats stats;
  loom_graph_fuse_options opts;
  bool oom;
} fuser;

/* A merged group: the program and the tensor inputs its buffer parameters take, in order. */
typedef struct merged {
  loom_tp_func *prog;
  size_t ninputs;
  const loom_graph_expr *inputs[MAX_INPUTS];
} merged;

typedef struct scope_probe {
  const fuser *fz;
  size_t before; /* every var must be defined at a position below this */
  bool ok;
} scope_probe;

/* The program a `call_tp` binding calls, or NULL. */
loom_tp_func *loom_fuse_prog_of(fuser *fz, const loom_graph_binding *b);
/* Position of binding b in the function (1, 2, ...). */
size_t loom_fuse_pos_of(const fuser *fz, const loom_graph_binding *b);
/* loom_sym_for_each_var callback: clears p->ok for a symbol not defined below p->before. */
void loom_fuse_scope_cb(void *ud, const loom_sym_expr *var);
/* Whether two leaves are the same value (one var, or one literal node). */
bool loom_fuse_same_leaf(const loom_graph_expr *a, const loom_graph_expr *b);

/* Merges the calls of blk->bindings[mem[0..n)] (in program order; the last is the root)
 * into one program in `a`. *ok is false (no error) when the group cannot be one program:
 * an operand of unknown shape, a scalar of unknown value, a shape the merge cannot prove,
 * an intermediate that would stay a buffer, a symbol not defined above the root. With
 * `epilogue`, mem[0] is a matmul whose result the rest of the group reads element by
 * element: its result is the one intermediate left, and loom_tp_fuse_epilogue moves the
 * group's computation into the matmul's output loop (tensorprog/tp_fuse.h). */
loom_status loom_fuse_merge_group(fuser *fz, const loom_graph_block *blk, const size_t *mem, size_t n, bool epilogue,
                                  loom_arena *a, const char *name, merged *out, bool *ok);

#endif
