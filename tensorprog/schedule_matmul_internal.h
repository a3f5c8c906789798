/* schedule_matmul_internal.h — what rule 0's files share (the matmul rule, docs/codegen.md
 * "Schedule rules"): schedule_matmul.c matches the nest and lays out panels, row tiles and the
 * few-rows paths; schedule_matmul_tile.c builds one register tile; schedule_matmul_dot.c the
 * dot-product tiles of a B read as [j, r]. */
#ifndef LOOM_TENSORPROG_SCHEDULE_MATMUL_INTERNAL_H
#define LOOM_TENSORPROG_SCHEDULE_MATMUL_INTERNAL_H

#include "tensorprog/tp_schedule_cpu.h"

enum { TILE_ROWS = 6, TALL_ROWS = 12, MAX_CHAIN = 12 }; /* TALL_ROWS: schedule_matmul.c "tall row tiles" */
/* dot-product tiles (schedule_matmul_dot.c): DOT_ROWS x DOT_COLS, for reductions of DOT_MIN_K
 * or more and fewer than DOT_MAX_ROWS rows */
enum { DOT_ROWS = 4, DOT_COLS = 4, DOT_MIN_K = 256, DOT_MAX_ROWS = 64 };
/* columns of a one-row dot-product tile with AVX-512's 32 registers, half with AVX2's 16
 * (schedule_matmul_dot.c, row_by_row) */
enum { DOT_ONE_ROW_COLS = 16 };

/* A matched matmul nest (match_matmul). */
typedef struct mm_nest {
  int nloops;                            /* non-reduce loops around the init + reduction */
  loom_tp_stmt *loops[MAX_CHAIN];
  const loom_tp_buffer *c;               /* the output */
  const loom_tp_buffer *b;               /* the operand indexed by j, not by i (packed) */
  bool b_unit;                           /* b's index uses j only as `+ j` in its last index */
  int64_t panel;                         /* > 0: b is laid out in panels of this many columns,
                                            (n / panel, k, panel) read as [j / panel, r, j % panel]
                                            (matmul packed_b, graph/pass_pack.c) */
  const char *b_batch[MAX_CHAIN];        /* names of batch loop variables b's indices use */
  int nb_batch;
  const char *red;                       /* the reduction loop's variable name */
  bool ab_unit_r;                        /* a is one load and it and b step by 1 in the reduction
                                            variable (rows of both contiguous: dot_tiles) */
  const loom_sym_expr *red_ext;          /* the reduction's extent */
} mm_nest;

/* What scheduling one nest carries along. */
typedef struct mm_ctx {
  loom_arena *a;
  loom_sym_ctx *cx;
  loom_tp_func *view;                    /* body: the copy being transformed */
  const mm_nest *m;
  int nbatch;
  bool pack;                             /* pack B panels (cache_read) */
  loom_strbuf *why;
  int64_t widths[3];                     /* panel widths, widest first (panel_widths) */
  bool overlap;                          /* the widest panels' column tail: one overlapping panel */
  bool prefetch;                         /* register tiles of B laid out in panels prefetch B ahead */
  int64_t tile_rows;                     /* rows of a register tile (TILE_ROWS, or TALL_ROWS) */
  const loom_sym_expr *distinct_rows;    /* the tile being built repeats its last row past this many
                                            (loom_tp_split_clamped's main tiles), else NULL */
  bool epi_moved;                        /* the last micro_tile moved a heavy epilogue after its store */
  bool few_rows;                         /* 1..5 rows: one tile_rows tile clamped to them, 1 row alone */
  const loom_sym_expr *rows;             /* the row loop's extent (the nest as matched) */
  int64_t one_row_cols;                  /* columns of a one-row dot-product tile */
  int64_t tail_rows;                     /* 6-row tiles whose row tail of up to this many rows is one tile of
                                            that many (AVX2's f32 tiles: NARROW_TAIL_ROWS), 0: a whole tile */
} mm_ctx;

/* The rule on a matmul nest as it is (schedule_matmul.c), and on a nest whose batch axes broadcast
 * by a run-time test, versioned (schedule_matmul_bcast.c); *done: *slot was tiled. */
loom_status loom_tpmm_schedule_plain(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                     const loom_tp_cpu_params *p, loom_strbuf *why, bool *done);
loom_status loom_tpmm_schedule_bcast(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                     const loom_tp_cpu_params *p, loom_strbuf *why, bool *done);

/* The statement under single-item sequences. */
loom_tp_stmt *loom_tpmm_strip_seq(loom_tp_stmt *s);
/* The first loop under s whose variable is called `name`; the first load of b under s (NULL if none). */
loom_tp_stmt *loom_tpmm_loop_named(loom_tp_stmt *s, const char *name);
const loom_tp_expr *loom_tpmm_load_of(const loom_tp_stmt *s, const loom_tp_buffer *b);
/* Moves the header of `l` down `times` levels of a perfect nest; *out: the node holding it. */
loom_status loom_tpmm_sink(mm_ctx *c, loom_tp_stmt *l, int times, loom_tp_stmt **out);
/* Sets `kind` on every loop under `s` whose variable is named `name`. */
loom_status loom_tpmm_set_kind_named(loom_sym_ctx *cx, loom_tp_stmt *s, const char *name, loom_tp_loop_kind kind);
/* The j loop to the top of the nest (j, batch loops, i); m rematched. */
loom_status loom_tpmm_j_to_top(mm_ctx *c, loom_tp_stmt *top, mm_nest *m);
/* One register tile at `tile` (schedule_matmul_tile.c); ii / ji the row and column loops'
 * names (NULL: absent), unrolled and vectorised. */
loom_status loom_tpmm_micro_tile(mm_ctx *c, loom_tp_stmt *tile, const char *ii, const char *ji);
/* Whether the nest can take dot-product tiles, and the variant that builds them (its ud: an
 * mm_ctx; schedule_matmul_dot.c). */
bool loom_tpmm_dot_shaped(const mm_nest *m);
loom_status loom_tpmm_dot_variant(void *ud, loom_tp_func *view);

#endif
