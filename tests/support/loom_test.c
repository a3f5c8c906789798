/* loom_test.c — support shared by every test suite. */
#include "support/loom_test.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int __lsan_do_recoverable_leak_check(void);

int loom_test_leaks(void) {
#if LOOM_SANITIZED && !defined(LOOM_TSAN) /* LeakSanitizer comes with ASan's runtime only */
  return __lsan_do_recoverable_leak_check();
#else
  return 0;
#endif
}

/* Every compile a test runs (in process or through the CLI) uses a kernel cache under /tmp,
 * never the user's: scripts/test sets a fresh LOOM_CACHE_DIR; a suite run by hand gets this
 * one, shared by its runs. Tests of the cache itself use their own directories. */
__attribute__((constructor)) static void test_cache_dir(void) {
  if (getenv("LOOM_CACHE_DIR")) return;
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/loom-test-cache-%ld", (long)getuid());
  setenv("LOOM_CACHE_DIR", dir, 0);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return calloc(1, 1);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)(n < 0 ? 0 : n) + 1);
  size_t got = buf && n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
  if (buf) buf[got] = '\0';
  fclose(f);
  return buf;
}

loom_test_proc loom_test_run(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char out_path[] = "/tmp/loom-test-out-XXXXXX";
  char err_path[] = "/tmp/loom-test-err-XXXXXX";
  int fo = mkstemp(out_path), fe = mkstemp(err_path);
  if (fo >= 0) close(fo);
  if (fe >= 0) close(fe);
  char full[4300];
  /* A subshell, so that the redirections capture every command of a list (a; b && c). */
  snprintf(full, sizeof full, "( %s ) >%s 2>%s </dev/null", cmd, out_path, err_path);
  int st = system(full);
  loom_test_proc p = {0};
  if (st == -1)
    p.exit_code = -1;
  else if (WIFEXITED(st))
    p.exit_code = WEXITSTATUS(st);
  else
    p.exit_code = 128 + WTERMSIG(st);
  p.out = slurp(out_path);
  p.err = slurp(err_path);
  unlink(out_path);
  unlink(err_path);
  return p;
}

void loom_test_proc_free(loom_test_proc *p) {
  free(p->out);
  free(p->err);
  p->out = p->err = NULL;
}

const char *loom_test_loom_bin(void) {
  const char *b = getenv("LOOM_BIN");
  return b ? b : "zig-out/bin/loom-san";
}

const char *loom_test_loom_run_bin(void) {
  const char *b = getenv("LOOM_RUN_BIN");
  return b ? b : "zig-out/bin/loom-run-san";
}

uint64_t loom_test_rng_next(loom_test_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t loom_test_rng_range(loom_test_rng *r, int64_t lo, int64_t hi) {
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
  if (span == 0) return (int64_t)loom_test_rng_next(r); /* the full 64-bit range */
  return (int64_t)((uint64_t)lo + loom_test_rng_next(r) % span);
}

uint64_t loom_test_seed(void) {
  const char *s = getenv("LOOM_TEST_SEED");
  return s ? strtoull(s, NULL, 0) : 0x10011001ULL;
}
