/* onnx_import_seq.c — sequence-model ops: Attention (opset 23/24), RotaryEmbedding,
 * TensorScatter, CausalConvWithState, and the recurrences (RNN, GRU, LSTM) unrolled over a
 * static sequence length. Each follows the ONNX reference implementation
 * (onnx/reference/ops/op_*.py), which produced the conformance data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

static loom_status permute(nctx *c, loom_graph_expr *x, size_t n, const int64_t *perm, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", n, perm));
  return oimp_op1(c, LOOM_GRAPH_OP_PERMUTE_DIMS, x, y);
}

static loom_status reshape(nctx *c, loom_graph_expr *x, size_t n, const loom_sym_expr *const *dims, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", n, dims));
  return oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, x, y);
}

static loom_status expand_dims(nctx *c, loom_graph_expr *x, size_t n, const int64_t *axes, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", n, axes));
  return oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, x, y);
}

/* arange(start, end) of i64. */
static loom_status arange(nctx *c, const loom_sym_expr *start, const loom_sym_expr *end, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "start", 1, &start));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "end", 1, &end));
  return oimp_emit(c, LOOM_GRAPH_OP_ARANGE, 0, NULL, NULL, y);
}

static loom_status concat(nctx *c, loom_graph_expr *a, loom_graph_expr *b, int64_t axis, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_op2(c, LOOM_GRAPH_OP_CONCAT, a, b, y);
}

/* x[begin:end] along `axis`. */
static loom_status slice(nctx *c, loom_graph_expr *x, int64_t axis, const loom_sym_expr *begin, const loom_sym_expr *end,
                         loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &axis));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "begin", 1, &begin));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "end", 1, &end));
  return oimp_op1(c, LOOM_GRAPH_OP_STRIDED_SLICE, x, y);
}

static bool wants_output(const nctx *c, size_t i) {
  return c->n->n_outputs > i && *c->n->outputs[i];
}

/* The dims of a tensor operand (NULL when its rank is unknown). */
static const loom_sym_expr *const *dims_of(const loom_graph_expr *x) {
  const loom_sinfo *s = x->sinfo;
  return s->kind == LOOM_SINFO_TENSOR && s->ndim >= 0 ? s->dims : NULL;
}

static bool sym_eq(nctx *c, const loom_sym_expr *a, const loom_sym_expr *b) {
  return a == b || loom_sym_prove_eq(c->im->cx, a, b) == LOOM_SYM_TRUE;
}

/* ---- Attention ------------------------------------------------------------------------ */

/* (b, s, heads * d) -> (b, heads, s, d). */
static loom_status split_heads(nctx *c, loom_graph_expr *x, int64_t heads, loom_graph_expr **y) {
  loom_sym_ctx *cx = c->im->cx;
  const loom_sym_expr *const *d = dims_of(x), *s4[4];
  int64_t hid;
  if (loom_sym_is_const(d[2], &hid) && hid % heads)
    return BAD(c->n, "hidden size %lld is not a multiple of %lld heads", (long long)hid, (long long)heads);
  s4[0] = d[0], s4[1] = d[1], s4[2] = loom_sym_const(cx, heads), s4[3] = loom_sym_floordiv(cx, d[2], s4[2]);
  static const int64_t p[4] = {0, 2, 1, 3};
  LOOM_PROPAGATE(reshape(c, x, 4, s4, y));
  return permute(c, *y, 4, p, y);
}

/* The combination of a keep-mask `allowed` (bool) with the mask so far (bool: keep; float:
 * added; NULL: none). */
static loom_status and_mask(nctx *c, loom_dtype dt, loom_graph_expr *allowed, loom_graph_expr **mask) {
  if (!*mask) return *mask = allowed, LOOM_OK;
  if ((*mask)->sinfo->dtype == LOOM_DTYPE_BOOL) return oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_AND, *mask, allowed, mask);
  loom_graph_expr *ninf;
  LOOM_PROPAGATE(oimp_scalar(c, dt, -INFINITY, &ninf));
  return oimp_op3(c, LOOM_GRAPH_OP_WHERE, allowed, *mask, ninf, mask);
}

/* softmax(q k^T * scale [softcapped] + bias) v composed of graph ops, for what the graph op
 * `attention` does not do (softcap, the qk_matmul_output output). q (b, h, s, d), k and v
 * (b, hk, t, .), mask bool / float / NULL broadcast to (b, h, s, t). A row whose bias is
 * all -inf gives 0 (the reference's fully-masked-row guard). */
static loom_status attention_composed(nctx *c, loom_graph_expr *q, loom_graph_expr *k, loom_graph_expr *v,
                                      loom_graph_expr *mask, double scale, double softcap, int64_t mode,
                                      loom_graph_expr **y, loom_graph_expr **qk_out) {
  loom_dtype dt = q->sinfo->dtype;
  int64_t h, hk;
  if (!sym_eq(c, dims_of(q)[1], dims_of(k)[1])) {
    if (!loom_sym_is_const(dims_of(q)[1], &h) || !loom_sym_is_const(dims_of(k)[1], &hk) || hk <= 0 || h % hk)
      return UNSUP(c->n, "grouped-query attention needs static head counts that divide");
    for (int i = 0; i < 2; i++) {
      oimp_add_attr(c, loom_graph_attr_int(c->im->m, "repeats", h / hk));
      oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 1));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_REPEAT, i ? v : k, i ? &v : &k));
    }
  }
  loom_graph_expr *bias = mask, *qk, *t, *p;
  if (mask && mask->sinfo->dtype == LOOM_DTYPE_BOOL) {
    loom_graph_expr *zero, *ninf;
    LOOM_PROPAGATE(oimp_scalar(c, dt, 0, &zero));
    LOOM_PROPAGATE(oimp_scalar(c, dt, -INFINITY, &ninf));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, mask, zero, ninf, &bias));
  }
  static const int64_t kt[4] = {0, 1, 3, 2};
  double sq = sqrt(scale);
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, q, sq, &q));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, k, sq, &k));
  LOOM_PROPAGATE(permute(c, k, 4, kt, &k));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MATMUL, q, k, &qk));
  if (softcap > 0) {
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_DIV, qk, softcap, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_TANH, t, &t));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, t, softcap, &qk));
  }
  loom_graph_expr *withb = qk;
  if (bias) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, qk, bias, &withb));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", -1));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SOFTMAX, withb, &p));
  if (bias) {
    int64_t last = -1;
    loom_graph_expr *mx, *dead, *zero;
    if (bias->sinfo->ndim < 1) return UNSUP(c->n, "a rank-0 attention mask");
    last = bias->sinfo->ndim - 1;
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &last));
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", true));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_MAX, bias, &mx));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_EQUAL, mx, -INFINITY, &dead));
    LOOM_PROPAGATE(oimp_scalar(c, dt, 0, &zero));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, dead, zero, p, &p));
  }
  *qk_out = mode == 3 ? p : mode == 2 ? withb : qk;
  return oimp_op2(c, LOOM_GRAPH_OP_MATMUL, p, v, y);
}

/* Attention (opset 23; nonpad_kv_seqlen from 24): 3-D inputs split into q_num_heads /
 * kv_num_heads heads, past key / value concatenated ahead of the new ones (present_key /
 * present_value), a bool or float attn_mask shorter than the key length padded with
 * "masked", is_causal aligned at the past length (top-left without a past, per batch at
 * nonpad_kv_seqlen - q_len with one), nonpad_kv_seqlen masking the padded keys. The graph
 * op `attention` does the work unless softcap or the qk_matmul_output output needs the
 * composed form. */
static loom_status h_attention(nctx *c, const op_entry *e, loom_graph_expr **out) {
  loom_sym_ctx *cx = c->im->cx;
  int r = oimp_in_rank(c, 0);
  if (r != 3 && r != 4) return UNSUP(c->n, "input 0 (Q) has rank %d (3 or 4)", r);
  for (size_t i = 1; i < 3; i++)
    if (oimp_in_rank(c, i) != r) return BAD(c->n, "input %zu has rank %d, Q has %d", i, oimp_in_rank(c, i), r);
  int64_t causal, mode, hq, hkv;
  double scale, softcap;
  LOOM_PROPAGATE(oimp_attr_int(c, "is_causal", 0, &causal));
  LOOM_PROPAGATE(oimp_attr_float(c, "softcap", 0, &softcap));
  LOOM_PROPAGATE(oimp_attr_int(c, "qk_matmul_output_mode", 0, &mode));
  LOOM_PROPAGATE(oimp_attr_int(c, "q_num_heads", 0, &hq));
  LOOM_PROPAGATE(oimp_attr_int(c, "kv_num_heads", 0, &hkv));
  if (mode < 0 || mode > 3) return BAD(c->n, "qk_matmul_output_mode %lld (0 to 3)", (long long)mode);
  if (softcap < 0) return BAD(c->n, "softcap %g is negative", softcap);
  loom_graph_expr *q = c->args[0], *k = c->args[1], *v = c->args[2];
  loom_graph_expr *mask = c->nargs > 3 ? c->args[3] : NULL;
  loom_graph_expr *pk = c->nargs > 4 ? c->args[4] : NULL, *pv = c->nargs > 5 ? c->args[5] : NULL;
  loom_graph_expr *nonpad = c->nargs > 6 ? c->args[6] : NULL;
  loom_dtype dt = q->sinfo->dtype;
  if (!loom_dtype_is_float(dt)) return BAD(c->n, "Q has dtype %s (a float type)", loom_dtype_name(dt));
  if (!pk != !pv) return BAD(c->n, "past_key and past_value must be given together");
  if (nonpad && pk) return BAD(c->n, "nonpad_kv_seqlen cannot be combined with past_key / past_value");
  if (r == 3) {
    if (hq <= 0 || hkv <= 0)
      return BAD(c->n, "3-D inputs need q_num_heads and kv_num_heads (got %lld and %lld)", (long long)hq, (long long)hkv);
    LOOM_PROPAGATE(split_heads(c, q, hq, &q));
    LOOM_PROPAGATE(split_heads(c, k, hkv, &k));
    LOOM_PROPAGATE(split_heads(c, v, hkv, &v));
  }
  if (pk) {
    if (oimp_in_rank(c, 4) != 4 || oimp_in_rank(c, 5) != 4) return BAD(c->n, "past_key and past_value must be 4-D");
    LOOM_PROPAGATE(concat(c, pk, k, 2, &k));
    LOOM_PROPAGATE(concat(c, pv, v, 2, &v));
  }
  if (wants_output(c, 1)) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], k, NULL));
  if (wants_output(c, 2)) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[2], v, NULL));
  const loom_sym_expr *S = dims_of(q)[2], *T = dims_of(k)[2], *P = pk ? dims_of(pk)[2] : loom_sym_const(cx, 0);
  int64_t d;
  if (!loom_onnx_node_attr(c->n, "scale")) {
    if (!loom_sym_is_const(dims_of(q)[3], &d) || d <= 0) return UNSUP(c->n, "the default scale needs a static head size");
    scale = 1.0 / sqrt((double)d);
  } else {
    LOOM_PROPAGATE(oimp_attr_float(c, "scale", 1.0, &scale));
  }
  if (mask) {
    const loom_sinfo *ms = mask->sinfo;
    if (ms->ndim < 1 || ms->ndim > 4) return UNSUP(c->n, "attn_mask of rank %d (1 to 4)", ms->ndim);
    if (ms->dtype != LOOM_DTYPE_BOOL && ms->dtype != dt)
      return BAD(c->n, "attn_mask has dtype %s (bool or Q's %s)", loom_dtype_name(ms->dtype), loom_dtype_name(dt));
    const loom_sym_expr *tm = ms->dims[ms->ndim - 1];
    if (!sym_eq(c, tm, T)) {
      int64_t a, b;
      if (!loom_sym_is_const(tm, &a) || !loom_sym_is_const(T, &b) || a > b)
        return UNSUP(c->n, "attn_mask's last axis differs from the key length; it must be static and shorter");
      const loom_sym_expr *pads[8];
      for (int i = 0; i < 2 * ms->ndim; i++) pads[i] = loom_sym_const(cx, 0);
      pads[2 * ms->ndim - 1] = loom_sym_const(cx, b - a);
      oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "pads", (size_t)(2 * ms->ndim), pads));
      oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", ms->dtype == LOOM_DTYPE_BOOL ? 0.0 : -INFINITY));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PAD, mask, &mask));
    }
  }
  bool composed = softcap > 0 || wants_output(c, 3);
  /* The graph op's causal mask is aligned bottom-right (j <= i + t - s): ONNX's when the
   * past length is t - s. */
  bool graph_causal = causal && !nonpad && !composed && sym_eq(c, loom_sym_add(cx, P, S), T);
  loom_graph_expr *jj = NULL, *nb = NULL;
  if ((causal && !graph_causal) || nonpad) LOOM_PROPAGATE(arange(c, loom_sym_const(cx, 0), T, &jj));
  if (nonpad) {
    if (oimp_in_rank(c, 6) != 1) return BAD(c->n, "nonpad_kv_seqlen must be 1-D");
    static const int64_t ax3[3] = {1, 2, 3};
    nb = nonpad;
    if (nb->sinfo->dtype != LOOM_DTYPE_I64) {
      oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_I64));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, nb, &nb));
    }
    LOOM_PROPAGATE(expand_dims(c, nb, 3, ax3, &nb)); /* (b, 1, 1, 1) */
  }
  if (causal && !graph_causal) {
    /* allowed[i, j] = j <= i + offset; offset = past length, or nonpad_kv_seqlen[b] - s. */
    loom_graph_expr *ii, *allowed;
    static const int64_t ax1 = 1;
    /* i + offset: arange(P, P + s), or arange(-s, 0) + nonpad_kv_seqlen[b] */
    const loom_sym_expr *i0 = nonpad ? loom_sym_neg(cx, S) : P;
    LOOM_PROPAGATE(arange(c, i0, loom_sym_add(cx, i0, S), &ii));
    LOOM_PROPAGATE(expand_dims(c, ii, 1, &ax1, &ii)); /* (s, 1) */
    if (nonpad) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, ii, nb, &ii)); /* (b, 1, s, 1) */
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LESS_EQUAL, jj, ii, &allowed));
    LOOM_PROPAGATE(and_mask(c, dt, allowed, &mask));
  }
  if (nonpad) {
    loom_graph_expr *keep;
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LESS, jj, nb, &keep)); /* (b, 1, 1, t) */
    LOOM_PROPAGATE(and_mask(c, dt, keep, &mask));
  }
  loom_graph_expr *y, *qk = NULL;
  const char *yname = r == 4 ? c->n->outputs[0] : NULL;
  if (composed) {
    LOOM_PROPAGATE(attention_composed(c, q, k, v, mask, scale, softcap, mode, &y, &qk));
    if (wants_output(c, 3)) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[3], qk, NULL));
  } else {
    loom_graph_expr *a[4] = {q, k, v, mask};
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "scale", scale));
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "causal", graph_causal));
    LOOM_PROPAGATE(oimp_emit(c, e->op, mask ? 4 : 3, a, yname, &y));
  }
  if (r == 4) return *out = y, LOOM_OK;
  static const int64_t p[4] = {0, 2, 1, 3};
  const loom_sym_expr *const *yd = dims_of(y), *s3[3];
  LOOM_PROPAGATE(permute(c, y, 4, p, &y));
  s3[0] = yd[0], s3[1] = yd[2], s3[2] = loom_sym_mul(cx, yd[1], yd[3]);
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 3, s3));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &y, c->n->outputs[0], out);
}

/* ---- RotaryEmbedding ---------------------------------------------------------------------- */

/* x[begin:end:step] along `axis`, static bounds. */
static loom_status slice_k(nctx *c, loom_graph_expr *x, int64_t axis, int64_t begin, int64_t end, int64_t step,
                           loom_graph_expr **y) {
  loom_sym_ctx *cx = c->im->cx;
  const loom_sym_expr *st = loom_sym_const(cx, step);
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "strides", 1, &st));
  return slice(c, x, axis, loom_sym_const(cx, begin), loom_sym_const(cx, end), y);
}

/* RotaryEmbedding (opset 23): input (b, h, s, d) or (b, s, h * d) with num_heads; the
 * first rotary_embedding_dim (default d) features rotated in halves, or in even / odd
 * pairs when interleaved; cos / sin caches (max_pos, r / 2) gathered at position_ids
 * (b, s), or given as (b, s, r / 2). */
static loom_status h_rotary(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_sym_ctx *cx = c->im->cx;
  int64_t inter, rd, nh, d;
  LOOM_PROPAGATE(oimp_attr_int(c, "interleaved", 0, &inter));
  LOOM_PROPAGATE(oimp_attr_int(c, "rotary_embedding_dim", 0, &rd));
  LOOM_PROPAGATE(oimp_attr_int(c, "num_heads", 0, &nh));
  int r = oimp_in_rank(c, 0);
  loom_graph_expr *x = c->args[0], *cs = c->args[1], *sn = c->args[2];
  static const int64_t p0213[4] = {0, 2, 1, 3};
  if (r == 4) {
    LOOM_PROPAGATE(permute(c, x, 4, p0213, &x));
  } else if (r == 3) {
    if (nh <= 0) return BAD(c->n, "a 3-D input needs num_heads (got %lld)", (long long)nh);
    LOOM_PROPAGATE(split_heads(c, x, nh, &x));
    LOOM_PROPAGATE(permute(c, x, 4, p0213, &x));
  } else {
    return UNSUP(c->n, "input 0 has rank %d (3 or 4)", r);
  }
  if (!loom_sym_is_const(dims_of(x)[3], &d)) return UNSUP(c->n, "the head size must be static");
  if (rd == 0) rd = d;
  if (rd < 0 || rd > d || rd % 2)
    return BAD(c->n, "rotary_embedding_dim %lld must be even and at most the head size %lld", (long long)rd, (long long)d);
  if (c->nargs > 3 && c->args[3]) {
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 0));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_TAKE, cs, c->args[3], &cs));
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 0));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_TAKE, sn, c->args[3], &sn));
  }
  int64_t half;
  if (oimp_in_rank(c, 1) < 1 || !loom_sym_is_const(dims_of(cs)[dims_of(cs) ? cs->sinfo->ndim - 1 : 0], &half) || half != rd / 2)
    return BAD(c->n, "the caches' last axis must be rotary_embedding_dim / 2 = %lld", (long long)(rd / 2));
  static const int64_t ax2 = 2;
  LOOM_PROPAGATE(expand_dims(c, cs, 1, &ax2, &cs)); /* (b, s, 1, r / 2) */
  LOOM_PROPAGATE(expand_dims(c, sn, 1, &ax2, &sn));
  loom_graph_expr *rot = x, *keep = NULL, *x1, *x2, *t1, *t2, *re, *im;
  if (rd < d) {
    LOOM_PROPAGATE(slice_k(c, x, 3, 0, rd, 1, &rot));
    LOOM_PROPAGATE(slice_k(c, x, 3, rd, d, 1, &keep));
  }
  if (inter) {
    LOOM_PROPAGATE(slice_k(c, rot, 3, 0, rd, 2, &x1));
    LOOM_PROPAGATE(slice_k(c, rot, 3, 1, rd, 2, &x2));
  } else {
    LOOM_PROPAGATE(slice_k(c, rot, 3, 0, rd / 2, 1, &x1));
    LOOM_PROPAGATE(slice_k(c, rot, 3, rd / 2, rd, 1, &x2));
  }
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, cs, x1, &t1));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, sn, x2, &t2));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, t1, t2, &re));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, sn, x1, &t1));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, cs, x2, &t2));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, t1, t2, &im));
  if (inter) {
    static const int64_t ax4 = 4;
    LOOM_PROPAGATE(expand_dims(c, re, 1, &ax4, &re));
    LOOM_PROPAGATE(expand_dims(c, im, 1, &ax4, &im));
    LOOM_PROPAGATE(concat(c, re, im, 4, &rot));
    const loom_sym_expr *const *xd = dims_of(x), *s4[4] = {xd[0], xd[1], xd[2], loom_sym_const(cx, rd)};
    LOOM_PROPAGATE(reshape(c, rot, 4, s4, &rot));
  } else {
    LOOM_PROPAGATE(concat(c, re, im, 3, &rot));
  }
  if (keep) LOOM_PROPAGATE(concat(c, rot, keep, 3, &rot));
  if (r == 4) {
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 4, p0213));
    return oimp_emit(c, LOOM_GRAPH_OP_PERMUTE_DIMS, 1, &rot, c->n->outputs[0], out);
  }
  const loom_sym_expr *const *in = dims_of(c->args[0]);
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 3, in));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &rot, c->n->outputs[0], out);
}

/* ---- TensorScatter -------------------------------------------------------------------------- */

/* TensorScatter (opset 24): present = past with update written along `axis` (default -2)
 * at write_indices[b] + j (mod the cache length when mode is circular), per batch b. A
 * scatter_elements with those indices broadcast to the update's shape. */
static loom_status h_tensor_scatter(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_sym_ctx *cx = c->im->cx;
  const char *mode;
  int64_t axis;
  LOOM_PROPAGATE(oimp_attr_str(c, "mode", "linear", &mode));
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", -2, &axis));
  bool circ = !strcmp(mode, "circular");
  if (!circ && strcmp(mode, "linear")) return BAD(c->n, "mode '%s' (linear | circular)", mode);
  int r = oimp_in_rank(c, 0);
  if (r < 2 || oimp_in_rank(c, 1) != r) return BAD(c->n, "past_cache (rank %d) and update (rank %d) must have one rank >= 2", r, oimp_in_rank(c, 1));
  LOOM_PROPAGATE(oimp_norm_axes(c, r, &axis, 1));
  if (axis == 0) return BAD(c->n, "axis 0 is the batch axis");
  loom_graph_expr *past = c->args[0], *upd = c->args[1], *idx, *w;
  const loom_sym_expr *const *ud = dims_of(upd), *one = loom_sym_const(cx, 1), *s[16];
  LOOM_PROPAGATE(arange(c, loom_sym_const(cx, 0), ud[axis], &idx));
  for (int k = 0; k < r; k++) s[k] = k == axis ? ud[axis] : one;
  LOOM_PROPAGATE(reshape(c, idx, (size_t)r, s, &idx));
  if (c->nargs > 2 && c->args[2]) {
    if (oimp_in_rank(c, 2) != 1) return BAD(c->n, "write_indices must be 1-D");
    w = c->args[2];
    if (w->sinfo->dtype != LOOM_DTYPE_I64) {
      oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_I64));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, w, &w));
    }
    for (int k = 0; k < r; k++) s[k] = k == 0 ? ud[0] : one;
    LOOM_PROPAGATE(reshape(c, w, (size_t)r, s, &w));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, idx, w, &idx));
  }
  if (circ) {
    int64_t len;
    if (!loom_sym_is_const(dims_of(past)[axis], &len) || len <= 0) return UNSUP(c->n, "circular mode needs a static cache length");
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MOD, idx, (double)len, &idx));
  }
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", (size_t)r, ud));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_BROADCAST_TO, idx, &idx));
  loom_graph_expr *a[3] = {past, idx, upd};
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_emit(c, LOOM_GRAPH_OP_SCATTER_ELEMENTS, 3, a, c->n->outputs[0], out);
}

/* ---- CausalConvWithState ---------------------------------------------------------------- */

/* CausalConvWithState (opset 27): a depthwise conv1d of [past_state (zeros), input] along
 * the length with kernel (C, 1, k), optional bias and silu; present_state is the last k - 1
 * columns of the padded input. */
static loom_status h_causal_conv(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_sym_ctx *cx = c->im->cx;
  const char *act;
  LOOM_PROPAGATE(oimp_attr_str(c, "activation", "none", &act));
  bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none")) return BAD(c->n, "activation '%s' (none | silu | swish)", act);
  if (oimp_in_rank(c, 0) != 3 || oimp_in_rank(c, 1) != 3) return BAD(c->n, "input and weight must be 3-D");
  loom_graph_expr *x = c->args[0], *w = c->args[1], *pad, *y;
  int64_t k, ch;
  if (!loom_sym_is_const(dims_of(w)[2], &k) || k < 1) return UNSUP(c->n, "the kernel size must be static");
  if (!loom_sym_is_const(dims_of(x)[1], &ch) || ch < 1) return UNSUP(c->n, "the channel count must be static");
  if (c->nargs > 3 && c->args[3]) {
    if (oimp_in_rank(c, 3) != 3) return BAD(c->n, "past_state must be 3-D");
    LOOM_PROPAGATE(concat(c, c->args[3], x, 2, &pad));
  } else {
    const loom_sym_expr *pads[6];
    for (int i = 0; i < 6; i++) pads[i] = loom_sym_const(cx, 0);
    pads[2] = loom_sym_const(cx, k - 1);
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "pads", 6, pads));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PAD, x, &pad));
  }
  loom_graph_expr *a[3] = {pad, w, c->nargs > 2 ? c->args[2] : NULL};
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "groups", ch));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CONV1D, a[2] ? 3 : 2, a, silu ? NULL : c->n->outputs[0], &y));
  if (silu) LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SILU, 1, &y, c->n->outputs[0], &y));
  if (wants_output(c, 1)) {
    const loom_sym_expr *L = dims_of(pad)[2];
    loom_graph_expr *st;
    LOOM_PROPAGATE(slice(c, pad, 2, loom_sym_sub(cx, L, loom_sym_const(cx, k - 1)), L, &st));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], st, NULL));
  }
  *out = y;
  return LOOM_OK;
}

/* ---- LinearAttention --------------------------------------------------------------------- */

/* x cast to f32 when it is another float type (the reference's working precision). */
static loom_status to_f32(nctx *c, loom_graph_expr *x, loom_graph_expr **y) {
  if (x->sinfo->dtype == LOOM_DTYPE_F32) return *y = x, LOOM_OK;
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F32));
  return oimp_op1(c, LOOM_GRAPH_OP_CAST, x, y);
}

static loom_status cast_to(nctx *c, loom_graph_expr *x, loom_dtype dt, const char *name, loom_graph_expr **y) {
  if (x->sinfo->dtype == dt && !name) return *y = x, LOOM_OK;
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
  return oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &x, name, y);
}

/* Step t of (b, h, T, x): (b, h, 1, x). */
static loom_status step_of(nctx *c, loom_graph_expr *x, int64_t t, loom_graph_expr **y) {
  return slice_k(c, x, 2, t, t + 1, 1, y);
}

/* LinearAttention (opset 27): the recurrence over the (static) sequence length, unrolled:
 * per step, state (b, hk, dk, dv) *= exp(decay) (gated), v -= state^T k scaled by beta
 * (delta), state += k v^T, out = scale * q state (the state repeated for grouped heads). */
static loom_status h_linear_attention(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_sym_ctx *cx = c->im->cx;
  const char *rule;
  int64_t hq, hk, T, dk, dv;
  double scale;
  LOOM_PROPAGATE(oimp_attr_str(c, "update_rule", "gated_delta", &rule));
  LOOM_PROPAGATE(oimp_attr_int(c, "q_num_heads", 0, &hq));
  LOOM_PROPAGATE(oimp_attr_int(c, "kv_num_heads", 0, &hk));
  LOOM_PROPAGATE(oimp_attr_float(c, "scale", 0, &scale));
  bool gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gated && !delta && strcmp(rule, "linear")) return BAD(c->n, "update_rule '%s' (linear | gated | delta | gated_delta)", rule);
  if (hq <= 0 || hk <= 0 || hq % hk)
    return BAD(c->n, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)", (long long)hq, (long long)hk);
  loom_graph_expr *decay = c->nargs > 4 ? c->args[4] : NULL, *beta = c->nargs > 5 ? c->args[5] : NULL;
  if (gated != (decay != NULL)) return BAD(c->n, "update_rule '%s' %s the decay input", rule, gated ? "needs" : "forbids");
  if (delta != (beta != NULL)) return BAD(c->n, "update_rule '%s' %s the beta input", rule, delta ? "needs" : "forbids");
  for (size_t i = 0; i < 3; i++)
    if (oimp_in_rank(c, i) != 3) return BAD(c->n, "input %zu must be 3-D (b, T, heads * d), got rank %d", i, oimp_in_rank(c, i));
  loom_dtype dt = c->args[0]->sinfo->dtype;
  if (!loom_dtype_is_float(dt)) return BAD(c->n, "query has dtype %s (a float type)", loom_dtype_name(dt));
  loom_graph_expr *q, *k, *v, *st, *dec = NULL, *bet = NULL;
  LOOM_PROPAGATE(split_heads(c, c->args[0], hq, &q));
  LOOM_PROPAGATE(split_heads(c, c->args[1], hk, &k));
  LOOM_PROPAGATE(split_heads(c, c->args[2], hk, &v));
  if (!loom_sym_is_const(dims_of(q)[2], &T)) return UNSUP(c->n, "the sequence length must be static (the recurrence is unrolled)");
  if (!loom_sym_is_const(dims_of(q)[3], &dk) || !loom_sym_is_const(dims_of(v)[3], &dv))
    return UNSUP(c->n, "the head sizes must be static");
  LOOM_PROPAGATE(to_f32(c, q, &q));
  LOOM_PROPAGATE(to_f32(c, k, &k));
  LOOM_PROPAGATE(to_f32(c, v, &v));
  if (decay) {
    int64_t last;
    if (oimp_in_rank(c, 4) != 3 || !loom_sym_is_const(dims_of(decay)[2], &last) || (last != hk && last != hk * dk))
      return BAD(c->n, "decay must be (b, T, kv_num_heads) or (b, T, kv_num_heads * d_k)");
    LOOM_PROPAGATE(split_heads(c, decay, hk, &dec)); /* (b, hk, T, 1 | dk) */
    LOOM_PROPAGATE(to_f32(c, dec, &dec));
  }
  if (beta) {
    int64_t last;
    if (oimp_in_rank(c, 5) != 3 || !loom_sym_is_const(dims_of(beta)[2], &last) || (last != hk && last != 1))
      return BAD(c->n, "beta must be (b, T, kv_num_heads) or (b, T, 1)");
    LOOM_PROPAGATE(split_heads(c, beta, last, &bet)); /* (b, hk | 1, T, 1) */
    LOOM_PROPAGATE(to_f32(c, bet, &bet));
  }
  loom_dtype st_dt = dt;
  const loom_sym_expr *sd[4] = {dims_of(q)[0], loom_sym_const(cx, hk), loom_sym_const(cx, dk), loom_sym_const(cx, dv)};
  if (c->nargs > 3 && c->args[3]) {
    st = c->args[3];
    if (oimp_in_rank(c, 3) != 4) return BAD(c->n, "past_state must be 4-D (b, kv_num_heads, d_k, d_v)");
    st_dt = st->sinfo->dtype;
    LOOM_PROPAGATE(to_f32(c, st, &st));
  } else {
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 4, sd));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F32));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ZEROS, 0, NULL, NULL, &st));
  }
  if (scale == 0) scale = 1.0 / sqrt((double)dk);
  static const int64_t tr[4] = {0, 1, 3, 2};
  loom_graph_expr *outs = NULL;
  for (int64_t t = 0; t < T; t++) {
    loom_graph_expr *qt, *kt, *vt, *kc, *x, *o;
    LOOM_PROPAGATE(step_of(c, q, t, &qt)); /* (b, hq, 1, dk) */
    LOOM_PROPAGATE(step_of(c, k, t, &kt)); /* (b, hk, 1, dk) */
    LOOM_PROPAGATE(step_of(c, v, t, &vt)); /* (b, hk, 1, dv) */
    if (dec) {
      LOOM_PROPAGATE(step_of(c, dec, t, &x));
      LOOM_PROPAGATE(permute(c, x, 4, tr, &x)); /* (b, hk, 1 | dk, 1) */
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXP, x, &x));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, st, x, &st));
    }
    if (bet) {
      loom_graph_expr *got, *bt;
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MATMUL, kt, st, &got)); /* (b, hk, 1, dv) */
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, vt, got, &vt));
      LOOM_PROPAGATE(step_of(c, bet, t, &bt)); /* (b, hk | 1, 1, 1) */
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, bt, vt, &vt));
    }
    LOOM_PROPAGATE(permute(c, kt, 4, tr, &kc)); /* (b, hk, dk, 1) */
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, kc, vt, &x));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, st, x, &st));
    x = st;
    if (hq != hk) {
      oimp_add_attr(c, loom_graph_attr_int(c->im->m, "repeats", hq / hk));
      oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 1));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_REPEAT, st, &x));
    }
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MATMUL, qt, x, &o)); /* (b, hq, 1, dv) */
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, o, scale, &o));
    if (!outs) outs = o;
    else LOOM_PROPAGATE(concat(c, outs, o, 2, &outs));
  }
  if (!outs) return UNSUP(c->n, "an empty sequence");
  static const int64_t p0213[4] = {0, 2, 1, 3};
  const loom_sym_expr *s3[3] = {dims_of(q)[0], loom_sym_const(cx, T), loom_sym_const(cx, hq * dv)};
  LOOM_PROPAGATE(permute(c, outs, 4, p0213, &outs));
  LOOM_PROPAGATE(reshape(c, outs, 3, s3, &outs));
  if (wants_output(c, 1)) {
    loom_graph_expr *ps;
    LOOM_PROPAGATE(cast_to(c, st, st_dt, NULL, &ps));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], ps, NULL));
  }
  return cast_to(c, outs, dt, c->n->outputs[0], out);
}

/* ---- RNN, GRU, LSTM ------------------------------------------------------------------------ */

/* One recurrence being unrolled. */
typedef struct rnn {
  int gates;                 /* 1 (RNN), 3 (GRU: z r h), 4 (LSTM: i o f c) */
  int64_t H;                 /* hidden size */
  double clip;               /* > 0: gate pre-activations clipped to [-clip, clip] */
  bool lbr;                  /* GRU linear_before_reset */
  const char *act[3];        /* f, g, h of the direction being built */
  loom_graph_expr *lens;     /* sequence_lens as (b, 1) i64, or NULL */
} rnn;

static loom_status rnn_act(nctx *c, const rnn *rn, int which, loom_graph_expr *x, loom_graph_expr **y) {
  if (rn->clip > 0) {
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "min", -rn->clip));
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "max", rn->clip));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CLIP, x, &x));
  }
  const char *a = rn->act[which];
  if (!strcmp(a, "Sigmoid")) return oimp_op1(c, LOOM_GRAPH_OP_SIGMOID, x, y);
  if (!strcmp(a, "Tanh")) return oimp_op1(c, LOOM_GRAPH_OP_TANH, x, y);
  if (!strcmp(a, "Relu")) return oimp_op1(c, LOOM_GRAPH_OP_RELU, x, y);
  return UNSUP(c->n, "activation '%s' is not supported (Sigmoid, Tanh, Relu)", a);
}

/* x[d] of a (D, ...) operand. */
static loom_status dir_of(nctx *c, loom_graph_expr *x, int64_t d, loom_graph_expr **y) {
  static const int64_t ax0 = 0;
  LOOM_PROPAGATE(slice_k(c, x, 0, d, d + 1, 1, y));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &ax0));
  return oimp_op1(c, LOOM_GRAPH_OP_SQUEEZE, *y, y);
}

/* x @ w^T (+ b). */
static loom_status lin(nctx *c, loom_graph_expr *x, loom_graph_expr *w, loom_graph_expr *b, loom_graph_expr **y) {
  loom_graph_expr *a[3] = {x, w, b};
  return oimp_emit(c, LOOM_GRAPH_OP_LINEAR, b ? 3 : 2, a, NULL, y);
}

/* Rows / elements [g * H, (g + n) * H) of a (G * H, ...) weight or (G * H) bias (axis 0) or
 * of gate pre-activations (b, G * H) (axis 1). */
static loom_status gate_k(nctx *c, const rnn *rn, loom_graph_expr *x, int64_t axis, int g, int n, loom_graph_expr **y) {
  if (!x) return *y = NULL, LOOM_OK;
  return slice_k(c, x, axis, g * rn->H, (g + n) * rn->H, 1, y);
}

/* What every step of one direction reads, sliced once outside the steps: R (G*H, H) and its
 * bias (RNN, LSTM), GRU's z/r and h parts of R and of its bias, the peepholes, a zero. */
typedef struct rnn_w {
  loom_graph_expr *R, *rb;                /* RNN, LSTM */
  loom_graph_expr *rzr, *rh, *rbzr, *rbh; /* GRU */
  loom_graph_expr *pi, *po, *pf;          /* LSTM peepholes, or NULL */
  loom_graph_expr *zero;                  /* 0 of X's dtype (outputs past a row's length) */
} rnn_w;

static loom_status rnn_prep(nctx *c, const rnn *rn, loom_graph_expr *X, loom_graph_expr *R, loom_graph_expr *rb,
                            loom_graph_expr *p, rnn_w *w) {
  *w = (rnn_w){.R = R, .rb = rb};
  LOOM_PROPAGATE(oimp_scalar(c, X->sinfo->dtype, 0, &w->zero));
  if (rn->gates == 3) {
    LOOM_PROPAGATE(gate_k(c, rn, R, 0, 0, 2, &w->rzr));
    LOOM_PROPAGATE(gate_k(c, rn, R, 0, 2, 1, &w->rh));
    LOOM_PROPAGATE(gate_k(c, rn, rb, 0, 0, 2, &w->rbzr));
    LOOM_PROPAGATE(gate_k(c, rn, rb, 0, 2, 1, &w->rbh));
  }
  if (p) {
    LOOM_PROPAGATE(gate_k(c, rn, p, 0, 0, 1, &w->pi));
    LOOM_PROPAGATE(gate_k(c, rn, p, 0, 1, 1, &w->po));
    LOOM_PROPAGATE(gate_k(c, rn, p, 0, 2, 1, &w->pf));
  }
  return LOOM_OK;
}

/* One step: xt (b, G*H) the input's gate pre-activations, h and cc the state; *y the step's
 * output, *hn and *cn (LSTM) the next state. `tk` (0-d i64) is the step's position, compared
 * with sequence_lens when there are lengths. */
static loom_status rnn_step(nctx *c, const rnn *rn, const rnn_w *w, loom_graph_expr *xt, loom_graph_expr *tk,
                            loom_graph_expr *h, loom_graph_expr *cc, loom_graph_expr **y, loom_graph_expr **hn_out,
                            loom_graph_expr **cn_out) {
  loom_graph_expr *g, *hn, *cn = NULL, *a, *b2;
  if (rn->gates == 1) {
    LOOM_PROPAGATE(lin(c, h, w->R, w->rb, &g));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, xt, g, &g));
    LOOM_PROPAGATE(rnn_act(c, rn, 0, g, &hn));
  } else if (rn->gates == 3) {
    loom_graph_expr *z, *r, *hh;
    LOOM_PROPAGATE(lin(c, h, w->rzr, w->rbzr, &g));
    LOOM_PROPAGATE(gate_k(c, rn, xt, 1, 0, 2, &a));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, a, g, &g));
    LOOM_PROPAGATE(gate_k(c, rn, g, 1, 0, 1, &z));
    LOOM_PROPAGATE(gate_k(c, rn, g, 1, 1, 1, &r));
    LOOM_PROPAGATE(rnn_act(c, rn, 0, z, &z));
    LOOM_PROPAGATE(rnn_act(c, rn, 0, r, &r));
    if (rn->lbr) {
      LOOM_PROPAGATE(lin(c, h, w->rh, w->rbh, &b2));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, r, b2, &b2));
    } else {
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, r, h, &b2));
      LOOM_PROPAGATE(lin(c, b2, w->rh, w->rbh, &b2));
    }
    LOOM_PROPAGATE(gate_k(c, rn, xt, 1, 2, 1, &a));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, a, b2, &hh));
    LOOM_PROPAGATE(rnn_act(c, rn, 1, hh, &hh));
    /* (1 - z) * hh + z * h = hh + z * (h - hh) */
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, h, hh, &a));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, z, a, &a));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, hh, a, &hn));
  } else {
    loom_graph_expr *gi, *go, *gf, *gc;
    LOOM_PROPAGATE(lin(c, h, w->R, w->rb, &g));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, xt, g, &g));
    LOOM_PROPAGATE(gate_k(c, rn, g, 1, 0, 1, &gi));
    LOOM_PROPAGATE(gate_k(c, rn, g, 1, 1, 1, &go));
    LOOM_PROPAGATE(gate_k(c, rn, g, 1, 2, 1, &gf));
    LOOM_PROPAGATE(gate_k(c, rn, g, 1, 3, 1, &gc));
    if (w->pi) {
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, w->pi, cc, &a));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, gi, a, &gi));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, w->pf, cc, &a));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, gf, a, &gf));
    }
    LOOM_PROPAGATE(rnn_act(c, rn, 0, gi, &gi));
    LOOM_PROPAGATE(rnn_act(c, rn, 0, gf, &gf));
    LOOM_PROPAGATE(rnn_act(c, rn, 1, gc, &gc));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, gf, cc, &a));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, gi, gc, &b2));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, a, b2, &cn));
    if (w->po) {
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, w->po, cn, &a));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, go, a, &go));
    }
    LOOM_PROPAGATE(rnn_act(c, rn, 0, go, &go));
    LOOM_PROPAGATE(rnn_act(c, rn, 2, cn, &a));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, go, a, &hn));
  }
  if (rn->lens) { /* steps at or past a batch row's length keep its state and output 0 */
    loom_graph_expr *live;
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LESS, tk, rn->lens, &live));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, live, hn, w->zero, y));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, live, hn, h, &hn));
    if (cn) LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, live, cn, cc, &cn));
  } else {
    *y = hn;
  }
  *hn_out = hn;
  *cn_out = cn;
  return LOOM_OK;
}

/* One direction over X (T, b, in), T static: the steps unrolled, the hidden state per step into
 * ys[t] (position t, also for the reverse direction), the final h (and c) into *hl, *cl. W
 * (G*H, in), R (G*H, H), wb / rb (G*H) or NULL, p (3H) or NULL, h0 / c0 (b, H). */
static loom_status rnn_dir(nctx *c, const rnn *rn, loom_graph_expr *X, int64_t T, bool rev, loom_graph_expr *W,
                           loom_graph_expr *R, loom_graph_expr *wb, loom_graph_expr *rb, loom_graph_expr *p,
                           loom_graph_expr *h, loom_graph_expr *cc, loom_graph_expr **ys, loom_graph_expr **hl,
                           loom_graph_expr **cl) {
  static const int64_t ax0 = 0;
  loom_graph_expr *xw;
  rnn_w w;
  LOOM_PROPAGATE(lin(c, X, W, wb, &xw)); /* (T, b, G*H) */
  LOOM_PROPAGATE(rnn_prep(c, rn, X, R, rb, p, &w));
  for (int64_t s = 0; s < T; s++) {
    int64_t t = rev ? T - 1 - s : s;
    loom_graph_expr *xt, *tk = NULL, *hn, *cn;
    LOOM_PROPAGATE(slice_k(c, xw, 0, t, t + 1, 1, &xt));
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &ax0));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQUEEZE, xt, &xt)); /* (b, G*H) */
    if (rn->lens) LOOM_PROPAGATE(oimp_scalar(c, LOOM_DTYPE_I64, (double)t, &tk));
    LOOM_PROPAGATE(rnn_step(c, rn, &w, xt, tk, h, cc, &ys[t], &hn, &cn));
    h = hn;
    if (cn) cc = cn;
  }
  *hl = h, *cl = cc;
  return LOOM_OK;
}

/* One direction as a loop over a symbolic T (onnx_import_loop.c): the state carried, each
 * step's output stacked. */
typedef struct rnn_loop {
  const rnn *rn;
  const rnn_w *w;
  loom_graph_expr *xw; /* (T, b, G*H) */
  const loom_sym_expr *T;
  bool rev;
} rnn_loop;

static loom_status rnn_loop_body(nctx *c, void *ud, const loom_sym_expr *i, loom_graph_expr *const *params,
                                 loom_graph_expr **cond_out, loom_graph_expr **next, loom_graph_expr **scans) {
  (void)cond_out;
  const rnn_loop *rl = ud;
  loom_sym_ctx *cx = c->im->cx;
  static const int64_t ax0 = 0;
  const loom_sym_expr *t = rl->rev ? loom_sym_sub(cx, loom_sym_sub(cx, rl->T, i), loom_sym_const(cx, 1)) : i;
  loom_graph_expr *xt, *tk = NULL, *cn;
  LOOM_PROPAGATE(slice(c, rl->xw, 0, t, loom_sym_add(cx, t, loom_sym_const(cx, 1)), &xt));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &ax0));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQUEEZE, xt, &xt)); /* (b, G*H) */
  if (rl->rn->lens) {
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "values", 1, &t));
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "scalar", 1));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SYM_TENSOR, 0, NULL, NULL, &tk));
  }
  LOOM_PROPAGATE(rnn_step(c, rl->rn, rl->w, xt, tk, params[0], rl->rn->gates == 4 ? params[1] : NULL, &scans[0], &next[0], &cn));
  if (rl->rn->gates == 4) next[1] = cn;
  return LOOM_OK;
}

static loom_status rnn_dir_loop(nctx *c, const rnn *rn, loom_graph_expr *X, const loom_sym_expr *T, bool rev, loom_graph_expr *W,
                                loom_graph_expr *R, loom_graph_expr *wb, loom_graph_expr *rb, loom_graph_expr *p,
                                loom_graph_expr *h, loom_graph_expr *cc, loom_graph_expr **Y, loom_graph_expr **hl,
                                loom_graph_expr **cl) {
  rnn_w w;
  rnn_loop rl = {.rn = rn, .w = &w, .T = T, .rev = rev};
  LOOM_PROPAGATE(lin(c, X, W, wb, &rl.xw)); /* (T, b, G*H): every step's input at once */
  LOOM_PROPAGATE(rnn_prep(c, rn, X, R, rb, p, &w));
  loom_graph_expr *count = loom_graph_sym_new(c->im->m, T), *inits[2] = {h, cc}, *finals[2];
  if (!count) return LOOM_OOM();
  static const char *const names[2] = {"h", "c"};
  char name[256];
  snprintf(name, sizeof name, "%s_%s", c->n->outputs[0][0] ? c->n->outputs[0] : c->n->op_type, rev ? "rev" : "fwd");
  LOOM_PROPAGATE(oimp_loop_build(c, name, count, NULL, rn->gates == 4 ? 2 : 1, inits, names, 1, rnn_loop_body, &rl, finals, Y));
  if (rev) LOOM_PROPAGATE(oimp_reverse_dyn(c, *Y, 0, Y)); /* stacked in step order: positions reversed */
  *hl = finals[0];
  *cl = rn->gates == 4 ? finals[1] : cc;
  return LOOM_OK;
}

/* The activation names of direction d (defaults: RNN Tanh; GRU Sigmoid, Tanh; LSTM Sigmoid,
 * Tanh, Tanh). */
static loom_status rnn_acts(nctx *c, rnn *rn, int64_t d, int64_t ndir) {
  static const char *const defs[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
  int nf = rn->gates == 1 ? 1 : rn->gates == 3 ? 2 : 3;
  for (int i = 0; i < nf; i++) rn->act[i] = defs[nf - 1][i];
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, "activations");
  if (!a) return LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_STRINGS) return BAD(c->n, "attribute 'activations' must be strings");
  if ((int64_t)a->count != nf * ndir)
    return BAD(c->n, "activations has %zu names, %lld expected", a->count, (long long)(nf * ndir));
  for (int i = 0; i < nf; i++) rn->act[i] = a->strings[d * nf + i];
  return LOOM_OK;
}

/* RNN, GRU and LSTM: the recurrence unrolled over a static sequence length, or a loop over a
 * symbolic one (its state carried, each step's output stacked), per direction (forward,
 * reverse, bidirectional), with layout, bias, initial state, peepholes, clip, custom Sigmoid /
 * Tanh / Relu activations and sequence_lens (forward only). */
static loom_status h_rnn(nctx *c, const op_entry *e, loom_graph_expr **out) {
  loom_sym_ctx *cx = c->im->cx;
  rnn rn = {.gates = !strcmp(e->onnx, "RNN") ? 1 : !strcmp(e->onnx, "GRU") ? 3 : 4};
  const char *dir;
  int64_t hs, layout, lbr = 0, ifg = 0, T;
  LOOM_PROPAGATE(oimp_attr_int(c, "hidden_size", 0, &hs));
  LOOM_PROPAGATE(oimp_attr_int(c, "layout", 0, &layout));
  LOOM_PROPAGATE(oimp_attr_float(c, "clip", 0, &rn.clip));
  LOOM_PROPAGATE(oimp_attr_str(c, "direction", "forward", &dir));
  if (rn.gates == 3) LOOM_PROPAGATE(oimp_attr_int(c, "linear_before_reset", 0, &lbr));
  if (rn.gates == 4) LOOM_PROPAGATE(oimp_attr_int(c, "input_forget", 0, &ifg));
  if (ifg) return UNSUP(c->n, "input_forget is not supported");
  rn.lbr = lbr != 0;
  int64_t ndir = !strcmp(dir, "bidirectional") ? 2 : 1;
  if (ndir == 1 && strcmp(dir, "forward") && strcmp(dir, "reverse"))
    return BAD(c->n, "direction '%s' (forward | reverse | bidirectional)", dir);
  if (layout != 0 && layout != 1) return BAD(c->n, "layout %lld (0 or 1)", (long long)layout);
  if (oimp_in_rank(c, 0) != 3 || oimp_in_rank(c, 1) != 3 || oimp_in_rank(c, 2) != 3)
    return BAD(c->n, "X, W and R must be 3-D");
  loom_graph_expr *X = c->args[0], *W = c->args[1], *R = c->args[2];
  int64_t rh, wd;
  if (!loom_sym_is_const(dims_of(R)[2], &rh)) return UNSUP(c->n, "the hidden size must be static");
  if (hs && hs != rh) return BAD(c->n, "hidden_size %lld but R has %lld columns", (long long)hs, (long long)rh);
  rn.H = rh;
  if (loom_sym_is_const(dims_of(W)[0], &wd) && wd != ndir)
    return BAD(c->n, "W has %lld directions, direction '%s' needs %lld", (long long)wd, dir, (long long)ndir);
  static const int64_t p102[3] = {1, 0, 2};
  if (layout) LOOM_PROPAGATE(permute(c, X, 3, p102, &X));
  /* a short static length is unrolled (its positions fold into every slice), a symbolic or long
   * one is a loop (OIMP_UNROLL_STEPS) */
  const loom_sym_expr *Tsym = dims_of(X)[0];
  bool loop_form = !loom_sym_is_const(Tsym, &T) || T > oimp_unroll_steps();
  if (!loop_form && T < 1) return UNSUP(c->n, "the sequence length is %lld: the outputs' shapes are unknown", (long long)T);
  loom_graph_expr *B = c->nargs > 3 ? c->args[3] : NULL, *h0 = c->nargs > 5 ? c->args[5] : NULL;
  loom_graph_expr *c0 = rn.gates == 4 && c->nargs > 6 ? c->args[6] : NULL, *P = rn.gates == 4 && c->nargs > 7 ? c->args[7] : NULL;
  if (c->nargs > 4 && c->args[4]) {
    if (ndir != 1 || !strcmp(dir, "reverse")) return UNSUP(c->n, "sequence_lens with direction '%s'", dir);
    static const int64_t ax1 = 1;
    loom_graph_expr *l = c->args[4];
    if (oimp_in_rank(c, 4) != 1) return BAD(c->n, "sequence_lens must be 1-D");
    LOOM_PROPAGATE(cast_to(c, l, LOOM_DTYPE_I64, NULL, &l));
    LOOM_PROPAGATE(expand_dims(c, l, 1, &ax1, &rn.lens)); /* (b, 1) */
  }
  if (layout) {
    if (h0) LOOM_PROPAGATE(permute(c, h0, 3, p102, &h0));
    if (c0) LOOM_PROPAGATE(permute(c, c0, 3, p102, &c0));
  }
  loom_graph_expr *zs;
  const loom_sym_expr *zd[2] = {dims_of(X)[1], loom_sym_const(cx, rn.H)};
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 2, zd));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", X->sinfo->dtype));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ZEROS, 0, NULL, NULL, &zs));
  loom_graph_expr **ys = calloc(loop_form ? 1 : (size_t)(T * ndir), sizeof *ys);
  loom_graph_expr *yd[2], *hd[2], *cd[2];
  if (!ys) return LOOM_OOM();
  loom_status st = LOOM_OK;
  static const int64_t ax0 = 0, ax1 = 1;
  for (int64_t d = 0; d < ndir && !st; d++) {
    loom_graph_expr *Wd, *Rd, *bd = NULL, *wb = NULL, *rb = NULL, *pd = NULL, *hi = zs, *ci = zs, *hl, *cl;
    if ((st = rnn_acts(c, &rn, d, ndir))) break;
    if ((st = dir_of(c, W, d, &Wd)) || (st = dir_of(c, R, d, &Rd))) break;
    if (B && ((st = dir_of(c, B, d, &bd)) || (st = slice_k(c, bd, 0, 0, rn.gates * rn.H, 1, &wb)) ||
              (st = slice_k(c, bd, 0, rn.gates * rn.H, 2 * rn.gates * rn.H, 1, &rb))))
      break;
    if (P && (st = dir_of(c, P, d, &pd))) break;
    if (h0 && (st = dir_of(c, h0, d, &hi))) break;
    if (c0 && (st = dir_of(c, c0, d, &ci))) break;
    bool rev = d == 1 || !strcmp(dir, "reverse");
    if (loop_form) {
      if ((st = rnn_dir_loop(c, &rn, X, Tsym, rev, Wd, Rd, wb, rb, pd, hi, ci, &yd[d], &hl, &cl))) break; /* (T, b, H) */
    } else {
      if ((st = rnn_dir(c, &rn, X, T, rev, Wd, Rd, wb, rb, pd, hi, ci, ys + d * T, &hl, &cl))) break;
      for (int64_t t = 0; t < T && !st; t++) st = expand_dims(c, ys[d * T + t], 1, &ax0, &ys[d * T + t]);
      if (!st) st = oimp_emit(c, LOOM_GRAPH_OP_CONCAT, (size_t)T, ys + d * T, NULL, &yd[d]); /* (T, b, H) */
    }
    if (!st) st = expand_dims(c, yd[d], 1, &ax1, &yd[d]);
    if (!st) st = expand_dims(c, hl, 1, &ax0, &hd[d]);
    if (!st) st = expand_dims(c, cl, 1, &ax0, &cd[d]);
  }
  free(ys);
  LOOM_PROPAGATE(st);
  loom_graph_expr *Y = yd[0], *Yh = hd[0], *Yc = cd[0];
  if (ndir == 2) {
    LOOM_PROPAGATE(concat(c, yd[0], yd[1], 1, &Y));
    LOOM_PROPAGATE(concat(c, hd[0], hd[1], 0, &Yh));
    LOOM_PROPAGATE(concat(c, cd[0], cd[1], 0, &Yc));
  }
  if (layout) {
    static const int64_t p2013[4] = {2, 0, 1, 3};
    LOOM_PROPAGATE(permute(c, Y, 4, p2013, &Y));
    LOOM_PROPAGATE(permute(c, Yh, 3, p102, &Yh));
    LOOM_PROPAGATE(permute(c, Yc, 3, p102, &Yc));
  }
  if (wants_output(c, 1)) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], Yh, NULL));
  if (wants_output(c, 2)) {
    if (rn.gates != 4) return BAD(c->n, "%s has two outputs", e->onnx);
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[2], Yc, NULL));
  }
  *out = Y;
  return LOOM_OK;
}

#define NOATTR " "
const op_entry oimp_seq_table[] = {
    {"Attention", LOOM_GRAPH_OP_ATTENTION, h_attention, 3, 7,
     " is_causal scale softcap qk_matmul_output_mode softmax_precision q_num_heads kv_num_heads ", true},
    {"RotaryEmbedding", OIMP_OP_NONE, h_rotary, 3, 4, " interleaved rotary_embedding_dim num_heads ", false},
    {"TensorScatter", OIMP_OP_NONE, h_tensor_scatter, 2, 3, " mode axis ", false},
    {"CausalConvWithState", OIMP_OP_NONE, h_causal_conv, 2, 4, " activation ", true},
    {"RNN", OIMP_OP_NONE, h_rnn, 3, 6, " activations clip direction hidden_size layout ", true},
    {"GRU", OIMP_OP_NONE, h_rnn, 3, 6, " activations clip direction hidden_size layout linear_before_reset ", true},
    {"LSTM", OIMP_OP_NONE, h_rnn, 3, 8, " activations clip direction hidden_size input_forget layout ", true},
    {"LinearAttention", OIMP_OP_NONE, h_linear_attention, 3, 6, " chunk_size kv_num_heads q_num_heads scale update_rule ", true},
};
const size_t oimp_seq_table_len = sizeof oimp_seq_table / sizeof oimp_seq_table[0];
