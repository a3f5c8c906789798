/* cost.c — what a step costs, learned from the steps the engine runs: the step time (ms) is
 * fitted as a + b·tokens + c·keys (tokens the step's tokens, keys what its attention reads:
 * a decode at context p reads p + 1, a chunk of k tokens after p cached k·p + k(k+1)/2) by
 * least squares with exponential forgetting, so that the fit follows the machine's load and
 * holds for any model: nothing in it is tuned to one. The scheduler asks it for a step's
 * predicted time (sched.c, step_ratio). A step far slower than predicted (the machine took
 * the cores away) counts as three times the prediction, so that one stall does not inflate
 * the fit for a hundred steps. */
#include <math.h>
#include <string.h>

#include "serve/serve_internal.h"

/* Weight of the past at each new step: the fit remembers about the last 1 / (1 - FORGET) steps. */
#define FORGET 0.99
/* Steps observed before the fit is used. */
#define READY_STEPS 16
/* Keys are counted in thousands in the fit, so that its normal equations are well scaled. */
#define KEY_UNIT 1000.0

void loom_serve_cost_init(loom_serve_cost *c) { memset(c, 0, sizeof *c); }

/* Solves the k x k system m x = r (k <= 3, the first k features) by Gaussian elimination with
 * partial pivoting; false when it is singular. */
static bool solve(const double m[3][3], const double r[3], int k, double x[3]) {
  double a[3][4];
  for (int i = 0; i < k; i++) {
    for (int j = 0; j < k; j++) a[i][j] = m[i][j];
    a[i][k] = r[i];
  }
  for (int col = 0; col < k; col++) {
    int piv = col;
    for (int i = col + 1; i < k; i++)
      if (fabs(a[i][col]) > fabs(a[piv][col])) piv = i;
    if (fabs(a[piv][col]) < 1e-9 * (1 + fabs(m[0][0]))) return false;
    for (int j = 0; j <= k; j++) {
      double t = a[col][j];
      a[col][j] = a[piv][j], a[piv][j] = t;
    }
    for (int i = 0; i < k; i++) {
      if (i == col) continue;
      double f = a[i][col] / a[col][col];
      for (int j = col; j <= k; j++) a[i][j] -= f * a[col][j];
    }
  }
  for (int i = 0; i < k; i++) x[i] = a[i][k] / a[i][i];
  return true;
}

/* The fit of the sums so far: all three coefficients when they come out non-negative, else
 * the intercept with the one of tokens / keys that does (a negative cost per token or per key
 * is noise or a feature that does not vary), else the mean. */
static void refit(loom_serve_cost *c) {
  double x[3];
  if (solve(c->xx, c->xy, 3, x) && x[0] >= 0 && x[1] >= 0 && x[2] >= 0) {
    memcpy(c->coef, x, sizeof x);
    return;
  }
  for (int drop = 2; drop >= 1; drop--) { /* keep feature 3 - drop: tokens, then keys */
    int f = 3 - drop;
    double m[3][3] = {{c->xx[0][0], c->xx[0][f]}, {c->xx[f][0], c->xx[f][f]}}, r[3] = {c->xy[0], c->xy[f]};
    if (solve(m, r, 2, x) && x[0] >= 0 && x[1] >= 0) {
      c->coef[0] = x[0], c->coef[1] = f == 1 ? x[1] : 0, c->coef[2] = f == 2 ? x[1] : 0;
      return;
    }
  }
  c->coef[0] = c->xx[0][0] > 0 ? c->xy[0] / c->xx[0][0] : 0;
  c->coef[1] = c->coef[2] = 0;
}

void loom_serve_cost_observe(loom_serve_cost *c, int64_t tokens, int64_t keys, double ms) {
  if (!(ms >= 0) || tokens <= 0) return; /* NaN, a negative clock difference, an empty step */
  if (loom_serve_cost_ready(c)) {
    double cap = 3 * loom_serve_cost_predict(c, tokens, keys);
    if (cap > 0 && ms > cap) ms = cap;
  }
  double f[3] = {1, (double)tokens, (double)keys / KEY_UNIT};
  for (int i = 0; i < 3; i++) {
    for (int j = 0; j < 3; j++) c->xx[i][j] = FORGET * c->xx[i][j] + f[i] * f[j];
    c->xy[i] = FORGET * c->xy[i] + f[i] * ms;
  }
  c->steps++;
  refit(c);
}

bool loom_serve_cost_ready(const loom_serve_cost *c) { return c->steps >= READY_STEPS; }

double loom_serve_cost_predict(const loom_serve_cost *c, int64_t tokens, int64_t keys) {
  return c->coef[0] + c->coef[1] * (double)tokens + c->coef[2] * (double)keys / KEY_UNIT;
}
