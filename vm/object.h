/* object.h — runtime objects of the VM: devices, storage, tensors, tuples.
 *
 * Every object starts with a loom_vm_obj header (kind + reference count); the VM's
 * object registers hold loom_vm_obj pointers. Reference counts are atomic: an object may
 * be shared by threads (a weight or an input passed to concurrent calls, the VM's
 * constants, a device) and retained and released from any of them. Its data is not
 * guarded: writing a tensor while another thread reads it is the writer's race.
 *
 *   loom_device   a table of function pointers (vm/device.h; the CPU in device_cpu.c)
 *                 plus a pooled allocator: released storage goes back to a
 *                 per-size-class free list of its device and is reused by the next
 *                 allocation of that class.
 *   loom_storage  a block of device memory (from the pool, a foreign owner such as a
 *                 memory-mapped executable, or a DLPack producer).
 *   loom_tensor   dtype, rank, shape, strides (in elements), device, a data pointer
 *                 and the storage that keeps the data alive. Converts to and from
 *                 DLPack's DLManagedTensor without copying. A string tensor (dtype
 *                 string, elements loom_str handles) is made only by loom_tensor_strings:
 *                 its storage holds the handles and, after them, the bytes they point
 *                 to, so the bytes are freed with the storage (docs/vm.md "Strings").
 *   loom_tuple    a fixed-size array of objects (multiple results).
 *   list          a loom_tuple of kind LIST: a list value of the graph IR (docs/vm.md "Lists"),
 *                 tensors (or lists) whose count and shapes are known only at run time; the
 *                 LIST_* builtins make new lists, never change one in place. */
#ifndef LOOM_VM_OBJECT_H
#define LOOM_VM_OBJECT_H

#include <dlpack/dlpack.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/dtype.h"
#include "base/status.h"
#include "vm/device.h"

#define LOOM_VM_MAX_RANK 16 /* most dims a tensor may have (checked at load and call) */

typedef enum loom_vm_obj_kind {
  LOOM_VM_OBJ_ANY = 0,     /* in register declarations only: any kind */
  LOOM_VM_OBJ_TENSOR = 1,  /* loom_tensor */
  LOOM_VM_OBJ_STORAGE = 2, /* loom_storage */
  LOOM_VM_OBJ_TUPLE = 3,   /* loom_tuple */
  LOOM_VM_OBJ_LIST = 4,    /* a loom_tuple holding a list value's items (tensors or lists) */
  LOOM_VM_OBJ_KIND_COUNT
} loom_vm_obj_kind;

typedef struct loom_vm_obj {
  uint32_t kind;         /* loom_vm_obj_kind */
  _Atomic uint32_t refs; /* reference count; the object is freed when it drops to 0 */
} loom_vm_obj;

struct loom_storage {
  loom_vm_obj hdr;     /* kind STORAGE */
  loom_device *device; /* holds a device reference while live */
  void *data;          /* the bytes */
  size_t size;         /* usable bytes */
  int size_class;      /* pool class, or -1: not pooled (foreign memory) */
  /* Foreign storage: called instead of returning to the pool. */
  void (*release)(loom_storage *s);
  void *owner;         /* the foreign owner's state */
  loom_storage *next;  /* free-list link while pooled */
};

typedef struct loom_tensor {
  loom_vm_obj hdr;        /* kind TENSOR */
  loom_dtype dtype;       /* element type */
  int32_t rank;           /* number of dims, 0..LOOM_VM_MAX_RANK */
  void *data;             /* element 0 */
  loom_device *device;    /* where data lives (owned through storage) */
  loom_storage *storage;  /* keeps data alive (holds a reference), or NULL */
  DLManagedTensor *dl;    /* foreign DLPack owner (deleted with the tensor), or NULL */
  loom_allocator *alloc;  /* where this struct lives */
  int64_t *shape;         /* rank dims */
  int64_t *strides;       /* rank strides, in elements */
  int64_t dims[];         /* storage for shape then strides */
} loom_tensor;

typedef struct loom_tuple {
  loom_vm_obj hdr;        /* kind TUPLE or LIST */
  loom_allocator *alloc;  /* where this struct lives */
  uint32_t size;          /* number of items */
  loom_vm_obj *items[];   /* each holds a reference (never NULL) */
} loom_tuple;

/* ---- objects ---- */
/* Adds a reference (from any thread). NULL is a no-op. */
static inline void loom_vm_obj_retain(loom_vm_obj *o) {
  if (o) atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
}
/* Drops a reference; frees at zero. NULL is a no-op. */
void loom_vm_obj_release(loom_vm_obj *o);
const char *loom_vm_obj_kind_name(uint32_t kind);

/* ---- devices: vm/device.h ---- */

/* ---- storage ---- */
/* Storage of `size` bytes (64-byte aligned), from the pool when a block of its class is free. */
LOOM_MUST_USE loom_status loom_storage_alloc(loom_device *d, size_t size, loom_storage **out);
/* Storage over foreign memory; `release(s)` runs when the last reference goes. */
LOOM_MUST_USE loom_status loom_storage_wrap(loom_device *d, void *data, size_t size,
                                            void (*release)(loom_storage *), void *owner,
                                            loom_storage **out);

/* ---- tensors ---- */
/* Byte size of a dense tensor; OUT_OF_RANGE on a negative dim or overflow. */
LOOM_MUST_USE loom_status loom_tensor_nbytes(loom_dtype dt, int32_t rank, const int64_t *shape,
                                             size_t *out);
/* A dense row-major tensor with fresh storage from `d` (contents undefined). */
LOOM_MUST_USE loom_status loom_tensor_alloc(loom_device *d, loom_dtype dt, int32_t rank,
                                            const int64_t *shape, loom_tensor **out);
/* A dense row-major view of `s` at byte `offset`; checks it fits. Retains s. */
LOOM_MUST_USE loom_status loom_tensor_view(loom_storage *s, size_t offset, loom_dtype dt,
                                           int32_t rank, const int64_t *shape, loom_tensor **out);
/* A dense string tensor on the CPU device `d` holding copies of elems[0 .. numel): one
 * storage with the numel handles, then each element's bytes and a NUL (not counted). */
LOOM_MUST_USE loom_status loom_tensor_strings(loom_device *d, int32_t rank, const int64_t *shape,
                                              const loom_str *elems, loom_tensor **out);
size_t loom_tensor_numel(const loom_tensor *t);
bool loom_tensor_is_contiguous(const loom_tensor *t);
/* Zero-copy export: the DLManagedTensor holds a reference to t; its deleter drops it. */
LOOM_MUST_USE loom_status loom_tensor_to_dlpack(loom_tensor *t, DLManagedTensor **out);
/* Zero-copy import onto `dev`, the device whose memory holds the tensor: the tensor owns `dl`
 * and calls its deleter when freed (also on failure). A host device takes kDLCPU and
 * kDLCUDAHost tensors, another device those of its own DLPack type and id (a CUDA device:
 * kDLCUDA tensors of its GPU); the dtype must be one Loom knows. */
LOOM_MUST_USE loom_status loom_tensor_from_dlpack(loom_allocator *alloc, loom_device *dev,
                                                  DLManagedTensor *dl, loom_tensor **out);
/* Maps dtypes both ways; false when there is no counterpart. */
bool loom_dtype_to_dl(loom_dtype dt, DLDataType *out);
bool loom_dtype_from_dl(DLDataType t, loom_dtype *out);

/* ---- tuples ---- */
/* A tuple of n items (each retained). */
LOOM_MUST_USE loom_status loom_tuple_new(loom_allocator *alloc, loom_vm_obj *const *items,
                                         uint32_t n, loom_tuple **out);
/* A list of n items (each retained; each a tensor or a list): an object of kind LIST. */
LOOM_MUST_USE loom_status loom_list_new(loom_allocator *alloc, loom_vm_obj *const *items, uint32_t n,
                                        loom_tuple **out);

#endif
