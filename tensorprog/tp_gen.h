/* tp_gen.h — generators of tensor programs for operator families: what legalization
 * of graph operators calls. Attributes (rank, axes, broadcasting pattern, dtype)
 * specialise a program; shapes never do — every program has its own symbolic
 * dims and serves every shape.
 *
 * Generators build the program as IR with the program builder (tp_build.h); the program is
 * the one its printed text parses to. Expression templates given as text ("exp(x)",
 * value_text) are parsed with their operands bound. A generator's own mistake is an INTERNAL
 * error; bad attributes (axis out of range, rank too large) are INVALID_ARGUMENT. */
#ifndef LOOM_TENSORPROG_TP_GEN_H
#define LOOM_TENSORPROG_TP_GEN_H

#include "tensorprog/tp_ir.h"

enum { LOOM_TP_GEN_MAX_RANK = 8 };

/* ---- program keys ----
 * A caller that makes one program per distinct set of generator parameters (legalization) keeps
 * them in a parameter struct and keys its cache by the struct's bytes, so the key covers every
 * parameter without spelling each one out. For the bytes to be the value, a parameter struct
 * has no padding — fields of 4 or 8 bytes (int32_t, uint32_t, int64_t, double, enums, arrays of
 * them, char arrays of a multiple of 8), the 8-byte ones first; LOOM_TP_GEN_PARAMS asserts it
 * where the struct is defined — holds no pointers (a pointer's bytes are not its target's
 * value), and is built with an initialiser, so the fields it leaves out are 0. */
#define LOOM_TP_GEN_PARAMS(T, bytes) \
  _Static_assert(sizeof(T) == (bytes), #T ": a parameter struct must have no padding (its bytes are its key)")
/* The key of a parameter struct: a 64-bit hash of its bytes. Equal keys are still confirmed by
 * comparing the bytes. */
uint64_t loom_tp_gen_key(const void *params, size_t size);

/* How an input axis maps onto the output axis it is aligned with (NumPy broadcasting,
 * inputs aligned to the right). */
typedef enum loom_tp_bcast {
  LOOM_TP_BCAST_FULL,  /* same extent as the output axis: index with the output's loop variable */
  LOOM_TP_BCAST_ONE,   /* extent 1, broadcast: index 0 */
  LOOM_TP_BCAST_GUARD, /* unknown at compile time whether it is 1: select(extent == 1, 0, i) */
} loom_tp_bcast;

/* Y = f(X), elementwise. `expr` is a tensor-program expression over `x` (e.g. "exp(x)",
 * "max(x, 0.0)", "x * sigmoid(x)"); literals take x's dtype, and it must produce `out`. */
loom_status loom_tp_gen_unary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, loom_dtype in,
                              loom_dtype out, int rank, loom_tp_func **result);

/* Y = f(inputs...) with broadcasting, for n <= 4 inputs named a, b, c, d in `expr` (buffers
 * A, B, C, D; result Y). Input i has dtype in[i], rank ranks[i] and axis modes modes[i]. */
loom_status loom_tp_gen_nary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, int n,
                             const loom_dtype *in, loom_dtype out, const int *ranks, const loom_tp_bcast *const *modes,
                             loom_tp_func **result);

/* Y = X broadcast to rank out_rank >= rank (X aligned right; axis modes as loom_tp_gen_nary's). */
loom_status loom_tp_gen_broadcast(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                  const loom_tp_bcast *modes, int out_rank, loom_tp_func **result);

/* C = f(A, B) with broadcasting (loom_tp_gen_nary with two inputs of one dtype). `ra`/`rb` are the input ranks (<= the output rank
 * max(ra, rb)); `ma[d]`/`mb[d]` the mode of each input axis. `expr` is over `a`, `b`. */
loom_status loom_tp_gen_binary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, loom_dtype in,
                               loom_dtype out, int ra, const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb,
                               loom_tp_func **result);

/* Reductions over `axes` (a bitmask of input axes) with keepdims. */
typedef enum loom_tp_reduce_op {
  LOOM_TP_REDUCE_SUM,
  LOOM_TP_REDUCE_MEAN,
  LOOM_TP_REDUCE_MAX,
  LOOM_TP_REDUCE_MIN,
  LOOM_TP_REDUCE_PROD,
} loom_tp_reduce_op;
loom_status loom_tp_gen_reduce(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_tp_reduce_op op, loom_dtype t,
                               int rank, unsigned axes, bool keepdims, loom_tp_func **result);

/* C[..., m, n] = sum_k A[..., m, k] * B[..., k, n]; ranks >= 1 (a 1-D A has no m axis and a 1-D B
 * no n axis, as NumPy's matmul), batch axes broadcast with the given modes (entries for the batch
 * axes only, aligned right). Accumulates in `acc`. */
loom_status loom_tp_gen_matmul(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int ra,
                               const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb, loom_tp_func **result);

/* The same with B transposed in its last two axes, B[..., n, k] (rank >= 2): C = A @ B^T, the
 * graph's matmul with transpose_b (attention's q k^T without a transposition kernel). */
loom_status loom_tp_gen_matmul_transposed_b(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t,
                                            loom_dtype acc, int ra, const loom_tp_bcast *ma, int rb,
                                            const loom_tp_bcast *mb, loom_tp_func **result);

/* C[..., m, n] = sum_k A[..., m, k] * B[k, n] with B a constant laid out panel by panel,
 * (ceil(n / panel), k, panel): B[k, n] is Bp[n / panel, k, n % panel] (the graph's matmul with
 * packed_b; graph/pass_pack.c). A of rank ra >= 1 (1-D: no m axis); C's last extent is
 * panel * (Bp's first), or with `ragged` its own symbol n, the last panel zero-padded past n
 * (the caller guarantees (q - 1) * panel < n <= q * panel). */
loom_status loom_tp_gen_matmul_packed_b(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                                        int ra, int64_t panel, bool ragged, loom_tp_func **result);

/* C[..., m, n] = sum_k (i32(A[..., m, k]) - ZA) * (i32(B[k, n]) - ZB) in i32: the graph's
 * matmul_integer. A (rank ra >= 2) and B (rank 2) of u8 / i8; ZA and ZB one element of A's and
 * B's dtypes (rza / rzb axes of extent 1). Both operands are packed into i16 pair words (Local buffers) and
 * multiplied with dot2. */
loom_status loom_tp_gen_matmul_integer(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype ta, loom_dtype tb,
                                       int ra, int rza, int rzb, loom_tp_func **result);

/* The same with B given as BP (ceil(n / panel), ceil(k / 2), panel) i32 pair words of the
 * centred B in column panels (graph/pass_pack.c), read as BP[n / panel, t, n % panel]; no ZB.
 * ragged: C's n is its own symbol, the last panel zero-padded past it (else n = q * panel). */
/* The same with B as byte quads BQ (q, ceil(k / 4), panel) of the centred values (signed bytes)
 * and CS (n) their column sums (dot4; gen_nn.c). kwhole > 0: A is u8 with k = kwhole, a multiple
 * of 4, read in place as quads (no A4 Local); 0: any k, A packed into A4 first. pairs: the
 * product is dot4s (BQ's byte pairs proven to keep u8 x s8 sums within i16: vpmaddubsw on AVX2). */
loom_status loom_tp_gen_matmul_integer_quads(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype ta, int ra, int rza,
                                             int64_t panel, bool ragged, int64_t kwhole, bool pairs, loom_tp_func **result);
loom_status loom_tp_gen_matmul_integer_packed_b(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype ta, int ra,
                                                int rza, int64_t panel, bool ragged, loom_tp_func **result);

/* softmax / log_softmax along `axis` (max-subtracted, exact). */
loom_status loom_tp_gen_softmax(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                bool log, loom_tp_func **result);

/* Normalisation over the last `naxes` axes, with gamma (and beta for layer_norm) of the
 * normalised shape: layer_norm Y = (X - mean) / sqrt(var + eps) * gamma + beta;
 * rms_norm Y = X / sqrt(mean(X^2) + eps) * gamma. Statistics accumulate in f32 (f64 for f64). */
loom_status loom_tp_gen_layer_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int naxes,
                                   double eps, bool rms, loom_tp_func **result);

/* Y[..., n] = sum_k X[..., k] * W[n, k] (+ bias[n]): `linear` (W is (out, in)); rank of X >= 1.
 * Accumulates in `acc`. */
loom_status loom_tp_gen_linear(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int rank,
                               bool bias, loom_tp_func **result);

/* Row-major reinterpretation: Y (rank_out dims d*) takes X's (rank_in dims a*) elements in
 * order — reshape, expand_dims, squeeze and flatten. Element counts must agree (the graph
 * level proves it or guards it). */
loom_status loom_tp_gen_reshape(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank_in,
                                int rank_out, loom_tp_func **result);

/* Y = transpose(X): Y axis k is X axis perm[k]. */
loom_status loom_tp_gen_permute(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                const int *perm, loom_tp_func **result);

/* Y = concat(X0, ..., X{n-1}) along `axis` (n >= 1 inputs of one rank and dtype). */
loom_status loom_tp_gen_concat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int ninputs, loom_tp_func **result);

/* Y = X[..., begin[k] + i*stride[k], ...] on the axes in `axes_mask`: the begins are i64
 * scalar parameters b<axis> (symbolic at the call), the strides constants of the program. */
loom_status loom_tp_gen_slice(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                              unsigned axes_mask, const int64_t *strides, loom_tp_func **result);

/* Y = value everywhere (`value_text` is a literal of t, e.g. "-1000000000.0" or "true"). */
loom_status loom_tp_gen_fill(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             const char *value_text, loom_tp_func **result);

/* tril (upper = false) / triu on the last two axes with the diagonal offset as i64 scalar `k`
 * (krank < 0) or read at run time from buffer K (integer dtype kt, rank krank 0 or 1, one
 * element): keeps X where col - row <= k (tril) or >= k (triu), else 0. */
loom_status loom_tp_gen_tri(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, bool upper,
                            loom_dtype kt, int krank, loom_tp_func **result);

/* Y = take(X, I, axis): Y[pre, idx, post] = X[pre, I[idx], post]; negative indices count from
 * the end (as ONNX Gather). */
loom_status loom_tp_gen_take(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                             loom_dtype index_t, int index_rank, loom_tp_func **result);

/* argmax / argmin along `axis` (first extreme; i64 result), keepdims or not. */
loom_status loom_tp_gen_argext(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool is_max, bool keepdims, loom_tp_func **result);

/* Running sum along `axis` (exclusive: the sum of the elements before; reverse: from the end).
 * axis < 0: the axis is i64 scalar parameter `a`, known at run time (one scan nest per axis). */
loom_status loom_tp_gen_cumsum(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool exclusive, bool reverse, loom_tp_func **result);
/* The same with a running product (the first is 1 when exclusive). */
loom_status loom_tp_gen_cumprod(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                bool exclusive, bool reverse, loom_tp_func **result);

/* Constant padding: Y = X shifted by the i64 scalars p<k> (pads before each axis; the extents of Y
 * come from inference), `value_text` elsewhere. With pads_buffer the pads are read at run time
 * from P: Buffer[(rank,), i64] (negative: a crop); value_rank >= 0 reads the value from buffer V
 * (rank 0 or (1,)) instead of value_text. */
loom_status loom_tp_gen_pad(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                            const char *value_text, bool pads_buffer, int value_rank, loom_tp_func **result);

/* tile: Y[i] = X[i mod extent] on every axis. */
loom_status loom_tp_gen_tile(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             loom_tp_func **result);

/* repeat: each element `repeats` times along `axis` (constant repeats). */
loom_status loom_tp_gen_repeat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int64_t repeats, loom_tp_func **result);

/* gather_elements: Y has the shape of I; Y[i] = X[i with axis replaced by I[i]] (negative indices
 * count from the end). */
loom_status loom_tp_gen_gather_elements(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                        int axis, loom_dtype index_t, loom_tp_func **result);

/* one_hot: Y[..., j] = on if I[...] (negative: from the end) == j else off; Y's last axis is depth. */
loom_status loom_tp_gen_one_hot(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype index_t, int index_rank,
                                loom_dtype t, const char *on_text, const char *off_text, loom_tp_func **result);

/* arange: Y[i] = t(start + i*step) with start and step as i64 scalar parameters. */
loom_status loom_tp_gen_arange(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_func **result);

/* sym_tensor: Y[k] = t(vk) for n i64 scalar parameters v0..v(n-1); Y is (n,), or () when scalar (n = 1). */
loom_status loom_tp_gen_sym_tensor(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, bool scalar,
                                   loom_tp_func **result);

/* A sliding window over the spatial axes of an (N, C, spatial...) tensor, per spatial axis:
 * kernel extent (pooling; a convolution takes it from W), stride, dilation, padding before and
 * after, and `shift`: how far ONNX's ceil mode moves the average and Lp windows' padded input
 * (0 otherwise). Constants of the program; the extents stay symbolic. */
enum { LOOM_TP_MAX_SPATIAL = 6 };
typedef struct loom_tp_window {
  int n; /* spatial rank, 1..LOOM_TP_MAX_SPATIAL */
  int64_t kernel[LOOM_TP_MAX_SPATIAL], stride[LOOM_TP_MAX_SPATIAL], dilation[LOOM_TP_MAX_SPATIAL];
  int64_t pad_lo[LOOM_TP_MAX_SPATIAL], pad_hi[LOOM_TP_MAX_SPATIAL], shift[LOOM_TP_MAX_SPATIAL];
  int64_t groups; /* convolution */
} loom_tp_window;

/* N-d convolution: Y[n, o, y..] = (bias[o]) + sum over the group's channels and the kernel window
 * of X[n, g*cg + c, y*s - pad_lo + k*d ..] * W[o, c, k..], out-of-range taps skipped. Accumulates
 * in `acc`. */
loom_status loom_tp_gen_conv(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                             const loom_tp_window *w, bool bias, loom_tp_func **result);

/* N-d transposed convolution in gather form: Y[n, o, y..] = (bias[o]) + sum over the group's
 * input channels c and the kernel window r of X[n, c, x..] * W[c, o mod og, r..] where
 * x*s - pad_lo + r*d = y. W is (C, O/groups, k..). pad_hi and output padding only shape Y. */
loom_status loom_tp_gen_conv_transpose(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                                       const loom_tp_window *w, bool bias, loom_tp_func **result);

/* Convolution as a GEMM the CPU matmul rule tiles (gen_conv.c; graph/legalize_window.c picks the
 * form). The geometry: spatial axes, groups, constant kernel extents and dilations, the stride on
 * the flat output index (conv_gemm: 1, or a 1-D convolution's stride), a bias operand. */
typedef struct loom_tp_conv_gemm {
  int n;
  int64_t groups;
  int64_t kernel[LOOM_TP_MAX_SPATIAL], dilation[LOOM_TP_MAX_SPATIAL];
  int64_t stride;
  bool bias;
  int64_t tap_stride; /* > 0 (n = 1, kernel 1): one tap of a kernel of tap_stride taps, below */
} loom_tp_conv_gemm;

/* Y (n, o, p) = (Bias[o]) + sum over r < cg*K of W[o, r] * X[n, g*cg + r / K, stride*p + off(r)]:
 * X (n, c, l) is the padded input viewed flat, W (o, cg*K) the weights viewed as a matrix
 * (cg = c / groups, K the kernel's taps), off(r) the flat offset of tap r % K in the padded input,
 * its pitches from i64 scalar parameters e1..e(n-1) (the padded extents of spatial axes 1..n-1).
 * The caller keeps every read inside X (one padded row more at the end when the taps of the
 * later axes reach past it) and slices the columns past each row's output extent away. */
loom_status loom_tp_gen_conv_gemm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_gemm *g,
                                  loom_tp_func **result);
/* (The tap form, g->tap_stride = T > 0: W (o, cg*T) holds every tap's weights and the sum runs
 * over r < cg of W[o, r*T + wt] * X[n, g*cg + r, stride*p], wt an i64 scalar parameter after
 * Bias: one tap's GEMM, the weights read in place.) */

/* col (n, c*K, prod y_i) = the patches of X (n, c, h..) (already padded): row c*K + tap, column the
 * flat output position, y_i = (h_i - d_i*(k_i - 1) - 1) / s_i + 1 (strides per axis). */
loom_status loom_tp_gen_im2col(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_gemm *g,
                               const int64_t *stride, loom_tp_func **result);

/* A dilated convolution tap by tap (gen_conv_taps.c): per spatial axis the dilation, stride and
 * padding before (what places a tap's reads). */
typedef struct loom_tp_conv_taps {
  int n;
  int64_t dilation[LOOM_TP_MAX_SPATIAL], stride[LOOM_TP_MAX_SPATIAL], pad_lo[LOOM_TP_MAX_SPATIAL];
} loom_tp_conv_taps;
/* Along axis i (input extent h, output extent y), tap t's output positions that read data: the
 * run [*jlo, *jlo + *r) (*r = 0 when none does). */
void loom_tp_conv_tap_rect(loom_sym_ctx *cx, const loom_tp_conv_taps *g, int i, int64_t t, const loom_sym_expr *h,
                           const loom_sym_expr *y, const loom_sym_expr **jlo, const loom_sym_expr **r);
/* col (n, c, cols(prod r_i)) = X[n, c, x0_i + v_i*s_i ..] for v in the box of extents r_i (flat,
 * row-major; zero past it up to whole panels). Parameters (X (n, c, h..), x0.. r.. (i64), col). */
loom_status loom_tp_gen_conv_tap_cols(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, const int64_t *stride,
                                      loom_tp_func **result);
/* Y (n, o, y..) = Yp + Yt placed at the box [jlo_i, jlo_i + r_i) (Yt (n, o, q), the box flat at
 * its front). Parameters (Yp, Yt, jlo.. r.. (i64), Y). */
loom_status loom_tp_gen_conv_tap_add(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, loom_tp_func **result);
/* Y (n, o, y..) = Bias[o] (bias) or 0. */
loom_status loom_tp_gen_conv_tap_init(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, bool bias,
                                      loom_tp_func **result);

/* Transposed convolution as a GEMM and a sum of its columns (gen_conv.c):
 * convt_gemm: col (n, G*q, l) = per group W (c, q)^T X (n, c, l): W is (C, O/G, k..) viewed with
 * q = O/G * K, X the input viewed flat; col[n, o*K + tap, x] is input position x's contribution to
 * output channel o through kernel tap `tap`.
 * col2im: Y (n, o, f..) = (Bias[o]) + the sum of col[n, o*K + tap, x] at f = x*s + tap*d: the full
 * output before the padding is cropped (f_i = (h_i - 1)*s_i + d_i*(k_i - 1) + 1 + output padding);
 * the input extents h_i are i64 scalar parameters. */
loom_status loom_tp_gen_convt_gemm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int64_t groups,
                                   loom_tp_func **result);
loom_status loom_tp_gen_col2im(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_gemm *g,
                               const int64_t *stride, loom_tp_func **result);

/* The GEMM of a convolution computes LOOM_TP_CONV_COLS-aligned column counts (every panel of the
 * matmul rule whole: a narrow or one-column tail re-reads all the weights for a few columns, which
 * made a 7 x 7 layer 4-10x slower); the caller crops. loom_tp_conv_cols: p rounded up to it. */
enum { LOOM_TP_CONV_COLS = 32 };
const loom_sym_expr *loom_tp_conv_cols(loom_sym_ctx *cx, const loom_sym_expr *p);

/* Convolution over packed weights (gen_conv_packed.c; graph/legalize_window.c picks the form, the
 * CPU rule of tensorprog/schedule_conv.c tiles it). The weights are laid out in blocks of
 * LOOM_TP_CONV_BLOCK output channels, (o / B, c, k.., B) viewed (o / B, c*K, B): the `pack` pass's
 * conv layout (graph/pass_pack.c), so a register tile of B output channels broadcasts B contiguous
 * floats per tap. The input is split into phase planes: on axis i with stride s_i, the kernel's
 * taps t*d_i reach the residues mod s_i that are multiples of g_i = gcd(d_i, s_i) (g_i = s_i when
 * k_i = 1: only residue 0), so there are P_i = s_i / g_i phases, phase b holding padded positions
 * u*s_i + b*g_i; then every tap reads its phase plane at the output position plus a constant
 * offset (a stride-1 convolution has one plane: the padded input itself, flat). */
enum { LOOM_TP_CONV_BLOCK = 8 };
typedef struct loom_tp_conv_packed {
  int n;    /* spatial axes */
  bool bias; /* conv_packed: a Bias operand */
  int64_t groups; /* conv_packed: 0 or 1, or G groups of c / G input channels and q / G weight blocks each */
  int64_t kernel[LOOM_TP_MAX_SPATIAL], dilation[LOOM_TP_MAX_SPATIAL], stride[LOOM_TP_MAX_SPATIAL];
  int64_t pad_lo[LOOM_TP_MAX_SPATIAL], pad_hi[LOOM_TP_MAX_SPATIAL]; /* conv_phases: the padding */
} loom_tp_conv_packed;
/* Axis i's phase step g_i, phase count P_i, and all axes' phase planes (prod P_i). */
int64_t loom_tp_conv_phase_step(const loom_tp_conv_packed *g, int i);
int64_t loom_tp_conv_phase_count(const loom_tp_conv_packed *g, int i);
int64_t loom_tp_conv_phase_planes(const loom_tp_conv_packed *g);
/* Axis i's phase extent E_i = ceil((h + lo_i + hi_i) / s_i) of an input extent h. */
const loom_sym_expr *loom_tp_conv_phase_extent(loom_sym_ctx *cx, const loom_tp_conv_packed *g, int i, const loom_sym_expr *h);
/* Whether the phase planes get one more row of axis 0 (zeros): the taps of the later axes reach
 * past the end of a row, so the grid's last row reads past the plane. */
bool loom_tp_conv_phase_extra_row(const loom_tp_conv_packed *g);
/* F, the elements of one plane's phase planes each (prod E_i, E_0 + 1 with the extra row) for input extents h[0..n). */
const loom_sym_expr *loom_tp_conv_phase_plane_size(loom_sym_ctx *cx, const loom_tp_conv_packed *g, const loom_sym_expr *const *h);

/* Y (n, c, prod P_i, F) = X (n, c, h..) padded by pad_lo / pad_hi (zeros) and split into phase planes,
 * each flat: Y[n, c, b, sum u_i * pitch_i] = Xpad[n, c, u_i*s_i + b_i*g_i ..] (zero past the padded
 * input), u_i < E_i, pitch the row-major pitches of (E_0 (+ 1: the extra row), E_1, ..). */
loom_status loom_tp_gen_conv_phases(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_packed *g,
                                    loom_tp_func **result);
/* Y (n, B*q, p) = (Bias) + sum over c < C and the taps t of Wp[o / B, K*c + t, o % B] * X[n, c, plane(t),
 * j + off(t)]: X (n, C, S, l) the phase planes, Wp (q, K*C, B) the packed weights, plane(t) and off(t)
 * the tap's phase plane and flat offset there (its pitches i64 scalar parameters e1..e(n-1): the phase
 * extents of axes 1..n-1). p is the grid of the output positions (y_0 * prod E_i of i >= 1). */
loom_status loom_tp_gen_conv_packed(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_packed *g,
                                    loom_tp_func **result);

/* Y (n, o, y..) = Yf (n, o, p) at flat position sum j_i * pitch_i (pitches from i64 scalar parameters
 * e1..e(n-1), the grid extents of spatial axes 1..n-1): the crop after conv_gemm. */
loom_status loom_tp_gen_conv_crop(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, loom_tp_func **result);

/* With flat_extra >= 0, Y is instead (n, c, prod (h_i + lo_i + hi_i) + flat_extra): each plane flat,
 * followed by flat_extra elements of fill (where the GEMM's rounded-up columns read). `share` (flat,
 * 2 or more axes; at most both pads of the last axis): a row's last `share` right-padding elements
 * are the next row's first left-padding ones, the rows' pitch h + lo + hi - share (the convolution
 * over packed weights: fewer grid columns to compute and crop). */
/* Y (n, c, h_i + lo_i + hi_i ..) = X (n, c, h..) between `fill`s (lo_i, hi_i >= 0 per spatial axis): one
 * loop over the (n, c) planes, the rows inside copied between their zeroed borders. */
loom_status loom_tp_gen_conv_pad(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, const int64_t *lo,
                                 const int64_t *hi, double fill, int64_t flat_extra, int64_t share, loom_tp_func **result);

/* N-d pooling. Taps are at y*s + k*d of the input padded by pad_lo (max, argmax) or by
 * pad_lo + shift (average, Lp). MAX / ARGMAX: the maximum of the taps inside the input (ARGMAX:
 * its flat input index, i64, the first maximum; row-major spatial order unless col_major).
 * AVG: the mean of the taps inside the input and before the padded end (AVG_PAD: padding
 * taps count as zeros). LP: (sum |x|^p)^(1/p). */
typedef enum loom_tp_pool_kind {
  LOOM_TP_POOL_MAX,
  LOOM_TP_POOL_ARGMAX,
  LOOM_TP_POOL_AVG,
  LOOM_TP_POOL_AVG_PAD,
  LOOM_TP_POOL_LP,
} loom_tp_pool_kind;
typedef struct loom_tp_pool {
  loom_tp_pool_kind kind;
  int64_t p;      /* LP */
  bool col_major; /* ARGMAX */
} loom_tp_pool;
loom_status loom_tp_gen_pool(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_pool *pool,
                             const loom_tp_window *w, loom_tp_func **result);

/* MAX, AVG and AVG_PAD pooling (no ceil-mode shift; AVG with dilation 1) of an input X (n, c, hp..) that
 * conv_pad padded beforehand (-inf for MAX, 0 otherwise) by w's pad_lo / pad_hi, into Y (n, c, y..):
 * one output row at a time, every tap's pass over the row a unit-stride store (gen_conv.c); when
 * loom_tp_rows_grid, X viewed (n, c, hp0*hp1) is a second input (Xf, before Y). */
loom_status loom_tp_gen_pool_rows(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_pool_kind kind,
                                  const loom_tp_window *w, loom_tp_func **result);

/* Depthwise convolution (groups = input channels = output channels) of an input X (n, c, hp..) padded
 * beforehand: Y (n, c, y..) = (Bias[c]) + sum over taps of W[c, 0, tap..] * X[n, c, y*s + tap*d ..], row by
 * row as pool_rows (W (c, 1, k..), kernel extents, strides and dilations of w constants; Xf after Bias as
 * pool_rows takes it). */
loom_status loom_tp_gen_depthwise_rows(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_window *w,
                                       bool bias, loom_tp_func **result);

/* Whether a depthwise convolution of window w (padding aside) runs over conv_phases' planes: 2-D, equal
 * strides above 1, dilation 1, kernel extents above 1 (loom_tp_conv_phase_count is then the stride). */
bool loom_tp_dw_phases(const loom_tp_window *w);
/* As depthwise_rows (Y (n, c, y0, y1), W, Bias), the input X (n, c, s*s, f) the phase planes of the padded
 * input (loom_tp_gen_conv_phases with w's kernel and stride), e1 (an i64 scalar after Bias) their row
 * pitch: every tap a unit-stride read of its plane (rows, and grids for rows under 32). w unpadded. */
loom_status loom_tp_gen_depthwise_phases(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_window *w,
                                         bool bias, loom_tp_func **result);

/* Whether a depthwise convolution of window w runs as depthwise_fused: 2-D, equal strides, dilation 1. */
bool loom_tp_dw_fused(const loom_tp_window *w);
/* As depthwise_phases (Y (n, c, y0, y1), W, Bias) over the input X (n, c, h0, h1) itself: w's padding and
 * phase planes made one (n, c) plane at a time into a Local of the kernel (loom_tpg_conv_phase_plane),
 * then that plane's taps read from it -- where it lies in the cache, in the thread that made it, instead
 * of the padded tensor written by one call and read back by the next (any stride; stride 1: one plane,
 * the padded input). Planes in runs of DW_FUSED_PLANES per Local (one allocation each run). */
loom_status loom_tp_gen_depthwise_fused(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_window *w,
                                        bool bias, loom_tp_func **result);

/* As loom_tp_gen_depthwise_fused, MAX (padding -inf) or AVG_PAD pooling over the input X (n, c, h0, h1)
 * itself (loom_tp_dw_fused windows; ceil mode's extra end padding in w's pad_hi): Y (n, c, y0, y1). */
loom_status loom_tp_gen_pool_fused(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_pool_kind kind,
                                   const loom_tp_window *w, loom_tp_func **result);

/* Whether the pool_rows / depthwise_rows program of w takes, after its other inputs (X, W, Bias), X once
 * more viewed (n, c, hp0*hp1): 2-D with equal strides (and not AVG, whose divisor varies per position),
 * for rows shorter than a vector computed on the padded plane's grid (gen_conv.c pool_grid). */
bool loom_tp_rows_grid(const loom_tp_window *w, loom_tp_pool_kind kind, bool dw);

/* gather_nd: I (lead..., depth) names, per leading position, an element or slice of X past its
 * first `batch` axes (batch axes shared by X and I): Y = I.shape[:-1] + X.shape[batch + depth:]. */
loom_status loom_tp_gen_gather_nd(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype index_t,
                                  int x_rank, int index_rank, int batch, int depth, loom_tp_func **result);

/* How a scatter combines the update with the element already in Y. */
typedef enum loom_tp_scatter_reduction {
  LOOM_TP_SCATTER_NONE, /* replace */
  LOOM_TP_SCATTER_ADD,
  LOOM_TP_SCATTER_MUL,
  LOOM_TP_SCATTER_MIN,
  LOOM_TP_SCATTER_MAX,
} loom_tp_scatter_reduction;

/* scatter_nd: Y = X, then for each leading position p of I (in order) the slice of Y at
 * I[p, 0..depth) takes U[p, ...] (combined by r). */
loom_status loom_tp_gen_scatter_nd(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype index_t,
                                   int x_rank, int index_rank, int depth, loom_tp_scatter_reduction r,
                                   loom_tp_func **result);

/* scatter_elements along `axis`: Y = X, then Y[i with axis replaced by I[i]] takes U[i] (combined
 * by r) for every i of I, in order. I and U share dims; on the other axes they must not exceed X
 * (the caller proves it: those indices are not checked). */
loom_status loom_tp_gen_scatter_elements(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t,
                                         loom_dtype index_t, int rank, int axis, loom_tp_scatter_reduction r,
                                         loom_tp_func **result);

/* Inference batch norm on axis 1: Y = (X - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]. */
loom_status loom_tp_gen_batch_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                   double eps, loom_tp_func **result);

/* Group norm on (N, C, ...): each group of C / groups channels (with every spatial position) is
 * normalised by its own mean and variance, then scaled and shifted per channel by gamma, beta (C).
 * Statistics in f32 (f64 for f64). */
loom_status loom_tp_gen_group_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                   int64_t groups, double eps, loom_tp_func **result);

/* Queries below which an f32 attention program runs its row kernel instead of the flash tiles
 * (a decode step: one tile of 16 or 32 lanes would compute mostly unused rows). */
enum { LOOM_TP_ATTN_MIN_ROWS = 8 };

/* Attention over (b, h, s, d) queries and (b, hk, t, d) keys / (b, hk, t, dv) values, hk dividing h
 * (grouped-query): Y = softmax(Q K^T * scale + mask) V with an optional mask of rank mask_rank
 * broadcast to (b, h, s, t) by `mask_modes` (bool: keep where true; float: added), and causal
 * masking `j > i + (t - s)`. scale_text: a literal, or NULL for 1/sqrt(d). Rows with no unmasked
 * entry give 0 (as the reference), or NaN with empty_nan (as softmax then matmul). bshd: Q, K, V
 * and Y are laid out (batch, seq, heads, dim) (the mask stays (b, h, s, t)). head_dim / value_dim: d and dv when the call knows them as
 * constants (the program is then specialised to them: its tiles are fixed-size), else 0 (symbols
 * dq, dv). f32 with an f32 or bool mask (or none) is a flash kernel (online softmax over key
 * steps, tensorprog/gen_attn.c) for s >= LOOM_TP_ATTN_MIN_ROWS, the row kernel below; other
 * dtypes the row kernel. self_rows: the caller knows t == s (self-attention without a cache), so
 * the row kernel only ever sees t < 8 keys: its softmax loop over the keys is a plain loop (no
 * 16-lane body to compile); the program stays correct at any s and t. lanes: the f32 lanes of the
 * target's vector registers (16 AVX-512, 8 AVX2, 4; 0 reads as 16), which size the flash tile
 * (its query rows are two vectors; the result does not depend on it). */
loom_status loom_tp_gen_attention(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const char *scale_text,
                                  bool causal, int mask_rank, const loom_tp_bcast *mask_modes, loom_dtype mask_t,
                                  bool empty_nan, bool bshd, bool self_rows, int64_t head_dim, int64_t value_dim,
                                  int lanes, loom_tp_func **result);

/* Paged attention of a ragged batch (tensorprog/gen_paged.c; graph op paged_attention): queries
 * Q (t, h, d) and the step's keys / values Kn (t, hk, d), Vn (t, hk, dv), the paged cache
 * Kc (n, pg, hk, d), Vc (n, pg, hk, dv), block tables BT (b, m), cached lengths CTX (b,), each
 * token's sequence SEQ (t,) and position POS (t,) (all i64) -> Y (t, h, dv); Q, Kn, Vn, Y of
 * dtype t, the cache of ct (t, or a half-width float widened as it is read). scale_text: a
 * literal, or NULL for 1/sqrt(d). Absent keys (a page outside the cache, a sequence outside
 * the batch) are skipped, as the reference does. */
loom_status loom_tp_gen_paged_attention(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype ct,
                                        const char *scale_text, loom_tp_func **result);

/* ONNX Resize's modes (graph/op_image.c is the reference). */
typedef enum loom_tp_resize_mode {
  LOOM_TP_RESIZE_NEAREST, /* one tap per axis: a neighbour chosen by the nearest mode */
  LOOM_TP_RESIZE_LINEAR,  /* two taps per axis */
  LOOM_TP_RESIZE_CUBIC,   /* four taps per axis (Keys kernel with coefficient cubic_a) */
} loom_tp_resize_mode;
typedef enum loom_tp_resize_coord {
  LOOM_TP_RESIZE_HALF_PIXEL,
  LOOM_TP_RESIZE_HALF_PIXEL_SYMMETRIC,
  LOOM_TP_RESIZE_PYTORCH_HALF_PIXEL,
  LOOM_TP_RESIZE_ALIGN_CORNERS,
  LOOM_TP_RESIZE_ASYMMETRIC,
  LOOM_TP_RESIZE_TF_CROP_AND_RESIZE,
} loom_tp_resize_coord;
typedef enum loom_tp_resize_nearest {
  LOOM_TP_RESIZE_ROUND_PREFER_FLOOR,
  LOOM_TP_RESIZE_ROUND_PREFER_CEIL,
  LOOM_TP_RESIZE_FLOOR,
  LOOM_TP_RESIZE_CEIL,
} loom_tp_resize_nearest;
typedef struct loom_tp_resize {
  loom_tp_resize_mode mode;
  loom_tp_resize_coord coord;
  loom_tp_resize_nearest nearest;
  double cubic_a;         /* CUBIC */
  bool exclude_outside;   /* LINEAR / CUBIC: taps outside the input weigh 0, the rest renormalised */
  double extrapolation;   /* TF_CROP_AND_RESIZE: the value where the source coordinate leaves the input */
  unsigned axes;          /* mask of the resized axes; the others are copied (their extents are equal) */
  loom_dtype scale_t;     /* dtype of S (float) */
  loom_dtype roi_t;       /* dtype of R (float; TF_CROP_AND_RESIZE) */
} loom_tp_resize;

/* N-d resize: Y (d0, ...) from X, S (rank,) the per-axis scales and, for TF_CROP_AND_RESIZE,
 * R (2*rank,) the roi (starts, then ends), both read at run time. The extents of Y come from
 * inference. Interpolating modes need a float t; at most 256 taps per output element. */
loom_status loom_tp_gen_resize(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                               const loom_tp_resize *rz, loom_tp_func **result);
/* The same with X of dtype tin and Y of tout (interpolating modes; both float): one pass of a
 * separable resize, axis by axis with f64 between the passes (legalization chains them when the
 * taps of every resized axis together exceed 16 per element). */
loom_status loom_tp_gen_resize_io(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tin, loom_dtype tout, int rank,
                                  const loom_tp_resize *rz, loom_tp_func **result);

/* Antialiased linear / cubic resize, one axis at a time as the reference: T (rank,) i64 = the
 * taps of each axis from the scales S (-1 for a scale not > 0 or below 2^-20), then per resized
 * axis Y = X resized along `axis` with its tap count as i64 scalar n (tin / tout the dtypes of X
 * and Y: f64 between axes). */
loom_status loom_tp_gen_resize_aa_taps(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype scale_t, int rank,
                                       loom_tp_resize_mode mode, loom_tp_func **result);
loom_status loom_tp_gen_resize_aa_axis(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tin, loom_dtype tout, int rank,
                                       int axis, const loom_tp_resize *rz, loom_tp_func **result);

/* ONNX Resize with its scales or sizes given at run time (graph `resize` without `size`): the
 * operand P (na values, one per resized axis in `axes` order) sets the extents of those axes.
 * Legalization computes them and the full-rank scales with the programs below, binds the
 * extents, then calls the static program above. */
typedef enum loom_tp_resize_policy {
  LOOM_TP_RESIZE_STRETCH,     /* each resized axis its own size */
  LOOM_TP_RESIZE_NOT_LARGER,  /* one scale for all: the smallest size / extent ratio */
  LOOM_TP_RESIZE_NOT_SMALLER, /* one scale for all: the largest */
} loom_tp_resize_policy;
typedef struct loom_tp_resize_rt {
  int na;                            /* resized axes, 0..rank */
  int axes[LOOM_TP_GEN_MAX_RANK];    /* the resized axes, in P's order (distinct, in [0, rank)) */
  bool sizes;                        /* P holds sizes (i64), else scales (float) */
  loom_tp_resize_policy policy;      /* sizes only */
  loom_dtype p_t;                    /* dtype of P */
} loom_tp_resize_rt;
/* D (rank,) i64 = the extents of resize(X, P) (as graph/op_image.c's reference): scales:
 * floor(P[j] * extent); sizes: P[j] (stretch) or round-half-up(sel * extent) with sel the
 * min / max over the resized axes of P[j] / extent; the other axes keep X's extent. An invalid
 * P (a scale not > 0, a negative size, a size for an empty axis) makes the resized entries -1,
 * which the match_cast binding D refuses ("not a dim"). */
loom_status loom_tp_gen_resize_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                    const loom_tp_resize_rt *rt, loom_tp_func **result);
/* S (rank,) f64 = the per-axis scales of the same resize (1 on the axes not resized), the S of
 * loom_tp_gen_resize. */
loom_status loom_tp_gen_resize_scales(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                      const loom_tp_resize_rt *rt, loom_tp_func **result);
/* Q (2*rank,) f64 = the full-rank roi (starts, then ends; 0 and 1 on the axes not resized) from
 * R (2*na,) of dtype roi_t, laid out as P. */
loom_status loom_tp_gen_resize_roi(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype roi_t, int rank,
                                   const loom_tp_resize_rt *rt, loom_tp_func **result);

/* resize2d: (N, C, H, W) -> (N, C, y0, y1), nearest (floor(i*H/y0)) or half-pixel bilinear. */
loom_status loom_tp_gen_resize2d(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, bool linear,
                                 loom_tp_func **result);

/* det: Y (...) = the determinant of each (m, m) matrix of X (..., m, m), float t; LU with
 * partial pivoting in f64, as the reference. */
loom_status loom_tp_gen_det(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                            loom_tp_func **result);

/* grid_sample: X (n, c, h..), G (n, o.., ns) normalised coordinates in [-1, 1] (the last
 * component for the first spatial axis) -> Y (n, c, o..), as graph/op_image.c's reference. */
typedef enum loom_tp_grid_padding {
  LOOM_TP_GRID_ZEROS,      /* taps outside the input add nothing */
  LOOM_TP_GRID_BORDER,     /* coordinates and taps clamped to the input */
  LOOM_TP_GRID_REFLECTION, /* coordinates and taps reflected at the borders */
} loom_tp_grid_padding;
typedef struct loom_tp_grid_sample {
  int n;                      /* spatial axes, 1..3 */
  loom_tp_resize_mode mode;   /* nearest (half to even), linear, cubic (A = -0.75) */
  loom_tp_grid_padding padding;
  bool align_corners;
} loom_tp_grid_sample;
loom_status loom_tp_gen_grid_sample(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype grid_t,
                                    const loom_tp_grid_sample *gs, loom_tp_func **result);

/* dft along `axis` (< rank - 1) of X (..., c), c = 1 real or 2 complex, as graph/op_misc.c: Y
 * (..., 2), or (..., 1) for the onesided inverse; the length is the i64 scalar `nl` when
 * has_length, else the axis extent (2*(extent - 1) for the onesided inverse). */
loom_status loom_tp_gen_dft(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis, int c,
                            bool inverse, bool onesided, bool has_length, loom_tp_func **result);

/* topk along `axis` of X: Y (the axis of extent kk, bound from Y) holds the kk largest (or
 * smallest) elements of each slice in order, ties to the lower index, as values (t) or as i64
 * indices. Parameters (X, dk: i64, Y): dk must be loom_tp_bitlen(kk) (the heap's sift steps; the
 * caller passes it, it is not checked). */
const loom_sym_expr *loom_tp_bitlen(loom_sym_ctx *cx, const loom_sym_expr *n);
loom_status loom_tp_gen_topk(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                             bool largest, bool indices, loom_tp_func **result);

/* ---- run-time axes (gen_dims.c) ---- */

/* How the dims program of a run-time axes operand reads it. */
typedef enum loom_tp_axes_form {
  LOOM_TP_AXES_REDUCE_KEEPDIMS, /* S = X's dims with the listed axes 1 */
  LOOM_TP_AXES_REDUCE,          /* S = that, then X's dims without the listed axes */
  LOOM_TP_AXES_SQUEEZE,         /* S = X's dims without the listed axes (each must be 1) */
  LOOM_TP_AXES_EXPAND,          /* S = rank + n dims: 1 at the listed axes (of the result), X's dims elsewhere */
  LOOM_TP_AXES_ONE,             /* S = (the one axis, normalized to [0, rank)) */
} loom_tp_axes_form;

/* Y = reduce(X) with Y of X's rank, each of Y's axes 1 (reduced) or X's extent (kept), read
 * from Y's buffer at run time: one program for every set of reduced axes. */
loom_status loom_tp_gen_reduce_any(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_tp_reduce_op op, loom_dtype t,
                                   int rank, loom_tp_func **result);
/* S (i64) = the dims (see loom_tp_axes_form) that X (rank `rank`, dtype tx) and the n run-time
 * axes in A (integer dtype ta; rank 0 for one axis when arank is 0, else (n,)) give. Invalid
 * axes (out of range, repeated, a squeezed axis not 1) make S[0] = -1, which binding S as dims
 * refuses. */
loom_status loom_tp_gen_axes_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                  loom_dtype ta, int arank, loom_tp_axes_form form, loom_tp_func **result);
/* ONNX Slice with run-time starts B, ends E (and axes A, steps T when given; types[] their
 * integer dtypes in that order): `extents` gives S = the result's extents (S[0] = -1 for a zero
 * step or an axis out of range / repeated), else S = the starts, then the steps, per axis. */
loom_status loom_tp_gen_slice_params(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                     const loom_dtype *types, bool has_axes, bool has_steps, bool extents,
                                     loom_tp_func **result);
/* Y[i] = X[P[k] + i_k * P[rank + k]]: the slice with starts and steps read from P at run time. */
loom_status loom_tp_gen_slice_any(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                  loom_tp_func **result);
/* ONNX Pad with run-time pads P (2 * nax values, integer dtype tp) over the axes in A (when
 * has_axes): `extents` gives S = the padded extents (S[0] = -1 when one is negative or an axis
 * is repeated), else S = the pads before each axis. */
loom_status loom_tp_gen_pad_params(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int nax,
                                   loom_dtype tp, bool has_axes, loom_dtype ta, bool extents, loom_tp_func **result);
/* ONNX Range on run-time scalars B, E, D (start, limit, delta: dtype t, ranks[] 0 or 1 each):
 * `extents` gives S = (the length), -1 when delta is 0 or the length is NaN / above 2^30; else
 * Y[i] = start + i * delta for i < Y's extent. */
loom_status loom_tp_gen_range(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const int *ranks, bool extents,
                              loom_tp_func **result);
/* S (i64, n values) = the dims of reshape(X, A) with ONNX semantics (0 copies X's dim unless
 * allowzero, one -1 is inferred); an invalid target makes S[0] = -1. */
loom_status loom_tp_gen_reshape_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                     loom_dtype ta, bool allowzero, loom_tp_func **result);

/* ---- extents counted in the data (gen_select.c): a `count` program S = (the extent), then
 * the program that fills a result of that extent ---- */

/* nonzero: Y (rank x nnz, i64) = the indices of X's nonzero elements in row-major order. */
loom_status loom_tp_gen_nonzero(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, bool count,
                                loom_tp_func **result);

/* unique along `axis` (the slices of X there; flatten first for unique of elements), sorted
 * (lexicographically) or in order of first occurrence: u distinct slices. */
typedef enum loom_tp_unique_part {
  LOOM_TP_UNIQUE_COUNT,   /* S = (u) */
  LOOM_TP_UNIQUE_VALUES,  /* Y = X with `axis` of extent u: the distinct slices */
  LOOM_TP_UNIQUE_FIRST,   /* Y (u, i64) = where each first occurs */
  LOOM_TP_UNIQUE_INVERSE, /* Y (X's extent on axis, i64) = which distinct slice each is */
  LOOM_TP_UNIQUE_COUNTS,  /* Y (u, i64) = how often each occurs */
} loom_tp_unique_part;
loom_status loom_tp_gen_unique(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis, bool sorted,
                               loom_tp_unique_part part, loom_tp_func **result);

/* non_max_suppression of boxes BX (nb, n, 4) with scores SC (nb, nc, n) (types[0..1]), and the
 * scalars max per class M, iou threshold I, score threshold T (types[2..4]; forms[0..2]: -1
 * absent (0, 0, -inf), 0 rank 0, 1 shape (1,)): per batch and class the greedy selection in
 * descending score order; Y (sel, 3) = rows [batch, class, box]. */
loom_status loom_tp_gen_nms(loom_arena *a, loom_sym_ctx *cx, const char *name, const loom_dtype *types, const int *forms,
                            bool center, bool count, loom_tp_func **result);

#endif
