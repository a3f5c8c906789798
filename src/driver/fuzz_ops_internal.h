/* fuzz_ops_internal.h — what the fuzz-ops driver (fuzz_ops.c) and its case generators
 * (fuzz_ops_cases*.c) share: the case record and the choice stream generators draw from.
 *
 * A generator is a deterministic function of its choices: every random decision is one
 * `fz_int` call in a range. Drawing records the choices; replaying feeds recorded values back
 * (clamped to the range the generator asks for now), so shrinking is generic: lower one
 * recorded choice, replay, and keep the case if it still fails. Ranges are asked after the
 * values they depend on are known, so every replayed case is valid. */
#ifndef LOOM_DRIVER_FUZZ_OPS_INTERNAL_H
#define LOOM_DRIVER_FUZZ_OPS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/dtype.h"

#define FZ_MAX_CHOICES 160
#define FZ_MAX_PARAMS 6
#define FZ_MAX_RANK 6
#define FZ_MAX_VALUES 16
#define FZ_TEXT_CAP (1 << 20) /* a case's module text (constants hold their values) */

/* How a parameter's elements are made. */
typedef enum fz_fill {
  FZ_FILL_RANGE,  /* floats uniform in [lo, hi) (on a 1/4 grid when the case says so); integers in [lo, hi] */
  FZ_FILL_VALUES, /* vals[i % nvals] */
  FZ_FILL_BOOL,   /* random bools */
  FZ_FILL_BITS,   /* random bit patterns (bitcast) */
} fz_fill;

/* A dim: its text in the module (a symbol, an expression or a literal) and its value. */
typedef struct fz_dim {
  char t[40];
  int64_t v;
} fz_dim;

typedef struct fz_param {
  char name[8];            /* "x" */
  loom_dtype dt;
  int rank;
  fz_dim dims[FZ_MAX_RANK];
  fz_fill fill;
  double lo, hi;           /* FZ_FILL_RANGE */
  double vals[FZ_MAX_VALUES]; /* FZ_FILL_VALUES */
  int nvals;
  bool constant;           /* a module constant `@name` (literal dims; its values, drawn as an input's
                              would be, written into the module), not a parameter of @main */
} fz_param;

typedef struct fz_case {
  const char *op;          /* the op called (for messages) */
  char call[768];          /* "conv1d(x, w, padding=[4])" */
  fz_param p[FZ_MAX_PARAMS];
  int np;
  double rtol, atol;       /* floats agree when |ref - got| <= atol + rtol * |ref| */
  bool grid;               /* float inputs on a 1/4 grid (ties for argmax/topk, halves for round) */
} fz_case;

/* The choice stream and the case being built. */
typedef struct fz_gen {
  uint64_t rng;            /* drawing: splitmix64 state */
  bool replay;             /* true: take choices from `choice` */
  int64_t choice[FZ_MAX_CHOICES];
  int64_t lo[FZ_MAX_CHOICES]; /* the range's low end when drawn (the shrink target) */
  int n;                   /* choices made (drawing) / available (replay) */
  int pos;                 /* next choice */
  bool is_static;          /* dims are written as literals (the static-shape path) */
  fz_case *c;
} fz_gen;

typedef bool (*fz_generator)(fz_gen *g, fz_case *c); /* false: this draw cannot make a case */

typedef struct fz_family {
  const char *name;        /* "conv1d" (what --op names) */
  const char *ops;         /* the ops it calls, space-separated */
  fz_generator gen;
} fz_family;

extern const fz_family loom_fz_families[];
extern const int loom_fz_nfamilies;

/* ---- choices (fuzz_ops_gen.c) ---- */
/* A value in [lo, hi] (hi < lo gives lo); shrinks toward lo. */
int64_t fz_int(fz_gen *g, int64_t lo, int64_t hi);
/* One of n (shrinks toward 0). */
int fz_pick(fz_gen *g, int n);
/* True with about pct% (shrinks toward false). */
bool fz_flag(fz_gen *g, int pct);
/* A size in [lo, hi] biased to 0, 1, primes and the widths 6, 8, 16, 32 (+-1). */
int64_t fz_size(fz_gen *g, int64_t lo, int64_t hi);
/* A float in [lo, hi] on a 1/8 grid. */
double fz_real(fz_gen *g, double lo, double hi);

/* ---- building the case ---- */
/* A dim named `sym` (a literal in a static case). */
fz_dim fz_sym(fz_gen *g, const char *sym, int64_t v);
/* A literal dim. */
fz_dim fz_lit(int64_t v);
/* A dim written as an expression (printf), a literal in a static case. */
fz_dim fz_expr(fz_gen *g, int64_t v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Adds a parameter (floats in [-1, 1), integers in [-5, 5], bools random). */
fz_param *fz_param_add(fz_case *c, const char *name, loom_dtype dt, int rank, const fz_dim *dims);
/* Sets the call text (printf). */
void fz_call(fz_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends ", name=[a, b, ...]" for n integers to buf (of size cap). */
void fz_attr_list(char *buf, size_t cap, const char *name, int n, const int64_t *v);
/* Appends printf text to buf. */
void fz_cat(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
