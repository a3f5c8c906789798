/* tp.h — tensor programs: loop-level functions over buffers with symbolic shapes.
 * (The full interface grows with tensorprog/; this is the part the graph module
 * relies on: the program type, and parsing/printing a program inside module text.)
 *
 * In module text a tensor program reads:
 *
 *     prim @add(A: Buffer[(n, m), f32], B: Buffer[(n, m), f32], C: Buffer[(n, m), f32]) {
 *       for i in 0..n parallel {
 *         for j in 0..m vectorize {
 *           C[i, j] = A[i, j] + B[i, j]
 *         }
 *       }
 *     }
 *
 * Graph functions call it in destination-passing style; the graph module owns
 * the programs (they live in the module's arena). */
#ifndef LOOM_TENSORPROG_TP_H
#define LOOM_TENSORPROG_TP_H

#include "base/arena.h"
#include "base/diag.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "symbolic/sym.h"

typedef struct loom_tp_func loom_tp_func;

/* Name of a program (without '@'). */
const char *loom_tp_func_name(const loom_tp_func *f);

/* Parses one `prim @name(...) { ... }` definition starting at *pos (at the keyword
 * `prim`) into `arena`, advancing *pos past it. Errors go to `diags` with locations. */
loom_status loom_tp_parse_func(loom_arena *arena, loom_sym_ctx *cx, const loom_source *src,
                               size_t *pos, loom_diag_list *diags, loom_tp_func **out);
/* Appends the program's text (the form the parser reads). */
void loom_tp_print_func(const loom_tp_func *f, loom_strbuf *sb);

#endif
