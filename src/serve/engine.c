/* engine.c — `loom serve`'s engine: binds a compiled decoder's serving interface
 * (docs/serve.md), owns its paged K/V cache and weights, and runs the engine thread: plan a
 * step (sched.c), build the ragged batch's inputs, call the one compiled module, write the
 * step's keys and values into their pages, sample (sample.c) and hand tokens to the requests.
 * One mutex guards the scheduler and the requests; the model call, the cache writes and the
 * sampling run outside it (only the engine thread touches those), so HTTP threads submit and
 * read while a step runs. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/file.h"
#include "graph/passes.h"
#include "graph/safetensors.h"
#include "loom.h"
#include "serve/metrics.h"
#include "serve/serve.h"
#include "serve/serve_internal.h"

enum { MAX_PARAMS = 256, MAX_CACHES = 128, MAX_STOP = 64 };

/* What each parameter of @main is to the engine. */
typedef enum role {
  ROLE_WEIGHT,       /* anything else: a weight, given once */
  ROLE_TOKENS,       /* (t,) i64 */
  ROLE_POSITIONS,    /* (t,) i64 */
  ROLE_SEQ_IDS,      /* (t,) i64 */
  ROLE_CTX_LENS,     /* (b,) i64 */
  ROLE_BLOCK_TABLES, /* (b, m) i64 */
  ROLE_LAST_INDEX,   /* (b,) i64 */
  ROLE_CACHE,        /* k_cache* / v_cache*: (n, pg, hk, d), owned by the engine */
  ROLE_COUNT
} role;

static const char *const role_names[ROLE_COUNT] = {"", "tokens", "positions", "seq_ids", "ctx_lens", "block_tables", "last_index", ""};

struct loom_serve_req {
  loom_serve_engine *e;       /* its engine */
  uint64_t id;                /* cmpl-<id> */
  int refs;                   /* the caller's and, while a choice runs, the engine's (under e->mu) */
  size_t n;                   /* choices */
  loom_serve_seq *seqs;       /* one per choice */
  loom_serve_finish *finish;  /* per choice */
  loom_serve_rng *rng;        /* per choice */
  uint64_t *t_last;           /* per choice: when its last token came (ns; 0: none yet) */
  loom_serve_sampling samp;   /* sampling */
  int64_t stop[MAX_STOP];     /* stop tokens */
  size_t nstop;
  int64_t running;            /* choices not finished */
  bool cancelled;             /* the client went away */
  char *error;                /* a FAILED request's message */
  uint64_t t_submit;          /* ns */
  pthread_cond_t cv;          /* signalled when a choice advances */
  struct loom_serve_req *prev, *next; /* the engine's list of requests it still runs */
};

struct loom_serve_engine {
  loom_serve_options o;           /* as opened */
  loom_compiled *c;               /* the compiled module (compiled once) */
  loom_graph_module *onnx_m;      /* the module c was compiled from (c does not own it): an ONNX decoder's
                                     rewritten one, or a .loom decoder's with its weights as constants */
  loom_rt *rt;                    /* its runtime */
  loom_safetensors *wfile;        /* the weights file (its tensors are borrowed), or NULL */
  uint32_t np;                    /* @main's parameters */
  role roles[MAX_PARAMS];         /* what each one is */
  loom_tensor *fixed[MAX_PARAMS]; /* weights and caches, passed to every step */
  uint32_t ncache;                /* cache parameters, in parameter order */
  uint32_t cache_param[MAX_CACHES];
  int64_t slot_elems[MAX_CACHES]; /* hk * d of each cache */
  int64_t vocab, max_context;     /* from the probe step / the options */
  char model_name[256];           /* the model file's base name */
  loom_serve_sched sched;         /* pages, queue, running set */
  pthread_mutex_t mu;             /* guards sched, the requests, the metrics */
  pthread_cond_t work;            /* the engine thread waits on it for work */
  pthread_t thread;               /* the engine thread */
  bool thread_started;
  bool stop;                      /* close: the thread exits */
  bool shutting;                  /* shutdown: no new requests */
  uint64_t next_id;               /* request ids */
  loom_serve_req *reqs;           /* requests with a running choice */
  void *scratch;                  /* the sampler's (2 * vocab doubles) */
  loom_serve_metrics m;           /* counters and histograms */
  FILE *step_log;                 /* --step-log: one line per step, written by the engine thread, or NULL */
};

/* ---- weights ------------------------------------------------------------------------------ */

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

void loom_serve_random_weight(const char *name, uint64_t seed, float *out, size_t n) {
  const char *base = strrchr(name, '.') ? strrchr(name, '.') + 1 : name;
  bool gain = strstr(base, "_g") != NULL, bias = !strncmp(base, "b_", 2) || strstr(base, "_b") != NULL;
  loom_serve_rng r = {seed ^ hash_name(name)};
  for (size_t i = 0; i < n; i++) {
    if (gain) out[i] = 1.0f;
    else if (bias) out[i] = 0.0f;
    else {
      double u1 = loom_serve_rng_uniform(&r), u2 = loom_serve_rng_uniform(&r);
      out[i] = (float)(0.1 * sqrt(-2 * log(u1 + 1e-300)) * cos(6.283185307179586 * u2));
    }
  }
}

/* A dim of a parameter as text: its value when it is a constant. */
static bool const_dim(const char *text, int64_t *v) {
  char *end;
  long long x = strtoll(text, &end, 10);
  if (end == text || *end) return false;
  *v = x;
  return true;
}

static loom_status load_weight(loom_serve_engine *e, uint32_t i, const loom_rt_param *p) {
  int64_t shape[LOOM_VM_MAX_RANK];
  if (e->wfile) {
    const loom_safetensors_tensor *w = loom_safetensors_find(e->wfile, p->name);
    if (!w) return LOOM_ERROR(NOT_FOUND, "weight '%s' is not in '%s'", p->name, e->o.weights);
    if ((int32_t)w->dtype != p->dtype || (uint32_t)w->rank != p->rank)
      return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' in '%s' is %s of rank %d; the model wants %s of rank %u", p->name, e->o.weights,
                        loom_dtype_name(w->dtype), w->rank, p->dtype >= 0 ? loom_dtype_name((loom_dtype)p->dtype) : "any", p->rank);
    for (uint32_t k = 0; k < p->rank; k++) {
      int64_t v;
      if (const_dim(p->dims[k], &v) && v != w->dims[k])
        return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' axis %u is %lld in '%s'; the model wants %s", p->name, k, (long long)w->dims[k],
                          e->o.weights, p->dims[k]);
      shape[k] = w->dims[k];
    }
    /* borrowed: the mapping stays open while the engine runs, and nothing writes a weight */
    return loom_rt_tensor_borrow(e->rt, w->dtype, (int32_t)w->rank, shape, (void *)w->data, w->nbytes, &e->fixed[i]);
  }
  if (!e->o.random_weights) return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' has no value: give --weights FILE or --random-weights SEED", p->name);
  if (p->dtype != LOOM_DTYPE_F32) return LOOM_ERROR(INVALID_ARGUMENT, "--random-weights makes f32 weights; '%s' is not f32", p->name);
  for (uint32_t k = 0; k < p->rank; k++)
    if (!const_dim(p->dims[k], &shape[k]))
      return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' axis %u is symbolic (%s): --random-weights needs constant shapes; give --weights FILE",
                        p->name, k, p->dims[k]);
  LOOM_PROPAGATE(loom_rt_tensor_new(e->rt, LOOM_DTYPE_F32, (int32_t)p->rank, shape, &e->fixed[i]));
  loom_serve_random_weight(p->name, e->o.weight_seed, e->fixed[i]->data, loom_tensor_numel(e->fixed[i]));
  return LOOM_OK;
}

static loom_status make_cache(loom_serve_engine *e, uint32_t i, const loom_rt_param *p) {
  int64_t hk, d;
  if (p->rank != 4 || !const_dim(p->dims[2], &hk) || !const_dim(p->dims[3], &d) || p->dtype != LOOM_DTYPE_F32)
    return LOOM_ERROR(INVALID_ARGUMENT, "cache parameter '%s' must be f32 (pages, page_size, heads, dim) with constant heads and dim", p->name);
  if (e->ncache == MAX_CACHES) return LOOM_ERROR(INVALID_ARGUMENT, "more than %d cache parameters", MAX_CACHES);
  int64_t shape[4] = {e->o.kv_pages, e->o.page_size, hk, d};
  LOOM_PROPAGATE(loom_rt_tensor_new(e->rt, LOOM_DTYPE_F32, 4, shape, &e->fixed[i]));
  memset(e->fixed[i]->data, 0, loom_tensor_numel(e->fixed[i]) * sizeof(float));
  e->cache_param[e->ncache] = i;
  e->slot_elems[e->ncache++] = hk * d;
  return LOOM_OK;
}

/* What @main's parameter `name` is: one of the six batch inputs, a cache, else a weight. */
static role role_of(const char *name) {
  for (int k = ROLE_TOKENS; k <= ROLE_LAST_INDEX; k++)
    if (!strcmp(name, role_names[k])) return (role)k;
  if (!strncmp(name, "k_cache", 7) || !strncmp(name, "v_cache", 7)) return ROLE_CACHE;
  return ROLE_WEIGHT;
}

/* Most weights bound as constants (@main's parameters are at most MAX_PARAMS). */
#define MAX_BOUND MAX_PARAMS

/* The weights of a .loom decoder's @main, bound as module constants before it is compiled
 * (loom_graph_bind_params), so that every constant pass applies to them: the calls of layer
 * functions that pass them are inlined and the matmul weights laid out in panels (docs/serve.md
 * "Weights are constants"). From the weights file the constants borrow its mapping; random ones
 * are made here and owned by the module. A weight with a symbolic dim leaves every weight a
 * parameter (bound at each call, as before). */
static loom_status bind_weights_as_constants(loom_serve_engine *e) {
  loom_graph_module *m = e->onnx_m;
  loom_graph_func *f = loom_graph_module_find_func(m, "main");
  if (!f) return LOOM_ERROR(NOT_FOUND, "'%s' has no function @main", e->o.model);
  if (f->nparams > MAX_BOUND) return LOOM_ERROR(INVALID_ARGUMENT, "@main has %zu parameters; at most %d", f->nparams, MAX_BOUND);
  const char *names[MAX_BOUND];
  const loom_sinfo *sinfos[MAX_BOUND];
  const void *data[MAX_BOUND];
  size_t n = 0;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  for (size_t i = 0; i < f->nparams; i++) {
    const char *name = f->params[i]->u.var.name;
    const loom_sinfo *p = f->params[i]->sinfo;
    if (role_of(name) != ROLE_WEIGHT) continue;
    if (p->kind != LOOM_SINFO_TENSOR || p->ndim < 0 || p->ndim > LOOM_VM_MAX_RANK) return LOOM_OK;
    const loom_sym_expr *dims[LOOM_VM_MAX_RANK];
    int64_t c[LOOM_VM_MAX_RANK];
    for (int k = 0; k < p->ndim; k++)
      if (!loom_sym_is_const(p->dims[k], &c[k])) return LOOM_OK; /* symbolic: every weight stays a parameter */
    if (e->wfile) {
      const loom_safetensors_tensor *w = loom_safetensors_find(e->wfile, name);
      if (!w) return LOOM_ERROR(NOT_FOUND, "weight '%s' is not in '%s'", name, e->o.weights);
      if (w->dtype != p->dtype || w->rank != p->ndim)
        return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' in '%s' is %s of rank %d; the model wants %s of rank %d", name, e->o.weights,
                          loom_dtype_name(w->dtype), w->rank, loom_dtype_name(p->dtype), p->ndim);
      for (int k = 0; k < p->ndim; k++)
        if (w->dims[k] != c[k])
          return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' axis %d is %lld in '%s'; the model wants %lld", name, k, (long long)w->dims[k],
                            e->o.weights, (long long)c[k]);
      data[n] = w->data;
    } else {
      if (!e->o.random_weights)
        return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' has no value: give --weights FILE or --random-weights SEED", name);
      if (p->dtype != LOOM_DTYPE_F32) return LOOM_ERROR(INVALID_ARGUMENT, "--random-weights makes f32 weights; '%s' is not f32", name);
      size_t elems = 1;
      for (int k = 0; k < p->ndim; k++) elems *= (size_t)c[k];
      float *v = malloc(elems ? elems * sizeof *v : 1);
      if (!v) return LOOM_OOM();
      loom_serve_random_weight(name, e->o.weight_seed, v, elems);
      LOOM_PROPAGATE(loom_graph_module_adopt(m, v, free));
      data[n] = v;
    }
    for (int k = 0; k < p->ndim; k++) dims[k] = loom_sym_const(cx, c[k]);
    if (!(sinfos[n] = loom_sinfo_tensor(m, p->dtype, p->ndim, dims, NULL))) return LOOM_OOM();
    if (!strcmp(name, "wpe") && p->ndim >= 1 && !e->o.max_context) e->max_context = c[0];
    names[n++] = name;
  }
  size_t bound = 0;
  LOOM_RETURN_IF_ERROR(loom_graph_bind_params(m, "main", n, names, sinfos, data, &bound), "while binding the weights of '%s'",
                       e->o.model);
  return LOOM_OK;
}

/* Whether a binding of seq `s` (or of its branches and loop bodies) calls graph function `name`. */
static bool seq_calls(const loom_graph_seq *s, const char *name) {
  for (size_t bi = 0; bi < s->nblocks; bi++)
    for (size_t i = 0; i < s->blocks[bi]->n; i++) {
      const loom_graph_expr *v = s->blocks[bi]->bindings[i]->value;
      if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_FUNC && !strcmp(v->u.call.target, name)) return true;
      if (v->kind == LOOM_GRAPH_EXPR_IF && (seq_calls(v->u.if_.then_seq, name) || seq_calls(v->u.if_.else_seq, name))) return true;
      if (v->kind == LOOM_GRAPH_EXPR_LOOP && seq_calls(v->u.loop.body, name)) return true;
    }
  return false;
}

/* Removes the graph functions other than @main that no other function calls (a layer function
 * whose calls were all inlined): the engine calls only @main, and compiling them would cost
 * start-up time for kernels nothing runs. */
static loom_status drop_uncalled_functions(loom_graph_module *m) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < loom_graph_module_num_funcs(m) && !again; i++) {
      const loom_graph_func *f = loom_graph_module_func_at(m, i);
      if (!strcmp(f->name, "main")) continue;
      bool called = false;
      for (size_t j = 0; j < loom_graph_module_num_funcs(m) && !called; j++)
        if (j != i) called = seq_calls(loom_graph_module_func_at(m, j)->body, f->name);
      if (!called) {
        LOOM_PROPAGATE(loom_graph_module_remove_func(m, f->name));
        again = true;
      }
    }
  }
  return LOOM_OK;
}

/* A .loom decoder: parsed, its weights bound as constants (above), the calls that now pass
 * constants inlined (the pipeline's `inline`, run here first so that the functions it leaves
 * uncalled are not compiled), compiled. */
static loom_status load_loom_decoder(loom_serve_engine *e, const loom_compile_options *co) {
  char *text;
  size_t len;
  LOOM_PROPAGATE(loom_file_read_limited(e->o.model, "module", LOOM_FILE_LIMIT_TEXT, &text, &len));
  loom_status st = loom_module_load_buffer(text, len, e->o.model, "loom", &e->onnx_m);
  free(text);
  if (!st && e->o.weights) st = loom_safetensors_open(NULL, e->o.weights, &e->wfile);
  if (!st) st = bind_weights_as_constants(e);
  size_t inlined = 0;
  if (!st) st = loom_graph_inline_const_calls(e->onnx_m, &inlined);
  if (!st && inlined) st = drop_uncalled_functions(e->onnx_m);
  if (!st) st = loom_compile(e->onnx_m, co, &e->c);
  return st;
}

/* Reads @main's parameters: the six batch inputs by name, the caches, the weights. */
static loom_status bind_interface(loom_serve_engine *e) {
  uint32_t fn = loom_rt_function_find(e->rt, "main");
  if (fn == UINT32_MAX) return LOOM_ERROR(NOT_FOUND, "'%s' has no function @main", e->o.model);
  e->np = loom_rt_param_count(e->rt, fn);
  if (e->np > MAX_PARAMS) return LOOM_ERROR(INVALID_ARGUMENT, "@main has %u parameters; at most %d", e->np, MAX_PARAMS);
  bool seen[ROLE_COUNT] = {0};
  for (uint32_t i = 0; i < e->np; i++) {
    loom_rt_param p;
    loom_rt_param_get(e->rt, fn, i, &p);
    role r = role_of(p.name);
    e->roles[i] = r;
    if (r >= ROLE_TOKENS && r <= ROLE_LAST_INDEX) {
      uint32_t rank = r == ROLE_BLOCK_TABLES ? 2 : 1;
      if (p.dtype != LOOM_DTYPE_I64 || p.rank != rank)
        return LOOM_ERROR(INVALID_ARGUMENT, "parameter '%s' must be i64 of rank %u (docs/serve.md)", p.name, rank);
      seen[r] = true;
    } else if (r == ROLE_CACHE) {
      LOOM_PROPAGATE(make_cache(e, i, &p));
    } else {
      LOOM_RETURN_IF_ERROR(load_weight(e, i, &p), "while loading the weights of '%s'", e->o.model);
      if (!strcmp(p.name, "wpe") && !e->o.max_context) e->max_context = e->fixed[i]->shape[0];
    }
  }
  for (int k = ROLE_TOKENS; k <= ROLE_LAST_INDEX; k++)
    if (!seen[k]) return LOOM_ERROR(INVALID_ARGUMENT, "'%s' is not a servable model: @main has no parameter '%s' (docs/serve.md)", e->o.model, role_names[k]);
  if (!e->ncache) return LOOM_ERROR(INVALID_ARGUMENT, "'%s' is not a servable model: no k_cache*/v_cache* parameter (docs/serve.md)", e->o.model);
  return LOOM_OK;
}

/* ---- one step ------------------------------------------------------------------------------ */

/* The step's inputs for planned sequences q[0..n). */
static loom_status build_inputs(loom_serve_engine *e, loom_serve_seq *const *q, int64_t n, loom_tensor **in) {
  int64_t T = 0, M = 1;
  for (int64_t i = 0; i < n; i++) {
    T += q[i]->step_tokens;
    if (q[i]->npages > M) M = q[i]->npages;
  }
  for (uint32_t p = 0; p < e->np; p++) {
    role r = e->roles[p];
    if (r == ROLE_WEIGHT || r == ROLE_CACHE) {
      in[p] = e->fixed[p];
      continue;
    }
    int64_t shape[2] = {r == ROLE_TOKENS || r == ROLE_POSITIONS || r == ROLE_SEQ_IDS ? T : n, M};
    LOOM_PROPAGATE(loom_rt_tensor_new(e->rt, LOOM_DTYPE_I64, r == ROLE_BLOCK_TABLES ? 2 : 1, shape, &in[p]));
    int64_t *d = in[p]->data, t = 0;
    for (int64_t i = 0; i < n; i++) {
      const loom_serve_seq *s = q[i];
      switch (r) {
      case ROLE_TOKENS:
      case ROLE_POSITIONS:
      case ROLE_SEQ_IDS:
        for (int64_t j = 0; j < s->step_tokens; j++, t++)
          d[t] = r == ROLE_TOKENS ? s->tokens[s->ncached + j] : r == ROLE_POSITIONS ? s->ncached + j : i;
        break;
      case ROLE_CTX_LENS: d[i] = s->ncached; break;
      case ROLE_LAST_INDEX: d[i] = (t += s->step_tokens) - 1; break;
      case ROLE_BLOCK_TABLES:
        for (int64_t j = 0; j < M; j++) d[i * M + j] = j < s->npages ? s->pages[j] : -1;
        break;
      default: break;
      }
    }
  }
  return LOOM_OK;
}

/* Writes the step's keys and values (results 1..) into the pages of their positions. */
static loom_status write_cache(loom_serve_engine *e, loom_serve_seq *const *q, int64_t n, const loom_rt_outputs *out) {
  if (out->count != 1 + e->ncache)
    return LOOM_ERROR(INVALID_ARGUMENT, "the model returned %u results; a servable model returns the logits and %u cache updates", out->count,
                      e->ncache);
  int64_t ps = e->o.page_size;
  for (uint32_t l = 0; l < e->ncache; l++) {
    const loom_tensor *kv = (const loom_tensor *)out->items[1 + l];
    loom_tensor *cache = e->fixed[e->cache_param[l]];
    int64_t se = e->slot_elems[l], T = 0;
    for (int64_t i = 0; i < n; i++) T += q[i]->step_tokens;
    bool dense = kv->hdr.kind == LOOM_VM_OBJ_TENSOR && kv->dtype == LOOM_DTYPE_F32 && kv->rank >= 1 && kv->shape[0] == T &&
                 (int64_t)loom_tensor_numel(kv) == T * se;
    int64_t want = 1;
    for (int32_t k = kv->rank - 1; dense && k >= 0; want *= kv->shape[k], k--)
      if (kv->shape[k] > 1 && kv->strides[k] != want) dense = false;
    if (!dense)
      return LOOM_ERROR(INVALID_ARGUMENT, "result %u (the update of cache parameter %u) is not a dense f32 (%lld, ...) of %lld values per token",
                        1 + l, e->cache_param[l], (long long)T, (long long)se);
    const float *src = kv->data;
    float *dst = cache->data;
    int64_t t = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < q[i]->step_tokens; j++, t++) {
        int64_t pos = q[i]->ncached + j, page = q[i]->pages[pos / ps];
        memcpy(dst + (page * ps + pos % ps) * se, src + t * se, (size_t)se * sizeof(float));
      }
  }
  return LOOM_OK;
}

/* Runs the model on the planned sequences; *logits is result 0 (b, V) (a reference). */
static loom_status run_step(loom_serve_engine *e, loom_serve_seq *const *q, int64_t n, loom_rt_outputs *out) {
  loom_tensor *in[MAX_PARAMS] = {0};
  loom_status st = build_inputs(e, q, n, in);
  if (!st) st = loom_rt_call(e->rt, "main", in, e->np, out);
  for (uint32_t p = 0; p < e->np; p++)
    if (e->roles[p] != ROLE_WEIGHT && e->roles[p] != ROLE_CACHE) loom_tensor_release(in[p]);
  if (st) return st;
  const loom_tensor *lg = (const loom_tensor *)out->items[0];
  if (out->count < 1 || lg->hdr.kind != LOOM_VM_OBJ_TENSOR || lg->dtype != LOOM_DTYPE_F32 || lg->rank != 2 || lg->shape[0] != n ||
      lg->strides[1] != 1 || lg->strides[0] != lg->shape[1])
    st = LOOM_ERROR(INVALID_ARGUMENT, "result 0 must be the dense f32 logits (b, vocabulary) of the step's %lld sequences", (long long)n);
  if (!st) st = write_cache(e, q, n, out);
  if (st) loom_rt_outputs_free(out);
  return st;
}

/* ---- requests --------------------------------------------------------------------------------- */

static void req_free(loom_serve_req *r) {
  for (size_t c = 0; c < r->n; c++) loom_serve_seq_free(&r->seqs[c]);
  pthread_cond_destroy(&r->cv);
  free(r->seqs), free(r->finish), free(r->rng), free(r->t_last), free(r->error), free(r);
}

/* Under e->mu: a choice ended; the engine drops its reference when the last one does.
 * Returns true then (r may be freed: the caller must not touch it again). */
static bool choice_done(loom_serve_engine *e, loom_serve_req *r, size_t c, loom_serve_finish f) {
  if (r->finish[c] != LOOM_SERVE_RUNNING) return false;
  loom_serve_sched_finish(&e->sched, &r->seqs[c]);
  r->finish[c] = f;
  pthread_cond_broadcast(&r->cv);
  if (--r->running) return false;
  if (r->prev) r->prev->next = r->next;
  else e->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  if (--r->refs == 0) req_free(r);
  return true;
}

loom_status loom_serve_submit(loom_serve_engine *e, const int64_t *const *prompts, const size_t *lens, size_t n, const loom_serve_params *p,
                              loom_serve_req **out) {
  *out = NULL;
  if (n < 1 || n > 64) return LOOM_ERROR(INVALID_ARGUMENT, "prompt: give 1 to 64 prompts (given %zu)", n);
  if (p->max_tokens < 1) return LOOM_ERROR(INVALID_ARGUMENT, "max_tokens must be at least 1 (given %lld)", (long long)p->max_tokens);
  if (!(p->temperature >= 0 && p->temperature <= 100)) return LOOM_ERROR(INVALID_ARGUMENT, "temperature must be in [0, 100] (given %g)", p->temperature);
  if (p->top_k < 0) return LOOM_ERROR(INVALID_ARGUMENT, "top_k must be 0 (no limit) or positive (given %lld)", (long long)p->top_k);
  if (!(p->top_p > 0 && p->top_p <= 1)) return LOOM_ERROR(INVALID_ARGUMENT, "top_p must be in (0, 1] (given %g)", p->top_p);
  if (p->nstop > MAX_STOP) return LOOM_ERROR(INVALID_ARGUMENT, "stop: at most %d token ids (given %zu)", MAX_STOP, p->nstop);
  for (size_t k = 0; k < p->nstop; k++)
    if (p->stop[k] < 0 || p->stop[k] >= e->vocab)
      return LOOM_ERROR(INVALID_ARGUMENT, "stop[%zu] is %lld, outside the vocabulary [0, %lld)", k, (long long)p->stop[k], (long long)e->vocab);
  for (size_t c = 0; c < n; c++) {
    if (!lens[c]) return LOOM_ERROR(INVALID_ARGUMENT, "prompt %zu is empty", c);
    for (size_t i = 0; i < lens[c]; i++)
      if (prompts[c][i] < 0 || prompts[c][i] >= e->vocab)
        return LOOM_ERROR(INVALID_ARGUMENT, "prompt %zu token %zu is %lld, outside the vocabulary [0, %lld)", c, i, (long long)prompts[c][i],
                          (long long)e->vocab);
    if ((int64_t)lens[c] + p->max_tokens > e->max_context)
      return LOOM_ERROR(INVALID_ARGUMENT, "prompt %zu has %zu tokens; with max_tokens %lld that is %lld positions, over the context of %lld", c,
                        lens[c], (long long)p->max_tokens, (long long)lens[c] + p->max_tokens, (long long)e->max_context);
  }
  loom_serve_req *r = calloc(1, sizeof *r);
  if (!r) return LOOM_OOM();
  r->seqs = calloc(n, sizeof *r->seqs);
  r->finish = calloc(n, sizeof *r->finish);
  r->rng = calloc(n, sizeof *r->rng);
  r->t_last = calloc(n, sizeof *r->t_last);
  if (!r->seqs || !r->finish || !r->rng || !r->t_last || pthread_cond_init(&r->cv, NULL)) {
    free(r->seqs), free(r->finish), free(r->rng), free(r->t_last), free(r);
    return LOOM_OOM();
  }
  r->e = e, r->n = n, r->refs = 2, r->running = (int64_t)n;
  r->samp = (loom_serve_sampling){p->temperature, p->top_k, p->top_p};
  if (p->nstop) memcpy(r->stop, p->stop, p->nstop * sizeof *r->stop);
  r->nstop = p->nstop;
  for (size_t c = 0; c < n; c++) {
    loom_serve_seq *q = &r->seqs[c];
    q->cap = (int64_t)lens[c] + p->max_tokens;
    q->tokens = malloc((size_t)q->cap * sizeof *q->tokens);
    if (!q->tokens) {
      r->n = c;
      req_free(r);
      return LOOM_OOM();
    }
    memcpy(q->tokens, prompts[c], lens[c] * sizeof *q->tokens);
    q->ntokens = q->nprompt = (int64_t)lens[c];
    q->max_tokens = p->max_tokens;
    q->owner = r, q->choice = (int)c;
  }
  pthread_mutex_lock(&e->mu);
  loom_status st = LOOM_OK;
  if (e->shutting) st = LOOM_ERROR(UNAVAILABLE, "the server is shutting down");
  else if (e->sched.nwaiting + (int64_t)n > e->o.max_queue)
    st = LOOM_ERROR(UNAVAILABLE, "the queue is full (%lld sequences waiting, --max-queue %lld); try again later", (long long)e->sched.nwaiting,
                    (long long)e->o.max_queue);
  if (st) {
    pthread_mutex_unlock(&e->mu);
    req_free(r);
    return st;
  }
  r->id = ++e->next_id;
  r->t_submit = loom_clock_ns();
  uint64_t seed = p->has_seed ? p->seed : r->id * 0x9E3779B97F4A7C15ull;
  for (size_t c = 0; c < n; c++) {
    r->rng[c].s = seed + c * 0xD1B54A32D192ED03ull;
    loom_serve_sched_add(&e->sched, &r->seqs[c]);
    e->m.prompt_tokens += (uint64_t)lens[c];
  }
  r->next = e->reqs;
  if (e->reqs) e->reqs->prev = r;
  e->reqs = r;
  pthread_cond_signal(&e->work);
  pthread_mutex_unlock(&e->mu);
  *out = r;
  return LOOM_OK;
}

bool loom_serve_req_wait(loom_serve_req *r, const int64_t *seen, const bool *finished, int timeout_ms) {
  loom_serve_engine *e = r->e;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&e->mu);
  for (;;) {
    bool news = false, all = true;
    for (size_t c = 0; c < r->n; c++) {
      all &= r->finish[c] != LOOM_SERVE_RUNNING;
      news |= r->seqs[c].ntokens - r->seqs[c].nprompt > seen[c] || (r->finish[c] != LOOM_SERVE_RUNNING && !finished[c]);
    }
    if (news || all || pthread_cond_timedwait(&r->cv, &e->mu, &until)) {
      pthread_mutex_unlock(&e->mu);
      return all;
    }
  }
}

int64_t loom_serve_req_read(loom_serve_req *r, size_t c, int64_t from, int64_t *buf, int64_t cap, loom_serve_finish *finish,
                            int64_t *prompt_len) {
  pthread_mutex_lock(&r->e->mu);
  const loom_serve_seq *q = &r->seqs[c];
  int64_t have = q->ntokens - q->nprompt - from;
  if (have < 0) have = 0;
  if (have > cap) have = cap;
  memcpy(buf, q->tokens + q->nprompt + from, (size_t)have * sizeof *buf);
  /* a choice reads as finished only once every token it made has been read */
  *finish = q->ntokens - q->nprompt - from > have ? LOOM_SERVE_RUNNING : r->finish[c];
  *prompt_len = q->nprompt;
  pthread_mutex_unlock(&r->e->mu);
  return have;
}

size_t loom_serve_req_choices(const loom_serve_req *r) { return r->n; }
uint64_t loom_serve_req_id(const loom_serve_req *r) { return r->id; }
const char *loom_serve_req_error(loom_serve_req *r) { return r->error ? r->error : ""; }

void loom_serve_req_cancel(loom_serve_req *r) {
  pthread_mutex_lock(&r->e->mu);
  if (!r->cancelled && r->running) {
    r->cancelled = true;
    r->e->m.cancelled++;
    pthread_cond_signal(&r->e->work);
  }
  pthread_mutex_unlock(&r->e->mu);
}

void loom_serve_req_release(loom_serve_req *r) {
  if (!r) return;
  loom_serve_engine *e = r->e;
  pthread_mutex_lock(&e->mu);
  bool last = --r->refs == 0;
  pthread_mutex_unlock(&e->mu);
  if (last) req_free(r);
}

/* ---- the engine thread ------------------------------------------------------------------------ */

/* Under e->mu: ends the choices of cancelled requests. */
static void reap_cancelled(loom_serve_engine *e) {
  for (loom_serve_req *r = e->reqs, *next; r; r = next) {
    next = r->next;
    if (!r->cancelled && !e->stop) continue;
    for (size_t c = 0, n = r->n; c < n; c++)
      if (choice_done(e, r, c, LOOM_SERVE_CANCELLED)) break;
  }
}

/* Under e->mu: a token for choice q (sampled outside the lock); ends it on a stop token, at
 * max_tokens or at the context's end. */
static void deliver(loom_serve_engine *e, loom_serve_seq *q, int64_t tok, uint64_t now) {
  loom_serve_req *r = q->owner;
  size_t c = (size_t)q->choice;
  if (r->finish[c] != LOOM_SERVE_RUNNING) return;
  for (size_t k = 0; k < r->nstop; k++)
    if (tok == r->stop[k]) {
      choice_done(e, r, c, LOOM_SERVE_STOP);
      return;
    }
  if (loom_serve_seq_push(q, tok)) { /* cannot happen: capacity was reserved at submission */
    choice_done(e, r, c, LOOM_SERVE_FAILED);
    return;
  }
  e->m.generated_tokens++;
  if (!r->t_last[c]) loom_serve_hist_add(&e->m.ttft, (double)(now - r->t_submit) / 1e9);
  else loom_serve_hist_add(&e->m.itl, (double)(now - r->t_last[c]) / 1e9);
  r->t_last[c] = now;
  pthread_cond_broadcast(&r->cv);
  if (q->ntokens - q->nprompt >= q->max_tokens || q->ntokens >= e->max_context) choice_done(e, r, c, LOOM_SERVE_LENGTH);
}

/* The keys the attention of q's tokens in the step reads: a chunk of c tokens after p cached
 * ones reads c*p + c*(c+1)/2 (a decode at context p: p + 1). */
static int64_t step_keys(const loom_serve_seq *q) {
  int64_t c = q->step_tokens;
  return c * q->ncached + c * (c + 1) / 2;
}

/* --step-log: one line for a step that ran (planned, not yet committed), what the scheduler
 * put in it and what it took: the decodes (sequences running their one next token) and the
 * keys their attention reads (each one's context and itself), the prompt tokens (chunks) and
 * the keys theirs read (a chunk of c tokens after p cached ones reads c*p + c*(c+1)/2). */
static void log_step(loom_serve_engine *e, loom_serve_seq *const *plan, int64_t n, double ms) {
  int64_t dec = 0, dec_keys = 0, pre = 0, pre_keys = 0;
  for (int64_t i = 0; i < n; i++) {
    const loom_serve_seq *q = plan[i];
    int64_t c = q->step_tokens, keys = step_keys(q);
    if (c == 1 && q->ntokens - q->ncached == 1) dec++, dec_keys += keys;
    else pre += c, pre_keys += keys;
  }
  fprintf(e->step_log, "%.3f %lld %lld %lld %lld\n", ms, (long long)dec, (long long)dec_keys, (long long)pre, (long long)pre_keys);
}

static void *engine_main(void *arg) {
  loom_serve_engine *e = arg;
  loom_serve_seq **plan = malloc((size_t)e->o.max_batch * sizeof *plan);
  int64_t *toks = malloc((size_t)e->o.max_batch * sizeof *toks);
  pthread_mutex_lock(&e->mu);
  while (plan && toks) {
    reap_cancelled(e);
    if (e->stop) break;
    int64_t n = 0;
    loom_status st = loom_serve_sched_plan(&e->sched, plan, &n);
    if (st || !n) {
      loom_status_free(st);
      pthread_cond_wait(&e->work, &e->mu);
      continue;
    }
    e->m.steps++;
    loom_serve_hist_add(&e->m.batch, (double)n);
    pthread_mutex_unlock(&e->mu);
    loom_rt_outputs out = {0};
    uint64_t t0 = loom_clock_ns();
    st = run_step(e, plan, n, &out);
    if (!st) {
      const float *lg = ((const loom_tensor *)out.items[0])->data;
      for (int64_t i = 0; i < n; i++) {
        loom_serve_seq *q = plan[i];
        loom_serve_req *r = q->owner;
        toks[i] = q->ncached + q->step_tokens == q->ntokens
                      ? loom_serve_sample(lg + i * e->vocab, e->vocab, &r->samp, &r->rng[q->choice], e->scratch)
                      : -1; /* a prompt chunk before the last: no token yet */
      }
      loom_rt_outputs_free(&out);
    }
    uint64_t now = loom_clock_ns();
    pthread_mutex_lock(&e->mu);
    loom_serve_hist_add(&e->m.step, (double)(now - t0) / 1e9);
    int64_t ntok = 0;
    for (int64_t i = 0; i < n; i++) ntok += plan[i]->step_tokens;
    loom_serve_hist_add(&e->m.step_tokens, (double)ntok);
    if (e->step_log) log_step(e, plan, n, (double)(now - t0) / 1e6);
    if (st) {
      e->m.failed_steps++;
      for (int64_t i = 0; i < n; i++) {
        loom_serve_req *r = plan[i]->owner;
        if (!r->error) r->error = strdup(loom_status_message(st));
        choice_done(e, r, (size_t)plan[i]->choice, LOOM_SERVE_FAILED);
      }
      if (e->o.log) loom_status_fprint(e->o.log, st);
      loom_status_free(st);
      continue;
    }
    int64_t keys = 0;
    for (int64_t i = 0; i < n; i++) keys += step_keys(plan[i]);
    loom_serve_cost_observe(&e->sched.cost, ntok, keys, (double)(now - t0) / 1e6);
    loom_serve_sched_commit(&e->sched, plan, n);
    for (int64_t i = 0; i < n; i++)
      if (toks[i] >= 0) deliver(e, plan[i], toks[i], now);
  }
  pthread_mutex_unlock(&e->mu);
  free(plan);
  free(toks);
  return NULL;
}

/* ---- open / close --------------------------------------------------------------------------- */

/* One step of one token (id 0) of one sequence: checks the results' form and reads the
 * vocabulary off the logits. Its key and value land in page 0, slot 0, which every sequence
 * writes before it reads. */
static loom_status probe(loom_serve_engine *e) {
  loom_serve_seq q = {0};
  int64_t tok = 0;
  int32_t page = 0;
  q.tokens = &tok, q.ntokens = 1, q.pages = &page, q.npages = 1, q.step_tokens = 1;
  loom_serve_seq *one = &q;
  loom_rt_outputs out = {0};
  LOOM_RETURN_IF_ERROR(run_step(e, &one, 1, &out), "while running a first step of '%s'", e->o.model);
  e->vocab = ((const loom_tensor *)out.items[0])->shape[1];
  loom_rt_outputs_free(&out);
  if (e->vocab < 1) return LOOM_ERROR(INVALID_ARGUMENT, "'%s' returns logits over an empty vocabulary", e->o.model);
  e->scratch = malloc((size_t)e->vocab * (sizeof(double) + sizeof(int32_t)));
  return e->scratch ? LOOM_OK : LOOM_OOM();
}

/* An ONNX decoder with past/present key/values: imported, rewritten into the serving form
 * (graph/pass_serving.c; refused with its message when not recognised), compiled. */
static loom_status load_onnx_decoder(loom_serve_engine *e, const loom_compile_options *co) {
  if (e->o.weights || e->o.random_weights)
    return LOOM_ERROR(INVALID_ARGUMENT, "'%s': an ONNX model's weights are its initializers; --weights and --random-weights are for .loom models",
                      e->o.model);
  char *bytes;
  size_t len;
  LOOM_PROPAGATE(loom_file_read_limited(e->o.model, "model", LOOM_FILE_LIMIT_ONNX, &bytes, &len));
  loom_status st = loom_module_load_buffer(bytes, len, e->o.model, "onnx", &e->onnx_m);
  free(bytes);
  loom_graph_serving_info info = {0};
  if (!st) st = loom_graph_serving_from_decoder(e->onnx_m, e->o.model, &info);
  if (!st) st = loom_compile(e->onnx_m, co, &e->c);
  if (!st && info.position_rows && !e->o.max_context) e->max_context = info.position_rows;
  if (!st && e->o.log)
    fprintf(e->o.log, "loom serve: '%s' rewritten into the serving form: %d attentions on the paged cache\n", e->o.model, info.layers);
  return st;
}

loom_status loom_serve_engine_open(const loom_serve_options *o, loom_serve_engine **out) {
  *out = NULL;
  if (o->kv_pages < 1 || o->page_size < 1 || o->max_batch < 1 || o->max_step_tokens < 1 || o->max_queue < 1 || o->max_context < 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "--kv-pages, --page-size, --max-batch, --max-step-tokens and --max-queue must be positive");
  loom_serve_engine *e = calloc(1, sizeof *e);
  if (!e) return LOOM_OOM();
  e->o = *o;
  const char *base = strrchr(o->model, '/') ? strrchr(o->model, '/') + 1 : o->model;
  snprintf(e->model_name, sizeof e->model_name, "%s", base);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->work, NULL);
  loom_serve_metrics_init(&e->m);
  loom_status st = loom_serve_sched_init(&e->sched, o->kv_pages, o->page_size, o->max_batch, o->max_step_tokens);
  e->sched.decode_budget = o->decode_step_tokens;
  e->sched.chunk_by_keys = o->chunk_by_keys;
  e->sched.step_ratio = o->step_ratio;
  uint64_t t0 = loom_clock_ns();
  loom_compile_options co = {.emit = LOOM_TARGET_EMIT_JIT, .offload = o->offload, .pack_tied = o->pack_tied};
  size_t mlen = strlen(o->model);
  if (!st && mlen >= 5 && !strcmp(o->model + mlen - 5, ".onnx")) st = load_onnx_decoder(e, &co);
  else if (!st) st = load_loom_decoder(e, &co);
  if (!st) st = loom_compiled_open(e->c, NULL, &e->rt);
  if (!st && o->threads) st = loom_rt_set_threads(e->rt, o->threads);
  if (!st && o->profile) loom_rt_set_profile(e->rt, true);
  if (!st && o->weights && !e->wfile) st = loom_safetensors_open(NULL, o->weights, &e->wfile);
  if (!st && o->step_log) {
    e->step_log = fopen(o->step_log, "w");
    if (!e->step_log) st = LOOM_ERROR(INVALID_ARGUMENT, "--step-log %s: cannot open it for writing", o->step_log);
    else {
      setvbuf(e->step_log, NULL, _IOLBF, 0); /* whole lines, so that a reader can follow it while the server runs */
      fprintf(e->step_log, "# step_ms decodes decode_keys prompt_tokens prompt_keys\n");
    }
  }
  if (!st) st = bind_interface(e);
  int64_t capacity = o->kv_pages * o->page_size;
  if (!st) {
    if (o->max_context) e->max_context = o->max_context;
    if (!e->max_context || e->max_context > capacity) e->max_context = capacity;
    st = probe(e);
  }
  if (!st) e->m.compile_seconds = (double)(loom_clock_ns() - t0) / 1e9;
  if (!st && pthread_create(&e->thread, NULL, engine_main, e)) st = LOOM_ERROR(INTERNAL, "cannot start the engine thread");
  if (st) {
    loom_serve_engine_close(e);
    return st;
  }
  e->thread_started = true;
  if (o->log)
    fprintf(o->log, "loom serve: compiled '%s' once in %.2f s; vocabulary %lld, context %lld, %u cache tensors of %lld pages x %lld slots, %u threads\n",
            o->model, e->m.compile_seconds, (long long)e->vocab, (long long)e->max_context, e->ncache, (long long)o->kv_pages,
            (long long)o->page_size, loom_rt_threads(e->rt));
  *out = e;
  return LOOM_OK;
}

void loom_serve_engine_shutdown(loom_serve_engine *e) {
  pthread_mutex_lock(&e->mu);
  e->shutting = true;
  for (loom_serve_req *r = e->reqs; r; r = r->next) r->cancelled = true;
  pthread_cond_signal(&e->work);
  pthread_mutex_unlock(&e->mu);
}

void loom_serve_engine_close(loom_serve_engine *e) {
  if (!e) return;
  if (e->thread_started) {
    pthread_mutex_lock(&e->mu);
    e->stop = e->shutting = true;
    pthread_cond_signal(&e->work);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thread, NULL);
  }
  pthread_mutex_lock(&e->mu);
  e->stop = true;
  reap_cancelled(e); /* everything still running ends CANCELLED; callers keep their references */
  pthread_mutex_unlock(&e->mu);
  if (e->o.profile && e->rt && e->o.log) loom_rt_profile_print(e->rt, e->o.log);
  for (uint32_t i = 0; i < MAX_PARAMS; i++) loom_tensor_release(e->fixed[i]);
  loom_rt_close(e->rt);
  loom_compiled_free(e->c);
  loom_graph_module_destroy(e->onnx_m);
  loom_safetensors_close(e->wfile);
  if (e->step_log) fclose(e->step_log);
  loom_serve_sched_destroy(&e->sched);
  loom_serve_metrics_destroy(&e->m);
  free(e->scratch);
  pthread_cond_destroy(&e->work);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

int64_t loom_serve_vocab(const loom_serve_engine *e) { return e->vocab; }
int64_t loom_serve_max_context(const loom_serve_engine *e) { return e->max_context; }
const char *loom_serve_model_name(const loom_serve_engine *e) { return e->model_name; }

void loom_serve_count_response(loom_serve_engine *e, int http_status) {
  pthread_mutex_lock(&e->mu);
  loom_serve_metrics_count_status(&e->m, http_status);
  pthread_mutex_unlock(&e->mu);
}

void loom_serve_metrics_text(loom_serve_engine *e, loom_strbuf *sb) {
  pthread_mutex_lock(&e->mu);
  loom_serve_metrics_gauges g = {.waiting = e->sched.nwaiting,
                                 .running = e->sched.nrunning,
                                 .pages_used = e->sched.pages.npages - e->sched.pages.nfree,
                                 .pages_total = e->sched.pages.npages,
                                 .preemptions = e->sched.preemptions};
  loom_serve_metrics_print(&e->m, &g, sb);
  pthread_mutex_unlock(&e->mu);
}
