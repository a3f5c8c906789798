/* call.c — loading externs (host symbols, built-ins, dlopen/dlsym) and calling them:
 * the direct kernel-ABI path, and libffi for C signatures (a call interface prepared once
 * per signature here, entered through an ffi closure that has the kernel ABI).
 * Only libcall/ includes ffi.h, and within it only this file; see libcall.h. */
#include <dlfcn.h>
#include <ffi.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "libcall/libcall.h"
#include "vm/exec.h"

/* One loaded extern. */
typedef struct entry {
  loom_libcall_sig sig;                       /* deep copy in the lib's arena */
  loom_kernel_fn fn;                          /* what the VM calls */
  void *target;                               /* the C function (C ABI) or kernel (kernel ABI) */
  const loom_libcall_builtin *bi;             /* built-in, or NULL */
  ffi_cif cif;                                /* the C function's call interface (C ABI) */
  ffi_type *atypes[LOOM_LIBCALL_MAX_ARGS];    /* its argument types */
  ffi_closure *closure;                       /* kernel-ABI entry of C-ABI and built-in externs */
} entry;

/* A shared object opened for some extern. */
typedef struct handle {
  const char *path; /* as given to dlopen */
  void *dl;
} handle;

struct loom_libcall_lib {
  loom_allocator *alloc;
  loom_arena arena;           /* copies of the signatures, handles, the extern table */
  entry *entries;             /* n, in declaration order */
  uint32_t n;
  loom_artifact_kernel *table; /* {name, fn} per entry */
  handle *handles;            /* nhandles <= n */
  uint32_t nhandles;
  ffi_cif kcif;               /* the kernel ABI as a call interface (every closure uses it) */
  ffi_type *kargs[3];
  loom_kernel_fn (*fallback)(void *ctx, const char *name, int is_extern);
  void *fallback_ctx;
};

static const char *const ctype_names[LOOM_LIBCALL_CT_COUNT] = {"void", "ptr", "i32", "i64", "f32", "f64"};
_Static_assert(sizeof ctype_names / sizeof ctype_names[0] == LOOM_LIBCALL_CT_COUNT, "ctype names");

const char *loom_libcall_ctype_name(loom_libcall_ctype t) { return t < LOOM_LIBCALL_CT_COUNT ? ctype_names[t] : "?"; }

static ffi_type *ffi_of(loom_libcall_ctype t) {
  switch (t) {
  case LOOM_LIBCALL_CT_VOID: return &ffi_type_void;
  case LOOM_LIBCALL_CT_PTR: return &ffi_type_pointer;
  case LOOM_LIBCALL_CT_I32: return &ffi_type_sint32;
  case LOOM_LIBCALL_CT_I64: return &ffi_type_sint64;
  case LOOM_LIBCALL_CT_F32: return &ffi_type_float;
  case LOOM_LIBCALL_CT_F64: return &ffi_type_double;
  default: return NULL;
  }
}

/* One argument's C type as written in signatures: a pointer shows its buffer's dtype. */
static void carg_type(const loom_libcall_sig *s, const loom_libcall_carg *a, loom_strbuf *sb) {
  if (a->type == LOOM_LIBCALL_CT_PTR) {
    loom_dtype d = a->index < s->nbuf && s->buf_dtypes ? s->buf_dtypes[a->index] : LOOM_DTYPE_COUNT;
    loom_strbuf_printf(sb, "%s*", d < LOOM_DTYPE_COUNT ? loom_dtype_name(d) : "void");
  } else {
    loom_strbuf_puts(sb, loom_libcall_ctype_name(a->type));
  }
}

void loom_libcall_sig_ctypes(const loom_libcall_sig *s, loom_strbuf *sb) {
  if (s->abi == LOOM_LIBCALL_ABI_KERNEL) {
    loom_strbuf_printf(sb, "kernel(%u, %u)", s->nbuf, s->nsym);
    return;
  }
  loom_strbuf_printf(sb, "%s(", loom_libcall_ctype_name(s->ret));
  for (uint32_t i = 0; i < s->ncargs; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    carg_type(s, &s->cargs[i], sb);
  }
  loom_strbuf_puts(sb, ")");
}

void loom_libcall_sig_print(const loom_libcall_sig *s, loom_strbuf *sb) {
  if (s->abi == LOOM_LIBCALL_ABI_KERNEL) {
    loom_strbuf_printf(sb, "kernel %s(%u buffers, %u symbols)", s->symbol, s->nbuf, s->nsym);
    return;
  }
  loom_strbuf_printf(sb, "%s %s(", loom_libcall_ctype_name(s->ret), s->symbol);
  for (uint32_t i = 0; i < s->ncargs; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    carg_type(s, &s->cargs[i], sb);
  }
  loom_strbuf_puts(sb, ")");
}

/* ---- calls ------------------------------------------------------------------------- */

/* A value of any argument type. */
typedef union slot {
  void *p;
  int32_t i32;
  int64_t i64;
  float f32;
  double f64;
} slot;

/* Element 0 of a rank-0 buffer as a double (is_int: exactly as an integer in *iv). */
static double load_scalar(const void *p, loom_dtype dt, int64_t *iv, bool *is_int) {
  *is_int = false;
  switch (dt) {
  case LOOM_DTYPE_F32: return *(const float *)p;
  case LOOM_DTYPE_F64: return *(const double *)p;
  case LOOM_DTYPE_I32: *is_int = true; *iv = *(const int32_t *)p; return (double)*iv;
  case LOOM_DTYPE_I64: *is_int = true; *iv = *(const int64_t *)p; return (double)*iv;
  default: return 0;
  }
}

/* Fills one argument slot from the kernel-ABI operands. */
static void fill(const loom_libcall_carg *a, void *const *buffers, const int64_t *symbols, slot *out) {
  int64_t iv = 0;
  double dv = 0;
  bool is_int = true;
  switch (a->src) {
  case LOOM_LIBCALL_SRC_BUF: out->p = buffers[a->index]; return;
  case LOOM_LIBCALL_SRC_SYM: iv = symbols[a->index]; break;
  case LOOM_LIBCALL_SRC_CONST: iv = a->value; break;
  case LOOM_LIBCALL_SRC_LOAD: dv = load_scalar(buffers[a->index], a->load_dtype, &iv, &is_int); break;
  }
  if (is_int) dv = (double)iv;
  else iv = (int64_t)dv;
  switch (a->type) {
  case LOOM_LIBCALL_CT_I32: out->i32 = (int32_t)iv; break;
  case LOOM_LIBCALL_CT_I64: out->i64 = iv; break;
  case LOOM_LIBCALL_CT_F32: out->f32 = (float)dv; break;
  case LOOM_LIBCALL_CT_F64: out->f64 = dv; break;
  default: out->p = NULL; break;
  }
}

static void set_return(void *ret, int32_t rc) { *(ffi_arg *)ret = (ffi_arg)(ffi_sarg)rc; }

/* The kernel-ABI entry of a C-ABI extern: unpack buffers and symbols, call through the
 * prepared call interface. */
static void c_entry(ffi_cif *kcif, void *ret, void **args, void *user) {
  (void)kcif;
  const entry *e = user;
  void *const *buffers = *(void *const *const *)args[0];
  const int64_t *symbols = *(const int64_t *const *)args[1];
  const loom_kernel_ctx *ctx = *(const loom_kernel_ctx *const *)args[2];
  slot slots[LOOM_LIBCALL_MAX_ARGS];
  void *av[LOOM_LIBCALL_MAX_ARGS];
  for (uint32_t i = 0; i < e->sig.ncargs; i++) {
    fill(&e->sig.cargs[i], buffers, symbols, &slots[i]);
    av[i] = &slots[i];
  }
  ffi_arg rc = 0;
  ffi_call((ffi_cif *)&e->cif, FFI_FN(e->target), &rc, av);
  int32_t r = e->sig.ret == LOOM_LIBCALL_CT_I32 ? (int32_t)(ffi_sarg)rc : 0;
  if (r) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s returned %d", e->sig.symbol, r);
    ctx->set_error(ctx, msg);
  }
  set_return(ret, r);
}

/* The kernel-ABI entry of a built-in. */
static void builtin_entry(ffi_cif *kcif, void *ret, void **args, void *user) {
  (void)kcif;
  const entry *e = user;
  void *const *buffers = *(void *const *const *)args[0];
  const int64_t *symbols = *(const int64_t *const *)args[1];
  const loom_kernel_ctx *ctx = *(const loom_kernel_ctx *const *)args[2];
  set_return(ret, e->bi->call(&e->sig, buffers, symbols, ctx));
}

/* ---- loading ----------------------------------------------------------------------- */

static loom_status copy_sig(loom_arena *a, const loom_libcall_sig *s, loom_libcall_sig *out) {
  *out = *s;
  out->name = loom_arena_strdup(a, s->name ? s->name : "");
  out->symbol = loom_arena_strdup(a, s->symbol ? s->symbol : "");
  out->library = s->library ? loom_arena_strdup(a, s->library) : NULL;
  loom_dtype *dt = LOOM_ARENA_ARRAY(a, loom_dtype, s->nbuf ? s->nbuf : 1);
  int32_t *rk = LOOM_ARENA_ARRAY(a, int32_t, s->nbuf ? s->nbuf : 1);
  loom_libcall_carg *ca = LOOM_ARENA_ARRAY(a, loom_libcall_carg, s->ncargs ? s->ncargs : 1);
  if (!out->name || !out->symbol || (s->library && !out->library) || !dt || !rk || !ca) return LOOM_OOM();
  for (uint32_t i = 0; i < s->nbuf; i++) {
    dt[i] = s->buf_dtypes ? s->buf_dtypes[i] : LOOM_DTYPE_COUNT;
    rk[i] = s->buf_ranks ? s->buf_ranks[i] : 0;
  }
  if (s->ncargs) memcpy(ca, s->cargs, s->ncargs * sizeof *ca);
  out->buf_dtypes = dt, out->buf_ranks = rk, out->cargs = ca;
  return LOOM_OK;
}

/* Checks the internal consistency of a signature (what a hand-written one can get wrong). */
static loom_status check_sig(const loom_libcall_sig *s) {
  if (!s->name[0] || !s->symbol[0]) return LOOM_ERROR(INVALID_ARGUMENT, "an extern needs a name and a symbol");
  uint64_t dims = 0;
  for (uint32_t i = 0; i < s->nbuf; i++) {
    if (s->buf_ranks[i] < 0 || s->buf_ranks[i] > LOOM_VM_MAX_RANK)
      return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s (symbol '%s'): buffer %u has rank %d", s->name, s->symbol, i,
                        s->buf_ranks[i]);
    dims += (uint64_t)s->buf_ranks[i];
  }
  if (s->nsym < dims)
    return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s (symbol '%s'): %u symbols cannot hold the %llu dims of its buffers",
                      s->name, s->symbol, s->nsym, (unsigned long long)dims);
  if (s->abi == LOOM_LIBCALL_ABI_KERNEL) return LOOM_OK;
  if (s->ncargs > LOOM_LIBCALL_MAX_ARGS)
    return LOOM_ERROR(UNIMPLEMENTED, "extern @%s (symbol '%s'): %u C arguments, at most %u are supported", s->name,
                      s->symbol, s->ncargs, LOOM_LIBCALL_MAX_ARGS);
  if (s->ret != LOOM_LIBCALL_CT_VOID && s->ret != LOOM_LIBCALL_CT_I32)
    return LOOM_ERROR(UNIMPLEMENTED, "extern @%s (symbol '%s'): a C function returns void or i32 (a status), not %s",
                      s->name, s->symbol, loom_libcall_ctype_name(s->ret));
  for (uint32_t i = 0; i < s->ncargs; i++) {
    const loom_libcall_carg *a = &s->cargs[i];
    bool bad = a->type == LOOM_LIBCALL_CT_VOID || a->type >= LOOM_LIBCALL_CT_COUNT ||
               (a->type == LOOM_LIBCALL_CT_PTR) != (a->src == LOOM_LIBCALL_SRC_BUF);
    if ((a->src == LOOM_LIBCALL_SRC_BUF || a->src == LOOM_LIBCALL_SRC_LOAD) && a->index >= s->nbuf) bad = true;
    if (a->src == LOOM_LIBCALL_SRC_SYM && a->index >= s->nsym) bad = true;
    if (a->src == LOOM_LIBCALL_SRC_LOAD &&
        (s->buf_ranks[a->index] != 0 || (a->load_dtype != LOOM_DTYPE_F32 && a->load_dtype != LOOM_DTYPE_F64 &&
                                         a->load_dtype != LOOM_DTYPE_I32 && a->load_dtype != LOOM_DTYPE_I64)))
      bad = true;
    if (bad)
      return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s (symbol '%s'): C argument %u is malformed (type %s, source %d, index %u)",
                        s->name, s->symbol, i, loom_libcall_ctype_name(a->type), (int)a->src, a->index);
  }
  return LOOM_OK;
}

/* Opens (once per lib) the shared object for `sig`, resolving a relative path against the
 * search directory. */
static loom_status open_library(loom_libcall_lib *lib, const loom_libcall_sig *s, const loom_libcall_options *o,
                                void **out) {
  const char *path = s->library;
  if (o->search_dir && path[0] != '/') {
    const char *joined = loom_arena_printf(&lib->arena, "%s/%s", o->search_dir, path);
    if (!joined) return LOOM_OOM();
    /* a bare name ("libm.so.6") is left to the system search unless the directory holds it */
    if (strchr(path, '/') || access(joined, F_OK) == 0) path = joined;
  }
  for (uint32_t i = 0; i < lib->nhandles; i++)
    if (!strcmp(lib->handles[i].path, path)) return (*out = lib->handles[i].dl, LOOM_OK);
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl)
    return LOOM_ERROR(NOT_FOUND, "extern @%s (symbol '%s'): cannot load library '%s': %s", s->name, s->symbol, path,
                      dlerror());
  lib->handles[lib->nhandles++] = (handle){path, dl};
  *out = dl;
  return LOOM_OK;
}

/* Compares the library's own description of the symbol (optional) with the declaration. */
static loom_status check_library_sig(void *dl, const loom_libcall_sig *s, loom_arena *a) {
  const char *sym_name = loom_arena_printf(a, "%s__loom_sig", s->symbol);
  if (!sym_name) return LOOM_OOM();
  const char *theirs = dlsym(dl, sym_name);
  if (!theirs) return LOOM_OK;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_libcall_sig_ctypes(s, &sb);
  loom_status st = sb.oom ? LOOM_OOM() : LOOM_OK;
  if (!st && strcmp(theirs, loom_strbuf_cstr(&sb)))
    st = LOOM_ERROR(TYPE_ERROR, "extern @%s (symbol '%s'): signature mismatch: declared %s, the library says %s", s->name,
                    s->symbol, loom_strbuf_cstr(&sb), theirs);
  loom_strbuf_free(&sb);
  return st;
}

/* Finds the function of one extern and makes its kernel-ABI entry. */
static loom_status load_one(loom_libcall_lib *lib, entry *e, const loom_libcall_options *o) {
  const loom_libcall_sig *s = &e->sig;
  LOOM_PROPAGATE(check_sig(s));
  void *dl = NULL;
  if (o->device && strcmp(o->device, "cpu")) { /* GPU memory: the library built-ins for that device alone */
    if (strcmp(o->device, "cuda")) return LOOM_ERROR(INVALID_ARGUMENT, "externs: unknown device '%s'", o->device);
    if (!(e->bi = loom_libcall_cublas_find(s->symbol)))
      return LOOM_ERROR(FAILED_PRECONDITION, "extern @%s (symbol '%s') is host code on host memory; a model run on "
                        "the cuda device calls only the GEMM built-ins (blas.sgemm, ...)", s->name, s->symbol);
  } else if (s->library) {
    LOOM_PROPAGATE(open_library(lib, s, o, &dl));
    dlerror();
    e->target = dlsym(dl, s->symbol);
    if (!e->target)
      return LOOM_ERROR(NOT_FOUND, "extern @%s: symbol '%s' not found in '%s'", s->name, s->symbol, s->library);
  } else {
    for (uint32_t i = 0; i < o->nsymbols && !e->target; i++)
      if (o->symbols[i].symbol && !strcmp(o->symbols[i].symbol, s->symbol)) e->target = o->symbols[i].fn;
    if (!e->target) e->bi = loom_libcall_builtin_find(s->symbol);
    if (!e->target && !e->bi) {
      dl = RTLD_DEFAULT;
      e->target = dlsym(RTLD_DEFAULT, s->symbol);
    }
    if (!e->target && !e->bi)
      return LOOM_ERROR(NOT_FOUND,
                        "extern @%s: symbol '%s' is not a host function, a built-in or a symbol of the process "
                        "(give its shared object with library=\"...\")",
                        s->name, s->symbol);
  }
  if (dl) LOOM_PROPAGATE(check_library_sig(dl, s, &lib->arena));
  if (e->bi) {
    if (s->abi != LOOM_LIBCALL_ABI_KERNEL)
      return LOOM_ERROR(INVALID_ARGUMENT, "extern @%s: built-in '%s' is called with the kernel ABI; drop the C argument list",
                        s->name, s->symbol);
    LOOM_RETURN_IF_ERROR(e->bi->check(s), "while loading extern @%s (built-in '%s')", s->name, s->symbol);
  } else if (s->abi == LOOM_LIBCALL_ABI_KERNEL) {
    /* the fast path: the VM calls the symbol itself */
    e->fn = (loom_kernel_fn)(uintptr_t)e->target;
    return LOOM_OK;
  } else {
    for (uint32_t i = 0; i < s->ncargs; i++) e->atypes[i] = ffi_of(s->cargs[i].type);
    ffi_status fs = ffi_prep_cif(&e->cif, FFI_DEFAULT_ABI, s->ncargs, ffi_of(s->ret), e->atypes);
    if (fs != FFI_OK)
      return LOOM_ERROR(INTERNAL, "extern @%s (symbol '%s'): libffi cannot prepare the call (status %d)", s->name,
                        s->symbol, (int)fs);
  }
  void *code = NULL;
  e->closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
  if (!e->closure) return LOOM_OOM();
  ffi_status fs = ffi_prep_closure_loc(e->closure, &lib->kcif, e->bi ? builtin_entry : c_entry, e, code);
  if (fs != FFI_OK)
    return LOOM_ERROR(INTERNAL, "extern @%s (symbol '%s'): libffi cannot make its entry point (status %d)", s->name,
                      s->symbol, (int)fs);
  e->fn = (loom_kernel_fn)(uintptr_t)code;
  return LOOM_OK;
}

loom_status loom_libcall_lib_create(loom_allocator *alloc, const loom_libcall_sig *sigs, uint32_t n,
                                    const loom_libcall_options *opts, loom_libcall_lib **out) {
  *out = NULL;
  static const loom_libcall_options none = {0};
  if (!opts) opts = &none;
  loom_libcall_lib *lib = loom_alloc_zero(alloc, sizeof *lib);
  if (!lib) return LOOM_OOM();
  lib->alloc = alloc;
  loom_arena_init(&lib->arena, alloc, 0);
  lib->fallback = opts->fallback, lib->fallback_ctx = opts->fallback_ctx;
  lib->kargs[0] = lib->kargs[1] = lib->kargs[2] = &ffi_type_pointer;
  loom_status st = LOOM_OK;
  if (ffi_prep_cif(&lib->kcif, FFI_DEFAULT_ABI, 3, &ffi_type_sint32, lib->kargs) != FFI_OK)
    st = LOOM_ERROR(INTERNAL, "libffi cannot describe the kernel ABI");
  lib->entries = LOOM_ARENA_ARRAY(&lib->arena, entry, n ? n : 1);
  lib->table = LOOM_ARENA_ARRAY(&lib->arena, loom_artifact_kernel, n ? n : 1);
  lib->handles = LOOM_ARENA_ARRAY(&lib->arena, handle, n ? n : 1);
  if (!st && (!lib->entries || !lib->table || !lib->handles)) st = LOOM_OOM();
  for (uint32_t i = 0; i < n && !st; i++) {
    entry *e = &lib->entries[i];
    lib->n = i + 1;
    st = copy_sig(&lib->arena, &sigs[i], &e->sig);
    for (uint32_t j = 0; j < i && !st; j++)
      if (!strcmp(lib->entries[j].sig.name, e->sig.name))
        st = LOOM_ERROR(ALREADY_EXISTS, "extern @%s is declared twice", e->sig.name);
    if (!st) st = load_one(lib, e, opts);
    lib->table[i] = (loom_artifact_kernel){.name = e->sig.name, .fn = e->fn};
  }
  if (st) {
    loom_libcall_lib_destroy(lib);
    return st;
  }
  *out = lib;
  return LOOM_OK;
}

void loom_libcall_lib_destroy(loom_libcall_lib *lib) {
  if (!lib) return;
  for (uint32_t i = 0; i < lib->n; i++)
    if (lib->entries[i].closure) ffi_closure_free(lib->entries[i].closure);
  for (uint32_t i = 0; i < lib->nhandles; i++) dlclose(lib->handles[i].dl);
  loom_arena_destroy(&lib->arena);
  loom_free(lib->alloc, lib, sizeof *lib);
}

loom_kernel_fn loom_libcall_lib_find(const loom_libcall_lib *lib, const char *name) {
  for (uint32_t i = 0; i < lib->n; i++)
    if (!strcmp(lib->entries[i].sig.name, name)) return lib->entries[i].fn;
  return NULL;
}

loom_kernel_fn loom_libcall_resolve(void *ctx, const char *name, int is_extern) {
  const loom_libcall_lib *lib = ctx;
  loom_kernel_fn fn = is_extern ? loom_libcall_lib_find(lib, name) : NULL;
  if (!fn && lib->fallback) fn = lib->fallback(lib->fallback_ctx, name, is_extern);
  return fn;
}

const loom_artifact_kernel *loom_libcall_lib_externs(const loom_libcall_lib *lib, uint32_t *out_n) {
  *out_n = lib->n;
  return lib->table;
}

loom_status loom_libcall_lib_check_exec(const loom_libcall_lib *lib, const loom_vm_exec *exe) {
  for (uint32_t i = 0; i < exe->nexterns; i++) {
    const loom_vm_kernel *k = &exe->externs[i];
    const char *name = loom_vm_exec_str(exe, k->name);
    const entry *e = NULL;
    for (uint32_t j = 0; j < lib->n && !e; j++)
      if (!strcmp(lib->entries[j].sig.name, name)) e = &lib->entries[j];
    if (!e) return LOOM_ERROR(NOT_FOUND, "the executable calls extern '%s', which no declaration provides", name);
    if (e->sig.nbuf != k->nbuf || e->sig.nsym != k->nsym)
      return LOOM_ERROR(TYPE_ERROR,
                        "extern '%s' (symbol '%s'): the executable passes %u buffers and %u symbols, the declaration "
                        "takes %u and %u",
                        name, e->sig.symbol, k->nbuf, k->nsym, e->sig.nbuf, e->sig.nsym);
  }
  return LOOM_OK;
}
