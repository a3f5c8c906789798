/* decl.c — extern declarations -> run-side signatures (the buffer/symbol layout of the VM
 * lowering and the C argument list), with the checks a declaration needs. */
#include <string.h>

#include "libcall/decl.h"

/* Where a name of a C argument points. */
typedef struct ref {
  loom_libcall_src src;
  uint32_t index;
  bool tensor;      /* BUF: a tensor (rank below) */
  int32_t rank;
  loom_dtype dtype;
  bool is_out;
} ref;

/* `ndims`: the symbols the buffers' dims take (i64 parameters follow them). */
static bool lookup(const char *nm, size_t nparams, const loom_libcall_param *params, const loom_libcall_param *result,
                   uint32_t ndims, ref *out) {
  uint32_t buf = 0, sym_int = 0;
  for (size_t i = 0; i < nparams; i++) {
    const loom_libcall_param *p = &params[i];
    bool hit = p->name && !strcmp(p->name, nm);
    if (p->kind == LOOM_LIBCALL_PARAM_TENSOR) {
      if (hit) return (*out = (ref){LOOM_LIBCALL_SRC_BUF, buf, true, p->rank, p->dtype, false}), true;
      buf++;
    } else {
      if (hit) return (*out = (ref){LOOM_LIBCALL_SRC_SYM, ndims + sym_int, false, 0, LOOM_DTYPE_I64, false}), true;
      sym_int++;
    }
  }
  if (!strcmp(nm, "out")) return (*out = (ref){LOOM_LIBCALL_SRC_BUF, buf, true, result->rank, result->dtype, true}), true;
  /* a dim var: the first buffer axis whose dim is exactly that var */
  uint32_t s = 0;
  for (size_t i = 0; i <= nparams; i++) {
    const loom_libcall_param *p = i < nparams ? &params[i] : result;
    if (p->kind != LOOM_LIBCALL_PARAM_TENSOR) continue;
    for (int32_t k = 0; k < p->rank; k++, s++)
      if (p->dims && p->dims[k] && !strcmp(p->dims[k], nm))
        return (*out = (ref){LOOM_LIBCALL_SRC_SYM, s, false, 0, LOOM_DTYPE_I64, false}), true;
  }
  return false;
}

loom_status loom_libcall_decl_lower(const char *name, const loom_libcall_decl *d, size_t nparams,
                                    const loom_libcall_param *params, const loom_libcall_param *result, loom_arena *a,
                                    loom_libcall_sig *out) {
  memset(out, 0, sizeof *out);
  if (result->kind != LOOM_LIBCALL_PARAM_TENSOR || result->rank < 0)
    return LOOM_ERROR(TYPE_ERROR, "extern @%s: the result must be a tensor of known rank", name);
  uint32_t nbuf = 1, ndims = (uint32_t)result->rank, nint = 0;
  for (size_t i = 0; i < nparams; i++) {
    const loom_libcall_param *p = &params[i];
    if (p->name && !strcmp(p->name, "out"))
      return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s: parameter %zu is named 'out', which names the result", name, i);
    if (p->kind == LOOM_LIBCALL_PARAM_INT) {
      nint++;
      continue;
    }
    if (p->rank < 0)
      return LOOM_ERROR(TYPE_ERROR, "extern @%s: parameter %zu%s%s%s needs a known rank (its dims are passed as symbols)",
                        name, i, p->name ? " ('" : "", p->name ? p->name : "", p->name ? "')" : "");
    nbuf++;
    ndims += (uint32_t)p->rank;
  }
  loom_dtype *dt = LOOM_ARENA_ARRAY(a, loom_dtype, nbuf);
  int32_t *rk = LOOM_ARENA_ARRAY(a, int32_t, nbuf);
  if (!dt || !rk) return LOOM_OOM();
  uint32_t b = 0;
  for (size_t i = 0; i < nparams; i++)
    if (params[i].kind == LOOM_LIBCALL_PARAM_TENSOR) dt[b] = params[i].dtype, rk[b++] = params[i].rank;
  dt[b] = result->dtype, rk[b] = result->rank;
  out->name = name;
  out->symbol = d && d->symbol ? d->symbol : name;
  out->library = d ? d->library : NULL;
  out->abi = d ? d->abi : LOOM_LIBCALL_ABI_KERNEL;
  out->pure = d && d->pure;
  out->nbuf = nbuf, out->buf_dtypes = dt, out->buf_ranks = rk;
  out->nsym = ndims + nint;
  if (out->abi == LOOM_LIBCALL_ABI_KERNEL) {
    if (d && d->ncargs) return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s: a kernel-ABI extern takes no C argument list", name);
    return LOOM_OK;
  }
  out->ret = d->ret;
  if (d->ret != LOOM_LIBCALL_CT_VOID && d->ret != LOOM_LIBCALL_CT_I32)
    return LOOM_ERROR(TYPE_ERROR, "extern @%s: a C function returns void or i32 (a status), not %s", name,
                      loom_libcall_ctype_name(d->ret));
  if (d->ncargs > LOOM_LIBCALL_MAX_ARGS)
    return LOOM_ERROR(UNIMPLEMENTED, "extern @%s: %zu C arguments, at most %u are supported", name, d->ncargs,
                      LOOM_LIBCALL_MAX_ARGS);
  loom_libcall_carg *ca = LOOM_ARENA_ARRAY(a, loom_libcall_carg, d->ncargs ? d->ncargs : 1);
  if (!ca) return LOOM_OOM();
  for (size_t i = 0; i < d->ncargs; i++) {
    const loom_libcall_cref *c = &d->cargs[i];
    loom_libcall_carg *o = &ca[i];
    if (c->cast == LOOM_LIBCALL_CT_PTR || c->cast >= LOOM_LIBCALL_CT_COUNT)
      return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s: C argument %zu: no such conversion (a tensor's name is its pointer)",
                        name, i);
    if (!c->name) {
      *o = (loom_libcall_carg){c->cast ? c->cast : LOOM_LIBCALL_CT_I64, LOOM_LIBCALL_SRC_CONST, 0, LOOM_DTYPE_I64, c->value};
      continue;
    }
    ref r;
    if (!lookup(c->name, nparams, params, result, ndims, &r))
      return LOOM_ERROR(NOT_FOUND, "extern @%s: C argument %zu '%s' is not a parameter, 'out' or a dim var of one", name,
                        i, c->name);
    if (!r.tensor) {
      *o = (loom_libcall_carg){c->cast ? c->cast : LOOM_LIBCALL_CT_I64, LOOM_LIBCALL_SRC_SYM, r.index, LOOM_DTYPE_I64, 0};
      continue;
    }
    if (!c->cast) {
      *o = (loom_libcall_carg){LOOM_LIBCALL_CT_PTR, LOOM_LIBCALL_SRC_BUF, r.index, r.dtype, 0};
      continue;
    }
    if (r.is_out)
      return LOOM_ERROR(TYPE_ERROR, "extern @%s: C argument %zu: %s(out): the result is written through its pointer", name,
                        i, loom_libcall_ctype_name(c->cast));
    if (r.rank != 0 || (r.dtype != LOOM_DTYPE_F32 && r.dtype != LOOM_DTYPE_F64 && r.dtype != LOOM_DTYPE_I32 &&
                        r.dtype != LOOM_DTYPE_I64))
      return LOOM_ERROR(TYPE_ERROR,
                        "extern @%s: C argument %zu: %s(%s): only a rank-0 f32/f64/i32/i64 tensor converts to a number "
                        "(this one has rank %d, dtype %s)",
                        name, i, loom_libcall_ctype_name(c->cast), c->name, r.rank,
                        r.dtype < LOOM_DTYPE_COUNT ? loom_dtype_name(r.dtype) : "?");
    *o = (loom_libcall_carg){c->cast, LOOM_LIBCALL_SRC_LOAD, r.index, r.dtype, 0};
  }
  out->ncargs = (uint32_t)d->ncargs;
  out->cargs = ca;
  return LOOM_OK;
}

/* A string in double quotes (declaration strings hold no quote or newline: the parser
 * rejects them). */
void loom_libcall_decl_print(const loom_libcall_decl *d, loom_strbuf *sb) {
  if (!d) return;
  if (d->symbol) loom_strbuf_printf(sb, " symbol=\"%s\"", d->symbol);
  if (d->library) loom_strbuf_printf(sb, " library=\"%s\"", d->library);
  if (d->pure) loom_strbuf_puts(sb, " pure");
  if (d->abi != LOOM_LIBCALL_ABI_C) return;
  loom_strbuf_puts(sb, " abi=c(");
  for (size_t i = 0; i < d->ncargs; i++) {
    const loom_libcall_cref *c = &d->cargs[i];
    if (i) loom_strbuf_puts(sb, ", ");
    if (c->cast) loom_strbuf_printf(sb, "%s(", loom_libcall_ctype_name(c->cast));
    if (c->name) loom_strbuf_puts(sb, c->name);
    else loom_strbuf_printf(sb, "%lld", (long long)c->value);
    if (c->cast) loom_strbuf_puts(sb, ")");
  }
  loom_strbuf_puts(sb, ")");
  if (d->ret == LOOM_LIBCALL_CT_I32) loom_strbuf_puts(sb, " -> i32");
}
