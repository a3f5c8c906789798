/* cmd_selfcheck.c — `loom selfcheck`: a quick check that this build works here.
 * Each check exercises one piece of the base library or one dependency on this
 * machine and reports ok / FAILED with the reason. Exit 1 if any fails. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/dtype.h"
#include "base/intern.h"
#include "base/map.h"
#include "base/status.h"
#include "driver/commands.h"
#include "targets/cpu/host.h"

static loom_status check_status(void) {
  loom_status s = LOOM_ERROR(INVALID_ARGUMENT, "axis %d out of range", 3);
  s = loom_status_annotate(s, __FILE__, __LINE__, "while checking %s", "x");
  int ok = loom_status_code(s) == LOOM_CODE_INVALID_ARGUMENT &&
           strcmp(loom_status_text(s, 0), "invalid argument: axis 3 out of range\n  while checking x") == 0;
  loom_status_free(s);
  return ok ? LOOM_OK : LOOM_ERROR(INTERNAL, "status text is not as expected");
}

static loom_status check_arena(void) {
  loom_arena a;
  loom_arena_init(&a, NULL, 1024);
  loom_status s = LOOM_OK;
  for (size_t align = 1; align <= 4096 && !s; align *= 2) {
    void *p = loom_arena_alloc(&a, 3, align);
    if (!p || (uintptr_t)p % align) s = LOOM_ERROR(INTERNAL, "misaligned block for align %zu", align);
  }
  if (!s && !loom_arena_alloc(&a, 1 << 20, 64)) s = LOOM_OOM();
  loom_arena_destroy(&a);
  return s;
}

static loom_status check_map_and_intern(void) {
  loom_map m;
  loom_map_init(&m, NULL);
  loom_status s = LOOM_OK;
  for (uint64_t k = 0; k < 100000 && !s; k++)
    if (!loom_map_put(&m, k * 7919, k)) s = LOOM_OOM();
  for (uint64_t k = 0; k < 100000 && !s; k++) {
    uint64_t v;
    if (!loom_map_get(&m, k * 7919, &v) || v != k) s = LOOM_ERROR(INTERNAL, "map lost key %llu", (unsigned long long)k);
  }
  loom_map_destroy(&m);
  loom_interner in;
  loom_interner_init(&in, NULL);
  char buf[] = "batch";
  if (!s && loom_intern_cstr(&in, "batch") != loom_intern(&in, buf, 5))
    s = LOOM_ERROR(INTERNAL, "interning gave two pointers for one string");
  loom_interner_destroy(&in);
  return s;
}

static loom_status check_dtypes(void) {
  for (int i = 0; i < LOOM_DTYPE_COUNT; i++) {
    loom_dtype t;
    const char *name = loom_dtype_name((loom_dtype)i);
    if (!loom_dtype_parse(name, strlen(name), &t) || t != (loom_dtype)i)
      return LOOM_ERROR(INTERNAL, "dtype %s does not parse back", name);
  }
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN payloads */
    if (loom_f32_to_f16(loom_f16_to_f32((uint16_t)h)) != h)
      return LOOM_ERROR(INTERNAL, "f16 0x%04x does not round-trip", h);
  }
  return LOOM_OK;
}

static loom_status check_diag(void) {
  loom_source src = {"m.loom", "a = 1\nb = foo(a)\n", 16};
  loom_diag d = {LOOM_DIAG_ERROR, {&src, 10}, (char *)"unknown operator 'foo'"};
  char *text = loom_diag_format(&d);
  if (!text) return LOOM_OOM();
  int ok = strcmp(text, "m.loom:2:5: error: unknown operator 'foo'\n  b = foo(a)\n      ^\n") == 0;
  loom_status s = ok ? LOOM_OK : LOOM_ERROR(INTERNAL, "diagnostic text is not as expected:\n%s", text);
  free(text);
  return s;
}

static loom_status check_llvm(void) {
  unsigned major, minor, patch;
  loom_cpu_llvm_version(&major, &minor, &patch);
  if (major != 19) return LOOM_ERROR(FAILED_PRECONDITION, "linked LLVM %u.%u.%u, expected 19", major, minor, patch);
  return LOOM_OK;
}

typedef struct check {
  const char *name;
  loom_status (*fn)(void);
} check;

static const check checks[] = {
    {"status values and context", check_status},
    {"arena alignment and large blocks", check_arena},
    {"hash map (100k keys) and interning", check_map_and_intern},
    {"dtype table and f16 round trip", check_dtypes},
    {"diagnostics with caret", check_diag},
    {"LLVM 19 linked", check_llvm},
};

static int run(const loom_cli_args *args) {
  (void)args;
  int failed = 0;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
    uint64_t t0 = loom_clock_ns();
    loom_status s = checks[i].fn();
    double ms = (double)(loom_clock_ns() - t0) / 1e6;
    printf("  %-40s %s (%.1f ms)\n", checks[i].name, s ? "FAILED" : "ok", ms);
    if (s) {
      printf("    %s\n", loom_status_text(s, 1));
      failed++;
    }
    loom_status_free(s);
  }
  size_t n = sizeof checks / sizeof checks[0];
  printf("selfcheck: %zu passed, %d failed\n", n - (size_t)failed, failed);
  return failed ? LOOM_EXIT_FAILURE : LOOM_EXIT_OK;
}

const loom_cli_command loom_cmd_selfcheck = {
    .name = "selfcheck",
    .summary = "check that this build of Loom works on this machine",
    .positional = "",
    .min_positional = 0,
    .max_positional = 0,
    .opts = (const loom_cli_opt[]){{NULL, NULL, NULL, false}},
    .run = run,
};
