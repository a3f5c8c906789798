/* bench/loomserve — Loom's column of the side-by-side benchmarks (bench/harness/systems.py, class Loom).
 *
 *   bench-loom-serve MODEL.onnx --in IN_FILE --out OUT_FILE [--threads T] [--offload] [--cache]
 *
 * Without --cache the kernel cache is off (loom_compile_options.no_cache): the compile time it
 * reports is a cold compile, as every other system's is.
 *
 * Compiles MODEL once (loom_compile_file: symbolic shapes, one executable for every shape), JITs its
 * kernels into this process, then serves calls until stdin closes. The Python worker drives it over
 * two pipes with one line per message; tensors travel through two files mapped by both processes
 * (in /dev/shm), so a call moves no tensor through a pipe and reads or writes no file:
 *
 *   -> (after compiling)  ready PASSES_MS LOWER_MS CODEGEN_MS N NAME_1 ... NAME_N   the parameters, in order
 *                         error MESSAGE                                             and exit 1
 *   <- call IN_BYTES N (DTYPE RANK D_1 ... D_RANK OFFSET){N}   inputs at OFFSET of IN_FILE (IN_BYTES long)
 *   -> ok OUT_BYTES DTYPE RANK D_1 ... D_RANK CALL_NS COPY_NS  output 0, copied to OUT_FILE offset 0
 *      error MESSAGE                                           the server stays usable
 *   <- time IN_BYTES N ...                                    the last call again, its inputs staged
 *                                                             (below), output 0 not copied:
 *   -> ok CALL_NS                                             bench/ops' timed calls
 *   <- threads T                                              loom_rt_set_threads (bench/ops: one
 *   -> ok                                                     compilation serves 1 and 2 threads)
 *   <- quit  (or end of input)
 *
 * The worker owns IN_FILE (it grows it; a new IN_BYTES makes this side map it again) and this side
 * owns OUT_FILE (grown to the largest output so far). A `call` passes its inputs to loom_rt_call
 * zero-copy (storage wrapped over the mapping: bench/run's requests, each with new inputs, time the
 * round trip); the `time` lines after it pass a copy made once, untimed, into anonymous memory kept
 * per input (stage_input); output 0 is copied out (it lives in the runtime's pool).
 * CALL_NS is the time of loom_rt_call alone (bench/ops' Loom time: the output is then in Loom's
 * memory, as ONNX Runtime's `run` hands its output to NumPy without a copy), COPY_NS that of the
 * copy to OUT_FILE, which only this two-process arrangement needs (for a 6 MiB output it is about
 * as long as a softmax over it). Messages have their newlines replaced by " | " so that one
 * message is one line. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "loom.h"

#define MAX_INPUTS 64

typedef struct mapping {
  int fd;
  void *base;  /* NULL when not mapped */
  size_t size; /* bytes mapped */
} mapping;

/* Where one input is copied before a call: anonymous memory, kept across calls. */
typedef struct staging {
  void *base;
  size_t cap;
  size_t staged; /* bytes copied since the last `call` (SIZE_MAX: none) */
} staging;

typedef struct server {
  loom_rt *rt;
  mapping in, out;
  staging stage[MAX_INPUTS];
} server;

/* Prints `s` (or `what` when s is LOOM_OK) as one protocol line, and frees s. */
static void reply_error(const char *what, loom_status s) {
  const char *text = s ? loom_status_text(s, 0) : what;
  fputs("error ", stdout);
  for (const char *p = text; *p; p++) {
    if (*p == '\n') fputs(" | ", stdout);
    else putchar(*p);
  }
  putchar('\n');
  fflush(stdout);
  loom_status_free(s);
}

static void unmap(mapping *m) {
  if (m->base) munmap(m->base, m->size);
  m->base = NULL;
  m->size = 0;
}

/* Maps the first `size` bytes of m->fd (again when the size changed). */
static loom_status map_to(mapping *m, size_t size, int prot) {
  if (m->base && m->size == size) return LOOM_OK;
  unmap(m);
  if (size == 0) return LOOM_OK;
  void *p = mmap(NULL, size, prot, MAP_SHARED, m->fd, 0);
  if (p == MAP_FAILED) return LOOM_ERROR(INTERNAL, "mmap of %zu bytes failed", size);
  m->base = p;
  m->size = size;
  return LOOM_OK;
}

static void no_release(loom_storage *s) { (void)s; }

/* For a `time` line: copies `nbytes` at `src` into st (grown as needed) unless it holds them since
 * the last `call` (the same inputs, which a user's repeated calls, and ORT's here, do not copy
 * either). bench/ops' timed inputs are handed to Loom in anonymous
 * memory, as a user's tensors are and as ONNX Runtime's are in the worker (NumPy arrays, which NumPy
 * backs with transparent huge pages from 4 MiB): a /dev/shm mapping has 4 KiB pages only, so a
 * memory-bound kernel reading it directly paid TLB misses its peer did not. The copy is untimed
 * (NumPy's arrays are made before ORT's timed calls too). */
static loom_status stage_input(staging *st, const void *src, size_t nbytes, void **out) {
  static char empty[64];
  *out = nbytes ? st->base : empty;
  if (nbytes == 0 || (st->base && st->staged == nbytes)) return LOOM_OK;
  if (nbytes > st->cap) {
    if (st->base) munmap(st->base, st->cap);
    st->base = NULL;
    st->cap = 0;
    st->staged = SIZE_MAX;
    size_t cap = (nbytes + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return LOOM_ERROR(INTERNAL, "mmap of %zu bytes failed", cap);
    if (cap >= ((size_t)4 << 20)) (void)madvise(p, cap, MADV_HUGEPAGE);
    st->base = p;
    st->cap = cap;
  }
  memcpy(st->base, src, nbytes);
  st->staged = nbytes;
  *out = st->base;
  return LOOM_OK;
}

/* Reads input `index`'s spec "DTYPE RANK D_1 ... D_RANK OFFSET" from `*p` and wraps the bytes it
 * names (`staged`: a staged copy of them). */
static loom_status wrap_input(server *sv, int index, bool staged, char **p, loom_tensor **out) {
  *out = NULL;
  char *tok = strtok_r(NULL, " \n", p);
  loom_dtype dt;
  if (!tok || !loom_dtype_parse(tok, strlen(tok), &dt)) return LOOM_ERROR(INVALID_ARGUMENT, "bad dtype '%s'", tok ? tok : "");
  tok = strtok_r(NULL, " \n", p);
  int rank = tok ? atoi(tok) : -1;
  if (rank < 0 || rank > LOOM_VM_MAX_RANK) return LOOM_ERROR(INVALID_ARGUMENT, "bad rank '%s'", tok ? tok : "");
  int64_t shape[LOOM_VM_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    tok = strtok_r(NULL, " \n", p);
    if (!tok) return LOOM_ERROR(INVALID_ARGUMENT, "missing dim %d", k);
    shape[k] = strtoll(tok, NULL, 10);
  }
  tok = strtok_r(NULL, " \n", p);
  if (!tok) return LOOM_ERROR(INVALID_ARGUMENT, "missing offset");
  size_t offset = strtoull(tok, NULL, 10), nbytes;
  LOOM_PROPAGATE(loom_tensor_nbytes(dt, rank, shape, &nbytes));
  if (offset > sv->in.size || nbytes > sv->in.size - offset)
    return LOOM_ERROR(OUT_OF_RANGE, "input [%zu, +%zu) lies outside the %zu-byte input file", offset, nbytes, sv->in.size);
  void *data = (char *)sv->in.base + offset;
  if (staged) LOOM_PROPAGATE(stage_input(&sv->stage[index], data, nbytes, &data));
  else sv->stage[index].staged = SIZE_MAX;
  loom_storage *st;
  LOOM_PROPAGATE(loom_storage_wrap(loom_rt_device(sv->rt), data, nbytes, no_release, NULL, &st));
  loom_status s = loom_tensor_view(st, 0, dt, rank, shape, out);
  loom_vm_obj_release(&st->hdr);
  return s;
}

/* Copies output 0 to OUT_FILE (grown as needed) and writes the `ok` line. */
static loom_status send_output(server *sv, loom_rt_outputs *o, uint64_t call_ns) {
  if (o->count == 0 || o->items[0]->kind != LOOM_VM_OBJ_TENSOR) return LOOM_ERROR(INTERNAL, "output 0 is not a tensor");
  const loom_tensor *t = (const loom_tensor *)o->items[0];
  if (!loom_tensor_is_contiguous(t)) return LOOM_ERROR(UNIMPLEMENTED, "output 0 is not contiguous");
  size_t nbytes;
  LOOM_PROPAGATE(loom_tensor_nbytes(t->dtype, t->rank, t->shape, &nbytes));
  if (nbytes > sv->out.size) {
    size_t size = (nbytes + 4095) & ~(size_t)4095;
    if (ftruncate(sv->out.fd, (off_t)size)) return LOOM_ERROR(INTERNAL, "cannot grow the output file to %zu bytes", size);
    LOOM_PROPAGATE(map_to(&sv->out, size, PROT_READ | PROT_WRITE));
  }
  uint64_t t0 = loom_clock_ns();
  if (nbytes) memcpy(sv->out.base, t->data, nbytes);
  uint64_t copy_ns = loom_clock_ns() - t0;
  printf("ok %zu %s %d", sv->out.size, loom_dtype_name(t->dtype), t->rank);
  for (int k = 0; k < t->rank; k++) printf(" %lld", (long long)t->shape[k]);
  printf(" %llu %llu\n", (unsigned long long)call_ns, (unsigned long long)copy_ns);
  fflush(stdout);
  return LOOM_OK;
}

/* "call IN_BYTES N specs..." (or "time ...": output 0 not copied out): one call of @main. */
static loom_status serve_call(server *sv, char *line) {
  char *p;
  bool copy = strncmp(line, "time ", 5) != 0;
  strtok_r(line, " \n", &p); /* "call" / "time" */
  char *tok = strtok_r(NULL, " \n", &p);
  size_t in_bytes = tok ? strtoull(tok, NULL, 10) : 0;
  tok = strtok_r(NULL, " \n", &p);
  int n = tok ? atoi(tok) : -1;
  if (n < 0 || n > MAX_INPUTS) return LOOM_ERROR(INVALID_ARGUMENT, "bad input count '%s'", tok ? tok : "");
  LOOM_PROPAGATE(map_to(&sv->in, in_bytes, PROT_READ | PROT_WRITE));
  loom_tensor *in[MAX_INPUTS] = {0};
  loom_status s = LOOM_OK;
  for (int i = 0; i < n && !s; i++) s = loom_status_annotate(wrap_input(sv, i, !copy, &p, &in[i]), __FILE__, __LINE__, "input %d", i);
  loom_rt_outputs o = {0};
  uint64_t t0 = loom_clock_ns();
  if (!s) s = loom_rt_call(sv->rt, "main", in, (uint32_t)n, &o);
  uint64_t call_ns = loom_clock_ns() - t0;
  if (!s && copy) s = send_output(sv, &o, call_ns);
  if (!s && !copy) printf("ok %llu\n", (unsigned long long)call_ns), fflush(stdout);
  loom_rt_outputs_free(&o);
  for (int i = 0; i < n; i++) loom_tensor_release(in[i]);
  return s;
}

/* "threads T": the runtime's thread count from now on. */
static loom_status serve_threads(server *sv, const char *arg) {
  int t = atoi(arg);
  if (t < 1 || t > 1024) return LOOM_ERROR(INVALID_ARGUMENT, "bad thread count '%.20s'", arg);
  LOOM_PROPAGATE(loom_rt_set_threads(sv->rt, (uint32_t)t));
  printf("ok\n");
  fflush(stdout);
  return LOOM_OK;
}

static int usage(void) {
  fprintf(stderr, "usage: bench-loom-serve MODEL.onnx --in IN_FILE --out OUT_FILE [--threads T] [--offload] [--cache]\n");
  return 2;
}

int main(int argc, char **argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* a worker killed by its timeout takes this process with it */
  const char *model = NULL, *in_path = NULL, *out_path = NULL;
  loom_compile_options co = {.no_cache = true};
  loom_rt_options ro = {0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--in") && i + 1 < argc) in_path = argv[++i];
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) ro.threads = (uint32_t)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--offload")) co.offload = true;
    else if (!strcmp(argv[i], "--cache")) co.no_cache = false;
    else if (argv[i][0] != '-' && !model) model = argv[i];
    else return usage();
  }
  if (!model || !in_path || !out_path) return usage();
  server sv = {.in = {.fd = open(in_path, O_RDWR)}, .out = {.fd = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0600)}};
  if (sv.in.fd < 0 || sv.out.fd < 0) {
    reply_error("cannot open the input or output file", LOOM_OK);
    return 1;
  }
  loom_compiled *c = NULL;
  loom_status s = loom_compile_file(model, &co, &c);
  if (!s) s = loom_compiled_open(c, &ro, &sv.rt);
  if (s) {
    reply_error(NULL, s);
    loom_compiled_free(c);
    return 1;
  }
  loom_compile_times t = loom_compiled_times(c);
  uint32_t fn = loom_rt_function_find(sv.rt, "main"), np = fn == UINT32_MAX ? 0 : loom_rt_param_count(sv.rt, fn);
  printf("ready %.1f %.1f %.1f %u", t.passes_ms, t.lower_ms, t.codegen_ms, np);
  for (uint32_t i = 0; i < np; i++) {
    loom_rt_param prm;
    loom_rt_param_get(sv.rt, fn, i, &prm);
    printf(" %s", prm.name);
  }
  printf("\n");
  fflush(stdout);

  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, stdin) > 0) {
    if (!strncmp(line, "quit", 4)) break;
    if (!strncmp(line, "call ", 5) || !strncmp(line, "time ", 5)) s = serve_call(&sv, line);
    else if (!strncmp(line, "threads ", 8)) s = serve_threads(&sv, line + 8);
    else s = LOOM_ERROR(INVALID_ARGUMENT, "unknown request '%.40s'", line);
    if (s) reply_error(NULL, s);
  }
  free(line);
  unmap(&sv.in);
  unmap(&sv.out);
  for (int i = 0; i < MAX_INPUTS; i++)
    if (sv.stage[i].base) munmap(sv.stage[i].base, sv.stage[i].cap);
  close(sv.in.fd);
  close(sv.out.fd);
  loom_rt_close(sv.rt);
  loom_compiled_free(c);
  return 0;
}
