/* link.h — what a target's link_artifact (targets/target.h) does to make an AOT shared object:
 * text files in the scratch directory, data included with `.incbin`, and the C compiler driver
 * run as `cc -shared` ($LOOM_CC overrides; clang-19 is the fallback). The CPU's and the CUDA
 * target's artifacts are both made with these (compiler side).
 *
 *     loom_strbuf sb; loom_strbuf_init(&sb, NULL);
 *     loom_link_incbin(&sb, "loom_exec", "loom_exec_bytes", "dir/exec.bin", false);
 *     LOOM_PROPAGATE(loom_link_write_text("dir/blob.S", loom_strbuf_cstr(&sb)));
 *     const char *in[] = {"dir/desc.c", "dir/blob.S", NULL};
 *     LOOM_PROPAGATE(loom_link_shared_object("dir/out.so", in, "dir/cc.log"));  */
#ifndef LOOM_TARGETS_CPU_LINK_H
#define LOOM_TARGETS_CPU_LINK_H

#include <stdbool.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "targets/target.h"

/* Writes `text` to `path` (IO_ERROR naming it). */
LOOM_MUST_USE loom_status loom_link_write_text(const char *path, const char *text);
/* `text` as a C string literal, or 0 for NULL. */
void loom_link_c_literal(loom_strbuf *out, const char *text);
/* Assembler lines defining the hidden, 64-byte aligned read-only symbol `symbol` in section
 * .rodata.`section` as the bytes of the file at `path` (and a NUL after them when `nul`). */
void loom_link_incbin(loom_strbuf *sb, const char *section, const char *symbol, const char *path, bool nul);
/* `cc -shared -fPIC -O1 -o out_path INPUTS... -lm`, its stderr into `log`: UNAVAILABLE when no C
 * compiler driver runs, INTERNAL with the log's text when linking fails. */
LOOM_MUST_USE loom_status loom_link_shared_object(const char *out_path, const char *const *inputs, const char *log);

/* An artifact's shared object at `out_path`, made in `workdir`: exec.bin (the executable),
 * blob.S (it by `.incbin`, then `extra_asm`), desc.c (kernel_abi.h's types written out — the C
 * compiler that links it sees no Loom header —, then `extra_c`, each kernel's signature, the
 * kernel table {name, fns[k]: the C expression of kernel k's entry} and loom_artifact_v1 with
 * `magic` and a->externs), linked with `objects` (NULL-terminated). */
LOOM_MUST_USE loom_status loom_link_artifact(const loom_target_artifact *a, const char *workdir, const char *out_path,
                                             uint32_t magic, const char *extra_asm, const char *extra_c,
                                             const char *const *fns, const char *const *objects);

#endif
