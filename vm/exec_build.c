/* exec_build.c — building executables from C (the compiler's VM lowering and tests). */
#include <string.h>

#include "base/hash.h"
#include "base/map.h"
#include "base/vec.h"
#include "vm/exec.h"

typedef LOOM_VEC(uint32_t) u32_vec;
typedef LOOM_VEC(uint8_t) u8_vec;
typedef LOOM_VEC(int64_t) i64_vec;
typedef LOOM_VEC(loom_vm_insn) insn_vec;
typedef LOOM_VEC(loom_vm_param) param_vec;
typedef LOOM_VEC(loom_vm_debug) debug_vec;
typedef LOOM_VEC(loom_vm_const) const_vec;
typedef LOOM_VEC(loom_vm_kernel) kernel_vec;
typedef LOOM_VEC(const void *) ptr_vec;

struct loom_vm_fbuilder {
  loom_vm_builder *b;
  uint32_t name;
  uint32_t nint_params;
  u8_vec kinds;      /* object register kinds */
  u32_vec int_names; /* int register var names */
  param_vec params;
  insn_vec code;
  u32_vec lists;
  debug_vec debug;
  uint32_t pending_debug; /* string for the next instruction, or NONE */
};

struct loom_vm_builder {
  loom_allocator *alloc;
  bool oom;        /* an allocation failed */
  const char *misuse; /* first misuse found, or NULL */
  u8_vec strings;
  loom_map str_index; /* hash -> offset (first string with that hash) */
  u32_vec symvars;
  i64_vec intconsts;
  const_vec consts;
  kernel_vec kernels, externs;
  ptr_vec const_bytes; /* the bytes of consts[i], borrowed until finish copies them into DATA */
  size_t data_len;      /* DATA's size: each constant at a 64-byte aligned offset */
  bool borrow;          /* finish keeps the constants where they are (loom_vm_builder_borrow) */
  loom_vm_fbuilder **funcs;
  uint32_t nfuncs, cap_funcs;
};

loom_status loom_vm_builder_new(loom_allocator *alloc, loom_vm_builder **out) {
  *out = NULL;
  loom_vm_builder *b = loom_alloc_zero(alloc, sizeof *b);
  if (!b) return LOOM_OOM();
  b->alloc = alloc;
  loom_map_init(&b->str_index, alloc);
  (void)loom_vm_builder_str(b, ""); /* offset 0 is the empty string */
  *out = b;
  return LOOM_OK;
}

static void fb_free(loom_allocator *a, loom_vm_fbuilder *f) {
  LOOM_VEC_FREE(a, &f->kinds);
  LOOM_VEC_FREE(a, &f->int_names);
  LOOM_VEC_FREE(a, &f->params);
  LOOM_VEC_FREE(a, &f->code);
  LOOM_VEC_FREE(a, &f->lists);
  LOOM_VEC_FREE(a, &f->debug);
  loom_free(a, f, sizeof *f);
}

void loom_vm_builder_free(loom_vm_builder *b) {
  if (!b) return;
  loom_allocator *a = b->alloc;
  for (uint32_t i = 0; i < b->nfuncs; i++) fb_free(a, b->funcs[i]);
  loom_free(a, b->funcs, b->cap_funcs * sizeof *b->funcs);
  LOOM_VEC_FREE(a, &b->strings);
  loom_map_destroy(&b->str_index);
  LOOM_VEC_FREE(a, &b->symvars);
  LOOM_VEC_FREE(a, &b->intconsts);
  LOOM_VEC_FREE(a, &b->consts);
  for (size_t i = 0; i < b->kernels.len; i++) loom_free(a, b->kernels.data[i].sig, b->kernels.data[i].nsig * 4u);
  for (size_t i = 0; i < b->externs.len; i++) loom_free(a, b->externs.data[i].sig, b->externs.data[i].nsig * 4u);
  LOOM_VEC_FREE(a, &b->kernels);
  LOOM_VEC_FREE(a, &b->externs);
  LOOM_VEC_FREE(a, &b->const_bytes);
  loom_free(a, b, sizeof *b);
}

#define PUSH(b, v, x) \
  do {                \
    if (!LOOM_VEC_PUSH((b)->alloc, (v), (x))) (b)->oom = true; \
  } while (0)

uint32_t loom_vm_builder_str(loom_vm_builder *b, const char *s) {
  size_t n = strlen(s);
  uint64_t h = loom_hash_bytes(s, n), off;
  if (loom_map_get(&b->str_index, h, &off) && !strcmp((const char *)b->strings.data + off, s))
    return (uint32_t)off;
  uint32_t at = (uint32_t)b->strings.len;
  if (!LOOM_VEC_RESERVE(b->alloc, &b->strings, b->strings.len + n + 1)) {
    b->oom = true;
    return 0;
  }
  memcpy(b->strings.data + at, s, n + 1);
  b->strings.len += n + 1;
  if (!loom_map_contains(&b->str_index, h) && !loom_map_put(&b->str_index, h, at)) b->oom = true;
  return at;
}

uint32_t loom_vm_builder_symvar(loom_vm_builder *b, const char *name) {
  uint32_t s = loom_vm_builder_str(b, name);
  for (uint32_t i = 0; i < b->symvars.len; i++)
    if (b->symvars.data[i] == s) return i;
  PUSH(b, &b->symvars, s);
  return (uint32_t)b->symvars.len - 1;
}

uint32_t loom_vm_builder_intconst(loom_vm_builder *b, int64_t v) {
  for (uint32_t i = 0; i < b->intconsts.len; i++)
    if (b->intconsts.data[i] == v) return i;
  PUSH(b, &b->intconsts, v);
  return (uint32_t)b->intconsts.len - 1;
}

uint32_t loom_vm_builder_const(loom_vm_builder *b, const char *name, loom_dtype dt, uint32_t rank,
                               const int64_t *dims, const void *bytes) {
  loom_vm_const c = {0};
  c.name = loom_vm_builder_str(b, name);
  c.dtype = dt;
  c.rank = rank;
  if (rank > LOOM_VM_MAX_RANK) {
    b->misuse = "tensor constant rank above LOOM_VM_MAX_RANK";
    return 0;
  }
  size_t nbytes;
  loom_status st = loom_tensor_nbytes(dt, (int32_t)rank, dims, &nbytes);
  if (st) {
    loom_status_free(st);
    b->misuse = "tensor constant with a bad shape";
    return 0;
  }
  memcpy(c.dims, dims, rank * sizeof(int64_t));
  size_t at = (b->data_len + 63) & ~(size_t)63;
  if (at + nbytes < at) {
    b->misuse = "tensor constants larger than the address space";
    return 0;
  }
  b->data_len = at + nbytes;
  c.offset = at;
  c.nbytes = nbytes;
  PUSH(b, &b->const_bytes, bytes);
  PUSH(b, &b->consts, c);
  return (uint32_t)b->consts.len - 1;
}

static uint32_t add_kernel(loom_vm_builder *b, kernel_vec *v, const char *name, uint32_t nbuf, uint32_t nsym,
                           const uint32_t *sig, uint32_t nsig) {
  loom_vm_kernel k = {loom_vm_builder_str(b, name), nbuf, nsym, nsig, NULL};
  for (size_t i = 0; i < v->len; i++) {
    const loom_vm_kernel *o = &v->data[i];
    if (o->name == k.name && o->nbuf == nbuf && o->nsym == nsym && loom_vm_sig_equal(o, sig, nsig)) return (uint32_t)i;
  }
  if (nsig) {
    k.sig = loom_alloc_array(b->alloc, nsig, 4);
    if (!k.sig) {
      b->oom = true;
      return 0;
    }
    memcpy(k.sig, sig, nsig * 4u);
  }
  size_t before = v->len;
  PUSH(b, v, k);
  if (v->len == before) loom_free(b->alloc, k.sig, nsig * 4u);
  return (uint32_t)v->len - 1;
}
uint32_t loom_vm_builder_kernel(loom_vm_builder *b, const char *name, uint32_t nbuf, uint32_t nsym, const uint32_t *sig,
                                uint32_t nsig) {
  return add_kernel(b, &b->kernels, name, nbuf, nsym, sig, nsig);
}
uint32_t loom_vm_builder_extern(loom_vm_builder *b, const char *name, uint32_t nbuf, uint32_t nsym, const uint32_t *sig,
                                uint32_t nsig) {
  return add_kernel(b, &b->externs, name, nbuf, nsym, sig, nsig);
}

loom_vm_fbuilder *loom_vm_builder_func(loom_vm_builder *b, const char *name) {
  if (b->nfuncs == b->cap_funcs) {
    uint32_t cap = b->cap_funcs ? 2 * b->cap_funcs : 8;
    loom_vm_fbuilder **p = loom_realloc(b->alloc, b->funcs, b->cap_funcs * sizeof *p, cap * sizeof *p);
    if (!p) {
      b->oom = true;
      return NULL;
    }
    b->funcs = p;
    b->cap_funcs = cap;
  }
  loom_vm_fbuilder *f = loom_alloc_zero(b->alloc, sizeof *f);
  if (!f) {
    b->oom = true;
    return NULL;
  }
  f->b = b;
  f->name = loom_vm_builder_str(b, name);
  f->pending_debug = LOOM_VM_NONE;
  b->funcs[b->nfuncs++] = f;
  return f;
}

uint32_t loom_vm_fb_reg(loom_vm_fbuilder *f, loom_vm_obj_kind kind) {
  PUSH(f->b, &f->kinds, (uint8_t)kind);
  return (uint32_t)f->kinds.len - 1;
}

uint32_t loom_vm_fb_param(loom_vm_fbuilder *f, const char *name, uint32_t dtype, uint32_t rank,
                          const char *const *dims) {
  loom_vm_param p = {0};
  p.name = loom_vm_builder_str(f->b, name);
  p.dtype = dtype;
  p.rank = rank;
  if (rank > LOOM_VM_MAX_RANK) {
    f->b->misuse = "parameter rank above LOOM_VM_MAX_RANK";
    return 0;
  }
  for (uint32_t i = 0; i < rank; i++) p.dims[i] = loom_vm_builder_str(f->b, dims[i]);
  if (f->kinds.len != f->params.len) f->b->misuse = "parameters must come before other registers";
  PUSH(f->b, &f->params, p);
  return loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
}

uint32_t loom_vm_fb_list_param(loom_vm_fbuilder *f, const char *name, uint32_t dtype) {
  loom_vm_param p = {0};
  p.name = loom_vm_builder_str(f->b, name);
  p.dtype = dtype;
  if (f->kinds.len != f->params.len) f->b->misuse = "parameters must come before other registers";
  PUSH(f->b, &f->params, p);
  return loom_vm_fb_reg(f, LOOM_VM_OBJ_LIST);
}

uint32_t loom_vm_fb_ireg(loom_vm_fbuilder *f, const char *symvar) {
  uint32_t v = symvar ? loom_vm_builder_symvar(f->b, symvar) : LOOM_VM_NONE;
  PUSH(f->b, &f->int_names, v);
  return (uint32_t)f->int_names.len - 1;
}

uint32_t loom_vm_fb_int_param(loom_vm_fbuilder *f, const char *symvar) {
  if (f->int_names.len != f->nint_params) f->b->misuse = "int parameters must come before int registers";
  f->nint_params++;
  return loom_vm_fb_ireg(f, symvar);
}

uint32_t loom_vm_fb_list(loom_vm_fbuilder *f, const uint32_t *words, uint32_t n) {
  uint32_t at = (uint32_t)f->lists.len;
  for (uint32_t i = 0; i < n; i++) PUSH(f->b, &f->lists, words[i]);
  return at;
}

uint32_t loom_vm_fb_emit(loom_vm_fbuilder *f, loom_vm_insn insn) {
  if (f->pending_debug != LOOM_VM_NONE) {
    loom_vm_debug d = {(uint32_t)f->code.len, f->pending_debug};
    PUSH(f->b, &f->debug, d);
    f->pending_debug = LOOM_VM_NONE;
  }
  PUSH(f->b, &f->code, insn);
  return (uint32_t)f->code.len - 1;
}

void loom_vm_fb_patch(loom_vm_fbuilder *f, uint32_t pc, loom_vm_insn insn) {
  if (pc < f->code.len) f->code.data[pc] = insn;
}
uint32_t loom_vm_fb_pc(const loom_vm_fbuilder *f) { return (uint32_t)f->code.len; }
void loom_vm_fb_debug(loom_vm_fbuilder *f, const char *text) {
  f->pending_debug = loom_vm_builder_str(f->b, text);
}

/* Copies n elements of `elem` bytes into a new block (NULL for n == 0). */
static void *dup(loom_allocator *a, const void *p, size_t n, size_t elem, bool *oom) {
  if (n == 0) return NULL;
  void *q = loom_alloc_array(a, n, elem);
  if (!q) {
    *oom = true;
    return NULL;
  }
  memcpy(q, p, n * elem);
  return q;
}

void loom_vm_builder_borrow(loom_vm_builder *b) { b->borrow = true; }

loom_status loom_vm_builder_finish(loom_vm_builder *b, loom_vm_exec **out) {
  *out = NULL;
  if (b->oom) return LOOM_OOM();
  if (b->misuse) return LOOM_ERROR(INVALID_ARGUMENT, "executable builder: %s", b->misuse);
  loom_allocator *a = b->alloc;
  loom_vm_exec *e = loom_alloc_zero(a, sizeof *e);
  if (!e) return LOOM_OOM();
  e->alloc = a;
  bool oom = false;
  e->strings = dup(a, b->strings.data, b->strings.len, 1, &oom);
  e->strings_len = (uint32_t)b->strings.len;
  e->symvars = dup(a, b->symvars.data, b->symvars.len, 4, &oom);
  e->nsymvars = (uint32_t)b->symvars.len;
  e->intconsts = dup(a, b->intconsts.data, b->intconsts.len, 8, &oom);
  e->nintconsts = (uint32_t)b->intconsts.len;
  e->consts = dup(a, b->consts.data, b->consts.len, sizeof(loom_vm_const), &oom);
  e->nconsts = (uint32_t)b->consts.len;
  e->kernels = dup(a, b->kernels.data, b->kernels.len, sizeof(loom_vm_kernel), &oom);
  e->nkernels = e->kernels ? (uint32_t)b->kernels.len : 0;
  for (uint32_t i = 0; i < e->nkernels; i++) e->kernels[i].sig = dup(a, e->kernels[i].sig, e->kernels[i].nsig, 4, &oom);
  e->externs = dup(a, b->externs.data, b->externs.len, sizeof(loom_vm_kernel), &oom);
  e->nexterns = e->externs ? (uint32_t)b->externs.len : 0;
  for (uint32_t i = 0; i < e->nexterns; i++) e->externs[i].sig = dup(a, e->externs[i].sig, e->externs[i].nsig, 4, &oom);
  if (b->borrow) {
    /* the constants stay where the caller keeps them; a misaligned one is copied */
    e->const_src = dup(a, b->const_bytes.data, b->const_bytes.len, sizeof(void *), &oom);
    size_t need = 0;
    for (size_t i = 0; e->const_src && i < b->consts.len; i++)
      if ((uintptr_t)e->const_src[i] % 16) need += (b->consts.data[i].nbytes + 63) & ~(size_t)63;
    if (need && e->const_src) {
      e->const_copies = loom_alloc_aligned(a, need, 64);
      if (!e->const_copies) oom = true;
      else e->const_copies_len = need;
    }
    size_t at = 0;
    for (size_t i = 0; e->const_copies && i < b->consts.len; i++) {
      if ((uintptr_t)e->const_src[i] % 16 == 0) continue;
      memcpy(e->const_copies + at, e->const_src[i], b->consts.data[i].nbytes);
      e->const_src[i] = e->const_copies + at;
      at += (b->consts.data[i].nbytes + 63) & ~(size_t)63;
    }
  } else if (b->data_len) {
    /* each constant's bytes copied once, from where the caller keeps them, into DATA */
    e->data_owned = loom_alloc_aligned(a, b->data_len, 64);
    if (!e->data_owned) oom = true;
    size_t end = 0;
    for (size_t i = 0; e->data_owned && i < b->consts.len; i++) {
      const loom_vm_const *c = &b->consts.data[i];
      memset(e->data_owned + end, 0, c->offset - end);
      if (c->nbytes) memcpy(e->data_owned + c->offset, b->const_bytes.data[i], c->nbytes);
      end = c->offset + c->nbytes;
    }
  }
  e->data = e->data_owned;
  e->data_len = b->data_len;
  e->funcs = loom_alloc_array(a, b->nfuncs ? b->nfuncs : 1, sizeof(loom_vm_func));
  if (!e->funcs) oom = true;
  else memset(e->funcs, 0, (b->nfuncs ? b->nfuncs : 1) * sizeof(loom_vm_func));
  for (uint32_t i = 0; e->funcs && i < b->nfuncs; i++) {
    loom_vm_fbuilder *fb = b->funcs[i];
    loom_vm_func *f = &e->funcs[i];
    e->nfuncs = i + 1;
    f->name = fb->name;
    f->nobj = (uint32_t)fb->kinds.len;
    f->nint = (uint32_t)fb->int_names.len;
    f->nparams = (uint32_t)fb->params.len;
    f->nint_params = fb->nint_params;
    f->obj_kinds = dup(a, fb->kinds.data, fb->kinds.len, 1, &oom);
    f->int_names = dup(a, fb->int_names.data, fb->int_names.len, 4, &oom);
    f->params = dup(a, fb->params.data, fb->params.len, sizeof(loom_vm_param), &oom);
    f->code = dup(a, fb->code.data, fb->code.len, 8, &oom);
    f->ncode = (uint32_t)fb->code.len;
    f->lists = dup(a, fb->lists.data, fb->lists.len, 4, &oom);
    f->nlists = (uint32_t)fb->lists.len;
    f->debug = dup(a, fb->debug.data, fb->debug.len, sizeof(loom_vm_debug), &oom);
    f->ndebug = (uint32_t)fb->debug.len;
  }
  if (oom) {
    loom_vm_exec_free(e);
    return LOOM_OOM();
  }
  loom_status st = loom_vm_exec_verify(e);
  if (st) {
    loom_vm_exec_free(e);
    return loom_status_annotate(st, __FILE__, __LINE__, "while finishing an executable built in memory");
  }
  *out = e;
  return LOOM_OK;
}

loom_status loom_vm_exec_clone_sharing_data(loom_allocator *a, const loom_vm_exec *src, loom_vm_exec **out) {
  *out = NULL;
  loom_vm_exec *e = loom_alloc_zero(a, sizeof *e);
  if (!e) return LOOM_OOM();
  e->alloc = a;
  bool oom = false;
  e->strings = dup(a, src->strings, src->strings_len, 1, &oom);
  e->strings_len = src->strings_len;
  e->symvars = dup(a, src->symvars, src->nsymvars, 4, &oom);
  e->nsymvars = src->nsymvars;
  e->intconsts = dup(a, src->intconsts, src->nintconsts, 8, &oom);
  e->nintconsts = src->nintconsts;
  e->consts = dup(a, src->consts, src->nconsts, sizeof(loom_vm_const), &oom);
  e->nconsts = e->consts ? src->nconsts : 0;
  e->kernels = dup(a, src->kernels, src->nkernels, sizeof(loom_vm_kernel), &oom);
  e->nkernels = e->kernels ? src->nkernels : 0;
  for (uint32_t i = 0; i < e->nkernels; i++) e->kernels[i].sig = dup(a, src->kernels[i].sig, src->kernels[i].nsig, 4, &oom);
  e->externs = dup(a, src->externs, src->nexterns, sizeof(loom_vm_kernel), &oom);
  e->nexterns = e->externs ? src->nexterns : 0;
  for (uint32_t i = 0; i < e->nexterns; i++) e->externs[i].sig = dup(a, src->externs[i].sig, src->externs[i].nsig, 4, &oom);
  e->data = src->data; /* borrowed: src outlives the clone */
  e->data_len = src->data_len;
  if (src->const_src) e->const_src = dup(a, src->const_src, src->nconsts, sizeof(void *), &oom);
  if (src->const_ok) e->const_ok = loom_alloc_zero(a, src->nconsts), oom |= !e->const_ok; /* checked again */
  e->funcs = loom_alloc_array(a, src->nfuncs ? src->nfuncs : 1, sizeof(loom_vm_func));
  if (!e->funcs) oom = true;
  else memset(e->funcs, 0, (src->nfuncs ? src->nfuncs : 1) * sizeof(loom_vm_func));
  for (uint32_t i = 0; e->funcs && i < src->nfuncs; i++) {
    const loom_vm_func *s = &src->funcs[i];
    loom_vm_func *f = &e->funcs[i];
    e->nfuncs = i + 1;
    *f = (loom_vm_func){.name = s->name, .nparams = s->nparams, .nint_params = s->nint_params};
    f->obj_kinds = dup(a, s->obj_kinds, s->nobj, 1, &oom);
    f->nobj = f->obj_kinds || !s->nobj ? s->nobj : 0;
    f->int_names = dup(a, s->int_names, s->nint, 4, &oom);
    f->nint = f->int_names || !s->nint ? s->nint : 0;
    f->params = dup(a, s->params, s->nparams, sizeof(loom_vm_param), &oom);
    f->code = dup(a, s->code, s->ncode, 8, &oom);
    f->ncode = f->code ? s->ncode : 0;
    f->lists = dup(a, s->lists, s->nlists, 4, &oom);
    f->nlists = f->lists ? s->nlists : 0;
    f->debug = dup(a, s->debug, s->ndebug, sizeof(loom_vm_debug), &oom);
    f->ndebug = f->debug ? s->ndebug : 0;
  }
  if (oom) {
    loom_vm_exec_free(e);
    return LOOM_OOM();
  }
  *out = e;
  return LOOM_OK;
}
