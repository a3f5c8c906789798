/* pass_pack.c — constant matmul weights laid out once, in the panels the CPU matmul rule reads
 * (loom_graph_pack_weights).
 *
 *   matmul(x, W)                    W: const (k, n), f32, n >= P
 *     -> matmul(x, Wp, packed_b=true)    Wp: const (n / P, k, P), Wp[q, r, c] = W[r, q*P + c]
 *     -> matmul(x, Wp, packed_b=true, n=n)  when n is not a multiple of P: Wp (ceil(n / P), k, P),
 *        the last panel's columns >= n zero (an LM head's odd vocabulary)
 *   matmul(x, W, transpose_b=true)  W: const (n, k): the same with Wp[q, r, c] = W[q*P + c, r]
 *   linear(x, W)                    the same as matmul(x, W, transpose_b=true)
 *   linear(x, W, bias)              b_mm = that matmul; add(b_mm, bias) (fusion: the epilogue)
 *   matmul_integer(a, B, za, zb)    B: const (k, n) u8 / i8, zb const: B's centred i16 pair words
 *     -> matmul_integer(a, Bp, za, packed_b=true)   Bp: i32 (n / P, ceil(k / 2), P)
 *        (n not a multiple of P: ceil(n / P) panels, the last zero-padded, and n=n, as for f32)
 *     or, where the target reads byte quads (AVX512-VNNI) and every B - zb fits a signed byte,
 *     -> matmul_integer(a, Bq, za, cs, packed_b=true, quads=true)   Bq: i32 (n / P, ceil(k / 4), P)
 *        of four signed bytes B[4t + i, j] - zb, cs: i32 (n) their column sums
 *     or, where the target reads them with AVX2's vpmaddubsw (u8 x s8 products summed in pairs
 *     into i16, saturating) and every byte pair (4t, 4t + 1), (4t + 2, 4t + 3) of a column keeps
 *     its positive values' sum and its negative values' magnitudes' sum <= 128 (255 * 128 =
 *     32640: no saturation; ORT's reduce_range weights, [-64, 63], always do),
 *     -> the same with pairs=true (dot4s)
 *
 * P is the target's panel width (loom_target.matmul_panel: two vectors of f32). The register
 * tile then reads each panel of k x P contiguous floats where it lies: no per-call packing of
 * B, no strided reads of a weight row per k step (tensorprog/schedule_cpu.c). The packed
 * constant replaces the weight; the weight goes with dce when nothing else reads it. An f32 weight
 * that something other than a matmul's B operand also reads (a tied LM head: matmul(x, wte,
 * transpose_b=true) and take(wte, ids)) is not packed: the panels would be a second copy of it.
 * The reference (and the interpreter) compute the packed form exactly as the original. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/pass_internal.h"
#include "graph/wcache.h"
#include "tensorprog/tp_gen.h"

/* The version of the layouts this file writes: part of every packed-weight cache key, so that
 * a change of a layout (or of how a form's key is spelled) never reads an older entry. */
#define PACK_LAYOUT_VERSION 1
/* Packed constants smaller than this are made every time (hashing and a file cost more). */
#define PACK_CACHE_MIN_BYTES ((size_t)64 << 10)

/* A constant 2-D f32 operand with constant dims, or false. */
static bool const_matrix(const loom_graph_expr *w, int64_t *rows, int64_t *cols) {
  const loom_sinfo *si = w->sinfo;
  if (w->kind != LOOM_GRAPH_EXPR_CONST || si->kind != LOOM_SINFO_TENSOR || si->dtype != LOOM_DTYPE_F32 ||
      si->ndim != 2 || !si->dims)
    return false;
  return loom_sym_is_const(si->dims[0], rows) && loom_sym_is_const(si->dims[1], cols) &&
         w->u.cnst.nbytes == (size_t)(*rows * *cols) * sizeof(float);
}

/* The module constant name for the packed weight of binding b. */
static const char *packed_name(loom_pass *p, const loom_graph_binding *b, char *buf, size_t cap) {
  for (unsigned k = 0;; k++) {
    if (k) snprintf(buf, cap, "%s_%s_packed_%u", p->f->name, b->var->u.var.name, k);
    else snprintf(buf, cap, "%s_%s_packed", p->f->name, b->var->u.var.name);
    bool taken = false;
    for (size_t i = 0; i < loom_graph_module_num_consts(p->m) && !taken; i++)
      taken = !strcmp(loom_graph_module_const_at(p->m, i)->name, buf);
    if (!taken) return buf;
  }
}

/* A constant operand's single value (one element), or false. */
static bool const_scalar_i(const loom_graph_expr *e, int64_t *out) {
  if (e->kind != LOOM_GRAPH_EXPR_CONST || e->sinfo->kind != LOOM_SINFO_TENSOR) return false;
  size_t es = loom_dtype_size(e->sinfo->dtype);
  if (!es || e->u.cnst.nbytes != es) return false;
  loom_graph_tensor t = {.dtype = e->sinfo->dtype, .data = e->u.cnst.data};
  *out = loom_graph_tensor_get_i64(&t, 0);
  return true;
}

typedef struct pack_cfg {
  int panel;    /* the target's panel width */
  int quads;    /* a loom_pack_quads: int8 weights as byte quads (AVX512-VNNI; AVX2 when the pairs fit) */
  loom_map tied; /* constant data pointer -> 1: read by something other than a matmul's B operand */
  loom_wcache *cache; /* packed weights by content across compilations (NULL: none) */
  bool tied_copies;   /* f32 weights in `tied` are packed too (a second copy; loom_graph_pack_weights_tied) */
} pack_cfg;

/* The content hash of constant w's bytes (loom_wcache_content_hash) into hex[33]. When they lie in
 * a file the module recorded (loom_graph_module_add_source: an ONNX model's mapping), the hash is
 * first looked up by the file's identity, the offset and the length (wcache.h, `h-` files), so
 * that an unchanged model is not read through again; after hashing, it is remembered under that
 * identity only when the file still has it (nothing changed it while it was hashed) and it is
 * settled (loom_file_id_settled: a later write must change its times). */
static void source_hash(loom_pass *p, const loom_graph_expr *w, char hex[33]) {
  const pack_cfg *cfg = p->ud;
  const char *path;
  loom_file_id id, now;
  uint64_t off;
  char key[512];
  int n = 0;
  if (loom_graph_module_source_of(p->m, w->u.cnst.data, w->u.cnst.nbytes, &path, &id, &off)) {
    char idt[200];
    loom_file_id_text(&id, idt, sizeof idt);
    n = snprintf(key, sizeof key, "loom source bytes, version 1\nfile %s\noffset %llu bytes %zu\n", idt,
                 (unsigned long long)off, w->u.cnst.nbytes);
    if (n <= 0 || (size_t)n >= sizeof key) n = 0;
    else if (loom_wcache_memo_get(cfg->cache, key, (size_t)n, hex)) return;
  }
  loom_wcache_content_hash(w->u.cnst.data, w->u.cnst.nbytes, hex);
  if (n && loom_file_id_of(path, &now) && loom_file_id_equal(&id, &now) && loom_file_id_settled(&id))
    loom_wcache_memo_put(cfg->cache, key, (size_t)n, hex);
}

/* The key of a packed constant of `bytes` bytes made from constant w by `form` (the layout and
 * its parameters): the layout version, the form, the source's dtype, dims, size and XXH3-128
 * of its bytes (source_hash). False when it does not fit `cap`. */
static bool pack_key(loom_pass *p, const loom_graph_expr *w, const char *form, size_t bytes, char *key, size_t cap,
                     size_t *len) {
  char hex[33];
  source_hash(p, w, hex);
  int n = snprintf(key, cap, "loom packed weight, layout version %d\nform %s\nbytes %zu\nsource %s (", PACK_LAYOUT_VERSION,
                   form, bytes, loom_dtype_name(w->sinfo->dtype));
  for (int i = 0; i < w->sinfo->ndim && n > 0 && (size_t)n < cap; i++) {
    int64_t d = 0;
    if (!loom_sym_is_const(w->sinfo->dims[i], &d)) return false;
    n += snprintf(key + n, cap - (size_t)n, "%s%lld", i ? ", " : "", (long long)d);
  }
  if (n > 0 && (size_t)n < cap) n += snprintf(key + n, cap - (size_t)n, ") %zu bytes xxh3-128 %s\n", w->u.cnst.nbytes, hex);
  if (n <= 0 || (size_t)n >= cap) return false;
  *len = (size_t)n;
  return true;
}

/* A packed constant's bytes from the cache: *out mapped (kept by the module until it is
 * destroyed) on a hit; NULL otherwise, with the key in key[*klen] for pack_store (klen 0: not
 * cacheable, too small or no cache). */
static loom_status pack_lookup(loom_pass *p, const loom_graph_expr *w, const char *form, size_t bytes, char *key,
                               size_t cap, size_t *klen, void **out) {
  const pack_cfg *cfg = p->ud;
  *out = NULL;
  *klen = 0;
  if (!loom_wcache_usable(cfg->cache) || bytes < PACK_CACHE_MIN_BYTES || !w->u.cnst.data) return LOOM_OK;
  if (!pack_key(p, w, form, bytes, key, cap, klen)) return LOOM_OK;
  loom_wcache_blob *blob;
  if (!loom_wcache_get(cfg->cache, key, *klen, bytes, &blob)) return LOOM_OK;
  void *data = (void *)loom_wcache_blob_data(blob); /* read only: constants are never written */
  LOOM_PROPAGATE(loom_graph_module_adopt(p->m, blob, loom_wcache_blob_free));
  *out = data;
  return LOOM_OK;
}

/* Stores a packed constant made after a miss of pack_lookup (klen 0: nothing to do). */
static void pack_store(loom_pass *p, const char *key, size_t klen, const void *data, size_t bytes) {
  const pack_cfg *cfg = p->ud;
  if (klen) loom_wcache_put(cfg->cache, key, klen, data, bytes);
}

/* Marks in cfg->tied the constants binding b reads other than as an f32 matmul's B operand (a
 * tied LM head's embedding, which a gather also reads). Packing such a weight would keep two
 * copies of it (the panels and the original): the matmul reads it where it lies instead
 * (transposed B: dot products over rows of W, or the rule's own blocking). */
static loom_status mark_tied(loom_pass *p, loom_graph_binding *b, bool *drop) {
  (void)drop;
  pack_cfg *cfg = p->ud;
  const loom_graph_expr *v = b->value;
  if (v->kind == LOOM_GRAPH_EXPR_CONST && v->u.cnst.data)
    return loom_map_put(&cfg->tied, (uint64_t)(uintptr_t)v->u.cnst.data, 1) ? LOOM_OK : LOOM_OOM();
  if (v->kind != LOOM_GRAPH_EXPR_CALL) return LOOM_OK;
  bool mm = v->u.call.callee == LOOM_GRAPH_CALLEE_OP &&
            (v->u.call.op == LOOM_GRAPH_OP_MATMUL || v->u.call.op == LOOM_GRAPH_OP_LINEAR);
  for (size_t i = 0; i < v->u.call.nargs; i++) {
    const loom_graph_expr *a = v->u.call.args[i];
    if (!a || a->kind != LOOM_GRAPH_EXPR_CONST || !a->u.cnst.data || (mm && i == 1)) continue;
    if (!loom_map_put(&cfg->tied, (uint64_t)(uintptr_t)a->u.cnst.data, 1)) return LOOM_OOM();
  }
  return LOOM_OK;
}

/* The quad form of pack_int8 (B's centred values all fit a signed byte; `pairs`: its byte pairs
 * too, quad_pairs_fit). */
static loom_status pack_quads(loom_pass *p, loom_graph_binding *b, int64_t panel, int64_t k, int64_t n, int64_t zb, bool pairs) {
  const loom_graph_expr *v = b->value, *w = v->u.call.args[1];
  loom_graph_tensor src = {.dtype = w->sinfo->dtype, .data = w->u.cnst.data};
  int64_t kq = (k + 3) / 4, nq = (n + panel - 1) / panel;
  size_t wbytes = (size_t)(kq * nq * panel) * sizeof(uint32_t), sbytes = (size_t)n * sizeof(int32_t);
  /* the constants' own bytes, in the module arena (words past n: 0, the last panel's padding) */
  uint32_t *words = loom_arena_alloc_zero(loom_graph_module_arena(p->m), wbytes, 64);
  int32_t *sums = loom_arena_alloc_zero(loom_graph_module_arena(p->m), sbytes, 64);
  if (!words || !sums) return LOOM_OOM();
  for (int64_t q = 0; q < nq; q++)
    for (int64_t t = 0; t < kq; t++)
      for (int64_t c = 0; c < panel && q * panel + c < n; c++) {
        int64_t j = q * panel + c;
        uint32_t word = 0;
        for (int64_t i = 0; i < 4 && 4 * t + i < k; i++) {
          int64_t bv = loom_graph_tensor_get_i64(&src, (size_t)((4 * t + i) * n + j)) - zb;
          sums[j] += (int32_t)bv;
          word |= ((uint32_t)bv & 0xFFu) << (8 * i);
        }
        words[(q * kq + t) * panel + c] = word;
      }
  loom_sym_ctx *cx = loom_graph_module_sym(p->m);
  const loom_sym_expr *dims[3] = {loom_sym_const(cx, nq), loom_sym_const(cx, kq), loom_sym_const(cx, panel)};
  const loom_sym_expr *nd = loom_sym_const(cx, n);
  const loom_sinfo *ps = loom_sinfo_tensor(p->m, LOOM_DTYPE_I32, 3, dims, w->sinfo->device);
  const loom_sinfo *ss = loom_sinfo_tensor(p->m, LOOM_DTYPE_I32, 1, &nd, w->sinfo->device);
  loom_graph_expr *c = ps ? loom_graph_const_borrow(p->m, ps, words, wbytes) : NULL;
  loom_graph_expr *cs = ss ? loom_graph_const_borrow(p->m, ss, sums, sbytes) : NULL;
  if (!c || !cs) return LOOM_OOM();
  char name[256];
  LOOM_PROPAGATE(loom_graph_module_add_const(p->m, packed_name(p, b, name, sizeof name), c));
  LOOM_PROPAGATE(loom_graph_module_add_const(p->m, packed_name(p, b, name, sizeof name), cs));
  loom_graph_attr attrs[4] = {loom_graph_attr_bool(p->m, "packed_b", true), loom_graph_attr_bool(p->m, "quads", true)};
  size_t nattrs = 2;
  if (pairs) attrs[nattrs++] = loom_graph_attr_bool(p->m, "pairs", true);
  if (n % panel) attrs[nattrs++] = loom_graph_attr_int(p->m, "n", n); /* the true column count when the last panel is padded */
  for (size_t i = 0; i < nattrs; i++)
    if (!attrs[i].name) return LOOM_OOM();
  loom_graph_expr *args[4] = {v->u.call.args[0], c, v->u.call.args[2], cs};
  loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 4, args, nattrs, attrs);
  if (!nc) return LOOM_OOM();
  bool ok;
  return loom_pass_set_value(p, b, nc, &ok);
}

/* Whether every byte pair of the quads of src (k, n) - zb, rows (2u, 2u + 1) of a column (the
 * second 0 past k), keeps u8 x s8 sums within i16: its positive values sum to at most 128 and its
 * negative ones to at least -128 (255 * 128 = 32640 <= 32767). */
static bool quad_pairs_fit(const loom_graph_tensor *src, int64_t k, int64_t n, int64_t zb) {
  for (int64_t r = 0; r < k; r += 2)
    for (int64_t j = 0; j < n; j++) {
      int64_t v[2] = {loom_graph_tensor_get_i64(src, (size_t)(r * n + j)) - zb,
                      r + 1 < k ? loom_graph_tensor_get_i64(src, (size_t)((r + 1) * n + j)) - zb : 0};
      int64_t pos = (v[0] > 0 ? v[0] : 0) + (v[1] > 0 ? v[1] : 0), neg = (v[0] < 0 ? v[0] : 0) + (v[1] < 0 ? v[1] : 0);
      if (pos > 128 || neg < -128) return false;
    }
  return true;
}

/* matmul_integer(a, B, za, zb) with B (k, n) and zb constants:
 *   -> matmul_integer(a, Bp, za, packed_b=true)   Bp: i32 (n / P, ceil(k / 2), P) pair words,
 * low half B[2t, j] - zb, high half B[2t + 1, j] - zb (0 past k). */
static loom_status pack_int8(loom_pass *p, loom_graph_binding *b, const pack_cfg *cfg) {
  int64_t panel = cfg->panel;
  const loom_graph_expr *v = b->value;
  if (v->u.call.nargs != 4 || loom_graph_call_int(v, "packed_b")) return LOOM_OK;
  const loom_graph_expr *w = v->u.call.args[1];
  const loom_sinfo *si = w->sinfo;
  int64_t k, n, zb;
  if (w->kind != LOOM_GRAPH_EXPR_CONST || si->kind != LOOM_SINFO_TENSOR || si->ndim != 2 || !si->dims ||
      (si->dtype != LOOM_DTYPE_U8 && si->dtype != LOOM_DTYPE_I8) || !loom_sym_is_const(si->dims[0], &k) ||
      !loom_sym_is_const(si->dims[1], &n) || w->u.cnst.nbytes != (size_t)(k * n) || !const_scalar_i(v->u.call.args[3], &zb))
    return LOOM_OK;
  if (k < 1 || n < panel) return LOOM_OK;
  if (cfg->quads) {
    loom_graph_tensor src = {.dtype = si->dtype, .data = w->u.cnst.data};
    bool fits = true;
    for (int64_t i = 0; i < k * n && fits; i++) {
      int64_t bv = loom_graph_tensor_get_i64(&src, (size_t)i) - zb;
      fits = bv >= -128 && bv <= 127;
    }
    bool pairs = cfg->quads == LOOM_PACK_QUADS_PAIRS;
    if (fits && (!pairs || quad_pairs_fit(&src, k, n, zb))) return pack_quads(p, b, panel, k, n, zb, pairs);
  }
  int64_t kh = (k + 1) / 2, nq = (n + panel - 1) / panel;
  size_t bytes = (size_t)(kh * nq * panel) * sizeof(int32_t);
  char key[1024], form[128];
  size_t klen;
  snprintf(form, sizeof form, "i16 pair words, panel %lld, zero point %lld", (long long)panel, (long long)zb);
  uint32_t *words;
  LOOM_PROPAGATE(pack_lookup(p, w, form, bytes, key, sizeof key, &klen, (void **)&words));
  if (!words) {
    /* the constant's own bytes (past n: 0, the last panel's padding) */
    words = loom_arena_alloc_zero(loom_graph_module_arena(p->m), bytes, 64);
    if (!words) return LOOM_OOM();
    loom_graph_tensor src = {.dtype = si->dtype, .data = w->u.cnst.data};
    for (int64_t q = 0; q < nq; q++)
      for (int64_t t = 0; t < kh; t++)
        for (int64_t c = 0; c < panel && q * panel + c < n; c++) {
          int64_t j = q * panel + c;
          int64_t lo = loom_graph_tensor_get_i64(&src, (size_t)(2 * t * n + j)) - zb;
          int64_t hi = 2 * t + 1 < k ? loom_graph_tensor_get_i64(&src, (size_t)((2 * t + 1) * n + j)) - zb : 0;
          words[(q * kh + t) * panel + c] = ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16);
        }
    pack_store(p, key, klen, words, bytes);
  }
  loom_sym_ctx *cx = loom_graph_module_sym(p->m);
  const loom_sym_expr *dims[3] = {loom_sym_const(cx, nq), loom_sym_const(cx, kh), loom_sym_const(cx, panel)};
  const loom_sinfo *ps = loom_sinfo_tensor(p->m, LOOM_DTYPE_I32, 3, dims, si->device);
  loom_graph_expr *c = ps ? loom_graph_const_borrow(p->m, ps, words, bytes) : NULL;
  if (!c) return LOOM_OOM();
  char name[256];
  LOOM_PROPAGATE(loom_graph_module_add_const(p->m, packed_name(p, b, name, sizeof name), c));
  loom_graph_attr attrs[2] = {loom_graph_attr_bool(p->m, "packed_b", true), loom_graph_attr_int(p->m, "n", n)};
  size_t nattrs = n % panel ? 2 : 1; /* the true column count when the last panel is padded */
  if (!attrs[0].name || !attrs[1].name) return LOOM_OOM();
  loom_graph_expr *args[3] = {v->u.call.args[0], c, v->u.call.args[2]};
  loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 3, args, nattrs, attrs);
  if (!nc) return LOOM_OOM();
  bool ok;
  return loom_pass_set_value(p, b, nc, &ok);
}

/* conv1d / conv2d / conv(x, W[, bias]) with W a constant f32 (O, C/G, k..) of G groups, O/G a
 * multiple of the block B = LOOM_TP_CONV_BLOCK (a block's output channels in one group):
 *   -> conv(x, Wp[, bias], packed_w=B)   Wp: const (O/B, C/G, k.., B), Wp[q, c, t.., b] = W[q*B + b, c, t..]
 * the layout the convolution kernel over packed weights broadcasts from (B output channels per tap
 * contiguous; tensorprog/gen_conv_packed.c). */
static loom_status pack_conv(loom_pass *p, loom_graph_binding *b) {
  const loom_graph_expr *v = b->value, *x = v->u.call.args[0], *w = v->u.call.args[1];
  const int64_t B = LOOM_TP_CONV_BLOCK;
  int64_t G = loom_graph_call_int(v, "groups");
  if (loom_graph_call_int(v, "packed_w") || G < 1 || x->sinfo->kind != LOOM_SINFO_TENSOR ||
      x->sinfo->dtype != LOOM_DTYPE_F32 || !x->sinfo->dims || w->kind != LOOM_GRAPH_EXPR_CONST || w->sinfo->kind != LOOM_SINFO_TENSOR ||
      w->sinfo->dtype != LOOM_DTYPE_F32 || !w->sinfo->dims)
    return LOOM_OK;
  int n = loom_graph_conv_rank(v->u.call.op, x->sinfo->ndim);
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL || x->sinfo->ndim != n + 2 || w->sinfo->ndim != n + 2) return LOOM_OK;
  int64_t dims[2 + LOOM_TP_MAX_SPATIAL], per_o = 1;
  for (int i = 0; i < n + 2; i++) {
    if (!loom_sym_is_const(w->sinfo->dims[i], &dims[i]) || dims[i] < 1) return LOOM_OK;
    if (i) per_o *= dims[i];
  }
  if (dims[0] % (B * G) || w->u.cnst.nbytes != (size_t)(dims[0] * per_o) * sizeof(float)) return LOOM_OK;
  /* a grid that wastes whole columns per row (dilated kernels): left to legalization, tap by tap */
  loom_graph_icx ic = {.m = p->m, .cx = loom_graph_module_sym(p->m), .call = v, .op = loom_graph_op_name(v->u.call.op)};
  loom_graph_window gw;
  loom_status ws = loom_graph_conv_window(&ic, n, false, &gw);
  bool wasteful = !ws && loom_graph_conv_grid_wasteful(&gw, dims + 2, n);
  loom_status_free(ws);
  if (wasteful) return LOOM_OK;
  size_t bytes = (size_t)(dims[0] * per_o) * sizeof(float);
  char key[1024], form[64];
  size_t klen;
  snprintf(form, sizeof form, "conv blocks of %lld output channels", (long long)B);
  float *packed;
  LOOM_PROPAGATE(pack_lookup(p, w, form, bytes, key, sizeof key, &klen, (void **)&packed));
  if (!packed) {
    packed = loom_arena_alloc(loom_graph_module_arena(p->m), bytes, 64); /* the constant's own bytes */
    if (!packed) return LOOM_OOM();
    const uint8_t *src = w->u.cnst.data; /* read bytewise: any alignment (pack_rows) */
    for (int64_t o = 0; o < dims[0]; o++)
      for (int64_t r = 0; r < per_o; r++) memcpy(&packed[((o / B) * per_o + r) * B + o % B], src + (size_t)(o * per_o + r) * 4, 4);
    pack_store(p, key, klen, packed, bytes);
  }
  loom_sym_ctx *cx = loom_graph_module_sym(p->m);
  const loom_sym_expr *pd[3 + LOOM_TP_MAX_SPATIAL];
  pd[0] = loom_sym_const(cx, dims[0] / B);
  for (int i = 1; i < n + 2; i++) pd[i] = w->sinfo->dims[i];
  pd[n + 2] = loom_sym_const(cx, B);
  const loom_sinfo *si = loom_sinfo_tensor(p->m, LOOM_DTYPE_F32, n + 3, pd, w->sinfo->device);
  loom_graph_expr *c = si ? loom_graph_const_borrow(p->m, si, packed, bytes) : NULL;
  loom_graph_attr *attrs = LOOM_ARENA_ARRAY(loom_graph_module_arena(p->m), loom_graph_attr, v->u.call.nattrs + 1);
  if (!c || !attrs) return LOOM_OOM();
  char name[256];
  LOOM_PROPAGATE(loom_graph_module_add_const(p->m, packed_name(p, b, name, sizeof name), c));
  for (size_t i = 0; i < v->u.call.nattrs; i++) attrs[i] = v->u.call.attrs[i];
  attrs[v->u.call.nattrs] = loom_graph_attr_int(p->m, "packed_w", B);
  if (!attrs[v->u.call.nattrs].name) return LOOM_OOM();
  loom_graph_expr *args[3] = {(loom_graph_expr *)x, c, v->u.call.nargs > 2 ? v->u.call.args[2] : NULL};
  loom_graph_expr *nc = loom_pass_call_copy(p->m, v, v->u.call.nargs, args, v->u.call.nattrs + 1, attrs);
  if (!nc) return LOOM_OOM();
  bool ok;
  return loom_pass_set_value(p, b, nc, &ok);
}

/* Wp[q, r, c] = W[r, q*panel + c] for W (k, n): inlined with each constant `panel` it is called with.
 * `src` is read bytewise: an imported weight may lie at any alignment in its file (graph.h). */
static LOOM_ALWAYS_INLINE void pack_rows(float *packed, const uint8_t *src, int64_t k, int64_t n,
                                         int64_t panel) {
  const int64_t full = n / panel, rest = n % panel; /* rest: the zero-padded last panel's columns */
  for (int64_t r = 0; r < k; r++) {
    for (int64_t q = 0; q < full; q++)
      memcpy(&packed[(q * k + r) * panel], src + (size_t)(r * n + q * panel) * 4, (size_t)panel * sizeof(float));
    if (rest) {
      float *last = &packed[(full * k + r) * panel];
      memcpy(last, src + (size_t)(r * n + full * panel) * 4, (size_t)rest * sizeof(float));
      memset(last + rest, 0, (size_t)(panel - rest) * sizeof(float)); /* the padding */
    }
  }
}

/* Wp[q, r, c] = B[r, q*panel + c] with B = W (k, n), or W^T for transpose_b (W (n, k)); 0 past n
 * (the last panel's padding when n is not a multiple of the panel). `src`: as for pack_rows. */
static void pack_f32(float *packed, const uint8_t *src, int64_t k, int64_t n, int64_t panel, bool tb) {
  int64_t nq = (n + panel - 1) / panel;
  if (!tb) {
    /* row by row: each source row read once, in order, its panels written to their places; the
     * usual panel widths as copies of a constant size, which the compiler inlines (a call to
     * memcpy per 64 bytes made this loop 1.5-1.9x slower); a last panel of n % P
     * columns, its padding left 0 */
    switch (panel) {
    case 8: pack_rows(packed, src, k, n, 8); break;
    case 16: pack_rows(packed, src, k, n, 16); break;
    case 32: pack_rows(packed, src, k, n, 32); break;
    default: pack_rows(packed, src, k, n, panel); break;
    }
  } else {
    /* W^T: by blocks of 64 source columns, so that a block of W's rows stays in cache; the
     * last panel's padding columns zeroed first */
    for (int64_t r = 0; r < k && n % panel; r++)
      memset(&packed[((nq - 1) * k + r) * panel + n % panel], 0, (size_t)(panel - n % panel) * sizeof(float));
    for (int64_t q = 0; q < nq; q++)
      for (int64_t r0 = 0; r0 < k; r0 += 64) {
        int64_t r1 = r0 + 64 < k ? r0 + 64 : k;
        for (int64_t c = 0; c < panel && q * panel + c < n; c++) {
          const uint8_t *row = src + (size_t)((q * panel + c) * k) * 4;
          for (int64_t r = r0; r < r1; r++) memcpy(&packed[(q * k + r) * panel + c], row + (size_t)r * 4, 4);
        }
      }
  }
}

/* b = linear(x, W, bias) whose W was packed into the matmul `mm` ->
 *   b_mm = mm;  b = add(b_mm, bias)
 * (b_mm is dead, for dce, when the add does not fit b). */
static loom_status with_bias(loom_pass *p, loom_graph_binding *b, loom_graph_expr *mm, loom_graph_expr *bias) {
  loom_graph_expr *var;
  LOOM_PROPAGATE(loom_pass_add_before(p, b, "mm", mm, &var));
  if (!var) return LOOM_OK;
  loom_graph_expr *args[2] = {var, bias};
  loom_graph_expr *add = loom_graph_call_op(p->m, LOOM_GRAPH_OP_ADD, 2, args, 0, NULL);
  if (!add) return LOOM_OOM();
  bool ok;
  return loom_pass_set_value(p, b, add, &ok);
}

static loom_status visit(loom_pass *p, loom_graph_binding *b, bool *drop) {
  (void)drop;
  const pack_cfg *cfg = p->ud;
  const int64_t panel = cfg->panel;
  const loom_graph_expr *v = b->value;
  if (b->kind == LOOM_GRAPH_BIND_VAR && v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP &&
      v->u.call.op == LOOM_GRAPH_OP_MATMUL_INTEGER)
    return pack_int8(p, b, cfg);
  if (b->kind == LOOM_GRAPH_BIND_VAR && v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP &&
      (v->u.call.op == LOOM_GRAPH_OP_CONV1D || v->u.call.op == LOOM_GRAPH_OP_CONV2D || v->u.call.op == LOOM_GRAPH_OP_CONV) &&
      v->u.call.nargs >= 2)
    return pack_conv(p, b);
  /* linear(x, W) is matmul(x, W, transpose_b=true); with a bias, that matmul (a binding of its
   * own) plus the bias, which fusion makes the tile's epilogue */
  bool lin = b->kind == LOOM_GRAPH_BIND_VAR && v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP &&
             v->u.call.op == LOOM_GRAPH_OP_LINEAR && (v->u.call.nargs == 2 || v->u.call.nargs == 3);
  if (!lin && (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP ||
               v->u.call.op != LOOM_GRAPH_OP_MATMUL || v->u.call.nargs != 2 || loom_graph_call_int(v, "packed_b")))
    return LOOM_OK;
  const loom_graph_expr *x = v->u.call.args[0], *w = v->u.call.args[1];
  bool tb = lin || loom_graph_call_int(v, "transpose_b") != 0;
  int64_t rows, cols;
  if (x->sinfo->kind != LOOM_SINFO_TENSOR || x->sinfo->dtype != LOOM_DTYPE_F32 || !const_matrix(w, &rows, &cols)) return LOOM_OK;
  int64_t k = tb ? cols : rows, n = tb ? rows : cols;
  if (k < 1 || n < panel || (!cfg->tied_copies && loom_map_contains(&cfg->tied, (uint64_t)(uintptr_t)w->u.cnst.data)))
    return LOOM_OK;
  /* Wp[q, r, c] = B[r, q*panel + c] with B = W, or W^T for transpose_b; 0 past n (the last
   * panel's padding when n is not a multiple of the panel) */
  int64_t nq = (n + panel - 1) / panel;
  size_t bytes = (size_t)(nq * k * panel) * sizeof(float);
  /* the constant's own bytes, every one written below (not zeroed first: a pass over 340 MB
   * for a 12-layer GPT-2, and the page faults are taken by the copy either way) */
  char key[1024], form[64];
  size_t klen;
  snprintf(form, sizeof form, "f32 panels of %lld columns%s", (long long)panel, tb ? " of the transpose" : "");
  float *packed;
  LOOM_PROPAGATE(pack_lookup(p, w, form, bytes, key, sizeof key, &klen, (void **)&packed));
  if (!packed) {
    packed = loom_arena_alloc(loom_graph_module_arena(p->m), bytes, 64);
    if (!packed) return LOOM_OOM();
    pack_f32(packed, w->u.cnst.data, k, n, panel, tb);
    pack_store(p, key, klen, packed, bytes);
  }
  loom_sym_ctx *cx = loom_graph_module_sym(p->m);
  const loom_sym_expr *dims[3] = {loom_sym_const(cx, nq), loom_sym_const(cx, k), loom_sym_const(cx, panel)};
  const loom_sinfo *si = loom_sinfo_tensor(p->m, LOOM_DTYPE_F32, 3, dims, w->sinfo->device);
  loom_graph_expr *c = si ? loom_graph_const_borrow(p->m, si, packed, bytes) : NULL;
  if (!c) return LOOM_OOM();
  char name[256];
  LOOM_PROPAGATE(loom_graph_module_add_const(p->m, packed_name(p, b, name, sizeof name), c));
  /* the true column count when the last panel is padded */
  loom_graph_attr attrs[2] = {loom_graph_attr_bool(p->m, "packed_b", true), loom_graph_attr_int(p->m, "n", n)};
  size_t nattrs = n % panel ? 2 : 1;
  if (!attrs[0].name || !attrs[nattrs - 1].name) return LOOM_OOM();
  loom_graph_expr *args[2] = {(loom_graph_expr *)x, c};
  loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 2, args, nattrs, attrs);
  if (!nc) return LOOM_OOM();
  nc->u.call.op = LOOM_GRAPH_OP_MATMUL;
  bool ok;
  if (v->u.call.nargs == 2) return loom_pass_set_value(p, b, nc, &ok);
  return with_bias(p, b, nc, v->u.call.args[2]);
}

loom_status loom_graph_pack_weights(loom_graph_module *m, int panel, size_t *out_changed) {
  return loom_graph_pack_weights_ex(m, panel, LOOM_PACK_QUADS_NONE, out_changed);
}

loom_status loom_graph_pack_weights_ex(loom_graph_module *m, int panel, int quads, size_t *out_changed) {
  return loom_graph_pack_weights_cached(m, panel, quads, NULL, out_changed);
}

loom_status loom_graph_pack_weights_cached(loom_graph_module *m, int panel, int quads, loom_wcache *cache,
                                           size_t *out_changed) {
  return loom_graph_pack_weights_tied(m, panel, quads, false, cache, out_changed);
}

loom_status loom_graph_pack_weights_tied(loom_graph_module *m, int panel, int quads, bool tied, loom_wcache *cache,
                                         size_t *out_changed) {
  if (out_changed) *out_changed = 0;
  if (panel < 1) return LOOM_OK;
  pack_cfg cfg = {.panel = panel, .quads = quads, .cache = cache, .tied_copies = tied};
  loom_map_init(&cfg.tied, NULL);
  loom_pass t = {.m = m, .visit = mark_tied, .ud = &cfg};
  loom_status s = loom_pass_run(&t);
  loom_pass p = {.m = m, .visit = visit, .ud = &cfg};
  if (!s) s = loom_pass_run(&p);
  loom_map_destroy(&cfg.tied);
  if (!s && out_changed) *out_changed = p.changed;
  return s;
}
