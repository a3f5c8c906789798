/* test_e2e_qconv.c — ONNX QLinearConv and ConvInteger with constant weights, which the importer
 * lowers to an int8 GEMM over the input's patches (onnx_import_quant.c: channels-last input padded
 * with the x zero point, the taps concatenated, matmul_integer with the weights laid out and
 * packed at compile time, requantization in the matmul's epilogue, the result transposed back).
 * Each form is one model with batch and spatial extents symbolic, compiled once and run at batch
 * 0, 1, 2 and 3, at the smallest spatial extents with an output, at primes and at extents that
 * are not multiples of the tiles, with 1 and 2 threads, on inputs over the whole u8 / i8 range.
 * The compiled output must equal, element for element, a direct evaluation of the ONNX
 * definition written here (int32 accumulation of the centred operands, the scale x_scale *
 * w_scale / y_scale in float32, then acc * scale + y_zero_point in float64 rounded half to even
 * and saturated), and the reference interpreter's output of the imported module. Covered:
 * 1-D / 2-D / 3-D, strides, dilations, asymmetric pads, groups, per-channel scales, per-channel
 * zero points (equal: the GEMM; distinct: the composed form), u8 and i8 inputs and weights, and
 * the forms that keep the composed conv (depthwise, many small groups), checked to take their
 * path, and weights whose centred values fit a signed byte (the byte-quad kernel, dot4, where
 * the machine has AVX512-VNNI; pair words elsewhere) or lie in [-64, 63] (ORT's reduce_range:
 * byte quads with AVX2 too, dot4s's vpmaddubsw, whose byte pairs stay within i16). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"
#include "onnx/pb_writer.h"
#include "targets/cpu/codegen.h"

enum { ONNX_F32 = 1, ONNX_U8 = 2, ONNX_I8 = 3, ONNX_I32 = 6, MAXN = 3 };

typedef struct qform {
  int n;               /* spatial axes */
  int64_t c, o, groups;
  int64_t kernel[MAXN], stride[MAXN], dilation[MAXN], pad_lo[MAXN], pad_hi[MAXN];
  int xt, wt;          /* ONNX element types of x and w (u8 / i8) */
  bool per_channel;    /* w_scale per output channel */
  int wz_kind;         /* 0: scalar, 1: per channel, all equal, 2: per channel, distinct */
  bool integer;        /* ConvInteger (i32 output) instead of QLinearConv */
  bool gemm;           /* expected to take the GEMM path */
  int narrow;          /* w - wz within 1: [-100, 100] (byte quads with AVX512-VNNI), 2: [-64, 63] (ORT's
                          reduce_range: byte quads with AVX2 too, dot4s), 0: anywhere */
} qform;

typedef struct qparams {
  float xs, ys, ws[64];
  int64_t xz, yz, wz[64];
  int8_t *w; /* (o, c / groups, k..), raw bytes of wt */
  int64_t wn;
} qparams;

static void attr_ints(pb *attrs, const char *name, size_t n, const int64_t *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 7);
  for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
  pb_msg(attrs, 5, &a);
}

static void attr_int(pb *attrs, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 2), pb_int(&a, 3, v), pb_msg(attrs, 5, &a);
}

static void init(pb *g, const char *name, int elem, int rank, const int64_t *dims, const void *data, size_t bytes) {
  pb t = {0};
  for (int i = 0; i < rank; i++) pb_int(&t, 1, dims[i]);
  pb_int(&t, 2, elem);
  pb_str(&t, 8, name);
  pb_bytes(&t, 9, data, bytes);
  pb_msg(g, 5, &t);
}

static bool is_signed(int elem) { return elem == ONNX_I8; }

/* Writes the model of form f with parameters p to a temporary file; returns its path (static). */
static const char *write_model(const qform *f, const qparams *p) {
  static char path[64];
  pb g = {0}, model = {0}, attrs = {0};
  int64_t pads[2 * MAXN];
  for (int i = 0; i < f->n; i++) pads[i] = f->pad_lo[i], pads[f->n + i] = f->pad_hi[i];
  attr_ints(&attrs, "kernel_shape", (size_t)f->n, f->kernel);
  attr_ints(&attrs, "strides", (size_t)f->n, f->stride);
  attr_ints(&attrs, "dilations", (size_t)f->n, f->dilation);
  attr_ints(&attrs, "pads", 2 * (size_t)f->n, pads);
  attr_int(&attrs, "group", f->groups);
  const char *qins[] = {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", NULL}, *iins[] = {"x", "w", "xz", "wz", NULL};
  const char *outs[] = {"y", NULL};
  pb_node(&g, f->integer ? "ConvInteger" : "QLinearConv", "n", f->integer ? iins : qins, outs, &attrs);
  int64_t wd[2 + MAXN] = {f->o, f->c / f->groups}, one = 1;
  for (int i = 0; i < f->n; i++) wd[2 + i] = f->kernel[i];
  init(&g, "w", f->wt, f->n + 2, wd, p->w, (size_t)p->wn);
  uint8_t xz = (uint8_t)p->xz, yz = (uint8_t)p->yz, wz[64];
  for (int64_t i = 0; i < f->o; i++) wz[i] = (uint8_t)p->wz[i];
  init(&g, "xz", f->xt, 0, NULL, &xz, 1);
  if (f->wz_kind) init(&g, "wz", f->wt, 1, &f->o, wz, (size_t)f->o);
  else init(&g, "wz", f->wt, 0, NULL, wz, 1);
  if (!f->integer) {
    init(&g, "xs", ONNX_F32, 0, NULL, &p->xs, 4);
    init(&g, "ys", ONNX_F32, 0, NULL, &p->ys, 4);
    init(&g, "yz", f->xt, 0, NULL, &yz, 1);
    if (f->per_channel) init(&g, "ws", ONNX_F32, 1, &f->o, p->ws, 4 * (size_t)f->o);
    else init(&g, "ws", ONNX_F32, 1, &one, p->ws, 4);
  }
  static const char *const sp[MAXN] = {"H", "W", "D"};
  char cs[16];
  snprintf(cs, sizeof cs, "%lld", (long long)f->c);
  const char *xd[2 + MAXN] = {"N", cs};
  for (int i = 0; i < f->n; i++) xd[2 + i] = sp[i];
  pb_value_info(&g, 11, "x", f->xt, f->n + 2, xd);
  pb_value_info(&g, 12, "y", f->integer ? ONNX_I32 : f->xt, -1, NULL);
  pb_model(&model, 13, &g);
  snprintf(path, sizeof path, "/tmp/loom-qconv-XXXXXX.onnx");
  int fd = mkstemps(path, 5);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, model.d, model.len), (ssize_t)model.len);
  close(fd);
  pb_free(&model);
  return path;
}

/* The ONNX definition, directly: y[b, oc, y..] for x (b, c, h..). */
static void reference(const qform *f, const qparams *p, const int64_t *xshape, const void *xdata, const int64_t *yshape,
                      double *out) {
  int64_t cg = f->c / f->groups, og = f->o / f->groups, nsp = 1, K = 1;
  for (int i = 0; i < f->n; i++) nsp *= yshape[2 + i], K *= f->kernel[i];
  const uint8_t *xu = xdata;
  const int8_t *xi = xdata;
  for (int64_t b = 0; b < yshape[0]; b++)
    for (int64_t oc = 0; oc < f->o; oc++) {
      int64_t g = oc / og;
      float s = (p->xs * p->ws[f->per_channel ? oc : 0]) / p->ys;
      for (int64_t q = 0; q < nsp; q++) {
        int64_t yi[MAXN], rem = q;
        for (int i = f->n; i-- > 0;) yi[i] = rem % yshape[2 + i], rem /= yshape[2 + i];
        int64_t acc = 0;
        for (int64_t ci = 0; ci < cg; ci++)
          for (int64_t t = 0; t < K; t++) {
            int64_t ti[MAXN], tr = t, xoff = b * f->c + g * cg + ci;
            for (int i = f->n; i-- > 0;) ti[i] = tr % f->kernel[i], tr /= f->kernel[i];
            bool inside = true;
            for (int i = 0; i < f->n; i++) {
              int64_t h = yi[i] * f->stride[i] + ti[i] * f->dilation[i] - f->pad_lo[i];
              inside = inside && h >= 0 && h < xshape[2 + i];
              xoff = xoff * xshape[2 + i] + h;
            }
            if (!inside) continue;
            int64_t xv = is_signed(f->xt) ? xi[xoff] : xu[xoff];
            int64_t wraw = p->w[(oc * cg + ci) * K + t], wv = is_signed(f->wt) ? wraw : (uint8_t)wraw;
            acc += (xv - p->xz) * (wv - p->wz[f->wz_kind ? oc : 0]);
          }
        double v;
        if (f->integer) {
          v = (double)acc;
        } else {
          double lo = is_signed(f->xt) ? -128 : 0, hi = is_signed(f->xt) ? 127 : 255;
          v = nearbyint((double)acc * (double)s + (double)p->yz);
          v = v < lo ? lo : v > hi ? hi : v;
        }
        out[(b * f->o + oc) * nsp + q] = v;
      }
    }
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}

/* Whether the compiled module holds a convolution program (the composed form; the GEMM form has
 * none: its matmul_integer takes the requantization as its epilogue and is renamed fused_..). */
static bool has_conv_program(const e2e_model *md) {
  loom_graph_module *m = loom_compiled_module(md->c);
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++)
    if (strstr(loom_tp_func_name(loom_graph_module_tp_at(m, i)), "conv")) return true;
  return false;
}

/* Whether the compiled module holds byte-quad weights (pack's column sums, @..._packed_1). */
static bool has_quads(const e2e_model *md) {
  loom_graph_module *m = loom_compiled_module(md->c);
  for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) {
    const char *n = loom_graph_module_const_at(m, i)->name;
    size_t len = strlen(n);
    if (len > 9 && !strcmp(n + len - 9, "_packed_1")) return true;
  }
  return false;
}

/* Weight element i (o, c / groups, k..) less its channel's zero point. */
static int64_t centred(const qform *f, const qparams *p, int64_t i) {
  int64_t wv = is_signed(f->wt) ? (int64_t)p->w[i] : (int64_t)(uint8_t)p->w[i];
  return wv - p->wz[i / (p->wn / f->o)];
}

/* Whether the GEMM's weight keeps dot4s's promise (graph/pass_pack.c quad_pairs_fit): along its k
 * (taps outer, a group's channels inner: the patches concatenated tap by tap), every pair of rows
 * 2u, 2u + 1 of a column has positives summing to at most 128 and negatives to at least -128. */
static bool pairs_fit(const qform *f, const qparams *p) {
  int64_t cg = f->c / f->groups, taps = p->wn / (f->o * cg), K = cg * taps;
  for (int64_t oc = 0; oc < f->o; oc++)
    for (int64_t r = 0; r < K; r += 2) {
      int64_t pos = 0, neg = 0;
      for (int64_t q = r; q < r + 2 && q < K; q++) { /* GEMM row q: tap q / cg, channel q % cg */
        int64_t v = centred(f, p, (oc * cg + q % cg) * taps + q / cg);
        if (v > 0) pos += v;
        else neg += v;
      }
      if (pos > 128 || neg < -128) return false;
    }
  return true;
}

/* Compiles form f once and checks it at several shapes and thread counts; returns the runs. */
static int check_form(const qform *f) {
  qparams p = {.xs = 0.02f};
  p.xz = is_signed(f->xt) ? -7 : 131;
  p.yz = is_signed(f->xt) ? 5 : 120;
  int64_t K = 1;
  for (int i = 0; i < f->n; i++) K *= f->kernel[i];
  p.wn = f->o * (f->c / f->groups) * K;
  /* the accumulator's spread is about 5500 sqrt(C/G K): y spans about +-40 steps (some saturate) */
  p.ys = 0.02f * 0.006f * sqrtf((float)(f->c / f->groups * K)) * 140.0f;
  p.w = malloc((size_t)p.wn);
  for (int64_t i = 0; i < f->o; i++) {
    p.ws[i] = 0.004f + 0.001f * (float)(i % 5);
    p.wz[i] = f->wz_kind == 2 ? (int64_t)(i % 3) - 1 : is_signed(f->wt) ? (f->wz_kind ? -3 : 2) : 119;
  }
  for (int64_t i = 0; i < p.wn; i++)
    p.w[i] = (int8_t)(f->narrow == 1   ? p.wz[i / (p.wn / f->o)] + (int64_t)(rnd() % 201) - 100
                      : f->narrow == 2 ? p.wz[i / (p.wn / f->o)] + (int64_t)(rnd() % 128) - 64
                                       : (int64_t)(rnd() & 0xff));
  const char *path = write_model(f, &p);
  e2e_model md = e2e_compile(path);
  cr_assert_eq(!has_conv_program(&md), f->gemm, "%s: the GEMM path is %s", path, f->gemm ? "not taken" : "taken");
  int64_t og = f->o / f->groups;
  /* at least one panel of output channels per group (not a multiple: the last panel padded) and
   * every centred weight a signed byte (narrow forms by construction, others by chance) */
  bool fits = true;
  for (int64_t i = 0; i < p.wn && fits; i++) fits = centred(f, &p, i) >= -128 && centred(f, &p, i) <= 127;
  bool quads = f->gemm && fits && og >= 32 && (loom_cpu_has_vnni512(NULL) || (loom_cpu_has_avx2(NULL) && pairs_fit(f, &p)));
  cr_assert_eq(has_quads(&md), quads, "%s: the byte-quad kernel is %s", path, quads ? "not taken" : "taken");
  static const int64_t extra[][MAXN] = {{0, 0, 0}, {4, 8, 1}, {12, 3, 2}, {21, 0, 5}};
  static const int64_t batches[] = {1, 2, 0, 3};
  int runs = 0;
  for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) {
    int64_t xs[2 + MAXN] = {batches[e], f->c}, ys[2 + MAXN] = {batches[e], f->o}, xn = batches[e] * f->c, yn = batches[e] * f->o;
    for (int i = 0; i < f->n; i++) {
      int64_t span = f->dilation[i] * (f->kernel[i] - 1) + 1;
      int64_t h = span - f->pad_lo[i] - f->pad_hi[i];
      if (h < 1) h = 1;
      h += extra[e][i];
      xs[2 + i] = h;
      ys[2 + i] = (h + f->pad_lo[i] + f->pad_hi[i] - span) / f->stride[i] + 1;
      xn *= h, yn *= ys[2 + i];
    }
    loom_tensor *x;
    loom_dtype xdt = is_signed(f->xt) ? LOOM_DTYPE_I8 : LOOM_DTYPE_U8;
    cr_assert_null(loom_rt_tensor_new(md.rt, xdt, f->n + 2, xs, &x));
    uint8_t *xb = x->data;
    for (int64_t i = 0; i < xn; i++) xb[i] = (uint8_t)(rnd() & 0xff);
    double *want = malloc(sizeof *want * (size_t)(yn ? yn : 1));
    reference(f, &p, xs, x->data, ys, want);
    e2e_bind b[1 + MAXN] = {{"N", xs[0]}, {"H", xs[2]}, {"W", f->n > 1 ? xs[3] : 0}, {"D", f->n > 2 ? xs[4] : 0}};
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      e2e_io io = {.given = {x}, .ngiven = 1};
      double worst = e2e_check(&md, "main", b, (size_t)(1 + f->n), false, &io);
      cr_assert_eq(worst, 0, "%s: compiled and the interpreter differ by %g", path, worst);
      const loom_tensor *y = io.out[0];
      cr_assert_eq(y->rank, f->n + 2);
      for (int d = 0; d < f->n + 2; d++) cr_assert_eq(y->shape[d], ys[d], "%s axis %d", path, d);
      for (int64_t i = 0; i < yn; i++) {
        double got = f->integer ? ((const int32_t *)y->data)[i]
                     : is_signed(f->xt) ? ((const int8_t *)y->data)[i]
                                        : ((const uint8_t *)y->data)[i];
        cr_assert_eq(got, want[i], "%s: shape %lld,%lld,%lld.. %u threads: y[%lld] = %g, the definition gives %g", path,
                     (long long)xs[0], (long long)xs[2], (long long)(f->n > 1 ? xs[3] : 0), threads, (long long)i, got, want[i]);
      }
      e2e_io_free(&io);
      runs++;
    }
    free(want);
    loom_tensor_release(x);
  }
  e2e_model_free(&md);
  unlink(path);
  free(p.w);
  return runs;
}

#define K2(a, b) {a, b, 0}
#define ONES {1, 1, 1}
#define ZEROS {0, 0, 0}

LOOM_TEST(e2e_qconv, qlinear_conv_2d_forms_equal_the_definition, .timeout = 600) {
  static const qform forms[] = {
      /* 3x3 pad 1, channels not multiples of anything */
      {2, 5, 7, 1, K2(3, 3), ONES, ONES, K2(1, 1), K2(1, 1), ONNX_U8, ONNX_I8, false, 0, false, true, 0},
      /* 7x7 pad 3: 49 taps, one concat (it once took 32 inputs at most) */
      {2, 3, 5, 1, K2(7, 7), ONES, ONES, K2(3, 3), K2(3, 3), ONNX_U8, ONNX_I8, false, 0, false, true, 0},
      /* strided, asymmetric pads, per-channel scales, 2 groups */
      {2, 6, 34, 2, K2(3, 2), K2(2, 3), ONES, K2(0, 1), K2(2, 0), ONNX_U8, ONNX_I8, true, 0, false, true, 0},
      /* dilated, u8 weights with a zero point, per-channel zero points all equal */
      {2, 3, 9, 1, K2(2, 3), ONES, K2(2, 3), K2(1, 2), K2(2, 1), ONNX_U8, ONNX_U8, true, 1, false, true, 0},
      /* 1x1 without padding (the input itself), i8 input */
      {2, 17, 33, 1, K2(1, 1), ONES, ONES, ZEROS, ZEROS, ONNX_I8, ONNX_I8, false, 0, false, true, 0},
      /* 1x1 strided */
      {2, 4, 40, 1, K2(1, 1), K2(2, 2), ONES, ZEROS, ZEROS, ONNX_U8, ONNX_I8, true, 0, false, true, 0},
      /* distinct per-channel weight zero points: the composed conv */
      {2, 4, 6, 1, K2(3, 3), ONES, ONES, K2(1, 1), K2(1, 1), ONNX_U8, ONNX_I8, true, 2, false, false, 0},
      /* depthwise and many small groups: the composed conv */
      {2, 8, 8, 8, K2(3, 3), ONES, ONES, K2(1, 1), K2(1, 1), ONNX_U8, ONNX_I8, false, 0, false, false, 0},
      {2, 8, 16, 4, K2(3, 3), K2(2, 2), ONES, K2(1, 0), K2(0, 1), ONNX_U8, ONNX_I8, true, 0, false, false, 0},
      /* weights whose centred values fit a signed byte: the byte-quad kernel on AVX512-VNNI */
      /* (at least a panel of output channels per group: the weights are packed at compile time) */
      {2, 5, 32, 1, K2(3, 3), ONES, ONES, K2(1, 1), K2(1, 1), ONNX_U8, ONNX_I8, false, 0, false, true, 1},
      {2, 3, 64, 1, K2(2, 3), ONES, K2(2, 3), K2(1, 2), K2(2, 1), ONNX_U8, ONNX_U8, true, 1, false, true, 1},
      {2, 17, 32, 1, K2(1, 1), ONES, ONES, ZEROS, ZEROS, ONNX_I8, ONNX_I8, false, 0, false, true, 1},
      {2, 6, 64, 2, K2(3, 2), K2(2, 3), ONES, K2(0, 1), K2(2, 0), ONNX_I8, ONNX_I8, true, 0, false, true, 1},
      /* ORT's reduce_range weights ([-64, 63] centred): byte quads with AVX2 too (dot4s: vpmaddubsw) */
      {2, 64, 64, 1, K2(3, 3), ONES, ONES, K2(1, 1), K2(1, 1), ONNX_U8, ONNX_I8, false, 0, false, true, 2},
      {2, 6, 64, 2, K2(3, 2), K2(2, 3), ONES, K2(0, 1), K2(2, 0), ONNX_I8, ONNX_I8, true, 0, false, true, 2},
      {2, 3, 64, 1, K2(2, 3), ONES, K2(2, 3), K2(1, 2), K2(2, 1), ONNX_U8, ONNX_U8, true, 1, false, true, 2},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_assert_eq(runs, 16 * 8);
}

LOOM_TEST(e2e_qconv, qlinear_conv_1d_3d_and_conv_integer_equal_the_definition, .timeout = 600) {
  static const qform forms[] = {
      {1, 7, 11, 1, {5}, {1}, {1}, {2}, {1}, ONNX_U8, ONNX_I8, true, 0, false, true, 0},
      {1, 12, 16, 2, {3}, {2}, {2}, {0}, {3}, ONNX_I8, ONNX_I8, false, 1, false, true, 0},
      /* 35 taps: the patches concatenated in runs of 32 */
      {1, 2, 9, 1, {35}, {3}, {1}, {17}, {4}, ONNX_U8, ONNX_I8, false, 0, false, true, 0},
      {3, 3, 8, 1, {2, 3, 2}, {1, 2, 1}, ONES, {1, 0, 1}, {0, 1, 1}, ONNX_U8, ONNX_I8, true, 0, false, true, 0},
      /* ConvInteger: the accumulator itself */
      {2, 5, 13, 1, K2(3, 3), K2(1, 2), ONES, K2(1, 1), K2(0, 2), ONNX_U8, ONNX_U8, false, 0, true, true, 0},
      {2, 3, 4, 1, K2(2, 2), ONES, ONES, ZEROS, ZEROS, ONNX_U8, ONNX_I8, false, 2, true, false, 0},
      {1, 2, 32, 1, {35}, {3}, {1}, {17}, {4}, ONNX_I8, ONNX_I8, false, 0, false, true, 1},
      {2, 5, 32, 1, K2(3, 3), K2(1, 2), ONES, K2(1, 1), K2(0, 2), ONNX_U8, ONNX_U8, false, 0, true, true, 1},
      {1, 7, 32, 1, {5}, {1}, {1}, {2}, {1}, ONNX_U8, ONNX_I8, true, 0, false, true, 2},
      {2, 5, 32, 1, K2(3, 3), K2(1, 2), ONES, K2(1, 1), K2(0, 2), ONNX_U8, ONNX_U8, false, 0, true, true, 2},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_assert_eq(runs, 10 * 8);
}
