/* link.c — the artifact linker's helpers (link.h). */
#include "targets/cpu/link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"
#include "tensorprog/tp_ir.h"

loom_status loom_link_write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
  bool ok = fputs(text, f) >= 0;
  ok &= fclose(f) == 0;
  return ok ? LOOM_OK : LOOM_ERROR(IO_ERROR, "cannot write '%s'", path);
}

/* Runs the C compiler driver `argv`, its stderr into `log`; the log's text names a failure. */
static loom_status run_cc(char *const *argv, const char *log) {
  pid_t pid = fork();
  if (pid < 0) return LOOM_ERROR(IO_ERROR, "fork: %s", strerror(errno));
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    execvp(argv[0], argv);
    _exit(127);
  }
  int ws;
  if (waitpid(pid, &ws, 0) < 0) return LOOM_ERROR(IO_ERROR, "waitpid: %s", strerror(errno));
  if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return LOOM_OK;
  char *msg = NULL;
  size_t mlen = 0;
  loom_status rs = loom_file_read(log, &msg, &mlen);
  loom_status_free(rs);
  loom_status st = WIFEXITED(ws) && WEXITSTATUS(ws) == 127
                       ? LOOM_ERROR(UNAVAILABLE, "cannot run the C compiler driver '%s' to link the artifact (set LOOM_CC)", argv[0])
                       : LOOM_ERROR(INTERNAL, "linking the artifact with '%s' failed:\n%s", argv[0], msg ? msg : "");
  free(msg);
  return st;
}

void loom_link_c_literal(loom_strbuf *out, const char *text) {
  if (!text) {
    loom_strbuf_puts(out, "0");
    return;
  }
  loom_strbuf_putc(out, '"');
  for (const char *p = text; *p; p++) {
    if (*p == '\n') loom_strbuf_puts(out, "\\n");
    else if (*p == '"' || *p == '\\') loom_strbuf_printf(out, "\\%c", *p);
    else loom_strbuf_putc(out, *p);
  }
  loom_strbuf_putc(out, '"');
}


void loom_link_incbin(loom_strbuf *sb, const char *section, const char *symbol, const char *path, bool nul) {
  loom_strbuf_printf(sb, "  .section .rodata.%s,\"a\"\n  .balign 64\n  .globl %s\n  .hidden %s\n%s:\n  .incbin \"%s\"\n",
                     section, symbol, symbol, symbol, path);
  if (nul) loom_strbuf_puts(sb, "  .byte 0\n");
}

loom_status loom_link_shared_object(const char *out_path, const char *const *inputs, const char *log) {
  const char *env = getenv("LOOM_CC");
  const char *ccs[] = {env && *env ? env : "cc", "clang-19"};
  loom_status st = LOOM_OK;
  for (int k = 0; k < (env && *env ? 1 : 2); k++) {
    char *argv[16] = {(char *)ccs[k], "-shared", "-fPIC", "-O1", "-o", (char *)out_path};
    int n = 6;
    for (int i = 0; inputs[i] && n < 14; i++) argv[n++] = (char *)inputs[i];
    argv[n++] = "-lm";
    argv[n] = NULL;
    loom_status_free(st);
    st = run_cc(argv, log);
    if (!st || loom_status_code(st) != LOOM_CODE_UNAVAILABLE) break;
  }
  return st;
}

loom_status loom_link_artifact(const loom_target_artifact *a, const char *workdir, const char *out_path, uint32_t magic,
                               const char *extra_asm, const char *extra_c, const char *const *fns,
                               const char *const *objects) {
  char exec_path[4200], blob[4200], desc[4200], log[4200];
  snprintf(exec_path, sizeof exec_path, "%s/exec.bin", workdir);
  snprintf(blob, sizeof blob, "%s/blob.S", workdir);
  snprintf(desc, sizeof desc, "%s/desc.c", workdir);
  snprintf(log, sizeof log, "%s/cc.log", workdir);
  loom_status st = LOOM_OK;
  FILE *f = fopen(exec_path, "wb");
  if (!f || fwrite(a->exec, 1, a->exec_len, f) != a->exec_len) st = LOOM_ERROR(IO_ERROR, "cannot write '%s'", exec_path);
  if (f && fclose(f) && !st) st = LOOM_ERROR(IO_ERROR, "cannot write '%s'", exec_path);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  if (!st) {
    loom_link_incbin(&sb, "loom_exec", "loom_exec_bytes", exec_path, false);
    loom_strbuf_puts(&sb, extra_asm ? extra_asm : "");
    loom_strbuf_puts(&sb, "  .section .note.GNU-stack,\"\",@progbits\n");
    st = loom_link_write_text(blob, loom_strbuf_cstr(&sb));
  }
  if (!st) {
    loom_strbuf_clear(&sb);
    loom_strbuf_puts(&sb, "#include <stdint.h>\ntypedef int32_t (*kfn)(void *const *, const int64_t *, const void *);\n"
                          "typedef struct { const char *name; kfn fn; const uint32_t *sig; uint32_t nsig; } kent;\n"
                          "typedef struct { uint32_t magic, abi; const unsigned char *exec; uint64_t size; uint32_t n; const kent *k; "
                          "const char *externs; } desc;\n"
                          "extern const unsigned char loom_exec_bytes[];\n");
    loom_strbuf_puts(&sb, extra_c ? extra_c : "");
    /* each kernel's signature, kept with its code (kernel_abi.h) */
    for (uint32_t k = 0; k < a->nkernels; k++) {
      loom_strbuf_printf(&sb, "static const uint32_t sig%u[] = {", k);
      for (uint32_t w = 0; w < a->sigs[k].nsig; w++) loom_strbuf_printf(&sb, "%s%uu", w ? "," : "", a->sigs[k].sig[w]);
      loom_strbuf_puts(&sb, a->sigs[k].nsig ? "};\n" : "0};\n");
    }
    loom_strbuf_puts(&sb, "static const kent kernels[] = {\n");
    for (uint32_t k = 0; k < a->nkernels; k++)
      loom_strbuf_printf(&sb, "  {\"%s\", %s, sig%u, %uu},\n", loom_tp_func_name(a->fs[k]), fns[k], k, a->sigs[k].nsig);
    loom_strbuf_printf(&sb, "  {0, 0, 0, 0}\n};\n__attribute__((visibility(\"default\"))) const desc %s = {0x%08xu, %uu, loom_exec_bytes, %zuu, %uu, kernels, ",
                       LOOM_ARTIFACT_SYMBOL, magic, LOOM_KERNEL_ABI_VERSION, a->exec_len, a->nkernels);
    loom_link_c_literal(&sb, a->externs);
    loom_strbuf_puts(&sb, "};\n");
    st = sb.oom ? LOOM_OOM() : loom_link_write_text(desc, loom_strbuf_cstr(&sb));
  }
  loom_strbuf_free(&sb);
  if (!st) {
    const char *inputs[14] = {desc, blob};
    for (int i = 0; objects && objects[i] && i < 11; i++) inputs[2 + i] = objects[i];
    st = loom_link_shared_object(out_path, inputs, log);
  }
  return st;
}
