/* extern.c — external functions of the module: declaring them (with a libcall
 * declaration), their run-side signatures, and calling them from the reference
 * interpreter through libcall (the same loading and calling code the VM uses). */
#include <string.h>

#include "graph/graph_internal.h"

const loom_graph_extern *loom_graph_module_find_extern(const loom_graph_module *m, const char *name) {
  for (size_t i = 0; i < m->externs.len; i++)
    if (!strcmp(m->externs.data[i].name, name)) return &m->externs.data[i];
  return NULL;
}

const char *loom_graph_module_source_dir(const loom_graph_module *m) { return m->dir ? m->dir : "."; }

/* The libcall view of one parameter (or the result) of the graph signature. */
static loom_status to_param(loom_arena *a, const char *ext, size_t i, const char *name, const loom_sinfo *si,
                            loom_libcall_param *out) {
  memset(out, 0, sizeof *out);
  out->name = name;
  char what[96];
  if (i == SIZE_MAX) snprintf(what, sizeof what, "the result");
  else snprintf(what, sizeof what, "parameter %zu%s%s%s", i, name ? " ('" : "", name ? name : "", name ? "')" : "");
  if (si->kind == LOOM_SINFO_SCALAR && si->dtype == LOOM_DTYPE_I64 && i != SIZE_MAX) {
    out->kind = LOOM_LIBCALL_PARAM_INT;
    out->dtype = LOOM_DTYPE_I64;
    return LOOM_OK;
  }
  if (si->kind == LOOM_SINFO_SCALAR)
    return LOOM_ERROR(TYPE_ERROR, "extern @%s: %s is Scalar[%s]; scalars are i64 (a sym(...) value); pass a %s as a "
                      "rank-0 tensor: Tensor[(), %s]",
                      ext, what, loom_dtype_name(si->dtype), loom_dtype_name(si->dtype), loom_dtype_name(si->dtype));
  if (si->kind != LOOM_SINFO_TENSOR)
    return LOOM_ERROR(TYPE_ERROR, "extern @%s: %s must be a tensor%s", ext, what, i == SIZE_MAX ? "" : " or Scalar[i64]");
  if (si->ndim < 0) return LOOM_ERROR(TYPE_ERROR, "extern @%s: %s needs a known rank (its dims are passed as symbols)", ext, what);
  out->kind = LOOM_LIBCALL_PARAM_TENSOR;
  out->dtype = si->dtype; /* LOOM_DTYPE_UNKNOWN is LOOM_DTYPE_COUNT: libcall's "any" */
  out->rank = si->ndim;
  if (si->dims) {
    const char **d = LOOM_ARENA_ARRAY(a, const char *, si->ndim ? (size_t)si->ndim : 1);
    if (!d) return LOOM_OOM();
    for (int k = 0; k < si->ndim; k++) d[k] = loom_sym_is_var(si->dims[k]) ? loom_sym_var_name(si->dims[k]) : NULL;
    out->dims = d;
  }
  return LOOM_OK;
}

loom_status loom_graph_extern_sig(const loom_graph_extern *ex, loom_arena *a, loom_libcall_sig *out) {
  size_t n = ex->sig->nfields;
  loom_libcall_param *ps = LOOM_ARENA_ARRAY(a, loom_libcall_param, n ? n : 1);
  loom_libcall_param res;
  if (!ps) return LOOM_OOM();
  for (size_t i = 0; i < n; i++)
    LOOM_PROPAGATE(to_param(a, ex->name, i, ex->param_names ? ex->param_names[i] : NULL, ex->sig->fields[i], &ps[i]));
  LOOM_PROPAGATE(to_param(a, ex->name, SIZE_MAX, NULL, ex->sig->ret, &res));
  return loom_libcall_decl_lower(ex->name, ex->decl, n, ps, &res, a, out);
}

loom_status loom_graph_module_libcall_sigs(const loom_graph_module *m, loom_arena *a, loom_libcall_sig **out,
                                           size_t *out_n) {
  *out = NULL, *out_n = 0;
  loom_libcall_sig *s = LOOM_ARENA_ARRAY(a, loom_libcall_sig, m->externs.len ? m->externs.len : 1);
  if (!s) return LOOM_OOM();
  for (size_t i = 0; i < m->externs.len; i++) LOOM_PROPAGATE(loom_graph_extern_sig(&m->externs.data[i], a, &s[i]));
  *out = s, *out_n = m->externs.len;
  return LOOM_OK;
}

/* Copies a declaration into the module arena. */
static loom_libcall_decl *copy_decl(loom_graph_module *m, const loom_libcall_decl *d) {
  loom_libcall_decl *c = LOOM_ARENA_NEW(&m->arena, loom_libcall_decl);
  loom_libcall_cref *cr = LOOM_ARENA_ARRAY(&m->arena, loom_libcall_cref, d->ncargs ? d->ncargs : 1);
  if (!c || !cr) return NULL;
  *c = *d;
  if (d->symbol && !(c->symbol = loom_arena_strdup(&m->arena, d->symbol))) return NULL;
  if (d->library && !(c->library = loom_arena_strdup(&m->arena, d->library))) return NULL;
  for (size_t i = 0; i < d->ncargs; i++) {
    cr[i] = d->cargs[i];
    if (d->cargs[i].name && !(cr[i].name = loom_graph_module_intern(m, d->cargs[i].name, strlen(d->cargs[i].name))))
      return NULL;
  }
  c->cargs = cr;
  return c;
}

loom_status loom_graph_module_declare_extern(loom_graph_module *m, const char *name, const loom_sinfo *sig,
                                             const char *const *param_names, const loom_libcall_decl *decl) {
  const char *n = loom_graph_module_intern(m, name, strlen(name));
  if (!n) return LOOM_OOM();
  if (!sig || sig->kind != LOOM_SINFO_FUNC) return LOOM_ERROR(TYPE_ERROR, "extern @%s needs a Func[...] struct info", name);
  if (loom_graph_module_find_extern(m, n)) return LOOM_ERROR(ALREADY_EXISTS, "extern @%s is declared twice", name);
  loom_graph_extern e = {n, sig, NULL, NULL};
  if (param_names) {
    const char **pn = LOOM_ARENA_ARRAY(&m->arena, const char *, sig->nfields ? sig->nfields : 1);
    if (!pn) return LOOM_OOM();
    for (size_t i = 0; i < sig->nfields; i++) {
      if (!param_names[i]) return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s: parameter %zu has no name", name, i);
      for (size_t j = 0; j < i; j++)
        if (!strcmp(param_names[j], param_names[i]))
          return LOOM_ERROR(ALREADY_EXISTS, "extern @%s: parameter '%s' is given twice", name, param_names[i]);
      if (!(pn[i] = loom_graph_module_intern(m, param_names[i], strlen(param_names[i])))) return LOOM_OOM();
    }
    e.param_names = pn;
  }
  if (decl && !(e.decl = copy_decl(m, decl))) return LOOM_OOM();
  /* the declaration must lower now: every error is a declaration error, found here */
  loom_arena_mark mk = loom_arena_get_mark(&m->arena);
  loom_libcall_sig s;
  loom_status st = loom_graph_extern_sig(&e, &m->arena, &s);
  loom_arena_reset_to(&m->arena, mk);
  LOOM_PROPAGATE(st);
  if (!LOOM_VEC_PUSH(m->alloc, &m->externs, e)) return LOOM_OOM();
  return LOOM_OK;
}

loom_status loom_graph_module_add_extern(loom_graph_module *m, const char *name, const loom_sinfo *sig) {
  return loom_graph_module_declare_extern(m, name, sig, NULL, NULL);
}

/* ---- the reference interpreter's extern calls ------------------------------------------ */

/* Loads every extern of the module once (kept until the module is destroyed). */
static loom_status load_externs(loom_graph_module *m) {
  if (m->libcall) return LOOM_OK;
  loom_arena scratch;
  loom_arena_init(&scratch, m->alloc, 0);
  loom_libcall_sig *sigs;
  size_t n;
  loom_status st = loom_graph_module_libcall_sigs(m, &scratch, &sigs, &n);
  loom_libcall_options o = {.search_dir = loom_graph_module_source_dir(m)};
  if (!st) st = loom_libcall_lib_create(m->alloc, sigs, (uint32_t)n, &o, &m->libcall);
  loom_arena_destroy(&scratch);
  return st;
}

static void record_error(const loom_kernel_ctx *ctx, const char *msg) { snprintf(ctx->error_slot, 256, "%s", msg); }
static void record_error_index(const loom_kernel_ctx *ctx, const char *msg, int64_t index, int64_t lo, int64_t hi) {
  snprintf(ctx->error_slot, 256, "%s: index %lld must be within the inclusive range [%lld, %lld]", msg, (long long)index,
           (long long)lo, (long long)hi);
}

static int32_t serial_for(void *pool, int64_t n, loom_parallel_body body, void *arg) {
  (void)pool;
  return n > 0 ? body(arg, 0, n, 0) : 0;
}

loom_status loom_graph_eval_extern(loom_graph_module *m, const loom_graph_expr *call, const loom_sym_env *env,
                                   const loom_graph_value *args, loom_graph_value *out) {
  const char *name = call->u.call.target;
  LOOM_RETURN_IF_ERROR(load_externs(m), "while loading the externs of the module to call @%s", name);
  loom_kernel_fn fn = loom_libcall_lib_find(m->libcall, name);
  if (!fn) return LOOM_ERROR(NOT_FOUND, "unknown extern @%s", name);
  const loom_sinfo *osi = call->u.call.out_sinfo;
  if (osi->kind != LOOM_SINFO_TENSOR || osi->ndim < 0 || !osi->dims || osi->dtype == LOOM_DTYPE_UNKNOWN)
    return LOOM_ERROR(UNIMPLEMENTED, "call of extern @%s: the interpreter needs a result of known dtype and dims", name);
  size_t n = call->u.call.nargs;
  void *bufs[LOOM_LIBCALL_MAX_ARGS + 1];
  int64_t syms[4 * LOOM_LIBCALL_MAX_ARGS];
  size_t nb = 0, ns = 0, nints = 0;
  int64_t ints[LOOM_LIBCALL_MAX_ARGS];
  loom_graph_tensor res = {0};
  int64_t shape[8];
  loom_graph_ecx ec = {.m = m, .call = call, .env = env, .op = name};
  if (osi->ndim > 8) return LOOM_ERROR(UNIMPLEMENTED, "call of extern @%s: rank %d result", name, osi->ndim);
  for (int k = 0; k < osi->ndim; k++) LOOM_PROPAGATE(loom_graph_ecx_sym(&ec, osi->dims[k], &shape[k]));
  for (size_t i = 0; i < n; i++) {
    if (args[i].kind == LOOM_SINFO_TENSOR) {
      if (nb >= LOOM_LIBCALL_MAX_ARGS || ns + (size_t)args[i].t.ndim > sizeof syms / sizeof syms[0] - 8)
        return LOOM_ERROR(UNIMPLEMENTED, "call of extern @%s: too many operands", name);
      bufs[nb++] = args[i].t.data;
      for (int k = 0; k < args[i].t.ndim; k++) syms[ns++] = args[i].t.shape[k];
    } else if (args[i].kind == LOOM_SINFO_SCALAR && nints < LOOM_LIBCALL_MAX_ARGS) {
      ints[nints++] = args[i].i;
    } else {
      return LOOM_ERROR(TYPE_ERROR, "call of extern @%s: argument %zu is neither a tensor nor an i64 scalar", name, i);
    }
  }
  LOOM_PROPAGATE(loom_graph_tensor_alloc(osi->dtype, osi->ndim, shape, &res));
  bufs[nb++] = res.data;
  for (int k = 0; k < osi->ndim; k++) syms[ns++] = shape[k];
  for (size_t i = 0; i < nints; i++) syms[ns++] = ints[i];
  char err[256] = "";
  loom_kernel_ctx ctx = {LOOM_KERNEL_ABI_VERSION, sizeof(loom_kernel_ctx), 1, 0, serial_for, NULL, record_error, err, NULL,
                         record_error_index};
  int32_t rc = fn(bufs, syms, &ctx);
  if (rc) {
    loom_graph_tensor_free(&res);
    return LOOM_ERROR(INTERNAL, "extern @%s failed (code %d): %s", name, rc, err[0] ? err : "no message");
  }
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_TENSOR;
  out->t = res;
  return LOOM_OK;
}
