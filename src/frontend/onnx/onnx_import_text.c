/* onnx_import_text.c — TfIdfVectorizer (integer pools) built from graph ops at import.
 *
 * The reference (onnx.reference's op_tfidf_vectorizer, after ORT's tfidf_vectorizer.cc) walks a
 * trie of the pool's n-grams from each position of each row. The same counts, written as
 * tensors: an n-gram g of size n (min_gram_length <= n <= max_gram_length) occurs at position i
 * with skip distance d (1 .. max_skip_count + 1) when X[i + k d] == g[k] for every k < n and
 * i + (n - 1) d < C. Unigrams are counted once (d = 1 only), longer n-grams once per distance.
 * So, per gram size n and column k of its grams, E_k = (X[b, i, None] == pool_k[None, None, :])
 * as f32 ([B, C, P_n]); E_k shifted left by k d along the positions (padded with zeros at the
 * end, then sliced back to C) and multiplied over k marks the windows; their sum over the
 * positions counts each gram ([B, P_n]). A constant one-hot matrix [P_n, output_size] (row j:
 * ngram_indexes[j]) moves the counts to their output columns through a matmul; the weighting
 * (TF: the count, IDF: weights[i] (1 without weights) where the count is > 0, TFIDF: weights[i] *
 * count) follows. A pool n-gram given twice counts once, in the later one's column, as the
 * reference's trie does. X is [C] (result [output_size]) or [B, C] (result [B, output_size]). */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

/* The attributes of one TfIdfVectorizer node, checked against each other. */
typedef struct tfidf {
  int64_t min_n, max_n, max_skip; /* gram lengths counted; the largest skip count */
  int mode;                       /* 0: TF, 1: IDF, 2: TFIDF */
  const int64_t *pool;            /* pool_int64s */
  size_t npool;
  const int64_t *counts;          /* ngram_counts: where the grams of size i + 1 start in pool */
  size_t ncounts;
  const int64_t *index;           /* ngram_indexes: the output column of each gram, pool order */
  size_t nindex;
  const float *weights;           /* weights (NULL when absent): one per output column */
  size_t nweights;
  int64_t out_size;               /* max(ngram_indexes) + 1 */
} tfidf;

/* Reads and checks the attributes (errors name the attribute and the values). */
static loom_status tfidf_attrs(nctx *c, tfidf *t) {
  const char *mode;
  bool pr;
  LOOM_PROPAGATE(oimp_attr_int(c, "min_gram_length", 0, &t->min_n));
  LOOM_PROPAGATE(oimp_attr_int(c, "max_gram_length", 0, &t->max_n));
  LOOM_PROPAGATE(oimp_attr_int(c, "max_skip_count", 0, &t->max_skip));
  LOOM_PROPAGATE(oimp_attr_str(c, "mode", "", &mode));
  if (!strcmp(mode, "TF")) t->mode = 0;
  else if (!strcmp(mode, "IDF")) t->mode = 1;
  else if (!strcmp(mode, "TFIDF")) t->mode = 2;
  else return BAD(c->n, "attribute 'mode' is '%s' (TF | IDF | TFIDF)", mode);
  if (t->min_n < 1 || t->max_n < t->min_n || t->max_n > 16)
    return BAD(c->n, "min_gram_length %lld and max_gram_length %lld: 1 <= min <= max <= 16 is required", (long long)t->min_n, (long long)t->max_n);
  if (t->max_skip < 0 || t->max_skip > 64) return BAD(c->n, "attribute 'max_skip_count' is %lld (0 to 64)", (long long)t->max_skip);
  if (loom_onnx_node_attr(c->n, "pool_strings")) return UNSUP(c->n, "a pool of strings (pool_strings): string tensors are not supported");
  LOOM_PROPAGATE(oimp_attr_ints(c, "pool_int64s", &t->pool, &t->npool, &pr));
  if (!pr) return BAD(c->n, "attribute 'pool_int64s' is required");
  LOOM_PROPAGATE(oimp_attr_ints(c, "ngram_counts", &t->counts, &t->ncounts, &pr));
  if (!pr) return BAD(c->n, "attribute 'ngram_counts' is required");
  LOOM_PROPAGATE(oimp_attr_ints(c, "ngram_indexes", &t->index, &t->nindex, &pr));
  if (!pr || !t->nindex) return BAD(c->n, "attribute 'ngram_indexes' is required (not empty)");
  size_t grams = 0;
  for (size_t i = 0; i < t->ncounts; i++) {
    int64_t lo = t->counts[i], hi = i + 1 < t->ncounts ? t->counts[i + 1] : (int64_t)t->npool;
    if (lo < 0 || hi < lo || hi > (int64_t)t->npool)
      return BAD(c->n, "ngram_counts[%zu] = %lld: the counts must ascend within the pool of %zu", i, (long long)lo, t->npool);
    if ((hi - lo) % (int64_t)(i + 1)) return BAD(c->n, "%lld pool items for grams of length %zu (not a multiple)", (long long)(hi - lo), i + 1);
    grams += (size_t)(hi - lo) / (i + 1);
  }
  if (t->nindex != grams) return BAD(c->n, "ngram_indexes has %zu entries for the pool's %zu n-grams", t->nindex, grams);
  t->out_size = 0;
  for (size_t j = 0; j < t->nindex; j++) {
    if (t->index[j] < 0 || t->index[j] >= (1 << 24)) return BAD(c->n, "ngram_indexes[%zu] = %lld is out of range", j, (long long)t->index[j]);
    if (t->index[j] + 1 > t->out_size) t->out_size = t->index[j] + 1;
  }
  const loom_onnx_attr *w = loom_onnx_node_attr(c->n, "weights");
  t->weights = NULL, t->nweights = 0;
  if (w) {
    if (w->kind != LOOM_ONNX_ATTR_FLOATS) return BAD(c->n, "attribute 'weights' must be floats");
    if (w->count && w->count < (size_t)t->out_size)
      return BAD(c->n, "attribute 'weights' has %zu values for %lld output columns", w->count, (long long)t->out_size);
    if (w->count) t->weights = w->floats, t->nweights = w->count;
  }
  return LOOM_OK;
}

/* A new zeroed tensor (rank 1 or 2) to fill, then as_const it. */
static loom_status const_tensor(nctx *c, loom_dtype dt, size_t rank, const int64_t *dims, loom_onnx_tensor **t) {
  return (*t = oimp_new_tensor(c->im, dt, rank, dims)) ? LOOM_OK : LOOM_OOM();
}

/* The filled tensor t as a graph constant (the module copies the data now). */
static loom_status as_const(nctx *c, const loom_onnx_tensor *t, loom_graph_expr **e) {
  return (*e = oimp_const_of(c->im, t)) ? LOOM_OK : LOOM_OOM();
}

/* Whether gram j (of size n, at pool[at]) appears again later among the grams of its size. */
static bool repeated_later(const int64_t *pool, int64_t at, int64_t end, int64_t n) {
  for (int64_t q = at + n; q + n <= end; q += n)
    if (!memcmp(pool + at, pool + q, (size_t)n * sizeof *pool)) return true;
  return false;
}

/* The counts of the grams of size n (pool[lo..hi)) in x3 ([B, C, 1] i64), moved to the output
 * columns: [B, out_size] f32, added to *acc (NULL: none yet). first: the gram number of pool[lo]. */
static loom_status count_size(nctx *c, const tfidf *t, loom_graph_expr *x3, const loom_sym_expr *cdim, int64_t n, int64_t lo,
                              int64_t hi, size_t first, loom_graph_expr **acc) {
  loom_sym_ctx *cx = c->im->cx;
  int64_t p = (hi - lo) / n, dims[2] = {p, t->out_size}, one = 1;
  loom_onnx_tensor *mt;
  loom_graph_expr *mat, *e[16], *sum = NULL;
  LOOM_PROPAGATE(const_tensor(c, LOOM_DTYPE_F32, 2, dims, &mt));
  for (int64_t j = 0; j < p; j++)
    if (!repeated_later(t->pool, lo + j * n, hi, n)) ((float *)mt->data)[j * t->out_size + t->index[first + (size_t)j]] = 1;
  LOOM_PROPAGATE(as_const(c, mt, &mat));
  int64_t dmax = n == 1 ? 1 : t->max_skip + 1, shift = (n - 1) * dmax;
  for (int64_t k = 0; k < n; k++) {
    loom_onnx_tensor *pk;
    loom_graph_expr *pe;
    LOOM_PROPAGATE(const_tensor(c, LOOM_DTYPE_I64, 1, &p, &pk));
    for (int64_t j = 0; j < p; j++) ((int64_t *)pk->data)[j] = t->pool[lo + j * n + k];
    LOOM_PROPAGATE(as_const(c, pk, &pe));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_EQUAL, x3, pe, &e[k]));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F32));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, e[k], &e[k]));
    if (shift) {
      int64_t pads[6] = {0, 0, 0, 0, shift, 0};
      oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "pads", 6, pads));
      oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", 0));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PAD, e[k], &e[k]));
    }
  }
  for (int64_t d = 1; d <= dmax; d++) {
    loom_graph_expr *win = NULL;
    for (int64_t k = 0; k < n; k++) {
      loom_graph_expr *s = e[k];
      if (shift) {
        const loom_sym_expr *b = loom_sym_const(cx, k * d), *en = b ? loom_sym_add(cx, b, cdim) : NULL;
        if (!en) return LOOM_OOM();
        oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &one));
        oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "begin", 1, &b));
        oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "end", 1, &en));
        LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_STRIDED_SLICE, e[k], &s));
      }
      if (win) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, win, s, &win));
      else win = s;
    }
    if (sum) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, sum, win, &sum));
    else sum = win;
  }
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &one));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SUM, sum, &sum));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MATMUL, sum, mat, &sum));
  if (*acc) return oimp_op2(c, LOOM_GRAPH_OP_ADD, *acc, sum, acc);
  *acc = sum;
  return LOOM_OK;
}

static loom_status h_tfidf(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  tfidf t;
  LOOM_PROPAGATE(tfidf_attrs(c, &t));
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "input 0 (X) needs a known rank");
  if (si->ndim != 1 && si->ndim != 2) return BAD(c->n, "input 0 (X) has rank %d; [C] or [B, C] is required", si->ndim);
  if (si->dtype != LOOM_DTYPE_I32 && si->dtype != LOOM_DTYPE_I64)
    return UNSUP(c->n, "input 0 (X) has dtype %s (int32 or int64 only)", loom_dtype_name(si->dtype));
  loom_graph_expr *x = c->args[0], *acc = NULL;
  int64_t zero = 0, two = 2;
  if (si->dtype != LOOM_DTYPE_I64) {
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_I64));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, x, &x));
  }
  if (si->ndim == 1) {
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &zero));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, x, &x));
  }
  const loom_sym_expr *cdim = si->dims[si->ndim - 1], *bdim = si->ndim == 2 ? si->dims[0] : loom_sym_const(c->im->cx, 1);
  if (!bdim) return LOOM_OOM();
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &two));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, x, &x));
  size_t first = 0;
  for (size_t i = 0; i < t.ncounts; i++) {
    int64_t n = (int64_t)i + 1, lo = t.counts[i], hi = i + 1 < t.ncounts ? t.counts[i + 1] : (int64_t)t.npool;
    if (hi > lo && n >= t.min_n && n <= t.max_n) LOOM_PROPAGATE(count_size(c, &t, x, cdim, n, lo, hi, first, &acc));
    first += (size_t)((hi - lo) / n);
  }
  if (!acc) { /* no gram of a counted length: zeros */
    const loom_sym_expr *od = loom_sym_const(c->im->cx, t.out_size), *sh[2] = {bdim, od};
    if (!od) return LOOM_OOM();
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 2, sh));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F32));
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", 0));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_FULL, 0, NULL, NULL, &acc));
  }
  loom_graph_expr *w = NULL;
  if (t.weights && t.mode) {
    loom_onnx_tensor *wt;
    LOOM_PROPAGATE(const_tensor(c, LOOM_DTYPE_F32, 1, &t.out_size, &wt));
    memcpy(wt->data, t.weights, (size_t)t.out_size * sizeof(float));
    LOOM_PROPAGATE(as_const(c, wt, &w));
  }
  if (t.mode == 1) { /* IDF: presence */
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER, acc, 0, &acc));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F32));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, acc, &acc));
  }
  if (w) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, acc, w, &acc));
  if (si->ndim == 1) {
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &zero));
    return oimp_emit(c, LOOM_GRAPH_OP_SQUEEZE, 1, &acc, c->n->outputs[0], out);
  }
  *out = acc;
  return LOOM_OK;
}

/* default domain (onnx_tables.def) */
const op_entry oimp_text_table[] = {
    {"TfIdfVectorizer", OIMP_OP_NONE, h_tfidf, 1, 1,
     " max_gram_length max_skip_count min_gram_length mode ngram_counts ngram_indexes pool_int64s pool_strings weights ", false},
};
const size_t oimp_text_table_len = sizeof oimp_text_table / sizeof oimp_text_table[0];
