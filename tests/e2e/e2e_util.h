/* e2e_util.h — end-to-end checks: a model compiled once (JIT) against the interpreter. */
#ifndef LOOM_TESTS_E2E_UTIL_H
#define LOOM_TESTS_E2E_UTIL_H

#include "graph/graph.h"
#include "loom.h"
#include "support/loom_test.h"

#define E2E_MAX_PARAMS 64

typedef struct e2e_bind {
  const char *name;
  int64_t value;
} e2e_bind;

typedef struct e2e_model {
  const char *path;
  loom_graph_module *ref; /* the module as written (the interpreter runs it) */
  loom_compiled *c;       /* compiled once */
  loom_rt *rt;            /* JIT runtime over c */
} e2e_model;

/* Inputs carried between calls and what a call returned. */
typedef struct e2e_io {
  const loom_tensor *given[E2E_MAX_PARAMS]; /* non-NULL: use this tensor for param i */
  uint32_t ngiven;
  loom_tensor *out[E2E_MAX_PARAMS];         /* the compiled outputs (references) */
  uint32_t nout;
  int64_t planned; /* the plan's peak at this shape, bytes */
  size_t used;     /* what the call allocated at most, bytes */
  bool nan_ok;     /* in: a NaN in the reference must be a NaN in the compiled output (else: bad data) */
  bool data_dims;  /* in: results have extents counted in the data (nonzero, NMS): the plan's peak,
                      which names them, is checked only where b gives every symbol (planned -1 when not) */
} e2e_io;

loom_graph_module *e2e_load(const char *path);
e2e_model e2e_compile(const char *path);
e2e_model e2e_compile_with(const char *path, const loom_compile_options *o);
/* Writes `text` to a new file from mkstemp's template `path` (the caller unlinks it) and compiles it. */
e2e_model e2e_compile_text(const char *text, char *path);
void e2e_model_free(e2e_model *md);
/* Evaluates e with the given symbol values (asserting every var has one). */
const loom_sym_expr *e2e_eval_env(loom_graph_module *m, const loom_sym_expr *e, const e2e_bind *b, size_t nb, int64_t *out);
/* Runs @fn compiled and in the interpreter on the same inputs at the shape `b`; asserts equal
 * shapes, finite values (with io->nan_ok: NaN where the reference has NaN) and that the
 * allocation stayed within the plan's peak (see io->data_dims). Returns the worst relative
 * error. `io` (may be NULL) carries inputs in and outputs out. */
double e2e_check(e2e_model *md, const char *fn, const e2e_bind *b, size_t nb, bool positive, e2e_io *io);
void e2e_io_free(e2e_io *io);
/* The whole file at `path` (malloc'd, NUL-terminated), its size in *len; asserts it can be read. */
char *e2e_slurp(const char *path, size_t *len);

#endif
