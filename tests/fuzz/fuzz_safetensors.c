/* fuzz_safetensors.c — the safetensors reader's fuzz harness (graph/safetensors.h): one input is
 * written to an anonymous file and opened as a weights file (mapped, validated); when it opens,
 * every byte of every tensor is read, so a range past the mapping faults. libFuzzer
 * (-DLOOM_LIBFUZZER, tests/fuzz/run_libfuzzer safetensors) drives it; the graph suite's
 * tests/graph/test_weights.c mutates files the same way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "graph/safetensors.h"

int loom_fuzz_safetensors_one(const uint8_t *data, size_t size);

/* Returns 1 when the input opened, 0 when it was refused (cleanly). */
int loom_fuzz_safetensors_one(const uint8_t *data, size_t size) {
  int fd = memfd_create("weights", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) break;
    done += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  loom_safetensors *f = NULL;
  loom_status st = done == size ? loom_safetensors_open(NULL, path, &f) : LOOM_OK;
  close(fd);
  if (done != size) return 0;
  if (st) {
    loom_status_free(st);
    return 0;
  }
  volatile uint8_t sum = 0;
  for (size_t i = 0; i < loom_safetensors_count(f); i++) {
    const loom_safetensors_tensor *t = loom_safetensors_at(f, i);
    for (size_t k = 0; k < t->nbytes; k++) sum ^= ((const uint8_t *)t->data)[k];
    if (loom_safetensors_find(f, t->name) != t) abort(); /* names are unique: find gives this one */
  }
  (void)sum;
  loom_safetensors_close(f);
  return 1;
}

#ifdef LOOM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)loom_fuzz_safetensors_one(data, size);
  return 0;
}
#endif
