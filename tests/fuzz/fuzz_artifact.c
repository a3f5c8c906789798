/* fuzz_artifact.c — the artifact opener's fuzz harness (vm/artifact.h): one input is
 * written to an anonymous file and checked as an artifact would be before dlopen (trailer,
 * size, ELF headers, the executable's header, content hash); when it passes, the
 * executable it holds is loaded and verified. Nothing is ever dlopen'ed: an input that
 * passes is native code. The suite (tests/vm/test_artifact.c) and libFuzzer
 * (-DLOOM_LIBFUZZER, tests/fuzz/run_libfuzzer) drive it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vm/artifact.h"
#include "vm/exec.h"

int loom_fuzz_artifact_one(const uint8_t *data, size_t size);

/* Returns 1 when the input passed the checks, 0 when it was refused (cleanly). */
int loom_fuzz_artifact_one(const uint8_t *data, size_t size) {
  int fd = memfd_create("artifact", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) break;
    done += (size_t)w;
  }
  loom_vm_artifact_info info;
  loom_status st = done == size ? loom_vm_artifact_check_fd(fd, "fuzz.so", NULL, &info) : LOOM_OK;
  close(fd);
  if (done != size) return 0;
  if (st) {
    (void)loom_status_text(st, 1);
    loom_status_free(st);
    return 0;
  }
  /* intact: the executable at the recorded place loads and verifies, or is refused */
  uint8_t *copy = loom_alloc_aligned(NULL, info.exec_size ? info.exec_size : 1, 64);
  if (!copy) return 1;
  memcpy(copy, data + info.exec_offset, info.exec_size);
  loom_vm_exec *e = NULL;
  st = loom_vm_exec_load(NULL, copy, info.exec_size, NULL, NULL, &e);
  loom_status_free(st);
  loom_vm_exec_free(e);
  loom_free(NULL, copy, info.exec_size ? info.exec_size : 1);
  return 1;
}

#ifdef LOOM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)loom_fuzz_artifact_one(data, size);
  return 0;
}
#endif
