/* vm.h — the VM: an executable bound to kernels, a device and a thread pool, and calls.
 *
 *     loom_vm *vm;
 *     LOOM_PROPAGATE(loom_vm_create(NULL, exe, resolve, resolve_ctx, pool, &vm));
 *     loom_vm_obj *out;
 *     LOOM_PROPAGATE(loom_vm_call(vm, loom_vm_exec_find_func(exe, "main"), args, nargs, &out));
 *     ... loom_vm_obj_release(out); loom_vm_destroy(vm);
 *
 * A failing call (bad input shape, kernel error, overflow) releases everything it made
 * and leaves the VM ready for the next call. */
#ifndef LOOM_VM_VM_H
#define LOOM_VM_VM_H

#include <stdio.h>

#include "vm/exec.h"

typedef struct loom_vm loom_vm;
typedef struct loom_cpu_pool loom_cpu_pool;

/* Finds the function of kernel or extern `name` (is_extern 0/1), or returns NULL. */
typedef loom_kernel_fn (*loom_vm_resolver)(void *ctx, const char *name, int is_extern);

/* Binds `exe` (borrowed; must outlive the VM) to kernels found through `resolve` (every
 * kernel and extern must resolve: NOT_FOUND names the first that does not), a CPU
 * device of its own, and `pool` (borrowed; NULL runs kernels on one thread). */
LOOM_MUST_USE loom_status loom_vm_create(loom_allocator *alloc, const loom_vm_exec *exe, loom_vm_resolver resolve,
                                         void *resolve_ctx, loom_cpu_pool *pool, loom_vm **out);
/* The same on device `dev` (vm/device.h; the VM holds a reference): tensors the VM makes
 * live there, its parallel_for is the device's, each call ends with the device's sync. */
LOOM_MUST_USE loom_status loom_vm_create_on(loom_allocator *alloc, loom_device *dev, const loom_vm_exec *exe,
                                            loom_vm_resolver resolve, void *resolve_ctx, loom_cpu_pool *pool,
                                            loom_vm **out);
void loom_vm_destroy(loom_vm *vm);
loom_device *loom_vm_device(loom_vm *vm);
void loom_vm_set_pool(loom_vm *vm, loom_cpu_pool *pool);
void loom_vm_set_user(loom_vm *vm, void *user);

/* A host operator (builtin HOSTOP; docs/vm.md "Host operators"): operator `op` of the host's own
 * table applied to `nargs` operands (borrowed); *out a new tensor or tuple made on `dev`. The
 * program that compiled the executable provides it (the driver runs the reference
 * interpreter's implementation of the operator: string tensors); it may be called from several
 * threads at once. */
typedef loom_status (*loom_vm_hostop_fn)(void *ctx, uint32_t op, loom_device *dev, uint32_t nargs,
                                         loom_vm_obj *const *args, loom_vm_obj **out);
/* Sets the host operators of the VM (NULL: none; HOSTOP then fails naming the operator). */
void loom_vm_set_hostop(loom_vm *vm, loom_vm_hostop_fn fn, void *ctx);

/* Calls function `fn` with `nargs` tensors (borrowed). Checks count, kind, dtype, rank
 * and density against the signature before running; the bytecode's MATCH instructions
 * check and bind the dims. On success *out holds a new reference to the result. */
LOOM_MUST_USE loom_status loom_vm_call(loom_vm *vm, uint32_t fn, loom_vm_obj *const *args, uint32_t nargs,
                                       loom_vm_obj **out);

/* Profiling: when on, every instruction and kernel is timed (slower dispatch). */
void loom_vm_set_profile(loom_vm *vm, bool on);
/* Prints per-opcode and per-kernel counts and times, and resets them. */
void loom_vm_profile_print(loom_vm *vm, FILE *f);
/* Nanoseconds spent inside kernels since the last print or call of this (and resets them). */
uint64_t loom_vm_profile_kernel_ns(loom_vm *vm);

#endif
