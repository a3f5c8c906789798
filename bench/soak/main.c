/* bench/soak — one runtime called from several threads for minutes, on random shapes, every
 * output compared bit for bit with a serial call's (issue 20; a program, not a CI test).
 *
 *   scripts/zig build bench -Doptimize=ReleaseFast && zig-out/bin/bench-soak [--seconds 600]
 *       [--threads 4] [--pool P] [--model models/gpt2_block.loom] [--range b=1:4,s=0:32] [--seed S]
 *
 * The model is compiled once (JIT) and opened once; every parameter whose dims name a symbol
 * gets fresh inputs per call (allocated from the runtime, filled from the shape: the same shape
 * always gets the same values), the others (the weights) are made once and shared by every
 * call. First every shape of the ranges is called once, serially: its output is the reference.
 * Then `--threads` threads call the runtime at once on shapes drawn at random for `--seconds`
 * seconds; a call whose output differs from its shape's reference by one bit, or that fails,
 * counts as wrong. The work runs in a child process, so that a crash is counted, not just
 * suffered. Printed: the resident memory after the references and a warm-up, progress every
 * 30 s, and the closing line
 *
 *   soak: N calls, W wrong, C crashed, rss +X MB
 *
 * (rss: the change from after the warm-up (a tenth of the run, at most 60 s) to the end: the
 * device's pool and the allocator reach their high-water marks in the warm-up, so a leak shows
 * as growth; the progress lines show the resident memory too). Exit 0 when W and C are 0. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "loom.h"
#include "vm/symeval.h"

#define MAX_VARS 8
#define MAX_PARAMS 32
#define MAX_THREADS 64

/* What the child reports to the parent (shared memory, so a crash leaves the counts). */
typedef struct report {
  _Atomic uint64_t calls, wrong, errors;
  _Atomic int64_t rss_start, rss_end; /* bytes, -1 before measured */
  _Atomic int ready;                   /* references made, threads started */
} report;

typedef struct options {
  double seconds;
  uint32_t threads, pool;
  const char *model;
  const char *range;
  uint64_t seed;
} options;

/* A symbol's range and the shape space (every combination of values). */
typedef struct space {
  uint32_t nvars;
  const char *names[MAX_VARS];
  int64_t lo[MAX_VARS], hi[MAX_VARS];
  uint64_t count; /* shapes */
} space;

/* A shape's serial output. */
typedef struct ref {
  uint32_t nout;
  size_t bytes[4];
  void *data[4];
} ref;

typedef struct soak {
  loom_rt *rt;
  space sp;
  uint32_t nparams;
  loom_rt_param params[MAX_PARAMS];
  bool symbolic[MAX_PARAMS];
  loom_tensor *shared[MAX_PARAMS]; /* the weights */
  ref *refs;                        /* one per shape */
  report *rep;
  double seconds;
} soak;

/* Resident memory of process `pid` (0: this one). */
static int64_t rss_bytes(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, pid ? "/proc/%d/statm" : "/proc/self/statm", (int)pid);
  FILE *f = fopen(path, "r");
  long pages = 0, res = 0;
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = -1;
  fclose(f);
  return res < 0 ? -1 : (int64_t)res * sysconf(_SC_PAGESIZE);
}

static uint64_t mix(uint64_t z) { /* splitmix64's finaliser */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void fill(loom_tensor *t, uint64_t seed) {
  size_t n = loom_tensor_numel(t);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = mix(seed + 0x9E3779B97F4A7C15ull * (i + 1));
    double u = (double)(r >> 11) / 9007199254740992.0 * 2 - 1; /* [-1, 1) */
    switch (t->dtype) {
    case LOOM_DTYPE_F32: ((float *)t->data)[i] = (float)u; break;
    case LOOM_DTYPE_F64: ((double *)t->data)[i] = u; break;
    case LOOM_DTYPE_I64: ((int64_t *)t->data)[i] = (int64_t)(r % 7); break;
    case LOOM_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)(r % 7); break;
    default: memset(t->data, 0, n * loom_dtype_size(t->dtype)); return;
    }
  }
}

static void fail(loom_status s, const char *what) {
  fprintf(stderr, "soak: %s: %s\n", what, loom_status_text(s, 1));
  exit(2);
}

/* The values of shape k of the space. */
static void shape_values(const space *sp, uint64_t k, int64_t *vals) {
  for (uint32_t v = 0; v < sp->nvars; v++) {
    uint64_t span = (uint64_t)(sp->hi[v] - sp->lo[v] + 1);
    vals[v] = sp->lo[v] + (int64_t)(k % span);
    k /= span;
  }
}

/* The inputs of shape k (symbolic parameters new, the weights shared and retained). */
static loom_status make_inputs(soak *s, uint64_t k, loom_tensor **in) {
  int64_t vals[MAX_VARS];
  shape_values(&s->sp, k, vals);
  for (uint32_t p = 0; p < s->nparams; p++) {
    in[p] = NULL;
    if (!s->symbolic[p]) {
      in[p] = s->shared[p];
      loom_vm_obj_retain(&in[p]->hdr);
      continue;
    }
    int64_t shape[LOOM_VM_MAX_RANK];
    for (uint32_t d = 0; d < s->params[p].rank; d++)
      LOOM_PROPAGATE(loom_vm_symeval(s->params[p].dims[d], s->sp.names, vals, s->sp.nvars, &shape[d]));
    LOOM_PROPAGATE(loom_rt_tensor_new(s->rt, (loom_dtype)s->params[p].dtype, (int32_t)s->params[p].rank, shape, &in[p]));
    fill(in[p], k * 1000003u + p);
  }
  return LOOM_OK;
}

static void release_inputs(soak *s, loom_tensor **in) {
  for (uint32_t p = 0; p < s->nparams; p++) loom_tensor_release(in[p]);
}

/* One call on shape k; 0 = equal to the reference (or, with `keep`, stored as it), 1 = differs, 2 = failed. */
static int call_shape(soak *s, uint64_t k, bool keep) {
  loom_tensor *in[MAX_PARAMS];
  loom_status st = make_inputs(s, k, in);
  loom_rt_outputs out = {0};
  if (!st) st = loom_rt_call(s->rt, "main", in, s->nparams, &out);
  release_inputs(s, in);
  if (st) {
    if (keep) fail(st, "a serial reference call");
    loom_status_free(st);
    return 2;
  }
  ref *r = &s->refs[k];
  int result = 0;
  if (keep) r->nout = out.count > 4 ? 4 : out.count;
  else if (out.count != r->nout) result = 1;
  for (uint32_t i = 0; result == 0 && i < r->nout; i++) {
    const loom_tensor *t = (const loom_tensor *)out.items[i];
    size_t nb = loom_tensor_numel(t) * loom_dtype_size(t->dtype);
    if (keep) {
      r->bytes[i] = nb;
      r->data[i] = malloc(nb ? nb : 1);
      if (!r->data[i]) fail(LOOM_OOM(), "keeping a reference");
      memcpy(r->data[i], t->data, nb);
    } else if (nb != r->bytes[i] || memcmp(t->data, r->data[i], nb) != 0) {
      result = 1;
    }
  }
  loom_rt_outputs_free(&out);
  return result;
}

typedef struct worker {
  soak *s;
  uint64_t rng;
  double until;
} worker;

static double now_s(void) { return (double)loom_clock_ns() / 1e9; }

static void *work(void *p) {
  worker *w = p;
  soak *s = w->s;
  while (now_s() < w->until) {
    w->rng = mix(w->rng + 0x9E3779B97F4A7C15ull);
    int r = call_shape(s, w->rng % s->sp.count, false);
    atomic_fetch_add(&s->rep->calls, 1);
    if (r) atomic_fetch_add(&s->rep->wrong, 1);
    if (r == 2) atomic_fetch_add(&s->rep->errors, 1);
  }
  return NULL;
}

/* Parses "b=1:4,s=0:32". */
static void parse_range(const char *text, space *sp) {
  char *copy = strdup(text), *save = NULL;
  sp->nvars = 0;
  sp->count = 1;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char name[64];
    long long lo, hi;
    if (sp->nvars == MAX_VARS || sscanf(tok, "%63[^=]=%lld:%lld", name, &lo, &hi) != 3 || lo < 0 || hi < lo) {
      fprintf(stderr, "soak: bad --range item '%s' (want NAME=LO:HI, 0 <= LO <= HI)\n", tok);
      exit(2);
    }
    sp->names[sp->nvars] = strdup(name);
    sp->lo[sp->nvars] = lo;
    sp->hi[sp->nvars] = hi;
    sp->count *= (uint64_t)(hi - lo + 1);
    sp->nvars++;
  }
  free(copy);
  if (sp->count > 100000) {
    fprintf(stderr, "soak: --range spans %llu shapes; at most 100000 (each gets a serial reference)\n",
            (unsigned long long)sp->count);
    exit(2);
  }
}

/* The child: compile, open, references, warm-up, the threads. */
static int run(const options *o, report *rep) {
  soak s = {.rep = rep, .seconds = o->seconds};
  parse_range(o->range, &s.sp);
  loom_compiled *c;
  loom_status st = loom_compile_file(o->model, NULL, &c);
  if (st) fail(st, o->model);
  loom_rt_options ro = {.threads = o->pool};
  st = loom_compiled_open(c, &ro, &s.rt);
  if (st) fail(st, "opening the runtime");
  uint32_t fn = loom_rt_function_find(s.rt, "main");
  if (fn == UINT32_MAX) fail(LOOM_ERROR(NOT_FOUND, "%s has no @main", o->model), "the model");
  s.nparams = loom_rt_param_count(s.rt, fn);
  if (s.nparams > MAX_PARAMS) fail(LOOM_ERROR(OUT_OF_RANGE, "%u parameters", s.nparams), "the model");
  int64_t zero[MAX_VARS] = {0};
  for (uint32_t p = 0; p < s.nparams; p++) {
    loom_rt_param_get(s.rt, fn, p, &s.params[p]);
    for (uint32_t d = 0; d < s.params[p].rank; d++) {
      char *end;
      strtoll(s.params[p].dims[d], &end, 10);
      if (*end) s.symbolic[p] = true;
    }
    if (s.params[p].dtype < 0) fail(LOOM_ERROR(INVALID_ARGUMENT, "parameter %u takes any dtype", p), "the model");
    if (s.symbolic[p]) continue;
    int64_t shape[LOOM_VM_MAX_RANK];
    for (uint32_t d = 0; d < s.params[p].rank; d++)
      if ((st = loom_vm_symeval(s.params[p].dims[d], s.sp.names, zero, s.sp.nvars, &shape[d]))) fail(st, "a weight's dims");
    if ((st = loom_rt_tensor_new(s.rt, (loom_dtype)s.params[p].dtype, (int32_t)s.params[p].rank, shape, &s.shared[p])))
      fail(st, "a weight");
    fill(s.shared[p], 0xC0FFEEu + p);
  }
  char sig[512];
  loom_rt_signature_text(s.rt, fn, sig, sizeof sig);
  printf("soak: %s on %u threads (runtime pool %u), %llu shapes (%s), %.0f s\n  %s\n", o->model, o->threads,
         loom_rt_threads(s.rt), (unsigned long long)s.sp.count, o->range, o->seconds, sig);
  fflush(stdout);
  s.refs = calloc(s.sp.count, sizeof *s.refs);
  if (!s.refs) fail(LOOM_OOM(), "references");
  double t0 = now_s();
  for (uint64_t k = 0; k < s.sp.count; k++) call_shape(&s, k, true);
  printf("  serial references: %llu calls in %.1f s\n", (unsigned long long)s.sp.count, now_s() - t0);
  /* warm-up: the pool and the allocator reach their high-water marks */
  worker ws[MAX_THREADS];
  pthread_t th[MAX_THREADS];
  double warm = o->seconds / 10 > 60 ? 60 : o->seconds / 10; /* a tenth of the run, at most a minute */
  for (int phase = 0; phase < 2; phase++) {
    double until = now_s() + (phase == 0 ? warm : o->seconds);
    if (phase == 1) {
      atomic_store(&rep->rss_start, rss_bytes(0));
      atomic_store(&rep->calls, 0), atomic_store(&rep->wrong, 0), atomic_store(&rep->errors, 0);
      printf("  after a %.0f s warm-up: rss %.1f MB\n", warm, (double)atomic_load(&rep->rss_start) / 1048576);
      fflush(stdout);
      atomic_store(&rep->ready, 1);
    }
    for (uint32_t t = 0; t < o->threads; t++) {
      ws[t] = (worker){&s, mix(o->seed * 7919u + t + 100u * (uint64_t)phase), until};
      if (pthread_create(&th[t], NULL, work, &ws[t]) != 0) fail(LOOM_ERROR(UNAVAILABLE, "pthread_create"), "threads");
    }
    for (uint32_t t = 0; t < o->threads; t++) pthread_join(th[t], NULL);
  }
  atomic_store(&rep->rss_end, rss_bytes(0));
  for (uint64_t k = 0; k < s.sp.count; k++)
    for (uint32_t i = 0; i < s.refs[k].nout; i++) free(s.refs[k].data[i]);
  free(s.refs);
  for (uint32_t p = 0; p < s.nparams; p++) loom_tensor_release(s.shared[p]);
  loom_rt_close(s.rt);
  loom_compiled_free(c);
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: bench-soak [--seconds 600] [--threads 4] [--pool P] [--model PATH] [--range b=1:4,s=0:32] [--seed S]\n");
  exit(2);
}

int main(int argc, char **argv) {
  options o = {600, 4, 0, "models/gpt2_block.loom", "b=1:4,s=0:32", 1};
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) usage();
    if (!strcmp(a, "--seconds")) o.seconds = atof(v);
    else if (!strcmp(a, "--threads")) o.threads = (uint32_t)atoi(v);
    else if (!strcmp(a, "--pool")) o.pool = (uint32_t)atoi(v);
    else if (!strcmp(a, "--model")) o.model = v;
    else if (!strcmp(a, "--range")) o.range = v;
    else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
    else usage();
  }
  if (o.seconds <= 0 || o.threads < 1 || o.threads > MAX_THREADS) usage();
  report *rep = mmap(NULL, sizeof *rep, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (rep == MAP_FAILED) return perror("mmap"), 2;
  atomic_store(&rep->rss_start, -1);
  atomic_store(&rep->rss_end, -1);
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) return perror("fork"), 2;
  if (child == 0) _exit(run(&o, rep));
  /* the parent: progress every 30 s of the soak, then the verdict */
  int status = 0;
  double start = 0, next = 30;
  for (;;) {
    pid_t w = waitpid(child, &status, WNOHANG);
    if (w == child) break;
    if (w < 0) return perror("waitpid"), 2;
    usleep(200000);
    if (!atomic_load(&rep->ready)) continue;
    if (start == 0) start = now_s();
    if (now_s() - start >= next && next < o.seconds) { /* the closing lines cover the end */
      printf("  %4.0f s: %llu calls, %llu wrong, %llu failed, rss %.1f MB\n", next,
             (unsigned long long)atomic_load(&rep->calls), (unsigned long long)atomic_load(&rep->wrong),
             (unsigned long long)atomic_load(&rep->errors), (double)rss_bytes(child) / 1048576);
      fflush(stdout);
      next += 30;
    }
  }
  bool crashed = WIFSIGNALED(status);
  if (crashed) printf("  the worker process died of signal %d (%s)\n", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WEXITSTATUS(status) != 0) {
    printf("  the worker process exited with %d before the soak ran\n", WEXITSTATUS(status));
    return 2;
  }
  int64_t r0 = atomic_load(&rep->rss_start), r1 = atomic_load(&rep->rss_end);
  uint64_t calls = atomic_load(&rep->calls), wrong = atomic_load(&rep->wrong);
  printf("  rss after warm-up %.1f MB, at the end %.1f MB; %llu calls failed\n", (double)r0 / 1048576,
         (double)r1 / 1048576, (unsigned long long)atomic_load(&rep->errors));
  printf("soak: %llu calls, %llu wrong, %d crashed, rss %+.1f MB\n", (unsigned long long)calls,
         (unsigned long long)wrong, crashed ? 1 : 0, r0 >= 0 && r1 >= 0 ? (double)(r1 - r0) / 1048576 : 0.0);
  return wrong || crashed ? 1 : 0;
}
