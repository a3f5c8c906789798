/* fuzz_exec.c — fuzz harness for the executable loader.
 *
 * loom_fuzz_exec_one(bytes, len) loads (and verifies) an arbitrary byte string and, if
 * it loads, disassembles it: it must never crash, read out of bounds or leak. The test
 * suite runs it in a bounded deterministic mutation loop (tests/vm/test_exec.c); built
 * with -DLOOM_LIBFUZZER and -fsanitize=fuzzer it is also a libFuzzer target. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vm/exec.h"

int loom_fuzz_exec_one(const uint8_t *data, size_t size);

int loom_fuzz_exec_one(const uint8_t *data, size_t size) {
  /* copy so the loader sees exactly `size` bytes (ASan catches any overread) */
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  loom_vm_exec *e = NULL;
  loom_status st = loom_vm_exec_load(NULL, copy, size, NULL, NULL, &e);
  int loaded = st == LOOM_OK;
  if (st) {
    (void)loom_status_text(st, 1);
    loom_status_free(st);
  } else {
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_vm_exec_disasm(e, &sb);
    loom_strbuf_free(&sb);
    loom_vm_exec_free(e);
  }
  free(copy);
  return loaded;
}

#ifdef LOOM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)loom_fuzz_exec_one(data, size);
  return 0;
}
#endif
