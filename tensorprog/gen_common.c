/* gen_common.c — what every program generator shares: writing buffer types and loop nests,
 * broadcasting loads, reduction identities, substituting operands into expression templates,
 * and parsing the finished text (see tp_gen.h for why generators write text). */
#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

/* Parses the generated text; a failure is a bug in the generator. */
loom_status loom_tpg_finish(loom_arena *a, loom_sym_ctx *cx, loom_strbuf *sb, loom_tp_func **result) {
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
void loom_tpg_substitute(loom_strbuf *sb, const char *expr, const char *const *names, const char *const *repl, int n) {
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

void loom_tpg_open_x(loom_strbuf *sb, const char *name, int rank, loom_dtype t) {
  loom_strbuf_init(sb, NULL);
  loom_strbuf_printf(sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(sb, loom_tpg_dims_d(), rank, t);
}

void loom_tpg_buffer_type(loom_strbuf *sb, const char *const *dims, int rank, loom_dtype t) {
  loom_strbuf_puts(sb, "Buffer[(");
  for (int d = 0; d < rank; d++) loom_strbuf_printf(sb, "%s%s", d ? ", " : "", dims[d]);
  loom_strbuf_printf(sb, "%s), %s]", rank == 1 ? "," : "", loom_dtype_name(t));
}

/* Opens `for iD in 0..dD [parallel] {` for each listed axis. */
void loom_tpg_open_loops(loom_strbuf *sb, const int *axes, int n, const char *var, const char *const *dims,
                       bool parallel_first, bool reduce) {
  for (int k = 0; k < n; k++)
    loom_strbuf_printf(sb, "for %s%d in 0..%s%s%s {\n", var, axes[k], dims[axes[k]],
                       parallel_first && k == 0 ? " parallel" : "", reduce ? " reduce" : "");
}

void loom_tpg_close_loops(loom_strbuf *sb, int n) {
  for (int k = 0; k < n; k++) loom_strbuf_puts(sb, "}\n");
}

static const char *const dim_names[] = {"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"};
_Static_assert(sizeof dim_names / sizeof dim_names[0] == LOOM_TP_GEN_MAX_RANK, "one dim name per rank");

const char *const *loom_tpg_dims_d(void) { return dim_names; }

loom_status loom_tpg_check_rank(int rank) {
  if (rank < 0 || rank > LOOM_TP_GEN_MAX_RANK)
    return LOOM_ERROR(INVALID_ARGUMENT, "rank %d is outside [0, %d]", rank, LOOM_TP_GEN_MAX_RANK);
  return LOOM_OK;
}

void loom_tpg_all_axes(int *axes, int n) {
  for (int d = 0; d < n; d++) axes[d] = d;
}

/* The dims of one broadcast input ("d3", "1" or "a3") and its load text. */
void loom_tpg_bcast_input(const char *prefix, int r, int R, const loom_tp_bcast *m, char dims[][12], char *load,
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

/* The identity element of a reduction as a literal of dtype t. */
void loom_tpg_reduce_init(loom_strbuf *sb, loom_tp_reduce_op op, loom_dtype t) {
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

/* Index text for rank dims with axis `axis` replaced by `var`. */
void loom_tpg_index_with(char *out, size_t cap, int rank, int axis, const char *var) {
  out[0] = '\0';
  for (int k = 0; k < rank; k++) {
    if (k == axis) snprintf(out + strlen(out), cap - strlen(out), "%s%s", k ? ", " : "", var);
    else snprintf(out + strlen(out), cap - strlen(out), "%si%d", k ? ", " : "", k);
  }
}

/* The accumulation dtype for statistics of t. */
loom_dtype loom_tpg_stat_type(loom_dtype t) { return t == LOOM_DTYPE_F64 ? LOOM_DTYPE_F64 : LOOM_DTYPE_F32; }

/* Index list "i0, i1, ..." of rank r into buf. */
void loom_tpg_loop_indices(char *buf, size_t cap, int r) {
  buf[0] = '\0';
  for (int k = 0; k < r; k++) snprintf(buf + strlen(buf), cap - strlen(buf), "%si%d", k ? ", " : "", k);
}

/* "X: Buffer[(a0, a1, ...), t]" with dims named a<k>. */
void loom_tpg_buffer_a(loom_strbuf *sb, const char *buf, int rank, loom_dtype t) {
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    snprintf(an[k], sizeof an[k], "a%d", k);
    pa[k] = an[k];
  }
  loom_strbuf_printf(sb, "%s: ", buf);
  loom_tpg_buffer_type(sb, pa, rank, t);
}

void loom_tpg_open_output_nest(loom_strbuf *sb, int rank, loom_dtype t, char *yi, size_t yi_cap) {
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf_puts(sb, "Y: ");
  loom_tpg_buffer_type(sb, d, rank, t);
  loom_strbuf_puts(sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(sb, axes, rank, "i", d, true, false);
  loom_tpg_loop_indices(yi, yi_cap, rank);
}

void loom_tpg_close_program(loom_strbuf *sb, int nloops) {
  loom_tpg_close_loops(sb, nloops);
  loom_strbuf_puts(sb, "}\n");
}

/* ---- builder helpers ---- */

void loom_tpg_b_dims_d(loom_tpb *b, int rank, const loom_sym_expr **dims) {
  for (int k = 0; k < rank; k++) dims[k] = loom_tpb_shape_sym(b, dim_names[k]);
}

void loom_tpg_b_nest(loom_tpb *b, int rank, const loom_sym_expr *const *dims, loom_tp_expr **idx) {
  static const char *const vars[] = {"i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7"};
  _Static_assert(sizeof vars / sizeof vars[0] == LOOM_TP_GEN_MAX_RANK, "one loop name per rank");
  for (int k = 0; k < rank; k++)
    idx[k] = loom_tpb_idx(b, loom_tpb_for(b, vars[k], dims[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
}

loom_tp_buffer *loom_tpg_b_buffer_a(loom_tpb *b, const char *buf, int rank, loom_dtype t, const loom_sym_expr **dims) {
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) d[k] = loom_tpb_shape_sym(b, loom_tpg_var('a', k));
  if (dims)
    for (int k = 0; k < rank; k++) dims[k] = d[k];
  return loom_tpb_buffer(b, buf, t, rank, d);
}

loom_tp_buffer *loom_tpg_b_output_nest(loom_tpb *b, int rank, loom_dtype t, const loom_sym_expr **iv, loom_tp_expr **yi) {
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_dims_d(b, rank, d);
  loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", t, rank, d);
  loom_tpg_b_nest(b, rank, d, yi);
  if (iv)
    for (int k = 0; k < rank; k++) iv[k] = yi[k] ? yi[k]->u.sym : NULL;
  return Y;
}

loom_tp_expr *loom_tpg_b_index_let(loom_tpb *b, const char *name, const loom_tp_buffer *I, loom_tp_expr *const *idx) {
  return loom_tpb_let(b, name, loom_tp_cast(b->a, LOOM_DTYPE_I64, loom_tpb_load(b, I, idx)));
}

loom_tp_expr *loom_tpg_b_wrap_index(loom_tpb *b, const loom_tp_expr *t, const loom_sym_expr *extent) {
  loom_tp_expr *neg = loom_tp_op2(b->a, LOOM_TP_OP_LT, loom_tpb_dup(b, t), loom_tpb_cidx(b, 0));
  loom_tp_expr *wrapped = loom_tp_op2(b->a, LOOM_TP_OP_ADD, loom_tpb_dup(b, t), loom_tpb_idx(b, extent));
  return loom_tp_select(b->a, neg, wrapped, loom_tpb_dup(b, t));
}

void loom_tpg_b_bcast_dims(loom_tpb *b, const char *prefix, int r, int R, const loom_tp_bcast *m,
                           const loom_sym_expr **dims) {
  for (int j = 0; j < r; j++) {
    int d = j + R - r; /* aligned output axis */
    char nm[16];
    switch (m[j]) {
      case LOOM_TP_BCAST_FULL: dims[j] = loom_tpb_shape_sym(b, dim_names[d]); break;
      case LOOM_TP_BCAST_ONE: dims[j] = loom_tpb_dim(b, "1"); break;
      case LOOM_TP_BCAST_GUARD:
        snprintf(nm, sizeof nm, "%s%d", prefix, d);
        dims[j] = loom_tpb_shape_sym(b, nm);
        break;
    }
  }
}

loom_tp_buffer *loom_tpg_b_bcast_buffer(loom_tpb *b, const char *buf, const char *prefix, int r, int R,
                                        const loom_tp_bcast *m, loom_dtype t) {
  const loom_sym_expr *dims[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_bcast_dims(b, prefix, r, R, m, dims);
  return loom_tpb_buffer(b, buf, t, r, dims);
}

/* FULL: i<d>; ONE: 0; GUARD: select(<dim> == 1, 0, i<d>). */
void loom_tpg_b_bcast_index(loom_tpb *b, const loom_sym_expr *const *dims, int r, int R, const loom_tp_bcast *m,
                            loom_tp_expr *const *oi, loom_tp_expr **idx) {
  for (int j = 0; j < r; j++) {
    int d = j + R - r;
    switch (m[j]) {
      case LOOM_TP_BCAST_FULL: idx[j] = loom_tp_expr_copy(b->a, oi[d]); break;
      case LOOM_TP_BCAST_ONE: idx[j] = loom_tpb_idx(b, loom_sym_const(b->cx, 0)); break;
      case LOOM_TP_BCAST_GUARD: {
        loom_tp_expr *eq = loom_tp_op2(b->a, LOOM_TP_OP_EQ, loom_tpb_idx(b, dims[j]), loom_tpb_idx(b, loom_sym_const(b->cx, 1)));
        idx[j] = loom_tp_select(b->a, eq, loom_tpb_idx(b, loom_sym_const(b->cx, 0)), loom_tp_expr_copy(b->a, oi[d]));
        break;
      }
    }
  }
}

loom_tp_expr *loom_tpg_b_bcast_load(loom_tpb *b, const loom_tp_buffer *buf, int R, const loom_tp_bcast *m,
                                    loom_tp_expr *const *oi) {
  if (!buf) return NULL;
  loom_tp_expr *idx[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_b_bcast_index(b, buf->dims, buf->ndim, R, m, oi, idx);
  return loom_tpb_load(b, buf, idx);
}

loom_tp_expr *loom_tpg_b_reduce_init(loom_tpb *b, loom_tp_reduce_op op, loom_dtype t) {
  bool fl = loom_dtype_is_float(t);
  switch (op) {
    case LOOM_TP_REDUCE_SUM: case LOOM_TP_REDUCE_MEAN:
      return fl ? loom_tp_const_f(b->a, t, 0.0) : loom_tpb_lit_i(b, t, 0);
    case LOOM_TP_REDUCE_PROD:
      return fl ? loom_tp_const_f(b->a, t, 1.0) : loom_tpb_lit_i(b, t, 1);
    case LOOM_TP_REDUCE_MAX: case LOOM_TP_REDUCE_MIN: {
      bool mx = op == LOOM_TP_REDUCE_MAX;
      if (fl) return loom_tp_const_f(b->a, t, mx ? -INFINITY : INFINITY);
      if (t == LOOM_DTYPE_BOOL) return loom_tp_const_i(b->a, t, !mx);
      unsigned bits = loom_dtype_bits(t);
      bool sgn = loom_dtype_is_signed(t);
      int64_t v;
      if (sgn && mx) v = bits == 64 ? INT64_MIN + 1 : -(INT64_C(1) << (bits - 1)); /* as loom_tpg_reduce_init */
      else if (sgn) v = bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1;
      else if (mx) v = 0;
      else v = bits == 64 ? -1 /* all ones, as the parser reads 18446744073709551615u64 */ : (int64_t)((UINT64_C(1) << bits) - 1);
      return loom_tpb_lit_i(b, t, v);
    }
  }
  return NULL;
}

const char *loom_tpg_var(char var, int k) {
#define N8(c) {c "0", c "1", c "2", c "3", c "4", c "5", c "6", c "7"}
  static const char letters[] = "abcdefijkprstw";
  static const char *const names[][LOOM_TP_GEN_MAX_RANK] = {N8("a"), N8("b"), N8("c"), N8("d"), N8("e"), N8("f"), N8("i"),
                                                            N8("j"), N8("k"), N8("p"), N8("r"), N8("s"), N8("t"), N8("w")};
#undef N8
  _Static_assert(sizeof names / sizeof names[0] == sizeof letters - 1, "one row of names per letter");
  const char *at = strchr(letters, var);
  assert(at && k >= 0 && k < LOOM_TP_GEN_MAX_RANK && "a generator asked for a name it has no row for");
  return names[at - letters][k];
}
