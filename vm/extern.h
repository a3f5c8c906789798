/* extern.h — the extern-call interface: how external functions (CALLX) reach the runtime.
 *
 * The VM calls an extern through the kernel ABI (kernel_abi.h) like a kernel; the entry
 * point comes from the loom_vm_resolver given to loom_vm_create (vm.h) with is_extern = 1.
 * What makes those entry points — dlopen, dlsym, libffi closures around C functions,
 * built-in BLAS bindings — is a provider outside vm/: libcall/ implements this table
 * (loom_libcall_extern_provider, libcall/libcall.h) and the runtime's top layer
 * (src/runtime/rt_api.c) hands it the externs an AOT artifact declares. vm/ never
 * includes the provider.
 *
 *     void *state; const loom_artifact_kernel *table; uint32_t n;
 *     LOOM_PROPAGATE(p->load(a->externs, dir, exe, &state, &table, &n));  // table: name -> entry
 *     ... loom_vm_create(..., resolver that searches `table` ...) ...
 *     p->unload(state);                                                    // after the VM */
#ifndef LOOM_VM_EXTERN_H
#define LOOM_VM_EXTERN_H

#include <stdint.h>

#include "base/status.h"
#include "vm/kernel_abi.h"

typedef struct loom_vm_exec loom_vm_exec;

typedef struct loom_vm_extern_provider {
  const char *name; /* "libcall" */
  /* Loads the externs described by `sigs` (the signature text of an ALM2 artifact,
   * loom_artifact_desc.externs); relative library paths are taken from `dir`. Checks
   * every extern `exe` calls is there with the buffer and symbol counts `exe` passes.
   * On success *out_state is the provider's (freed by unload) and *out_table the
   * {name, kernel-ABI entry} of each of the *out_n externs, owned by the state. On
   * failure nothing is kept. */
  LOOM_MUST_USE loom_status (*load)(const char *sigs, const char *dir, const loom_vm_exec *exe, void **out_state,
                                    const loom_artifact_kernel **out_table, uint32_t *out_n);
  /* Frees what load made (NULL is a no-op); the VM using its entries must be gone. */
  void (*unload)(void *state);
} loom_vm_extern_provider;

#endif
