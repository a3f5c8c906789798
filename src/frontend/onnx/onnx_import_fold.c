/* onnx_import_fold.c — constants in the importer: an ONNX tensor as a graph constant, fresh
 * host tensors for folded results, and constant folding: a node whose inputs are all constants
 * is built alone in a scratch module and run in the graph interpreter. */
#include "frontend/onnx/onnx_import_internal.h"

#include <stdlib.h>
#include <string.h>

loom_graph_expr *oimp_const_of(imp *im, const loom_onnx_tensor *t) {
  const loom_sym_expr *dims[16];
  if (t->rank > 16) return NULL;
  for (size_t k = 0; k < t->rank; k++) dims[k] = loom_sym_const(im->cx, t->dims[k]);
  const loom_sinfo *si = loom_sinfo_tensor(im->m, t->dtype, (int)t->rank, dims, NULL);
  if (!si) return NULL;
  if (t->dtype == LOOM_DTYPE_STRING) { /* the handles and their bytes copied into the module's arena */
    loom_arena *ar = loom_graph_module_arena(im->m);
    loom_str *e = LOOM_ARENA_ARRAY(ar, loom_str, t->numel ? (size_t)t->numel : 1);
    if (!e) return NULL;
    for (int64_t i = 0; i < t->numel; i++) {
      loom_str s;
      memcpy(&s, (const char *)t->data + (size_t)i * sizeof s, sizeof s);
      char *b = s.len ? loom_arena_alloc(ar, (size_t)s.len + 1, 1) : NULL;
      if (s.len && !b) return NULL;
      if (s.len) memcpy(b, s.data, (size_t)s.len), b[s.len] = 0;
      e[i] = (loom_str){b, s.len};
    }
    return loom_graph_const_new(im->m, si, e, t->nbytes);
  }
  if (im->opts && im->opts->borrow_tensors) return loom_graph_const_borrow(im->m, si, t->data, t->nbytes);
  return loom_graph_const_new(im->m, si, t->data, t->nbytes);
}

/* A fresh host tensor in the module arena (for folded constants). */
loom_onnx_tensor *oimp_new_tensor(imp *im, loom_dtype dt, size_t rank, const int64_t *dims) {
  loom_arena *a = loom_graph_module_arena(im->m);
  loom_onnx_tensor *t = LOOM_ARENA_NEW(a, loom_onnx_tensor);
  if (!t) return NULL;
  t->name = "", t->dtype = dt, t->rank = rank, t->numel = 1;
  t->dims = loom_arena_array(a, rank ? rank : 1, sizeof(int64_t), _Alignof(int64_t));
  if (!t->dims) return NULL;
  for (size_t k = 0; k < rank; k++) {
    if (dims[k] < 0 || (dims[k] && t->numel > OIMP_FOLD_MAX / dims[k])) return NULL; /* see OIMP_FOLD_MAX */
    t->dims[k] = dims[k], t->numel *= dims[k];
  }
  t->nbytes = (size_t)t->numel * loom_dtype_size(dt);
  t->data = loom_arena_alloc_zero(a, t->nbytes ? t->nbytes : 1, 16);
  return t->data ? t : NULL;
}


double oimp_scalar_f64(const loom_onnx_tensor *t) {
  loom_graph_tensor g = {.dtype = t->dtype, .ndim = 0, .numel = 1, .data = t->data};
  return loom_graph_tensor_get_f64(&g, 0);
}


loom_status oimp_fold_const(nctx *c, loom_onnx_tensor *t, loom_graph_expr **out) {
  loom_graph_expr *k = oimp_const_of(c->im, t);
  if (!k) return LOOM_OOM();
  c->folded = t;
  *out = k;
  return LOOM_OK;
}


/* The most elements a folded result may have: larger ones stay operators (the graph's fold pass
 * decides about them, with its own rules). */
#define FOLD_RESULT_MAX ((int64_t)1 << 20)

/* Whether the inferred result y is known to have more than FOLD_RESULT_MAX elements (then it is
 * not computed at all: GPT-2's tied LM head, Transpose(wte), 38.6 M elements, took 60% of
 * `loom import`'s time in the interpreter for a result that was then dropped). */
static bool too_large(const loom_graph_expr *y) {
  const loom_sinfo *si = y ? y->sinfo : NULL;
  if (!si || si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || (si->ndim && !si->dims)) return false;
  int64_t numel = 1;
  for (int i = 0; i < si->ndim; i++) {
    int64_t d;
    if (!loom_sym_is_const(si->dims[i], &d) || d < 0) return false;
    if (__builtin_mul_overflow(numel, d, &numel)) return true;
  }
  return numel > FOLD_RESULT_MAX;
}

/* Constant folding: a node whose inputs are all constants is built alone in a scratch
 * module and run in the interpreter; its result becomes a constant (so shape arithmetic
 * feeding Reshape / axes / ConstantOfShape folds). False when it cannot be folded, or when its
 * result would have more than FOLD_RESULT_MAX elements. */
bool oimp_fold_node(imp *im, const op_entry *e, const nctx *c, loom_onnx_tensor **out) {
  *out = NULL;
  imp sub = {.model = im->model, .g = im->g, .opset = im->opset};
  if (loom_graph_module_create(NULL, &sub.m)) return false;
  sub.cx = loom_graph_module_sym(sub.m);
  loom_graph_builder_begin(&sub.b, sub.m, "main");
  nctx c2 = *c;
  c2.im = &sub;
  /* c2's own operands (in the scratch module); past c's inputs NULL like every node's */
  size_t cap = c->nargs > OIMP_MAX_IN ? c->nargs : OIMP_MAX_IN;
  loom_graph_expr **args2 = calloc(cap, sizeof *args2);
  bool ok = args2 != NULL;
  if (ok) memcpy(args2, c->args, c->nargs * sizeof *args2);
  c2.args = args2;
  for (size_t i = 0; i < c2.nargs && ok; i++)
    if (c2.args[i]) ok = (c2.args[i] = oimp_const_of(&sub, c->consts[i])) != NULL;
  loom_graph_expr *y = NULL;
  loom_status s = ok ? e->h(&c2, e, &y) : LOOM_OK;
  if (s) loom_status_free(s), ok = false;
  if (ok && too_large(y)) ok = false;
  if (ok && (s = loom_graph_builder_end(&sub.b, y, NULL, NULL))) loom_status_free(s), ok = false;
  loom_graph_builder_reset(&sub.b);
  loom_graph_value res;
  if (ok && (s = loom_graph_eval(sub.m, "main", 0, NULL, NULL, &res))) loom_status_free(s), ok = false;
  if (ok) {
    /* string results are not folded: their elements' bytes belong to res */
    if (res.kind == LOOM_SINFO_TENSOR && res.t.numel <= (size_t)FOLD_RESULT_MAX && res.t.dtype != LOOM_DTYPE_STRING) {
      *out = oimp_new_tensor(im, res.t.dtype, (size_t)res.t.ndim, res.t.shape);
      if (*out && (*out)->nbytes) memcpy((*out)->data, res.t.data, (*out)->nbytes);
    }
    loom_graph_value_free(&res);
  }
  free(args2);
  free(sub.val_names), free(sub.vals), free(sub.val_consts), free(sub.val_syms), free(sub.val_seqs), free(sub.sym_names), free(sub.syms), free(sub.used);
  loom_graph_module_destroy(sub.m);
  return *out != NULL;
}
