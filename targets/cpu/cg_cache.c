/* cg_cache.c — kernels as content-addressed objects: the key of a program, one object per
 * distinct key (identical programs of one compile made once, the disk cache of kcache.h
 * consulted and filled), and the archive of those objects an AOT artifact links.
 *
 * THE KEY (the text the cache compares byte for byte; its digest names the entry and the
 * kernel's symbol `loom_kernel_h<digest>`):
 *
 *     loom kernel key 1
 *     codegen <LOOM_CPU_CODEGEN_VERSION> loom <LOOM_VERSION> build <exe size.mtime> llvm <major.minor.patch>
 *     target <triple> <cpu> <features> opt <level> strict_fp <0|1>
 *     pipeline <LLVM pass pipeline text>   (cg_pipeline: LOOM_LLVM_PIPELINE changes it)
 *     $0 [lo, hi] /d              one line per signature symbol, in f->syms order: its bounds
 *     ...                         (a shape's start at 0) and known divisor under the context's facts
 *     $0 <= $1                    each order or equality between two of them the facts prove
 *     prim @_($0 ...) { ... }     the program as tensorprog/print.c prints it, named `_`, every
 *                                 symbol (signature and loop variables) and parameter buffer
 *                                 spelled $k in order of first appearance
 *
 * Parameter buffers are renamed too ($k), except those a run-time message of the kernel names
 * (indexed by data: take, gather, scatter); local buffers and lets keep their names (chosen by
 * the generators, the same in every layer; a local's name is in its allocation message). What the
 * code depends on is all there: the program's structure, the facts codegen proves with, the
 * machine and the options, and the versions of what generates the code. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/clock.h"
#include "targets/cpu/cg_internal.h"
#include "tensorprog/tp.h"
#include "vm/threadpool.h"

#ifndef LOOM_VERSION
#define LOOM_VERSION "dev"
#endif

/* ---- the key ---------------------------------------------------------------------------- */

typedef struct name_list {
  const char *v[256];
  size_t n;
  bool overflow;
} name_list;

static void add_name(name_list *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i], name)) return;
  if (l->n < sizeof l->v / sizeof *l->v) l->v[l->n++] = name;
  else l->overflow = true;
}

/* Buffers named in the kernel's run-time messages: those indexed by data (take, gather,
 * scatter: "an index into axis d of 'X'"). */
static void mark_named_expr(const loom_tp_expr *e, name_list *keep) {
  if (!e) return;
  switch (e->kind) {
  case LOOM_TP_EXPR_LOAD:
    for (int d = 0; d < e->u.load.buf->ndim; d++) {
      if (loom_tp_expr_reads_memory(e->u.load.idx[d])) add_name(keep, e->u.load.buf->name);
      mark_named_expr(e->u.load.idx[d], keep);
    }
    return;
  case LOOM_TP_EXPR_OP:
    for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) mark_named_expr(e->u.op.args[i], keep);
    return;
  case LOOM_TP_EXPR_CAST:
    mark_named_expr(e->u.cast_arg, keep);
    return;
  case LOOM_TP_EXPR_SELECT:
    mark_named_expr(e->u.select.cond, keep);
    mark_named_expr(e->u.select.then_e, keep);
    mark_named_expr(e->u.select.else_e, keep);
    return;
  default:
    return;
  }
}

/* The loop variables' names into `l`; buffers whose names the code carries into `keep`. */
static void walk_names(const loom_tp_stmt *s, name_list *l, name_list *keep) {
  if (!s) return;
  switch (s->kind) {
  case LOOM_TP_STMT_SEQ:
    for (size_t i = 0; i < s->u.seq.n; i++) walk_names(s->u.seq.items[i], l, keep);
    return;
  case LOOM_TP_STMT_FOR:
    add_name(l, loom_sym_var_name(s->u.loop.var));
    walk_names(s->u.loop.body, l, keep);
    return;
  case LOOM_TP_STMT_STORE:
    for (int d = 0; d < s->u.store.buf->ndim; d++) {
      if (loom_tp_expr_reads_memory(s->u.store.idx[d])) add_name(keep, s->u.store.buf->name);
      mark_named_expr(s->u.store.idx[d], keep);
    }
    mark_named_expr(s->u.store.value, keep);
    return;
  case LOOM_TP_STMT_LET:
    mark_named_expr(s->u.let.value, keep);
    return;
  case LOOM_TP_STMT_IF:
    mark_named_expr(s->u.if_.cond, keep);
    walk_names(s->u.if_.then_s, l, keep);
    walk_names(s->u.if_.else_s, l, keep);
    return;
  case LOOM_TP_STMT_ALLOC: /* a local's name is in its allocation-failure message */
    add_name(keep, s->u.alloc->name);
    return;
  case LOOM_TP_STMT_BARRIER: /* GPU programs only: nothing named */
    return;
  case LOOM_TP_STMT_PREFETCH:
    for (int d = 0; d < s->u.prefetch.buf->ndim; d++) mark_named_expr(s->u.prefetch.idx[d], keep);
    return;
  }
}

static bool in_list(const name_list *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->v[i], name)) return true;
  return false;
}

static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

/* `text` with every identifier token that names a symbol written $k (k: first appearance). */
static void rename_symbols(const char *text, const name_list *names, loom_strbuf *out) {
  int order[256];
  for (size_t i = 0; i < names->n; i++) order[i] = -1;
  int next = 0;
  for (const char *p = text; *p;) {
    if (!ident_start(*p) || (p > text && (ident_char(p[-1]) || p[-1] == '$'))) {
      loom_strbuf_putc(out, *p++);
      continue;
    }
    const char *e = p;
    while (ident_char(*e)) e++;
    size_t len = (size_t)(e - p);
    size_t k = 0;
    while (k < names->n && (strlen(names->v[k]) != len || memcmp(names->v[k], p, len))) k++;
    if (k < names->n) {
      if (order[k] < 0) order[k] = next++;
      loom_strbuf_printf(out, "$%d", order[k]);
    } else {
      loom_strbuf_append(out, p, len);
    }
    p = e;
  }
}

/* The running build's identity: the size and modification time of this executable, so that
 * a rebuilt Loom (a changed code generator whose version constant was not bumped) never uses
 * objects an earlier build made. Empty where /proc/self/exe cannot be read. */
static char build_id[96];
static void find_build_id(void) {
  struct stat sb;
  if (stat("/proc/self/exe", &sb) == 0)
    snprintf(build_id, sizeof build_id, "%lld.%lld.%09ld", (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
             (long)sb.st_mtim.tv_nsec);
}

static void print_bound(loom_strbuf *sb, int64_t v, bool inf, const char *inf_text) {
  if (inf) loom_strbuf_puts(sb, inf_text);
  else loom_strbuf_printf(sb, "%lld", (long long)v);
}

loom_status cg_kernel_key(const cg_machine *m, loom_sym_ctx *cx, const loom_tp_func *f, loom_strbuf *key) {
  unsigned maj, min, pat;
  LLVMGetVersion(&maj, &min, &pat);
  int lvl = m->opt ? m->opt->opt_level : 0;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_build_id);
  char pbuf[32];
  loom_strbuf_printf(key, "loom kernel key 1\ncodegen %d loom %s build %s llvm %u.%u.%u\ntarget %s %s %s opt %d strict_fp %d\n"
                     "pipeline %s\n",
                     LOOM_CPU_CODEGEN_VERSION, LOOM_VERSION, build_id, maj, min, pat, m->triple, m->cpu, m->feat, lvl,
                     m->opt && m->opt->strict_fp ? 1 : 0, cg_pipeline(m->opt, pbuf, sizeof pbuf));
  name_list names = {.n = 0};
  for (size_t j = 0; j < f->nsyms; j++) add_name(&names, loom_sym_var_name(f->syms[j]));
  for (size_t i = 0; i < f->nparams; i++)
    if (!f->params[i].is_buffer) add_name(&names, loom_sym_var_name(f->params[i].scalar.var));
  name_list keep = {.n = 0};
  walk_names(f->body, &names, &keep);
  /* parameter buffers are named by the graph (one name per layer): renamed, unless a run-time
   * message of the code names them */
  for (size_t i = 0; i < f->nparams; i++)
    if (f->params[i].is_buffer && !in_list(&keep, f->params[i].buf->name)) add_name(&names, f->params[i].buf->name);
  if (keep.overflow) names.overflow = true;
  loom_strbuf text;
  loom_strbuf_init(&text, NULL);
  /* the signature symbols: what codegen may prove about them */
  for (size_t j = 0; j < f->nsyms; j++) {
    loom_sym_interval iv = loom_sym_bounds(cx, f->syms[j]);
    loom_strbuf_printf(&text, "%s [", loom_sym_var_name(f->syms[j]));
    print_bound(&text, iv.lo, iv.lo_inf, "-inf");
    loom_strbuf_puts(&text, ", ");
    print_bound(&text, iv.hi, iv.hi_inf, "inf");
    loom_strbuf_printf(&text, "] /%lld\n", (long long)loom_sym_known_divisor(cx, f->syms[j]));
  }
  /* what is known between them (learned equalities, orderings: bounds of a difference use it) */
  for (size_t i = 0; i < f->nsyms; i++)
    for (size_t j = i + 1; j < f->nsyms; j++) {
      bool le = loom_sym_prove_le(cx, f->syms[i], f->syms[j]) == LOOM_SYM_TRUE;
      bool ge = loom_sym_prove_le(cx, f->syms[j], f->syms[i]) == LOOM_SYM_TRUE;
      if (le || ge)
        loom_strbuf_printf(&text, "%s %s %s\n", loom_sym_var_name(f->syms[i]), le && ge ? "==" : le ? "<=" : ">=",
                           loom_sym_var_name(f->syms[j]));
    }
  loom_tp_func anon = *f;
  anon.name = "_";
  loom_tp_print_func(&anon, &text);
  if (names.overflow) loom_strbuf_puts(key, "unrenamed\n"); /* over 256 symbols: the names stay (only hits lost) */
  if (names.overflow) loom_strbuf_append(key, loom_strbuf_cstr(&text), text.len);
  else rename_symbols(loom_strbuf_cstr(&text), &names, key);
  bool oom = text.oom || key->oom;
  loom_strbuf_free(&text);
  return oom ? LOOM_OOM() : LOOM_OK;
}

/* ---- one object per distinct key ------------------------------------------------------- */

static void kobj_free(cg_kobj *k) {
  free(k->key);
  free(k->obj);
}

void cg_kobjs_free(cg_kobjs *ks) {
  for (size_t i = 0; i < ks->n; i++) kobj_free(&ks->v[i]);
  free(ks->v);
  free(ks->which);
  memset(ks, 0, sizeof *ks);
}

/* CPU time of the calling thread, ns: what a kernel's compile costs whatever else runs. */
static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* LOOM_CG_DUMP=DIR (a debugging aid): each kernel's LLVM IR as LLVM built it, DIR/NAME.ll, and
 * after the optimisation pipeline, DIR/NAME.opt.ll (what machine code is made from). */
static void dump_ir(LLVMModuleRef mod, const char *name, const char *stage) {
  const char *dir = getenv("LOOM_CG_DUMP");
  if (!dir || !*dir) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%s.ll", dir, name, stage);
  char *err = NULL;
  if (LLVMPrintModuleToFile(mod, path, &err)) fprintf(stderr, "LOOM_CG_DUMP: %s: %s\n", path, err ? err : "?");
  LLVMDisposeMessage(err);
}

/* Compiles kobj `k` (IR under `lock` when given: the symbolic context is shared), to an object in memory. */
static loom_status compile_kobj(const cg_machine *m, LLVMTargetMachineRef tm, loom_sym_ctx *cx, cg_kobj *k,
                                pthread_mutex_t *lock) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  const char *base = k->base;
  uint64_t c0 = thread_cpu_ns(), t0 = loom_clock_ns();
  if (lock) pthread_mutex_lock(lock);
  loom_status st = cg_build_module(c, tm, m->cpu, m->feat, m->opt, cx, &k->f, &base, 1, &mod);
  if (lock) pthread_mutex_unlock(lock);
  uint64_t t1 = loom_clock_ns();
  if (!st) dump_ir(mod, k->f->name, "");
  if (!st) st = cg_optimize(mod, tm, m->opt);
  if (!st) dump_ir(mod, k->f->name, ".opt");
  uint64_t t2 = loom_clock_ns();
  if (!st) {
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &buf)) {
      st = LOOM_ERROR(INTERNAL, "program @%s: LLVM cannot emit machine code: %s", k->f->name, err ? err : "?");
    } else {
      k->len = LLVMGetBufferSize(buf);
      k->obj = malloc(k->len ? k->len : 1);
      if (!k->obj) st = LOOM_OOM();
      else memcpy(k->obj, LLVMGetBufferStart(buf), k->len);
      LLVMDisposeMemoryBuffer(buf);
    }
    LLVMDisposeMessage(err);
  }
  k->ns[0] = t1 - t0, k->ns[1] = t2 - t1, k->ns[2] = loom_clock_ns() - t2;
  k->cpu_ns = thread_cpu_ns() - c0;
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(c);
  return st;
}

typedef struct work {
  const cg_machine *m;
  loom_sym_ctx *cx;
  cg_kobj **todo;
  size_t n;
  size_t next; /* atomic */
  pthread_mutex_t lock;
} work;

typedef struct worker {
  work *w;
  loom_status st;
} worker;

static void *worker_run(void *arg) {
  worker *me = arg;
  work *w = me->w;
  LLVMTargetMachineRef tm;
  me->st = cg_make_tm(w->m->opt, &tm, NULL, NULL);
  if (me->st) return NULL;
  for (;;) {
    size_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
    if (i >= w->n || me->st) break;
    me->st = compile_kobj(w->m, tm, w->cx, w->todo[i], &w->lock);
  }
  LLVMDisposeTargetMachine(tm);
  return NULL;
}

/* Compile threads: LOOM_COMPILE_THREADS when set (1 = serial), else the CPUs this process may
 * run on; at most 8 and at most the work. The objects do not depend on it (each kernel is
 * compiled alone, in its own LLVM context), so neither do artifacts. */
static size_t compile_threads(size_t n) {
  const char *env = getenv("LOOM_COMPILE_THREADS");
  long t = env && *env ? strtol(env, NULL, 10) : (long)loom_cpu_cores_available();
  if (t < 1) t = 1;
  if (t > 8) t = 8;
  return (size_t)t < n ? (size_t)t : n;
}

/* LLVM makes some process-wide state on first use, lazily (the timer group of the pass
 * instrumentation, option tables, ...), synchronised in code ThreadSanitizer does not see.
 * A small function run through optimisation and machine code once, before the first workers
 * start, makes that state while one thread runs. */
static void warm_up_llvm(const cg_machine *m) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static bool done;
  pthread_mutex_lock(&lock);
  if (!done) {
    LLVMContextRef c = LLVMContextCreate();
    LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("warm_up", c);
    char *triple = LLVMGetTargetMachineTriple(m->tm);
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(m->tm);
    char *layout = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(mod, layout);
    LLVMDisposeMessage(layout);
    LLVMDisposeTargetData(td);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0);
    LLVMValueRef fn = LLVMAddFunction(mod, "warm_up", fty);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, fn, "entry"));
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    loom_status st = cg_optimize(mod, m->tm, m->opt);
    if (st) loom_status_free(st);
    char *err = NULL;
    LLVMMemoryBufferRef buf = NULL;
    if (!LLVMTargetMachineEmitToMemoryBuffer(m->tm, mod, LLVMObjectFile, &err, &buf)) LLVMDisposeMemoryBuffer(buf);
    LLVMDisposeMessage(err);
    LLVMDisposeModule(mod);
    LLVMContextDispose(c);
    done = true;
  }
  pthread_mutex_unlock(&lock);
}

/* Compiles `todo[0..n)`: in the calling thread, or over worker threads each with its own
 * target machine. */
static loom_status compile_all(const cg_machine *m, loom_sym_ctx *cx, cg_kobj **todo, size_t n) {
  size_t nt = compile_threads(n);
  if (nt <= 1) {
    for (size_t i = 0; i < n; i++) LOOM_PROPAGATE(compile_kobj(m, m->tm, cx, todo[i], NULL));
    return LOOM_OK;
  }
  warm_up_llvm(m);
  work w = {.m = m, .cx = cx, .todo = todo, .n = n};
  pthread_mutex_init(&w.lock, NULL);
  worker ws[8];
  pthread_t th[8];
  bool started[8] = {false};
  for (size_t k = 0; k < nt; k++) ws[k] = (worker){.w = &w};
  for (size_t k = 1; k < nt; k++) started[k] = pthread_create(&th[k], NULL, worker_run, &ws[k]) == 0;
  worker_run(&ws[0]);
  for (size_t k = 1; k < nt; k++)
    if (started[k]) pthread_join(th[k], NULL);
  pthread_mutex_destroy(&w.lock);
  loom_status st = LOOM_OK;
  for (size_t k = 0; k < nt; k++) {
    if (!st) st = ws[k].st;
    else if (ws[k].st) loom_status_free(ws[k].st);
  }
  return st;
}

/* qsort order of kernels to compile: the longer key first, then the earlier in the program (the
 * order changes no object: each kernel is compiled alone). */
static int longest_first(const void *a, const void *b) {
  const cg_kobj *x = *(cg_kobj *const *)a, *y = *(cg_kobj *const *)b;
  if (x->key_len != y->key_len) return x->key_len > y->key_len ? -1 : 1;
  return x < y ? -1 : x > y;
}

loom_status cg_kernel_objects(const cg_machine *m, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                              loom_kcache *kc, cg_kobjs *out, loom_cpu_cache_stats *stats) {
  memset(out, 0, sizeof *out);
  out->v = calloc(n ? n : 1, sizeof *out->v);
  out->which = calloc(n ? n : 1, sizeof *out->which);
  cg_kobj **todo = calloc(n ? n : 1, sizeof *todo);
  loom_status st = out->v && out->which && todo ? LOOM_OK : LOOM_OOM();
  uint64_t t0 = loom_clock_ns();
  size_t ntodo = 0;
  loom_strbuf key;
  loom_strbuf_init(&key, NULL);
  for (size_t i = 0; i < n && !st; i++) {
    loom_strbuf_clear(&key);
    st = cg_kernel_key(m, cx, fs[i], &key);
    if (st) break;
    size_t u = 0;
    while (u < out->n && (out->v[u].key_len != key.len || memcmp(out->v[u].key, loom_strbuf_cstr(&key), key.len))) u++;
    out->which[i] = u;
    if (u < out->n) continue; /* the same content as an earlier program: compiled once */
    cg_kobj *k = &out->v[out->n++];
    k->f = fs[i];
    k->key_len = key.len;
    k->key = malloc(key.len + 1);
    if (!k->key) {
      st = LOOM_OOM();
      break;
    }
    memcpy(k->key, loom_strbuf_cstr(&key), key.len + 1);
    char hex[33];
    loom_kcache_digest(k->key, k->key_len, hex);
    snprintf(k->base, sizeof k->base, "h%s", hex);
    k->hit = loom_kcache_get(kc, k->key, k->key_len, &k->obj, &k->len);
    if (!k->hit) todo[ntodo++] = k;
  }
  loom_strbuf_free(&key);
  uint64_t t1 = loom_clock_ns();
  /* the longest first (the key's length, the printed program's, as the estimate): a big kernel
   * (flash attention) taken last by one worker would leave the other idle till it ends */
  if (!st && ntodo > 1) qsort(todo, ntodo, sizeof *todo, longest_first);
  if (!st) st = compile_all(m, cx, todo, ntodo);
  for (size_t i = 0; i < ntodo && !st; i++) loom_kcache_put(kc, todo[i]->key, todo[i]->key_len, todo[i]->obj, todo[i]->len);
  /* LOOM_CG_TIMES=1: one stderr line per kernel LLVM compiled (where a cold compile's time goes) */
  const char *times = getenv("LOOM_CG_TIMES");
  for (size_t i = 0; i < ntodo && !st && times && *times && *times != '0'; i++)
    fprintf(stderr,
            "cg: @%s: IR %.1f ms, optimisation %.1f ms, machine code %.1f ms, cpu %.1f ms, object %zu bytes, key %zu bytes\n",
            todo[i]->f->name, (double)todo[i]->ns[0] / 1e6, (double)todo[i]->ns[1] / 1e6, (double)todo[i]->ns[2] / 1e6,
            (double)todo[i]->cpu_ns / 1e6, todo[i]->len, todo[i]->key_len);
  if (stats) {
    *stats = (loom_cpu_cache_stats){.kernels = (uint32_t)n, .unique = (uint32_t)out->n, .compiled = (uint32_t)ntodo,
                                    .key_ms = (double)(t1 - t0) / 1e6};
    for (size_t u = 0; u < out->n; u++) stats->hits += out->v[u].hit;
    for (size_t i = 0; i < ntodo; i++) {
      stats->irgen_ms += (double)todo[i]->ns[0] / 1e6;
      stats->opt_ms += (double)todo[i]->ns[1] / 1e6;
      stats->mc_ms += (double)todo[i]->ns[2] / 1e6;
    }
    loom_kcache_stats ks = loom_kcache_stats_of(kc);
    stats->rejected = ks.rejected;
  }
  free(todo);
  if (st) cg_kobjs_free(out);
  return st;
}

/* ---- the archive (AOT) ------------------------------------------------------------------ */

static void ar_header(loom_strbuf *sb, const char *name, size_t size) {
  char h[61];
  snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644", size);
  loom_strbuf_append(sb, h, 60);
}

static void put_be32(loom_strbuf *sb, uint32_t v) {
  char b[4] = {(char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v};
  loom_strbuf_append(sb, b, 4);
}

loom_status cg_write_archive(const cg_kobjs *ks, loom_strbuf *out) {
  /* the symbol table: one kernel symbol per member */
  size_t names = 0;
  for (size_t u = 0; u < ks->n; u++) names += strlen("loom_kernel_") + strlen(ks->v[u].base) + 1;
  size_t symtab = 4 + 4 * ks->n + names;
  size_t off = 8 + 60 + symtab + (symtab & 1);
  loom_strbuf_puts(out, "!<arch>\n");
  ar_header(out, "/", symtab);
  put_be32(out, (uint32_t)ks->n);
  for (size_t u = 0; u < ks->n; u++) {
    put_be32(out, (uint32_t)off);
    off += 60 + ks->v[u].len + (ks->v[u].len & 1);
  }
  for (size_t u = 0; u < ks->n; u++) {
    loom_strbuf_printf(out, "loom_kernel_%s", ks->v[u].base);
    loom_strbuf_append(out, "", 1);
  }
  if (symtab & 1) loom_strbuf_putc(out, '\n');
  for (size_t u = 0; u < ks->n; u++) {
    char name[32];
    snprintf(name, sizeof name, "k%zu.o/", u);
    ar_header(out, name, ks->v[u].len);
    loom_strbuf_append(out, (const char *)ks->v[u].obj, ks->v[u].len);
    if (ks->v[u].len & 1) loom_strbuf_putc(out, '\n');
  }
  return out->oom ? LOOM_OOM() : LOOM_OK;
}
