/* onnx_import_random.c — Dropout in training mode, reproducing onnx.reference: its draws are
 * numpy's legacy RandomState(seed), a fixed function of the seed and the shape, computed here at
 * import (X's dims must be known) and used as a constant; ratio and training_mode may arrive at
 * run time. (Bernoulli and RandomUniformLike are not here: the expected output of the node test
 * test_bernoulli_seed is not what numpy draws from its seed — RandomState(0).binomial(1, x)
 * agrees in 3 of its 10 elements — so a reproduction of the reference cannot pass it.) */
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"


/* numpy's legacy RandomState(seed).uniform(0, 1, n): MT19937 seeded by init_genrand(seed), each
 * double from two draws, (a >> 5) * 2^26 + (b >> 6) over 2^53 (numpy's random_double). */
static void mt_uniform(uint32_t seed, double *u, int64_t n) {
  uint32_t m[624];
  m[0] = seed;
  for (uint32_t i = 1; i < 624; i++) m[i] = 1812433253u * (m[i - 1] ^ (m[i - 1] >> 30)) + i;
  int idx = 624;
  for (int64_t k = 0; k < n; k++) {
    uint32_t ab[2];
    for (int h = 0; h < 2; h++) {
      if (idx >= 624) {
        for (int j = 0; j < 624; j++) {
          uint32_t y = (m[j] & 0x80000000u) | (m[(j + 1) % 624] & 0x7fffffffu);
          m[j] = m[(j + 397) % 624] ^ (y >> 1) ^ (y & 1 ? 0x9908b0dfu : 0);
        }
        idx = 0;
      }
      uint32_t y = m[idx++];
      y ^= y >> 11, y ^= (y << 7) & 0x9d2c5680u, y ^= (y << 15) & 0xefc60000u, y ^= y >> 18;
      ab[h] = y;
    }
    u[k] = ((double)(ab[0] >> 5) * 67108864.0 + (double)(ab[1] >> 6)) / 9007199254740992.0;
  }
}

/* As onnx.reference's Dropout: when training_mode is true and ratio is not 0, keep = U >= ratio
 * with U = RandomState(seed).uniform(0, 1, shape(X)) (a fixed function of the seed: every call
 * draws the same mask; without a seed ONNX asks for fresh draws, refused as unsupported), y = keep ? X / (1 - ratio) : 0 and mask = keep; otherwise y = X and mask is all
 * true. U is drawn here (X's dims must be constant); ratio and training_mode may arrive at run
 * time, so the choice is `where`s on `active = training_mode && ratio != 0`. */
loom_status oimp_dropout_training(nctx *c, loom_graph_expr **out) {
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims || !loom_dtype_is_float(si->dtype))
    return UNSUP(c->n, "training_mode needs a float input 0 (data) of known dims");
  int64_t dims[8], seed;
  if (si->ndim > 8) return UNSUP(c->n, "training_mode with input 0 of rank %d (at most 8)", si->ndim);
  for (int k = 0; k < si->ndim; k++)
    if (!loom_sym_is_const(si->dims[k], &dims[k])) return UNSUP(c->n, "training_mode needs the dims of input 0 (data) known at import");
  if (!loom_onnx_node_attr(c->n, "seed")) /* ONNX: a fresh seed per run; one fixed mask would be wrong */
    return UNSUP(c->n, "training_mode without a 'seed' attribute (the draws would differ per run)");
  LOOM_PROPAGATE(oimp_attr_int(c, "seed", 0, &seed));
  if (seed < 0 || seed > 0xffffffffLL) return BAD(c->n, "attribute 'seed' is %lld (0 to 2^32 - 1)", (long long)seed);
  for (size_t i = 2; i < c->n->n_outputs; i++)
    if (*c->n->outputs[i]) return BAD(c->n, "Dropout has two outputs");
  loom_onnx_tensor *u = oimp_new_tensor(c->im, LOOM_DTYPE_F64, (size_t)si->ndim, dims);
  if (!u) return UNSUP(c->n, "training_mode: input 0 (data) has more than %d elements", OIMP_FOLD_MAX);
  mt_uniform((uint32_t)seed, u->data, u->numel);
  loom_graph_expr *ue = oimp_const_of(c->im, u), *r, *r64, *keep, *active, *nz, *scale, *xs, *zero, *y, *x = c->args[0];
  if (!ue) return LOOM_OOM();
  loom_dtype t = si->dtype;
  if (oimp_has_input(c, 1)) r = c->args[1];
  else LOOM_PROPAGATE(oimp_scalar(c, LOOM_DTYPE_F32, 0.5, &r));
  if (r->sinfo->kind != LOOM_SINFO_TENSOR || r->sinfo->ndim != 0 || !loom_dtype_is_float(r->sinfo->dtype))
    return BAD(c->n, "input 1 (ratio) must be a float scalar");
  if (c->args[2]->sinfo->kind != LOOM_SINFO_TENSOR || c->args[2]->sinfo->ndim != 0 || c->args[2]->sinfo->dtype != LOOM_DTYPE_BOOL)
    return BAD(c->n, "input 2 (training_mode) must be a bool scalar");
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F64));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, r, &r64));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_GREATER_EQUAL, ue, r64, &keep));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_NOT_EQUAL, r, 0, &nz));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_AND, c->args[2], nz, &active));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_NOT, active, &nz));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_OR, keep, nz, &keep)); /* the mask */
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", t));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, r, &scale));
  LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_SUB, 1.0, scale, &scale));
  LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_DIV, 1.0, scale, &scale));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, x, scale, &xs));
  LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, active, xs, x, &xs));
  LOOM_PROPAGATE(oimp_scalar(c, t, 0.0, &zero));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_WHERE, 3, (loom_graph_expr *[]){keep, xs, zero}, c->n->outputs[0], &y));
  if (c->n->n_outputs > 1 && *c->n->outputs[1]) {
    loom_graph_expr *mask;
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_BOOL));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &keep, c->n->outputs[1], &mask));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], mask, NULL));
  }
  *out = y;
  return LOOM_OK;
}
