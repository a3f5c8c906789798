/* run_tool.h — the part of `loom-run` that `loom run` shares (src/driver/run_tool.c). */
#ifndef LOOM_DRIVER_RUN_TOOL_H
#define LOOM_DRIVER_RUN_TOOL_H

#include "driver/cli.h"
#include "loomrt.h"

/* The options both commands take (terminated by a NULL name; `extra` entries may follow
 * in a command's own table, see LOOM_RUN_TOOL_OPTS). */
#define LOOM_RUN_TOOL_OPTS                                                                                         \
  {"--fn", "NAME", "function to run (default: main)", false},                                                     \
      {"--input", "NAME=SPEC", "input NAME (a parameter, or an ONNX input by its own name): random:(D0,D1,...), @FILE.npy or strings:a,b,c; a list: list:[SPEC;SPEC;...]", true},             \
      {"--bind", "VAR=N,...", "values of symbolic vars; inputs not given are made random from the signature", false}, \
      {"--output", "FILE.npy", "write the output (several: FILE.0.npy, FILE.1.npy, ...)", false},                 \
      {"--repeat", "N", "run N times and print the mean and best time", false},                                   \
      {"--profile", NULL, "print per-instruction and per-kernel times (on a GPU, each kernel's and cuBLAS call's GPU time)", false}, \
      {"--tf32", NULL, "let FP32 matmuls on the GPU use TF32 tensor cores (cuBLAS; sets LOOM_CUDA_TF32=1)", false}, \
      {"--threads", "N", "threads for kernels (default: LOOM_NUM_THREADS or all cores)", false},                  \
      {"--list", NULL, "list the functions and their symbolic signatures", false},                                \
      {"--trust", "KEY.pub", "open only an artifact signed by this public key (loom keygen; docs/vm.md)", false},   \
      {"--check-weights", NULL, "check every weight at open (else each is checked at its first use)", false},     \
      {"--device", "cpu", "where an artifact runs: cpu, or cuda (one compiled with --target cuda; GPU 0)", false}

/* Opens the artifact or executable `path` (loom_rt_open), with the key of --trust if given,
 * every weight checked now with --check-weights. */
loom_status loom_run_tool_open(const loom_cli_args *args, const char *path, loom_rt **out);

/* Prints the first 16 of the n strings e quoted, comma-separated, C escapes for '"', '\\' and
 * control bytes (UTF-8 as it is), then ", ..." when there are more. */
void loom_run_tool_print_strs(const loom_str *e, size_t n);

/* Runs the function the flags name on `rt` (inputs, --repeat, printing, --output). */
loom_status loom_run_tool(const loom_cli_args *args, loom_rt *rt);

#endif
