/* test_artifact.c — artifacts are checked before any of their code runs (vm/artifact.h):
 * truncated, extended, tampered, unsealed and hostile shared objects give clean errors; a
 * constructor of an unchecked file never runs; signing and --trust. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aot_util.h"
#include "loomrt.h"
#include "vm_fixture.h"

/* A constructor that writes `marker`: it must never run for a file that fails the checks. */
static char *constructor_src(const char *marker) {
  char *s = malloc(512);
  snprintf(s, 512,
           "#include <stdio.h>\n"
           "__attribute__((constructor)) static void evil(void) {\n"
           "  FILE *f = fopen(\"%s\", \"w\"); if (f) { fputs(\"ran\", f); fclose(f); } }\n",
           marker);
  return s;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

int loom_fuzz_artifact_one(const uint8_t *data, size_t size); /* tests/fuzz/fuzz_artifact.c */

LOOM_TEST(artifact, truncated_artifacts_are_refused_without_loading) {
  char *dir = aot_make_dir(), so[512], cut[600];
  aot_build_artifact(dir, "add", NULL, AOT_SEAL, so, sizeof so);
  size_t size = aot_file_size(so);
  snprintf(cut, sizeof cut, "%s/cut.so", dir);
  size_t lens[] = {0, 1, 4, 63, 64, 200, size / 3, size / 2, size - LOOM_VM_ARTIFACT_TRAILER_SIZE - 1,
                   size - LOOM_VM_ARTIFACT_TRAILER_SIZE, size - LOOM_VM_ARTIFACT_TRAILER_SIZE + 1, size - 8, size - 1};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(lens); i++) {
    aot_copy_prefix(so, cut, lens[i]);
    loom_rt *rt = NULL;
    loom_status st = loom_rt_open(cut, NULL, &rt);
    cr_assert(st != LOOM_OK, "a %zu-byte prefix of a %zu-byte artifact opened", lens[i], size);
    const char *t = loom_status_text(st, 0);
    cr_assert(strstr(t, "Loom artifact trailer") || strstr(t, "neither a Loom executable"), "%zu bytes: %s", lens[i], t);
    loom_status_free(st);
  }
  /* loom-run and loom disasm: exit 1 with the message, not a signal inside dlopen */
  aot_copy_prefix(so, cut, size / 2);
  loom_test_proc p = loom_test_run("%s %s --bind n=2", loom_test_loom_run_bin(), cut);
  cr_assert_eq(p.exit_code, 1, "loom-run exited %d: %s", p.exit_code, p.err);
  cr_assert(strstr(p.err, "ends without a Loom artifact trailer: truncated") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s disasm %s", loom_test_loom_bin(), cut);
  cr_assert_eq(p.exit_code, 1, "loom disasm exited %d: %s", p.exit_code, p.err);
  loom_test_proc_free(&p);
  /* one byte appended: the trailer is no longer at the end */
  aot_copy_prefix(so, cut, size);
  FILE *f = fopen(cut, "ab");
  fputc(0, f);
  fclose(f);
  loom_rt *rt = NULL;
  FAILS_WITH(loom_rt_open(cut, NULL, &rt), "without a Loom artifact trailer");
  aot_remove_dir(dir);
}

LOOM_TEST(artifact, a_constructor_of_an_unsealed_or_untrusted_file_never_runs) {
  char *dir = aot_make_dir(), so[512], marker[600];
  snprintf(marker, sizeof marker, "%s/constructor-ran", dir);
  char *src = constructor_src(marker);
  /* an ELF that is not a sealed artifact: refused before dlopen */
  aot_build_artifact(dir, "evil", src, AOT_NO_SEAL, so, sizeof so);
  loom_test_proc p = loom_test_run("%s %s --list", loom_test_loom_run_bin(), so);
  cr_assert_eq(p.exit_code, 1, "%s", p.err);
  cr_assert(strstr(p.err, "without a Loom artifact trailer") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s disasm %s", loom_test_loom_bin(), so);
  cr_assert_eq(p.exit_code, 1, "%s", p.err);
  loom_test_proc_free(&p);
  loom_rt *rt = NULL;
  FAILS_WITH(loom_rt_open(so, NULL, &rt), "without a Loom artifact trailer");
  cr_assert(!exists(marker), "the constructor ran before the artifact was refused");
  /* sealed but not signed: with a trusted key it is refused before it runs */
  char key[600], pub[600];
  snprintf(key, sizeof key, "%s/key", dir);
  snprintf(pub, sizeof pub, "%s/key.pub", dir);
  OK(loom_vm_artifact_keygen(key));
  aot_build_artifact(dir, "evil2", src, AOT_SEAL, so, sizeof so);
  p = loom_test_run("%s %s --list --trust %s", loom_test_loom_run_bin(), so, pub);
  cr_assert_eq(p.exit_code, 1, "%s", p.err);
  cr_assert(strstr(p.err, "is not signed, and a trusted key") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  cr_assert(!exists(marker), "the constructor of an unsigned artifact ran under --trust");
  /* the trust model's limit, stated in docs/vm.md: without --trust an intact artifact is
   * native code that runs, constructors included */
  p = loom_test_run("%s %s --list", loom_test_loom_run_bin(), so);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
  cr_assert(exists(marker));
  free(src);
  aot_remove_dir(dir);
}

LOOM_TEST(artifact, signed_artifacts_open_only_with_their_key) {
  char *dir = aot_make_dir(), so[512], key[600], pub[600], key2[600], pub2[600];
  snprintf(key, sizeof key, "%s/k", dir);
  snprintf(pub, sizeof pub, "%s/k.pub", dir);
  snprintf(key2, sizeof key2, "%s/other", dir);
  snprintf(pub2, sizeof pub2, "%s/other.pub", dir);
  OK(loom_vm_artifact_keygen(key));
  OK(loom_vm_artifact_keygen(key2));
  FAILS_WITH(loom_vm_artifact_keygen(key), "cannot create");
  struct stat sb;
  cr_assert_eq(stat(key, &sb), 0);
  cr_assert_eq(sb.st_mode & 0777, 0600, "the secret key is private");
  loom_vm_artifact_seckey sk;
  loom_vm_artifact_pubkey pk, pk2;
  OK(loom_vm_artifact_seckey_read(key, &sk));
  OK(loom_vm_artifact_pubkey_read(pub, &pk));
  OK(loom_vm_artifact_pubkey_read(pub2, &pk2));
  FAILS_WITH(loom_vm_artifact_pubkey_read(key, &pk2), "is not a public key file");
  FAILS_WITH(loom_vm_artifact_seckey_read(pub, &sk), "is not a secret key file");
  aot_build_artifact_signed(dir, "signed", NULL, AOT_SEAL, &sk, so, sizeof so);
  loom_rt *rt;
  loom_rt_options o = {.trust = &pk};
  OK(loom_rt_open(so, &o, &rt));
  loom_rt_close(rt);
  OK(loom_rt_open(so, NULL, &rt)); /* intact: opens without a key too */
  loom_rt_close(rt);
  o.trust = &pk2;
  FAILS_WITH(loom_rt_open(so, &o, &rt), "not by the trusted key");
  /* a plain executable carries no signature */
  char exe[600];
  snprintf(exe, sizeof exe, "%s/signed.loomexe", dir);
  FAILS_WITH(loom_rt_open(exe, &o, &rt), "plain executable file, which carries no signature");
  /* loom-run --trust */
  loom_test_proc p = loom_test_run("%s %s --bind n=2 --trust %s", loom_test_loom_run_bin(), so, pub);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s %s --bind n=2 --trust %s", loom_test_loom_run_bin(), so, pub2);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "not by the trusted key") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  /* a byte changed anywhere: the hash; the signature changed: the signature */
  size_t size = aot_file_size(so);
  size_t where[] = {9, size / 2, size - LOOM_VM_ARTIFACT_TRAILER_SIZE - 8, size - LOOM_VM_ARTIFACT_TRAILER_SIZE + 50 /* key id */};
  char t[600];
  snprintf(t, sizeof t, "%s/t.so", dir);
  for (size_t i = 0; i < LOOM_ARRAY_LEN(where); i++) {
    aot_copy_prefix(so, t, size);
    aot_flip_byte(t, where[i], 0x10);
    FAILS_WITH(loom_rt_open(t, NULL, &rt), "content hash mismatch");
  }
  aot_copy_prefix(so, t, size);
  aot_flip_byte(t, size - LOOM_VM_ARTIFACT_TRAILER_SIZE + 160, 0x01); /* inside the signature (152..216) */
  o.trust = &pk;
  FAILS_WITH(loom_rt_open(t, &o, &rt), "the signature does not verify with the trusted key");
  OK(loom_rt_open(t, NULL, &rt)); /* the contents are intact: without a key it opens */
  loom_rt_close(rt);
  memset(&sk, 0, sizeof sk);
  aot_remove_dir(dir);
}

LOOM_TEST(artifact, elf_headers_are_checked) {
  char *dir = aot_make_dir(), so[512], t[600];
  aot_build_artifact(dir, "raw", NULL, AOT_NO_SEAL, so, sizeof so);
  snprintf(t, sizeof t, "%s/t.so", dir);
  loom_vm_exec *e = fixture_add_exec();
  uint8_t *bytes;
  size_t len;
  OK(loom_vm_exec_write(e, NULL, &bytes, &len));
  struct {
    size_t at;
    unsigned char mask;
    const char *msg;
  } cases[] = {
      {0, 0x01, "not an ELF file"},
      {4, 0x03, "ELF class"},
      {5, 0x03, "data encoding"},
      {16, 0x01, "ELF type"},
      {18, 0x01, "ELF machine"},
      {0x20 + 7, 0x40, "ELF program headers"}, /* e_phoff far beyond the file */
      {0x28 + 7, 0x40, "ELF section headers"}, /* e_shoff */
  };
  size_t size = aot_file_size(so);
  for (size_t i = 0; i < LOOM_ARRAY_LEN(cases); i++) {
    aot_copy_prefix(so, t, size);
    aot_flip_byte(t, cases[i].at, cases[i].mask);
    FAILS_WITH(loom_vm_artifact_seal(t, bytes, len, NULL, NULL), cases[i].msg);
  }
  /* the executable must be in the file */
  aot_copy_prefix(so, t, size);
  bytes[len - 1] ^= 1;
  FAILS_WITH(loom_vm_artifact_seal(t, bytes, len, NULL, NULL), "does not hold the executable");
  loom_free(NULL, bytes, len);
  loom_vm_exec_free(e);
  aot_remove_dir(dir);
}

LOOM_TEST(artifact, files_that_are_not_artifacts) {
  loom_rt *rt;
  FAILS_WITH(loom_rt_open("/dev/zero", NULL, &rt), "'/dev/zero' is not a regular file (a character device)");
  FAILS_WITH(loom_rt_open("tests", NULL, &rt), "is not a regular file (a directory)");
  FAILS_WITH(loom_rt_open("/nonexistent/x.so", NULL, &rt), "cannot open '/nonexistent/x.so'");
  char *dir = aot_make_dir(), fifo[600];
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  FAILS_WITH(loom_rt_open(fifo, NULL, &rt), "is not a regular file (a pipe)");
  loom_test_proc p = loom_test_run("timeout 20 %s /dev/zero --list", loom_test_loom_run_bin());
  cr_assert_eq(p.exit_code, 1, "%s", p.err);
  loom_test_proc_free(&p);
  aot_remove_dir(dir);
}

/* The checker on every prefix and many single-byte changes of a sealed artifact: an error
 * or success, never a crash (ASan), never a hang. */
LOOM_TEST(artifact, checker_survives_every_prefix_and_flip) {
  char *dir = aot_make_dir(), so[512];
  aot_build_artifact(dir, "add", NULL, AOT_SEAL, so, sizeof so);
  size_t size = aot_file_size(so);
  uint8_t *buf = malloc(size);
  FILE *f = fopen(so, "rb");
  cr_assert_eq(fread(buf, 1, size, f), size);
  fclose(f);
  loom_test_rng r = {loom_test_seed()};
  int ok = 0;
  cr_assert_eq(loom_fuzz_artifact_one(buf, size), 1, "the artifact itself passes");
  for (int it = 0; it < 600; it++) {
    size_t n = size;
    uint8_t save = 0;
    size_t at = 0;
    if (it < 200) n = (size_t)loom_test_rng_range(&r, 0, (int64_t)size - 1);
    else at = (size_t)loom_test_rng_range(&r, 0, (int64_t)size - 1), save = buf[at], buf[at] ^= (uint8_t)(1u << (it % 8));
    ok += loom_fuzz_artifact_one(buf, n);
    if (it >= 200) buf[at] = save;
  }
  cr_assert_eq(ok, 0, "%d mutants passed the content hash", ok);
  free(buf);
  aot_remove_dir(dir);
}
