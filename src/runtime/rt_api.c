/* rt_api.c — the runtime C API of src/loomrt.h: the top of the runtime, where its parts are
 * put together. The VM runs on the CPU device or, with loom_rt_options.device "cuda", on the
 * CUDA device (targets/cuda/device_cuda.h); tensors the caller makes live on the host and are
 * copied to the VM's device at the call. An artifact is loaded as a kernel image of the device (vm/device.h),
 * its externs by the extern provider (vm/extern.h: libcall's unless the options name
 * another), and run by a VM (vm/vm.h) on a thread pool (vm/threadpool.h). vm/ includes
 * nothing of this file's other includes; this layer is what knows them all. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "base/strbuf.h"
#include "libcall/libcall.h"
#include "loomrt.h"
#include "targets/cuda/device_cuda.h"
#include "vm/threadpool.h"
#include "vm/vm.h"

struct loom_rt {
  loom_vm_exec *exe;
  loom_vm *vm;
  loom_device *dev;                    /* the VM's device, and the artifact's loader */
  loom_device *host;                   /* the CPU device: where the caller's tensors are made (dev on the CPU) */
  loom_cpu_pool *pool;
  void *image;                         /* the AOT artifact loaded as a kernel image of dev, or NULL */
  const loom_artifact_desc *desc;      /* what the image carries (its kernel table), or NULL */
  const loom_artifact_kernel *kernels; /* kernels from the options (a plain executable) */
  uint32_t nkernels;
  const loom_artifact_kernel *externs;
  uint32_t nexterns;
  const loom_vm_extern_provider *provider; /* loads the externs an ALM2 artifact declares */
  void *provider_state;                    /* what it loaded, or NULL */
};

static loom_kernel_fn resolve(void *ctx, const char *name, int is_extern) {
  loom_rt *rt = ctx;
  if (!is_extern && rt->image) return rt->dev->vt->kernel_find(rt->dev, rt->image, name);
  const loom_artifact_kernel *t = is_extern ? rt->externs : rt->kernels;
  uint32_t n = is_extern ? rt->nexterns : rt->nkernels;
  for (uint32_t i = 0; i < n; i++)
    if (t[i].name && !strcmp(t[i].name, name)) return t[i].fn;
  return NULL;
}

void loom_rt_close(loom_rt *rt) {
  if (!rt) return;
  loom_vm_destroy(rt->vm);
  loom_vm_exec_free(rt->exe);
  loom_cpu_pool_destroy(rt->pool);
  if (rt->provider_state) rt->provider->unload(rt->provider_state);
  if (rt->image) rt->dev->vt->image_unload(rt->dev, rt->image);
  loom_device_release(rt->dev);
  loom_device_release(rt->host);
  free(rt);
}

static loom_status open_so(loom_rt *rt, const char *path, const loom_vm_artifact_pubkey *trust) {
  const loom_artifact_desc *a;
  LOOM_PROPAGATE(rt->dev->vt->image_load(rt->dev, path, trust, &rt->image, &a));
  rt->desc = a;
  const uint8_t *data = NULL;
  uint64_t data_len = 0;
  if (rt->dev->vt->image_data) rt->dev->vt->image_data(rt->dev, rt->image, &data, &data_len);
  LOOM_RETURN_IF_ERROR(loom_vm_exec_load_ext(NULL, a->exec, a->exec_size, data, (size_t)data_len, NULL, NULL, &rt->exe),
                       "artifact '%s'", path);
  if ((a->magic == LOOM_ARTIFACT_MAGIC2 || a->magic == LOOM_ARTIFACT_MAGIC_DEVICE) && a->externs && !rt->nexterns) {
    /* the externs the artifact declares: loaded now (libraries relative to the artifact) */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s", strchr(path, '/') ? "" : "./", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    LOOM_RETURN_IF_ERROR(rt->provider->load(a->externs, dir, rt->exe, &rt->provider_state, &rt->externs, &rt->nexterns),
                         "artifact '%s': its external functions", path);
  }
  return LOOM_OK;
}

/* Every kernel whose provider keeps its signature next to its code (an artifact's kernel
 * table, the JIT's) must be described exactly so by the executable: the executable is
 * data that could have been changed, the kernel's code indexes as it was compiled. */
static loom_status check_kernel_sigs(const loom_rt *rt) {
  const loom_artifact_kernel *t = rt->desc ? rt->desc->kernels : rt->kernels;
  uint32_t n = rt->desc ? rt->desc->nkernels : rt->nkernels;
  for (uint32_t k = 0; k < rt->exe->nkernels; k++) {
    const loom_vm_kernel *ek = &rt->exe->kernels[k];
    const char *name = loom_vm_exec_str(rt->exe, ek->name);
    for (uint32_t i = 0; t && i < n; i++) {
      if (!t[i].name || strcmp(t[i].name, name) || !t[i].sig) continue;
      if (!loom_vm_sig_equal(ek, t[i].sig, t[i].nsig)) {
        loom_strbuf sb;
        loom_strbuf_init(&sb, NULL);
        loom_vm_sig_format(rt->exe, ek, &sb);
        loom_status st = LOOM_ERROR(DATA_LOSS, "kernel %u '%s': the executable describes it as %s, which is not the "
                                               "signature its code was compiled with", k, name, loom_strbuf_cstr(&sb));
        loom_strbuf_free(&sb);
        return st;
      }
    }
  }
  return LOOM_OK;
}

/* Creates the pool and the VM once rt->exe is set (or st already failed); closes rt on failure. */
static loom_status finish_open(loom_rt *rt, loom_status st, const char *what, const loom_rt_options *opts, loom_rt **out) {
  if (!st) st = check_kernel_sigs(rt);
  if (!st && opts->check_weights)
    st = loom_status_annotate(loom_vm_exec_check_consts(rt->exe), __FILE__, __LINE__, "while checking every weight of '%s'", what);
  if (!st) st = loom_cpu_pool_create(NULL, opts->threads, &rt->pool);
  if (!st) {
    st = loom_vm_create_on(NULL, rt->dev, rt->exe, resolve, rt, rt->pool, &rt->vm);
    if (st && !rt->image && !opts->nkernels && loom_status_code(st) == LOOM_CODE_NOT_FOUND)
      st = loom_status_annotate(st, __FILE__, __LINE__,
                                "while binding '%s': a plain executable takes its kernels from the host "
                                "(loom_rt_options.kernels); run the AOT shared object instead", what);
  }
  if (st) {
    loom_rt_close(rt);
    return st;
  }
  loom_vm_set_user(rt->vm, opts->user);
  loom_vm_set_hostop(rt->vm, opts->hostop, opts->hostop_ctx);
  *out = rt;
  return LOOM_OK;
}

static const loom_rt_options no_options = {0};

/* The device `name` names (NULL or "cpu": the host itself, retained). */
static loom_status device_of(const char *name, loom_device *host, loom_device **out) {
  if (!name || !strcmp(name, "cpu")) {
    loom_device_retain(host);
    *out = host;
    return LOOM_OK;
  }
  if (!strcmp(name, "cuda")) return loom_device_cuda_create(NULL, NULL, out);
  return LOOM_ERROR(INVALID_ARGUMENT, "unknown device '%s'; devices: cpu, cuda", name);
}

static loom_status rt_new(const loom_rt_options *opts, loom_rt **out) {
  *out = NULL;
  loom_rt *rt = calloc(1, sizeof *rt);
  if (!rt) return LOOM_OOM();
  loom_status st = loom_device_cpu_create(NULL, &rt->host);
  if (!st) st = device_of(opts->device, rt->host, &rt->dev);
  if (st) {
    loom_device_release(rt->host);
    free(rt);
    return st;
  }
  rt->kernels = opts->kernels, rt->nkernels = opts->nkernels;
  rt->externs = opts->externs, rt->nexterns = opts->nexterns;
  rt->provider = opts->extern_provider                 ? opts->extern_provider
                 : rt->dev->vt->host ? &loom_libcall_extern_provider
                                      : &loom_libcall_extern_provider_cuda;
  *out = rt;
  return LOOM_OK;
}

loom_status loom_rt_open(const char *path, const loom_rt_options *opts, loom_rt **out) {
  *out = NULL;
  if (!opts) opts = &no_options;
  loom_rt *rt;
  LOOM_PROPAGATE(rt_new(opts, &rt));
  /* which kind of file: by its first bytes, read from a regular file only */
  unsigned char head[8] = {0};
  int fd;
  uint64_t size;
  loom_status st = loom_file_open_regular(path, "artifact", LOOM_FILE_LIMIT_ARTIFACT, &fd, &size);
  if (!st) {
    ssize_t got = pread(fd, head, sizeof head, 0);
    close(fd);
    if (got == 8 && !memcmp(head, "LOOMEXE", 8)) {
      st = opts->trust ? LOOM_ERROR(FAILED_PRECONDITION,
                                    "'%s' is a plain executable file, which carries no signature: with a trusted key "
                                    "only signed AOT artifacts open", path)
                       : loom_vm_exec_load_file(NULL, path, &rt->exe);
    } else if (got >= 4 && !memcmp(head, "\x7f" "ELF", 4)) {
      st = open_so(rt, path, opts->trust);
    } else {
      st = LOOM_ERROR(DATA_LOSS, "'%s' is neither a Loom executable nor a shared-object artifact", path);
    }
  }
  return finish_open(rt, st, path, opts, out);
}

loom_status loom_rt_open_exec(loom_vm_exec *exe, const loom_rt_options *opts, loom_rt **out) {
  *out = NULL;
  if (!opts) opts = &no_options;
  loom_rt *rt;
  loom_status st = rt_new(opts, &rt);
  if (st) {
    loom_vm_exec_free(exe);
    return st;
  }
  rt->exe = exe;
  return finish_open(rt, LOOM_OK, "the executable", opts, out);
}

loom_device *loom_rt_device(loom_rt *rt) { return rt->host; }
loom_device *loom_rt_run_device(loom_rt *rt) { return rt->dev; }

/* A dense copy of t in device `to` (t itself, retained, when it is already there). */
static loom_status tensor_move(loom_tensor *t, loom_device *to, loom_tensor **out) {
  *out = NULL;
  if (t->device == to || (t->device->vt->host && to->vt->host)) {
    loom_vm_obj_retain(&t->hdr);
    *out = t;
    return LOOM_OK;
  }
  if (loom_dtype_is_string(t->dtype))
    return LOOM_ERROR(UNIMPLEMENTED, "a string tensor cannot be moved to the %s device", to->vt->name);
  if (!loom_tensor_is_contiguous(t))
    return LOOM_ERROR(UNIMPLEMENTED, "a strided tensor cannot be moved between devices; make it dense first");
  if (!t->device->vt->host && !to->vt->host) /* two runtimes' devices: through the host, by the caller */
    return LOOM_ERROR(UNIMPLEMENTED, "a tensor on another runtime's %s device cannot be moved to this one's; copy it "
                      "to the host first (loom_rt_tensor_to_host)", t->device->vt->name);
  size_t nb;
  LOOM_PROPAGATE(loom_tensor_nbytes(t->dtype, t->rank, t->shape, &nb));
  loom_tensor *c;
  LOOM_PROPAGATE(loom_tensor_alloc(to, t->dtype, t->rank, t->shape, &c));
  loom_status st = to->vt->host ? t->device->vt->copy_to_host(t->device, c->data, t->data, nb)
                                : to->vt->copy_from_host(to, c->data, t->data, nb);
  if (st) {
    loom_vm_obj_release(&c->hdr);
    return st;
  }
  *out = c;
  return LOOM_OK;
}

loom_status loom_rt_tensor_to_device(loom_rt *rt, loom_tensor *t, loom_tensor **out) { return tensor_move(t, rt->dev, out); }
loom_status loom_rt_tensor_to_host(loom_rt *rt, loom_tensor *t, loom_tensor **out) { return tensor_move(t, rt->host, out); }

uint32_t loom_rt_function_count(const loom_rt *rt) { return rt->exe->nfuncs; }
const char *loom_rt_function_name(const loom_rt *rt, uint32_t fn) {
  return fn < rt->exe->nfuncs ? loom_vm_exec_str(rt->exe, rt->exe->funcs[fn].name) : NULL;
}
uint32_t loom_rt_function_find(const loom_rt *rt, const char *name) { return loom_vm_exec_find_func(rt->exe, name); }
uint32_t loom_rt_param_count(const loom_rt *rt, uint32_t fn) { return fn < rt->exe->nfuncs ? rt->exe->funcs[fn].nparams : 0; }

void loom_rt_param_get(const loom_rt *rt, uint32_t fn, uint32_t i, loom_rt_param *out) {
  memset(out, 0, sizeof *out);
  if (fn >= rt->exe->nfuncs || i >= rt->exe->funcs[fn].nparams) return;
  const loom_vm_param *p = &rt->exe->funcs[fn].params[i];
  out->name = loom_vm_exec_str(rt->exe, p->name);
  out->dtype = p->dtype == LOOM_VM_ANY_DTYPE ? -1 : (int32_t)p->dtype;
  out->rank = p->rank;
  for (uint32_t d = 0; d < p->rank; d++) out->dims[d] = loom_vm_exec_str(rt->exe, p->dims[d]);
  out->list = rt->exe->funcs[fn].obj_kinds[i] == LOOM_VM_OBJ_LIST;
}

void loom_rt_signature_text(const loom_rt *rt, uint32_t fn, char *buf, size_t n) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "%s(", loom_rt_function_name(rt, fn) ? loom_rt_function_name(rt, fn) : "?");
  for (uint32_t i = 0; i < loom_rt_param_count(rt, fn); i++) {
    loom_rt_param p;
    loom_rt_param_get(rt, fn, i, &p);
    if (p.list) {
      loom_strbuf_printf(&sb, "%s%s: list of %s", i ? ", " : "", p.name, p.dtype < 0 ? "any" : loom_dtype_name((loom_dtype)p.dtype));
      continue;
    }
    loom_strbuf_printf(&sb, "%s%s: %s(", i ? ", " : "", p.name, p.dtype < 0 ? "any" : loom_dtype_name((loom_dtype)p.dtype));
    for (uint32_t d = 0; d < p.rank; d++) loom_strbuf_printf(&sb, "%s%s", d ? ", " : "", p.dims[d]);
    loom_strbuf_puts(&sb, ")");
  }
  loom_strbuf_puts(&sb, ")");
  snprintf(buf, n, "%s", loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
}

loom_status loom_rt_call(loom_rt *rt, const char *fn, loom_tensor *const *inputs, uint32_t ninputs, loom_rt_outputs *out) {
  loom_vm_obj *args[LOOM_VM_MAX_RANK * 16];
  out->count = 0;
  out->items = NULL;
  if (ninputs > LOOM_ARRAY_LEN(args)) return LOOM_ERROR(INVALID_ARGUMENT, "%u inputs are too many", ninputs);
  for (uint32_t k = 0; k < ninputs; k++) args[k] = inputs[k] ? &inputs[k]->hdr : NULL;
  return loom_rt_call_values(rt, fn, args, ninputs, out);
}

loom_status loom_rt_list_new(loom_rt *rt, loom_vm_obj *const *items, uint32_t n, loom_vm_obj **out) {
  (void)rt;
  *out = NULL;
  for (uint32_t k = 0; k < n; k++)
    if (!items[k] || (items[k]->kind != LOOM_VM_OBJ_TENSOR && items[k]->kind != LOOM_VM_OBJ_LIST))
      return LOOM_ERROR(INVALID_ARGUMENT, "list item %u is %s, expected a tensor or a list", k,
                        items[k] ? loom_vm_obj_kind_name(items[k]->kind) : "nothing");
  loom_tuple *t;
  LOOM_PROPAGATE(loom_list_new(NULL, items, n, &t));
  *out = &t->hdr;
  return LOOM_OK;
}

loom_status loom_rt_call_values(loom_rt *rt, const char *fn, loom_vm_obj *const *args, uint32_t ninputs,
                                loom_rt_outputs *out) {
  out->count = 0;
  out->items = NULL;
  uint32_t i = loom_vm_exec_find_func(rt->exe, fn);
  if (i == LOOM_VM_NONE) return LOOM_ERROR(NOT_FOUND, "no function '%s' in the executable", fn);
  loom_vm_obj *res;
  if (!rt->dev->vt->host) { /* the boundary: the caller's host tensors copied to the device for this call */
    loom_vm_obj *moved[LOOM_VM_MAX_RANK * 16];
    if (ninputs > LOOM_ARRAY_LEN(moved)) return LOOM_ERROR(INVALID_ARGUMENT, "%u inputs are too many", ninputs);
    loom_status st = LOOM_OK;
    uint32_t k = 0;
    for (; k < ninputs && !st; k++) {
      moved[k] = args[k];
      if (args[k] && args[k]->kind == LOOM_VM_OBJ_TENSOR) {
        loom_tensor *t;
        st = tensor_move((loom_tensor *)args[k], rt->dev, &t);
        if (!st) moved[k] = &t->hdr;
        else moved[k] = NULL;
      } else if (args[k]) {
        loom_vm_obj_retain(args[k]);
      }
    }
    if (!st) st = loom_vm_call(rt->vm, i, moved, ninputs, &res);
    for (uint32_t j = 0; j < k; j++) loom_vm_obj_release(moved[j]);
    LOOM_PROPAGATE(st);
  } else {
    LOOM_PROPAGATE(loom_vm_call(rt->vm, i, args, ninputs, &res));
  }
  if (res->kind == LOOM_VM_OBJ_TUPLE) {
    loom_tuple *t = (loom_tuple *)res;
    out->items = calloc(t->size ? t->size : 1, sizeof *out->items);
    if (!out->items) {
      loom_vm_obj_release(res);
      return LOOM_OOM();
    }
    for (uint32_t k = 0; k < t->size; k++) {
      out->items[k] = t->items[k];
      loom_vm_obj_retain(t->items[k]);
    }
    out->count = t->size;
    loom_vm_obj_release(res);
  } else {
    out->items = calloc(1, sizeof *out->items);
    if (!out->items) {
      loom_vm_obj_release(res);
      return LOOM_OOM();
    }
    out->items[0] = res;
    out->count = 1;
  }
  return LOOM_OK;
}

void loom_rt_outputs_free(loom_rt_outputs *out) {
  for (uint32_t i = 0; i < out->count; i++) loom_vm_obj_release(out->items[i]);
  free(out->items);
  out->items = NULL;
  out->count = 0;
}

/* String tensors (dtype string: loom_str handles) are made only by loom_rt_tensor_strings,
 * whose storage owns the bytes behind the handles (docs/vm.md "Strings"): a tensor of
 * handles without bytes, or over memory the caller owns, would be pointers nobody checks. */
static loom_status refuse_string(loom_dtype dt) {
  if (loom_dtype_is_string(dt))
    return LOOM_ERROR(INVALID_ARGUMENT, "a string tensor is made with loom_rt_tensor_strings (its storage owns the bytes)");
  return LOOM_OK;
}

loom_status loom_rt_tensor_strings(loom_rt *rt, int32_t rank, const int64_t *shape, const char *const *strs,
                                   const size_t *lens, loom_tensor **out) {
  *out = NULL;
  size_t nb;
  if (rank < 0 || rank > LOOM_VM_MAX_RANK) return LOOM_ERROR(OUT_OF_RANGE, "rank %d is outside 0..%d", rank, LOOM_VM_MAX_RANK);
  LOOM_PROPAGATE(loom_tensor_nbytes(LOOM_DTYPE_STRING, rank, shape, &nb));
  size_t n = nb / sizeof(loom_str);
  loom_str *el = malloc(n ? n * sizeof *el : 1);
  if (!el) return LOOM_OOM();
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < n && !st; i++) {
    if (!strs[i]) st = LOOM_ERROR(INVALID_ARGUMENT, "string %zu is NULL", i);
    else el[i] = (loom_str){strs[i], lens ? lens[i] : strlen(strs[i])};
  }
  loom_device *own = NULL;
  if (!st && !rt) st = loom_device_cpu_create(NULL, &own);
  if (!st) st = loom_tensor_strings(rt ? rt->host : own, rank, shape, el, out);
  loom_device_release(own);
  free(el);
  return st;
}

loom_status loom_rt_tensor_new(loom_rt *rt, loom_dtype dt, int32_t rank, const int64_t *shape, loom_tensor **out) {
  *out = NULL;
  LOOM_PROPAGATE(refuse_string(dt));
  return loom_tensor_alloc(rt->host, dt, rank, shape, out);
}

void loom_tensor_release(loom_tensor *t) { loom_vm_obj_release(t ? &t->hdr : NULL); }

/* The owner tag of borrowed storage: its address marks it, nothing is released. */
static const char borrowed_tag = 0;

loom_status loom_rt_tensor_borrow(loom_rt *rt, loom_dtype dt, int32_t rank, const int64_t *shape, void *data,
                                  size_t nbytes, loom_tensor **out) {
  *out = NULL;
  if ((unsigned)dt >= LOOM_DTYPE_COUNT) return LOOM_ERROR(INVALID_ARGUMENT, "unknown dtype %d", (int)dt);
  LOOM_PROPAGATE(refuse_string(dt));
  if (rank < 0 || rank > LOOM_VM_MAX_RANK)
    return LOOM_ERROR(OUT_OF_RANGE, "rank %d is outside 0..%d", rank, LOOM_VM_MAX_RANK);
  size_t need;
  LOOM_PROPAGATE(loom_tensor_nbytes(dt, rank, shape, &need));
  if (need > nbytes)
    return LOOM_ERROR(OUT_OF_RANGE, "a %s tensor of %zu bytes does not fit in the %zu bytes given", loom_dtype_name(dt),
                      need, nbytes);
  loom_device *own = NULL;
  if (!rt) LOOM_PROPAGATE(loom_device_cpu_create(NULL, &own));
  loom_storage *s;
  loom_status st = loom_storage_wrap(rt ? rt->host : own, data, nbytes, NULL, (void *)&borrowed_tag, &s);
  if (!st) {
    st = loom_tensor_view(s, 0, dt, rank, shape, out);
    loom_vm_obj_release(&s->hdr); /* the view holds it */
  }
  loom_device_release(own); /* the storage holds it */
  return st;
}

bool loom_tensor_is_borrowed(const loom_tensor *t) {
  return t->storage && t->storage->owner == (const void *)&borrowed_tag;
}

loom_status loom_rt_tensor_from_dlpack(loom_rt *rt, DLManagedTensor *dl, loom_tensor **out) {
  if (rt) { /* host memory on the CPU device; a GPU's memory (kDLCUDA) on the run device when it is that GPU */
    DLDeviceType t = dl->dl_tensor.device.device_type;
    bool host_memory = t == kDLCPU || t == kDLCUDAHost;
    return loom_tensor_from_dlpack(loom_allocator_system(), host_memory ? rt->host : rt->dev, dl, out);
  }
  loom_device *own;
  loom_status st = loom_device_cpu_create(NULL, &own);
  if (st) {
    *out = NULL;
    if (dl->deleter) dl->deleter(dl);
    return st;
  }
  st = loom_tensor_from_dlpack(loom_allocator_system(), own, dl, out);
  loom_device_release(own); /* the tensor holds it */
  return st;
}

/* Reads input `i` of a packed description at desc[*pos]: a borrowed tensor into *made (released
 * by the caller), or the caller's tensor. */
static loom_status unpack_input(loom_rt *rt, const int64_t *desc, size_t ndesc, size_t *pos, uint32_t i,
                                loom_tensor **t, loom_tensor **made) {
  size_t p = *pos;
  if (p + 2 > ndesc) return LOOM_ERROR(INVALID_ARGUMENT, "input %u: the packed description ends early", i);
  int64_t kind = desc[p];
  if (kind == LOOM_RT_ARG_TENSOR) {
    *t = (loom_tensor *)(uintptr_t)desc[p + 1];
    *pos = p + 2;
    return LOOM_OK;
  }
  if ((kind != LOOM_RT_ARG_HOST && kind != LOOM_RT_ARG_HOST_AT) || p + 3 > ndesc)
    return LOOM_ERROR(INVALID_ARGUMENT, "input %u: bad packed description (kind %lld)", i, (long long)kind);
  int64_t dt = desc[p + 1], rank = desc[p + 2];
  if (rank < 0 || rank > LOOM_VM_MAX_RANK || p + 5 + (size_t)rank > ndesc)
    return LOOM_ERROR(INVALID_ARGUMENT, "input %u: bad packed description (rank %lld)", i, (long long)rank);
  const int64_t *dims = &desc[p + 3];
  void *data = (void *)(uintptr_t)desc[p + 3 + rank];
  if (kind == LOOM_RT_ARG_HOST_AT) data = *(void *const *)data;
  int64_t nbytes = desc[p + 4 + rank];
  if (dt < 0 || dt >= LOOM_DTYPE_COUNT || nbytes < 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "input %u: bad packed description (dtype %lld)", i, (long long)dt);
  *pos = p + 5 + (size_t)rank;
  LOOM_PROPAGATE(loom_rt_tensor_borrow(rt, (loom_dtype)dt, (int32_t)rank, dims, data, (size_t)nbytes, made));
  *t = *made;
  return LOOM_OK;
}

/* Describes the results into res (see loom_rt_call_packed); -1 in res[0] when they do not fit. */
static void describe_results(const loom_rt_outputs *out, int64_t *res, size_t nres) {
  size_t p = 1;
  for (uint32_t i = 0; i < out->count; i++) {
    const loom_vm_obj *o = out->items[i];
    const loom_tensor *t = o->kind == LOOM_VM_OBJ_TENSOR ? (const loom_tensor *)o : NULL;
    size_t need = 5 + (t ? (size_t)t->rank : 0);
    if (p + need > nres) {
      res[0] = -1;
      return;
    }
    res[p++] = o->kind;
    res[p++] = t ? t->dtype : -1;
    res[p++] = t ? t->rank : 0;
    for (int32_t d = 0; t && d < t->rank; d++) res[p++] = t->shape[d];
    res[p++] = t ? (int64_t)(uintptr_t)t->data : 0;
    res[p++] = t && loom_tensor_is_borrowed(t);
  }
  res[0] = out->count;
}

loom_status loom_rt_call_packed(loom_rt *rt, const char *fn, const int64_t *desc, size_t ndesc, uint32_t ninputs,
                                loom_rt_outputs *out, int64_t *res, size_t nres) {
  out->count = 0;
  out->items = NULL;
  loom_tensor *ts[LOOM_VM_MAX_RANK * 16], *made[LOOM_VM_MAX_RANK * 16];
  if (ninputs > LOOM_ARRAY_LEN(ts)) return LOOM_ERROR(INVALID_ARGUMENT, "%u inputs are too many", ninputs);
  loom_status st = LOOM_OK;
  size_t pos = 0;
  uint32_t n = 0;
  for (; n < ninputs && !st; n++) {
    made[n] = NULL;
    st = unpack_input(rt, desc, ndesc, &pos, n, &ts[n], &made[n]);
  }
  if (!st) st = loom_rt_call(rt, fn, ts, ninputs, out);
  for (uint32_t i = 0; i < n; i++) loom_tensor_release(made[i]);
  /* the described addresses are read by the caller: results on a device (a GPU) come to host memory */
  for (uint32_t i = 0; !st && i < out->count; i++) {
    loom_vm_obj *o = out->items[i];
    if (!o || o->kind != LOOM_VM_OBJ_TENSOR || ((loom_tensor *)o)->device->vt->host) continue;
    loom_tensor *h;
    st = loom_rt_tensor_to_host(rt, (loom_tensor *)o, &h);
    if (!st) {
      loom_vm_obj_release(o);
      out->items[i] = &h->hdr;
    }
  }
  if (st) loom_rt_outputs_free(out);
  if (!st && res && nres) describe_results(out, res, nres);
  return st;
}

static const loom_abi_field rt_abi[] = {
    LOOM_ABI_FIELD(loom_rt_options, threads), LOOM_ABI_FIELD(loom_rt_options, externs), LOOM_ABI_FIELD(loom_rt_options, nexterns),
    LOOM_ABI_FIELD(loom_rt_options, kernels), LOOM_ABI_FIELD(loom_rt_options, nkernels), LOOM_ABI_FIELD(loom_rt_options, user),
    LOOM_ABI_FIELD(loom_rt_options, extern_provider), LOOM_ABI_FIELD(loom_rt_options, trust),
    LOOM_ABI_FIELD(loom_rt_options, check_weights), LOOM_ABI_FIELD(loom_rt_options, hostop),
    LOOM_ABI_FIELD(loom_rt_options, hostop_ctx), LOOM_ABI_FIELD(loom_rt_options, device), LOOM_ABI_END(loom_rt_options),
    LOOM_ABI_FIELD(loom_rt_param, name), LOOM_ABI_FIELD(loom_rt_param, dtype), LOOM_ABI_FIELD(loom_rt_param, rank),
    LOOM_ABI_FIELD(loom_rt_param, dims), LOOM_ABI_FIELD(loom_rt_param, list), LOOM_ABI_END(loom_rt_param),
    LOOM_ABI_FIELD(loom_rt_outputs, count), LOOM_ABI_FIELD(loom_rt_outputs, items), LOOM_ABI_END(loom_rt_outputs),
    LOOM_ABI_FIELD(loom_tensor, hdr), LOOM_ABI_FIELD(loom_tensor, dtype), LOOM_ABI_FIELD(loom_tensor, rank), LOOM_ABI_FIELD(loom_tensor, data),
    LOOM_ABI_FIELD(loom_tensor, device), LOOM_ABI_FIELD(loom_tensor, storage), LOOM_ABI_FIELD(loom_tensor, dl), LOOM_ABI_FIELD(loom_tensor, alloc),
    LOOM_ABI_FIELD(loom_tensor, shape), LOOM_ABI_FIELD(loom_tensor, strides), LOOM_ABI_END(loom_tensor),
};

const loom_abi_field *loom_rt_abi(size_t *n) {
  *n = sizeof rt_abi / sizeof rt_abi[0];
  return rt_abi;
}

loom_status loom_rt_set_threads(loom_rt *rt, uint32_t threads) {
  loom_cpu_pool *p;
  LOOM_PROPAGATE(loom_cpu_pool_create(NULL, threads, &p));
  loom_vm_set_pool(rt->vm, p);
  loom_cpu_pool_destroy(rt->pool);
  rt->pool = p;
  return LOOM_OK;
}

uint32_t loom_rt_threads(const loom_rt *rt) { return loom_cpu_pool_threads(rt->pool); }
void loom_rt_set_profile(loom_rt *rt, bool on) { loom_vm_set_profile(rt->vm, on); }
void loom_rt_profile_print(loom_rt *rt, FILE *f) { loom_vm_profile_print(rt->vm, f); }
uint64_t loom_rt_profile_kernel_ns(loom_rt *rt) { return loom_vm_profile_kernel_ns(rt->vm); }

char *loom_rt_disasm(const loom_rt *rt) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_vm_exec_disasm(rt->exe, &sb);
  char *s = sb.oom ? NULL : strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return s;
}
