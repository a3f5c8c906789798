/* offload.c — the partial-lowering pass of offload.h: matmul / linear to BLAS per shape range. */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/offload.h"

/* One call BLAS can take. */
typedef struct gemm_form {
  bool linear;      /* linear(x, w[, bias]): B is w (out, in), stored transposed */
  int ra, rb, rc;   /* ranks of A, B and the result */
  loom_dtype dtype;
} gemm_form;

/* Is `call` (bound to `b`) a matmul / linear BLAS can compute? */
static bool match(const loom_graph_binding *b, gemm_form *f) {
  const loom_graph_expr *v = b->value;
  if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP || b->nguards) return false;
  loom_graph_op op = v->u.call.op;
  if (op != LOOM_GRAPH_OP_MATMUL && op != LOOM_GRAPH_OP_LINEAR) return false;
  const loom_sinfo *a = v->u.call.args[0]->sinfo, *w = v->u.call.args[1]->sinfo, *o = v->sinfo;
  if (a->kind != LOOM_SINFO_TENSOR || w->kind != LOOM_SINFO_TENSOR || o->kind != LOOM_SINFO_TENSOR) return false;
  if (!a->dims || !w->dims || !o->dims || a->dtype != o->dtype || w->dtype != o->dtype) return false;
  if (o->dtype != LOOM_DTYPE_F32 && o->dtype != LOOM_DTYPE_F64) return false;
  /* matmul with transpose_b reads B as linear reads w: BLAS's transposed form (B 2-D, or batched
   * as the result is: attention's Q @ K^T) */
  if (op == LOOM_GRAPH_OP_MATMUL && loom_graph_call_int(v, "packed_b")) return false; /* panels: not BLAS's layout */
  bool tb = op == LOOM_GRAPH_OP_MATMUL && loom_graph_call_int(v, "transpose_b") != 0;
  if (tb && w->ndim != 2 && w->ndim != o->ndim) return false;
  *f = (gemm_form){op == LOOM_GRAPH_OP_LINEAR || tb, a->ndim, w->ndim, o->ndim, o->dtype};
  if (f->ra < 2 || f->rb < 2 || f->rc < 2 || (op == LOOM_GRAPH_OP_LINEAR && f->rb != 2) || (f->ra != 2 && f->ra != f->rc) ||
      (f->rb != 2 && f->rb != f->rc))
    return false;
  /* batch dims: an operand with them has exactly the result's (no broadcasting) */
  for (int i = 0; i < f->rc - 2; i++)
    if ((f->ra == f->rc && a->dims[i] != o->dims[i]) || (f->rb == f->rc && w->dims[i] != o->dims[i])) return false;
  return true;
}

/* The extern for `f` (declared in the module on first use): @blas_sgemm[_nt]_<ra>_<rb>. */
static loom_status gemm_extern(loom_graph_module *m, const gemm_form *f, const char **out) {
  char name[64], symbol[32];
  const char *t = f->dtype == LOOM_DTYPE_F32 ? "s" : "d";
  snprintf(name, sizeof name, "blas_%sgemm%s_%d_%d", t, f->linear ? "_nt" : "", f->ra, f->rb);
  snprintf(symbol, sizeof symbol, "blas.%sgemm%s", t, f->linear ? "_nt" : "");
  if (!(*out = loom_graph_module_intern(m, name, strlen(name)))) return LOOM_OOM();
  if (loom_graph_module_find_extern(m, name)) return LOOM_OK;
  loom_sym_ctx *cx = m->cx;
  const loom_sym_expr *batch[8], *mm = loom_sym_var_new(cx, "m", LOOM_SYM_VAR_SHAPE),
                                 *kk = loom_sym_var_new(cx, "k", LOOM_SYM_VAR_SHAPE),
                                 *nn = loom_sym_var_new(cx, "n", LOOM_SYM_VAR_SHAPE);
  for (int i = 0; i < f->rc - 2; i++) {
    char bn[8];
    snprintf(bn, sizeof bn, "b%d", i);
    batch[i] = loom_sym_var_new(cx, bn, LOOM_SYM_VAR_SHAPE);
  }
  const loom_sym_expr **da = loom_graph_dims_new(m, (size_t)f->ra), **db = loom_graph_dims_new(m, (size_t)f->rb),
                      **dc = loom_graph_dims_new(m, (size_t)f->rc);
  if (!mm || !kk || !nn || !da || !db || !dc) return LOOM_OOM();
  for (int i = 0; i < f->rc - 2; i++) {
    if (!batch[i]) return LOOM_OOM();
    if (f->ra == f->rc) da[i] = batch[i];
    if (f->rb == f->rc) db[i] = batch[i];
    dc[i] = batch[i];
  }
  da[f->ra - 2] = mm, da[f->ra - 1] = kk;
  if (f->linear) db[f->rb - 2] = nn, db[f->rb - 1] = kk;
  else db[f->rb - 2] = kk, db[f->rb - 1] = nn;
  dc[f->rc - 2] = mm, dc[f->rc - 1] = nn;
  const loom_sinfo *ps[2] = {loom_sinfo_tensor(m, f->dtype, f->ra, da, NULL),
                             loom_sinfo_tensor(m, f->dtype, f->rb, db, NULL)};
  const loom_sinfo *r = loom_sinfo_tensor(m, f->dtype, f->rc, dc, NULL);
  const loom_sinfo *sig = ps[0] && ps[1] && r ? loom_sinfo_func(m, 2, ps, r) : NULL;
  if (!sig) return LOOM_OOM();
  static const char *const names[2] = {"a", "b"};
  loom_libcall_decl d = {.symbol = symbol, .pure = true};
  return loom_graph_module_declare_extern(m, name, sig, names, &d);
}

static loom_graph_binding *bind(loom_graph_module *m, loom_graph_expr *var, loom_graph_expr *value, loom_loc loc) {
  loom_graph_binding *b = LOOM_ARENA_NEW(&m->arena, loom_graph_binding);
  if (!b) return NULL;
  b->kind = LOOM_GRAPH_BIND_VAR;
  b->var = var;
  b->value = value;
  b->loc = loc;
  return b;
}

/* A block of `n` bindings exporting `nout` vars (dataflow) or none. */
static loom_graph_block *block(loom_graph_module *m, bool dataflow, size_t n, loom_graph_binding *const *bs,
                               size_t nout, loom_graph_expr *const *outs) {
  loom_graph_block *k = LOOM_ARENA_NEW(&m->arena, loom_graph_block);
  loom_graph_binding **b = LOOM_ARENA_ARRAY(&m->arena, loom_graph_binding *, n ? n : 1);
  loom_graph_expr **o = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, nout ? nout : 1);
  if (!k || !b || !o) return NULL;
  if (n) memcpy(b, bs, n * sizeof *b);
  if (nout) memcpy(o, outs, nout * sizeof *o);
  *k = (loom_graph_block){dataflow, n, b, nout, o};
  return k;
}

/* A branch: one dataflow block of `n` bindings whose last var is the result. */
static loom_graph_seq *branch(loom_graph_module *m, size_t n, loom_graph_binding *const *bs) {
  loom_graph_seq *s = LOOM_ARENA_NEW(&m->arena, loom_graph_seq);
  loom_graph_block **bl = LOOM_ARENA_ARRAY(&m->arena, loom_graph_block *, 1);
  loom_graph_expr *res = bs[n - 1]->var;
  if (!s || !bl || !(bl[0] = block(m, true, n, bs, 1, &res))) return NULL;
  *s = (loom_graph_seq){1, bl, res};
  return s;
}

/* A var named `<base><suffix>` with info `si`. */
static loom_graph_expr *var_like(loom_graph_module *m, const loom_graph_expr *base, const char *suffix,
                                 const loom_sinfo *si) {
  char name[256];
  snprintf(name, sizeof name, "%s%s", base->u.var.name, suffix);
  return loom_graph_var_new(m, name, si);
}

/* The library computation of binding `b` (form `f`): its bindings, the last bound to `var`. */
static loom_status library_bindings(loom_graph_module *m, const loom_graph_binding *b, const gemm_form *f,
                                    loom_graph_expr *var, loom_graph_binding **out, size_t *nout) {
  const loom_graph_expr *v = b->value;
  const char *ext;
  LOOM_PROPAGATE(gemm_extern(m, f, &ext));
  loom_graph_expr *call = loom_graph_call_extern(m, ext, 2, v->u.call.args, v->sinfo);
  if (!call) return LOOM_OOM();
  call->sinfo = v->sinfo;
  call->loc = v->loc;
  bool bias = f->linear && v->u.call.nargs == 3;
  loom_graph_expr *mm = bias ? var_like(m, var, "0", v->sinfo) : var;
  if (!mm || !(out[0] = bind(m, mm, call, b->loc))) return LOOM_OOM();
  *nout = 1;
  if (bias) {
    loom_graph_expr *args[2] = {mm, v->u.call.args[2]};
    loom_graph_expr *add = loom_graph_call_op(m, LOOM_GRAPH_OP_ADD, 2, args, 0, NULL);
    if (!add) return LOOM_OOM();
    add->sinfo = v->sinfo;
    if (!(out[1] = bind(m, var, add, b->loc))) return LOOM_OOM();
    *nout = 2;
  }
  return LOOM_OK;
}

/* Rows of the result: the product of every dim but the last. */
static const loom_sym_expr *rows_of(loom_graph_module *m, const loom_sinfo *o) {
  const loom_sym_expr *r = loom_sym_const(m->cx, 1);
  for (int i = 0; i < o->ndim - 1 && r; i++) r = loom_sym_mul(m->cx, r, o->dims[i]);
  return r;
}

typedef LOOM_VEC(loom_graph_binding *) binding_vec;
typedef LOOM_VEC(loom_graph_block *) block_vec;
typedef LOOM_VEC(loom_graph_expr *) expr_vec;

static loom_status offload_seq(loom_graph_module *m, loom_graph_seq *seq, int64_t thr, loom_graph_offload_stats *st);

/* Closes the run of bindings `cur` into a block: a dataflow run exports every var it
 * binds (`final`: only the original block's outputs that it binds). */
static loom_status flush(loom_graph_module *m, block_vec *blocks, binding_vec *cur, bool dataflow,
                         const loom_graph_block *orig, bool final) {
  if (!cur->len) return LOOM_OK;
  expr_vec outs = {0};
  bool ok = true;
  if (dataflow)
    for (size_t i = 0; i < cur->len && ok; i++) {
      loom_graph_expr *var = cur->data[i]->var;
      bool keep = !final;
      for (size_t k = 0; final && k < orig->noutputs; k++) keep = keep || orig->outputs[k] == var ||
                                                                      orig->outputs[k]->u.var.id == var->u.var.id;
      if (keep) ok = LOOM_VEC_PUSH(m->alloc, &outs, var);
    }
  loom_graph_block *k = ok ? block(m, dataflow, cur->len, cur->data, outs.len, outs.data) : NULL;
  LOOM_VEC_FREE(m->alloc, &outs);
  if (!k || !LOOM_VEC_PUSH(m->alloc, blocks, k)) return LOOM_OOM();
  cur->len = 0;
  return LOOM_OK;
}

/* Rewrites one block into `blocks` (splitting a dataflow block around each guarded call). */
static loom_status offload_block(loom_graph_module *m, const loom_graph_block *blk, int64_t thr, block_vec *blocks,
                                 loom_graph_offload_stats *st) {
  binding_vec cur = {0};
  loom_status s = LOOM_OK;
  for (size_t i = 0; i < blk->n && !s; i++) {
    loom_graph_binding *b = blk->bindings[i];
    loom_graph_expr *v = b->value;
    gemm_form f;
    if (v->kind == LOOM_GRAPH_EXPR_IF || v->kind == LOOM_GRAPH_EXPR_LOOP) {
      s = offload_seq(m, v->kind == LOOM_GRAPH_EXPR_IF ? v->u.if_.then_seq : v->u.loop.body, thr, st);
      if (!s && v->kind == LOOM_GRAPH_EXPR_IF) s = offload_seq(m, v->u.if_.else_seq, thr, st);
      if (!s && !LOOM_VEC_PUSH(m->alloc, &cur, b)) s = LOOM_OOM();
      continue;
    }
    bool is_mm = v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP &&
                 (v->u.call.op == LOOM_GRAPH_OP_MATMUL || v->u.call.op == LOOM_GRAPH_OP_LINEAR);
    if (!is_mm || b->kind != LOOM_GRAPH_BIND_VAR || !match(b, &f)) {
      if (is_mm) st->skipped++;
      if (!LOOM_VEC_PUSH(m->alloc, &cur, b)) s = LOOM_OOM();
      continue;
    }
    const loom_sym_expr *rows = rows_of(m, v->sinfo), *t = loom_sym_const(m->cx, thr);
    if (!rows || !t) {
      s = LOOM_OOM();
      break;
    }
    if (loom_sym_prove_le(m->cx, rows, t) == LOOM_SYM_TRUE) { /* always small: generated */
      st->generated++;
      if (!LOOM_VEC_PUSH(m->alloc, &cur, b)) s = LOOM_OOM();
      continue;
    }
    loom_graph_binding *lib[2];
    size_t nlib = 0;
    if (loom_sym_prove_lt(m->cx, t, rows) == LOOM_SYM_TRUE) { /* always large: the library, in place */
      st->library++;
      s = library_bindings(m, b, &f, b->var, lib, &nlib);
      for (size_t k = 0; k < nlib && !s; k++)
        if (!LOOM_VEC_PUSH(m->alloc, &cur, lib[k])) s = LOOM_OOM();
      continue;
    }
    /* y = if (sym(rows <= thr)) { generated } else { library } */
    st->guarded++;
    loom_graph_expr *gvar = var_like(m, b->var, "_gen", v->sinfo), *lvar = var_like(m, b->var, "_blas", v->sinfo);
    loom_graph_binding *gen = gvar ? bind(m, gvar, v, b->loc) : NULL;
    if (!gen || !lvar) s = LOOM_OOM();
    if (!s) s = library_bindings(m, b, &f, lvar, lib, &nlib);
    const loom_sym_expr *le = s ? NULL : loom_sym_cmp(m->cx, LOOM_SYM_LE, rows, t);
    loom_graph_expr *cond = le ? loom_graph_sym_new(m, le) : NULL;
    loom_graph_expr *ife = cond ? LOOM_ARENA_NEW(&m->arena, loom_graph_expr) : NULL;
    loom_graph_seq *then_s = ife ? branch(m, 1, &gen) : NULL, *else_s = then_s ? branch(m, nlib, lib) : NULL;
    loom_graph_binding *nb = else_s ? bind(m, b->var, ife, b->loc) : NULL;
    if (!s && !nb) s = LOOM_OOM();
    if (s) break;
    ife->kind = LOOM_GRAPH_EXPR_IF;
    ife->sinfo = v->sinfo;
    ife->loc = v->loc;
    ife->u.if_.cond = cond;
    ife->u.if_.then_seq = then_s;
    ife->u.if_.else_seq = else_s;
    if (blk->dataflow) {
      s = flush(m, blocks, &cur, true, blk, false);
      if (!s && !LOOM_VEC_PUSH(m->alloc, &cur, nb)) s = LOOM_OOM();
      if (!s) s = flush(m, blocks, &cur, false, blk, false);
    } else if (!LOOM_VEC_PUSH(m->alloc, &cur, nb)) {
      s = LOOM_OOM();
    }
  }
  if (!s) s = flush(m, blocks, &cur, blk->dataflow, blk, true);
  LOOM_VEC_FREE(m->alloc, &cur);
  return s;
}

static loom_status offload_seq(loom_graph_module *m, loom_graph_seq *seq, int64_t thr, loom_graph_offload_stats *st) {
  block_vec blocks = {0};
  loom_status s = LOOM_OK;
  for (size_t i = 0; i < seq->nblocks && !s; i++) s = offload_block(m, seq->blocks[i], thr, &blocks, st);
  if (!s) {
    loom_graph_block **bl = LOOM_ARENA_ARRAY(&m->arena, loom_graph_block *, blocks.len ? blocks.len : 1);
    if (!bl) s = LOOM_OOM();
    else {
      if (blocks.len) memcpy(bl, blocks.data, blocks.len * sizeof *bl);
      seq->blocks = bl;
      seq->nblocks = blocks.len;
    }
  }
  LOOM_VEC_FREE(m->alloc, &blocks);
  return s;
}

loom_status loom_graph_offload(loom_graph_module *m, int64_t threshold, loom_graph_offload_stats *stats) {
  loom_graph_offload_stats st = {0};
  for (size_t i = 0; i < m->funcs.len; i++)
    LOOM_RETURN_IF_ERROR(offload_seq(m, m->funcs.data[i]->body, threshold, &st), "while offloading @%s",
                         m->funcs.data[i]->name);
  if (stats) *stats = st;
  return LOOM_OK;
}
