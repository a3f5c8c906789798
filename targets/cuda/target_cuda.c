/* target_cuda.c — the CUDA target (targets/target.h), compile side: the GPU schedule rules
 * (tensorprog/tp_schedule_gpu.h) and PTX through LLVM's NVPTX back end (ptx.h). emit_object
 * writes one PTX module holding every kernel; running it (an artifact whose device code the
 * CUDA driver loads, in-process JIT) is not built yet and says so. Built only with the CUDA
 * toolkit (targets/cuda/sources.zig). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "targets/cuda/ptx.h"
#include "targets/target.h"
#include "tensorprog/tp_schedule_gpu.h"

/* The GPU rules: 256 threads per block in the grid form. */
static loom_status cuda_schedule(const loom_target_options *o, loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f,
                                 loom_strbuf *why) {
  (void)o;
  loom_tp_gpu_params p = {.threads = 256};
  return loom_tp_schedule_gpu(a, cx, f, &p, why);
}

static loom_status cuda_jit(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                            loom_target_code **out_code, loom_kernel_fn *out_fns) {
  (void)o, (void)cx, (void)fs, (void)n, (void)out_fns;
  *out_code = NULL;
  return LOOM_ERROR(UNIMPLEMENTED, "target 'cuda' does not run kernels in process yet: compile with "
                                   "`loom compile --target cuda --emit=ptx DIR` (PTX only; no CUDA device loader yet)");
}

static void cuda_code_free(loom_target_code *code) { (void)code; }

/* One PTX module with every kernel at `path`. */
static loom_status cuda_emit_object(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                                    size_t n, const char *path) {
  loom_strbuf ptx;
  loom_strbuf_init(&ptx, NULL);
  loom_status st = loom_cuda_emit_ptx(o ? o->arch : NULL, cx, fs, n, &ptx);
  if (!st) {
    FILE *f = fopen(path, "w");
    if (!f) {
      st = LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
    } else {
      bool ok = fwrite(loom_strbuf_cstr(&ptx), 1, ptx.len, f) == ptx.len;
      ok &= fclose(f) == 0;
      if (!ok) st = LOOM_ERROR(IO_ERROR, "cannot write '%s'", path);
    }
  }
  loom_strbuf_free(&ptx);
  return st;
}

static void cuda_kernel_symbol(const loom_tp_func *f, char *buf, size_t cap) {
  snprintf(buf, cap, "loom_kernel_%s", f->name);
}

static loom_status cuda_link_artifact(const loom_target_artifact *a, const char *workdir, const char *out_path) {
  (void)a, (void)workdir, (void)out_path;
  return LOOM_ERROR(UNIMPLEMENTED, "target 'cuda' has no artifact format yet (PTX embedded for the CUDA driver): "
                                   "use `loom compile --target cuda --emit=ptx DIR`");
}

const loom_target loom_target_cuda = {
    .name = "cuda",
    .summary = "NVIDIA GPUs through LLVM's NVPTX back end (cuda:sm_80, cuda:sm_90): PTX only, no device run side yet",
    .schedule = cuda_schedule,
    .matmul_panel = NULL,
    .int8_quads = NULL,
    .jit = cuda_jit,
    .code_free = cuda_code_free,
    .emit_object = cuda_emit_object,
    .kernel_symbol = cuda_kernel_symbol,
    .link_artifact = cuda_link_artifact,
};
