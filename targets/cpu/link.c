/* link.c — the artifact linker's helpers (link.h). */
#include "targets/cpu/link.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"

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
