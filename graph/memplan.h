/* memplan.h — memory planning with symbolic sizes over a legalized graph function.
 *
 *     loom_memplan *p;
 *     LOOM_PROPAGATE(loom_memplan_build(m, f, &p));
 *     loom_strbuf sb; loom_strbuf_init(&sb, NULL);
 *     loom_memplan_print(p, &sb);      // "storage s0: 3072*b bytes ... peak = 4096*b + 40 bytes"
 *     loom_memplan_free(p);
 *
 * Every tensor a `call_tp` (or `call_extern`) of the function produces gets storage. The
 * plan walks the function's bindings in order (the whole function, across blocks):
 *   - a tensor's live range runs from its binding to the last use of any value that may
 *     alias it (tuples holding it, tuple items read from them, results of graph-function
 *     calls that may return an argument — decided per callee);
 *   - a tensor the function returns (possibly inside a tuple) gets storage of its own
 *     that is never reused (an "output" storage);
 *   - any other tensor reuses a storage whose tensors are all dead before its binding,
 *     chosen by proof: first the smallest storage whose size is provably >= the need,
 *     else the largest provably <= the need (the storage grows to the need), else one
 *     whose size becomes max(size, need). No user-given bound is needed: sizes are
 *     symbolic expressions and a storage's size is the max of its tensors' sizes;
 *   - a storage is allocated at its first tensor's binding, so only tensors whose size
 *     uses vars defined by then (params, or match_casts before that binding) may join it.
 * Storages are released after the last use of their last tensor. The planned peak is the
 * sum of all storage sizes: an upper bound of what one call holds at any moment (exact
 * when every storage is live at once), printed as one symbolic expression.
 *
 * Tensors made inside `if` branches get storage of their own (not reused); the peak adds,
 * per `if`, the larger branch's total.
 *
 * A loop's body has a plan of its own (sub[i] of the loop binding i), made by the same rules
 * over the body's bindings once, not per iteration: its tensors reuse storage among
 * themselves, and a storage whose size uses no symbol of the body (its iteration var, its
 * locals, a symbol bound inside it) is `hoist`ed: allocated before the loop and released after
 * it, so every iteration reuses it. The body's outputs (what it returns: the next carried
 * values, the scan items) get storage of their own each iteration; the carried values of one
 * iteration are released when the next ones replace them (double buffering), the scan items
 * are copied into the stack the loop returns. The peak adds per loop its body's peak, its
 * outputs once more, and its stacked scan items (loop_bytes in memplan.c). */
#ifndef LOOM_GRAPH_MEMPLAN_H
#define LOOM_GRAPH_MEMPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/arena.h"
#include "graph/graph.h"

#define LOOM_MEMPLAN_NONE UINT32_MAX

typedef struct loom_memplan_storage {
  const loom_sym_expr *size; /* bytes: the max of its tensors' sizes, simplified */
  uint32_t first;            /* binding index where it is allocated */
  uint32_t last;             /* last binding index reading one of its tensors (nbindings: the return) */
  uint32_t ntensors;         /* tensors placed in it */
  bool output;               /* holds a value the function returns: not reused, not released */
  bool hoist;                /* a loop body's storage of a size fixed before the loop: allocated before it */
} loom_memplan_storage;

typedef struct loom_memplan_tensor {
  const loom_graph_binding *binding; /* the binding that produces it */
  const loom_sym_expr *bytes;        /* its dense size */
  uint32_t def;                      /* binding index */
  uint32_t last_use;                 /* last binding index using it or an alias (nbindings: returned) */
  uint32_t storage;                  /* index into storages */
  bool output;                       /* returned by the function (its storage is an output one) */
} loom_memplan_tensor;

typedef struct loom_memplan loom_memplan;
struct loom_memplan {
  loom_arena arena;
  const loom_graph_func *func;          /* the function planned, or NULL: a loop's body */
  const loom_graph_binding *loop;       /* the loop binding whose body is planned (func NULL) */
  uint32_t nbindings;                   /* bindings of the function, in order */
  const loom_graph_binding **bindings;
  uint32_t *tensor_of;                  /* per binding: tensor index or LOOM_MEMPLAN_NONE */
  uint32_t ntensors;
  loom_memplan_tensor *tensors;
  uint32_t nstorages;
  loom_memplan_storage *storages;
  loom_memplan **sub;                   /* per binding: the plan of a loop's body, or NULL */
  const loom_sym_expr *branches;        /* bytes made inside `if` branches (larger branch each) */
  const loom_sym_expr *loops;           /* bytes the loops hold (loop_bytes each) */
  const loom_sym_expr *peak;            /* bytes: sum of storage sizes + branches + loops */
  const loom_sym_expr *naive;           /* bytes without reuse: sum of tensor sizes */
};

/* Plans `f` of `m` (after legalization). UNIMPLEMENTED naming the binding for what the
 * plan does not take (an operator call that was not legalized is fine: it gets no storage). */
LOOM_MUST_USE loom_status loom_memplan_build(loom_graph_module *m, const loom_graph_func *f, loom_memplan **out);
void loom_memplan_free(loom_memplan *p);
/* The plan of the body of loop binding `b` alone (a loop inside an `if` branch, which the
 * function's plan does not cover), with no storage hoisted. */
LOOM_MUST_USE loom_status loom_memplan_build_loop(loom_graph_module *m, const loom_graph_binding *b, loom_memplan **out);

/* Upper bound of what one call of `f` allocates including the graph functions it calls:
 * peak(f) + the sum over its call sites of the callee's total (calls run one at a time, a
 * callee's storages are released when it returns, its outputs stay with the caller). */
LOOM_MUST_USE loom_status loom_memplan_total_peak(loom_graph_module *m, const loom_graph_func *f,
                                                  const loom_sym_expr **out);

/* The plan as text: one line per storage (size, lifetime, tensors) and the peak. */
void loom_memplan_print(const loom_memplan *p, loom_strbuf *sb);

#endif
