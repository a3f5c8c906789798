/* test_e2e_cache.c — the kernel cache through `loom compile` / `loom inspect` (docs/codegen.md,
 * "Kernel cache"): a warm compile runs no kernel through LLVM and makes the same bytes as a
 * cold one and as --no-cache; a corrupted or truncated entry is ignored and rewritten; two
 * processes compiling into one cache both succeed; a bad cache directory only warns; one
 * changed layer recompiles one kernel; packed weights (graph/wcache.h) come from the same
 * directory on a warm compile, a corrupt one is ignored, and the artifacts stay the same bytes.
 * Every test uses its own temporary cache directory. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "e2e/e2e_util.h"
#include "onnx/pb_writer.h"

static void tmpdir(char *buf, size_t n) {
  snprintf(buf, n, "/tmp/loom-kc-XXXXXX");
  cr_assert_not_null(mkdtemp(buf));
}

static void rm_rf(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static void same_bytes(const char *a, const char *b) {
  size_t la, lb;
  char *x = e2e_slurp(a, &la), *y = e2e_slurp(b, &lb);
  cr_assert(la == lb && !memcmp(x, y, la), "%s (%zu bytes) and %s (%zu bytes) differ", a, la, b, lb);
  free(x);
  free(y);
}

/* `loom compile models/mlp.loom --time` into out with the cache at dir (NULL: --no-cache). */
static loom_test_proc compile(const char *dir, const char *out) {
  if (!dir) return loom_test_run("%s compile models/mlp.loom -o %s --time --no-cache", loom_test_loom_bin(), out);
  return loom_test_run("LOOM_CACHE_DIR=%s %s compile models/mlp.loom -o %s --time", dir, loom_test_loom_bin(), out);
}

static void expect_cache_line(loom_test_proc *p, const char *want) {
  cr_assert_eq(p->exit_code, 0, "exit %d\nstdout: %s\nstderr: %s", p->exit_code, p->out, p->err);
  cr_assert(strstr(p->out, want), "stdout lacks '%s':\n%s\nstderr: %s", want, p->out, p->err);
}

/* The entries of the cache at dir, into names (up to cap); returns the count. */
static int entries(const char *dir, char names[][300], int cap) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, "k-", 2) && n < cap) snprintf(names[n++], 300, "%s/%s", dir, e->d_name);
  closedir(d);
  return n;
}

LOOM_TEST(e2e_cache, cold_warm_and_no_cache_compiles_make_identical_artifacts) {
  char dir[64], cache[96], a[96], b[96], c[96];
  tmpdir(dir, sizeof dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(a, sizeof a, "%s/cold.so", dir);
  snprintf(b, sizeof b, "%s/warm.so", dir);
  snprintf(c, sizeof c, "%s/none.so", dir);
  loom_test_proc p = compile(cache, a);
  expect_cache_line(&p, "kernel cache: 3 kernels, 3 distinct, 0 cache hits, 3 misses compiled by LLVM, 0 bad entries ignored");
  loom_test_proc_free(&p);
  char names[16][300];
  cr_assert_eq(entries(cache, names, 16), 3, "one entry per distinct kernel");
  p = compile(cache, b);
  expect_cache_line(&p, "kernel cache: 3 kernels, 3 distinct, 3 cache hits, 0 misses compiled by LLVM, 0 bad entries ignored");
  loom_test_proc_free(&p);
  p = compile(NULL, c);
  expect_cache_line(&p, "3 misses compiled by LLVM, 0 bad entries ignored (--no-cache)");
  loom_test_proc_free(&p);
  same_bytes(a, b);
  same_bytes(a, c);
  /* and compiled on two threads (LOOM_COMPILE_THREADS: the misses over workers) */
  p = loom_test_run("LOOM_COMPILE_THREADS=2 %s compile models/mlp.loom -o %s --time --no-cache", loom_test_loom_bin(), c);
  expect_cache_line(&p, "3 misses compiled by LLVM");
  loom_test_proc_free(&p);
  same_bytes(a, c);
  /* the warm artifact runs */
  p = loom_test_run("%s %s --bind b=5", loom_test_loom_run_bin(), b);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "output 0: f32(5, 10)"), "%s", p.out);
  loom_test_proc_free(&p);
  /* inspect sees the entries */
  p = loom_test_run("LOOM_CACHE_DIR=%s %s inspect models/mlp.loom --kernels", cache, loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "3 kernels, 3 distinct, 3 cache hits, 0 misses"), "%s", p.out);
  loom_test_proc_free(&p);
  rm_rf(dir);
}

/* Every entry damaged one way (a flipped byte in the payload, in the key, a truncation, the
 * entry of another key under this name): each is detected, ignored (recompiled) and rewritten,
 * and the artifact is still the same bytes. */
LOOM_TEST(e2e_cache, corrupt_truncated_and_mismatched_entries_are_ignored_and_rewritten) {
  char dir[64], cache[96], a[96], b[96], c[96];
  tmpdir(dir, sizeof dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(a, sizeof a, "%s/a.so", dir);
  snprintf(b, sizeof b, "%s/b.so", dir);
  snprintf(c, sizeof c, "%s/c.so", dir);
  loom_test_proc p = compile(cache, a);
  expect_cache_line(&p, "0 cache hits, 3 misses");
  loom_test_proc_free(&p);
  char names[16][300];
  cr_assert_eq(entries(cache, names, 16), 3);
  size_t len0, len1, len2;
  char *e0 = e2e_slurp(names[0], &len0), *e1 = e2e_slurp(names[1], &len1), *e2 = e2e_slurp(names[2], &len2);
  /* 0: a byte of the payload (its last) flipped; 1: truncated by one byte; 2: entry 1's bytes under 2's name */
  e0[len0 - 1] ^= 0x40;
  FILE *f = fopen(names[0], "wb");
  cr_assert_eq(fwrite(e0, 1, len0, f), len0);
  fclose(f);
  cr_assert_eq(truncate(names[1], (off_t)len1 - 1), 0);
  f = fopen(names[2], "wb");
  cr_assert_eq(fwrite(e1, 1, len1, f), len1);
  fclose(f);
  p = compile(cache, b);
  expect_cache_line(&p, "0 cache hits, 3 misses compiled by LLVM, 3 bad entries ignored");
  loom_test_proc_free(&p);
  same_bytes(a, b);
  /* rewritten: warm again */
  p = compile(cache, c);
  expect_cache_line(&p, "3 cache hits, 0 misses compiled by LLVM, 0 bad entries ignored");
  loom_test_proc_free(&p);
  same_bytes(a, c);
  free(e0);
  free(e1);
  free(e2);
  rm_rf(dir);
}

/* Two processes compiling the same module into one empty cache (both write every key) and
 * two more reading it while a third writes: all succeed with the same bytes. */
LOOM_TEST(e2e_cache, concurrent_compiles_into_one_cache) {
  char dir[64], cache[96];
  tmpdir(dir, sizeof dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  for (int round = 0; round < 2; round++) {
    loom_test_proc p = loom_test_run("export LOOM_CACHE_DIR=%s; L=%s; D=%s/r%d; $L compile models/mlp.loom -o $D-1.so & a=$!; "
                                     "$L compile models/mlp.loom -o $D-2.so & b=$!; $L compile models/mlp.loom -o $D-3.so & c=$!; "
                                     "wait $a && wait $b && wait $c",
                                     cache, loom_test_loom_bin(), dir, round);
    cr_assert_eq(p.exit_code, 0, "round %d: %s\n%s", round, p.out, p.err);
    loom_test_proc_free(&p);
    for (int i = 1; i <= 3; i++) {
      char x[128], y[128];
      snprintf(x, sizeof x, "%s/r0-1.so", dir);
      snprintf(y, sizeof y, "%s/r%d-%d.so", dir, round, i);
      same_bytes(x, y);
    }
  }
  char names[16][300];
  cr_assert_eq(entries(cache, names, 16), 3, "no temporary files left, one entry per kernel");
  DIR *d = opendir(cache);
  struct dirent *e;
  while ((e = readdir(d))) cr_assert(strncmp(e->d_name, "tmp-", 4), "a temporary file is left: %s", e->d_name);
  closedir(d);
  rm_rf(dir);
}

/* A cache directory that cannot be used (a file in its place, a directory without write
 * permission) is a warning: the compile goes on without the cache. */
LOOM_TEST(e2e_cache, a_bad_cache_directory_warns_and_compiles_without_it) {
  char dir[64], file[96], out[96];
  tmpdir(dir, sizeof dir);
  snprintf(file, sizeof file, "%s/not-a-dir", dir);
  snprintf(out, sizeof out, "%s/m.so", dir);
  FILE *f = fopen(file, "w");
  fputs("x", f);
  fclose(f);
  loom_test_proc p = compile(file, out);
  expect_cache_line(&p, "0 cache hits, 3 misses compiled by LLVM");
  cr_assert(strstr(p.err, "warning: kernel cache: '") && strstr(p.err, "compiling without it"), "%s", p.err);
  loom_test_proc_free(&p);
  char sub[128];
  snprintf(sub, sizeof sub, "%s/under-a-file/cache", file);
  p = compile(sub, out);
  expect_cache_line(&p, "3 misses compiled by LLVM");
  cr_assert(strstr(p.err, "compiling without it"), "%s", p.err);
  loom_test_proc_free(&p);
  if (geteuid() != 0) { /* root writes anywhere */
    char ro[128];
    snprintf(ro, sizeof ro, "%s/ro", dir);
    cr_assert_eq(mkdir(ro, 0555), 0);
    p = compile(ro, out);
    expect_cache_line(&p, "3 misses compiled by LLVM");
    cr_assert(strstr(p.err, "cannot be written"), "%s", p.err);
    loom_test_proc_free(&p);
  }
  rm_rf(dir);
}

/* Three identical layers are one kernel compiled once; changing the last layer's activation
 * compiles only that layer's kernel, the others come from the cache (issue 23, item 3). */
LOOM_TEST(e2e_cache, changing_one_layer_recompiles_only_its_kernel) {
  static const char *module =
      "fn @main(x: Tensor[(b, 64), f32], w1: Tensor[(64, 64), f32], b1: Tensor[(64,), f32],\n"
      "         w2: Tensor[(64, 64), f32], b2: Tensor[(64,), f32], w3: Tensor[(64, 64), f32], b3: Tensor[(64,), f32])\n"
      "         -> Tensor[(b, 64), f32] {\n"
      "  dataflow {\n"
      "    h1 = linear(x, w1, b1)\n    a1 = gelu(h1)\n"
      "    h2 = linear(a1, w2, b2)\n    a2 = gelu(h2)\n"
      "    h3 = linear(a2, w3, b3)\n    a3 = %s(h3)\n"
      "    output a3\n  }\n  return a3\n}\n";
  char dir[64], cache[96], src[2][96], so[96];
  tmpdir(dir, sizeof dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(so, sizeof so, "%s/m.so", dir);
  for (int k = 0; k < 2; k++) {
    snprintf(src[k], sizeof src[k], "%s/layers%d.loom", dir, k);
    FILE *f = fopen(src[k], "w");
    fprintf(f, module, k ? "tanh" : "gelu");
    fclose(f);
  }
  static const char *want[3] = {
      "kernel cache: 3 kernels, 1 distinct, 0 cache hits, 1 misses compiled by LLVM",
      "kernel cache: 3 kernels, 1 distinct, 1 cache hits, 0 misses compiled by LLVM",
      "kernel cache: 3 kernels, 2 distinct, 1 cache hits, 1 misses compiled by LLVM",
  };
  for (int step = 0; step < 3; step++) {
    loom_test_proc p = loom_test_run("LOOM_CACHE_DIR=%s %s compile %s -o %s --time", cache, loom_test_loom_bin(),
                                     src[step == 2], so);
    expect_cache_line(&p, want[step]);
    loom_test_proc_free(&p);
  }
  rm_rf(dir);
}

/* An ONNX model y = (x @ W) @ V with x f32[N, 64], W f32[64, 300], V f32[300, 96] constants: both
 * packed by the pack pass (77,824 and 116,736 bytes of panels, over the packed-weight cache's
 * 64 KiB floor; 300 is no multiple of the panel), their raw_data (76,800 and 115,200 bytes)
 * read in place from the file. */
static void write_two_matmuls_salted(const char *path, size_t salt) {
  pb g = {0};
  static const int dims[2][2] = {{64, 300}, {300, 96}};
  static const char *const names[2] = {"W", "V"};
  for (int k = 0; k < 2; k++) {
    size_t n = (size_t)(dims[k][0] * dims[k][1]);
    float *v = malloc(n * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) v[i] = (float)((i * 37 + (size_t)k + salt) % 101) / 101.0f - 0.5f;
    pb t = {0};
    pb_int(&t, 1, dims[k][0]), pb_int(&t, 1, dims[k][1]), pb_int(&t, 2, 1), pb_str(&t, 8, names[k]);
    pb_bytes(&t, 9, v, n * sizeof *v);
    free(v);
    pb_msg(&g, 5, &t);
  }
  const char *in1[] = {"x", "W", NULL}, *out1[] = {"h", NULL}, *in2[] = {"h", "V", NULL}, *out2[] = {"y", NULL};
  pb_node(&g, "MatMul", "mm0", in1, out1, NULL);
  pb_node(&g, "MatMul", "mm1", in2, out2, NULL);
  pb_str(&g, 2, "g");
  const char *xd[] = {"N", "64"}, *yd[] = {"N", "96"};
  pb_value_info(&g, 11, "x", 1, 2, xd);
  pb_value_info(&g, 12, "y", 1, 2, yd);
  pb model = {0};
  pb_model(&model, 13, &g);
  cr_assert(pb_write_file(&model, path));
  pb_free(&model);
}

static void write_two_matmuls(const char *path) { write_two_matmuls_salted(path, 0); }

static loom_test_proc compile_onnx(const char *model, const char *cache, const char *out) {
  if (!cache) return loom_test_run("%s compile %s -o %s --time --no-cache", loom_test_loom_bin(), model, out);
  return loom_test_run("LOOM_CACHE_DIR=%s %s compile %s -o %s --time", cache, loom_test_loom_bin(), model, out);
}

/* Cold (both packed and stored), warm (both mapped), --no-cache, and after one entry's last byte
 * is flipped (ignored, packed and stored again): four artifacts of the same bytes, which run. */
LOOM_TEST(e2e_cache, packed_weights_come_from_the_cache_and_change_no_byte) {
  char dir[64], cache[96], model[96], a[96], b[96], c[96];
  tmpdir(dir, sizeof dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(model, sizeof model, "%s/two.onnx", dir);
  snprintf(a, sizeof a, "%s/a.so", dir);
  snprintf(b, sizeof b, "%s/b.so", dir);
  snprintf(c, sizeof c, "%s/c.so", dir);
  write_two_matmuls(model);
  loom_test_proc p = compile_onnx(model, cache, a);
  expect_cache_line(&p, "packed-weight cache: 0 hits (0.0 MB mapped), 2 stored, 0 bad entries ignored");
  loom_test_proc_free(&p);
  p = compile_onnx(model, cache, b);
  expect_cache_line(&p, "packed-weight cache: 2 hits (0.2 MB mapped), 0 stored, 0 bad entries ignored");
  loom_test_proc_free(&p);
  same_bytes(a, b);
  p = compile_onnx(model, NULL, c);
  expect_cache_line(&p, "packed-weight cache: 0 hits (0.0 MB mapped), 0 stored, 0 bad entries ignored (--no-cache)");
  loom_test_proc_free(&p);
  same_bytes(a, c);
  /* one entry damaged: its last payload byte flipped */
  DIR *d = opendir(cache);
  cr_assert_not_null(d);
  struct dirent *e;
  char victim[300] = "";
  int nw = 0;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, "w-", 2)) nw++, snprintf(victim, sizeof victim, "%s/%s", cache, e->d_name);
  closedir(d);
  cr_assert_eq(nw, 2, "one entry per packed weight");
  size_t len;
  char *bytes = e2e_slurp(victim, &len);
  bytes[len - 1] ^= 0x10;
  FILE *f = fopen(victim, "wb");
  cr_assert_eq(fwrite(bytes, 1, len, f), len);
  fclose(f);
  free(bytes);
  p = compile_onnx(model, cache, b);
  expect_cache_line(&p, "packed-weight cache: 1 hits (0.1 MB mapped), 1 stored, 1 bad entries ignored");
  loom_test_proc_free(&p);
  same_bytes(a, b);
  p = compile_onnx(model, cache, b);
  expect_cache_line(&p, "packed-weight cache: 2 hits (0.2 MB mapped), 0 stored, 0 bad entries ignored");
  loom_test_proc_free(&p);
  same_bytes(a, b);
  p = loom_test_run("%s %s --bind N=7", loom_test_loom_run_bin(), b);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "output 0: f32(7, 96)"), "%s", p.out);
  loom_test_proc_free(&p);
  rm_rf(dir);
}

/* Sets path's modification time to an old date (2001): a file whose times are that old is
 * settled (base/file.h), so a compile remembers its weights' hashes under its identity. */
static void backdate(const char *path) {
  struct timespec ts[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
  cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* The weights' hashes are found by the model file's identity on a warm compile (not read again);
 * a model rewritten in place with other weights of the same size and given back the same
 * modification time (its status-change time differs), or replaced by rename with the same times
 * (another inode), is hashed again and never served the old packed weights: every artifact is
 * the bytes of a --no-cache compile of the file as it is then. `loom cache verify` passes the
 * cache, then names a damaged entry and removes it with --remove. */
LOOM_TEST(e2e_cache, a_changed_model_of_the_same_size_is_not_served_the_old_weights) {
  char dir[64], cache[96], model[96], tmp[96], a[96], b[96], c[96];
  tmpdir(dir, sizeof dir);
  snprintf(cache, sizeof cache, "%s/cache", dir);
  snprintf(model, sizeof model, "%s/two.onnx", dir);
  snprintf(tmp, sizeof tmp, "%s/two.onnx.new", dir);
  snprintf(a, sizeof a, "%s/a.so", dir);
  snprintf(b, sizeof b, "%s/b.so", dir);
  snprintf(c, sizeof c, "%s/c.so", dir);
  write_two_matmuls_salted(model, 0);
  backdate(model);
  loom_test_proc p = compile_onnx(model, cache, a);
  expect_cache_line(&p, "packed weights' sources: 0 found by file identity, 2 hashed from their bytes, 2 remembered");
  loom_test_proc_free(&p);
  p = compile_onnx(model, cache, b);
  expect_cache_line(&p, "packed-weight cache: 2 hits (0.2 MB mapped), 0 stored, 0 bad entries ignored");
  expect_cache_line(&p, "packed weights' sources: 2 found by file identity, 0 hashed from their bytes, 0 remembered");
  loom_test_proc_free(&p);
  same_bytes(a, b);
  struct stat before, after;
  cr_assert_eq(stat(model, &before), 0);
  usleep(20000); /* past the coarse clock's tick: the rewrite's status-change time differs */
  /* rewritten in place (same inode, same size), the same modification time given back */
  write_two_matmuls_salted(model, 1); /* fopen "wb": truncates and rewrites the same inode */
  backdate(model);
  cr_assert_eq(stat(model, &after), 0);
  cr_assert(after.st_ino == before.st_ino && after.st_size == before.st_size &&
            after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
            "the rewrite keeps inode, size and modification time");
  p = compile_onnx(model, cache, b);
  expect_cache_line(&p, "packed weights' sources: 0 found by file identity, 2 hashed from their bytes, 2 remembered");
  expect_cache_line(&p, "packed-weight cache: 0 hits (0.0 MB mapped), 2 stored");
  loom_test_proc_free(&p);
  p = compile_onnx(model, NULL, c);
  expect_cache_line(&p, "packed-weight cache: 0 hits");
  loom_test_proc_free(&p);
  same_bytes(b, c);
  size_t la, lb;
  char *ba = e2e_slurp(a, &la), *bb = e2e_slurp(b, &lb);
  cr_assert(la != lb || memcmp(ba, bb, la), "the new weights made another artifact");
  free(ba), free(bb);
  /* replaced by rename: another inode, the same size and times */
  write_two_matmuls_salted(tmp, 2);
  backdate(tmp);
  cr_assert_eq(rename(tmp, model), 0);
  p = compile_onnx(model, cache, b);
  expect_cache_line(&p, "packed weights' sources: 0 found by file identity, 2 hashed from their bytes, 2 remembered");
  loom_test_proc_free(&p);
  p = compile_onnx(model, NULL, c);
  loom_test_proc_free(&p);
  same_bytes(b, c);
  /* the full check: sound, then one damaged entry named, then removed */
  p = loom_test_run("%s cache verify %s", loom_test_loom_bin(), cache);
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  cr_assert(strstr(p.out, "12 packed-weight and source-hash files checked, 0 bad"), "%s", p.out);
  loom_test_proc_free(&p);
  DIR *d = opendir(cache);
  cr_assert_not_null(d);
  struct dirent *e;
  char victim[300] = "";
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, "w-", 2)) snprintf(victim, sizeof victim, "%s/%s", cache, e->d_name);
  closedir(d);
  size_t len;
  char *bytes = e2e_slurp(victim, &len);
  bytes[len - 5000] ^= 0x10; /* in the payload's last page but one */
  FILE *f = fopen(victim, "wb");
  cr_assert_eq(fwrite(bytes, 1, len, f), len);
  fclose(f);
  free(bytes);
  p = loom_test_run("%s cache verify %s", loom_test_loom_bin(), cache);
  cr_assert_eq(p.exit_code, 1, "%s%s", p.out, p.err);
  cr_assert(strstr(p.out, "the payload's XXH3-128 does not match"), "%s", p.out);
  cr_assert(strstr(p.out, strrchr(victim, '/') + 1), "the entry named: %s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s cache verify %s --remove", loom_test_loom_bin(), cache);
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  cr_assert(strstr(p.out, "(removed)"), "%s", p.out);
  loom_test_proc_free(&p);
  cr_assert(access(victim, F_OK) != 0, "removed");
  p = loom_test_run("%s cache verify %s/none", loom_test_loom_bin(), dir);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "cannot list the cache directory"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s cache check %s", loom_test_loom_bin(), cache);
  cr_assert_eq(p.exit_code, 2);
  cr_assert(strstr(p.err, "unknown action 'check'"), "%s", p.err);
  loom_test_proc_free(&p);
  rm_rf(dir);
}
