/* tp_rewrite.h — transformations of tensor programs: the copy-with-substitution
 * mechanism and the schedule primitives built on it.
 *
 * Primitives change a program in place (new nodes come from `a`, the program's
 * arena). A primitive that does not apply returns a FAILED_PRECONDITION status
 * saying why and leaves the program unchanged, so schedule rules can fall back
 * to a plain correct schedule and report the reason. */
#ifndef LOOM_TENSORPROG_TP_REWRITE_H
#define LOOM_TENSORPROG_TP_REWRITE_H

#include "tensorprog/tp_ir.h"

/* Deep copy of `s` with vars[i] replaced by vals[i]; loops inside get fresh
 * variables, lets and allocs inside are copied. NULL on out-of-memory. */
loom_tp_stmt *loom_tp_stmt_copy_subst(loom_arena *a, loom_sym_ctx *cx, const loom_tp_stmt *s,
                                      const loom_sym_expr *const *vars, const loom_sym_expr *const *vals,
                                      size_t n);

/* The same with buffers redirected: accesses of bufs_from[i] become accesses of bufs_to[i]. */
loom_tp_stmt *loom_tp_stmt_copy_remap(loom_arena *a, loom_sym_ctx *cx, const loom_tp_stmt *s,
                                      const loom_sym_expr *const *vars, const loom_sym_expr *const *vals, size_t n,
                                      const loom_tp_buffer *const *bufs_from, const loom_tp_buffer *const *bufs_to,
                                      size_t nbufs);
/* Deep copy of an expression with symbolic substitution. */
loom_tp_expr *loom_tp_expr_copy_subst(loom_arena *a, loom_sym_ctx *cx, const loom_tp_expr *e,
                                      const loom_sym_expr *const *vars, const loom_sym_expr *const *vals,
                                      size_t n);

/* Deep copy with every symbolic expression simplified under the context's current facts. */
loom_tp_stmt *loom_tp_stmt_copy_simplified(loom_arena *a, loom_sym_ctx *cx, const loom_tp_stmt *s);

/* The loop that is the entire body of loop `outer` (through sequences of one statement), or NULL. */
loom_tp_stmt *loom_tp_child_loop(loom_tp_stmt *outer);

/* The first loop (pre-order) whose variable is named `name`, or NULL. */
loom_tp_stmt *loom_tp_find_loop(loom_tp_func *f, const char *name);

/* Splits `loop` (extent n) by a constant `factor` > 1 into
 *     for <v>_o in 0..floordiv(n, factor) { for <v>_i in 0..factor { body[v := v_o*factor + v_i] } }
 *     for <v>_t in 0..floormod(n, factor) { body[v := floordiv(n, factor)*factor + v_t] }
 * The tail loop is omitted when n % factor == 0 is proven. The outer loop keeps a
 * parallel kind, the inner loop keeps a vectorize/unroll kind; both keep `reduce`.
 * Out: the new outer, inner and tail loops (tail NULL when omitted). */
loom_status loom_tp_split(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                          loom_tp_stmt **out_outer, loom_tp_stmt **out_inner, loom_tp_stmt **out_tail);
/* Splits `loop` (extent n) into chunks of a constant `factor`, the last one partial:
 *     for <v>_o in 0..floordiv(n + factor - 1, factor) { for <v>_i in 0..min(factor, n - <v>_o*factor) {
 *       body[v := v_o*factor + v_i] } }
 * (no separate tail loop: every chunk, the partial one too, is an iteration of the outer loop,
 * so a parallel outer loop shares all of them). Out: the outer and inner loops. */
loom_status loom_tp_split_ceil(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                               loom_tp_stmt **out_outer, loom_tp_stmt **out_inner);
/* Splits like loom_tp_split, but the tail runs one whole inner tile ending at the last
 * iteration (it overlaps the main tiles) instead of the leftover iterations one by one:
 *     for <v>_o in 0..floordiv(n, factor) { for <v>_i in 0..factor { body[v := v_o*factor + v_i] } }
 *     for <v>_t in 0..min(floormod(n, factor), 1) { for <v>_ti in 0..factor { body[v := n - factor + v_ti] } }
 * so a tail gets the same register tile as the main loop. Applies when n >= factor is proven
 * and the body may run twice for one iteration: a serial spatial loop whose body writes one
 * buffer at one index tuple, stores there first, and reads it only there (other buffers it
 * only stores, at that tuple, values that do not read them: an epilogue's output). Out: the outer,
 * inner, tail and tail-inner loops (the tails NULL when n % factor == 0 is proven). */
loom_status loom_tp_split_overlap(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                  loom_tp_stmt **out_outer, loom_tp_stmt **out_inner, loom_tp_stmt **out_tail,
                                  loom_tp_stmt **out_tail_inner);
/* loom_tp_split_overlap with the tail in tiles of `small` iterations (1 <= small < factor, n >=
 * small proven): K = ceil((n % factor) / small) tiles, tile t covering
 *     max(n - small*(K - t), 0) + v_ti,  v_ti < small
 * (the last ending at the last iteration, the first clamped at 0, tiles overlapping where
 * small does not divide the remainder) -- so a 12-row tile's remainder of 1..6 rows costs one
 * 6-row tile and 7..11 rows two, with one tile body in the code. Out: the outer, inner, tail
 * and tail-inner loops (the tails NULL when n % factor == 0 is proven). */
loom_status loom_tp_split_overlap_small(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                        int64_t small, loom_tp_stmt **out_outer, loom_tp_stmt **out_inner,
                                        loom_tp_stmt **out_tail, loom_tp_stmt **out_tail_inner);
/* Row tiles of `factor` iterations whose last one may be clamped, and a tail of at most one
 * tile of `small` (1 <= small < factor, n >= small proven):
 *     for v_o in 0..floordiv(n + factor - small - 1, factor) { for v_i in 0..factor {
 *       body[v := min(max(min(factor*v_o, n - factor), 0) + v_i, n - 1)] } }
 *     for v_t in 0..[1 <= n % factor <= small] { for v_ti in 0..small { body[v := n - small + v_ti] } }
 * A remainder of more than `small` iterations runs as one more whole tile ending at the last
 * iteration, and when n < factor that tile repeats the last iteration (v_i >= n): with a
 * 12-row matmul tile, 7..11 rows are one pass over B where two 6-row tiles made two, with no
 * third tile body in the code. The main tiles' index is then not one-to-one in v_i: the
 * caller caches the written buffer with loom_tp_cache_write_aliased. Same preconditions as
 * loom_tp_split_overlap (a body that may run twice for one iteration). Out: as
 * loom_tp_split_overlap_small (the tails NULL when the tail count is proven 0). */
loom_status loom_tp_split_clamped(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int64_t factor,
                                  int64_t small, loom_tp_stmt **out_outer, loom_tp_stmt **out_inner, loom_tp_stmt **out_tail,
                                  loom_tp_stmt **out_tail_inner);
/* Fuses `outer` with the one loop that is its whole body into one loop over
 * extent n*m (v_o := floordiv(k, m), v_i := floormod(k, m)). */
loom_status loom_tp_fuse(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *outer,
                         loom_tp_stmt **out_fused);
/* Swaps `outer` with the one loop that is its whole body (a perfect nest whose inner
 * extent does not depend on the outer variable). */
loom_status loom_tp_reorder(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *outer);
/* Sets the loop kind. Refused: PARALLEL or GPU binding of a reduce loop (would race),
 * UNROLL of a non-constant extent or one above 64. */
loom_status loom_tp_set_kind(loom_sym_ctx *cx, loom_tp_stmt *loop, loom_tp_loop_kind kind);

/* Replaces the statement `old` (anywhere in f's body) by `with`. */
loom_status loom_tp_replace(loom_tp_func *f, const loom_tp_stmt *old, loom_tp_stmt *with);

/* Loop distribution: `for v { S1; S2; ... }` becomes `for v { S1 }; for v' { S2 }; ...`
 * (each later loop a copy with a fresh variable). Applies to a non-reduce loop whose body
 * is a sequence without lets or allocs at its top, when iterations are independent: every
 * buffer the body writes is accessed everywhere in the body at one index tuple in which
 * some index is `v + rest` (or `rest - v`), rest free of v and of the body's loop variables
 * (the init store and the reduction of a matmul over `j`; loom_tp_iterations_meet). Out: the new loops (arena array). */
loom_status loom_tp_distribute(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop,
                               loom_tp_stmt ***out_loops, size_t *out_n);

/* Whether two iterations of `loop` may meet: *meet is a buffer the body stores that two
 * iterations may access at one element, or NULL when every stored buffer is accessed
 * everywhere in the body at indices with one `±v + rest` in some axis (rest shared, free of v
 * and of the body's loop variables) — the check loom_tp_distribute makes. With skip_local,
 * Local buffers are not judged (the caller knows they are the iteration's own). A non-reduce
 * loop is not thereby independent: col2im's tap loop adds windows that overlap. */
loom_status loom_tp_iterations_meet(loom_sym_ctx *cx, const loom_tp_stmt *loop, bool skip_local,
                                   const loom_tp_buffer **meet);

/* Footprint of `buf` inside `loop`: its first access fixes a template — the indices and
 * the enclosing loops (inside `loop`, outer to inner) whose variables they use; every other
 * access must be the template with loops of equal extents in place of the template's (tail
 * copies of a split), none under an `if`, footprint extents free of the body's loops.
 *
 * cache_read (packing): a Local `name` with one axis per footprint loop is filled at the
 * start of the loop body — `for u.. { name[u..] = buf[template(u..)] }` — and every load of
 * `buf` in the body reads it instead. Refused when the body writes `buf`. The fill reads
 * the whole footprint box. Out: the fill nest (its loops serial).
 *
 * cache_write (accumulator): every access of `buf` in the body goes to a Local `name`
 * instead; it is loaded from `buf` first unless the first access is a store covering the
 * box (then NULL), and written back after the body when the body stores. Refused when two
 * footprint points could be one element (each footprint variable must stand alone, with
 * unit coefficient, in some index). Out: the load and write-back nests (or NULL). */
loom_status loom_tp_cache_read(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                               const char *name, loom_tp_stmt **out_fill);
loom_status loom_tp_cache_write(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                                const char *name, loom_tp_stmt **out_load, loom_tp_stmt **out_store);
/* loom_tp_cache_write without the one-element-per-footprint-point check: the caller
 * guarantees that footprint points which are one element receive equal values (the clamped
 * rows of loom_tp_split_clamped repeat the last row's computation exactly), so the write-back
 * stores each such element several times with one value. */
loom_status loom_tp_cache_write_aliased(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                                        const char *name, loom_tp_stmt **out_load, loom_tp_stmt **out_store);

/* Local buffers of f's top level that scheduling left dead: stores into one that no later
 * statement reads are removed (in a branch of an `if` that never reads it, too: the register
 * tile of a matmul keeps the accumulator it replaced in registers); a Local then used nowhere
 * goes, and one used in only one branch of an `if` is allocated there. `out_dropped`
 * (optional): the Locals removed. */
loom_status loom_tp_drop_dead_locals(loom_arena *a, loom_tp_func *f, size_t *out_dropped);

/* Shape-range variant: wraps the body as `if guard { variant } else { body }`. The variant
 * is a copy of the body simplified under the guard's facts (`m == 1`, `n <= 64`,
 * `floormod(k, 8) == 0`, and conjunctions of those), then scheduled by `schedule`
 * (which receives a program view whose body is the variant; NULL: no schedule). The
 * original body stays as the always-correct fallback -- dropped (no else) when the guard's
 * failure proves that none of its loops runs (`1 <= rows` over loops of `rows` iterations).
 * Adding variants in turn nests
 * them: the first added is tried last. A `schedule` failure leaves the program unchanged. */
typedef loom_status (*loom_tp_schedule_fn)(void *ud, loom_tp_func *view);
loom_status loom_tp_add_variant(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, const loom_sym_expr *guard,
                                loom_tp_schedule_fn schedule, void *ud);

#endif
