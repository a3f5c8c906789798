/* test_kcache.c — the kernel cache (targets/cpu/kcache.h, cg_cache.c): identical programs
 * compiled once per compile, programs differing only in names sharing one entry, entries
 * checked (corrupt, truncated, another key's), least-recently-used eviction at the size
 * bound, concurrent writers of one key, and a directory that cannot be used. Every test
 * uses its own temporary directory. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu_test_util.h"

static void tmpdir(char *buf, size_t n) {
  snprintf(buf, n, "/tmp/loom-kcu-XXXXXX");
  cr_assert_not_null(mkdtemp(buf));
}

static void rm_rf(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static const int64_t sizes[] = {0, 1, 3, 7, 16, 17, 31};

#define PROG(name, n, m)                                                                                            \
  "prim @" name "(A: Buffer[(" n ", " m "), f32], B: Buffer[(" n ", " m "), f32]) {\n"                          \
  "  for i in 0.." n " parallel { for j in 0.." m " vectorize { B[i, j] = A[i, j] * 2.0 + 1.0 } }\n}\n"

static loom_cpu_jit *new_jit(void) {
  loom_cpu_jit *jit;
  loom_status s = loom_cpu_jit_create(NULL, &jit);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  return jit;
}

LOOM_TEST(kcache, identical_programs_of_one_compile_are_compiled_once) {
  tp_fixture fx;
  cpu_parse_ok(&fx, PROG("scale", "n", "m"));
  loom_tp_func copy = *fx.f;
  copy.name = "scale_again";
  const loom_tp_func *fs[3] = {fx.f, &copy, fx.f};
  loom_kernel_fn fns[3];
  loom_cpu_cache_stats st;
  loom_cpu_jit *jit = new_jit();
  loom_status s = loom_cpu_jit_compile_cached(jit, fx.cx, fs, 3, NULL, fns, &st);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert(st.kernels == 3 && st.unique == 1 && st.compiled == 1 && st.hits == 0, "%u %u %u %u", st.kernels, st.unique,
            st.compiled, st.hits);
  cr_assert(fns[0] == fns[1] && fns[1] == fns[2]);
  cpu_diff_opts o = {sizes, 7, 3, 0, 0, NULL, 1, NULL, NULL};
  cr_assert_gt(cpu_diff(&fx, fns[1], &o, 1), 0);
  /* the same content again in this JIT: its kernel is reused, nothing compiled */
  s = loom_cpu_jit_compile_cached(jit, fx.cx, fs, 1, NULL, fns, &st);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert(fns[0] == fns[2] && st.compiled == 1, "in one JIT a content is added once");
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

/* Two programs that differ only in their names and their symbols' names share one entry:
 * the second, in a fresh JIT in another symbolic context, is a hit and computes the same. */
LOOM_TEST(kcache, programs_differing_only_in_names_share_an_entry) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  loom_kcache *kc = loom_kcache_open(dir, 0, NULL);
  cr_assert(loom_kcache_usable(kc));
  const char *texts[2] = {PROG("first", "n", "m"), PROG("second_name", "rows", "cols")};
  for (int k = 0; k < 2; k++) {
    tp_fixture fx;
    cpu_parse_ok(&fx, texts[k]);
    loom_kernel_fn fn;
    loom_cpu_cache_stats st;
    loom_cpu_jit *jit = new_jit();
    const loom_tp_func *fs[1] = {fx.f};
    loom_status s = loom_cpu_jit_compile_cached(jit, fx.cx, fs, 1, kc, &fn, &st);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    cr_assert_eq(st.hits, (uint32_t)k, "program %d: %u hits", k, st.hits);
    cr_assert_eq(st.compiled, (uint32_t)(1 - k));
    cpu_diff_opts o = {sizes, 7, 3, 0, 0, NULL, 1, NULL, NULL};
    cr_assert_gt(cpu_diff(&fx, fn, &o, 2), 0);
    loom_cpu_jit_destroy(jit);
    tp_fixture_free(&fx);
  }
  /* a different program is another key */
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @other(A: Buffer[(n, m), f32], B: Buffer[(n, m), f32]) {\n"
                    "  for i in 0..n parallel { for j in 0..m vectorize { B[i, j] = A[i, j] * 3.0 + 1.0 } }\n}\n");
  loom_strbuf keys[2];
  loom_strbuf_init(&keys[0], NULL);
  loom_strbuf_init(&keys[1], NULL);
  tp_fixture fy;
  cpu_parse_ok(&fy, PROG("first", "n", "m"));
  const loom_tp_func *fa[1] = {fx.f}, *fb[1] = {fy.f};
  cr_assert_null(loom_cpu_kernel_keys(NULL, fx.cx, fa, 1, &keys[0]));
  cr_assert_null(loom_cpu_kernel_keys(NULL, fy.cx, fb, 1, &keys[1]));
  cr_assert(strcmp(loom_strbuf_cstr(&keys[0]), loom_strbuf_cstr(&keys[1])), "a different constant, a different key");
  /* names canonical: the program, its symbols (n, m, i, j) and its parameter buffers */
  cr_assert(strstr(loom_strbuf_cstr(&keys[1]), "prim @_($2: Buffer[($0, $1), f32], $3: Buffer[($0, $1), f32])"), "%s",
            loom_strbuf_cstr(&keys[1]));
  cr_assert(strstr(loom_strbuf_cstr(&keys[1]), "$3[$4, $5] = $2[$4, $5] * 2.0 + 1.0"), "%s", loom_strbuf_cstr(&keys[1]));
  loom_strbuf_free(&keys[0]);
  loom_strbuf_free(&keys[1]);
  /* a buffer indexed by data keeps its name: the kernel's out-of-range message names it */
  tp_fixture fz;
  cpu_parse_ok(&fz, "prim @tk(X: Buffer[(n,), f32], I: Buffer[(m,), i64], Y: Buffer[(m,), f32]) {\n"
                    "  for i in 0..m parallel { Y[i] = X[I[i]] }\n}\n");
  const loom_tp_func *fc[1] = {fz.f};
  loom_strbuf kz;
  loom_strbuf_init(&kz, NULL);
  cr_assert_null(loom_cpu_kernel_keys(NULL, fz.cx, fc, 1, &kz));
  cr_assert(strstr(loom_strbuf_cstr(&kz), "prim @_(X: Buffer[($0,), f32], $2: Buffer[($1,), i64], $3: Buffer[($1,), f32])"),
            "%s", loom_strbuf_cstr(&kz));
  loom_strbuf_free(&kz);
  tp_fixture_free(&fz);
  tp_fixture_free(&fx);
  tp_fixture_free(&fy);
  loom_kcache_close(kc);
  rm_rf(dir);
}

/* The LLVM pass pipeline is part of the key: Loom's own by default, `default<O2>` at level 2,
 * $LOOM_LLVM_PIPELINE when set (each a different key, each computing the same); a pipeline LLVM
 * cannot parse fails the compile with a message naming it. */
#define LIGHT "default<O3>"
LOOM_TEST(kcache, the_pass_pipeline_is_part_of_the_key) {
  tp_fixture fx;
  cpu_parse_ok(&fx, PROG("scale", "n", "m"));
  const loom_tp_func *fs[1] = {fx.f};
  const char *keep = getenv("LOOM_LLVM_PIPELINE");
  char *saved = keep ? strdup(keep) : NULL;
  unsetenv("LOOM_LLVM_PIPELINE");
  loom_strbuf keys[3];
  for (int k = 0; k < 3; k++) loom_strbuf_init(&keys[k], NULL);
  cr_assert_null(loom_cpu_kernel_keys(NULL, fx.cx, fs, 1, &keys[0]));
  cr_assert(strstr(loom_strbuf_cstr(&keys[0]), "\npipeline always-inline,function(sroa,"), "%s", loom_strbuf_cstr(&keys[0]));
  loom_cpu_options o2 = {.opt_level = 2};
  cr_assert_null(loom_cpu_kernel_keys(&o2, fx.cx, fs, 1, &keys[1]));
  cr_assert(strstr(loom_strbuf_cstr(&keys[1]), "\npipeline default<O2>\n"), "%s", loom_strbuf_cstr(&keys[1]));
  setenv("LOOM_LLVM_PIPELINE", LIGHT, 1);
  cr_assert_null(loom_cpu_kernel_keys(NULL, fx.cx, fs, 1, &keys[2]));
  cr_assert(strstr(loom_strbuf_cstr(&keys[2]), "\npipeline " LIGHT "\n"), "%s", loom_strbuf_cstr(&keys[2]));
  cr_assert(strcmp(loom_strbuf_cstr(&keys[0]), loom_strbuf_cstr(&keys[2])), "another pipeline, another key");
  /* every pipeline computes the same (the programs' reference interpreter) */
  for (int k = 0; k < 3; k++) {
    if (k == 0) unsetenv("LOOM_LLVM_PIPELINE");
    if (k == 2) setenv("LOOM_LLVM_PIPELINE", LIGHT, 1);
    loom_cpu_jit *jit;
    loom_status s = loom_cpu_jit_create(k == 1 ? &o2 : NULL, &jit);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_kernel_fn fn;
    s = loom_cpu_jit_compile(jit, fx.cx, fs, 1, &fn);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    cpu_diff_opts o = {sizes, 7, 3, 0, 0, NULL, 1, NULL, NULL};
    cr_assert_gt(cpu_diff(&fx, fn, &o, 2), 0);
    loom_cpu_jit_destroy(jit);
  }
  /* a pipeline LLVM cannot parse */
  setenv("LOOM_LLVM_PIPELINE", "function(no-such-pass)", 1);
  loom_cpu_jit *jit = new_jit();
  loom_kernel_fn fn;
  loom_status s = loom_cpu_jit_compile(jit, fx.cx, fs, 1, &fn);
  cr_assert_not_null(s);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_INVALID_ARGUMENT);
  const char *msg = loom_status_text(s, 0);
  cr_assert(strstr(msg, "LLVM optimisation pipeline 'function(no-such-pass)' (LOOM_LLVM_PIPELINE when set)") &&
                strstr(msg, "no-such-pass"),
            "%s", msg);
  loom_status_free(s);
  /* a bare instcombine (LLVM would end the process when its fixpoint check fails) is refused */
  setenv("LOOM_LLVM_PIPELINE", "function(aggressive-instcombine,instcombine<max-iterations=1>)", 1);
  s = loom_cpu_jit_compile(jit, fx.cx, fs, 1, &fn);
  cr_assert_not_null(s);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_INVALID_ARGUMENT);
  msg = loom_status_text(s, 0);
  cr_assert(strstr(msg, "write instcombine<no-verify-fixpoint>"), "%s", msg);
  loom_status_free(s);
  setenv("LOOM_LLVM_PIPELINE", "function(aggressive-instcombine,instcombine<max-iterations=1;no-verify-fixpoint>)", 1);
  s = loom_cpu_jit_compile(jit, fx.cx, fs, 1, &fn);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_cpu_jit_destroy(jit);
  if (saved) setenv("LOOM_LLVM_PIPELINE", saved, 1);
  else unsetenv("LOOM_LLVM_PIPELINE");
  free(saved);
  for (int k = 0; k < 3; k++) loom_strbuf_free(&keys[k]);
  tp_fixture_free(&fx);
}

static char *entry_file(const char *dir, const char *key) {
  char hex[33];
  loom_kcache_digest(key, strlen(key), hex);
  char *p = malloc(256);
  snprintf(p, 256, "%s/k-%s", dir, hex);
  return p;
}

LOOM_TEST(kcache, damaged_entries_are_misses_and_are_overwritten) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  loom_kcache *kc = loom_kcache_open(dir, 0, NULL);
  const char *key = "key one", *other = "key two";
  const uint8_t data[] = "object bytes of kernel one";
  loom_kcache_put(kc, key, strlen(key), data, sizeof data);
  loom_kcache_put(kc, other, strlen(other), data, 10);
  uint8_t *got;
  size_t len;
  cr_assert(loom_kcache_get(kc, key, strlen(key), &got, &len));
  cr_assert(len == sizeof data && !memcmp(got, data, len));
  free(got);
  char *path = entry_file(dir, key), *opath = entry_file(dir, other);
  struct stat sb;
  cr_assert_eq(stat(path, &sb), 0);
  for (int damage = 0; damage < 4; damage++) {
    loom_kcache_put(kc, key, strlen(key), data, sizeof data);
    if (damage < 2) { /* a flipped byte: 0 in the payload, 1 in the key text */
      FILE *f = fopen(path, "r+b");
      long at = damage == 0 ? (long)sb.st_size - 3 : (long)sb.st_size - (long)sizeof data - 2;
      fseek(f, at, SEEK_SET);
      int c = fgetc(f);
      fseek(f, at, SEEK_SET);
      fputc(c ^ 1, f);
      fclose(f);
    } else if (damage == 2) {
      cr_assert_eq(truncate(path, sb.st_size - 1), 0);
    } else { /* another key's entry under this name */
      char cmd[600];
      snprintf(cmd, sizeof cmd, "cp '%s' '%s'", opath, path);
      cr_assert_eq(system(cmd), 0);
    }
    loom_kcache_stats before = loom_kcache_stats_of(kc);
    cr_assert_not(loom_kcache_get(kc, key, strlen(key), &got, &len), "damage %d was not detected", damage);
    cr_assert_null(got);
    cr_assert_eq(loom_kcache_stats_of(kc).rejected, before.rejected + 1);
  }
  loom_kcache_put(kc, key, strlen(key), data, sizeof data); /* overwritten: sound again */
  cr_assert(loom_kcache_get(kc, key, strlen(key), &got, &len));
  free(got);
  free(path);
  free(opath);
  loom_kcache_close(kc);
  rm_rf(dir);
}

LOOM_TEST(kcache, least_recently_used_entries_go_first_at_the_size_bound) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  uint8_t blob[1000];
  memset(blob, 7, sizeof blob);
  /* five entries of ~1.1 KB; a bound of 3.5 KB keeps three */
  loom_kcache *kc = loom_kcache_open(dir, 3500, NULL);
  char keys[5][16];
  for (int i = 0; i < 5; i++) {
    snprintf(keys[i], sizeof keys[i], "key %d", i);
    loom_kcache_put(kc, keys[i], strlen(keys[i]), blob, sizeof blob);
    char *p = entry_file(dir, keys[i]);
    struct timespec t[2] = {{.tv_sec = 1000000 + i}, {.tv_sec = 1000000 + i}}; /* written in order 0..4 */
    cr_assert_eq(utimensat(AT_FDCWD, p, t, 0), 0);
    free(p);
  }
  uint8_t *got;
  size_t len;
  cr_assert(loom_kcache_get(kc, keys[0], strlen(keys[0]), &got, &len)); /* 0 used now: the most recent */
  free(got);
  loom_kcache_evict(kc);
  cr_assert_eq(loom_kcache_stats_of(kc).evicted, 2);
  bool want[5] = {true, false, false, true, true}; /* 1 and 2 were the least recently used */
  for (int i = 0; i < 5; i++) cr_assert_eq(loom_kcache_probe(kc, keys[i], strlen(keys[i])), want[i], "entry %d", i);
  loom_kcache_close(kc);
  rm_rf(dir);
}

/* Four processes write one key 200 times each while the parent reads it: every read is a
 * miss or the whole payload, never a part or a mixture. */
LOOM_TEST(kcache, concurrent_writers_of_one_key) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  const char *key = "the shared key";
  uint8_t payload[20000];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (uint8_t)(i * 31 + 7);
  pid_t kids[4];
  for (int k = 0; k < 4; k++) {
    kids[k] = fork();
    cr_assert_geq(kids[k], 0);
    if (kids[k] == 0) {
      loom_kcache *kc = loom_kcache_open(dir, 0, NULL);
      for (int r = 0; r < 200; r++) loom_kcache_put(kc, key, strlen(key), payload, sizeof payload);
      _exit(loom_kcache_stats_of(kc).stored == 200 ? 0 : 1);
    }
  }
  loom_kcache *kc = loom_kcache_open(dir, 0, NULL);
  int hits = 0;
  for (int r = 0; r < 400; r++) {
    uint8_t *got;
    size_t len;
    if (loom_kcache_get(kc, key, strlen(key), &got, &len)) {
      cr_assert(len == sizeof payload && !memcmp(got, payload, len), "read %d: a torn entry", r);
      hits++;
      free(got);
    }
  }
  for (int k = 0; k < 4; k++) {
    int ws;
    cr_assert_eq(waitpid(kids[k], &ws, 0), kids[k]);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "writer %d failed", k);
  }
  cr_assert_eq(loom_kcache_stats_of(kc).rejected, 0);
  uint8_t *got;
  size_t len;
  cr_assert(loom_kcache_get(kc, key, strlen(key), &got, &len));
  free(got);
  (void)hits;
  loom_kcache_close(kc);
  rm_rf(dir);
}

LOOM_TEST(kcache, a_directory_that_cannot_be_used_warns_and_stores_nothing) {
  char dir[64], file[128];
  tmpdir(dir, sizeof dir);
  snprintf(file, sizeof file, "%s/file", dir);
  FILE *f = fopen(file, "w");
  fclose(f);
  loom_strbuf warn;
  loom_strbuf_init(&warn, NULL);
  loom_kcache *kc = loom_kcache_open(file, 0, &warn);
  cr_assert_not(loom_kcache_usable(kc));
  cr_assert(strstr(loom_strbuf_cstr(&warn), "is not a directory"), "%s", loom_strbuf_cstr(&warn));
  loom_kcache_put(kc, "k", 1, (const uint8_t *)"x", 1);
  uint8_t *got;
  size_t len;
  cr_assert_not(loom_kcache_get(kc, "k", 1, &got, &len));
  cr_assert_eq(loom_kcache_stats_of(kc).stored, 0);
  loom_kcache_close(kc);
  loom_strbuf_free(&warn);
  rm_rf(dir);
}
