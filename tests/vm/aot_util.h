/* aot_util.h — building AOT artifacts in tests: the VM fixture's executable (vm_fixture.h)
 * with a hand-written `add` kernel, compiled with `cc -shared` and sealed (vm/artifact.h). */
#ifndef LOOM_TESTS_VM_AOT_UTIL_H
#define LOOM_TESTS_VM_AOT_UTIL_H

#include <stddef.h>

#include "vm/artifact.h"

typedef enum aot_seal {
  AOT_NO_SEAL,  /* the linker's output as it is (what a Loom older than the trailer wrote) */
  AOT_SEAL,     /* sealed, unsigned */
} aot_seal;

/* Writes dir/NAME.c (the fixture executable, the `add` kernel, and `extra_c` if not NULL),
 * compiles it into dir/NAME.so (its path in so[n]), seals it as `seal` says (signed with
 * `key` when not NULL) and saves the plain executable as dir/NAME.loomexe. */
void aot_build_artifact_signed(const char *dir, const char *name, const char *extra_c, aot_seal seal,
                               const loom_vm_artifact_seckey *key, char *so, size_t n);
void aot_build_artifact(const char *dir, const char *name, const char *extra_c, aot_seal seal, char *so, size_t n);

/* A fresh /tmp/loom-aot-XXXXXX directory (malloc'd), and removing it with its files. */
char *aot_make_dir(void);
void aot_remove_dir(char *dir);

/* Copies the first `n` bytes of `from` to `to` (n > size: all of it). */
void aot_copy_prefix(const char *from, const char *to, size_t n);
/* The size of `path` in bytes. */
size_t aot_file_size(const char *path);
/* XORs byte `at` of `path` with `mask`. */
void aot_flip_byte(const char *path, size_t at, unsigned char mask);

#endif
