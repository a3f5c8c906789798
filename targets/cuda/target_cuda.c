/* target_cuda.c — the CUDA target (targets/target.h), compile side: the GPU schedule rules
 * (tensorprog/tp_schedule_gpu.h) and PTX through LLVM's NVPTX back end (ptx.h). `jit` makes one
 * PTX module and a description of each kernel (kernel.h) that the runtime's CUDA device
 * (device_cuda.h) launches; emit_object writes the PTX module (and each kernel's launch beside
 * it), link_artifact a shared object holding both (opened by the CUDA device). Built only with
 * the CUDA toolkit (targets/cuda/sources.zig). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "targets/cpu/link.h"
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

/* One PTX module with every kernel at `path`, and in `path`.kernels its architecture ("arch
 * sm_NN") and each program's launch (what cuda_link_artifact writes into the artifact): a line
 * "entry threads nbufs nsyms grid". */
static loom_status cuda_emit_object(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                                    size_t n, const char *path) {
  loom_strbuf ptx, lines;
  loom_strbuf_init(&ptx, NULL);
  loom_strbuf_init(&lines, NULL);
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_status st = loom_cuda_emit_ptx(o ? o->arch : NULL, cx, fs, n, &ptx);
  loom_strbuf_printf(&lines, "arch %s\n", o && o->arch ? o->arch : LOOM_CUDA_DEFAULT_ARCH);
  for (size_t i = 0; !st && i < n; i++) {
    loom_cuda_kernel k = {0};
    st = describe(&a, cx, fs[i], &k);
    if (!st) loom_strbuf_printf(&lines, "%s %u %u %u %s\n", k.entry, k.threads, k.nbufs, k.nsyms, k.grid);
  }
  if (!st) st = loom_link_write_text(path, loom_strbuf_cstr(&ptx));
  if (!st) {
    char kp[4200];
    snprintf(kp, sizeof kp, "%s.kernels", path);
    st = loom_link_write_text(kp, loom_strbuf_cstr(&lines));
  }
  loom_arena_destroy(&a);
  loom_strbuf_free(&ptx);
  loom_strbuf_free(&lines);
  return st;
}

static void cuda_kernel_symbol(const loom_tp_func *f, char *buf, size_t cap) {
  snprintf(buf, cap, "loom_kernel_%s", f->name);
}

/* The CUDA artifact: a shared object (no host code) holding the executable and the PTX module
 * (`.incbin`, blob.S) and desc.c: each kernel's description in kernel.h's layout, written out
 * (the C compiler that links it sees no Loom header), and loom_artifact_v1 with magic
 * LOOM_ARTIFACT_MAGIC_DEVICE whose kernel table points at them. The driver seals it as any
 * artifact (vm/artifact.h); the CUDA device opens it (device_cuda.h). */
static loom_status cuda_link_artifact(const loom_target_artifact *a, const char *workdir, const char *out_path) {
  char kp[4200];
  snprintf(kp, sizeof kp, "%s.kernels", a->object);
  char *kt = NULL;
  size_t klen = 0;
  loom_status st = loom_file_read(kp, &kt, &klen);
  loom_strbuf asm_, c, fn;
  loom_strbuf_init(&asm_, NULL);
  loom_strbuf_init(&c, NULL);
  loom_strbuf_init(&fn, NULL);
  const char **fns = calloc(a->nkernels + 1, sizeof *fns);
  if (!st && !fns) st = LOOM_OOM();
  loom_link_incbin(&asm_, "loom_ptx", "loom_ptx_text", a->object, true);
  loom_strbuf_puts(&c, "typedef struct { const char *ptx, *arch; } msrc;\n"
                       "typedef struct { uint32_t magic, threads; const char *entry, *grid; uint32_t nbufs, nsyms; "
                       "const char *const *names; const msrc *module; } ck;\n"
                       "extern const char loom_ptx_text[];\nstatic const msrc module = {loom_ptx_text, \"");
  char *line = kt, *nl0 = kt ? strchr(kt, '\n') : NULL;
  if (!st && (!nl0 || strncmp(kt, "arch ", 5))) st = LOOM_ERROR(INTERNAL, "'%s' does not start with the architecture", kp);
  if (!st) {
    loom_strbuf_append(&c, kt + 5, (size_t)(nl0 - kt - 5));
    line = nl0 + 1;
  }
  loom_strbuf_puts(&c, "\"};\n");
  /* fns[k] points into `fn`, one NUL-ended expression after another: offsets first, pointers after */
  size_t *at_fn = calloc(a->nkernels + 1, sizeof *at_fn);
  if (!st && !at_fn) st = LOOM_OOM();
  for (uint32_t k = 0; !st && k < a->nkernels; k++) {
    char *nl = line < kt + klen ? strchr(line, '\n') : NULL;
    char entry[300];
    unsigned threads, nbufs, nsyms;
    int at = 0;
    if (!nl || (*nl = 0, sscanf(line, "%299s %u %u %u %n", entry, &threads, &nbufs, &nsyms, &at) != 4) || !at) {
      st = LOOM_ERROR(INTERNAL, "'%s': kernel %u's launch is missing or malformed", kp, k);
      break;
    }
    loom_strbuf_printf(&c, "static const char *const names%u[] = {", k);
    for (unsigned j = 0; j < nsyms; j++) loom_strbuf_printf(&c, "%s\"s%u\"", j ? ", " : "", j);
    loom_strbuf_printf(&c, "%s};\nstatic const ck kernel%u = {0x%08xu, %uu, \"%s\", ", nsyms ? "" : "0", k,
                       LOOM_CUDA_KERNEL_MAGIC, threads, entry);
    loom_link_c_literal(&c, line + at);
    loom_strbuf_printf(&c, ", %uu, %uu, names%u, &module};\n", nbufs, nsyms, k);
    at_fn[k] = fn.len;
    loom_strbuf_printf(&fn, "(kfn)(const void *)&kernel%u", k); /* the kernel table points at the description */
    loom_strbuf_putc(&fn, '\0');
    line = nl + 1;
  }
  if (!st && (asm_.oom || c.oom || fn.oom)) st = LOOM_OOM();
  for (uint32_t k = 0; !st && k < a->nkernels; k++) fns[k] = fn.data + at_fn[k];
  const char *objects[] = {NULL};
  if (!st)
    st = loom_link_artifact(a, workdir, out_path, LOOM_ARTIFACT_MAGIC_DEVICE, loom_strbuf_cstr(&asm_), loom_strbuf_cstr(&c),
                            fns, objects);
  free(at_fn);
  free(fns);
  free(kt);
  loom_strbuf_free(&asm_);
  loom_strbuf_free(&c);
  loom_strbuf_free(&fn);
  return st;
}

const loom_target loom_target_cuda = {
    .name = "cuda",
    .summary = "NVIDIA GPUs through LLVM's NVPTX back end (cuda:sm_80, cuda:sm_90): in process or as an artifact",
    .device = "cuda",
    .library_gemm_rows = 0, /* every matmul to cuBLAS: the generated GPU matmul is one thread per output */
    .reread_rows = true,
    .fused_attention = false, /* Q @ K^T and P @ V to cuBLAS: the flash kernel's CPU form is serial per tile here */
    .schedule = cuda_schedule,
    .vector_bytes = NULL,
    .matmul_panel = NULL,
    .int8_quads = NULL,
    .jit = cuda_jit,
    .code_free = cuda_code_free,
    .emit_object = cuda_emit_object,
    .kernel_symbol = cuda_kernel_symbol,
    .link_artifact = cuda_link_artifact,
};
