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

/* Conformance runner: every test directory under `dir` (name containing `filter`, when
 * not NULL) is loaded, imported, and run in the reference interpreter on each
 * test_data_set_N; outputs are compared with rtol 1e-3 / atol 1e-7 (exact for integers
 * and bools). One line per test (`PASS|FAIL|UNSUPPORTED name (reason)`) and a per-family
 * table go to `out` (may be NULL). */
typedef struct loom_onnx_conformance_totals {
  size_t passed, failed, unsupported, total;
} loom_onnx_conformance_totals;
LOOM_MUST_USE loom_status loom_onnx_conformance_run(const char *dir, const char *filter, FILE *out,
                                                    loom_onnx_conformance_totals *totals);
#endif
