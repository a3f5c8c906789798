/* op_linalg.c — matmul (NumPy semantics: batched, broadcast batch dims, 1-D operands) and
 * linear (x @ w^T + bias), legalized to tensorprog/gen_linalg.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/legalize_internal.h"

static const loom_graph_attr_spec no_attrs[] = {{0}};
/* transpose_b: b is read transposed in its last two axes, (..., m, k) (what simplify makes of
 * matmul(a, permute_dims(b, [.., -1, -2])): no transposition kernel). */
/* packed_b: b is a constant weight laid out panel by panel, (ceil(n / P), k, P): B[r, j] =
 * b[j / P, r, j % P] (graph/pass_pack.c makes it; the CPU matmul rule reads such panels in
 * place instead of packing them on every call). b has no batch axes then.
 * n (packed_b only; default 0: q * P): the true column count when it is not a multiple of P,
 * the last panel's columns >= n zero; (q - 1) * P < n <= q * P. */
static const loom_graph_attr_spec matmul_attrs[] = {{"transpose_b", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                    {"packed_b", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                    {"n", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                    {0}};

/* The columns of a packed operand 1 (q, .., P) of matmul / matmul_integer: the n attribute,
 * which must lie in the last panel ((q - 1) * P, q * P] of constant q and P (the last panel
 * zero-padded past it), or q * P without it. */
static loom_status packed_cols(loom_graph_icx *ic, const loom_sinfo *b, const loom_sym_expr **out) {
  loom_sym_ctx *cx = loom_graph_module_sym(ic->m);
  const loom_graph_attr *na = loom_graph_call_attr(ic->call, "n");
  if (!na || na->i == 0) {
    *out = loom_sym_mul(cx, b->dims[0], b->dims[2]);
    return *out ? LOOM_OK : LOOM_OOM();
  }
  int64_t q, pw;
  if (!b->dims || !loom_sym_is_const(b->dims[0], &q) || !loom_sym_is_const(b->dims[2], &pw))
    return loom_graph_icx_error(ic, "packed_b with n=%lld needs operand 1's panel count and width as constants", (long long)na->i);
  if (na->i <= (q - 1) * pw || na->i > q * pw)
    return loom_graph_icx_error(ic, "packed_b with n=%lld: operand 1 (%lld, k, %lld) holds %lld columns; n must lie in (%lld, %lld]",
                                (long long)na->i, (long long)q, (long long)pw, (long long)(q * pw), (long long)((q - 1) * pw),
                                (long long)(q * pw));
  *out = loom_sym_const(cx, na->i);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* matmul(a, b, packed_b=true[, n=N]): a (..., m, k) or (k); b (q, k, P). Result (..., m, q*P),
 * or (..., m, N) with N in ((q - 1) * P, q * P] (q and P constants then: the last panel padded). */
static loom_status infer_matmul_packed(loom_graph_icx *ic, const loom_sinfo *a, const loom_sinfo *b,
                                       const loom_sinfo **out) {
  if (loom_graph_call_int(ic->call, "transpose_b")) return loom_graph_icx_error(ic, "packed_b and transpose_b exclude each other");
  if (b->ndim != 3) return loom_graph_icx_error(ic, "packed_b needs operand 1 of rank 3 (n / P, k, P), it has rank %d", b->ndim);
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 1, b->dims[1], 0, a->ndim - 1, a->dims[a->ndim - 1]));
  int nd = a->ndim;
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)nd), *n;
  LOOM_PROPAGATE(packed_cols(ic, b, &n));
  if (!d) return LOOM_OOM();
  for (int i = 0; i + 1 < nd; i++) d[i] = a->dims[i];
  d[nd - 1] = n;
  *out = loom_sinfo_tensor(ic->m, a->dtype, nd, d, a->device);
  return LOOM_OK;
}

/* The reference of matmul(a, b, packed_b=true[, n]): every row of a times B[r, j] =
 * b[j / P, r, j % P] for j < n (nn: the n attribute, 0 for q * P; the padding never read). */
static loom_status eval_matmul_packed(const loom_graph_tensor *a, const loom_graph_tensor *b, int64_t nn, loom_graph_value *out) {
  if (b->ndim != 3 || a->ndim < 1 || a->shape[a->ndim - 1] != b->shape[1])
    return LOOM_ERROR(INVALID_ARGUMENT, "matmul: packed_b needs operand 1 of shape (n / P, k, P) with k operand 0's last axis");
  int64_t kk = b->shape[1], pw = b->shape[2], n = b->shape[0] * pw, osh[8];
  if (nn && (nn <= n - pw || nn > n))
    return LOOM_ERROR(INVALID_ARGUMENT, "matmul: packed_b with n=%lld needs n in (%lld, %lld] for operand 1 (%lld, %lld, %lld)",
                      (long long)nn, (long long)(n - pw), (long long)n, (long long)b->shape[0], (long long)kk, (long long)pw);
  if (nn) n = nn;
  for (int i = 0; i + 1 < a->ndim; i++) osh[i] = a->shape[i];
  osh[a->ndim - 1] = n;
  LOOM_PROPAGATE(loom_graph_value_tensor(a->dtype, a->ndim, osh, out));
  size_t rows = 1;
  for (int i = 0; i + 1 < a->ndim; i++) rows *= (size_t)a->shape[i];
  bool ints = loom_dtype_is_int(a->dtype);
  for (size_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      int64_t iacc = 0;
      for (int64_t q = 0; q < kk; q++) {
        size_t pa = i * (size_t)kk + (size_t)q, pb = (size_t)(((j / pw) * kk + q) * pw + j % pw);
        if (ints)
          iacc = (int64_t)((uint64_t)iacc + (uint64_t)loom_graph_tensor_get_i64(a, pa) * (uint64_t)loom_graph_tensor_get_i64(b, pb));
        else
          acc += loom_graph_tensor_get_f64(a, pa) * loom_graph_tensor_get_f64(b, pb);
      }
      if (ints) loom_graph_tensor_set_i64(&out->t, i * (size_t)n + (size_t)j, iacc);
      else loom_graph_tensor_set_f64(&out->t, i * (size_t)n + (size_t)j, acc);
    }
  return LOOM_OK;
}

static loom_status same_dtype(loom_graph_icx *ic, const loom_sinfo *a, const loom_sinfo *b, size_t ib) {
  if (a->dtype != LOOM_DTYPE_UNKNOWN && b->dtype != LOOM_DTYPE_UNKNOWN && a->dtype != b->dtype)
    return loom_graph_icx_error(ic, "operand 0 has dtype %s, operand %zu has dtype %s", loom_dtype_name(a->dtype), ib,
                                loom_dtype_name(b->dtype));
  return LOOM_OK;
}

/* a: (..., n, k) or (k); b: (..., k, m) or (k) (with transpose_b: (..., m, k)). Result:
 * broadcast(batch) + (n) + (m), with the 1-D axes dropped. k must agree (proved, or guarded
 * when unknown). */
static loom_status infer_matmul(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *a, *b;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &a));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &b));
  LOOM_PROPAGATE(same_dtype(ic, a, b, 1));
  if (a->ndim == 0 || b->ndim == 0) return loom_graph_icx_error(ic, "operand %d is 0-d", a->ndim == 0 ? 0 : 1);
  if (loom_graph_call_int(ic->call, "packed_b")) return infer_matmul_packed(ic, a, b, out);
  if (loom_graph_call_int(ic->call, "n"))
    return loom_graph_icx_error(ic, "n=%lld is an attribute of packed_b only", (long long)loom_graph_call_int(ic->call, "n"));
  bool tb = loom_graph_call_int(ic->call, "transpose_b") != 0;
  if (tb && b->ndim < 2) return loom_graph_icx_error(ic, "transpose_b needs operand 1 of rank >= 2 (it has rank %d)", b->ndim);
  int ka = a->ndim - 1, kb = b->ndim == 1 ? 0 : tb ? b->ndim - 1 : b->ndim - 2;
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, kb, b->dims[kb], 0, ka, a->dims[ka]));
  int ba = a->ndim > 2 ? a->ndim - 2 : 0, bb = b->ndim > 2 ? b->ndim - 2 : 0;
  int nb = ba > bb ? ba : bb;
  int nd = nb + (a->ndim > 1) + (b->ndim > 1);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)nd);
  if (!d) return LOOM_OOM();
  LOOM_PROPAGATE(loom_graph_icx_broadcast(ic, 0, ba, a->dims, 1, bb, b->dims, d));
  int k = nb;
  if (a->ndim > 1) d[k++] = a->dims[a->ndim - 2];
  if (b->ndim > 1) d[k++] = b->dims[tb ? b->ndim - 2 : b->ndim - 1];
  *out = loom_sinfo_tensor(ic->m, a->dtype, nd, d, a->device);
  return LOOM_OK;
}

static loom_status eval_matmul(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *a = &args[0].t, *b = &args[1].t;
  if (loom_graph_call_int(ec->call, "packed_b")) return eval_matmul_packed(a, b, loom_graph_call_int(ec->call, "n"), out);
  if (loom_graph_call_int(ec->call, "n")) return LOOM_ERROR(INVALID_ARGUMENT, "matmul: n is an attribute of packed_b only");
  bool tb = loom_graph_call_int(ec->call, "transpose_b") != 0;
  if (tb && b->ndim < 2) return LOOM_ERROR(INVALID_ARGUMENT, "matmul: transpose_b needs operand 1 of rank >= 2");
  /* View both as batched matrices. */
  int64_t ash[8], bsh[8];
  int an = a->ndim, bn = b->ndim;
  memcpy(ash, a->shape, sizeof ash);
  memcpy(bsh, b->shape, sizeof bsh);
  if (an == 1) {
    ash[1] = ash[0];
    ash[0] = 1;
    an = 2;
  }
  if (bn == 1) {
    bsh[1] = 1;
    bn = 2;
  }
  int64_t n = ash[an - 2], kk = ash[an - 1], k2 = bsh[tb ? bn - 1 : bn - 2], m = bsh[tb ? bn - 2 : bn - 1];
  if (kk != k2)
    return LOOM_ERROR(INVALID_ARGUMENT, "matmul: operand 1 axis %d is %lld, operand 0 axis %d is %lld",
                      b->ndim == 1 ? 0 : tb ? b->ndim - 1 : b->ndim - 2, (long long)k2, a->ndim - 1, (long long)kk);
  int ba = an - 2, bb = bn - 2, nb = ba > bb ? ba : bb;
  int64_t bshape[8];
  for (int i = 0; i < nb; i++) {
    int xa = i - (nb - ba), xb = i - (nb - bb);
    int64_t da = xa >= 0 ? ash[xa] : 1, db = xb >= 0 ? bsh[xb] : 1;
    if (da != db && da != 1 && db != 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "matmul: batch axis %d: operand 0 has %lld, operand 1 has %lld", i,
                        (long long)da, (long long)db);
    bshape[i] = da == 1 ? db : da;
  }
  int64_t oshape[8];
  int on = 0;
  for (int i = 0; i < nb; i++) oshape[on++] = bshape[i];
  if (a->ndim > 1) oshape[on++] = n;
  if (b->ndim > 1) oshape[on++] = m;
  LOOM_PROPAGATE(loom_graph_value_tensor(a->dtype, on, oshape, out));
  if (out->t.numel == 0) return LOOM_OK;
  int64_t bidx[8] = {0};
  size_t o = 0;
  bool ints = loom_dtype_is_int(a->dtype);
  double *ad = ints ? NULL : loom_graph_tensor_to_f64(a), *bd = ints ? NULL : loom_graph_tensor_to_f64(b);
  if (!ints && (!ad || !bd)) {
    free(ad);
    free(bd);
    return LOOM_OOM();
  }
  do {
    /* Batch offsets with broadcasting. */
    size_t aoff = 0, boff = 0, as = (size_t)(n * kk), bs = (size_t)(kk * m);
    size_t stride = 1;
    for (int i = ba - 1; i >= 0; i--) {
      int64_t ix = ash[i] == 1 ? 0 : bidx[i + (nb - ba)];
      aoff += (size_t)ix * stride;
      stride *= (size_t)ash[i];
    }
    stride = 1;
    for (int i = bb - 1; i >= 0; i--) {
      int64_t ix = bsh[i] == 1 ? 0 : bidx[i + (nb - bb)];
      boff += (size_t)ix * stride;
      stride *= (size_t)bsh[i];
    }
    aoff *= as;
    boff *= bs;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) {
        double acc = 0;
        int64_t iacc = 0;
        for (int64_t q = 0; q < kk; q++) {
          size_t pa = aoff + (size_t)(i * kk + q), pb = boff + (size_t)(tb ? j * kk + q : q * m + j);
          if (ints)
            iacc = (int64_t)((uint64_t)iacc + (uint64_t)loom_graph_tensor_get_i64(a, pa) * (uint64_t)loom_graph_tensor_get_i64(b, pb));
          else
            acc += ad[pa] * bd[pb];
        }
        if (ints) loom_graph_tensor_set_i64(&out->t, o++, iacc);
        else loom_graph_tensor_set_f64(&out->t, o++, acc);
      }
  } while (nb > 0 && loom_graph_index_next(nb, bshape, bidx));
  free(ad);
  free(bd);
  return LOOM_OK;
}

/* x: (..., in); w: (out, in); bias: (out). Result (..., out). */
static loom_status infer_linear(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *w, *bias = NULL;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &w));
  LOOM_PROPAGATE(same_dtype(ic, x, w, 1));
  if (x->ndim < 1) return loom_graph_icx_error(ic, "operand 0 must have rank >= 1");
  if (w->ndim != 2) return loom_graph_icx_error(ic, "operand 1 (weight) must have rank 2, got %d", w->ndim);
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 1, w->dims[1], 0, x->ndim - 1, x->dims[x->ndim - 1]));
  if (ic->call->u.call.nargs == 3) {
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &bias));
    LOOM_PROPAGATE(same_dtype(ic, x, bias, 2));
    if (bias->ndim != 1) return loom_graph_icx_error(ic, "operand 2 (bias) must have rank 1, got %d", bias->ndim);
    LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, 0, bias->dims[0], 1, 0, w->dims[0]));
  }
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < x->ndim - 1; i++) d[i] = x->dims[i];
  d[x->ndim - 1] = w->dims[0];
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

static loom_status eval_linear(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *w = &args[1].t;
  const loom_graph_tensor *bias = ec->call->u.call.nargs == 3 ? &args[2].t : NULL;
  int64_t in = x->shape[x->ndim - 1], on = w->shape[0];
  if (w->shape[1] != in)
    return LOOM_ERROR(INVALID_ARGUMENT, "linear: operand 1 axis 1 is %lld, operand 0 axis %d is %lld",
                      (long long)w->shape[1], x->ndim - 1, (long long)in);
  if (bias && bias->shape[0] != on)
    return LOOM_ERROR(INVALID_ARGUMENT, "linear: operand 2 axis 0 is %lld, operand 1 axis 0 is %lld",
                      (long long)bias->shape[0], (long long)on);
  int64_t sh[8];
  memcpy(sh, x->shape, sizeof sh);
  sh[x->ndim - 1] = on;
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, out));
  size_t rows = in ? x->numel / (size_t)in : out->t.numel / (size_t)(on ? on : 1);
  double *xd = loom_graph_tensor_to_f64(x), *wd = loom_graph_tensor_to_f64(w);
  if (!xd || !wd) {
    free(xd);
    free(wd);
    return LOOM_OOM();
  }
  for (size_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < on; j++) {
      double acc = bias ? loom_graph_tensor_get_f64(bias, (size_t)j) : 0;
      for (int64_t q = 0; q < in; q++) acc += xd[r * (size_t)in + (size_t)q] * wd[j * in + q];
      loom_graph_tensor_set_f64(&out->t, r * (size_t)on + (size_t)j, acc);
    }
  free(xd);
  free(wd);
  return LOOM_OK;
}

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

typedef struct matmul_params {
  int64_t panel; /* packed_b: b's panel width (no batch modes then); else 0 */
  loom_dtype t, acc;
  int32_t ra, rb;
  int32_t transpose_b;
  int32_t ragged; /* packed_b with n: C's last extent is its own symbol, the last panel padded */
  loom_tp_bcast ma[LOOM_TP_GEN_MAX_RANK], mb[LOOM_TP_GEN_MAX_RANK]; /* the batch axes' modes (0 past them) */
} matmul_params;
LOOM_TP_GEN_PARAMS(matmul_params, 8 + (6 + 2 * LOOM_TP_GEN_MAX_RANK) * 4);

static loom_status gen_matmul(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const matmul_params *p = params;
  loom_arena *ar = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  if (p->panel) return loom_tp_gen_matmul_packed_b(ar, cx, name, p->t, p->acc, p->ra, p->panel, p->ragged != 0, tp);
  if (p->transpose_b) return loom_tp_gen_matmul_transposed_b(ar, cx, name, p->t, p->acc, p->ra, p->ma, p->rb, p->mb, tp);
  return loom_tp_gen_matmul(ar, cx, name, p->t, p->acc, p->ra, p->ma, p->rb, p->mb, tp);
}

static loom_status legal_matmul(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  const loom_sinfo *a, *b;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &a));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &b));
  if (a->dtype != b->dtype) return loom_legal_unsupported(call, "for operands of different dtypes");
  if (loom_graph_call_int(call, "packed_b")) {
    int64_t pw;
    if (b->ndim != 3 || !loom_sym_is_const(b->dims[2], &pw) || pw < 1)
      return loom_legal_unsupported(call, "for a packed operand 1 without a constant panel width");
    loom_dtype acc = a->dtype == LOOM_DTYPE_F16 || a->dtype == LOOM_DTYPE_BF16 ? LOOM_DTYPE_F32 : a->dtype;
    matmul_params p = {.panel = pw, .t = a->dtype, .acc = acc, .ra = a->ndim, .rb = b->ndim,
                       .ragged = loom_graph_call_int(call, "n") != 0};
    char name[256];
    snprintf(name, sizeof name, "matmul_%s_%d_p%lld%s", loom_dtype_name(a->dtype), a->ndim, (long long)pw, p.ragged ? "r" : "");
    return LOOM_LEGAL_PROGRAM(m, name, gen_matmul, p, &r->tp);
  }
  /* a 1-D operand (NumPy's vector forms) contributes no batch axes and no m / n axis */
  int nbatch = out->ndim - (a->ndim >= 2) - (b->ndim >= 2);
  if (out->ndim < 0 || !out->dims || nbatch < 0) return loom_legal_unsupported(call, "for a result of unknown shape");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  loom_dtype acc = a->dtype == LOOM_DTYPE_F16 || a->dtype == LOOM_DTYPE_BF16 ? LOOM_DTYPE_F32 : a->dtype;
  matmul_params p = {.t = a->dtype, .acc = acc, .ra = a->ndim, .rb = b->ndim};
  /* Batch modes against the output's batch dims. */
  loom_sinfo ab = *a, bb = *b;
  ab.ndim = a->ndim >= 2 ? a->ndim - 2 : 0;
  bb.ndim = b->ndim >= 2 ? b->ndim - 2 : 0;
  char key[64] = "";
  loom_legal_bcast_modes(cx, &ab, out->dims, nbatch, p.ma, key, sizeof key);
  strcat(key, "_");
  loom_legal_bcast_modes(cx, &bb, out->dims, nbatch, p.mb, key, sizeof key);
  p.transpose_b = loom_graph_call_int(call, "transpose_b") != 0;
  char name[256];
  snprintf(name, sizeof name, "matmul_%s_%d_%d%s_%s", loom_dtype_name(a->dtype), a->ndim, b->ndim, p.transpose_b ? "t" : "", key);
  return LOOM_LEGAL_PROGRAM(m, name, gen_matmul, p, &r->tp);
}

typedef struct linear_params {
  loom_dtype t, acc;
  int32_t rank, bias;
} linear_params;
LOOM_TP_GEN_PARAMS(linear_params, 4 * 4);

static loom_status gen_linear(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const linear_params *p = params;
  return loom_tp_gen_linear(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->acc, p->rank, p->bias, tp);
}

static loom_status legal_linear(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x, *w, *bias = NULL;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &w));
  if (call->u.call.nargs > 2) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &bias));
  if (x->ndim < 1 || w->ndim != 2 || (bias && bias->ndim != 1)) return loom_legal_unsupported(call, "for these ranks");
  if (x->dtype != w->dtype || (bias && bias->dtype != x->dtype)) return loom_legal_unsupported(call, "for mixed dtypes");
  loom_dtype acc = x->dtype == LOOM_DTYPE_F16 || x->dtype == LOOM_DTYPE_BF16 ? LOOM_DTYPE_F32 : x->dtype;
  char name[256];
  snprintf(name, sizeof name, "linear_%s_r%d%s", loom_dtype_name(x->dtype), x->ndim, bias ? "_bias" : "");
  linear_params p = {.t = x->dtype, .acc = acc, .rank = x->ndim, .bias = bias != NULL};
  return LOOM_LEGAL_PROGRAM(m, name, gen_linear, p, &r->tp);
}

/* ---- matmul_integer ------------------------------------------------------------------------------ */

/* A zero point: a tensor of one element (every dim 1). */
static bool one_element(const loom_sinfo *s) {
  if (s->kind != LOOM_SINFO_TENSOR || s->ndim < 0 || (s->ndim && !s->dims)) return false;
  for (int d = 0; d < s->ndim; d++) {
    int64_t v;
    if (!loom_sym_is_const(s->dims[d], &v) || v != 1) return false;
  }
  return true;
}

static bool int8(loom_dtype t) { return t == LOOM_DTYPE_U8 || t == LOOM_DTYPE_I8; }

/* packed_b: operand 1 is the centred b as i16 pair words along k, laid out in column panels:
 * an i32 (n / P, ceil(k / 2), P) tensor whose [j / P, t, j % P] holds b[2t, j] - zb in its low
 * half and b[2t + 1, j] - zb (0 past k) in its high half; no zb operand (graph/pass_pack.c
 * makes it of a constant weight). With quads as well: operand 1 holds byte quads, (n / P,
 * ceil(k / 4), P) words whose byte i is b[4t + i, j] - zb as a signed byte (0 past k), and operand
 * 3 the column sums of the centred b, i32 (n) (pass_pack.c, on a machine with AVX512-VNNI, or
 * with AVX2 and pairs). pairs (quads only): every two bytes 2i, 2i + 1 of a word keep the sum of
 * their products with any two unsigned bytes within i16 (pass_pack.c checks it of the weight), so
 * that AVX2's vpmaddubsw, whose pair sums saturate, computes them exactly. */
/* n (packed_b only; default 0: q * P): the true column count when the last panel is zero-padded,
 * (q - 1) * P < n <= q * P, as matmul's. */
static const loom_graph_attr_spec matmul_integer_attrs[] = {{"packed_b", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                            {"quads", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                            {"pairs", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                            {"n", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                            {0}};

/* matmul_integer(a, bp, za, packed_b=true): a (..., m, k), bp (q, ceil(k/2), P). */
static loom_status infer_matmul_integer_packed(loom_graph_icx *ic, const loom_sinfo *a, const loom_sinfo **out) {
  const loom_sinfo *bp, *za;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &bp));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &za));
  bool quads = loom_graph_call_int(ic->call, "quads") != 0;
  int per = quads ? 4 : 2;
  if (loom_graph_call_int(ic->call, "pairs") && !quads) return loom_graph_icx_error(ic, "pairs=true needs quads=true");
  if (ic->call->u.call.nargs != (quads ? 4u : 3u))
    return loom_graph_icx_error(ic, quads ? "packed_b with quads takes 4 operands (a, packed b, a's zero point, column sums)"
                                          : "packed_b takes 3 operands (a, packed b, a's zero point)");
  if (bp->dtype != LOOM_DTYPE_I32 || bp->ndim != 3)
    return loom_graph_icx_error(ic, "packed_b needs operand 1 as i32 words (n / P, ceil(k / %d), P)", per);
  if (za->dtype != a->dtype || !one_element(za))
    return loom_graph_icx_error(ic, "operand 2 (a zero point) must be a %s tensor of one element", loom_dtype_name(a->dtype));
  loom_sym_ctx *cx = loom_graph_module_sym(ic->m);
  const loom_sym_expr *kh =
      loom_sym_floordiv(cx, loom_sym_add(cx, a->dims[a->ndim - 1], loom_sym_const(cx, per - 1)), loom_sym_const(cx, per));
  if (!kh) return LOOM_OOM();
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 1, bp->dims[1], 0, a->ndim - 1, kh));
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)a->ndim), *n;
  LOOM_PROPAGATE(packed_cols(ic, bp, &n));
  if (!d) return LOOM_OOM();
  if (quads) {
    const loom_sinfo *cs;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 3, true, &cs));
    if (cs->dtype != LOOM_DTYPE_I32 || cs->ndim != 1) return loom_graph_icx_error(ic, "operand 3 (column sums) must be i32 of rank 1");
    LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 3, 0, cs->dims[0], 1, 0, n));
  }
  for (int i = 0; i + 1 < a->ndim; i++) d[i] = a->dims[i];
  d[a->ndim - 1] = n;
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_I32, a->ndim, d, a->device);
  return LOOM_OK;
}

/* a: (..., m, k), b: (k, n), both u8 or i8; za, zb: one element of a's / b's dtype. Result (..., m, n) i32. */
static loom_status infer_matmul_integer(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *a, *b, *za, *zb;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &a));
  if (!int8(a->dtype) || a->ndim < 2)
    return loom_graph_icx_error(ic, "operand 0 must be u8 or i8 of rank >= 2 (it is %s of rank %d)", loom_dtype_name(a->dtype), a->ndim);
  if (loom_graph_call_int(ic->call, "packed_b")) return infer_matmul_integer_packed(ic, a, out);
  if (loom_graph_call_int(ic->call, "n"))
    return loom_graph_icx_error(ic, "n=%lld is an attribute of packed_b only", (long long)loom_graph_call_int(ic->call, "n"));
  if (ic->call->u.call.nargs != 4) return loom_graph_icx_error(ic, "takes 4 operands (a, b, a's zero point, b's zero point)");
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &b));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &za));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 3, true, &zb));
  if (!int8(b->dtype) || b->ndim != 2)
    return loom_graph_icx_error(ic, "operand 1 must be u8 or i8 of rank 2 (it is %s of rank %d)", loom_dtype_name(b->dtype), b->ndim);
  for (int i = 0; i < 2; i++) {
    const loom_sinfo *z = i ? zb : za, *q = i ? b : a;
    if (z->dtype != q->dtype || !one_element(z))
      return loom_graph_icx_error(ic, "operand %d (a zero point) must be a %s tensor of one element (operand %d's dtype)", 2 + i,
                                  loom_dtype_name(q->dtype), i);
  }
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 1, 0, b->dims[0], 0, a->ndim - 1, a->dims[a->ndim - 1]));
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)a->ndim);
  if (!d) return LOOM_OOM();
  for (int i = 0; i + 1 < a->ndim; i++) d[i] = a->dims[i];
  d[a->ndim - 1] = b->dims[1];
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_I32, a->ndim, d, a->device);
  return LOOM_OK;
}

/* The reference of the packed forms: b's centred values are the `per` signed fields of its
 * words (2: i16 halves, packed_b; 4: i8 bytes, packed_b quads), word (j / pw, q / per, j % pw)
 * holding b[q, j]; a row of a, centred, times them accumulated as the unpacked form does (the
 * quads' column-sums operand is what the kernel subtracts; the reference does not need it). */
static loom_status eval_matmul_integer_words(const loom_graph_value *args, int per, int64_t nn, loom_graph_value *out) {
  const loom_graph_tensor *a = &args[0].t, *bw = &args[1].t;
  int64_t kk = a->shape[a->ndim - 1], kw = (kk + per - 1) / per;
  if (bw->ndim != 3 || bw->shape[1] != kw)
    return LOOM_ERROR(INVALID_ARGUMENT, "matmul_integer: %s operand 1 axis 1 is not ceil(k / %d) of operand 0's k",
                      per == 4 ? "quad" : "packed", per);
  int64_t za = loom_graph_tensor_get_i64(&args[2].t, 0), pw = bw->shape[2], n = bw->shape[0] * pw, osh[8];
  if (nn && (nn <= n - pw || nn > n))
    return LOOM_ERROR(INVALID_ARGUMENT, "matmul_integer: packed_b with n=%lld needs n in (%lld, %lld] for operand 1 (%lld, %lld, %lld)",
                      (long long)nn, (long long)(n - pw), (long long)n, (long long)bw->shape[0], (long long)kw, (long long)pw);
  if (nn) n = nn;
  for (int i = 0; i + 1 < a->ndim; i++) osh[i] = a->shape[i];
  osh[a->ndim - 1] = n;
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_I32, a->ndim, osh, out));
  size_t rows = 1;
  for (int i = 0; i + 1 < a->ndim; i++) rows *= (size_t)a->shape[i];
  unsigned bits = 32u / (unsigned)per;
  for (size_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < n; j++) {
      uint64_t acc = 0;
      for (int64_t q = 0; q < kk; q++) {
        uint32_t w = (uint32_t)loom_graph_tensor_get_i64(bw, (size_t)(((j / pw) * kw + q / per) * pw + j % pw));
        uint32_t field = (w >> (bits * (unsigned)(q % per))) & ((1u << bits) - 1u);
        int64_t bv = per == 4 ? (int64_t)(int8_t)(uint8_t)field : (int64_t)(int16_t)(uint16_t)field;
        acc += (uint64_t)(loom_graph_tensor_get_i64(a, i * (size_t)kk + (size_t)q) - za) * (uint64_t)bv;
      }
      loom_graph_tensor_set_i64(&out->t, i * (size_t)n + (size_t)j, (int64_t)(int32_t)(uint32_t)acc);
    }
  return LOOM_OK;
}

/* The reference: every row of a, centred, times b centred, accumulated in int64 and wrapped
 * to i32 as the composed i32 matmul it replaces. */
static loom_status eval_matmul_integer(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  if (loom_graph_call_int(ec->call, "packed_b"))
    return eval_matmul_integer_words(args, loom_graph_call_int(ec->call, "quads") ? 4 : 2, loom_graph_call_int(ec->call, "n"), out);
  const loom_graph_tensor *a = &args[0].t, *b = &args[1].t;
  if (a->ndim < 2 || b->ndim != 2 || a->shape[a->ndim - 1] != b->shape[0])
    return LOOM_ERROR(INVALID_ARGUMENT, "matmul_integer: operand 1 axis 0 does not match operand 0's last axis");
  int64_t za = loom_graph_tensor_get_i64(&args[2].t, 0), zb = loom_graph_tensor_get_i64(&args[3].t, 0);
  int64_t kk = b->shape[0], n = b->shape[1], osh[8];
  for (int i = 0; i + 1 < a->ndim; i++) osh[i] = a->shape[i];
  osh[a->ndim - 1] = n;
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_I32, a->ndim, osh, out));
  size_t rows = 1;
  for (int i = 0; i + 1 < a->ndim; i++) rows *= (size_t)a->shape[i];
  for (size_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < n; j++) {
      uint64_t acc = 0;
      for (int64_t q = 0; q < kk; q++)
        acc += (uint64_t)(loom_graph_tensor_get_i64(a, i * (size_t)kk + (size_t)q) - za) *
               (uint64_t)(loom_graph_tensor_get_i64(b, (size_t)(q * n + j)) - zb);
      loom_graph_tensor_set_i64(&out->t, i * (size_t)n + (size_t)j, (int64_t)(int32_t)(uint32_t)acc);
    }
  return LOOM_OK;
}

typedef struct matmul_integer_params {
  int64_t panel;  /* packed_b: b's panel width; else 0 */
  int64_t kwhole; /* quads with a u8 a whose k is this constant, a multiple of 4 (a read in place); else 0 */
  loom_dtype ta, tb;
  int32_t ra, rza, rzb;
  int32_t quads;  /* packed_b in byte quads (dot4) */
  int32_t ragged; /* packed_b with n: C's last extent its own symbol, the last panel padded */
  int32_t pairs;  /* quads whose byte pairs keep within i16 (dot4s) */
} matmul_integer_params;
LOOM_TP_GEN_PARAMS(matmul_integer_params, 16 + 8 * 4);

static loom_status gen_matmul_integer(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const matmul_integer_params *p = params;
  loom_arena *ar = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  if (p->panel && p->quads)
    return loom_tp_gen_matmul_integer_quads(ar, cx, name, p->ta, p->ra, p->rza, p->panel, p->ragged != 0, p->kwhole,
                                            p->pairs != 0, tp);
  if (p->panel) return loom_tp_gen_matmul_integer_packed_b(ar, cx, name, p->ta, p->ra, p->rza, p->panel, p->ragged != 0, tp);
  return loom_tp_gen_matmul_integer(ar, cx, name, p->ta, p->tb, p->ra, p->rza, p->rzb, tp);
}

static loom_status legal_matmul_integer(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                        loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *a, *b, *za, *zb;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &a));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &b));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &za));
  char name[256];
  matmul_integer_params p = {.ta = a->dtype, .ra = a->ndim, .rza = za->ndim};
  if (loom_graph_call_int(call, "packed_b")) {
    if (b->ndim != 3 || !loom_sym_is_const(b->dims[2], &p.panel) || p.panel < 1)
      return loom_legal_unsupported(call, "for a packed operand 1 without a constant panel width");
    p.quads = loom_graph_call_int(call, "quads") != 0;
    p.ragged = loom_graph_call_int(call, "n") != 0;
    p.pairs = p.quads && loom_graph_call_int(call, "pairs") != 0;
    int64_t k;
    if (p.quads && a->dtype == LOOM_DTYPE_U8 && a->ndim >= 2 && loom_sym_is_const(a->dims[a->ndim - 1], &k) && k > 0 && k % 4 == 0)
      p.kwhole = k;
    snprintf(name, sizeof name, "matmul_integer_%s_%s%lld%s_r%d_z%d%s", loom_dtype_name(a->dtype),
             p.pairs ? "qs" : p.quads ? "q" : "p", (long long)p.panel, p.ragged ? "r" : "", a->ndim, za->ndim, p.kwhole ? "_k4" : "");
    return LOOM_LEGAL_PROGRAM(m, name, gen_matmul_integer, p, &r->tp);
  }
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 3, &zb));
  p.tb = b->dtype, p.rzb = zb->ndim;
  snprintf(name, sizeof name, "matmul_integer_%s_%s_r%d_z%d_%d", loom_dtype_name(a->dtype), loom_dtype_name(b->dtype),
           a->ndim, za->ndim, zb->ndim);
  return LOOM_LEGAL_PROGRAM(m, name, gen_matmul_integer, p, &r->tp);
}

/* ---- the records ------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_matmul = {matmul_attrs, infer_matmul, eval_matmul, legal_matmul, NULL};
const loom_graph_op_impl loom_graph_op_impl_linear = {no_attrs, infer_linear, eval_linear, legal_linear, NULL};
const loom_graph_op_impl loom_graph_op_impl_matmul_integer = {matmul_integer_attrs, infer_matmul_integer, eval_matmul_integer,
                                                            legal_matmul_integer, NULL};
