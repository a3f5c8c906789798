/* loomrt.h — the Loom runtime's C API (libloomrt: no compiler, no LLVM, no GMP;
 * implemented by src/runtime/rt_api.c on top of vm/, libcall/ and the devices).
 *
 *     #include "loomrt.h"
 *     loom_rt *rt;
 *     loom_status s = loom_rt_open("gpt2.so", NULL, &rt);          // AOT artifact or executable file
 *     if (s) { loom_status_fprint(stderr, s); loom_status_free(s); return 1; }
 *     int64_t shape[2] = {4, 17};
 *     loom_tensor *x;
 *     s = loom_rt_tensor_new(rt, LOOM_DTYPE_I64, 2, shape, &x);     // fill x->data ...
 *     loom_rt_outputs out;
 *     s = loom_rt_call(rt, "main", &x, 1, &out);                    // shapes bound by the VM
 *     ... out.items[0]->data ...
 *     loom_rt_outputs_free(&out);
 *     loom_tensor_release(x);
 *     loom_rt_close(rt);
 *
 * A failed call returns a status naming the input, axis and expected value, and the
 * runtime stays usable. Tensors are also exchanged zero-copy through DLPack
 * (loom_tensor_to_dlpack / loom_tensor_from_dlpack in vm/object.h).
 *
 * Threads. One opened runtime serves any number of threads at once:
 *   - thread-safe, on one runtime from any threads at the same time: loom_rt_call,
 *     loom_rt_tensor_new, loom_rt_outputs_free, loom_tensor_release, the queries
 *     (function / param / signature / threads / disasm / device), loom_rt_profile_print and
 *     loom_rt_profile_kernel_ns. Each call has its own registers, frames, kernel context and
 *     error message; the calls share the executable, the constants, the device's storage
 *     pool (locked) and the thread pool, whose loops from different calls run side by side
 *     (vm/threadpool.h). Results are bit-exact with the same calls made one at a time.
 *   - objects: reference counts are atomic, so one tensor may be an input of several
 *     concurrent calls and be retained / released from any thread; its data is not
 *     guarded: writing a tensor while a call reads it is the writer's race. Outputs belong
 *     to the caller that received them.
 *   - NOT concurrent with anything else on the same runtime: loom_rt_open / _open_exec
 *     (until they return), loom_rt_close, loom_rt_set_threads and loom_rt_set_profile.
 *     Make these while no call is in flight (e.g. at start-up and shutdown).
 *   - externs and kernels given by the host (loom_rt_options.externs / .kernels) may be
 *     called from several threads at once and must be reentrant; ctx->user is shared.
 *   - different runtimes are independent (each has its own device, pool and VM). */
#ifndef LOOM_LOOMRT_H
#define LOOM_LOOMRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/dtype.h"
#include "base/status.h"
#include "vm/artifact.h"
#include "vm/extern.h"
#include "vm/kernel_abi.h"
#include "vm/object.h"
#include "vm/vm.h"

typedef struct loom_rt loom_rt;

typedef struct loom_rt_options {
  uint32_t threads;                    /* 0: LOOM_NUM_THREADS or all cores */
  const loom_artifact_kernel *externs; /* host functions for the executable's extern table */
  uint32_t nexterns;
  const loom_artifact_kernel *kernels; /* kernels for a plain executable file (not an AOT .so) */
  uint32_t nkernels;
  void *user;                          /* passed to kernels as ctx->user */
  /* loads the externs an AOT artifact declares (vm/extern.h); NULL: libcall's
   * (loom_libcall_extern_provider: dlopen + libffi). Unused when `externs` is given. */
  const loom_vm_extern_provider *extern_provider;
  /* Only artifacts signed by this Ed25519 key open (loom_vm_artifact_pubkey_read reads a
   * key file; `loom keygen` makes one); unsigned, tampered or otherwise signed artifacts and
   * plain executable files are refused. NULL: any intact artifact opens (docs/vm.md,
   * "Trust model"). */
  const loom_vm_artifact_pubkey *trust;
  /* Check every weight at open. Without it (and without `trust`) opening hashes none of
   * them: each tensor constant is checked against the XXH3-64 its executable records at its
   * first use, so a changed weight fails that call, naming the tensor (vm/exec.h,
   * loom_vm_exec_const_check). With it the same error comes from loom_rt_open. */
  bool check_weights;
  /* Host operators (builtin HOSTOP, vm/vm.h): the operators on string tensors, which the
   * program that compiled the executable runs (loom_compiled_open sets them); NULL: none, and
   * an executable that uses one fails that call naming it. */
  loom_vm_hostop_fn hostop;
  void *hostop_ctx;
  /* Where the model runs: NULL or "cpu", the host; "cuda", GPU 0 through the NVIDIA driver
   * (loaded at run time: a machine without one gets UNAVAILABLE). A CUDA runtime takes CUDA
   * kernels (the `cuda` target's) and no externs; tensors made by loom_rt_tensor_new & co. stay
   * host tensors, copied to the GPU by each call (or once, by loom_rt_tensor_to_device), and
   * outputs stay on the GPU (loom_rt_tensor_to_host reads them). */
  const char *device;
} loom_rt_options;

/* Opens an AOT artifact (.so exporting loom_artifact_v1) or an executable file (by its
 * magic), verifies it and binds every kernel. `opts` may be NULL. An artifact is checked
 * before any of its code runs (vm/artifact.h): a regular file of the size its trailer
 * records, sane ELF headers, its content hash and, with opts->trust, its signature. Its
 * weights are mapped, not read: each is checked at its first use (or all at once with
 * opts->check_weights; with opts->trust the whole region's BLAKE2b-256 is checked at open). */
LOOM_MUST_USE loom_status loom_rt_open(const char *path, const loom_rt_options *opts, loom_rt **out);
/* Opens a runtime on an executable already in memory (vm/exec.h), taking ownership of it
 * (freed by loom_rt_close, also on failure); kernels come from opts->kernels. */
typedef struct loom_vm_exec loom_vm_exec;
LOOM_MUST_USE loom_status loom_rt_open_exec(loom_vm_exec *exe, const loom_rt_options *opts, loom_rt **out);
/* The runtime's CPU device (vm/device.h): where loom_rt_tensor_new & co. make tensors; the VM's
 * too unless the runtime was opened on another device. */
loom_device *loom_rt_device(loom_rt *rt);
/* The device the VM runs on (its allocator statistics): loom_rt_device's unless opts->device. */
loom_device *loom_rt_run_device(loom_rt *rt);
/* A copy of t on the VM's device, or in host memory (t itself, retained, when it is already
 * there; release the result with loom_tensor_release). t dense, not a string tensor. */
LOOM_MUST_USE loom_status loom_rt_tensor_to_device(loom_rt *rt, loom_tensor *t, loom_tensor **out);
LOOM_MUST_USE loom_status loom_rt_tensor_to_host(loom_rt *rt, loom_tensor *t, loom_tensor **out);
void loom_rt_close(loom_rt *rt);

/* ---- functions and their symbolic signatures ---- */
uint32_t loom_rt_function_count(const loom_rt *rt);
const char *loom_rt_function_name(const loom_rt *rt, uint32_t fn);
/* Index of `name`, or UINT32_MAX. */
uint32_t loom_rt_function_find(const loom_rt *rt, const char *name);
uint32_t loom_rt_param_count(const loom_rt *rt, uint32_t fn);
typedef struct loom_rt_param {
  const char *name;          /* "input_ids" */
  int32_t dtype;             /* loom_dtype, or -1: any */
  uint32_t rank;
  const char *dims[LOOM_VM_MAX_RANK]; /* symbolic dims as text: "b", "s + past", "768" */
  bool list;                 /* a list (a sequence or optional; loom_rt_list_new): dtype is its items',
                                rank 0, and each item's shape is its own */
} loom_rt_param;
void loom_rt_param_get(const loom_rt *rt, uint32_t fn, uint32_t i, loom_rt_param *out);
/* "main(x: f32(b, s, 768), ...)" into buf (truncated to n bytes). */
void loom_rt_signature_text(const loom_rt *rt, uint32_t fn, char *buf, size_t n);

/* ---- calls ---- */
typedef struct loom_rt_outputs {
  uint32_t count;      /* results (a returned tuple is flattened one level) */
  loom_vm_obj **items; /* each a reference the caller owns (usually tensors) */
} loom_rt_outputs;

LOOM_MUST_USE loom_status loom_rt_call(loom_rt *rt, const char *fn, loom_tensor *const *inputs, uint32_t ninputs,
                                       loom_rt_outputs *out);
void loom_rt_outputs_free(loom_rt_outputs *out);
/* loom_rt_call with inputs that may be lists (loom_rt_list_new) as well as tensors: the function
 * takes a list where loom_rt_param says `list`. A result that is a list is one output of kind
 * LOOM_VM_OBJ_LIST (a loom_tuple: `size` items, each a tensor or a list). */
LOOM_MUST_USE loom_status loom_rt_call_values(loom_rt *rt, const char *fn, loom_vm_obj *const *inputs, uint32_t ninputs,
                                              loom_rt_outputs *out);
/* A list of n items (tensors or lists, each retained): an input for a list parameter. Release
 * with loom_vm_obj_release. `rt` is unused (may be NULL). */
LOOM_MUST_USE loom_status loom_rt_list_new(loom_rt *rt, loom_vm_obj *const *items, uint32_t n, loom_vm_obj **out);

/* A dense CPU tensor from the runtime's pool (contents undefined). */
LOOM_MUST_USE loom_status loom_rt_tensor_new(loom_rt *rt, loom_dtype dt, int32_t rank, const int64_t *shape,
                                             loom_tensor **out);
void loom_tensor_release(loom_tensor *t);
/* A dense string tensor (dtype string; docs/vm.md "Strings") holding copies of the numel
 * strings strs[i] of lens[i] bytes (lens NULL: NUL-terminated). Its elements are loom_str
 * handles into bytes its storage owns; read them as ((const loom_str *)t->data)[i].
 * loom_rt_tensor_new and loom_rt_tensor_borrow make no string tensors. `rt` may be NULL. */
LOOM_MUST_USE loom_status loom_rt_tensor_strings(loom_rt *rt, int32_t rank, const int64_t *shape,
                                                 const char *const *strs, const size_t *lens, loom_tensor **out);
/* A dense row-major CPU tensor over host memory the caller owns (borrowed: Loom never
 * frees it). The memory must stay valid and unwritten while the tensor or anything made from
 * it (a result may be a view of an input) is alive. `nbytes` is the memory's size, checked.
 * `rt` may be NULL: the tensor then gets a CPU device of its own (loom_interp_call_buffer's
 * inputs need no runtime). */
LOOM_MUST_USE loom_status loom_rt_tensor_borrow(loom_rt *rt, loom_dtype dt, int32_t rank, const int64_t *shape,
                                                void *data, size_t nbytes, loom_tensor **out);
/* Whether t's data is borrowed memory (loom_rt_tensor_borrow): copy it before keeping it. */
bool loom_tensor_is_borrowed(const loom_tensor *t);
/* Zero-copy DLPack import (vm/object.h loom_tensor_from_dlpack: the tensor owns `dl`; its
 * deleter runs when the tensor is freed, or now on failure): host memory (kDLCPU, kDLCUDAHost)
 * on the runtime's CPU device, a GPU's memory (kDLCUDA, a PyTorch CUDA tensor) on the runtime's
 * CUDA device when it runs on that GPU — a call then reads it in place, no copy. Another device
 * is an INVALID_ARGUMENT naming both. `rt` may be NULL (CPU memory only), as for
 * loom_rt_tensor_borrow. */
LOOM_MUST_USE loom_status loom_rt_tensor_from_dlpack(loom_rt *rt, DLManagedTensor *dl, loom_tensor **out);
/* One call with its inputs and results described in int64 arrays, so a binding makes one
 * foreign call per call (python/loom's fast path). For each input, in order:
 *   LOOM_RT_ARG_HOST, dtype, rank, dims[rank], data address, nbytes   host memory, borrowed for
 *                                                                      the call (as
 *                                                                      loom_rt_tensor_borrow)
 *   LOOM_RT_ARG_HOST_AT, ... as HOST, but the address of the data's address (read once here:
 *                        the address of an object's data field, for callers that cannot read it
 *                        cheaply themselves)
 *   LOOM_RT_ARG_TENSOR, loom_tensor address                            a tensor the caller owns
 * `ndesc` is the array's length (checked). The results are in `out` as loom_rt_call's, and,
 * when `res` is not NULL (`nres` int64s), described there: res[0] = count, then per result
 * kind (loom_vm_obj_kind), dtype, rank, dims[rank], data address, borrowed (1: a view of a
 * borrowed input, loom_tensor_is_borrowed: copy it before that memory goes) — res[0] = -1 when
 * the results do not fit in `nres` (read them from `out`). Results on a device that is not the
 * host (a CUDA runtime's) are copied to host memory first, so every described address is the
 * host's. */
enum { LOOM_RT_ARG_HOST = 0, LOOM_RT_ARG_TENSOR = 1, LOOM_RT_ARG_HOST_AT = 2 };
LOOM_MUST_USE loom_status loom_rt_call_packed(loom_rt *rt, const char *fn, const int64_t *desc, size_t ndesc,
                                              uint32_t ninputs, loom_rt_outputs *out, int64_t *res, size_t nres);
/* The layout of the structs bindings mirror (python/loom/_capi.py checks its ctypes copies at
 * import): for each struct, a row per field in declaration order, then one row with field NULL
 * whose size is the struct's sizeof. loom_rt_abi: loom_rt_options, loom_rt_param,
 * loom_rt_outputs and loom_tensor (its fields bindings read); loom_compile_abi (loom.h) adds
 * loom_compile_options. */
typedef struct loom_abi_field {
  const char *type, *field;
  uint64_t offset, size;
} loom_abi_field;
/* A table's rows: LOOM_ABI_FIELD(loom_rt_options, threads), ..., LOOM_ABI_END(loom_rt_options). */
#define LOOM_ABI_FIELD(T, f) {#T, #f, offsetof(T, f), sizeof(((T *)0)->f)}
#define LOOM_ABI_END(T) {#T, NULL, 0, sizeof(T)}
const loom_abi_field *loom_rt_abi(size_t *n);

/* ---- settings ---- */
LOOM_MUST_USE loom_status loom_rt_set_threads(loom_rt *rt, uint32_t threads); /* 0: default */
uint32_t loom_rt_threads(const loom_rt *rt);
void loom_rt_set_profile(loom_rt *rt, bool on);
/* Prints per-instruction and per-kernel times gathered since the last print. */
void loom_rt_profile_print(loom_rt *rt, FILE *f);
/* Nanoseconds spent inside kernels (profiling on) since the last print or call; resets them. */
uint64_t loom_rt_profile_kernel_ns(loom_rt *rt);
/* The disassembly of the loaded executable (malloc'd; free()). */
char *loom_rt_disasm(const loom_rt *rt);

#endif
