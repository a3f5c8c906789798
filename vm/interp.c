/* interp.c — the interpreter loop (after Lua 5.4's lvm.c) and VM setup.
 *
 * The loop keeps pc, the code, the registers, the constants and the lists in locals.
 * Dispatch is computed goto on GCC/Clang release builds and a switch otherwise; the
 * sanitized test build (LOOM_SANITIZED) forces the switch and re-verifies each
 * instruction's operand formats before running it. The verifier has already checked
 * every index, so the loop only checks what depends on run-time values: empty
 * registers, tensor ranks, overflow, division by zero. */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "vm/threadpool.h"
#include "vm/vm.h"
#include "vm/vm_internal.h"

#if defined(LOOM_SANITIZED) && LOOM_SANITIZED
#define USE_SWITCH 1
#elif defined(__GNUC__)
#define USE_SWITCH 0
#else
#define USE_SWITCH 1
#endif

typedef struct prof_entry {
  uint64_t count, ns; /* calls and their total time */
  uint64_t min_ns;    /* the fastest call (0: none yet): what a loaded machine's outliers do not move */
} prof_entry;

/* The VM is shared by every call made on it, possibly from several threads at once: after
 * creation it is only read by calls (the profile counters are added to atomically). What a
 * call writes lives in its frames and its call_state, on the calling thread's stack. */
struct loom_vm {
  loom_allocator *alloc;
  const loom_vm_exec *exe;
  loom_device *dev;           /* this VM's device (holds one reference): CPU unless created on another */
  loom_storage *backing;      /* wraps exe->data for constant tensors, or NULL */
  loom_tensor **consts;       /* exe->nconsts tensor constants, views into backing */
  loom_kernel_fn *kernels;    /* resolved kernels */
  loom_kernel_fn *externs;    /* resolved externs */
  loom_kernel_ctx kctx;       /* the template of every call's kernel context */
  loom_vm_hostop_fn hostop;   /* host operators (HOSTOP), or NULL */
  void *hostop_ctx;           /* their context */
  bool profile;               /* time every instruction and kernel */
  prof_entry op_prof[LOOM_VM_OP_COUNT];
  prof_entry *kernel_prof;    /* per kernel, then per extern (nkernels + A) */
};

/* One call's own state (loom_vm_call): its kernel context, whose error slot is its own. */
typedef struct call_state {
  loom_kernel_ctx kctx; /* vm->kctx with error_slot = kerr */
  uint32_t depth;       /* nested calls */
  char kerr[256];       /* set_error's message */
} call_state;

static void set_error(const loom_kernel_ctx *ctx, const char *msg) {
  char *dst = ctx->error_slot;
  snprintf(dst, 256, "%s", msg ? msg : "(no message)");
}

/* An index read from data is out of range: bad input, reported as OUT_OF_RANGE. The slot
 * starts with LOOM_VM_KERR_INPUT to say so (the CALLK failure path reads it). */
static void set_error_index(const loom_kernel_ctx *ctx, const char *msg, int64_t index, int64_t lo, int64_t hi) {
  char *dst = ctx->error_slot;
  snprintf(dst, 256, "%c%s: index %lld must be within the inclusive range [%lld, %lld]", LOOM_VM_KERR_INPUT,
           msg ? msg : "a kernel", (long long)index, (long long)lo, (long long)hi);
}

/* Profile counters are shared by concurrent calls: added to and read atomically. */
static inline void prof_add(prof_entry *p, uint64_t ns) {
  __atomic_fetch_add(&p->count, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&p->ns, ns, __ATOMIC_RELAXED);
  uint64_t m = __atomic_load_n(&p->min_ns, __ATOMIC_RELAXED), v = ns ? ns : 1;
  while ((m == 0 || v < m) && !__atomic_compare_exchange_n(&p->min_ns, &m, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
static inline prof_entry prof_take(prof_entry *p) {
  return (prof_entry){__atomic_exchange_n(&p->count, 0, __ATOMIC_RELAXED), __atomic_exchange_n(&p->ns, 0, __ATOMIC_RELAXED),
                      __atomic_exchange_n(&p->min_ns, 0, __ATOMIC_RELAXED)};
}

static int32_t serial_for(void *pool, int64_t n, loom_parallel_body body, void *arg) {
  (void)pool;
  return n > 0 ? body(arg, 0, n, 0) : 0;
}

void loom_vm_set_pool(loom_vm *vm, loom_cpu_pool *pool) {
  vm->kctx.pool = pool;
  vm->kctx.parallel_for = pool ? vm->dev->vt->parallel_for : serial_for;
  vm->kctx.num_threads = pool ? loom_cpu_pool_threads(pool) : 1;
}

void loom_vm_set_user(loom_vm *vm, void *user) { vm->kctx.user = user; }
void loom_vm_set_hostop(loom_vm *vm, loom_vm_hostop_fn fn, void *ctx) {
  vm->hostop = fn;
  vm->hostop_ctx = ctx;
}
loom_device *loom_vm_device(loom_vm *vm) { return vm->dev; }
void loom_vm_set_profile(loom_vm *vm, bool on) { __atomic_store_n(&vm->profile, on, __ATOMIC_RELAXED); }

static void no_release(loom_storage *s) { (void)s; }

/* The storage of constant bytes: the host's own bytes wrapped, or a copy in a device's memory. */
static loom_status const_storage(loom_vm *vm, const void *bytes, size_t n, loom_storage **out) {
  if (vm->dev->vt->host) return loom_storage_wrap(vm->dev, (void *)bytes, n, no_release, NULL, out);
  LOOM_PROPAGATE(loom_storage_alloc(vm->dev, n, out));
  loom_status st = vm->dev->vt->copy_from_host(vm->dev, (*out)->data, bytes, n);
  if (st) {
    loom_vm_obj_release(&(*out)->hdr);
    *out = NULL;
  }
  return st;
}

/* Whether tensor t lives where the VM's kernels read (the host's devices are one memory). */
static bool on_device(const loom_vm *vm, const loom_tensor *t) {
  return t->device == vm->dev || (t->device && t->device->vt->host && vm->dev->vt->host);
}

/* n bytes of tensor data at `src` (on the VM's device) into host memory, and back. */
static loom_status read_data(loom_vm *vm, void *host_dst, const void *src, size_t n) {
  if (vm->dev->vt->host) {
    if (n) memcpy(host_dst, src, n);
    return LOOM_OK;
  }
  return vm->dev->vt->copy_to_host(vm->dev, host_dst, src, n);
}
static loom_status write_data(loom_vm *vm, void *dst, const void *host_src, size_t n) {
  if (vm->dev->vt->host) {
    if (n) memcpy(dst, host_src, n);
    return LOOM_OK;
  }
  return vm->dev->vt->copy_from_host(vm->dev, dst, host_src, n);
}

loom_status loom_vm_create(loom_allocator *alloc, const loom_vm_exec *exe, loom_vm_resolver resolve, void *rctx,
                           loom_cpu_pool *pool, loom_vm **out) {
  *out = NULL;
  loom_device *cpu;
  LOOM_PROPAGATE(loom_device_cpu_create(alloc, &cpu));
  loom_status st = loom_vm_create_on(alloc, cpu, exe, resolve, rctx, pool, out);
  loom_device_release(cpu);
  return st;
}

loom_status loom_vm_create_on(loom_allocator *alloc, loom_device *dev, const loom_vm_exec *exe, loom_vm_resolver resolve,
                              void *rctx, loom_cpu_pool *pool, loom_vm **out) {
  *out = NULL;
  loom_vm *vm = loom_alloc_zero(alloc, sizeof *vm);
  if (!vm) return LOOM_OOM();
  vm->alloc = alloc;
  vm->exe = exe;
  vm->dev = dev;
  loom_device_retain(dev);
  vm->kctx.abi_version = LOOM_KERNEL_ABI_VERSION;
  vm->kctx.size = sizeof(loom_kernel_ctx);
  vm->kctx.set_error = set_error;
  vm->kctx.set_error_index = set_error_index;
  vm->kctx.error_slot = NULL; /* each call's own (call_state) */
  loom_vm_set_pool(vm, pool);
  loom_status st = LOOM_OK;
  if (exe->nkernels) {
    vm->kernels = loom_alloc_array(alloc, exe->nkernels, sizeof *vm->kernels);
    if (!vm->kernels) st = LOOM_OOM();
  }
  if (!st && exe->nkernels + exe->nexterns) { /* kernels, then externs */
    vm->kernel_prof = loom_alloc_zero(alloc, (exe->nkernels + exe->nexterns) * sizeof *vm->kernel_prof);
    if (!vm->kernel_prof) st = LOOM_OOM();
  }
  if (!st && exe->nexterns) {
    vm->externs = loom_alloc_array(alloc, exe->nexterns, sizeof *vm->externs);
    if (!vm->externs) st = LOOM_OOM();
  }
  for (uint32_t i = 0; !st && i < exe->nkernels + exe->nexterns; i++) {
    bool ext = i >= exe->nkernels;
    uint32_t k = ext ? i - exe->nkernels : i;
    const char *name = loom_vm_exec_str(exe, ext ? exe->externs[k].name : exe->kernels[k].name);
    loom_kernel_fn fn = resolve ? resolve(rctx, name, ext) : NULL;
    if (!fn) st = LOOM_ERROR(NOT_FOUND, "%s %u '%s' is not provided by the artifact or the host", ext ? "extern" : "kernel", k, name);
    else if (ext) vm->externs[k] = fn;
    else vm->kernels[k] = fn;
  }
  if (!st && exe->nconsts) {
    vm->consts = loom_alloc_zero(alloc, exe->nconsts * sizeof *vm->consts);
    if (!vm->consts) st = LOOM_OOM();
    /* constants are used in place from the (host) executable on the host; a device with
     * memory of its own gets a copy of each now (the first use still checks the host bytes) */
    if (!st && !exe->const_src)
      st = const_storage(vm, exe->data, exe->data_len, &vm->backing);
    for (uint32_t i = 0; !st && i < exe->nconsts; i++) {
      const loom_vm_const *c = &exe->consts[i];
      if (exe->const_src) {
        /* borrowed constants (a JIT executable): each one wrapped where the compiler keeps it */
        loom_storage *one = NULL;
        st = const_storage(vm, exe->const_src[i], c->nbytes, &one);
        if (!st) st = loom_tensor_view(one, 0, (loom_dtype)c->dtype, (int32_t)c->rank, c->dims, &vm->consts[i]);
        if (one) loom_vm_obj_release(&one->hdr);
      } else {
        st = loom_tensor_view(vm->backing, c->offset, (loom_dtype)c->dtype, (int32_t)c->rank, c->dims, &vm->consts[i]);
      }
    }
  }
  if (st) {
    loom_vm_destroy(vm);
    return st;
  }
  *out = vm;
  return LOOM_OK;
}

void loom_vm_destroy(loom_vm *vm) {
  if (!vm) return;
  loom_allocator *a = vm->alloc;
  const loom_vm_exec *e = vm->exe;
  if (vm->consts)
    for (uint32_t i = 0; i < e->nconsts; i++) loom_vm_obj_release(vm->consts[i] ? &vm->consts[i]->hdr : NULL);
  loom_free(a, vm->consts, e->nconsts * sizeof *vm->consts);
  if (vm->backing) loom_vm_obj_release(&vm->backing->hdr);
  loom_free(a, vm->kernels, e->nkernels * sizeof *vm->kernels);
  loom_free(a, vm->kernel_prof, (e->nkernels + e->nexterns) * sizeof *vm->kernel_prof);
  loom_free(a, vm->externs, e->nexterns * sizeof *vm->externs);
  loom_device_release(vm->dev);
  loom_free(a, vm, sizeof *vm);
}

/* ------------------------------------------------------------------ helpers */

typedef struct frame {
  const loom_vm_func *f;
  loom_vm_obj **R;  /* object registers */
  int64_t *I;       /* int registers */
  uint32_t *orig;   /* per int register: input name string, axis (NONE: not from a match) */
} frame;

static const char *var_name(const loom_vm_exec *e, const loom_vm_func *f, uint32_t r, char *buf, size_t n) {
  if (f->int_names[r] != LOOM_VM_NONE) return loom_vm_exec_str(e, e->symvars[f->int_names[r]]);
  snprintf(buf, n, "i%u", r);
  return buf;
}

/* Appends "n = 4 from axis 0" (or "... from input 'y' axis 0", or "n = 4"). */
static void origin_note(const loom_vm_exec *e, const frame *fr, uint32_t r, uint32_t input, loom_strbuf *sb) {
  char buf[16];
  loom_strbuf_printf(sb, "%s = %lld", var_name(e, fr->f, r, buf, sizeof buf), (long long)fr->I[r]);
  uint32_t in = fr->orig[2 * r], ax = fr->orig[2 * r + 1];
  if (in == LOOM_VM_NONE) return;
  if (in == input) loom_strbuf_printf(sb, " from axis %u", ax);
  else loom_strbuf_printf(sb, " from input '%s' axis %u", loom_vm_exec_str(e, in), ax);
}

/* "2*n + 1", "n", "n - 3", "4*n" */
static void affine_text(const char *v, int32_t k, int32_t c, loom_strbuf *sb) {
  if (k != 1) loom_strbuf_printf(sb, "%d*", k);
  loom_strbuf_puts(sb, v);
  if (c > 0) loom_strbuf_printf(sb, " + %d", c);
  if (c < 0) loom_strbuf_printf(sb, " - %lld", -(long long)c);
}

static loom_status shape_error(loom_strbuf *sb) {
  loom_status s = sb->oom ? LOOM_OOM() : LOOM_ERROR(INVALID_ARGUMENT, "%s", loom_strbuf_cstr(sb));
  loom_strbuf_free(sb);
  return s;
}

/* RESHAPE: a dense view of src's elements under `rank` dims from int registers. */
static loom_status reshape_view(const loom_tensor *src, uint32_t rank, const int64_t *I, const uint32_t *regs,
                                loom_tensor **out) {
  int64_t dims[LOOM_VM_MAX_RANK], n = 1, want = (int64_t)loom_tensor_numel(src);
  for (uint32_t i = 0; i < rank; i++) {
    dims[i] = I[regs[i]];
    if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n))
      return LOOM_ERROR(OUT_OF_RANGE, "reshape: axis %u has size %lld", i, (long long)dims[i]);
  }
  if (n != want) return LOOM_ERROR(INVALID_ARGUMENT, "reshape of %lld elements to %lld", (long long)want, (long long)n);
  if (!loom_tensor_is_contiguous(src)) return LOOM_ERROR(UNIMPLEMENTED, "reshape of a strided (non-dense) tensor");
  if (!src->storage) return LOOM_ERROR(UNIMPLEMENTED, "reshape of a tensor without storage");
  size_t off = (size_t)((const char *)src->data - (const char *)src->storage->data);
  return loom_tensor_view(src->storage, off, src->dtype, (int32_t)rank, dims, out);
}

/* CHECK failed: "guard failed: MESSAGE (b = 3 from input 'x' axis 0, ...)". */
static loom_status check_failed(const loom_vm_exec *e, const frame *fr, const uint32_t *l) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_puts(&sb, loom_vm_exec_str(e, l[0]));
  for (uint32_t i = 0; i < l[1]; i++) {
    loom_strbuf_puts(&sb, i ? ", " : " (");
    origin_note(e, fr, l[2 + i], LOOM_VM_NONE, &sb);
  }
  if (l[1]) loom_strbuf_puts(&sb, ")");
  return shape_error(&sb);
}

/* The items of a MATCH / MATCHV pattern (l: after name, dtype, rank) against `rank` values
 * d[0 ..]: a tensor's dims ("input 'x' axis 1") or a Shape value's elements ("shape 's' element 1"). */
static loom_status match_items(const loom_vm_exec *e, frame *fr, uint32_t name, const char *kind, const char *unit,
                               const int64_t *dims, uint32_t rank, const uint32_t *l) {
  const char *in = loom_vm_exec_str(e, name);
  loom_strbuf sb;
  char vb[16];
  for (uint32_t ax = 0; ax < rank; ax++) {
    int64_t d = dims[ax];
    switch (*l) {
    case LOOM_VM_AXIS_ANY: l += 1; break;
    case LOOM_VM_AXIS_CONST: {
      int64_t want = e->intconsts[l[1]];
      if (d != want) return LOOM_ERROR(INVALID_ARGUMENT, "%s '%s' %s %u: expected %lld, got %lld", kind, in, unit, ax, (long long)want, (long long)d);
      l += 2;
      break;
    }
    case LOOM_VM_AXIS_BIND: {
      uint32_t r = l[1];
      int32_t k = (int32_t)l[2], c = (int32_t)l[3];
      int64_t num;
      bool ovf = __builtin_sub_overflow(d, (int64_t)c, &num);
      if (ovf || num < 0 || num % k != 0) {
        loom_strbuf_init(&sb, NULL);
        loom_strbuf_printf(&sb, "%s '%s' %s %u: expected ", kind, in, unit, ax);
        affine_text(var_name(e, fr->f, r, vb, sizeof vb), k, c, &sb);
        loom_strbuf_printf(&sb, ", got %lld", (long long)d);
        if (!ovf && num < 0) loom_strbuf_printf(&sb, " (%s would be negative)", var_name(e, fr->f, r, vb, sizeof vb));
        else loom_strbuf_printf(&sb, " (%lld - %d is not divisible by %d)", (long long)d, c, k);
        return shape_error(&sb);
      }
      fr->I[r] = num / k;
      fr->orig[2 * r] = name;
      fr->orig[2 * r + 1] = ax;
      l += 4;
      break;
    }
    case LOOM_VM_AXIS_AFFINE: {
      uint32_t r = l[1];
      int32_t k = (int32_t)l[2], c = (int32_t)l[3];
      int64_t want;
      bool ovf = __builtin_mul_overflow(fr->I[r], (int64_t)k, &want) || __builtin_add_overflow(want, (int64_t)c, &want);
      if (ovf || want != d) {
        loom_strbuf_init(&sb, NULL);
        loom_strbuf_printf(&sb, "%s '%s' %s %u: expected ", kind, in, unit, ax);
        affine_text(var_name(e, fr->f, r, vb, sizeof vb), k, c, &sb);
        if (ovf) loom_strbuf_puts(&sb, " = (overflows int64)");
        else loom_strbuf_printf(&sb, " = %lld", (long long)want);
        loom_strbuf_puts(&sb, " (");
        origin_note(e, fr, r, name, &sb);
        loom_strbuf_printf(&sb, "), got %lld", (long long)d);
        return shape_error(&sb);
      }
      l += 4;
      break;
    }
    default: { /* LOOM_VM_AXIS_EXPR */
      uint32_t r = l[1], text = l[2], n = l[3];
      if (fr->I[r] != d) {
        loom_strbuf_init(&sb, NULL);
        loom_strbuf_printf(&sb, "%s '%s' %s %u: expected %s = %lld", kind, in, unit, ax, loom_vm_exec_str(e, text), (long long)fr->I[r]);
        for (uint32_t i = 0; i < n; i++) {
          loom_strbuf_puts(&sb, i ? ", " : " (");
          origin_note(e, fr, l[4 + i], name, &sb);
        }
        loom_strbuf_printf(&sb, "%s, got %lld", n ? ")" : "", (long long)d);
        return shape_error(&sb);
      }
      l += 4 + n;
      break;
    }
    }
  }
  return LOOM_OK;
}

/* MATCH: checks tensor t against the pattern at list offset `off`, binding vars. */
static loom_status match(const loom_vm_exec *e, frame *fr, const loom_tensor *t, uint32_t off) {
  const uint32_t *l = fr->f->lists + off;
  uint32_t name = l[0], dtype = l[1], rank = l[2];
  const char *in = loom_vm_exec_str(e, name);
  if (dtype != LOOM_VM_ANY_DTYPE && t->dtype != (loom_dtype)dtype)
    return LOOM_ERROR(TYPE_ERROR, "input '%s': expected dtype %s, got %s", in, loom_dtype_name((loom_dtype)dtype),
                      loom_dtype_name(t->dtype));
  if ((uint32_t)t->rank != rank)
    return LOOM_ERROR(TYPE_ERROR, "input '%s': expected rank %u, got %d", in, rank, t->rank);
  return match_items(e, fr, name, "input", "axis", t->shape, rank, l + 3);
}

/* MATCHV: checks the values of t, a Shape value (a dense 1-D i64 / i32 tensor), against the
 * pattern at `off` as MATCH checks dims; every value must be a dim (>= 0). */
static loom_status match_values(loom_vm *vm, frame *fr, const loom_tensor *t, uint32_t off) {
  const loom_vm_exec *e = vm->exe;
  const uint32_t *l = fr->f->lists + off;
  uint32_t name = l[0], rank = l[2];
  const char *in = loom_vm_exec_str(e, name);
  if ((t->dtype != LOOM_DTYPE_I64 && t->dtype != LOOM_DTYPE_I32) || t->rank != 1 || !loom_tensor_is_contiguous(t))
    return LOOM_ERROR(TYPE_ERROR, "shape '%s': expected a dense 1-D i64 or i32 tensor, got %s of rank %d", in,
                      loom_dtype_name(t->dtype), t->rank);
  if (t->shape[0] != (int64_t)rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "shape '%s': expected %u values, got %lld", in, rank, (long long)t->shape[0]);
  int64_t v[LOOM_VM_MAX_RANK];
  int32_t v32[LOOM_VM_MAX_RANK];
  if (rank > LOOM_VM_MAX_RANK) return LOOM_ERROR(INVALID_ARGUMENT, "shape '%s': %u values", in, rank);
  bool wide = t->dtype == LOOM_DTYPE_I64;
  LOOM_PROPAGATE(read_data(vm, wide ? (void *)v : (void *)v32, t->data, rank * (wide ? sizeof *v : sizeof *v32)));
  for (uint32_t i = 0; i < rank; i++) {
    if (!wide) v[i] = v32[i];
    if (v[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "shape '%s' element %u: %lld is not a dim (>= 0)", in, i, (long long)v[i]);
  }
  return match_items(e, fr, name, "shape", "element", v, rank, l + 3);
}

/* ILOAD: the one element of t (bool or integer) as int64. */
static loom_status load_int(loom_vm *vm, const loom_tensor *t, int64_t *out) {
  if (loom_tensor_numel(t) != 1 || loom_dtype_is_float(t->dtype) || loom_dtype_is_lowp(t->dtype))
    return LOOM_ERROR(INVALID_ARGUMENT, "ILOAD: expected one bool or integer element, got %s of %zu elements",
                      loom_dtype_name(t->dtype), loom_tensor_numel(t));
  uint64_t word = 0;
  LOOM_PROPAGATE(read_data(vm, &word, t->data, loom_dtype_size(t->dtype)));
  const void *p = &word;
  switch (t->dtype) {
  case LOOM_DTYPE_BOOL: case LOOM_DTYPE_U8: *out = *(const uint8_t *)p; break;
  case LOOM_DTYPE_I8: *out = *(const int8_t *)p; break;
  case LOOM_DTYPE_I16: *out = *(const int16_t *)p; break;
  case LOOM_DTYPE_U16: *out = *(const uint16_t *)p; break;
  case LOOM_DTYPE_I32: *out = *(const int32_t *)p; break;
  case LOOM_DTYPE_U32: *out = *(const uint32_t *)p; break;
  case LOOM_DTYPE_I64: *out = *(const int64_t *)p; break;
  case LOOM_DTYPE_U64: {
    uint64_t v = *(const uint64_t *)p;
    *out = v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
    break;
  }
  default: return LOOM_ERROR(INVALID_ARGUMENT, "ILOAD: dtype %s", loom_dtype_name(t->dtype));
  }
  return LOOM_OK;
}

/* The bytes of one row (axis 0) of dense tensor t, or an error naming `what`. */
static loom_status row_bytes(const loom_tensor *t, const char *what, size_t *out) {
  if (t->rank < 1 || !loom_tensor_is_contiguous(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected a dense tensor of rank >= 1, got rank %d", what, t->rank);
  size_t n;
  LOOM_PROPAGATE(loom_tensor_nbytes(t->dtype, t->rank - 1, t->shape + 1, &n));
  *out = n;
  return LOOM_OK;
}

/* SCAN_PUT (builtins.def): row i of the stack *dst := src, growing *dst first if needed (or
 * making it, shaped by src, when the register is empty). */
static loom_status scan_put(loom_vm *vm, loom_vm_obj **dst_reg, const loom_tensor *src, int64_t i, int64_t cap) {
  if (!*dst_reg) {
    int64_t shape[LOOM_VM_MAX_RANK];
    if (src->rank + 1 > LOOM_VM_MAX_RANK)
      return LOOM_ERROR(OUT_OF_RANGE, "SCAN_PUT: an item of rank %d cannot be stacked", src->rank);
    shape[0] = 0;
    memcpy(shape + 1, src->shape, sizeof *shape * (size_t)src->rank);
    loom_tensor *t;
    LOOM_PROPAGATE(loom_tensor_alloc(vm->dev, src->dtype, src->rank + 1, shape, &t));
    *dst_reg = &t->hdr;
  }
  loom_tensor *dst = (loom_tensor *)*dst_reg;
  size_t rb;
  LOOM_PROPAGATE(row_bytes(dst, "SCAN_PUT", &rb));
  bool same = src->dtype == dst->dtype && src->rank == dst->rank - 1 && loom_tensor_is_contiguous(src);
  for (int32_t k = 0; same && k < src->rank; k++) same = src->shape[k] == dst->shape[k + 1];
  if (!same) {
    char got[160], want[160];
    size_t g = (size_t)snprintf(got, sizeof got, "%s(", loom_dtype_name(src->dtype)), w = (size_t)snprintf(want, sizeof want, "%s(", loom_dtype_name(dst->dtype));
    for (int32_t k = 0; k < src->rank && g < sizeof got; k++) g += (size_t)snprintf(got + g, sizeof got - g, "%s%lld", k ? ", " : "", (long long)src->shape[k]);
    for (int32_t k = 1; k < dst->rank && w < sizeof want; k++) w += (size_t)snprintf(want + w, sizeof want - w, "%s%lld", k > 1 ? ", " : "", (long long)dst->shape[k]);
    return LOOM_ERROR(INVALID_ARGUMENT, "scan item of iteration %lld is %s), the items before it %s)", (long long)i, got, want);
  }
  if (i < 0 || i >= cap) return LOOM_ERROR(OUT_OF_RANGE, "SCAN_PUT: row %lld outside [0, %lld)", (long long)i, (long long)cap);
  if (i >= dst->shape[0]) { /* grow: at least twice the rows (amortised copies), at most cap */
    int64_t rows = dst->shape[0] > INT64_MAX / 2 ? INT64_MAX : 2 * dst->shape[0];
    if (rows < 8) rows = 8;
    if (rows < i + 1) rows = i + 1;
    if (rows > cap) rows = cap;
    int64_t shape[LOOM_VM_MAX_RANK];
    memcpy(shape, dst->shape, sizeof *shape * (size_t)dst->rank);
    shape[0] = rows;
    loom_tensor *t;
    LOOM_PROPAGATE(loom_tensor_alloc(vm->dev, dst->dtype, dst->rank, shape, &t));
    if (dst->shape[0]) vm->dev->vt->copy(vm->dev, t->data, dst->data, rb * (size_t)dst->shape[0]);
    loom_vm_obj_release(*dst_reg);
    *dst_reg = &t->hdr;
    dst = t;
  }
  if (rb) vm->dev->vt->copy(vm->dev, (char *)dst->data + rb * (size_t)i, src->data, rb);
  return LOOM_OK;
}

/* ROWS (builtins.def): a view of the first n rows of src. */
static loom_status rows_view(const loom_tensor *src, int64_t n, loom_tensor **out) {
  size_t rb;
  LOOM_PROPAGATE(row_bytes(src, "ROWS", &rb));
  if (n < 0 || n > src->shape[0])
    return LOOM_ERROR(OUT_OF_RANGE, "ROWS: %lld rows of a tensor of %lld", (long long)n, (long long)src->shape[0]);
  if (!src->storage) return LOOM_ERROR(UNIMPLEMENTED, "ROWS of a tensor without storage");
  int64_t shape[LOOM_VM_MAX_RANK];
  memcpy(shape, src->shape, sizeof *shape * (size_t)src->rank);
  shape[0] = n;
  size_t off = (size_t)((const char *)src->data - (const char *)src->storage->data);
  return loom_tensor_view(src->storage, off, src->dtype, src->rank, shape, out);
}

/* A list position p of the LIST_* builtins, for a list of n items: negative counts from the end;
 * in range 0 .. n - 1 (0 .. n when `insert`). */
static loom_status list_pos(const char *op, int64_t p, uint32_t n, bool insert, uint32_t *out) {
  int64_t q = p < 0 ? p + (int64_t)n : p;
  if (n == 0 && !insert) return LOOM_ERROR(OUT_OF_RANGE, "%s: the list is empty", op);
  if (q < 0 || q > (int64_t)n || (!insert && q == (int64_t)n))
    return LOOM_ERROR(OUT_OF_RANGE, "%s: position %lld is out of range for a list of %u items (-%u .. %u)", op,
                      (long long)p, n, n, insert ? n : n - 1);
  *out = (uint32_t)q;
  return LOOM_OK;
}

/* The list builtins (builtins.def): each makes a new object into R[o0]. */
static loom_status list_builtin(loom_vm *vm, frame *fr, uint32_t id, const uint32_t *o, const uint32_t *iv) {
  loom_vm_obj **R = fr->R;
  const loom_tuple *l = id == LOOM_VM_BUILTIN_LIST_EMPTY ? NULL : (const loom_tuple *)R[o[1]];
  if (l && l->hdr.kind != LOOM_VM_OBJ_LIST)
    return LOOM_ERROR(TYPE_ERROR, "builtin %s: register r%u holds a %s, not a list", loom_vm_builtin_table[id].name,
                      o[1], loom_vm_obj_kind_name(l->hdr.kind));
  loom_vm_obj *res = NULL;
  switch (id) {
  case LOOM_VM_BUILTIN_LIST_LEN:
  case LOOM_VM_BUILTIN_LIST_HAS: {
    bool len = id == LOOM_VM_BUILTIN_LIST_LEN;
    loom_tensor *t;
    LOOM_PROPAGATE(loom_tensor_alloc(vm->dev, len ? LOOM_DTYPE_I64 : LOOM_DTYPE_BOOL, 0, NULL, &t));
    int64_t n = l->size;
    uint8_t has = l->size > 0;
    loom_status ws = write_data(vm, t->data, len ? (const void *)&n : (const void *)&has, len ? sizeof n : sizeof has);
    if (ws) {
      loom_vm_obj_release(&t->hdr);
      return ws;
    }
    res = &t->hdr;
    break;
  }
  case LOOM_VM_BUILTIN_LIST_SELECT: {
    const loom_tuple *b = (const loom_tuple *)R[o[2]];
    if (b->hdr.kind != LOOM_VM_OBJ_LIST)
      return LOOM_ERROR(TYPE_ERROR, "builtin LIST_SELECT: register r%u holds a %s, not a list", o[2],
                        loom_vm_obj_kind_name(b->hdr.kind));
    res = fr->I[iv[0]] ? R[o[1]] : R[o[2]];
    loom_vm_obj_retain(res);
    break;
  }
  case LOOM_VM_BUILTIN_LIST_GET: {
    uint32_t p;
    LOOM_PROPAGATE(list_pos("LIST_GET", fr->I[iv[0]], l->size, false, &p));
    uint32_t want = fr->f->obj_kinds[o[0]];
    res = l->items[p];
    if (want != LOOM_VM_OBJ_ANY && res->kind != want)
      return LOOM_ERROR(TYPE_ERROR, "LIST_GET: item %u is a %s, register r%u holds %s", p, loom_vm_obj_kind_name(res->kind),
                        o[0], loom_vm_obj_kind_name(want));
    loom_vm_obj_retain(res);
    break;
  }
  default: { /* EMPTY, INSERT, ERASE: the new list's items gathered, then retained by loom_list_new */
    uint32_t n = l ? l->size : 0, m = 0, p = 0;
    if (id == LOOM_VM_BUILTIN_LIST_INSERT) {
      if (n == UINT32_MAX) return LOOM_ERROR(OUT_OF_RANGE, "LIST_INSERT: the list has %u items", n);
      if (fr->I[iv[1]]) p = n;
      else LOOM_PROPAGATE(list_pos("LIST_INSERT", fr->I[iv[0]], n, true, &p));
    } else if (id == LOOM_VM_BUILTIN_LIST_ERASE) {
      LOOM_PROPAGATE(list_pos("LIST_ERASE", fr->I[iv[1]] ? -1 : fr->I[iv[0]], n, false, &p));
    }
    size_t nb = ((size_t)n + 1) * sizeof(loom_vm_obj *);
    loom_vm_obj **items = loom_alloc(vm->alloc, nb);
    if (!items) return LOOM_OOM();
    for (uint32_t i = 0; i < n; i++) {
      if (id == LOOM_VM_BUILTIN_LIST_INSERT && i == p) items[m++] = R[o[2]];
      if (id != LOOM_VM_BUILTIN_LIST_ERASE || i != p) items[m++] = l->items[i];
    }
    if (id == LOOM_VM_BUILTIN_LIST_INSERT && p == n) items[m++] = R[o[2]];
    loom_tuple *t;
    loom_status st = loom_list_new(vm->alloc, items, m, &t);
    loom_free(vm->alloc, items, nb);
    LOOM_PROPAGATE(st);
    res = &t->hdr;
    break;
  }
  }
  loom_vm_obj_release(R[o[0]]);
  R[o[0]] = res;
  return LOOM_OK;
}

static loom_status builtin(loom_vm *vm, frame *fr, uint32_t id, const uint32_t *l) {
  uint32_t nobj = l[0];
  const uint32_t *o = l + 1, *iv = l + 2 + nobj;
  loom_vm_obj **R = fr->R;
  if (id == LOOM_VM_BUILTIN_ROWS && !R[o[1]])
    return LOOM_ERROR(INVALID_ARGUMENT, "a loop ran no iteration, and the shape of its scan items is known only from them");
  bool list = id >= LOOM_VM_BUILTIN_LIST_EMPTY && id <= LOOM_VM_BUILTIN_LIST_SELECT;
  for (uint32_t i = (list || id == LOOM_VM_BUILTIN_COPY || id == LOOM_VM_BUILTIN_HOSTOP || id == LOOM_VM_BUILTIN_ROWS || id == LOOM_VM_BUILTIN_SCAN_PUT); i < nobj; i++)
    if (!R[o[i]]) return LOOM_ERROR(FAILED_PRECONDITION, "builtin %s: register r%u is empty", loom_vm_builtin_table[id].name, o[i]);
  if (list) return list_builtin(vm, fr, id, o, iv);
  if (id == LOOM_VM_BUILTIN_HOSTOP && !vm->dev->vt->host)
    return LOOM_ERROR(UNIMPLEMENTED, "builtin HOSTOP: host operators (on string tensors) run on host memory, not on %s",
                      vm->dev->vt->name);
  switch (id) {
  case LOOM_VM_BUILTIN_COPY: {
    loom_tensor *src = (loom_tensor *)R[o[1]], *dst;
    if (loom_dtype_is_string(src->dtype)) { /* the bytes too: the copy's storage owns its own */
      if (!loom_tensor_is_contiguous(src)) return LOOM_ERROR(UNIMPLEMENTED, "COPY of a strided string tensor");
      if (!vm->dev->vt->host) return LOOM_ERROR(UNIMPLEMENTED, "COPY: string tensors live in host memory, not on %s", vm->dev->vt->name);
      LOOM_PROPAGATE(loom_tensor_strings(vm->dev, src->rank, src->shape, src->data, &dst));
      loom_vm_obj_release(R[o[0]]);
      R[o[0]] = &dst->hdr;
      return LOOM_OK;
    }
    LOOM_PROPAGATE(loom_tensor_alloc(vm->dev, src->dtype, src->rank, src->shape, &dst));
    size_t nb;
    loom_status st = loom_tensor_nbytes(src->dtype, src->rank, src->shape, &nb);
    if (st) {
      loom_vm_obj_release(&dst->hdr);
      return st;
    }
    vm->dev->vt->copy(vm->dev, dst->data, src->data, nb);
    loom_vm_obj_release(R[o[0]]);
    R[o[0]] = &dst->hdr;
    return LOOM_OK;
  }
  case LOOM_VM_BUILTIN_ZERO: {
    loom_tensor *t = (loom_tensor *)R[o[0]];
    size_t nb;
    LOOM_PROPAGATE(loom_tensor_nbytes(t->dtype, t->rank, t->shape, &nb));
    vm->dev->vt->zero(vm->dev, t->data, nb);
    return LOOM_OK;
  }
  case LOOM_VM_BUILTIN_SCAN_PUT:
    if (loom_dtype_is_string(((const loom_tensor *)R[o[1]])->dtype))
      return LOOM_ERROR(UNIMPLEMENTED, "SCAN_PUT: a loop's scan items are string tensors, which the VM does not stack yet");
    return scan_put(vm, &R[o[0]], (const loom_tensor *)R[o[1]], fr->I[iv[0]], fr->I[iv[1]]);
  case LOOM_VM_BUILTIN_ROWS: {
    loom_tensor *t;
    LOOM_PROPAGATE(rows_view((const loom_tensor *)R[o[1]], fr->I[iv[0]], &t));
    loom_vm_obj_release(R[o[0]]);
    R[o[0]] = &t->hdr;
    return LOOM_OK;
  }
  case LOOM_VM_BUILTIN_HOSTOP: {
    const loom_tuple *t = (const loom_tuple *)R[o[1]];
    if (t->hdr.kind != LOOM_VM_OBJ_TUPLE)
      return LOOM_ERROR(TYPE_ERROR, "builtin HOSTOP: register r%u holds a %s, not a tuple", o[1], loom_vm_obj_kind_name(t->hdr.kind));
    int64_t op = fr->I[iv[0]];
    if (!vm->hostop)
      return LOOM_ERROR(UNIMPLEMENTED, "host operator %lld: this executable runs operators on the host (string tensors), "
                        "which only the program that compiled it provides (loom run, loom_compiled_open); a runtime "
                        "without a compiler (loom-run, loom_rt_open) cannot run them", (long long)op);
    if (op < 0 || op > UINT32_MAX) return LOOM_ERROR(OUT_OF_RANGE, "host operator %lld is out of range", (long long)op);
    loom_vm_obj *res = NULL;
    LOOM_PROPAGATE(vm->hostop(vm->hostop_ctx, (uint32_t)op, vm->dev, t->size, t->items, &res));
    loom_vm_obj_release(R[o[0]]);
    R[o[0]] = res;
    return LOOM_OK;
  }
  case LOOM_VM_BUILTIN_ASSERT_EQ:
    if (fr->I[iv[0]] != fr->I[iv[1]])
      return LOOM_ERROR(INVALID_ARGUMENT, "assertion failed: %lld != %lld", (long long)fr->I[iv[0]], (long long)fr->I[iv[1]]);
    return LOOM_OK;
  default: { /* PRINT */
    loom_vm_obj *x = R[o[0]];
    fprintf(stderr, "%s", loom_vm_obj_kind_name(x->kind));
    if (x->kind == LOOM_VM_OBJ_TENSOR) {
      loom_tensor *t = (loom_tensor *)x;
      fprintf(stderr, " %s(", loom_dtype_name(t->dtype));
      for (int32_t i = 0; i < t->rank; i++) fprintf(stderr, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
      fprintf(stderr, ")");
    }
    fprintf(stderr, "\n");
    return LOOM_OK;
  }
  }
}

/* ------------------------------------------------------------------ the loop */

static loom_status run(loom_vm *vm, call_state *cs, uint32_t fn, loom_vm_obj *const *args, const int64_t *iargs,
                       loom_vm_obj **out);

#define CHECKED(opname, expr)                                                          \
  do {                                                                                 \
    if (LOOM_UNLIKELY(expr)) {                                                         \
      st = LOOM_ERROR(OUT_OF_RANGE, "%s overflows int64: %lld and %lld", opname,       \
                      (long long)I[LOOM_VM_B(in)], (long long)I[LOOM_VM_C(in)]);       \
      goto fail;                                                                       \
    }                                                                                  \
  } while (0)

#define NEED(reg)                                                                      \
  do {                                                                                 \
    if (LOOM_UNLIKELY(!R[reg])) {                                                      \
      st = LOOM_ERROR(FAILED_PRECONDITION, "register r%u is empty", (unsigned)(reg));   \
      goto fail;                                                                       \
    }                                                                                  \
  } while (0)

#define LOOM_VM_LOOP_NAME loop_fast
#define LOOM_VM_LOOP_PROFILE 0
#include "vm/interp_loop.h"
#undef LOOM_VM_LOOP_NAME
#undef LOOM_VM_LOOP_PROFILE
#define LOOM_VM_LOOP_NAME loop_profile
#define LOOM_VM_LOOP_PROFILE 1
#include "vm/interp_loop.h"
#undef LOOM_VM_LOOP_NAME
#undef LOOM_VM_LOOP_PROFILE

static loom_status run(loom_vm *vm, call_state *cs, uint32_t fn, loom_vm_obj *const *args, const int64_t *iargs,
                       loom_vm_obj **out) {
  const loom_vm_func *f = &vm->exe->funcs[fn];
  *out = NULL;
  if (cs->depth >= LOOM_VM_MAX_DEPTH) return LOOM_ERROR(OUT_OF_RANGE, "call depth exceeds %u", LOOM_VM_MAX_DEPTH);
  size_t nb = f->nobj * sizeof(loom_vm_obj *) + f->nint * (sizeof(int64_t) + 2 * sizeof(uint32_t));
  /* small frames live on the C stack */
  _Alignas(16) uint8_t local[2048];
  uint8_t *mem = nb <= sizeof local ? local : loom_alloc(vm->alloc, nb);
  if (!mem) return LOOM_OOM();
  frame fr = {f, (loom_vm_obj **)mem, (int64_t *)(mem + f->nobj * sizeof(loom_vm_obj *)), NULL};
  fr.orig = (uint32_t *)(fr.I + f->nint);
  memset(fr.R, 0, f->nobj * sizeof(loom_vm_obj *));
  memset(fr.I, 0, f->nint * sizeof(int64_t));
  memset(fr.orig, 0xFF, f->nint * 2 * sizeof(uint32_t));
  for (uint32_t i = 0; i < f->nparams; i++) {
    fr.R[i] = args[i];
    loom_vm_obj_retain(args[i]);
  }
  for (uint32_t i = 0; i < f->nint_params; i++) fr.I[i] = iargs[i];
  cs->depth++;
  loom_status st = __atomic_load_n(&vm->profile, __ATOMIC_RELAXED) ? loop_profile(vm, cs, &fr, out) : loop_fast(vm, cs, &fr, out);
  cs->depth--;
  for (uint32_t i = 0; i < f->nobj; i++) loom_vm_obj_release(fr.R[i]);
  if (mem != local) loom_free(vm->alloc, mem, nb);
  return st;
}

/* A list input: a list whose items are dense tensors of the parameter's dtype (when it names
 * one; the items' shapes are checked where a match_cast binds them), or lists. */
static loom_status check_list_input(const loom_vm_func *f, const loom_vm_param *p, const char *pn, const char *fname,
                                    const loom_vm_obj *a) {
  (void)f;
  if (!a || a->kind != LOOM_VM_OBJ_LIST)
    return LOOM_ERROR(TYPE_ERROR, "input '%s' of '%s': expected a list, got %s", pn, fname,
                      a ? loom_vm_obj_kind_name(a->kind) : "nothing");
  const loom_tuple *l = (const loom_tuple *)a;
  for (uint32_t k = 0; k < l->size; k++) {
    const loom_vm_obj *x = l->items[k];
    if (x->kind == LOOM_VM_OBJ_LIST) continue;
    if (x->kind != LOOM_VM_OBJ_TENSOR)
      return LOOM_ERROR(TYPE_ERROR, "input '%s' of '%s': item %u is a %s, expected a tensor", pn, fname, k,
                        loom_vm_obj_kind_name(x->kind));
    const loom_tensor *t = (const loom_tensor *)x;
    if (p->dtype != LOOM_VM_ANY_DTYPE && t->dtype != (loom_dtype)p->dtype)
      return LOOM_ERROR(TYPE_ERROR, "input '%s' of '%s': item %u has dtype %s, expected %s", pn, fname, k,
                        loom_dtype_name(t->dtype), loom_dtype_name((loom_dtype)p->dtype));
    if (!loom_tensor_is_contiguous(t))
      return LOOM_ERROR(INVALID_ARGUMENT, "input '%s' of '%s': item %u is strided; pass dense tensors", pn, fname, k);
  }
  return LOOM_OK;
}

loom_status loom_vm_call(loom_vm *vm, uint32_t fn, loom_vm_obj *const *args, uint32_t nargs, loom_vm_obj **out) {
  *out = NULL;
  const loom_vm_exec *e = vm->exe;
  if (fn >= e->nfuncs) return LOOM_ERROR(NOT_FOUND, "function index %u out of range (%u functions)", fn, e->nfuncs);
  const loom_vm_func *f = &e->funcs[fn];
  const char *fname = loom_vm_exec_str(e, f->name);
  if (f->nint_params) return LOOM_ERROR(INVALID_ARGUMENT, "function '%s' takes int parameters: it is internal", fname);
  if (nargs != f->nparams)
    return LOOM_ERROR(INVALID_ARGUMENT, "function '%s' takes %u inputs, got %u", fname, f->nparams, nargs);
  for (uint32_t i = 0; i < nargs; i++) {
    const loom_vm_param *p = &f->params[i];
    const char *pn = loom_vm_exec_str(e, p->name);
    if (f->obj_kinds[i] == LOOM_VM_OBJ_LIST) {
      LOOM_PROPAGATE(check_list_input(f, p, pn, fname, args[i]));
      continue;
    }
    if (!args[i] || args[i]->kind != LOOM_VM_OBJ_TENSOR)
      return LOOM_ERROR(TYPE_ERROR, "input '%s' of '%s': expected a tensor, got %s", pn, fname,
                        args[i] ? loom_vm_obj_kind_name(args[i]->kind) : "nothing");
    const loom_tensor *t = (const loom_tensor *)args[i];
    if (p->dtype != LOOM_VM_ANY_DTYPE && t->dtype != (loom_dtype)p->dtype)
      return LOOM_ERROR(TYPE_ERROR, "input '%s' of '%s': expected dtype %s, got %s", pn, fname,
                        loom_dtype_name((loom_dtype)p->dtype), loom_dtype_name(t->dtype));
    if ((uint32_t)t->rank != p->rank)
      return LOOM_ERROR(TYPE_ERROR, "input '%s' of '%s': expected rank %u, got %d", pn, fname, p->rank, t->rank);
    if (!loom_tensor_is_contiguous(t))
      return LOOM_ERROR(INVALID_ARGUMENT, "input '%s' of '%s': strided tensors are not supported, pass a dense one", pn, fname);
    if (!on_device(vm, t))
      return LOOM_ERROR(INVALID_ARGUMENT, "input '%s' of '%s' is in %s memory, the function runs on %s: copy it there "
                        "first (loom_rt_call does)", pn, fname, t->device ? t->device->vt->name : "unknown", vm->dev->vt->name);
  }
  call_state cs;
  cs.kctx = vm->kctx;
  cs.kctx.error_slot = cs.kerr;
  cs.depth = 0;
  cs.kerr[0] = 0;
  uint32_t saved = loom_cpu_fpenv_enter();
  loom_status st = run(vm, &cs, fn, args, NULL, out);
  loom_cpu_fpenv_leave(saved);
  if (!st) st = vm->dev->vt->sync(vm->dev);
  if (st && *out) {
    loom_vm_obj_release(*out);
    *out = NULL;
  }
  return st;
}

uint64_t loom_vm_profile_kernel_ns(loom_vm *vm) {
  uint64_t ns = 0;
  for (uint32_t i = 0; i < vm->exe->nkernels; i++) ns += prof_take(&vm->kernel_prof[i]).ns;
  return ns;
}

void loom_vm_profile_print(loom_vm *vm, FILE *out) {
  const loom_vm_exec *e = vm->exe;
  fprintf(out, "profile: instructions\n  %-10s %10s %12s %10s\n", "opcode", "count", "total us", "ns/insn");
  for (uint32_t i = 0; i < LOOM_VM_OP_COUNT; i++) {
    prof_entry p = prof_take(&vm->op_prof[i]);
    if (!p.count) continue;
    fprintf(out, "  %-10s %10llu %12.1f %10.1f\n", loom_vm_opinfo_table[i].name, (unsigned long long)p.count, p.ns / 1e3,
            (double)p.ns / (double)p.count);
  }
  fprintf(out, "profile: kernels\n  %-24s %10s %12s %10s %10s\n", "kernel", "calls", "total us", "us/call", "min us");
  for (uint32_t i = 0; i < e->nkernels + e->nexterns; i++) {
    prof_entry p = prof_take(&vm->kernel_prof[i]);
    if (!p.count) continue;
    bool ext = i >= e->nkernels;
    const char *name = loom_vm_exec_str(e, ext ? e->externs[i - e->nkernels].name : e->kernels[i].name);
    fprintf(out, "  %s%-*s %10llu %12.1f %10.3f %10.3f\n", ext ? "extern:" : "", ext ? 17 : 24, name,
            (unsigned long long)p.count, p.ns / 1e3, (double)p.ns / 1e3 / (double)p.count, p.min_ns / 1e3);
  }
}
