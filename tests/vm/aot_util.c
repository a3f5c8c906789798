/* aot_util.c — building AOT artifacts in tests (aot_util.h). */
#include "aot_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "vm_fixture.h"

static const char *kernel_src =
    "#include \"vm/kernel_abi.h\"\n"
    "typedef struct { const float *a, *b; float *o; } args;\n"
    "static int32_t body(void *p, int64_t b, int64_t e, uint32_t w) {\n"
    "  (void)w; args *x = p; for (int64_t i = b; i < e; i++) x->o[i] = x->a[i] + x->b[i]; return 0; }\n"
    "static int32_t add(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {\n"
    "  args x = {buf[0], buf[1], buf[2]}; return ctx->parallel_for(ctx->pool, sym[0], body, &x); }\n"
    "static const loom_artifact_kernel ks[] = {{\"add\", add}};\n";

void aot_build_artifact_signed(const char *dir, const char *name, const char *extra_c, aot_seal seal,
                               const loom_vm_artifact_seckey *key, char *so, size_t n) {
  loom_vm_exec *e = fixture_add_exec();
  uint8_t *bytes;
  size_t len;
  OK(loom_vm_exec_write(e, NULL, &bytes, &len));
  char c_path[512];
  snprintf(c_path, sizeof c_path, "%s/%s.c", dir, name);
  FILE *f = fopen(c_path, "w");
  cr_assert(f != NULL);
  fputs(kernel_src, f);
  if (extra_c) fputs(extra_c, f);
  fprintf(f, "static const unsigned char exe[] __attribute__((aligned(64))) = {");
  for (size_t i = 0; i < len; i++) fprintf(f, "%s%u", i ? "," : "", bytes[i]);
  fprintf(f, "};\n__attribute__((visibility(\"default\"))) const loom_artifact_desc loom_artifact_v1 = "
             "{LOOM_ARTIFACT_MAGIC, LOOM_KERNEL_ABI_VERSION, exe, sizeof exe, 1, ks};\n");
  fclose(f);
  snprintf(so, n, "%s/%s.so", dir, name);
  loom_test_proc p = loom_test_run("cc -O1 -shared -fPIC -I. -o %s %s", so, c_path);
  cr_assert_eq(p.exit_code, 0, "cc failed: %s", p.err);
  loom_test_proc_free(&p);
  if (seal == AOT_SEAL) OK(loom_vm_artifact_seal(so, bytes, len, NULL, key));
  char exe_path[512];
  snprintf(exe_path, sizeof exe_path, "%s/%s.loomexe", dir, name);
  OK(loom_vm_exec_save(e, exe_path));
  loom_free(NULL, bytes, len);
  loom_vm_exec_free(e);
}

void aot_build_artifact(const char *dir, const char *name, const char *extra_c, aot_seal seal, char *so, size_t n) {
  aot_build_artifact_signed(dir, name, extra_c, seal, NULL, so, n);
}

char *aot_make_dir(void) {
  char *d = strdup("/tmp/loom-aot-XXXXXX");
  cr_assert(mkdtemp(d) != NULL);
  return d;
}

void aot_remove_dir(char *d) {
  loom_test_proc p = loom_test_run("rm -rf %s", d);
  loom_test_proc_free(&p);
  free(d);
}

size_t aot_file_size(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return (size_t)n;
}

void aot_copy_prefix(const char *from, const char *to, size_t n) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  cr_assert(in && out);
  int c;
  for (size_t i = 0; i < n && (c = fgetc(in)) != EOF; i++) fputc(c, out);
  fclose(in);
  fclose(out);
}

void aot_flip_byte(const char *path, size_t at, unsigned char mask) {
  FILE *f = fopen(path, "r+b");
  cr_assert(f != NULL);
  fseek(f, (long)at, SEEK_SET);
  int c = fgetc(f);
  cr_assert(c != EOF, "byte %zu of %s", at, path);
  fseek(f, (long)at, SEEK_SET);
  fputc(c ^ mask, f);
  fclose(f);
}
