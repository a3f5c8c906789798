/* api_bind.c — the parts of loom.h made for language bindings (python/loom reaches them
 * through ctypes): models from memory, the memory plan's peak as text, the reference
 * interpreter on runtime tensors, and `loom sym`'s simplify / prove / eval on text.
 * Every function returns a status carrying Loom's message; nothing is printed. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import.h"
#include "graph/memplan.h"
#include "loom.h"
#include "symbolic/sym.h"

/* ---- models from memory ---- */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* ONNX's binary protobuf has control bytes early (tags, lengths); .loom text has none. */
static bool looks_binary(const unsigned char *b, size_t len) {
  size_t n = len < 4096 ? len : 4096;
  for (size_t i = 0; i < n; i++)
    if (b[i] < 0x20 && b[i] != '\n' && b[i] != '\r' && b[i] != '\t') return true;
  return false;
}

/* Verifies a fresh module; on failure the located errors become the status. */
static loom_status verify(loom_graph_module *m, loom_code code) {
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_status st = loom_graph_verify(m, &dl);
  if (st && dl.errors) {
    loom_status_free(st);
    st = loom_diag_list_status(&dl, code);
  }
  loom_diag_list_destroy(&dl);
  return st;
}

loom_status loom_module_load_buffer(const void *bytes, size_t len, const char *name, const char *format,
                                    loom_graph_module **out) {
  *out = NULL;
  if (!name) name = "<memory>";
  bool onnx;
  if (format && !strcmp(format, "onnx")) onnx = true;
  else if (format && !strcmp(format, "loom")) onnx = false;
  else if (format) return LOOM_ERROR(INVALID_ARGUMENT, "%s: unknown format '%s' (expected onnx or loom)", name, format);
  else if (ends_with(name, ".onnx")) onnx = true;
  else if (ends_with(name, ".loom")) onnx = false;
  else onnx = looks_binary(bytes, len);

  loom_status st;
  if (onnx) {
    loom_onnx_model *model;
    LOOM_PROPAGATE(loom_onnx_model_parse(bytes, len, name, NULL, &model));
    st = loom_onnx_import_adopting(model, out); /* the module keeps the model: weights not copied */
    if (!st) st = verify(*out, LOOM_CODE_INVALID_ARGUMENT);
  } else {
    loom_source src = {name, bytes, len};
    loom_diag_list dl;
    loom_diag_list_init(&dl, NULL);
    st = loom_graph_parse(&src, &dl, out);
    if (st && dl.errors) {
      loom_status_free(st);
      st = loom_diag_list_status(&dl, LOOM_CODE_PARSE_ERROR);
    }
    loom_diag_list_destroy(&dl);
    if (!st) st = verify(*out, LOOM_CODE_PARSE_ERROR);
  }
  if (st) {
    loom_graph_module_destroy(*out);
    *out = NULL;
  }
  return st;
}

/* ---- the memory plan ---- */

loom_status loom_compiled_memory_peak(loom_compiled *c, const char *fn, char **out_text) {
  *out_text = NULL;
  loom_graph_module *m = loom_compiled_module(c);
  const loom_graph_func *f = loom_graph_module_find_func(m, fn);
  if (!f) return LOOM_ERROR(NOT_FOUND, "no graph function '%s' in the module", fn);
  const loom_sym_expr *peak;
  LOOM_RETURN_IF_ERROR(loom_memplan_total_peak(m, f, &peak), "while planning the memory of '%s'", fn);
  *out_text = loom_sym_to_string(peak);
  return *out_text ? LOOM_OK : LOOM_OOM();
}

/* ---- the reference interpreter on runtime tensors ---- */

/* A dense CPU tensor into an interpreter value (copied). */
static loom_status value_from_tensor(const loom_tensor *t, uint32_t i, loom_graph_value *out) {
  if (!loom_tensor_is_contiguous(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "input %u: strided tensors are not supported, pass a dense one", i);
  if (t->rank > 8) return LOOM_ERROR(OUT_OF_RANGE, "input %u: rank %d is more than the interpreter's 8", i, t->rank);
  LOOM_PROPAGATE(loom_graph_value_tensor(t->dtype, t->rank, t->shape, out));
  size_t nbytes;
  loom_status st = loom_tensor_nbytes(t->dtype, t->rank, t->shape, &nbytes);
  if (!st && nbytes) memcpy(out->t.data, t->data, nbytes);
  if (st) loom_graph_value_free(out);
  return st;
}

/* An interpreter tensor value into a fresh runtime tensor on `dev` (copied). */
static loom_status tensor_from_value(loom_device *dev, const loom_graph_value *v, uint32_t i, loom_vm_obj **out) {
  if (v->kind != LOOM_SINFO_TENSOR)
    return LOOM_ERROR(UNIMPLEMENTED, "result %u is not a tensor (struct info kind %d): only tensors are returned", i,
                      (int)v->kind);
  loom_tensor *t;
  LOOM_PROPAGATE(loom_tensor_alloc(dev, v->t.dtype, v->t.ndim, v->t.shape, &t));
  size_t nbytes;
  loom_status st = loom_tensor_nbytes(t->dtype, t->rank, t->shape, &nbytes);
  if (!st && nbytes) memcpy(t->data, v->t.data, nbytes);
  if (st) {
    loom_tensor_release(t);
    return st;
  }
  *out = &t->hdr;
  return LOOM_OK;
}

/* The result (a tuple flattened one level) into out->items, on a CPU device of its own. */
static loom_status outputs_from_value(const loom_graph_value *res, loom_rt_outputs *out) {
  loom_device *dev;
  LOOM_PROPAGATE(loom_device_cpu_create(NULL, &dev));
  bool tuple = res->kind == LOOM_SINFO_TUPLE;
  uint32_t n = tuple ? (uint32_t)res->n : 1;
  loom_status st = LOOM_OK;
  out->items = calloc(n ? n : 1, sizeof *out->items);
  if (!out->items) st = LOOM_OOM();
  for (uint32_t i = 0; i < n && !st; i++) {
    st = tensor_from_value(dev, tuple ? &res->items[i] : res, i, &out->items[i]);
    if (!st) out->count = i + 1;
  }
  loom_device_release(dev); /* the tensors' storage holds it */
  if (st) loom_rt_outputs_free(out);
  return st;
}

loom_status loom_interp_call_buffer(const void *bytes, size_t len, const char *name, const char *format, const char *fn,
                                    loom_tensor *const *inputs, uint32_t ninputs, loom_rt_outputs *out) {
  out->count = 0;
  out->items = NULL;
  loom_graph_module *m;
  LOOM_PROPAGATE(loom_module_load_buffer(bytes, len, name, format, &m));
  loom_graph_value *args = calloc(ninputs ? ninputs : 1, sizeof *args);
  loom_status st = args ? LOOM_OK : LOOM_OOM();
  uint32_t made = 0;
  for (; made < ninputs && !st; made++) st = value_from_tensor(inputs[made], made, &args[made]);
  if (st && made) made--; /* the failed one was not made */
  loom_graph_value res;
  memset(&res, 0, sizeof res);
  if (!st) st = loom_graph_eval(m, fn, ninputs, args, NULL, &res);
  if (!st) {
    st = outputs_from_value(&res, out);
    loom_graph_value_free(&res);
  }
  for (uint32_t i = 0; i < made; i++) loom_graph_value_free(&args[i]);
  free(args);
  loom_graph_module_destroy(m);
  return st;
}

/* ---- symbolic arithmetic on text ---- */

typedef struct sym_session {
  loom_sym_ctx *cx;
  loom_sym_names *names;
} sym_session;

static void sym_end(sym_session *ss) {
  loom_sym_names_destroy(ss->names);
  loom_sym_ctx_destroy(ss->cx);
}

/* A context, `expr` parsed in it (into *e) and the facts assumed. */
static loom_status sym_begin(sym_session *ss, const char *expr, const char *const *facts, uint32_t nfacts,
                             const loom_sym_expr **e) {
  ss->cx = NULL;
  ss->names = NULL;
  LOOM_PROPAGATE(loom_sym_ctx_create(NULL, &ss->cx));
  loom_status st = loom_sym_names_create(ss->cx, LOOM_SYM_VAR_SHAPE, &ss->names);
  if (!st) st = loom_sym_parse_string(ss->cx, ss->names, "<expr>", expr, e);
  for (uint32_t i = 0; i < nfacts && !st; i++) {
    st = loom_sym_assume_text(ss->cx, facts[i]);
    if (st) st = loom_status_annotate(st, __FILE__, __LINE__, "while assuming '%s'", facts[i]);
  }
  if (st) sym_end(ss);
  return st;
}

loom_status loom_sym_text_simplify(const char *expr, const char *const *facts, uint32_t nfacts, char **out_text) {
  *out_text = NULL;
  sym_session ss;
  const loom_sym_expr *e;
  LOOM_PROPAGATE(sym_begin(&ss, expr, facts, nfacts, &e));
  const loom_sym_expr *r = loom_sym_simplify(ss.cx, e);
  loom_status st = r ? LOOM_OK : loom_sym_ctx_take_error(ss.cx);
  if (!st) {
    *out_text = loom_sym_to_string(r);
    if (!*out_text) st = LOOM_OOM();
  }
  sym_end(&ss);
  return st;
}

loom_status loom_sym_text_prove(const char *claim, const char *const *facts, uint32_t nfacts, int32_t *out) {
  *out = -1;
  sym_session ss;
  const loom_sym_expr *e;
  LOOM_PROPAGATE(sym_begin(&ss, claim, facts, nfacts, &e));
  loom_sym_truth t = loom_sym_prove_cases(ss.cx, e);
  *out = t == LOOM_SYM_TRUE ? 1 : t == LOOM_SYM_FALSE ? 0 : -1;
  sym_end(&ss);
  return LOOM_OK;
}

loom_status loom_sym_text_eval(const char *expr, const char *const *names, const int64_t *values, uint32_t n,
                               int64_t *out) {
  *out = 0;
  sym_session ss;
  const loom_sym_expr *e;
  LOOM_PROPAGATE(sym_begin(&ss, expr, NULL, 0, &e));
  loom_sym_env *env;
  loom_status st = loom_sym_env_create(NULL, &env);
  if (st) {
    sym_end(&ss);
    return st;
  }
  for (uint32_t i = 0; i < n && !st; i++) {
    const loom_sym_expr *var = loom_sym_names_get(ss.names, names[i], strlen(names[i]));
    if (!var) {
      st = loom_sym_ctx_take_error(ss.cx);
      if (!st) st = LOOM_ERROR(INVALID_ARGUMENT, "bad variable name '%s'", names[i]);
    } else {
      st = loom_sym_env_set(env, var, values[i]);
    }
  }
  if (!st) st = loom_sym_eval(ss.cx, e, env, out);
  loom_sym_env_destroy(env);
  sym_end(&ss);
  return st;
}
