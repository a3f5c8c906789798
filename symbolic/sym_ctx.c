/* sym_ctx.c — the symbolic context: hash-consing of nodes, sticky errors, GMP's
 * memory functions, constants and variables, inspection, and evaluation environments.
 *
 * Every node is interned in cx->table (structural hash -> bucket chain), so two
 * structurally equal expressions are the same pointer. Operands are interned first,
 * so structural equality of a node is pointer equality of its fields. */
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "symbolic/sym_internal.h"

_Thread_local jmp_buf *sym_gmp_jmp = NULL;

/* ---- GMP memory: through loom_alloc, never returning NULL ---------------- */

/* GMP cannot handle a NULL from its allocator. Every GMP call in symbolic/ runs inside
 * SYM_GUARD, so a failed allocation jumps back to that guard, which turns it into the
 * context's sticky out-of-memory error. Reaching abort() here means a GMP call was made
 * outside a guard: a bug in symbolic/, not a user error. */
static _Noreturn void gmp_out_of_memory(void) {
  if (sym_gmp_jmp) longjmp(*sym_gmp_jmp, 1);
  abort();
}
static void *gmp_alloc(size_t n) {
  void *p = loom_alloc(NULL, n);
  if (!p) gmp_out_of_memory();
  return p;
}
static void *gmp_realloc(void *p, size_t old, size_t n) {
  void *q = loom_realloc(NULL, p, old, n);
  if (!q) gmp_out_of_memory();
  return q;
}
static void gmp_free(void *p, size_t n) { loom_free(NULL, p, n); }

/* ---- errors --------------------------------------------------------------- */

const loom_sym_expr *sym_fail(loom_sym_ctx *cx, loom_status s) {
  if (cx->err == LOOM_OK) cx->err = s;
  else loom_status_free(s);
  return NULL;
}

const loom_sym_expr *sym_oom(loom_sym_ctx *cx) { return sym_fail(cx, LOOM_OOM()); }

loom_status loom_sym_ctx_take_error(loom_sym_ctx *cx) {
  loom_status s = cx->err;
  cx->err = LOOM_OK;
  return s;
}

size_t loom_sym_ctx_size(const loom_sym_ctx *cx) { return cx->count; }

/* ---- context ---------------------------------------------------------------- */

loom_status loom_sym_ctx_create(loom_allocator *alloc, loom_sym_ctx **out) {
  static bool gmp_installed = false;
  if (!gmp_installed) {
    mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
    gmp_installed = true;
  }
  *out = NULL;
  loom_sym_ctx *cx = loom_alloc_zero(alloc, sizeof *cx);
  if (!cx) return LOOM_OOM();
  cx->alloc = alloc;
  loom_arena_init(&cx->arena, alloc, 0);
  loom_interner_init(&cx->names, alloc);
  loom_map_init(&cx->table, alloc);
  loom_map_init(&cx->simp_memo, alloc);
  mpz_init(cx->t0); /* mpz_init allocates nothing (GMP >= 6.2) */
  mpz_init(cx->t1);
  mpz_init(cx->t2);
  cx->c0 = loom_sym_const(cx, 0);
  cx->c1 = loom_sym_const(cx, 1);
  cx->cm1 = loom_sym_const(cx, -1);
  if (!cx->c0 || !cx->c1 || !cx->cm1) {
    loom_sym_ctx_destroy(cx);
    return LOOM_OOM();
  }
  *out = cx;
  return LOOM_OK;
}

void loom_sym_ctx_destroy(loom_sym_ctx *cx) {
  if (!cx) return;
  for (size_t i = 0; i < cx->bigs.len; i++) mpz_clear(((loom_sym_expr *)cx->bigs.data[i])->u.num.big);
  mpz_clear(cx->t0);
  mpz_clear(cx->t1);
  mpz_clear(cx->t2);
  LOOM_VEC_FREE(cx->alloc, &cx->bigs);
  LOOM_VEC_FREE(cx->alloc, &cx->facts);
  LOOM_VEC_FREE(cx->alloc, &cx->undo);
  LOOM_VEC_FREE(cx->alloc, &cx->scopes);
  LOOM_VEC_FREE(cx->alloc, &cx->zeros);
  LOOM_VEC_FREE(cx->alloc, &cx->nonnegs);
  loom_map_destroy(&cx->table);
  loom_map_destroy(&cx->simp_memo);
  loom_interner_destroy(&cx->names);
  loom_arena_destroy(&cx->arena);
  loom_status_free(cx->err);
  loom_free(cx->alloc, cx, sizeof *cx);
}

/* ---- interning ------------------------------------------------------------ */

static uint64_t node_hash(loom_sym_kind kind, const loom_sym_expr *k, const loom_sym_expr *const *ops,
                          const uint32_t *exps, uint32_t n) {
  uint64_t h = loom_hash_u64(0x5137 + (uint64_t)kind);
  if (k) h = loom_hash_combine(h, k->hash);
  for (uint32_t i = 0; i < n; i++) {
    h = loom_hash_combine(h, ops[i]->hash);
    if (exps) h = loom_hash_combine(h, exps[i]);
  }
  return h;
}

static bool node_equal(const loom_sym_expr *e, loom_sym_kind kind, const loom_sym_expr *k,
                       const loom_sym_expr *const *ops, const uint32_t *exps, uint32_t n) {
  if (e->kind != kind || e->n != n || e->k != k) return false;
  for (uint32_t i = 0; i < n; i++) {
    if (e->ops[i] != ops[i]) return false;
    if (exps && e->exps[i] != exps[i]) return false;
  }
  return true;
}

/* Adds a fresh node to its bucket; false when memory runs out. */
static bool table_insert(loom_sym_ctx *cx, loom_sym_expr *e) {
  uint64_t head = 0;
  loom_map_get(&cx->table, e->hash, &head);
  e->next = (const loom_sym_expr *)(uintptr_t)head;
  if (!loom_map_put(&cx->table, e->hash, (uint64_t)(uintptr_t)e)) return false;
  cx->count++;
  return true;
}

const loom_sym_expr *sym_intern(loom_sym_ctx *cx, loom_sym_kind kind, const loom_sym_expr *k,
                                const loom_sym_expr *const *ops, const uint32_t *exps, uint32_t n) {
  uint64_t h = node_hash(kind, k, ops, exps, n);
  uint64_t head;
  if (loom_map_get(&cx->table, h, &head)) {
    for (const loom_sym_expr *e = (const loom_sym_expr *)(uintptr_t)head; e; e = e->next)
      if (e->hash == h && node_equal(e, kind, k, ops, exps, n)) return e;
  }
  size_t size = sizeof(loom_sym_expr) + (size_t)n * sizeof(const loom_sym_expr *);
  loom_sym_expr *e = loom_arena_alloc_zero(&cx->arena, size, _Alignof(loom_sym_expr));
  if (!e) return sym_oom(cx);
  e->hash = h;
  e->kind = (uint8_t)kind;
  e->n = n;
  e->k = k;
  e->unit = e;
  memcpy(e->ops, ops, (size_t)n * sizeof *ops);
  if (exps) {
    e->exps = loom_arena_alloc(&cx->arena, (size_t)n * sizeof(uint32_t), _Alignof(uint32_t));
    if (!e->exps) return sym_oom(cx);
    memcpy(e->exps, exps, (size_t)n * sizeof *exps);
  }
  if (kind == LOOM_SYM_MUL && !sym_is_one(k)) {
    /* The unit monomial: same atoms, coefficient 1 (unless that is a bare atom). */
    if (n == 1 && exps[0] == 1) e->unit = ops[0];
    else {
      e->unit = sym_intern(cx, LOOM_SYM_MUL, cx->c1, ops, exps, n);
      if (!e->unit) return NULL;
    }
  }
  if (!table_insert(cx, e)) return sym_oom(cx);
  return e;
}

static uint64_t small_hash(int64_t v) { return loom_hash_u64((uint64_t)v ^ 0xc0ffee); }

const loom_sym_expr *loom_sym_const(loom_sym_ctx *cx, int64_t v) {
  uint64_t h = small_hash(v), head;
  if (loom_map_get(&cx->table, h, &head)) {
    for (const loom_sym_expr *e = (const loom_sym_expr *)(uintptr_t)head; e; e = e->next)
      if (e->hash == h && sym_is_small(e) && e->u.num.small == v) return e;
  }
  loom_sym_expr *e = loom_arena_alloc_zero(&cx->arena, sizeof *e, _Alignof(loom_sym_expr));
  if (!e) return sym_oom(cx);
  e->hash = h;
  e->kind = LOOM_SYM_CONST;
  e->unit = e;
  e->u.num.small = v;
  if (!table_insert(cx, e)) return sym_oom(cx);
  return e;
}

/* Interns the value of `v`; must run inside SYM_GUARD (it may allocate through GMP). */
const loom_sym_expr *sym_const_mpz(loom_sym_ctx *cx, const mpz_t v) {
  if (mpz_fits_slong_p(v)) return loom_sym_const(cx, (int64_t)mpz_get_si(v));
  size_t nl = mpz_size(v);
  uint64_t h = loom_hash_bytes(mpz_limbs_read(v), nl * sizeof(mp_limb_t)) ^ (uint64_t)mpz_sgn(v);
  h = loom_hash_u64(h);
  uint64_t head;
  if (loom_map_get(&cx->table, h, &head)) {
    for (const loom_sym_expr *e = (const loom_sym_expr *)(uintptr_t)head; e; e = e->next)
      if (e->hash == h && e->kind == LOOM_SYM_CONST && e->u.num.is_big && mpz_cmp(e->u.num.big, v) == 0)
        return e;
  }
  loom_sym_expr *e = loom_arena_alloc_zero(&cx->arena, sizeof *e, _Alignof(loom_sym_expr));
  if (!e) return sym_oom(cx);
  if (!LOOM_VEC_RESERVE(cx->alloc, &cx->bigs, cx->bigs.len + 1)) return sym_oom(cx);
  e->hash = h;
  e->kind = LOOM_SYM_CONST;
  e->unit = e;
  mpz_init_set(e->u.num.big, v); /* may longjmp on OOM: e is not registered yet */
  e->u.num.is_big = true;
  cx->bigs.data[cx->bigs.len++] = e;
  if (!table_insert(cx, e)) return sym_oom(cx);
  return e;
}

const loom_sym_expr *loom_sym_const_str(loom_sym_ctx *cx, const char *decimal) {
  if (!decimal) return NULL;
  const char *p = decimal;
  if (*p == '-') p++;
  if (!*p) goto malformed;
  for (const char *q = p; *q; q++)
    if (*q < '0' || *q > '9') goto malformed;
  const loom_sym_expr *r = NULL;
  SYM_GUARD(
      {
        mpz_set_str(cx->t0, decimal, 10);
        r = sym_const_mpz(cx, cx->t0);
      },
      r = sym_oom(cx));
  return r;
malformed:
  return sym_fail(cx, LOOM_ERROR(PARSE_ERROR, "malformed integer constant '%s'", decimal));
}

const loom_sym_expr *loom_sym_var_new(loom_sym_ctx *cx, const char *name, loom_sym_var_kind kind) {
  const char *iname = loom_intern_cstr(&cx->names, name ? name : "_");
  if (!iname) return sym_oom(cx);
  if (!LOOM_VEC_RESERVE(cx->alloc, &cx->facts, (size_t)cx->next_var + 1)) return sym_oom(cx);
  loom_sym_expr *e = loom_arena_alloc_zero(&cx->arena, sizeof *e, _Alignof(loom_sym_expr));
  if (!e) return sym_oom(cx);
  e->kind = LOOM_SYM_VAR;
  e->unit = e;
  e->u.var.name = iname;
  e->u.var.id = cx->next_var++;
  e->u.var.vkind = (uint8_t)kind;
  e->hash = loom_hash_u64(0x7a5000000ull + e->u.var.id);
  sym_var_facts f = {0};
  f.lo = 0;
  f.hi = INT64_MAX;
  f.lo_inf = kind == LOOM_SYM_VAR_INT;
  f.hi_inf = true;
  f.div = 1;
  f.var = e;
  cx->facts.data[cx->facts.len++] = f;
  cx->count++;
  return e;
}

/* ---- inspection ----------------------------------------------------------- */

loom_sym_kind loom_sym_kind_of(const loom_sym_expr *e) { return (loom_sym_kind)e->kind; }

const char *loom_sym_kind_name(loom_sym_kind k) {
  static const char *const names[] = {
#define LOOM_SYM_KIND(name, text, arity) text,
#include "symbolic/sym_kinds.def"
#undef LOOM_SYM_KIND
  };
  _Static_assert(sizeof names / sizeof names[0] == LOOM_SYM_KIND_COUNT, "one name per kind");
  return (unsigned)k < LOOM_SYM_KIND_COUNT ? names[k] : "?";
}

bool loom_sym_is_const(const loom_sym_expr *e, int64_t *out_value) {
  if (!e || !sym_is_small(e)) return false;
  if (out_value) *out_value = e->u.num.small;
  return true;
}
bool loom_sym_is_var(const loom_sym_expr *e) { return e && e->kind == LOOM_SYM_VAR; }
const char *loom_sym_var_name(const loom_sym_expr *var) { return var->u.var.name; }
uint32_t loom_sym_var_id(const loom_sym_expr *var) { return var->u.var.id; }
uint64_t loom_sym_hash(const loom_sym_expr *e) { return e->hash; }

/* ADD: the terms then the constant (if nonzero). MUL: the coefficient (if not 1) then
 * each atom repeated by its exponent. Others: their operands. */
size_t loom_sym_num_operands(const loom_sym_expr *e) {
  switch (e->kind) {
  case LOOM_SYM_ADD: return e->n + (sym_is_zero(e->k) ? 0 : 1);
  case LOOM_SYM_MUL: {
    size_t c = sym_is_one(e->k) ? 0 : 1;
    for (uint32_t i = 0; i < e->n; i++) c += e->exps[i];
    return c;
  }
  default: return e->n;
  }
}

const loom_sym_expr *loom_sym_operand(const loom_sym_expr *e, size_t i) {
  switch (e->kind) {
  case LOOM_SYM_ADD: return i < e->n ? e->ops[i] : e->k;
  case LOOM_SYM_MUL:
    if (!sym_is_one(e->k)) {
      if (i == 0) return e->k;
      i--;
    }
    for (uint32_t j = 0; j < e->n; j++) {
      if (i < e->exps[j]) return e->ops[j];
      i -= e->exps[j];
    }
    return NULL;
  default: return i < e->n ? e->ops[i] : NULL;
  }
}

typedef struct var_walk {
  const loom_sym_expr *seen[64]; /* small visited set of variables (then linear scan of a map) */
  loom_map more;                 /* overflow of seen */
  size_t nseen;
  void (*fn)(void *, const loom_sym_expr *);
  void *ud;
} var_walk;

static void walk_vars(var_walk *w, const loom_sym_expr *e) {
  if (e->kind == LOOM_SYM_VAR) {
    for (size_t i = 0; i < w->nseen && i < 64; i++)
      if (w->seen[i] == e) return;
    if (w->nseen >= 64) {
      if (loom_map_contains(&w->more, (uint64_t)(uintptr_t)e)) return;
      (void)loom_map_put(&w->more, (uint64_t)(uintptr_t)e, 1);
    } else {
      w->seen[w->nseen] = e;
    }
    w->nseen++;
    w->fn(w->ud, e);
    return;
  }
  for (uint32_t i = 0; i < e->n; i++) walk_vars(w, e->ops[i]);
}

void loom_sym_for_each_var(const loom_sym_expr *e, void (*fn)(void *ud, const loom_sym_expr *var),
                           void *ud) {
  if (!e) return;
  var_walk w;
  w.nseen = 0;
  w.fn = fn;
  w.ud = ud;
  loom_map_init(&w.more, NULL);
  walk_vars(&w, e);
  loom_map_destroy(&w.more);
}

typedef struct var_probe {
  const loom_sym_expr *var;
  bool found;
} var_probe;

static void probe_var(void *ud, const loom_sym_expr *v) {
  var_probe *p = ud;
  if (v == p->var) p->found = true;
}

bool loom_sym_uses_var(const loom_sym_expr *e, const loom_sym_expr *var) {
  var_probe p = {var, false};
  loom_sym_for_each_var(e, probe_var, &p);
  return p.found;
}

bool loom_sym_as_affine(const loom_sym_expr *e, const loom_sym_expr **out_var, int64_t *out_k,
                        int64_t *out_c) {
  if (!e) return false;
  int64_t c = 0;
  const loom_sym_expr *t = e;
  if (e->kind == LOOM_SYM_ADD) {
    if (e->n != 1 || !sym_is_small(e->k)) return false;
    c = e->k->u.num.small;
    t = e->ops[0];
  }
  if (t->kind == LOOM_SYM_VAR) {
    *out_var = t;
    *out_k = 1;
    *out_c = c;
    return true;
  }
  if (t->kind == LOOM_SYM_MUL && t->n == 1 && t->exps[0] == 1 && t->ops[0]->kind == LOOM_SYM_VAR &&
      sym_is_small(t->k)) {
    *out_var = t->ops[0];
    *out_k = t->k->u.num.small;
    *out_c = c;
    return true;
  }
  return false;
}

/* ---- environments ---------------------------------------------------------- */

struct loom_sym_env {
  loom_allocator *alloc; /* where the env and its map live */
  loom_map values;       /* var pointer -> int64 value */
};

loom_status loom_sym_env_create(loom_allocator *alloc, loom_sym_env **out) {
  *out = loom_alloc_zero(alloc, sizeof **out);
  if (!*out) return LOOM_OOM();
  (*out)->alloc = alloc;
  loom_map_init(&(*out)->values, alloc);
  return LOOM_OK;
}

void loom_sym_env_destroy(loom_sym_env *env) {
  if (!env) return;
  loom_map_destroy(&env->values);
  loom_free(env->alloc, env, sizeof *env);
}

void loom_sym_env_clear(loom_sym_env *env) { loom_map_clear(&env->values); }

loom_status loom_sym_env_set(loom_sym_env *env, const loom_sym_expr *var, int64_t value) {
  if (!var || var->kind != LOOM_SYM_VAR)
    return LOOM_ERROR(INVALID_ARGUMENT, "loom_sym_env_set: not a variable");
  if (!loom_map_put(&env->values, (uint64_t)(uintptr_t)var, (uint64_t)value)) return LOOM_OOM();
  return LOOM_OK;
}

loom_status loom_sym_env_assign(loom_sym_env *dst, const loom_sym_env *src) {
  if (dst == src) return LOOM_OK;
  loom_map_clear(&dst->values);
  uint64_t k, v;
  for (size_t it = 0; loom_map_next(&src->values, &it, &k, &v);)
    if (!loom_map_put(&dst->values, k, v)) return LOOM_OOM();
  return LOOM_OK;
}

bool loom_sym_env_get(const loom_sym_env *env, const loom_sym_expr *var, int64_t *out) {
  uint64_t v;
  if (!loom_map_get(&env->values, (uint64_t)(uintptr_t)var, &v)) return false;
  if (out) *out = (int64_t)v;
  return true;
}
