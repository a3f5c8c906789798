/* tp_gpu_rows.h — row programs (softmax, norms, row reductions) for the GPU schedule rules'
 * tests: test_tp_gpu.c checks each one's schedule (its form and why-line) and that it equals
 * the unscheduled program in the interpreter; tests/cuda/test_cuda.c runs them on a GPU. */
#ifndef LOOM_TESTS_TP_GPU_ROWS_H
#define LOOM_TESTS_TP_GPU_ROWS_H

#include <stdbool.h>

/* A program and its buffers' shapes: one string per buffer, one letter per axis: 'm', 'n' or
 * 'k' (the sizes), 'M' (m + n), '1', '2', 'E', 'T' (2, 8, 24). The last buffer is the output. */
typedef struct gpu_case {
  const char *text;
  int nbuf;
  const char *dims[4];
  /* the rule that applies: 'g' grid form (a thread per element), 'w' a warp per row, 'r' a
   * thread per row (grid form whose threads run loops), 'o' the one-thread fallback */
  char form;
  const char *why; /* more of the why-line that must show, or NULL */
} gpu_case;

static const gpu_case gpu_row_cases[] = {
    /* the legalized softmax: Y written in the sum's loop (each iteration its own element),
     * read back by the last loop (other lanes' elements: the warp syncs between) */
    {"prim @softmax_y(X: Buffer[(m, n), f32], Y: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc M: Local[(1,), f32]\n    M[0] = -inf\n"
     "    for r in 0..n reduce { M[0] = max(M[0], X[i, r]) }\n"
     "    alloc S: Local[(1,), f32]\n    S[0] = 0.0\n"
     "    for r2 in 0..n reduce {\n      Y[i, r2] = exp(X[i, r2] - M[0])\n      S[0] = S[0] + Y[i, r2]\n    }\n"
     "    let inv: f32 = 1.0 / S[0]\n"
     "    for j in 0..n { Y[i, -j + n - 1] = Y[i, -j + n - 1] * inv }\n"
     "  }\n}\n",
     2, {"mn", "mn"}, 'w', "3 row loops over the lanes (2 reductions)"},
    /* bert's layer norm (loom compile --print-after-all): three paths under ifs */
    {"prim @layer_norm(X: Buffer[(m, n), f32], gamma: Buffer[(n,), f32], beta: Buffer[(n,), f32], Y: Buffer[(m, n), f32]) {\n"
     "  for i1 in 0..m {\n"
     "    alloc Q: Local[(2,), f32]\n    Q[0] = 0.0\n    Q[1] = 0.0\n"
     "    for r2 in 0..n reduce {\n      Q[0] = Q[0] + X[i1, r2]\n      Q[1] = Q[1] + X[i1, r2] * X[i1, r2]\n    }\n"
     "    let mean: f32 = Q[0] / f32(n)\n    let ms: f32 = Q[1] / f32(n)\n"
     "    if Q[1] < inf && mean * mean * 17.0 <= ms * 16.0 {\n"
     "      let inv: f32 = rsqrt(ms - mean * mean + 9.99999996e-13)\n"
     "      for j2 in 0..n { Y[i1, j2] = (X[i1, j2] - mean) * inv * gamma[j2] + beta[j2] }\n"
     "    } else {\n"
     "      Q[0] = 0.0\n      Q[1] = 0.0\n"
     "      for r3 in 0..n reduce { Q[0] = Q[0] + X[i1, r3] }\n"
     "      let mean1: f32 = Q[0] / f32(n)\n"
     "      for r4 in 0..n reduce {\n        let dv: f32 = X[i1, r4] - mean1\n        Q[1] = Q[1] + dv * dv\n      }\n"
     "      if Q[1] < inf {\n"
     "        let inv1: f32 = rsqrt(Q[1] / f32(n) + 9.99999996e-13)\n"
     "        for j3 in 0..n { Y[i1, j3] = (X[i1, j3] - mean1) * inv1 * gamma[j3] + beta[j3] }\n"
     "      } else {\n"
     "        alloc R: Local[(2,), f32]\n        R[0] = 0.0\n        R[1] = 0.0\n        Q[0] = 0.0\n"
     "        for r5 in 0..n reduce { Q[0] = max(Q[0], abs(X[i1, r5])) }\n"
     "        let c: f32 = Q[0]\n"
     "        for r6 in 0..n reduce { R[0] = R[0] + X[i1, r6] / c }\n"
     "        let mean2: f32 = R[0] / f32(n)\n"
     "        for r7 in 0..n reduce {\n          let dv2: f32 = X[i1, r7] / c - mean2\n          R[1] = R[1] + dv2 * dv2\n        }\n"
     "        let inv2: f32 = rsqrt(max(R[1] / f32(n) + 9.99999996e-13 / c / c, 1.17549435e-38))\n"
     "        for j4 in 0..n { Y[i1, j4] = (X[i1, j4] / c - mean2) * inv2 * gamma[j4] + beta[j4] }\n"
     "      }\n"
     "    }\n"
     "  }\n}\n",
     4, {"mn", "n", "n", "mn"}, 'w', "9 row loops over the lanes (6 reductions)"},
    {"prim @rms_norm(X: Buffer[(m, n), f32], w: Buffer[(n,), f32], Y: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc S: Local[(1,), f32]\n    S[0] = 0.0\n"
     "    for r in 0..n reduce { S[0] = X[i, r] * X[i, r] + S[0] }\n"
     "    let inv: f32 = rsqrt(S[0] / f32(n) + 1e-06)\n"
     "    for j in 0..n { Y[i, j] = X[i, j] * inv * w[j] }\n"
     "  }\n}\n",
     3, {"mn", "n", "mn"}, 'w', "2 row loops over the lanes (1 reduction)"},
    /* max and min of a row (the accumulators' starting values kept: they enter the result) */
    {"prim @row_max(X: Buffer[(m, n), f32], Y: Buffer[(m, 2), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc M: Local[(2,), f32]\n    M[0] = -1.0\n    M[1] = 1.5\n"
     "    for r in 0..n reduce {\n      M[0] = max(M[0], X[i, r])\n      M[1] = min(X[i, r] * 2.0, M[1])\n    }\n"
     "    Y[i, 0] = M[0]\n    Y[i, 1] = M[1]\n"
     "  }\n}\n",
     2, {"mn", "m2"}, 'w', "1 row loop over the lanes (1 reduction)"},
    /* an update not of the accumulator form (Q*0.5 + x): that loop stays whole on every lane */
    {"prim @decay(X: Buffer[(m, n), f32], Y: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc Q: Local[(1,), f32]\n    Q[0] = 0.0\n"
     "    for r in 0..n reduce { Q[0] = Q[0] * 0.5 + X[i, r] }\n"
     "    for j in 0..n { Y[i, j] = X[i, j] - Q[0] }\n"
     "  }\n}\n",
     2, {"mn", "mn"}, 'w', "1 row loop over the lanes (0 reductions), 1 serial on every lane"},
    {"prim @decay_only(X: Buffer[(m, n), f32], Y: Buffer[(m,), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc Q: Local[(1,), f32]\n    Q[0] = 0.0\n"
     "    for r in 0..n reduce { Q[0] = Q[0] * 0.5 + X[i, r] }\n"
     "    Y[i] = Q[0]\n"
     "  }\n}\n",
     2, {"mn", "m"}, 'r', NULL},
    /* the code around the lanes loops reads and writes Y: every lane would add its 1.0 */
    {"prim @bump(X: Buffer[(m, n), f32], Y: Buffer[(m,), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc S: Local[(1,), f32]\n    S[0] = 0.0\n"
     "    for r in 0..n reduce { S[0] = S[0] + X[i, r] }\n"
     "    Y[i] = Y[i] + S[0]\n"
     "  }\n}\n",
     2, {"mn", "m"}, 'r', "no warp per row: the code around its loops both stores and reads 'Y'"},
    /* col2im (a transposed convolution): the tap loop is not `reduce`, yet its windows overlap
     * (t0 + x0), so it cannot be dealt to the lanes; around the lanes it stores and reads Y.
     * Dealt, two lanes added into one element at once: wrong on the H200 (fuzz-ops seed 23) */
    {"prim @col2im(col: Buffer[(m, 2, n), f32], Y: Buffer[(m, M), f32]) {\n"
     "  for q in 0..m {\n"
     "    for a0 in 0..m + n { Y[q, a0] = 0.0 }\n"
     "    for t0 in 0..2 {\n"
     "      for x0 in 0..n { Y[q, t0 + x0] = Y[q, t0 + x0] + col[q, t0, x0] }\n"
     "    }\n"
     "  }\n}\n",
     2, {"m2n", "mM"}, 'r', "no warp per row: the code around its loops both stores and reads 'Y'"},
    /* a generated mean: the sum accumulates in the output, staged in a Local for the lanes */
    {"prim @mean(X: Buffer[(m, n), f32], Y: Buffer[(m, 1), f32]) {\n"
     "  for i in 0..m {\n"
     "    Y[i, 0] = 0.0\n"
     "    for r in 0..n reduce { Y[i, 0] = Y[i, 0] + X[i, r] * X[i, r] }\n"
     "    Y[i, 0] = Y[i, 0] / f32(n)\n"
     "  }\n}\n",
     2, {"mn", "m1"}, 'w', "1 row loop over the lanes (1 reduction)"},
    /* rows of 8: a thread per row; rows of 24: a warp, 8 lanes idle */
    {"prim @sum8(X: Buffer[(m, 8), f32], Y: Buffer[(m,), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc S: Local[(1,), f32]\n    S[0] = 0.0\n"
     "    for r in 0..8 reduce { S[0] = S[0] + X[i, r] }\n"
     "    Y[i] = S[0]\n"
     "  }\n}\n",
     2, {"mE", "m"}, 'r', NULL},
    {"prim @sum24(X: Buffer[(m, 24), f32], Y: Buffer[(m,), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc S: Local[(1,), f32]\n    S[0] = 0.0\n"
     "    for r in 0..24 reduce { S[0] = S[0] + X[i, r] }\n"
     "    Y[i] = S[0]\n"
     "  }\n}\n",
     2, {"mT", "m"}, 'w', "1 row loop over the lanes (1 reduction)"},
};

#endif
