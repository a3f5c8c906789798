/* gen.c — tensor-program generators for operator families (see tp_gen.h).
 *
 * Each generator writes the program as text — loop nests over its own symbolic
 * dims d0, d1, ... — and parses it. Loop variables are i0, i1, ...; reduction
 * variables r0, r1, .... */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/tp_gen.h"

/* Parses the generated text; a failure is a bug in the generator. */
static loom_status finish(loom_arena *a, loom_sym_ctx *cx, loom_strbuf *sb, loom_tp_func **result) {
  if (sb->oom) {
    loom_strbuf_free(sb);
    return LOOM_OOM();
  }
  /* The program text lives in the arena: diagnostics and names may point into it. */
  char *text = loom_arena_strdup(a, loom_strbuf_cstr(sb));
  loom_source *src = LOOM_ARENA_NEW(a, loom_source);
  loom_strbuf_free(sb);
  if (!text || !src) return LOOM_OOM();
  *src = (loom_source){"<generated>", text, strlen(text)};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  size_t pos = 0;
  loom_status s = loom_tp_parse_func(a, cx, src, &pos, &diags, result);
  loom_diag_list_destroy(&diags);
  if (s) {
    loom_status r = LOOM_ERROR(INTERNAL, "generated program does not parse: %s\n%s", loom_status_message(s), text);
    loom_status_free(s);
    return r;
  }
  return LOOM_OK;
}

/* Appends `expr` with each whole-word occurrence of a name in names[] replaced by repl[]. */
static void substitute(loom_strbuf *sb, const char *expr, const char *const *names, const char *const *repl, int n) {
  for (const char *p = expr; *p;) {
    if (isalpha((unsigned char)*p) || *p == '_') {
      const char *q = p;
      while (isalnum((unsigned char)*q) || *q == '_') q++;
      int hit = -1;
      for (int i = 0; i < n; i++)
        if ((size_t)(q - p) == strlen(names[i]) && !memcmp(p, names[i], (size_t)(q - p))) hit = i;
      if (hit >= 0 && *q != '(') {
        loom_strbuf_putc(sb, '(');
        loom_strbuf_puts(sb, repl[hit]);
        loom_strbuf_putc(sb, ')');
      } else {
        loom_strbuf_append(sb, p, (size_t)(q - p));
      }
      p = q;
    } else {
      loom_strbuf_putc(sb, *p++);
    }
  }
}

static void buffer_type(loom_strbuf *sb, const char *const *dims, int rank, loom_dtype t) {
  loom_strbuf_puts(sb, "Buffer[(");
  for (int d = 0; d < rank; d++) loom_strbuf_printf(sb, "%s%s", d ? ", " : "", dims[d]);
  loom_strbuf_printf(sb, "%s), %s]", rank == 1 ? "," : "", loom_dtype_name(t));
}

/* Opens `for iD in 0..dD [parallel] {` for each listed axis. */
static void open_loops(loom_strbuf *sb, const int *axes, int n, const char *var, const char *const *dims,
                       bool parallel_first, bool reduce) {
  for (int k = 0; k < n; k++)
    loom_strbuf_printf(sb, "for %s%d in 0..%s%s%s {\n", var, axes[k], dims[axes[k]],
                       parallel_first && k == 0 ? " parallel" : "", reduce ? " reduce" : "");
}

static void close_loops(loom_strbuf *sb, int n) {
  for (int k = 0; k < n; k++) loom_strbuf_puts(sb, "}\n");
}

static char dim_names[LOOM_TP_GEN_MAX_RANK][8];
static const char *dn[LOOM_TP_GEN_MAX_RANK];

/* "d0", "d1", ... (static, read-only after the first call). */
static const char *const *dims_d(void) {
  if (!dn[0])
    for (int d = 0; d < LOOM_TP_GEN_MAX_RANK; d++) {
      snprintf(dim_names[d], sizeof dim_names[d], "d%d", d);
      dn[d] = dim_names[d];
    }
  return dn;
}

static loom_status check_rank(int rank) {
  if (rank < 0 || rank > LOOM_TP_GEN_MAX_RANK)
    return LOOM_ERROR(INVALID_ARGUMENT, "rank %d is outside [0, %d]", rank, LOOM_TP_GEN_MAX_RANK);
  return LOOM_OK;
}

static void all_axes(int *axes, int n) {
  for (int d = 0; d < n; d++) axes[d] = d;
}

loom_status loom_tp_gen_unary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, loom_dtype in,
                              loom_dtype out, int rank, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, in);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, out);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char load[256] = "X[";
  for (int k = 0; k < rank; k++) snprintf(load + strlen(load), sizeof load - strlen(load), "%si%d", k ? ", " : "", k);
  strcat(load, "]");
  const char *names[1] = {"x"}, *repl[1] = {load};
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = ");
  substitute(&sb, expr, names, repl, 1);
  loom_strbuf_putc(&sb, '\n');
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

/* The dims of one broadcast input ("d3", "1" or "a3") and its load text. */
static void bcast_input(const char *prefix, int r, int R, const loom_tp_bcast *m, char dims[][12], char *load,
                        size_t load_cap, const char *buf) {
  snprintf(load, load_cap, "%s[", buf);
  for (int j = 0; j < r; j++) {
    int d = j + R - r; /* aligned output axis */
    char idx[64];
    switch (m[j]) {
      case LOOM_TP_BCAST_FULL:
        snprintf(dims[j], 12, "d%d", d);
        snprintf(idx, sizeof idx, "i%d", d);
        break;
      case LOOM_TP_BCAST_ONE:
        snprintf(dims[j], 12, "1");
        snprintf(idx, sizeof idx, "0");
        break;
      case LOOM_TP_BCAST_GUARD:
        snprintf(dims[j], 12, "%s%d", prefix, d);
        snprintf(idx, sizeof idx, "select(%s%d == 1, 0, i%d)", prefix, d, d);
        break;
    }
    snprintf(load + strlen(load), load_cap - strlen(load), "%s%s", j ? ", " : "", idx);
  }
  snprintf(load + strlen(load), load_cap - strlen(load), "]");
}

loom_status loom_tp_gen_nary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, int n,
                             const loom_dtype *in, loom_dtype out, const int *ranks, const loom_tp_bcast *const *modes,
                             loom_tp_func **result) {
  static const char *const vars[4] = {"a", "b", "c", "d"}, *const bufs[4] = {"A", "B", "C", "D"};
  static const char *const prefixes[4] = {"a", "b", "c", "e"}; /* dims of guarded axes: a3, b3, ... */
  if (n < 1 || n > 4) return LOOM_ERROR(INVALID_ARGUMENT, "elementwise generator takes 1 to 4 inputs, not %d", n);
  int R = 0;
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0) return LOOM_ERROR(INVALID_ARGUMENT, "negative rank");
    if (ranks[i] > R) R = ranks[i];
  }
  LOOM_PROPAGATE(check_rank(R));
  char dims[4][LOOM_TP_GEN_MAX_RANK][12], loads[4][512];
  const char *pd[4][LOOM_TP_GEN_MAX_RANK], *repl[4];
  for (int i = 0; i < n; i++) {
    bcast_input(prefixes[i], ranks[i], R, modes[i], dims[i], loads[i], sizeof loads[i], bufs[i]);
    for (int j = 0; j < ranks[i]; j++) pd[i][j] = dims[i][j];
    repl[i] = loads[i];
  }
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  for (int i = 0; i < n; i++) {
    loom_strbuf_printf(&sb, "%s: ", bufs[i]);
    buffer_type(&sb, pd[i], ranks[i], in[i]);
    loom_strbuf_puts(&sb, ", ");
  }
  loom_strbuf_puts(&sb, "Y: ");
  buffer_type(&sb, d, R, out);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, R);
  open_loops(&sb, axes, R, "i", d, true, false);
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < R; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = ");
  substitute(&sb, expr, vars, repl, n);
  loom_strbuf_putc(&sb, '\n');
  close_loops(&sb, R);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_binary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, loom_dtype in,
                               loom_dtype out, int ra, const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb,
                               loom_tp_func **result) {
  const loom_dtype ins[2] = {in, in};
  const int ranks[2] = {ra, rb};
  const loom_tp_bcast *const modes[2] = {ma, mb};
  return loom_tp_gen_nary(a, cx, name, expr, 2, ins, out, ranks, modes, result);
}

/* The identity element of a reduction as a literal of dtype t. */
static void reduce_init(loom_strbuf *sb, loom_tp_reduce_op op, loom_dtype t) {
  bool fl = loom_dtype_is_float(t);
  const char *suffix = (fl && t == LOOM_DTYPE_F32) || (!fl && t == LOOM_DTYPE_I64) ? "" : loom_dtype_name(t);
  switch (op) {
    case LOOM_TP_REDUCE_SUM: case LOOM_TP_REDUCE_MEAN:
      loom_strbuf_printf(sb, "%s%s", fl ? "0.0" : "0", suffix);
      return;
    case LOOM_TP_REDUCE_PROD:
      loom_strbuf_printf(sb, "%s%s", fl ? "1.0" : "1", suffix);
      return;
    case LOOM_TP_REDUCE_MAX: case LOOM_TP_REDUCE_MIN: {
      bool mx = op == LOOM_TP_REDUCE_MAX;
      if (fl) {
        loom_strbuf_printf(sb, "%sinf%s", mx ? "-" : "", suffix);
      } else {
        /* the extreme value of the integer type */
        unsigned bits = loom_dtype_bits(t);
        bool sgn = loom_dtype_is_signed(t);
        if (t == LOOM_DTYPE_BOOL) loom_strbuf_puts(sb, mx ? "false" : "true");
        else if (sgn && mx) loom_strbuf_printf(sb, "%lld%s", bits == 64 ? (long long)INT64_MIN + 1 : -(1LL << (bits - 1)), suffix);
        else if (sgn) loom_strbuf_printf(sb, "%lld%s", bits == 64 ? (long long)INT64_MAX : (1LL << (bits - 1)) - 1, suffix);
        else if (mx) loom_strbuf_printf(sb, "0%s", suffix);
        else loom_strbuf_printf(sb, "%llu%s", bits == 64 ? 18446744073709551615ULL : (1ULL << bits) - 1, suffix);
      }
      return;
    }
  }
}

loom_status loom_tp_gen_reduce(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_tp_reduce_op op, loom_dtype t,
                               int rank, unsigned axes_mask, bool keepdims, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (axes_mask >> rank) return LOOM_ERROR(INVALID_ARGUMENT, "reduction axes 0x%x exceed rank %d", axes_mask, rank);
  if (op == LOOM_TP_REDUCE_MEAN && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "mean of %s is not supported (use a float dtype)", loom_dtype_name(t));
  const char *const *d = dims_d();
  int keep[LOOM_TP_GEN_MAX_RANK], red[LOOM_TP_GEN_MAX_RANK], nk = 0, nr = 0;
  for (int k = 0; k < rank; k++) {
    if (axes_mask >> k & 1) red[nr++] = k;
    else keep[nk++] = k;
  }
  /* Output dims and index. */
  const char *odims[LOOM_TP_GEN_MAX_RANK];
  char oidx[512] = "";
  int orank = 0;
  for (int k = 0; k < rank; k++) {
    bool r = axes_mask >> k & 1;
    if (r && !keepdims) continue;
    odims[orank++] = r ? "1" : d[k];
    snprintf(oidx + strlen(oidx), sizeof oidx - strlen(oidx), "%s%s%d", orank > 1 ? ", " : "", r ? "0" : "i", k);
    if (r) oidx[strlen(oidx) - 1] = '\0'; /* "0" not "0k" */
  }
  if (orank == 0) snprintf(oidx, sizeof oidx, "0"); /* a full reduction to a 1-element tensor */
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  if (orank == 0) {
    const char *one[1] = {"1"};
    buffer_type(&sb, one, 1, t);
  } else {
    buffer_type(&sb, odims, orank, t);
  }
  loom_strbuf_puts(&sb, ") {\n");
  open_loops(&sb, keep, nk, "i", d, true, false);
  loom_strbuf_printf(&sb, "Y[%s] = ", oidx);
  reduce_init(&sb, op, t);
  loom_strbuf_putc(&sb, '\n');
  char xidx[512] = "";
  for (int k = 0; k < rank; k++)
    snprintf(xidx + strlen(xidx), sizeof xidx - strlen(xidx), "%s%c%d", k ? ", " : "", axes_mask >> k & 1 ? 'r' : 'i', k);
  open_loops(&sb, red, nr, "r", d, false, true);
  switch (op) {
    case LOOM_TP_REDUCE_SUM: case LOOM_TP_REDUCE_MEAN:
      loom_strbuf_printf(&sb, "Y[%s] = Y[%s] + X[%s]\n", oidx, oidx, xidx);
      break;
    case LOOM_TP_REDUCE_PROD:
      loom_strbuf_printf(&sb, "Y[%s] = Y[%s] * X[%s]\n", oidx, oidx, xidx);
      break;
    case LOOM_TP_REDUCE_MAX: case LOOM_TP_REDUCE_MIN:
      loom_strbuf_printf(&sb, "Y[%s] = %s(Y[%s], X[%s])\n", oidx, op == LOOM_TP_REDUCE_MAX ? "max" : "min", oidx, xidx);
      break;
  }
  close_loops(&sb, nr);
  if (op == LOOM_TP_REDUCE_MEAN) {
    loom_strbuf_printf(&sb, "Y[%s] = Y[%s] / %s(", oidx, oidx, loom_dtype_name(t));
    if (nr == 0) loom_strbuf_puts(&sb, "1");
    for (int k = 0; k < nr; k++) loom_strbuf_printf(&sb, "%s%s", k ? "*" : "", d[red[k]]);
    loom_strbuf_puts(&sb, ")\n");
  }
  close_loops(&sb, nk);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_matmul(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int ra,
                               const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb, loom_tp_func **result) {
  if (ra < 2 || rb < 2) return LOOM_ERROR(INVALID_ARGUMENT, "matmul generator needs ranks >= 2 (given %d and %d)", ra, rb);
  int nba = ra - 2, nbb = rb - 2, NB = nba > nbb ? nba : nbb, R = NB + 2;
  LOOM_PROPAGATE(check_rank(R));
  /* Batch dims via the broadcast helper, then the matrix dims m, k / k, n. */
  char da[LOOM_TP_GEN_MAX_RANK][12], db[LOOM_TP_GEN_MAX_RANK][12], la[512], lb[512];
  bcast_input("a", nba, NB, ma, da, la, sizeof la, "A");
  bcast_input("b", nbb, NB, mb, db, lb, sizeof lb, "B");
  const char *pa[LOOM_TP_GEN_MAX_RANK], *pb[LOOM_TP_GEN_MAX_RANK], *pc[LOOM_TP_GEN_MAX_RANK];
  for (int j = 0; j < nba; j++) pa[j] = da[j];
  for (int j = 0; j < nbb; j++) pb[j] = db[j];
  const char *const *d = dims_d();
  for (int j = 0; j < NB; j++) pc[j] = d[j];
  pa[nba] = "m", pa[nba + 1] = "k";
  pb[nbb] = "k", pb[nbb + 1] = "n";
  pc[NB] = "m", pc[NB + 1] = "n";
  /* Loads: strip the closing ']' of the batch part and append the matrix indices. */
  la[strlen(la) - 1] = '\0';
  lb[strlen(lb) - 1] = '\0';
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(A: ", name);
  buffer_type(&sb, pa, ra, t);
  loom_strbuf_puts(&sb, ", B: ");
  buffer_type(&sb, pb, rb, t);
  loom_strbuf_puts(&sb, ", C: ");
  buffer_type(&sb, pc, R, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, NB);
  open_loops(&sb, axes, NB, "i", d, true, false);
  loom_strbuf_printf(&sb, "for im in 0..m%s {\nfor jn in 0..n {\n", NB ? "" : " parallel");
  char cidx[512] = "";
  for (int j = 0; j < NB; j++) snprintf(cidx + strlen(cidx), sizeof cidx - strlen(cidx), "i%d, ", j);
  strcat(cidx, "im, jn");
  bool widen = acc != t;
  const char *accn = loom_dtype_name(acc);
  if (widen) {
    loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\nS[0] = %s(0.0)\n", accn, accn);
    loom_strbuf_printf(&sb, "for rk in 0..k reduce {\nS[0] = S[0] + %s(%s%sim, rk]) * %s(%s%srk, jn])\n}\n", accn, la,
                       nba ? ", " : "", accn, lb, nbb ? ", " : "");
    loom_strbuf_printf(&sb, "C[%s] = %s(S[0])\n", cidx, loom_dtype_name(t));
  } else {
    loom_strbuf_printf(&sb, "C[%s] = ", cidx);
    reduce_init(&sb, LOOM_TP_REDUCE_SUM, t);
    loom_strbuf_printf(&sb, "\nfor rk in 0..k reduce {\nC[%s] = C[%s] + %s%sim, rk] * %s%srk, jn]\n}\n", cidx, cidx, la,
                       nba ? ", " : "", lb, nbb ? ", " : "");
  }
  loom_strbuf_puts(&sb, "}\n}\n");
  close_loops(&sb, NB);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

/* Index text for rank dims with axis `axis` replaced by `var`. */
static void index_with(char *out, size_t cap, int rank, int axis, const char *var) {
  out[0] = '\0';
  for (int k = 0; k < rank; k++) {
    if (k == axis) snprintf(out + strlen(out), cap - strlen(out), "%s%s", k ? ", " : "", var);
    else snprintf(out + strlen(out), cap - strlen(out), "%si%d", k ? ", " : "", k);
  }
}

/* The accumulation dtype for statistics of t. */
static loom_dtype stat_type(loom_dtype t) { return t == LOOM_DTYPE_F64 ? LOOM_DTYPE_F64 : LOOM_DTYPE_F32; }

loom_status loom_tp_gen_softmax(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                bool log, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "softmax axis %d is outside [0, %d)", axis, rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "softmax of %s is not supported", loom_dtype_name(t));
  const char *const *d = dims_d();
  loom_dtype st = stat_type(t);
  /* Conversions are written only where the statistics type differs (an empty cast name
   * leaves a parenthesised expression, which prints without the parentheses). */
  const char *s = loom_dtype_name(st), *tn = st == t ? "" : loom_dtype_name(t);
  const char *sc = st == t ? "" : s;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int keep[LOOM_TP_GEN_MAX_RANK], nk = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) keep[nk++] = k;
  open_loops(&sb, keep, nk, "i", d, true, false);
  char xr[256];
  index_with(xr, sizeof xr, rank, axis, "r");
  loom_strbuf_printf(&sb, "alloc M: Local[(1,), %s]\nM[0] = -inf%s\n", s, st == LOOM_DTYPE_F32 ? "" : s);
  loom_strbuf_printf(&sb, "for r in 0..%s reduce {\nM[0] = max(M[0], %s(X[%s]))\n}\n", d[axis], sc, xr);
  loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\nS[0] = 0.0%s\n", s, st == LOOM_DTYPE_F32 ? "" : s);
  loom_strbuf_printf(&sb, "for r in 0..%s reduce {\nS[0] = S[0] + exp(%s(X[%s]) - M[0])\n}\n", d[axis], sc, xr);
  char xj[256];
  index_with(xj, sizeof xj, rank, axis, "j");
  if (log)
    loom_strbuf_printf(&sb, "for j in 0..%s {\nY[%s] = %s(%s(X[%s]) - M[0] - log(S[0]))\n}\n", d[axis], xj, tn, sc, xj);
  else
    loom_strbuf_printf(&sb, "for j in 0..%s {\nY[%s] = %s(exp(%s(X[%s]) - M[0]) / S[0])\n}\n", d[axis], xj, tn, sc, xj);
  close_loops(&sb, nk);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_layer_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int naxes,
                                   double eps, bool rms, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (naxes < 1 || naxes > rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "normalised axes %d is outside [1, %d]", naxes, rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "layer_norm of %s is not supported", loom_dtype_name(t));
  const char *const *d = dims_d();
  loom_dtype st = stat_type(t);
  const char *s = loom_dtype_name(st), *tn = st == t ? "" : loom_dtype_name(t);
  const char *sc = st == t ? "" : s; /* see loom_tp_gen_softmax */
  int first = rank - naxes;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", gamma: ");
  buffer_type(&sb, d + first, naxes, t);
  if (!rms) {
    loom_strbuf_puts(&sb, ", beta: ");
    buffer_type(&sb, d + first, naxes, t);
  }
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int keep[LOOM_TP_GEN_MAX_RANK], red[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < first; k++) keep[k] = k;
  for (int k = 0; k < naxes; k++) red[k] = first + k;
  open_loops(&sb, keep, first, "i", d, true, false);
  char xr[256] = "", xj[256] = "", gj[256] = "", count[256] = "";
  for (int k = 0; k < rank; k++) {
    snprintf(xr + strlen(xr), sizeof xr - strlen(xr), "%s%c%d", k ? ", " : "", k < first ? 'i' : 'r', k);
    snprintf(xj + strlen(xj), sizeof xj - strlen(xj), "%s%c%d", k ? ", " : "", k < first ? 'i' : 'j', k);
  }
  for (int k = first; k < rank; k++) {
    snprintf(gj + strlen(gj), sizeof gj - strlen(gj), "%sj%d", k > first ? ", " : "", k);
    snprintf(count + strlen(count), sizeof count - strlen(count), "%s%s", k > first ? "*" : "", d[k]);
  }
  char epsbuf[64];
  snprintf(epsbuf, sizeof epsbuf, "%.17g", eps);
  if (!strpbrk(epsbuf, ".eEn")) strcat(epsbuf, ".0");
  const char *sfx = st == LOOM_DTYPE_F32 ? "" : s;
  loom_strbuf_printf(&sb, "alloc Q: Local[(2,), %s]\nQ[0] = 0.0%s\nQ[1] = 0.0%s\n", s, sfx, sfx);
  open_loops(&sb, red, naxes, "r", d, false, true);
  if (!rms) loom_strbuf_printf(&sb, "Q[0] = Q[0] + %s(X[%s])\n", sc, xr);
  loom_strbuf_printf(&sb, "Q[1] = Q[1] + %s(X[%s]) * %s(X[%s])\n", sc, xr, sc, xr);
  close_loops(&sb, naxes);
  loom_strbuf_printf(&sb, "let mean: %s = Q[0] / %s(%s)\n", s, s, count);
  /* var = E[x^2] - mean^2, clamped at 0 against rounding; rms uses E[x^2] directly. */
  loom_strbuf_printf(&sb, "let ms: %s = Q[1] / %s(%s)\n", s, s, count);
  if (rms)
    loom_strbuf_printf(&sb, "let inv: %s = rsqrt(ms + %s%s)\n", s, epsbuf, sfx);
  else
    loom_strbuf_printf(&sb, "let inv: %s = rsqrt(max(ms - mean * mean, 0.0%s) + %s%s)\n", s, sfx, epsbuf, sfx);
  open_loops(&sb, red, naxes, "j", d, false, false);
  if (rms)
    loom_strbuf_printf(&sb, "Y[%s] = %s(%s(X[%s]) * inv * %s(gamma[%s]))\n", xj, tn, sc, xj, sc, gj);
  else
    loom_strbuf_printf(&sb, "Y[%s] = %s((%s(X[%s]) - mean) * inv * %s(gamma[%s]) + %s(beta[%s]))\n", xj, tn, sc, xj, sc, gj,
                       sc, gj);
  close_loops(&sb, naxes);
  close_loops(&sb, first);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_linear(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int rank,
                               bool bias, loom_tp_func **result) {
  if (rank < 1) return LOOM_ERROR(INVALID_ARGUMENT, "linear needs an input of rank >= 1");
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  const char *px[LOOM_TP_GEN_MAX_RANK], *py[LOOM_TP_GEN_MAX_RANK], *pw[2] = {"n", "k"}, *pb[1] = {"n"};
  for (int j = 0; j < rank - 1; j++) px[j] = py[j] = d[j];
  px[rank - 1] = "k";
  py[rank - 1] = "n";
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, px, rank, t);
  loom_strbuf_puts(&sb, ", W: ");
  buffer_type(&sb, pw, 2, t);
  if (bias) {
    loom_strbuf_puts(&sb, ", Bias: ");
    buffer_type(&sb, pb, 1, t);
  }
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, py, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank - 1);
  open_loops(&sb, axes, rank - 1, "i", d, true, false);
  loom_strbuf_printf(&sb, "for jn in 0..n%s {\n", rank == 1 ? " parallel" : "");
  char lead[256] = "";
  for (int j = 0; j < rank - 1; j++) snprintf(lead + strlen(lead), sizeof lead - strlen(lead), "i%d, ", j);
  const char *accn = loom_dtype_name(acc), *tn = loom_dtype_name(t);
  if (acc != t) {
    loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\n", accn);
    if (bias) loom_strbuf_printf(&sb, "S[0] = %s(Bias[jn])\n", accn);
    else loom_strbuf_printf(&sb, "S[0] = %s(0.0)\n", accn);
    loom_strbuf_printf(&sb, "for rk in 0..k reduce {\nS[0] = S[0] + %s(X[%srk]) * %s(W[jn, rk])\n}\n", accn, lead, accn);
    loom_strbuf_printf(&sb, "Y[%sjn] = %s(S[0])\n", lead, tn);
  } else {
    loom_strbuf_printf(&sb, "Y[%sjn] = ", lead);
    if (bias) loom_strbuf_puts(&sb, "Bias[jn]");
    else reduce_init(&sb, LOOM_TP_REDUCE_SUM, t);
    loom_strbuf_printf(&sb, "\nfor rk in 0..k reduce {\nY[%sjn] = Y[%sjn] + X[%srk] * W[jn, rk]\n}\n", lead, lead, lead);
  }
  loom_strbuf_puts(&sb, "}\n");
  close_loops(&sb, rank - 1);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_reshape(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank_in,
                                int rank_out, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank_in));
  LOOM_PROPAGATE(check_rank(rank_out));
  const char *const *d = dims_d();
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK];
  for (int j = 0; j < rank_in; j++) {
    snprintf(an[j], sizeof an[j], "a%d", j);
    pa[j] = an[j];
  }
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, pa, rank_in, t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank_out, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank_out);
  open_loops(&sb, axes, rank_out, "i", d, true, false);
  /* flat = row-major index over Y; X axis m: floormod(floordiv(flat, prod a[m+1..]), a[m]). */
  char flat[512] = "0";
  for (int k = 0; k < rank_out; k++) {
    char term[128] = "";
    snprintf(term, sizeof term, "i%d", k);
    for (int j = k + 1; j < rank_out; j++) snprintf(term + strlen(term), sizeof term - strlen(term), "*d%d", j);
    snprintf(flat + strlen(flat), sizeof flat - strlen(flat), " + %s", term);
  }
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < rank_out; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = X[");
  for (int m = 0; m < rank_in; m++) {
    char stride[128] = "1";
    for (int j = m + 1; j < rank_in; j++) snprintf(stride + strlen(stride), sizeof stride - strlen(stride), "*a%d", j);
    if (m == 0 && rank_in == 1) loom_strbuf_printf(&sb, "%s", flat);
    else if (m == 0) loom_strbuf_printf(&sb, "floordiv(%s, %s)", flat, stride);
    else loom_strbuf_printf(&sb, ", floormod(floordiv(%s, %s), a%d)", flat, stride, m);
  }
  loom_strbuf_puts(&sb, "]\n");
  close_loops(&sb, rank_out);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_permute(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                const int *perm, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  unsigned seen = 0;
  for (int k = 0; k < rank; k++) {
    if (perm[k] < 0 || perm[k] >= rank || (seen >> perm[k] & 1))
      return LOOM_ERROR(INVALID_ARGUMENT, "permutation entry %d (%d) is not a permutation of [0, %d)", k, perm[k], rank);
    seen |= 1u << perm[k];
  }
  const char *const *d = dims_d();
  const char *px[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) px[perm[k]] = d[k];
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, px, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char xi[LOOM_TP_GEN_MAX_RANK][8];
  for (int k = 0; k < rank; k++) snprintf(xi[perm[k]], sizeof xi[0], "i%d", k);
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = X[");
  for (int m = 0; m < rank; m++) loom_strbuf_printf(&sb, "%s%s", m ? ", " : "", xi[m]);
  loom_strbuf_puts(&sb, "]\n");
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_concat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int ninputs, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "concat axis %d is outside [0, %d)", axis, rank);
  if (ninputs < 1 || ninputs > 32) return LOOM_ERROR(INVALID_ARGUMENT, "concat of %d inputs (1..32 supported)", ninputs);
  const char *const *d = dims_d();
  char en[32][8], total[512] = "";
  const char *pdims[LOOM_TP_GEN_MAX_RANK];
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  for (int i = 0; i < ninputs; i++) {
    snprintf(en[i], sizeof en[i], "e%d", i);
    for (int k = 0; k < rank; k++) pdims[k] = k == axis ? en[i] : d[k];
    loom_strbuf_printf(&sb, "X%d: ", i);
    buffer_type(&sb, pdims, rank, t);
    loom_strbuf_puts(&sb, ", ");
    snprintf(total + strlen(total), sizeof total - strlen(total), "%se%d", i ? " + " : "", i);
  }
  for (int k = 0; k < rank; k++) pdims[k] = k == axis ? total : d[k];
  loom_strbuf_puts(&sb, "Y: ");
  buffer_type(&sb, pdims, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  for (int k = 0; k < rank; k++) {
    if (k == axis) loom_strbuf_printf(&sb, "for i%d in 0..(%s) {\n", k, total);
    else loom_strbuf_printf(&sb, "for i%d in 0..%s%s {\n", k, d[k], k == 0 ? " parallel" : "");
  }
  char yidx[256] = "";
  for (int k = 0; k < rank; k++) snprintf(yidx + strlen(yidx), sizeof yidx - strlen(yidx), "%si%d", k ? ", " : "", k);
  char off[512] = "0";
  for (int i = 0; i < ninputs; i++) {
    char xidx[640] = "";
    for (int k = 0; k < rank; k++) {
      size_t n = strlen(xidx);
      if (k == axis) snprintf(xidx + n, sizeof xidx - n, "%si%d - (%s)", k ? ", " : "", k, off);
      else snprintf(xidx + n, sizeof xidx - n, "%si%d", k ? ", " : "", k);
    }
    char upper[512];
    snprintf(upper, sizeof upper, "%s + e%d", off, i);
    if (i + 1 < ninputs) loom_strbuf_printf(&sb, "%sif i%d < %s {\n", i ? "} else " : "", axis, upper);
    else if (i) loom_strbuf_puts(&sb, "} else {\n");
    loom_strbuf_printf(&sb, "Y[%s] = X%d[%s]\n", yidx, i, xidx);
    snprintf(off + strlen(off), sizeof off - strlen(off), " + e%d", i);
  }
  if (ninputs > 1) loom_strbuf_puts(&sb, "}\n");
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

/* Index list "i0, i1, ..." of rank r into buf. */
static void loop_indices(char *buf, size_t cap, int r) {
  buf[0] = '\0';
  for (int k = 0; k < r; k++) snprintf(buf + strlen(buf), cap - strlen(buf), "%si%d", k ? ", " : "", k);
}

loom_status loom_tp_gen_slice(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                              unsigned axes_mask, const int64_t *strides, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    snprintf(an[k], sizeof an[k], "a%d", k);
    pa[k] = an[k];
  }
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, pa, rank, t);
  for (int k = 0; k < rank; k++)
    if (axes_mask >> k & 1) loom_strbuf_printf(&sb, ", b%d: i64", k);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256];
  loop_indices(yi, sizeof yi, rank);
  loom_strbuf_printf(&sb, "Y[%s] = X[", yi);
  for (int k = 0; k < rank; k++) {
    if (axes_mask >> k & 1) loom_strbuf_printf(&sb, "%sb%d + i%d*%lld", k ? ", " : "", k, k, (long long)strides[k]);
    else loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  }
  loom_strbuf_puts(&sb, "]\n");
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_fill(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             const char *value_text, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(Y: ", name);
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256];
  loop_indices(yi, sizeof yi, rank);
  loom_strbuf_printf(&sb, "Y[%s] = %s(%s)\n", yi, loom_dtype_name(t), value_text);
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_tri(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, bool upper,
                            loom_tp_func **result) {
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "tril/triu need rank >= 2, not %d", rank);
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", k: i64, Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256];
  loop_indices(yi, sizeof yi, rank);
  loom_strbuf_printf(&sb, "Y[%s] = select(i%d - i%d %s k, X[%s], 0)\n", yi, rank - 1, rank - 2, upper ? ">=" : "<=", yi);
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_take(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                             loom_dtype index_t, int index_rank, loom_tp_func **result) {
  int R = rank - 1 + index_rank;
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "take axis %d is outside [0, %d)", axis, rank);
  LOOM_PROPAGATE(check_rank(rank));
  LOOM_PROPAGATE(check_rank(R));
  const char *const *d = dims_d();
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK], *pi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    snprintf(an[k], sizeof an[k], "a%d", k);
    pa[k] = k < axis ? d[k] : k > axis ? d[k - 1 + index_rank] : an[k];
  }
  for (int k = 0; k < index_rank; k++) pi[k] = d[axis + k];
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, pa, rank, t);
  loom_strbuf_puts(&sb, ", I: ");
  buffer_type(&sb, pi, index_rank, index_t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, R, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, R);
  open_loops(&sb, axes, R, "i", d, true, false);
  char ii[256] = "", yi[256], xi[512] = "";
  for (int k = 0; k < index_rank; k++) snprintf(ii + strlen(ii), sizeof ii - strlen(ii), "%si%d", k ? ", " : "", axis + k);
  loop_indices(yi, sizeof yi, R);
  loom_strbuf_printf(&sb, "let t: i64 = i64(I[%s])\n", index_rank ? ii : "");
  for (int k = 0; k < rank; k++) {
    size_t n = strlen(xi);
    if (k < axis) snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k);
    else if (k > axis) snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k - 1 + index_rank);
    else snprintf(xi + n, sizeof xi - n, "%sselect(t < 0, t + a%d, t)", k ? ", " : "", k);
  }
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", yi, xi);
  close_loops(&sb, R);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_argext(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool is_max, bool keepdims, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "axis %d is outside [0, %d)", axis, rank);
  const char *const *d = dims_d();
  const char *po[LOOM_TP_GEN_MAX_RANK];
  int orank = 0;
  char oi[256] = "", xr[256] = "";
  for (int k = 0; k < rank; k++) {
    if (k == axis && !keepdims) continue;
    po[orank] = k == axis ? "1" : d[k];
    char tok[8] = "0";
    if (k != axis) snprintf(tok, sizeof tok, "i%d", k);
    snprintf(oi + strlen(oi), sizeof oi - strlen(oi), "%s%s", orank ? ", " : "", tok);
    orank++;
  }
  for (int k = 0; k < rank; k++) snprintf(xr + strlen(xr), sizeof xr - strlen(xr), "%s%s%d", k ? ", " : "", k == axis ? "r" : "i", k);
  int keep[LOOM_TP_GEN_MAX_RANK], nk = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) keep[nk++] = k;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  if (orank == 0) {
    const char *one[1] = {"1"};
    buffer_type(&sb, one, 1, LOOM_DTYPE_I64);
    snprintf(oi, sizeof oi, "0");
  } else {
    buffer_type(&sb, po, orank, LOOM_DTYPE_I64);
  }
  loom_strbuf_puts(&sb, ") {\n");
  open_loops(&sb, keep, nk, "i", d, true, false);
  /* The first extreme: replace only on a strictly better value. */
  loom_strbuf_printf(&sb, "alloc best: Local[(1,), %s]\nbest[0] = ", loom_dtype_name(t));
  reduce_init(&sb, is_max ? LOOM_TP_REDUCE_MAX : LOOM_TP_REDUCE_MIN, t);
  loom_strbuf_printf(&sb, "\nY[%s] = 0\n", oi);
  loom_strbuf_printf(&sb, "for r%d in 0..%s reduce {\n", axis, d[axis]);
  loom_strbuf_printf(&sb, "if X[%s] %s best[0] {\nbest[0] = X[%s]\nY[%s] = r%d\n}\n}\n", xr, is_max ? ">" : "<", xr, oi, axis);
  close_loops(&sb, nk);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_cumsum(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool exclusive, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "cumsum axis %d is outside [0, %d)", axis, rank);
  const char *const *d = dims_d();
  int keep[LOOM_TP_GEN_MAX_RANK], nk = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) keep[nk++] = k;
  char xj[256] = "";
  for (int k = 0; k < rank; k++) snprintf(xj + strlen(xj), sizeof xj - strlen(xj), "%s%s%d", k ? ", " : "", k == axis ? "j" : "i", k);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  open_loops(&sb, keep, nk, "i", d, true, false);
  loom_strbuf_printf(&sb, "alloc acc: Local[(1,), %s]\n", loom_dtype_name(t));
  loom_strbuf_printf(&sb, "for j%d in 0..%s {\n", axis, d[axis]);
  if (exclusive) loom_strbuf_printf(&sb, "Y[%s] = acc[0]\nacc[0] = acc[0] + X[%s]\n", xj, xj);
  else loom_strbuf_printf(&sb, "acc[0] = acc[0] + X[%s]\nY[%s] = acc[0]\n", xj, xj);
  loom_strbuf_puts(&sb, "}\n");
  close_loops(&sb, nk);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

/* "X: Buffer[(a0, a1, ...), t]" with dims named a<k>. */
static void buffer_a(loom_strbuf *sb, const char *buf, int rank, loom_dtype t) {
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    snprintf(an[k], sizeof an[k], "a%d", k);
    pa[k] = an[k];
  }
  loom_strbuf_printf(sb, "%s: ", buf);
  buffer_type(sb, pa, rank, t);
}

loom_status loom_tp_gen_pad(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                            const char *value_text, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  buffer_a(&sb, "X", rank, t);
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, ", p%d: i64", k);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256], xi[512] = "", cond[1024] = "";
  loop_indices(yi, sizeof yi, rank);
  for (int k = 0; k < rank; k++) {
    snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%si%d - p%d", k ? ", " : "", k, k);
    snprintf(cond + strlen(cond), sizeof cond - strlen(cond), "%si%d >= p%d && i%d - p%d < a%d", k ? " && " : "", k, k, k,
             k, k);
  }
  /* An if, not a select: compiled code must never load outside X. */
  if (rank) loom_strbuf_printf(&sb, "if %s {\nY[%s] = X[%s]\n} else {\nY[%s] = %s(%s)\n}\n", cond, yi, xi, yi,
                               loom_dtype_name(t), value_text);
  else loom_strbuf_puts(&sb, "Y[] = X[]\n");
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_tile(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  buffer_a(&sb, "X", rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256], xi[512] = "";
  loop_indices(yi, sizeof yi, rank);
  for (int k = 0; k < rank; k++) snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%sfloormod(i%d, a%d)", k ? ", " : "", k, k);
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", yi, xi);
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_repeat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int64_t repeats, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (axis < 0 || axis >= rank || repeats < 1) return LOOM_ERROR(INVALID_ARGUMENT, "repeat: bad axis or repeats");
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  buffer_a(&sb, "X", rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256], xi[512] = "";
  loop_indices(yi, sizeof yi, rank);
  for (int k = 0; k < rank; k++) {
    size_t n = strlen(xi);
    if (k == axis) snprintf(xi + n, sizeof xi - n, "%sfloordiv(i%d, %lld)", k ? ", " : "", k, (long long)repeats);
    else snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k);
  }
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", yi, xi);
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_gather_elements(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                        int axis, loom_dtype index_t, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "gather_elements axis %d is outside [0, %d)", axis, rank);
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  buffer_a(&sb, "X", rank, t);
  loom_strbuf_puts(&sb, ", I: ");
  buffer_type(&sb, d, rank, index_t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256], xi[512] = "";
  loop_indices(yi, sizeof yi, rank);
  for (int k = 0; k < rank; k++) {
    size_t n = strlen(xi);
    if (k == axis) snprintf(xi + n, sizeof xi - n, "%sselect(t < 0, t + a%d, t)", k ? ", " : "", k);
    else snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k);
  }
  loom_strbuf_printf(&sb, "let t: i64 = i64(I[%s])\nY[%s] = X[%s]\n", yi, yi, xi);
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_one_hot(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype index_t, int index_rank,
                                loom_dtype t, const char *on_text, const char *off_text, loom_tp_func **result) {
  int R = index_rank + 1;
  LOOM_PROPAGATE(check_rank(R));
  const char *const *d = dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(I: ", name);
  buffer_type(&sb, d, index_rank, index_t);
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, R, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, R);
  open_loops(&sb, axes, R, "i", d, true, false);
  char ii[256], yi[256];
  loop_indices(ii, sizeof ii, index_rank);
  loop_indices(yi, sizeof yi, R);
  const char *tn = loom_dtype_name(t);
  loom_strbuf_printf(&sb, "let t: i64 = i64(I[%s])\n", ii);
  loom_strbuf_printf(&sb, "Y[%s] = select(select(t < 0, t + %s, t) == i%d, %s(%s), %s(%s))\n", yi, d[R - 1], R - 1, tn,
                     on_text, tn, off_text);
  close_loops(&sb, R);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_arange(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_func **result) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(start: i64, step: i64, Y: Buffer[(d0,), %s]) {\n", name, loom_dtype_name(t));
  loom_strbuf_printf(&sb, "for i0 in 0..d0 parallel {\nY[i0] = %s(start + i0*step)\n}\n}\n", loom_dtype_name(t));
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_conv2d(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                               const loom_tp_conv2d *p, bool bias, loom_tp_func **result) {
  if (p->groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "conv2d: groups must be >= 1");
  const char *tn = loom_dtype_name(t), *an = loom_dtype_name(acc);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(n, c, h, w), %s], W: Buffer[(o, cg, kh, kw), %s], ", name, tn, tn);
  if (bias) loom_strbuf_printf(&sb, "Bias: Buffer[(o,), %s], ", tn);
  loom_strbuf_printf(&sb, "Y: Buffer[(n, o, oh, ow), %s]) {\n", tn);
  loom_strbuf_puts(&sb, "for i0 in 0..n parallel {\nfor i1 in 0..o {\nfor i2 in 0..oh {\nfor i3 in 0..ow {\n");
  loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\n", an);
  if (bias) loom_strbuf_printf(&sb, "S[0] = %s(Bias[i1])\n", an);
  char yh[128], yw[128];
  snprintf(yh, sizeof yh, "i2*%lld - %lld + rh*%lld", (long long)p->stride[0], (long long)p->pad[0], (long long)p->dilation[0]);
  snprintf(yw, sizeof yw, "i3*%lld - %lld + rw*%lld", (long long)p->stride[1], (long long)p->pad[1], (long long)p->dilation[1]);
  loom_strbuf_puts(&sb, "for rc in 0..cg reduce {\nfor rh in 0..kh reduce {\nfor rw in 0..kw reduce {\n");
  loom_strbuf_printf(&sb, "if %s >= 0 && %s < h && %s >= 0 && %s < w {\n", yh, yh, yw, yw);
  loom_strbuf_printf(&sb, "S[0] = S[0] + %s(X[i0, floordiv(i1, floordiv(o, %lld))*cg + rc, %s, %s]) * %s(W[i1, rc, rh, rw])\n",
                     an, (long long)p->groups, yh, yw, an);
  loom_strbuf_puts(&sb, "}\n}\n}\n}\n");
  loom_strbuf_printf(&sb, "Y[i0, i1, i2, i3] = %s(S[0])\n", tn);
  loom_strbuf_puts(&sb, "}\n}\n}\n}\n}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_pool2d(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv2d *p,
                               bool is_max, loom_tp_func **result) {
  const char *tn = loom_dtype_name(t);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(n, c, h, w), %s], Y: Buffer[(n, c, oh, ow), %s]) {\n", name, tn, tn);
  loom_strbuf_puts(&sb, "for i0 in 0..n parallel {\nfor i1 in 0..c {\nfor i2 in 0..oh {\nfor i3 in 0..ow {\n");
  loom_strbuf_printf(&sb, "alloc S: Local[(2,), %s]\n", tn);
  if (is_max) {
    loom_strbuf_puts(&sb, "S[0] = ");
    reduce_init(&sb, LOOM_TP_REDUCE_MAX, t);
    loom_strbuf_putc(&sb, '\n');
  }
  char yh[128], yw[128];
  snprintf(yh, sizeof yh, "i2*%lld - %lld + rh", (long long)p->stride[0], (long long)p->pad[0]);
  snprintf(yw, sizeof yw, "i3*%lld - %lld + rw", (long long)p->stride[1], (long long)p->pad[1]);
  loom_strbuf_printf(&sb, "for rh in 0..%lld reduce {\nfor rw in 0..%lld reduce {\n", (long long)p->kernel[0],
                     (long long)p->kernel[1]);
  loom_strbuf_printf(&sb, "if %s >= 0 && %s < h && %s >= 0 && %s < w {\n", yh, yh, yw, yw);
  if (is_max) loom_strbuf_printf(&sb, "S[0] = max(S[0], X[i0, i1, %s, %s])\n", yh, yw);
  else loom_strbuf_printf(&sb, "S[0] = S[0] + X[i0, i1, %s, %s]\nS[1] = S[1] + %s(1)\n", yh, yw, tn);
  loom_strbuf_puts(&sb, "}\n}\n}\n");
  if (is_max) loom_strbuf_puts(&sb, "Y[i0, i1, i2, i3] = S[0]\n");
  else loom_strbuf_puts(&sb, "Y[i0, i1, i2, i3] = S[0] / S[1]\n");
  loom_strbuf_puts(&sb, "}\n}\n}\n}\n}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_batch_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                   double eps, loom_tp_func **result) {
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "batch_norm needs rank >= 2");
  LOOM_PROPAGATE(check_rank(rank));
  const char *const *d = dims_d();
  const char *tn = loom_dtype_name(t), *one[1] = {"d1"};
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  buffer_type(&sb, d, rank, t);
  static const char *const names[4] = {"gamma", "beta", "mean", "var"};
  for (int i = 0; i < 4; i++) {
    loom_strbuf_printf(&sb, ", %s: ", names[i]);
    buffer_type(&sb, one, 1, t);
  }
  loom_strbuf_puts(&sb, ", Y: ");
  buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  all_axes(axes, rank);
  open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256], epsbuf[64];
  loop_indices(yi, sizeof yi, rank);
  snprintf(epsbuf, sizeof epsbuf, "%.17g", eps);
  if (!strpbrk(epsbuf, ".eEn")) strcat(epsbuf, ".0");
  loom_strbuf_printf(&sb, "Y[%s] = (X[%s] - mean[i1]) * rsqrt(var[i1] + %s(%s)) * gamma[i1] + beta[i1]\n", yi, yi, tn, epsbuf);
  close_loops(&sb, rank);
  loom_strbuf_puts(&sb, "}\n");
  return finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_attention(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const char *scale_text,
                                  bool causal, int mask_rank, const loom_tp_bcast *mask_modes, loom_dtype mask_t,
                                  loom_tp_func **result) {
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "attention of %s is not supported", loom_dtype_name(t));
  if (mask_rank > 4) return LOOM_ERROR(INVALID_ARGUMENT, "attention mask of rank %d", mask_rank);
  const char *tn = loom_dtype_name(t), *sn = t == LOOM_DTYPE_F64 ? "f64" : "f32";
  /* The (b, h, s, t) axes are d0..d3 and the score loop variable is i3, so the mask's
   * broadcast load (bcast_input) indexes them directly. */
  char mdims[4][12], mload[512];
  if (mask_rank >= 0) bcast_input("m", mask_rank, 4, mask_modes, mdims, mload, sizeof mload, "Mk");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(Q: Buffer[(d0, d1, d2, dq), %s], K: Buffer[(d0, hk, d3, dq), %s], "
                          "V: Buffer[(d0, hk, d3, dv), %s], ", name, tn, tn, tn);
  if (mask_rank >= 0) {
    const char *pm[4];
    for (int k = 0; k < mask_rank; k++) pm[k] = mdims[k];
    loom_strbuf_puts(&sb, "Mk: ");
    buffer_type(&sb, pm, mask_rank, mask_t);
    loom_strbuf_puts(&sb, ", ");
  }
  loom_strbuf_printf(&sb, "Y: Buffer[(d0, d1, d2, dv), %s]) {\n", tn);
  loom_strbuf_puts(&sb, "for i0 in 0..d0 parallel {\nfor i1 in 0..d1 {\nfor i2 in 0..d2 {\n");
  loom_strbuf_printf(&sb, "alloc P: Local[(d3,), %s]\nalloc R: Local[(2,), %s]\nR[0] = -inf%s\n", sn, sn,
                     t == LOOM_DTYPE_F64 ? "f64" : "");
  const char *kv = "floordiv(i1, floordiv(d1, hk))";
  loom_strbuf_puts(&sb, "for i3 in 0..d3 {\n");
  loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\n", sn);
  loom_strbuf_printf(&sb, "for r in 0..dq reduce {\nS[0] = S[0] + %s(Q[i0, i1, i2, r]) * %s(K[i0, %s, i3, r])\n}\n", sn, sn, kv);
  if (scale_text) loom_strbuf_printf(&sb, "let sc: %s = S[0] * %s(%s)\n", sn, sn, scale_text);
  else loom_strbuf_printf(&sb, "let sc: %s = S[0] * rsqrt(%s(dq))\n", sn, sn);
  const char *cur = "sc";
  if (mask_rank >= 0) {
    if (mask_t == LOOM_DTYPE_BOOL) loom_strbuf_printf(&sb, "let sm: %s = select(%s, sc, -inf%s)\n", sn, mload, t == LOOM_DTYPE_F64 ? "f64" : "");
    else loom_strbuf_printf(&sb, "let sm: %s = sc + %s(%s)\n", sn, sn, mload);
    cur = "sm";
  }
  if (causal) {
    loom_strbuf_printf(&sb, "let sk: %s = select(i3 > i2 + (d3 - d2), -inf%s, %s)\n", sn, t == LOOM_DTYPE_F64 ? "f64" : "", cur);
    cur = "sk";
  }
  loom_strbuf_printf(&sb, "P[i3] = %s\nR[0] = max(R[0], %s)\n}\n", cur, cur);
  loom_strbuf_printf(&sb, "for j in 0..d3 {\nP[j] = select(R[0] == -inf%s, 0.0, exp(P[j] - R[0]))\nR[1] = R[1] + P[j]\n}\n",
                     t == LOOM_DTYPE_F64 ? "f64" : "");
  loom_strbuf_puts(&sb, "for e in 0..dv {\n");
  loom_strbuf_printf(&sb, "alloc A: Local[(1,), %s]\n", sn);
  loom_strbuf_printf(&sb, "for j2 in 0..d3 reduce {\nA[0] = A[0] + select(R[1] > 0.0, P[j2] / R[1], 0.0) * %s(V[i0, %s, j2, e])\n}\n",
                     sn, kv);
  loom_strbuf_printf(&sb, "Y[i0, i1, i2, e] = %s(A[0])\n}\n", t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F64 ? "" : tn);
  loom_strbuf_puts(&sb, "}\n}\n}\n}\n");
  return finish(a, cx, &sb, result);
}
