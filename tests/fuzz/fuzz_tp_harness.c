/* fuzz_tp_harness.c — the tensor-program parser's fuzz harness (no Criterion, so libFuzzer
 * can link it): parse one program; when that succeeds, verify and print it. The suite's
 * mutation loop (tests/tensorprog/test_tp_fuzz.c) and libFuzzer (-DLOOM_LIBFUZZER,
 * tests/fuzz/run_libfuzzer) drive it. */
#include <stdint.h>
#include <stdlib.h>

#include "tensorprog/tp.h"
#include "tensorprog/tp_ir.h"

void loom_fuzz_tp_parse_one(const uint8_t *data, size_t size);

void loom_fuzz_tp_parse_one(const uint8_t *data, size_t size) {
  loom_sym_ctx *cx;
  if (loom_sym_ctx_create(NULL, &cx)) return;
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  loom_source src = {"fuzz.loom", (const char *)data, size};
  size_t pos = 0;
  loom_tp_func *f = NULL;
  loom_status s = loom_tp_parse_func(&arena, cx, &src, &pos, &diags, &f);
  if (!s) {
    loom_status v = loom_tp_verify(cx, f);
    loom_status_free(v);
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_tp_print_func(f, &sb);
    loom_strbuf_free(&sb);
  }
  loom_status_free(s);
  loom_diag_list_destroy(&diags);
  loom_arena_destroy(&arena);
  loom_sym_ctx_destroy(cx);
}

#ifdef LOOM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  loom_fuzz_tp_parse_one(data, size);
  return 0;
}
#endif
