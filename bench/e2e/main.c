/* bench/e2e — whole models compiled once by Loom and run for shape sweeps, against this
 * machine's limits measured in the same run.
 *
 *   scripts/zig build bench -Doptimize=ReleaseFast && zig-out/bin/bench-e2e [--quick] [--threads T]
 *
 * Reports (issue "the compile pipeline end to end"; the VM's share is the call time of the same
 * executable with every kernel replaced by an empty function):
 *   - compile time of each model (passes, planning + VM lowering, LLVM);
 *   - the MLP over a batch sweep 1..256 (odd values included) and the GPT-2-small block over
 *     batch {1,2,4,8} x 24 sequence lengths: latency (best of several runs), GFLOP/s and percent
 *     of the measured FP32 FMA peak (matmul FLOPs only, 2 per multiply-add);
 *   - the VM's own share of a GPT-2-small block call at (1, 1): call time minus time inside
 *     kernels (kernels timed by the VM's profiler in separate runs);
 *   - batch-1 decode of the GPT-2-small-width decoder (vocabulary 50257) against the time to
 *     read its weights once at the measured triad bandwidth.
 * --quick runs a subset of the shapes. Times are wall clock; the machine may be shared. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "bench/common/machine_limits.h"
#include "loom.h"
#include "vm/exec.h"

#define MAXP 64

static void die(loom_status s) {
  if (!s) return;
  fprintf(stderr, "bench-e2e: %s\n", loom_status_text(s, 0));
  exit(1);
}

typedef struct model {
  const char *path;
  loom_compiled *c;
  loom_rt *rt;
  double compile_ms;
  const loom_graph_func *f;
} model;

static model open_model(const char *path, uint32_t threads, bool offload) {
  model m = {.path = path};
  uint64_t t0 = loom_clock_ns();
  loom_compile_options co = {.offload = offload};
  die(loom_compile_file(path, &co, &m.c));
  loom_rt_options o = {.threads = threads};
  die(loom_compiled_open(m.c, &o, &m.rt));
  m.compile_ms = (double)(loom_clock_ns() - t0) / 1e6;
  m.f = loom_graph_module_find_func(loom_compiled_module(m.c), "main");
  loom_compile_times t = loom_compiled_times(m.c);
  printf("compile %-28s %8.0f ms  (passes %.0f ms, planning + VM lowering %.0f ms, LLVM %.0f ms)%s\n", path, m.compile_ms,
         t.passes_ms, t.lower_ms, t.codegen_ms, offload ? "  [offload to BLAS]" : "");
  return m;
}

static void close_model(model *m) {
  loom_rt_close(m->rt);
  loom_compiled_free(m->c);
}

static int32_t empty_kernel(void *const *b, const int64_t *s, const loom_kernel_ctx *c) {
  (void)b, (void)s, (void)c;
  return 0;
}

/* The same executable with every kernel replaced by an empty function: a call's time is then
 * the VM's own work (shape binding, checks, allocation, views, calls, releases). */
static double vm_only_ms(model *m, loom_tensor **in) {
  const loom_vm_exec *e = loom_compiled_exec(m->c);
  loom_artifact_kernel *ks = calloc(e->nkernels + 1, sizeof *ks);
  for (uint32_t k = 0; k < e->nkernels; k++) ks[k] = (loom_artifact_kernel){.name = loom_vm_exec_str(e, e->kernels[k].name), .fn = empty_kernel}; /* no signature: not checked */
  uint8_t *bytes;
  size_t len;
  die(loom_vm_exec_write(e, NULL, &bytes, &len));
  loom_vm_exec *copy;
  die(loom_vm_exec_load(NULL, bytes, len, free, bytes, &copy));
  loom_rt_options o = {.kernels = ks, .nkernels = e->nkernels, .threads = 1};
  loom_rt *rt;
  die(loom_rt_open_exec(copy, &o, &rt));
  double best = INFINITY;
  for (int r = 0; r < 2000; r++) {
    loom_rt_outputs out;
    uint64_t t0 = loom_clock_ns();
    die(loom_rt_call(rt, "main", in, (uint32_t)m->f->nparams, &out));
    double ms = (double)(loom_clock_ns() - t0) / 1e6;
    loom_rt_outputs_free(&out);
    if (ms < best) best = ms;
  }
  loom_rt_close(rt);
  free(ks);
  return best;
}

/* Inputs for @main at the symbol values given by name. */
static void make_inputs(model *m, const char *const *names, const int64_t *vals, int nv, loom_tensor **in) {
  for (size_t p = 0; p < m->f->nparams; p++) {
    const loom_sinfo *si = m->f->params[p]->sinfo;
    int64_t shape[LOOM_VM_MAX_RANK];
    for (int d = 0; d < si->ndim; d++) {
      int64_t v;
      if (loom_sym_is_const(si->dims[d], &v)) {
        shape[d] = v;
        continue;
      }
      shape[d] = -1; /* parameters' dims are constants or bare vars, bound by name */
      for (int k = 0; k < nv; k++)
        if (loom_sym_is_var(si->dims[d]) && !strcmp(loom_sym_var_name(si->dims[d]), names[k])) shape[d] = vals[k];
      if (shape[d] < 0) {
        fprintf(stderr, "bench-e2e: no value for %s axis %d\n", m->f->params[p]->u.var.name, d);
        exit(1);
      }
    }
    die(loom_rt_tensor_new(m->rt, si->dtype, si->ndim, shape, &in[p]));
    size_t n = loom_tensor_numel(in[p]);
    if (si->dtype == LOOM_DTYPE_F32)
      for (size_t i = 0; i < n; i++) ((float *)in[p]->data)[i] = (float)(((i * 2654435761u) >> 7) % 1000) / 1000.0f * 0.04f - 0.02f;
    else if (si->dtype == LOOM_DTYPE_I64)
      for (size_t i = 0; i < n; i++) ((int64_t *)in[p]->data)[i] = (int64_t)(i % 97);
    else
      memset(in[p]->data, 1, n * loom_dtype_size(si->dtype));
  }
}

/* Best wall time (ms) of `reps` calls after one warm-up; at least 3 runs, at most ~1 s. */
static double time_call(model *m, loom_tensor **in) {
  loom_rt_outputs out;
  die(loom_rt_call(m->rt, "main", in, (uint32_t)m->f->nparams, &out));
  loom_rt_outputs_free(&out);
  double best = INFINITY, total = 0;
  for (int r = 0; r < 50 && (r < 3 || total < 1000); r++) {
    uint64_t t0 = loom_clock_ns();
    die(loom_rt_call(m->rt, "main", in, (uint32_t)m->f->nparams, &out));
    double ms = (double)(loom_clock_ns() - t0) / 1e6;
    loom_rt_outputs_free(&out);
    total += ms;
    if (ms < best) best = ms;
  }
  return best;
}

static void free_inputs(model *m, loom_tensor **in) {
  for (size_t p = 0; p < m->f->nparams; p++) loom_tensor_release(in[p]);
}

static double block_flops(int64_t b, int64_t s) {
  double per_tok = 2.0 * (768.0 * 2304 + 768.0 * 768 + 2 * 768.0 * 3072);
  return (double)b * ((double)s * per_tok + 4.0 * (double)s * (double)s * 768);
}

int main(int argc, char **argv) {
  bool quick = false;
  int threads = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench-e2e [--quick] [--threads T]\n");
      return 2;
    }
  }
  loom_bench_limits lim;
  loom_bench_measure_limits(threads, (size_t)32 << 20, 0.2, &lim);
  printf("machine: %d threads, FP32 FMA peak %.1f GFLOP/s (%s), triad %.1f GB/s\n\n", threads, lim.fma_gflops, lim.isa,
         lim.triad_gbs);

  /* ---- MLP batch sweep */
  model mlp = open_model("models/mlp.loom", (uint32_t)threads, false);
  static const int64_t mlp_b_full[] = {1, 2, 3, 7, 16, 31, 32, 63, 64, 100, 127, 128, 129, 200, 255, 256};
  static const int64_t mlp_b_quick[] = {1, 7, 64, 255};
  const int64_t *mb = quick ? mlp_b_quick : mlp_b_full;
  size_t nmb = quick ? 4 : sizeof mlp_b_full / sizeof mlp_b_full[0];
  printf("\n%-22s %10s %10s %8s\n", "mlp (b)", "ms", "GFLOP/s", "% peak");
  for (size_t i = 0; i < nmb; i++) {
    loom_tensor *in[MAXP];
    const char *names[] = {"b"};
    make_inputs(&mlp, names, &mb[i], 1, in);
    double ms = time_call(&mlp, in);
    double fl = 2.0 * (double)mb[i] * (784.0 * 256 + 256.0 * 10);
    printf("b=%-20lld %10.3f %10.1f %7.1f%%\n", (long long)mb[i], ms, fl / ms / 1e6, 100 * fl / ms / 1e6 / lim.fma_gflops);
    free_inputs(&mlp, in);
  }
  close_model(&mlp);

  /* ---- GPT-2-small block sweep */
  printf("\n");
  model blk = open_model("models/gpt2_block.loom", (uint32_t)threads, false);
  model blo = open_model("models/gpt2_block.loom", (uint32_t)threads, true);
  static const int64_t seqs_full[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 384, 511, 512};
  static const int64_t seqs_quick[] = {1, 17, 128};
  static const int64_t batches_full[] = {1, 2, 4, 8}, batches_quick[] = {1, 2};
  const int64_t *ss = quick ? seqs_quick : seqs_full, *bb = quick ? batches_quick : batches_full;
  size_t nss = quick ? 3 : 24, nbb = quick ? 2 : 4;
  printf("\n%-18s | %28s | %28s\n", "", "generated kernels only", "matmuls offloaded to BLAS");
  printf("%-18s | %10s %9s %7s | %10s %9s %7s\n", "gpt2 block (b, s)", "ms", "GFLOP/s", "% peak", "ms", "GFLOP/s", "% peak");
  for (size_t i = 0; i < nbb; i++)
    for (size_t j = 0; j < nss; j++) {
      const char *names[] = {"b", "s"};
      int64_t vals[] = {bb[i], ss[j]};
      double fl = block_flops(bb[i], ss[j]), ms[2];
      model *ms_models[2] = {&blk, &blo};
      for (int k = 0; k < 2; k++) {
        loom_tensor *in[MAXP];
        make_inputs(ms_models[k], names, vals, 2, in);
        ms[k] = time_call(ms_models[k], in);
        free_inputs(ms_models[k], in);
      }
      char label[32];
      snprintf(label, sizeof label, "(%lld, %lld)", (long long)bb[i], (long long)ss[j]);
      printf("%-18s | %10.3f %9.1f %6.1f%% | %10.3f %9.1f %6.1f%%\n", label, ms[0], fl / ms[0] / 1e6,
             100 * fl / ms[0] / 1e6 / lim.fma_gflops, ms[1], fl / ms[1] / 1e6, 100 * fl / ms[1] / 1e6 / lim.fma_gflops);
      fflush(stdout);
    }
  /* the VM's own share at (1, 1), on the generated-only build */
  {
    loom_tensor *in[MAXP];
    const char *names[] = {"b", "s"};
    int64_t vals[] = {1, 1};
    make_inputs(&blk, names, vals, 2, in);
    double ms = time_call(&blk, in);
    loom_rt_set_profile(blk.rt, true);
    (void)loom_rt_profile_kernel_ns(blk.rt);
    double vm = vm_only_ms(&blk, in);
    printf("\nVM overhead at (1, 1): call %.3f ms (best); the same executable with empty kernels %.4f ms = %.2f%% "
           "of the call\n", ms, vm, 100 * vm / ms);
    free_inputs(&blk, in);
  }
  close_model(&blk);
  close_model(&blo);

  /* ---- batch-1 decode against reading the weights once */
  printf("\n");
  for (int off = 0; off < 2; off++) {
    model dec = open_model("models/gpt2_decoder.loom", (uint32_t)threads, off == 1);
    loom_tensor *in[MAXP];
    const char *names[] = {"b", "s", "past", "V", "P"};
    int64_t past = quick ? 32 : 128, vals[] = {1, 1, past, 50257, 1024};
    make_inputs(&dec, names, vals, 5, in);
    double ms = time_call(&dec, in);
    double wbytes = 0;
    for (size_t p = 0; p < dec.f->nparams; p++) {
      const char *n = dec.f->params[p]->u.var.name;
      if (strcmp(n, "ids") && strncmp(n, "past_", 5) && strcmp(n, "wpe")) wbytes += (double)loom_tensor_numel(in[p]) * 4;
    }
    double read_ms = wbytes / (lim.triad_gbs * 1e9) * 1e3;
    printf("decode b=1, past=%lld, V=50257 (2 layers, %s): %.3f ms per token; reading the %.1f MB of weights once at "
           "%.1f GB/s takes %.3f ms -> %.2fx\n",
           (long long)past, off ? "offload" : "generated", ms, wbytes / 1e6, lim.triad_gbs, read_ms, ms / read_ms);
    free_inputs(&dec, in);
    close_model(&dec);
  }
  return 0;
}
