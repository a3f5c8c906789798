/* onnx_import.h — ONNX model -> Loom graph module (@main).
 *
 *     loom_graph_module *gm;
 *     LOOM_PROPAGATE(loom_onnx_import(model, &gm));   // @main(inputs...) -> output(s)
 *
 * Graph inputs without an initializer become parameters; their dynamic dims become
 * symbolic vars named after dim_param (one var per distinct name; unnamed ones get
 * fresh names unk0, unk1, ...). Initializers and Constant nodes become constants. Nodes
 * map to graph ops through one table (onnx_import.c); constant shape operands (Reshape's
 * shape, axes) are folded into attributes. One output: @main returns it; several: a
 * tuple. An unsupported op, attribute or operand is an UNIMPLEMENTED status naming the
 * node ("node 3 (Foo 'name'): ..."); a malformed attribute an INVALID_ARGUMENT one. */
#ifndef LOOM_FRONTEND_ONNX_IMPORT_H
#define LOOM_FRONTEND_ONNX_IMPORT_H
#include <stdio.h>

#include "base/status.h"
#include "frontend/onnx/onnx_model.h"
#include "graph/graph.h"

LOOM_MUST_USE loom_status loom_onnx_import(const loom_onnx_model *model, loom_graph_module **out);

/* Options: graph inputs taken as constants (specialization on known input values, like
 * freezing parameters): they are not parameters of @main and fold like initializers. */
typedef struct loom_onnx_import_opts {
  size_t n_frozen;
  const char *const *frozen_names;
  const loom_onnx_tensor *const *frozen_values;
  /* The module's constants point into the model's tensors instead of copying them: the model
   * must outlive the module (loom_onnx_import_adopting gives it to the module). */
  bool borrow_tensors;
} loom_onnx_import_opts;
LOOM_MUST_USE loom_status loom_onnx_import_ex(const loom_onnx_model *model, const loom_onnx_import_opts *opts,
                                              loom_graph_module **out);
/* Imports `model` with its tensors borrowed and gives the model to the module, which frees it
 * when destroyed (the weights are not copied); on failure the model is freed too. */
LOOM_MUST_USE loom_status loom_onnx_import_adopting(loom_onnx_model *model, loom_graph_module **out);

/* Conformance runner: every test directory under `dir` (name containing `filter`, when
 * not NULL) is loaded, imported, and run in the reference interpreter on each
 * test_data_set_N; outputs are compared with rtol 1e-3 / atol 1e-7 (exact for integers
 * and bools). One line per test (`PASS|FAIL|UNSUPPORTED name (reason)`) and a per-family
 * table go to `out` (may be NULL). */
typedef struct loom_onnx_conformance_totals {
  size_t passed, failed, unsupported, total;
  size_t passed_folded; /* of `passed`: those that needed fold_int_inputs */
} loom_onnx_conformance_totals;
LOOM_MUST_USE loom_status loom_onnx_conformance_run(const char *dir, const char *filter, FILE *out,
                                                    loom_onnx_conformance_totals *totals);
/* With fold_int_inputs: a test whose import needs a constant operand that the test feeds
 * as a graph input (axes, shape, pads, k, ...) is imported again per test data set with
 * its integer inputs frozen to the set's values (loom_onnx_import_ex); such passes are
 * marked "(integer inputs folded)" and counted in passed_folded. */
LOOM_MUST_USE loom_status loom_onnx_conformance_run_ex(const char *dir, const char *filter, bool fold_int_inputs,
                                                       FILE *out, loom_onnx_conformance_totals *totals);

/* How a test's imported module is run: the reference interpreter (NULL `eval`), or a hook
 * (the driver's compiled path: pipeline, VM lowering, JIT). `m` is the module imported for
 * the test (the hook may change it, e.g. legalize it, and reuse work while `m` stays the
 * same); on success *out is the result as loom_graph_eval gives it. An UNIMPLEMENTED status
 * counts the test as unsupported. */
typedef loom_status (*loom_onnx_eval_fn)(void *ctx, loom_graph_module *m, size_t nargs, const loom_graph_value *args,
                                         loom_graph_value *out);
typedef struct loom_onnx_conformance_opts {
  bool fold_int_inputs;
  loom_onnx_eval_fn eval; /* NULL: loom_graph_eval */
  void (*forget)(void *ctx, loom_graph_module *m); /* called before a module given to eval is destroyed */
  void *eval_ctx;
} loom_onnx_conformance_opts;
LOOM_MUST_USE loom_status loom_onnx_conformance_run_opts(const char *dir, const char *filter,
                                                         const loom_onnx_conformance_opts *opts, FILE *out,
                                                         loom_onnx_conformance_totals *totals);
#endif
