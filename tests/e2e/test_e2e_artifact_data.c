/* test_e2e_artifact_data.c — an AOT artifact keeps its weights out of the linked object, in a
 * page-aligned DATA region after it (vm/artifact.h): mapped read-only at open, each weight
 * checked by the XXH3-64 its executable records at its first use, the whole region by
 * XXH3-128 and BLAKE2b-256 when a key is trusted. A compiled model's
 * artifact has the region where its trailer says, gives the JIT's results, and every damage
 * to the weights or to their place is refused with a message naming the file. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "e2e/e2e_util.h"
#include "loomrt.h"
#include "vm/artifact.h"
#include "vm/exec.h"

#define MODEL "models/tiny_transformer/model.onnx" /* 0.4 MB of weights */

static void tmpdir(char *buf, size_t n) {
  snprintf(buf, n, "/tmp/loom-data-XXXXXX");
  cr_assert_not_null(mkdtemp(buf));
}

static void rm_rf(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static size_t file_size(const char *p) {
  struct stat sb;
  cr_assert_eq(stat(p, &sb), 0, "%s", p);
  return (size_t)sb.st_size;
}

static void copy_file(const char *from, const char *to, size_t n) {
  size_t len;
  char *b = e2e_slurp(from, &len);
  FILE *f = fopen(to, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(b, 1, n < len ? n : len, f), n < len ? n : len);
  fclose(f);
  free(b);
}

static void flip(const char *path, size_t at) {
  int fd = open(path, O_RDWR);
  cr_assert(fd >= 0);
  unsigned char c;
  cr_assert_eq(pread(fd, &c, 1, (off_t)at), 1);
  c ^= 0x20;
  cr_assert_eq(pwrite(fd, &c, 1, (off_t)at), 1);
  close(fd);
}

/* Compiles MODEL into dir/m.so (signed with `key` when not NULL); returns the compiled model. */
static loom_compiled *compile_to(const char *so, const loom_vm_artifact_seckey *key) {
  loom_compiled *c;
  loom_compile_options o = {.emit = LOOM_TARGET_EMIT_OBJECT};
  loom_status st = loom_compile_file(MODEL, &o, &c);
  if (!st) st = key ? loom_compiled_save_signed(c, so, key) : loom_compiled_save(c, so);
  cr_assert_null(st, "%s", loom_status_text(st, 1));
  return c;
}

static loom_vm_artifact_info check(const char *so, const loom_vm_artifact_pubkey *trust) {
  int fd = open(so, O_RDONLY);
  cr_assert(fd >= 0);
  loom_vm_artifact_info info;
  loom_status st = loom_vm_artifact_check_fd(fd, so, trust, &info);
  cr_assert_null(st, "%s", loom_status_text(st, 1));
  close(fd);
  return info;
}

/* One call of `main` on tokens (1, 7) through rt; the logits' sum. */
static double call_sum(loom_rt *rt) {
  int64_t shape[2] = {1, 7};
  loom_tensor *x;
  cr_assert_null(loom_rt_tensor_new(rt, LOOM_DTYPE_I64, 2, shape, &x));
  for (int i = 0; i < 7; i++) ((int64_t *)x->data)[i] = 3 * i + 1;
  loom_rt_outputs out;
  loom_status st = loom_rt_call(rt, "main", &x, 1, &out);
  cr_assert_null(st, "%s", loom_status_text(st, 1));
  const loom_tensor *y = (const loom_tensor *)out.items[0];
  double s = 0;
  for (size_t i = 0; i < loom_tensor_numel(y); i++) s += ((const float *)y->data)[i];
  loom_rt_outputs_free(&out);
  loom_tensor_release(x);
  return s;
}

LOOM_TEST(e2e_artifact_data, weights_are_a_mapped_region_after_the_object) {
  char dir[64], so[96];
  tmpdir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/m.so", dir);
  loom_compiled *c = compile_to(so, NULL);
  loom_vm_artifact_info info = check(so, NULL);
  const loom_vm_exec *e = loom_compiled_exec(c);
  cr_assert_gt(e->nconsts, 0);
  cr_assert_eq(info.data_offset % LOOM_VM_ARTIFACT_DATA_ALIGN, 0, "DATA at %llu", (unsigned long long)info.data_offset);
  cr_assert_eq(info.data_size, e->data_len, "the region holds the executable's constants");
  cr_assert_eq(info.data_offset + info.data_size + LOOM_VM_ARTIFACT_TRAILER_SIZE, file_size(so));
  /* the executable in the object has no DATA of its own; the runtime reads the region */
  cr_assert_lt(info.exec_size, info.data_size, "the weights are not in the linked executable");
  loom_rt *aot, *jit;
  cr_assert_null(loom_rt_open(so, NULL, &aot));
  cr_assert_null(loom_compiled_open(c, NULL, &jit));
  double a = call_sum(aot), j = call_sum(jit);
  cr_assert(a == j && isfinite(a), "artifact %.9g, JIT %.9g", a, j);
  loom_rt_close(jit);
  loom_rt_close(aot);
  loom_compiled_free(c);
  rm_rf(dir);
}

/* The status of one call of `main` on tokens (1, 7) through rt. */
static loom_status call_status(loom_rt *rt) {
  int64_t shape[2] = {1, 7};
  loom_tensor *x;
  cr_assert_null(loom_rt_tensor_new(rt, LOOM_DTYPE_I64, 2, shape, &x));
  for (int i = 0; i < 7; i++) ((int64_t *)x->data)[i] = 3 * i + 1;
  loom_rt_outputs out;
  loom_status st = loom_rt_call(rt, "main", &x, 1, &out);
  if (!st) loom_rt_outputs_free(&out);
  loom_tensor_release(x);
  return st;
}

/* A changed weight byte: opening reads no weight (the open stays fast for a 4 GB model), so
 * the artifact opens; the first call that uses the tensor is refused naming it, before any
 * kernel reads it, and so is every later call; with check_weights, the open itself. */
LOOM_TEST(e2e_artifact_data, damaged_weights_are_refused) {
  char dir[64], so[96], t[128];
  tmpdir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/m.so", dir);
  snprintf(t, sizeof t, "%s/t.so", dir);
  loom_compiled *c = compile_to(so, NULL);
  const loom_vm_exec *e = loom_compiled_exec(c);
  loom_vm_artifact_info info = check(so, NULL);
  size_t size = file_size(so);
  loom_rt *rt = NULL;
  /* a byte of the first, a middle and the last constant, at its start, middle and end */
  uint32_t which[] = {0, e->nconsts / 2, e->nconsts - 1};
  for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
    const loom_vm_const *k = &e->consts[which[i]];
    cr_assert_gt(k->nbytes, 0);
    const char *name = loom_vm_exec_str(e, k->name);
    uint64_t in[] = {0, k->nbytes / 2, k->nbytes - 1};
    uint64_t at = info.data_offset + k->offset + in[i];
    copy_file(so, t, size);
    flip(t, at);
    cr_assert_null(loom_rt_open(t, NULL, &rt), "opening hashes no weight");
    for (int call = 0; call < 2; call++) {
      loom_status st = call_status(rt);
      cr_assert_not_null(st, "a changed byte of constant %u '%s' must be refused (call %d)", which[i], name, call);
      const char *m = loom_status_text(st, 0);
      cr_assert(strstr(m, name) && strstr(m, "does not match its check"), "%s", m);
      loom_status_free(st);
    }
    loom_rt_close(rt);
    loom_rt_options o = {.check_weights = true};
    loom_status st = loom_rt_open(t, &o, &rt);
    cr_assert_not_null(st, "check_weights: constant %u '%s'", which[i], name);
    const char *m = loom_status_text(st, 0);
    cr_assert(strstr(m, name) && strstr(m, "does not match its check") && strstr(m, "t.so"), "%s", m);
    loom_status_free(st);
  }
  /* intact: every constant passes, with check_weights too, and calls give the same logits */
  loom_rt_options o = {.check_weights = true};
  cr_assert_null(loom_rt_open(so, &o, &rt));
  double first = call_sum(rt), again = call_sum(rt);
  cr_assert(first == again && isfinite(first));
  loom_rt_close(rt);
  loom_compiled_free(c);
  /* the padding before the region, the region's place or its check in the trailer: the content hash */
  size_t meta[] = {info.data_offset - 1, size - LOOM_VM_ARTIFACT_TRAILER_SIZE + 60, size - LOOM_VM_ARTIFACT_TRAILER_SIZE + 75,
                   size - LOOM_VM_ARTIFACT_TRAILER_SIZE + 100};
  for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) {
    copy_file(so, t, size);
    flip(t, meta[i]);
    loom_status st = loom_rt_open(t, NULL, &rt);
    cr_assert_not_null(st, "byte %zu", meta[i]);
    const char *m = loom_status_text(st, 0);
    cr_assert(strstr(m, "content hash mismatch") || strstr(m, "places the DATA region"), "byte %zu: %s", meta[i], m);
    loom_status_free(st);
  }
  /* truncated inside the region */
  copy_file(so, t, info.data_offset + info.data_size / 2);
  loom_status st = loom_rt_open(t, NULL, &rt);
  cr_assert_not_null(st);
  cr_assert(strstr(loom_status_text(st, 0), "without a Loom artifact trailer"), "%s", loom_status_text(st, 0));
  loom_status_free(st);
  rm_rf(dir);
}

/* A signed artifact binds its weights by BLAKE2b: with a trusted key a region whose XXH3 check
 * still matches (a collision an attacker could make) but whose hash does not is refused. */
LOOM_TEST(e2e_artifact_data, a_trusted_key_checks_the_weights_hash) {
  char dir[64], so[96], key[96], pub[112];
  tmpdir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/m.so", dir);
  snprintf(key, sizeof key, "%s/k", dir);
  snprintf(pub, sizeof pub, "%s/k.pub", dir);
  cr_assert_null(loom_vm_artifact_keygen(key));
  loom_vm_artifact_seckey sk;
  loom_vm_artifact_pubkey pk;
  cr_assert_null(loom_vm_artifact_seckey_read(key, &sk));
  cr_assert_null(loom_vm_artifact_pubkey_read(pub, &pk));
  loom_compiled_free(compile_to(so, &sk));
  loom_rt *rt;
  loom_rt_options o = {.trust = &pk};
  cr_assert_null(loom_rt_open(so, &o, &rt));
  loom_rt_close(rt);
  loom_vm_artifact_info info = check(so, &pk);
  int fd = open(so, O_RDONLY);
  const uint8_t *data;
  cr_assert_null(loom_vm_artifact_map_data(fd, so, &info, true, &data));
  loom_vm_artifact_unmap_data(data, info.data_size);
  info.data_hash[7] ^= 1; /* as if the region were another one with the same XXH3 */
  loom_status st = loom_vm_artifact_map_data(fd, so, &info, true, &data);
  cr_assert_not_null(st);
  cr_assert(strstr(loom_status_text(st, 0), "does not match its signed hash"), "%s", loom_status_text(st, 0));
  loom_status_free(st);
  cr_assert_null(loom_vm_artifact_map_data(fd, so, &info, false, &data), "without a key only the check is made");
  loom_vm_artifact_unmap_data(data, info.data_size);
  close(fd);
  rm_rf(dir);
}

/* An executable written without its DATA loads only with the region given back. */
LOOM_TEST(e2e_artifact_data, an_executable_without_its_data_is_refused_alone) {
  loom_compiled *c;
  loom_compile_options o = {.emit = LOOM_TARGET_EMIT_OBJECT};
  loom_status st = loom_compile_file(MODEL, &o, &c);
  cr_assert_null(st, "%s", loom_status_text(st, 1));
  const loom_vm_exec *e = loom_compiled_exec(c);
  uint8_t *b;
  size_t n;
  cr_assert_null(loom_vm_exec_write_no_data(e, NULL, &b, &n));
  loom_vm_exec *x;
  st = loom_vm_exec_load(NULL, b, n, NULL, NULL, &x);
  cr_assert_not_null(st);
  cr_assert(strstr(loom_status_text(st, 0), "lie outside DATA (0 bytes)"), "%s", loom_status_text(st, 0));
  loom_status_free(st);
  /* given back: the same constants */
  uint8_t *full;
  size_t fn;
  cr_assert_null(loom_vm_exec_write(e, NULL, &full, &fn));
  loom_vm_exec *y;
  cr_assert_null(loom_vm_exec_load(NULL, full, fn, NULL, NULL, &y));
  cr_assert_null(loom_vm_exec_load_ext(NULL, b, n, y->data, y->data_len, NULL, NULL, &x));
  for (uint32_t i = 0; i < x->nconsts; i++)
    cr_assert(!memcmp(loom_vm_exec_const_bytes(x, i), loom_vm_exec_const_bytes(e, i), x->consts[i].nbytes), "constant %u", i);
  loom_vm_exec_free(x);
  /* a DATA section of its own and a region too: refused */
  st = loom_vm_exec_load_ext(NULL, full, fn, y->data, y->data_len, NULL, NULL, &x);
  loom_vm_exec_free(x);
  cr_assert_not_null(st);
  loom_status_free(st);
  loom_vm_exec_free(y);
  loom_free(NULL, full, fn);
  loom_free(NULL, b, n);
  loom_compiled_free(c);
}
