/* provider.c — libcall as the runtime's extern provider (vm/extern.h): the externs an AOT
 * artifact declares, decoded from their signature text and loaded with libcall_lib. */
#include <string.h>

#include "base/arena.h"
#include "libcall/libcall.h"

static loom_status load_on(const char *device, const char *sigs, const char *dir, const loom_vm_exec *exe,
                           void **out_state, const loom_artifact_kernel **out_table, uint32_t *out_n) {
  *out_state = NULL;
  *out_table = NULL;
  *out_n = 0;
  loom_arena ar;
  loom_arena_init(&ar, NULL, 0);
  loom_libcall_sig *s;
  uint32_t n;
  loom_libcall_lib *lib = NULL;
  loom_status st = loom_libcall_sigs_decode(sigs, strlen(sigs), &ar, &s, &n);
  loom_libcall_options lo = {.search_dir = dir, .device = device};
  if (!st) st = loom_libcall_lib_create(NULL, s, n, &lo, &lib);
  if (!st) st = loom_libcall_lib_check_exec(lib, exe);
  loom_arena_destroy(&ar);
  if (st) {
    loom_libcall_lib_destroy(lib);
    return st;
  }
  *out_state = lib;
  *out_table = loom_libcall_lib_externs(lib, out_n);
  return LOOM_OK;
}

static loom_status provider_load(const char *sigs, const char *dir, const loom_vm_exec *exe, void **out_state,
                                 const loom_artifact_kernel **out_table, uint32_t *out_n) {
  return load_on(NULL, sigs, dir, exe, out_state, out_table, out_n);
}

static loom_status provider_load_cuda(const char *sigs, const char *dir, const loom_vm_exec *exe, void **out_state,
                                      const loom_artifact_kernel **out_table, uint32_t *out_n) {
  return load_on("cuda", sigs, dir, exe, out_state, out_table, out_n);
}

static void provider_unload(void *state) { loom_libcall_lib_destroy(state); }

const loom_vm_extern_provider loom_libcall_extern_provider = {
    .name = "libcall",
    .load = provider_load,
    .unload = provider_unload,
};

const loom_vm_extern_provider loom_libcall_extern_provider_cuda = {
    .name = "libcall (cuda)",
    .load = provider_load_cuda,
    .unload = provider_unload,
};
