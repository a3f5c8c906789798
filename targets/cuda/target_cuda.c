/* target_cuda.c — the CUDA target (targets/target.h), compile side: the GPU schedule rules
 * (tensorprog/tp_schedule_gpu.h) and PTX through LLVM's NVPTX back end (ptx.h). `jit` makes one
 * PTX module and a description of each kernel (kernel.h) that the runtime's CUDA device
 * (device_cuda.h) launches; emit_object writes the PTX module; an artifact holding it is not
 * built yet and says so. Built only with the CUDA toolkit (targets/cuda/sources.zig). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "targets/cuda/kernel.h"
#include "targets/cuda/ptx.h"
#include "targets/target.h"
#include "tensorprog/tp_schedule_gpu.h"
#include "vm/symeval.h"

/* The GPU rules: 256 threads per block in the grid form, one warp when each thread runs a row. */
static loom_status cuda_schedule(const loom_target_options *o, loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f,
                                 loom_strbuf *why) {
  (void)o;
  loom_tp_gpu_params p = {.threads = 256, .loop_threads = 32};
  return loom_tp_schedule_gpu(a, cx, f, &p, why);
}

/* What cuda_jit makes: one PTX module and each program's kernel description (kernel.h), which
 * the VM's kernel table holds and the CUDA device launches. */
typedef struct cuda_code {
  loom_cuda_module_src module;
  loom_arena arena;          /* the PTX text, the descriptions and their strings */
  loom_cuda_kernel *kernels; /* one per program */
} cuda_code;

static void cuda_code_free(loom_target_code *code) {
  cuda_code *c = (cuda_code *)code;
  if (!c) return;
  loom_arena_destroy(&c->arena);
  free(c);
}

/* k's launch: f's grid as symeval text over the names s0, s1, ... of f's symbols in order (a
 * program's own symbol names need not be identifiers), checked to evaluate. */
static loom_status describe(loom_arena *a, loom_sym_ctx *cx, const loom_tp_func *f, loom_cuda_kernel *k) {
  loom_tp_gpu_launch l;
  LOOM_PROPAGATE(loom_tp_gpu_launch_of(cx, f, &l));
  const char **names = loom_arena_alloc(a, (f->nsyms ? f->nsyms : 1) * sizeof *names, _Alignof(const char *));
  const loom_sym_expr **vars = loom_arena_alloc(a, (f->nsyms ? f->nsyms : 1) * sizeof *vars, _Alignof(const loom_sym_expr *));
  int64_t *ones = loom_arena_alloc(a, (f->nsyms ? f->nsyms : 1) * sizeof *ones, _Alignof(int64_t));
  char entry[300];
  snprintf(entry, sizeof entry, "loom_kernel_%s", f->name);
  k->entry = loom_arena_strdup(a, entry);
  if (!names || !vars || !ones || !k->entry) return LOOM_OOM();
  for (size_t j = 0; j < f->nsyms; j++) {
    char nm[24];
    snprintf(nm, sizeof nm, "s%zu", j);
    if (!(names[j] = loom_arena_strdup(a, nm))) return LOOM_OOM();
    vars[j] = loom_sym_var_new(cx, nm, LOOM_SYM_VAR_SHAPE);
    ones[j] = 1;
  }
  const loom_sym_expr *grid = loom_sym_subst(cx, l.grid, f->syms, vars, f->nsyms);
  char *text = grid ? loom_sym_to_string(grid) : NULL;
  if (!text) return LOOM_ERROR(INTERNAL, "kernel %s: its grid cannot be written down", f->name);
  k->grid = loom_arena_strdup(a, text);
  free(text);
  if (!k->grid) return LOOM_OOM();
  int64_t probe; /* the runtime's evaluator reads it (at 1s: a division by zero or overflow there is no parse error) */
  loom_status st = loom_vm_symeval(k->grid, names, ones, f->nsyms, &probe);
  if (st && !strstr(loom_status_message(st), "division by zero") && !strstr(loom_status_message(st), "overflow"))
    return loom_status_annotate(st, __FILE__, __LINE__, "kernel %s: its grid is not evaluable at run time", f->name);
  loom_status_free(st);
  k->magic = LOOM_CUDA_KERNEL_MAGIC;
  k->threads = (uint32_t)l.threads;
  k->nbufs = 0;
  for (size_t i = 0; i < f->nparams; i++) k->nbufs += f->params[i].is_buffer; /* scalars travel as symbols */
  k->nsyms = (uint32_t)f->nsyms;
  k->sym_names = names;
  return LOOM_OK;
}

static loom_status cuda_jit(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                            loom_target_code **out_code, loom_kernel_fn *out_fns) {
  *out_code = NULL;
  cuda_code *c = calloc(1, sizeof *c);
  if (!c) return LOOM_OOM();
  loom_arena_init(&c->arena, NULL, 0);
  c->module.arch = o && o->arch ? loom_arena_strdup(&c->arena, o->arch) : LOOM_CUDA_DEFAULT_ARCH;
  loom_strbuf ptx;
  loom_strbuf_init(&ptx, NULL);
  loom_status st = loom_cuda_emit_ptx(o ? o->arch : NULL, cx, fs, n, &ptx);
  if (!st && !(c->module.ptx = loom_arena_strdup(&c->arena, loom_strbuf_cstr(&ptx)))) st = LOOM_OOM();
  loom_strbuf_free(&ptx);
  if (!st && !(c->kernels = loom_arena_alloc(&c->arena, (n ? n : 1) * sizeof *c->kernels, _Alignof(loom_cuda_kernel)))) st = LOOM_OOM();
  for (size_t i = 0; !st && i < n; i++) {
    memset(&c->kernels[i], 0, sizeof c->kernels[i]);
    st = describe(&c->arena, cx, fs[i], &c->kernels[i]);
    c->kernels[i].module = &c->module;
    out_fns[i] = loom_cuda_kernel_fn(&c->kernels[i]);
  }
  if (st) {
    cuda_code_free((loom_target_code *)c);
    return st;
  }
  *out_code = (loom_target_code *)c;
  return LOOM_OK;
}

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
    .summary = "NVIDIA GPUs through LLVM's NVPTX back end (cuda:sm_80, cuda:sm_90): in process; artifacts not yet",
    .device = "cuda",
    .library_gemm_rows = 0, /* every matmul to cuBLAS: the generated GPU matmul is one thread per output */
    .fused_attention = false, /* Q @ K^T and P @ V to cuBLAS: the flash kernel's CPU form is serial per tile here */
    .schedule = cuda_schedule,
    .matmul_panel = NULL,
    .int8_quads = NULL,
    .jit = cuda_jit,
    .code_free = cuda_code_free,
    .emit_object = cuda_emit_object,
    .kernel_symbol = cuda_kernel_symbol,
    .link_artifact = cuda_link_artifact,
};
