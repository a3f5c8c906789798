/* fuzz_ops_cases2.c — fuzz-ops case generators, part 2: resize / grid_sample, the shape ops
 * (concat, split, slices in attribute and run-time form, permute, reshape, expand / squeeze /
 * flatten, broadcast_to, pad, tile / repeat), indexing (take, gather / scatter elements and
 * nd, one_hot), cumsum / cumprod, topk, tril / triu, creation, nonzero / unique, det, dft;
 * and the family table (what `--list` prints and `--op` matches). */
#include <string.h>

#include "driver/fuzz_ops_cases.h"

/* Integer values for an index/bounds operand. */
static fz_param *values_param(fz_case *c, const char *name, loom_dtype dt, int n, const int64_t *v) {
  fz_dim d = fz_lit(n);
  fz_param *p = fz_param_add(c, name, dt, 1, &d);
  p->fill = FZ_FILL_VALUES;
  p->nvals = n;
  for (int i = 0; i < n && i < FZ_MAX_VALUES; i++) p->vals[i] = (double)v[i];
  return p;
}

static loom_dtype index_dtype(fz_gen *g) { return fz_flag(g, 50) ? LOOM_DTYPE_I32 : LOOM_DTYPE_I64; }

/* A data dtype for the movement ops: floats, integers or bool. */
static loom_dtype data_dtype(fz_gen *g, fz_case *c) {
  int k = fz_pick(g, 6);
  return k == 4 ? fz_int_dtype(g, true) : k == 5 ? LOOM_DTYPE_BOOL : fz_float_dtype(g, c, true);
}

/* ---- resize, grid_sample ------------------------------------------------------------------- */

bool fz_gen_resize2d(fz_gen *g, fz_case *c) {
  c->op = "resize2d";
  fz_dim x[4];
  fz_shape(g, "d", 4, 1, x);
  fz_param_add(c, "x", fz_float_dtype(g, c, false), 4, x);
  int64_t h = fz_size(g, 1, 40), w = fz_size(g, 1, 40);
  fz_call(c, "resize2d(x, size=[%lld, %lld]%s)", (long long)h, (long long)w, fz_flag(g, 50) ? ", method=\"linear\"" : "");
  c->atol = 1e-5;
  return true;
}

bool fz_gen_resize(fz_gen *g, fz_case *c) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const coords[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"};
  static const char *const nmodes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  static const double scales[] = {1, 2, 0.5, 3, 1.5};
  c->op = "resize";
  int rank = (int)fz_int(g, 1, 4);
  fz_dim x[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 1, x);
  int mode = fz_pick(g, 3);
  loom_dtype dt = mode == 0 && fz_flag(g, 20) ? fz_int_dtype(g, false) : fz_float_dtype(g, c, false);
  fz_param_add(c, "x", dt, rank, x);
  fz_dim sd = fz_lit(rank);
  fz_param *s = fz_param_add(c, "s", LOOM_DTYPE_F32, 1, &sd);
  s->fill = FZ_FILL_VALUES;
  s->nvals = rank;
  char size[256] = "";
  for (int i = 0; i < rank; i++) {
    int k = fz_pick(g, 5);
    s->vals[i] = scales[k];
    int64_t v = (int64_t)((double)x[i].v * scales[k]);
    const char *t = x[i].t;
    char e[48];
    if (g->is_static) snprintf(e, sizeof e, "%lld", (long long)v);
    else if (k == 0) snprintf(e, sizeof e, "%s", t);
    else if (k == 1 || k == 3) snprintf(e, sizeof e, "%d*%s", k == 1 ? 2 : 3, t);
    else if (k == 2) snprintf(e, sizeof e, "floordiv(%s, 2)", t);
    else snprintf(e, sizeof e, "floordiv(3*%s, 2)", t);
    fz_cat(size, sizeof size, "%s%s", i ? ", " : "", e);
    if (v == 0) return false;
  }
  char a[320] = "";
  fz_cat(a, sizeof a, ", size=[%s], mode=\"%s\", coord=\"%s\"", size, modes[mode], coords[fz_pick(g, 5)]);
  if (mode == 0) fz_cat(a, sizeof a, ", nearest_mode=\"%s\"", nmodes[fz_pick(g, 4)]);
  if (mode == 2 && fz_flag(g, 40)) fz_cat(a, sizeof a, ", cubic_coeff_a=%g", fz_real(g, -1, -0.25));
  if (mode == 2 && fz_flag(g, 30)) fz_cat(a, sizeof a, ", exclude_outside=true");
  if (mode && fz_flag(g, 25)) fz_cat(a, sizeof a, ", antialias=true");
  c->atol = 1e-5;
  fz_call(c, "resize(x, s%s)", a);
  return true;
}

bool fz_gen_grid_sample(fz_gen *g, fz_case *c) {
  static const char *const modes[] = {"linear", "nearest", "cubic"};
  static const char *const pads[] = {"zeros", "border", "reflection"};
  c->op = "grid_sample";
  int n = (int)fz_int(g, 2, 3);
  fz_dim x[5] = {fz_sym(g, "b", fz_size(g, 1, 2)), fz_sym(g, "c", fz_size(g, 1, 4))};
  fz_dim gr[5] = {x[0]};
  for (int i = 0; i < n; i++) {
    char a[8], b[8];
    snprintf(a, sizeof a, "i%d", i);
    snprintf(b, sizeof b, "o%d", i);
    x[2 + i] = fz_sym(g, a, fz_size(g, 1, n == 3 ? 6 : 17));
    gr[1 + i] = fz_sym(g, b, fz_size(g, 0, n == 3 ? 5 : 13));
  }
  gr[n + 1] = fz_lit(n);
  loom_dtype dt = fz_float_dtype(g, c, false);
  fz_param_add(c, "x", dt, n + 2, x);
  fz_param *p = fz_param_add(c, "g", dt, n + 2, gr);
  p->lo = -1.3, p->hi = 1.3;
  c->atol = 1e-5, c->rtol = 1e-5;
  fz_call(c, "grid_sample(x, g, mode=\"%s\", padding_mode=\"%s\", align_corners=%s)", modes[fz_pick(g, n == 3 ? 2 : 3)], pads[fz_pick(g, 3)],
          fz_flag(g, 50) ? "true" : "false");
  return true;
}

/* ---- shape ops ----------------------------------------------------------------------------- */

bool fz_gen_concat(fz_gen *g, fz_case *c) {
  c->op = "concat";
  int rank = (int)fz_int(g, 1, 4), n = (int)fz_int(g, 1, 4);
  int axis = (int)fz_int(g, -rank, rank - 1), a = axis < 0 ? axis + rank : axis;
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  loom_dtype dt = data_dtype(g, c);
  char args[64] = "";
  for (int k = 0; k < n; k++) {
    char nm[8], sym[8];
    snprintf(nm, sizeof nm, "x%d", k);
    snprintf(sym, sizeof sym, "a%d", k);
    fz_dim dk[FZ_MAX_RANK];
    memcpy(dk, d, sizeof dk);
    dk[a] = fz_sym(g, sym, fz_size(g, 0, fz_axis_cap(rank)));
    fz_param_add(c, nm, dt, rank, dk);
    fz_cat(args, sizeof args, "%s%s", k ? ", " : "", nm);
  }
  fz_call(c, "concat(%s, axis=%d)", args, axis);
  return true;
}

bool fz_gen_split(fz_gen *g, fz_case *c) {
  c->op = "split";
  int rank = (int)fz_int(g, 1, 4), axis = (int)fz_int(g, -rank, rank - 1), a = axis < 0 ? axis + rank : axis;
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  if (fz_flag(g, 50)) {
    int64_t s = fz_int(g, 1, 5), q = fz_size(g, 0, 13);
    d[a] = fz_expr(g, s * q, "%lld*q", (long long)s);
    fz_param_add(c, "x", data_dtype(g, c), rank, d);
    fz_call(c, "split(x, axis=%d, sections=%lld)", axis, (long long)s);
    return true;
  }
  int n = (int)fz_int(g, 1, 5);
  int64_t sizes[5], total = 0;
  for (int k = 0; k < n; k++) total += sizes[k] = fz_size(g, 0, 13);
  d[a] = fz_lit(total);
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  char at[96] = "";
  fz_attr_list(at, sizeof at, "sizes", n, sizes);
  fz_call(c, "split(x, axis=%d%s)", axis, at);
  return true;
}

bool fz_gen_strided_slice(fz_gen *g, fz_case *c) {
  c->op = "strided_slice";
  int rank = (int)fz_int(g, 1, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  int64_t axes[FZ_MAX_RANK], b[FZ_MAX_RANK], e[FZ_MAX_RANK], s[FZ_MAX_RANK];
  int n = 0;
  bool strided = false;
  for (int i = 0; i < rank; i++) {
    if (!fz_flag(g, 60)) continue;
    axes[n] = i;
    b[n] = fz_int(g, 0, d[i].v);
    e[n] = fz_flag(g, 15) ? d[i].v + fz_int(g, 0, 5) : fz_int(g, b[n], d[i].v);
    s[n] = fz_flag(g, 50) ? 1 : fz_int(g, 1, 4);
    strided |= s[n] != 1;
    n++;
  }
  if (!n) axes[n] = 0, b[n] = 0, e[n] = d[0].v, s[n] = 1, n = 1;
  char a[256] = "";
  fz_attr_list(a, sizeof a, "axes", n, axes);
  fz_attr_list(a, sizeof a, "begin", n, b);
  fz_attr_list(a, sizeof a, "end", n, e);
  if (strided) fz_attr_list(a, sizeof a, "strides", n, s);
  fz_call(c, "strided_slice(x%s)", a);
  return true;
}

/* ONNX Slice: run-time starts / ends / axes / steps, negative values, clamping. */
bool fz_gen_slice_rt(fz_gen *g, fz_case *c) {
  c->op = "strided_slice";
  int rank = (int)fz_int(g, 1, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  int n = (int)fz_int(g, 1, rank);
  int64_t st[FZ_MAX_RANK], en[FZ_MAX_RANK], ax[FZ_MAX_RANK], sp[FZ_MAX_RANK];
  bool used[FZ_MAX_RANK] = {false};
  for (int i = 0; i < n; i++) {
    int a = (int)fz_int(g, 0, rank - 1);
    while (used[a]) a = (a + 1) % rank;
    used[a] = true;
    ax[i] = fz_flag(g, 30) ? a - rank : a;
    int64_t dv = d[a].v;
    st[i] = fz_int(g, -dv - 2, dv + 2);
    en[i] = fz_flag(g, 10) ? (fz_flag(g, 50) ? INT64_MAX : INT64_MIN) : fz_int(g, -dv - 2, dv + 2);
    sp[i] = fz_int(g, 1, 3) * (fz_flag(g, 40) ? -1 : 1);
  }
  loom_dtype it = index_dtype(g);
  if (it == LOOM_DTYPE_I32)
    for (int i = 0; i < n; i++) en[i] = en[i] == INT64_MAX ? INT32_MAX : en[i] == INT64_MIN ? INT32_MIN : en[i];
  values_param(c, "s", it, n, st);
  values_param(c, "e", it, n, en);
  bool with_axes = fz_flag(g, 70), with_steps = with_axes && fz_flag(g, 70);
  if (!with_axes) {
    for (int i = 0; i < n; i++) ax[i] = i, sp[i] = 1;
  }
  if (with_axes) values_param(c, "a", it, n, ax);
  if (with_steps) values_param(c, "p", it, n, sp);
  fz_call(c, "strided_slice(x, s, e%s%s)", with_axes ? ", a" : "", with_steps ? ", p" : "");
  return true;
}

bool fz_gen_permute_dims(fz_gen *g, fz_case *c) {
  c->op = "permute_dims";
  int rank = (int)fz_int(g, 0, 5);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  if (fz_flag(g, 20)) {
    fz_call(c, "permute_dims(x)");
    return true;
  }
  int64_t p[FZ_MAX_RANK];
  for (int i = 0; i < rank; i++) p[i] = i;
  for (int i = rank - 1; i > 0; i--) {
    int j = (int)fz_int(g, 0, i);
    int64_t t = p[i];
    p[i] = p[j], p[j] = t;
  }
  char a[96] = "";
  fz_attr_list(a, sizeof a, "axes", rank, p);
  fz_call(c, "permute_dims(x%s)", a);
  return true;
}

/* Input dims are symbols or F*symbol; the target regroups their factors, with 1s and a -1. */
bool fz_gen_reshape(fz_gen *g, fz_case *c) {
  c->op = "reshape";
  int rank = (int)fz_int(g, 0, 4), nt = 0;
  fz_dim d[FZ_MAX_RANK];
  char tok[12][40];
  int64_t tv[12];
  for (int i = 0; i < rank; i++) {
    char s[8];
    snprintf(s, sizeof s, "d%d", i);
    int64_t f = fz_flag(g, 30) ? fz_int(g, 2, 4) : 1, v = fz_size(g, 0, fz_axis_cap(rank) / f + 1);
    if (f > 1) {
      d[i] = fz_expr(g, f * v, "%lld*%s", (long long)f, s);
      snprintf(tok[nt], sizeof tok[nt], "%lld", (long long)f), tv[nt++] = f;
    } else {
      d[i] = fz_sym(g, s, v);
    }
    snprintf(tok[nt], sizeof tok[nt], "%s", g->is_static ? fz_lit(v).t : s), tv[nt++] = v;
  }
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  char a[320] = "";
  int nout = 0, minus = fz_flag(g, 30) ? (int)fz_int(g, 0, nt) : -1;
  for (int i = 0; i < nt || (nt == 0 && nout == 0);) {
    if (fz_flag(g, 15)) {
      fz_cat(a, sizeof a, "%s1", nout++ ? ", " : "");
      if (!nt) break;
      continue;
    }
    if (!nt) break;
    int k = (int)fz_int(g, 1, nt - i);
    char e[160] = "";
    for (int j = 0; j < k; j++) fz_cat(e, sizeof e, "%s%s", j ? "*" : "", tok[i + j]);
    fz_cat(a, sizeof a, "%s%s", nout ? ", " : "", nout == minus ? "-1" : e);
    nout++;
    i += k;
  }
  if (nout > 6) return false;
  fz_call(c, "reshape(x, shape=[%s])", a);
  (void)tv;
  return true;
}

bool fz_gen_expand_squeeze(fz_gen *g, fz_case *c) {
  int kind = fz_pick(g, 3), rank = (int)fz_int(g, kind == 2 ? 1 : 0, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  char a[96] = "";
  int64_t ax[FZ_MAX_RANK];
  int n = 0;
  if (kind == 0) {
    c->op = "expand_dims";
    fz_param_add(c, "x", data_dtype(g, c), rank, d);
    int out = rank + (int)fz_int(g, 1, 2);
    for (int i = 0; i < out && n < out - rank; i++)
      if (fz_flag(g, 50) || out - i == out - rank - n) ax[n++] = fz_flag(g, 30) ? i - out : i;
    fz_attr_list(a, sizeof a, "axes", n, ax);
    fz_call(c, "expand_dims(x%s)", a);
  } else if (kind == 1) {
    c->op = "squeeze";
    for (int i = 0; i < rank; i++)
      if (fz_flag(g, 40)) d[i] = fz_lit(1), ax[n++] = fz_flag(g, 30) ? i - rank : i;
    fz_param_add(c, "x", data_dtype(g, c), rank, d);
    if (n && fz_flag(g, 80)) fz_attr_list(a, sizeof a, "axes", n, ax);
    fz_call(c, "squeeze(x%s)", a);
  } else {
    c->op = "flatten";
    fz_param_add(c, "x", data_dtype(g, c), rank, d);
    fz_call(c, "flatten(x, axis=%lld)", (long long)fz_int(g, 0, rank));
  }
  return true;
}

bool fz_gen_broadcast_to(fz_gen *g, fz_case *c) {
  c->op = "broadcast_to";
  int rank = (int)fz_int(g, 0, 4), xr = (int)fz_int(g, 0, rank);
  fz_dim d[FZ_MAX_RANK], x[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  char a[256] = "";
  for (int i = 0; i < rank; i++) {
    int xa = i - (rank - xr);
    bool one = xa >= 0 && fz_flag(g, 40);
    if (xa >= 0) x[xa] = one ? fz_lit(1) : d[i];
    /* a target dim not carried by x is written as a literal (its symbol is not defined) */
    fz_cat(a, sizeof a, "%s%s", i ? ", " : "", xa < 0 || one ? fz_lit(d[i].v).t : d[i].t);
  }
  fz_param_add(c, "x", data_dtype(g, c), xr, x);
  fz_call(c, "broadcast_to(x, shape=[%s])", a);
  return true;
}

bool fz_gen_pad(fz_gen *g, fz_case *c) {
  c->op = "pad";
  int rank = (int)fz_int(g, 1, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  loom_dtype dt = fz_flag(g, 20) ? fz_int_dtype(g, false) : fz_float_dtype(g, c, true);
  fz_param_add(c, "x", dt, rank, d);
  int64_t p[2 * FZ_MAX_RANK];
  bool rt = fz_flag(g, 40);
  for (int i = 0; i < rank; i++) {
    p[i] = rt && fz_flag(g, 30) ? -fz_int(g, 0, d[i].v / 2) : fz_int(g, 0, 9);
    p[rank + i] = rt && fz_flag(g, 30) ? -fz_int(g, 0, d[i].v / 2) : fz_int(g, 0, 9);
  }
  double value = fz_flag(g, 50) ? 0 : fz_real(g, -4, 4);
  if (loom_dtype_is_int(dt)) value = (double)(int64_t)value;
  if (rt) {
    values_param(c, "p", LOOM_DTYPE_I64, 2 * rank, p);
    fz_call(c, "pad(x, p)");
    return true;
  }
  char a[256] = "";
  fz_attr_list(a, sizeof a, "pads", 2 * rank, p);
  fz_call(c, "pad(x%s, value=%g)", a, value);
  return true;
}

bool fz_gen_tile_repeat(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 1, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  char a[96] = "";
  if (fz_flag(g, 50)) {
    c->op = "tile";
    int64_t r[FZ_MAX_RANK];
    for (int i = 0; i < rank; i++) r[i] = fz_int(g, 0, 3);
    fz_attr_list(a, sizeof a, "repeats", rank, r);
    fz_call(c, "tile(x%s)", a);
  } else {
    c->op = "repeat";
    fz_call(c, "repeat(x, repeats=%lld, axis=%lld)", (long long)fz_int(g, 0, 4), (long long)fz_int(g, -rank, rank - 1));
  }
  return true;
}

/* ---- indexing ------------------------------------------------------------------------------ */

bool fz_gen_take(fz_gen *g, fz_case *c) {
  c->op = "take";
  int rank = (int)fz_int(g, 1, 3), axis = (int)fz_int(g, -rank, rank - 1), a = axis < 0 ? axis + rank : axis;
  fz_dim d[FZ_MAX_RANK], id[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 1, d);
  int ir = (int)fz_int(g, 0, 2);
  fz_shape(g, "i", ir, 0, id);
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  fz_param *ix = fz_param_add(c, "i", index_dtype(g), ir, id);
  ix->lo = fz_flag(g, 40) ? (double)-d[a].v : 0, ix->hi = (double)d[a].v - 1;
  fz_call(c, "take(x, i, axis=%d)", axis);
  return true;
}

/* x and an index tensor of the same rank: the index's other axes are x's, its `axis` is m. */
static int elements_shapes(fz_gen *g, fz_case *c, bool updates) {
  int rank = (int)fz_int(g, 1, 3), axis = (int)fz_int(g, -rank, rank - 1), a = axis < 0 ? axis + rank : axis;
  fz_dim d[FZ_MAX_RANK], id[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 1, d);
  memcpy(id, d, sizeof id);
  id[a] = fz_sym(g, "m", fz_size(g, 0, 17));
  loom_dtype dt = updates ? (fz_flag(g, 30) ? fz_int_dtype(g, false) : fz_float_dtype(g, c, false)) : data_dtype(g, c);
  fz_param_add(c, "x", dt, rank, d);
  fz_param *ix = fz_param_add(c, "i", index_dtype(g), rank, id);
  ix->lo = fz_flag(g, 40) ? (double)-d[a].v : 0, ix->hi = (double)d[a].v - 1;
  if (updates) fz_param_add(c, "u", dt, rank, id);
  return axis;
}

bool fz_gen_gather_elements(fz_gen *g, fz_case *c) {
  c->op = "gather_elements";
  int axis = elements_shapes(g, c, false);
  fz_call(c, "gather_elements(x, i, axis=%d)", axis);
  return true;
}

bool fz_gen_scatter_elements(fz_gen *g, fz_case *c) {
  static const char *const red[] = {"none", "add", "mul", "min", "max"};
  c->op = "scatter_elements";
  int axis = elements_shapes(g, c, true);
  fz_call(c, "scatter_elements(x, i, u, axis=%d, reduction=\"%s\")", axis, red[fz_pick(g, 5)]);
  c->atol = 1e-5;
  return true;
}

/* x (B, d0..), idx (B, k.., m) with values in [-min d, min d). */
static void nd_shapes(fz_gen *g, fz_case *c, bool updates, int *batch) {
  int bd = fz_flag(g, 30) ? 1 : 0, r = (int)fz_int(g, 1, 3), m = (int)fz_int(g, 1, r), kr = (int)fz_int(g, 0, 2);
  fz_dim x[FZ_MAX_RANK], id[FZ_MAX_RANK], up[FZ_MAX_RANK];
  int nx = 0, ni = 0, nu = 0;
  if (bd) x[nx++] = id[ni++] = up[nu++] = fz_sym(g, "b", fz_size(g, 1, 3));
  int64_t mind = 1 << 20;
  for (int i = 0; i < r; i++) {
    char s[8];
    snprintf(s, sizeof s, "d%d", i);
    x[nx++] = fz_sym(g, s, fz_size(g, 1, 9));
    if (i < m && x[nx - 1].v < mind) mind = x[nx - 1].v;
  }
  for (int i = 0; i < kr; i++) {
    char s[8];
    snprintf(s, sizeof s, "k%d", i);
    id[ni++] = up[nu++] = fz_sym(g, s, fz_size(g, 0, 7));
  }
  id[ni++] = fz_lit(m);
  for (int i = m; i < r; i++) up[nu++] = x[bd + i];
  loom_dtype dt = updates ? (fz_flag(g, 30) ? fz_int_dtype(g, false) : fz_float_dtype(g, c, false)) : data_dtype(g, c);
  fz_param_add(c, "x", dt, nx, x);
  fz_param *ix = fz_param_add(c, "i", LOOM_DTYPE_I64, ni, id);
  ix->lo = fz_flag(g, 30) ? (double)-mind : 0, ix->hi = (double)mind - 1;
  if (updates) fz_param_add(c, "u", dt, nu, up);
  *batch = bd;
}

bool fz_gen_gather_nd(fz_gen *g, fz_case *c) {
  c->op = "gather_nd";
  int bd;
  nd_shapes(g, c, false, &bd);
  fz_call(c, "gather_nd(x, i%s)", bd ? ", batch_dims=1" : "");
  return true;
}

bool fz_gen_scatter_nd(fz_gen *g, fz_case *c) {
  static const char *const red[] = {"none", "add", "mul", "min", "max"};
  c->op = "scatter_nd";
  int bd;
  nd_shapes(g, c, true, &bd);
  if (bd) return false; /* scatter_nd has no batch_dims */
  fz_call(c, "scatter_nd(x, i, u, reduction=\"%s\")", red[fz_pick(g, 5)]);
  c->atol = 1e-5;
  return true;
}

bool fz_gen_one_hot(fz_gen *g, fz_case *c) {
  c->op = "one_hot";
  int rank = (int)fz_int(g, 0, 3);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  int64_t depth = fz_size(g, 1, 20);
  fz_param *ix = fz_param_add(c, "i", index_dtype(g), rank, d);
  ix->lo = (double)(-depth - 1), ix->hi = (double)depth;
  static const char *const dts[] = {"f32", "i64", "i32", "f64"};
  fz_call(c, "one_hot(i, depth=[%lld], on_value=%g, off_value=%g, dtype=%s)", (long long)depth, fz_real(g, -3, 3), fz_real(g, -3, 3),
          dts[fz_pick(g, 4)]);
  return true;
}

bool fz_gen_cumsum(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 1, 3);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = fz_flag(g, 30) ? "cumprod" : "cumsum";
  loom_dtype dt = fz_flag(g, 30) ? fz_int_dtype(g, false) : fz_float_dtype(g, c, false);
  fz_param *x = fz_param_add(c, "x", dt, rank, d);
  if (!strcmp(c->op, "cumprod")) {
    if (loom_dtype_is_int(dt)) x->lo = -1, x->hi = 1;
    else x->lo = 0.5, x->hi = 1.5;
  }
  char a[96] = "";
  fz_cat(a, sizeof a, ", axis=%lld", (long long)fz_int(g, -rank, rank - 1));
  if (fz_flag(g, 40)) fz_cat(a, sizeof a, ", exclusive=true");
  if (fz_flag(g, 40)) fz_cat(a, sizeof a, ", reverse=true");
  c->atol = 1e-5 * (double)(fz_axis_cap(rank) + 1), c->rtol = 1e-4;
  fz_call(c, "%s(x%s)", c->op, a);
  return true;
}

bool fz_gen_topk(fz_gen *g, fz_case *c) {
  c->op = "topk";
  int rank = (int)fz_int(g, 1, 3), axis = (int)fz_int(g, -rank, rank - 1), a = axis < 0 ? axis + rank : axis;
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  fz_param_add(c, "x", fz_flag(g, 30) ? fz_int_dtype(g, false) : fz_float_dtype(g, c, false), rank, d);
  fz_call(c, "topk(x, k=[%lld], axis=%d, largest=%s)", (long long)fz_int(g, 0, d[a].v), axis, fz_flag(g, 70) ? "true" : "false");
  return true;
}

bool fz_gen_tril_triu(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 2, 4);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = fz_flag(g, 50) ? "triu" : "tril";
  fz_param_add(c, "x", data_dtype(g, c), rank, d);
  int64_t m = d[rank - 1].v > d[rank - 2].v ? d[rank - 1].v : d[rank - 2].v;
  if (fz_flag(g, 20)) fz_call(c, "%s(x)", c->op);
  else fz_call(c, "%s(x, k=[%lld])", c->op, (long long)fz_int(g, -m - 1, m + 1));
  return true;
}

/* ---- creation, data-dependent, misc ---------------------------------------------------------- */

bool fz_gen_arange(fz_gen *g, fz_case *c) {
  static const char *const dts[] = {"i64", "i32", "f32", "f64"};
  static const loom_dtype rdts[] = {LOOM_DTYPE_I64, LOOM_DTYPE_I32, LOOM_DTYPE_F32, LOOM_DTYPE_F64};
  c->op = "arange";
  int k = fz_pick(g, 4);
  if (fz_flag(g, 40)) { /* ONNX Range: run-time scalars start, limit, delta (any sign) */
    double v[3] = {(double)fz_int(g, -20, 20), (double)fz_int(g, -40, 40), (double)(fz_int(g, 1, 5) * (fz_flag(g, 30) ? -1 : 1))};
    if (k >= 2 && fz_flag(g, 50)) v[0] += 0.5, v[2] /= 4; /* fractional steps */
    static const char *const nm[] = {"s", "l", "d"};
    for (int i = 0; i < 3; i++) {
      fz_param *p = fz_param_add(c, nm[i], rdts[k], 0, NULL);
      p->fill = FZ_FILL_VALUES;
      p->nvals = 1;
      p->vals[0] = v[i];
    }
    fz_call(c, "arange(s, l, d)");
    return true;
  }
  int64_t n = fz_size(g, 0, 300);
  fz_dim d = fz_sym(g, "n", n);
  fz_param_add(c, "x", LOOM_DTYPE_F32, 1, &d);
  int64_t start = fz_int(g, -20, 20), step = fz_int(g, 1, 5);
  fz_call(c, "arange(start=[%lld], end=[%s], step=[%lld], dtype=%s)", (long long)start, d.t, (long long)step, dts[k]);
  return true;
}

bool fz_gen_full(fz_gen *g, fz_case *c) {
  static const char *const ops[] = {"zeros", "ones", "full"};
  static const char *const dts[] = {"f32", "i64", "i32", "f64", "bool", "u8", "f16"};
  int rank = (int)fz_int(g, 0, 3), kind = fz_pick(g, 3);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  c->op = ops[kind];
  fz_param_add(c, "x", LOOM_DTYPE_F32, rank, d);
  char s[160] = "";
  for (int i = 0; i < rank; i++) fz_cat(s, sizeof s, "%s%s", i ? ", " : "", d[i].t);
  const char *dt = dts[fz_pick(g, 7)];
  if (kind == 2) fz_call(c, "full(shape=[%s], dtype=%s, value=%g)", s, dt, strcmp(dt, "bool") ? fz_real(g, -4, 4) : 1.0);
  else fz_call(c, "%s(shape=[%s], dtype=%s)", c->op, s, dt);
  return true;
}

bool fz_gen_nonzero_unique(fz_gen *g, fz_case *c) {
  int rank = (int)fz_int(g, 1, 3);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "d", rank, 0, d);
  bool nz = fz_flag(g, 50);
  c->op = nz ? "nonzero" : "unique";
  loom_dtype dt = fz_flag(g, 50) ? fz_int_dtype(g, false) : nz && fz_flag(g, 30) ? LOOM_DTYPE_BOOL : fz_float_dtype(g, c, false);
  fz_param *x = fz_param_add(c, "x", dt, rank, d);
  if (loom_dtype_is_int(dt)) x->lo = -2, x->hi = 2;
  c->grid = true;
  if (nz) {
    fz_call(c, "nonzero(x)");
    return true;
  }
  char a[96] = "";
  if (fz_flag(g, 40)) fz_cat(a, sizeof a, ", axis=%lld", (long long)fz_int(g, -rank, rank - 1));
  if (fz_flag(g, 40)) fz_cat(a, sizeof a, ", sorted=false");
  if (fz_flag(g, 50)) fz_cat(a, sizeof a, ", indices=true");
  fz_call(c, "unique(x%s)", a);
  return true;
}

bool fz_gen_det(fz_gen *g, fz_case *c) {
  c->op = "det";
  int nb = (int)fz_int(g, 0, 2);
  fz_dim d[FZ_MAX_RANK];
  fz_shape(g, "b", nb, 0, d);
  int64_t n = fz_int(g, 0, 7);
  d[nb] = d[nb + 1] = fz_sym(g, "n", n);
  fz_param_add(c, "x", fz_float_dtype(g, c, false), nb + 2, d);
  c->rtol = 1e-3, c->atol = 1e-4;
  fz_call(c, "det(x)");
  return true;
}

bool fz_gen_dft(fz_gen *g, fz_case *c) {
  c->op = "dft";
  int64_t n = fz_size(g, 1, 40);
  bool real = fz_flag(g, 50);
  fz_dim d[3] = {fz_sym(g, "b", fz_size(g, 1, 3)), fz_sym(g, "n", n), fz_lit(real ? 1 : 2)};
  fz_param_add(c, "x", fz_float_dtype(g, c, false), 3, d);
  char a[96] = "";
  bool inverse = fz_flag(g, 30);
  if (inverse) fz_cat(a, sizeof a, ", inverse=true");
  if (real && !inverse && fz_flag(g, 40)) fz_cat(a, sizeof a, ", onesided=true");
  if (fz_flag(g, 30)) fz_cat(a, sizeof a, ", length=[%lld]", (long long)fz_size(g, 1, 40));
  c->rtol = 1e-4, c->atol = 1e-5 * (double)(n + 41);
  fz_call(c, "dft(x, axis=1%s)", a);
  return true;
}

/* ---- the family table ------------------------------------------------------------------------ */

const fz_family loom_fz_families[] = {
    {"unary", "neg abs exp log sqrt rsqrt tanh sigmoid relu gelu gelu_tanh silu erf sin cos floor ceil round sign asin acos atan bitwise_not not", fz_gen_unary},
    {"binary", "add sub mul div pow mod maximum minimum equal not_equal less less_equal greater greater_equal logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor shift_left shift_right", fz_gen_binary},
    {"where", "where", fz_gen_where},
    {"clip", "clip", fz_gen_clip},
    {"cast", "cast", fz_gen_cast},
    {"bitcast", "bitcast", fz_gen_bitcast},
    {"dropout", "dropout", fz_gen_dropout},
    {"reduce", "sum mean max min prod", fz_gen_reduce},
    {"argminmax", "argmax argmin", fz_gen_argminmax},
    {"softmax", "softmax log_softmax", fz_gen_softmax},
    {"norm", "layer_norm rms_norm group_norm batch_norm", fz_gen_norm},
    {"attention", "attention", fz_gen_attention},
    {"matmul", "matmul", fz_gen_matmul},
    {"linear", "linear", fz_gen_linear},
    {"conv1d", "conv1d", fz_gen_conv1d},
    {"conv2d", "conv2d", fz_gen_conv2d},
    {"conv3d", "conv", fz_gen_conv3d},
    {"conv_transpose", "conv_transpose", fz_gen_conv_transpose},
    {"pool", "max_pool avg_pool lp_pool max_pool_indices", fz_gen_pool},
    {"pool2d", "max_pool2d avg_pool2d global_avg_pool2d", fz_gen_pool2d},
    {"resize2d", "resize2d", fz_gen_resize2d},
    {"resize", "resize", fz_gen_resize},
    {"grid_sample", "grid_sample", fz_gen_grid_sample},
    {"concat", "concat", fz_gen_concat},
    {"split", "split", fz_gen_split},
    {"strided_slice", "strided_slice", fz_gen_strided_slice},
    {"slice_rt", "strided_slice", fz_gen_slice_rt},
    {"permute_dims", "permute_dims", fz_gen_permute_dims},
    {"reshape", "reshape", fz_gen_reshape},
    {"expand_squeeze", "expand_dims squeeze flatten", fz_gen_expand_squeeze},
    {"broadcast_to", "broadcast_to", fz_gen_broadcast_to},
    {"pad", "pad", fz_gen_pad},
    {"tile_repeat", "tile repeat", fz_gen_tile_repeat},
    {"take", "take", fz_gen_take},
    {"gather_elements", "gather_elements", fz_gen_gather_elements},
    {"scatter_elements", "scatter_elements", fz_gen_scatter_elements},
    {"gather_nd", "gather_nd", fz_gen_gather_nd},
    {"scatter_nd", "scatter_nd", fz_gen_scatter_nd},
    {"one_hot", "one_hot", fz_gen_one_hot},
    {"cumsum", "cumsum cumprod", fz_gen_cumsum},
    {"topk", "topk", fz_gen_topk},
    {"tril_triu", "tril triu", fz_gen_tril_triu},
    {"arange", "arange", fz_gen_arange},
    {"full", "zeros ones full", fz_gen_full},
    {"nonzero_unique", "nonzero unique", fz_gen_nonzero_unique},
    {"det", "det", fz_gen_det},
    {"dft", "dft", fz_gen_dft},
};
const int loom_fz_nfamilies = (int)(sizeof loom_fz_families / sizeof *loom_fz_families);
