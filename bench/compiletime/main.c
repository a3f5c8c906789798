/* bench/compiletime — how long one compilation of a model takes, in process (the path a server
 * or `loom run` takes: the pipeline, then JIT codegen through the kernel cache). bench/compile
 * runs it cold, warm and after a one-layer change (issue 23's goals) and prints the table.
 *
 *   zig-out/bin/bench-compile MODEL.onnx|MODEL.loom [--repeat N] [--no-cache]
 *
 * The kernel cache is $LOOM_CACHE_DIR (the caller picks a fresh or a warm one); compile workers
 * are the default (one per available core) unless LOOM_COMPILE_THREADS says otherwise. Prints
 * one line per repetition:
 *   compile MODEL: W ms (passes P ms, planning+lowering L ms, codegen C ms); kernels K, distinct U, cache hits H, compiled by LLVM N;
 *   packed weights mapped W (B MB), stored S */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "loom.h"

int main(int argc, char **argv) {
  const char *path = NULL;
  int repeat = 1;
  bool no_cache = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-cache")) no_cache = true;
    else if (argv[i][0] != '-' && !path) path = argv[i];
    else {
      fprintf(stderr, "usage: bench-compile MODEL.onnx|MODEL.loom [--repeat N] [--no-cache]\n");
      return 2;
    }
  }
  if (!path || repeat < 1) {
    fprintf(stderr, "usage: bench-compile MODEL.onnx|MODEL.loom [--repeat N] [--no-cache]\n");
    return 2;
  }
  for (int r = 0; r < repeat; r++) {
    uint64_t t0 = loom_clock_ns();
    loom_compile_options o = {.no_cache = no_cache};
    loom_compiled *c = NULL;
    loom_rt *rt = NULL;
    loom_status s = loom_compile_file(path, &o, &c);
    if (!s) s = loom_compiled_open(c, NULL, &rt);
    double ms = (double)(loom_clock_ns() - t0) / 1e6;
    if (s) {
      fprintf(stderr, "bench-compile: %s: %s\n", path, loom_status_text(s, 0));
      loom_status_free(s);
      loom_compiled_free(c);
      return 1;
    }
    loom_compile_times t = loom_compiled_times(c);
    printf("compile %s: %.1f ms (passes %.1f ms, planning+lowering %.1f ms, codegen %.1f ms); kernels %u, distinct %u, "
           "cache hits %u, compiled by LLVM %u; packed weights mapped %u (%.0f MB), stored %u; sources by file "
           "identity %u, hashed %u\n",
           path, ms, t.passes_ms, t.lower_ms, t.codegen_ms, t.kernels, t.kernels_unique, t.cache_hits, t.kernels_compiled,
           t.packed_hits, (double)t.packed_bytes_mapped / 1e6, t.packed_stored, t.sources_by_id, t.sources_read);
    fflush(stdout);
    loom_rt_close(rt);
    loom_compiled_free(c);
  }
  return 0;
}
