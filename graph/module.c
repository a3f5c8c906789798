/* module.c — the module: its arena, interner and symbolic context, and the functions, tensor
 * programs, constants and externs it holds. Expression constructors and the C builder are in
 * module_build.c, attribute constructors and getters in module_attrs.c, call inference in
 * infer.c. */
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/safetensors.h"
#include "graph/tp_bridge.h"

/* ---- module ------------------------------------------------------------------ */

loom_status loom_graph_module_create(loom_allocator *alloc, loom_graph_module **out) {
  *out = NULL;
  loom_graph_module *m = loom_alloc_zero(alloc, sizeof *m);
  if (!m) return LOOM_OOM();
  m->alloc = alloc;
  loom_arena_init(&m->arena, alloc, 0);
  loom_interner_init(&m->names, alloc);
  loom_status st = loom_sym_ctx_create(alloc, &m->cx);
  if (st) {
    loom_interner_destroy(&m->names);
    loom_arena_destroy(&m->arena);
    loom_free(alloc, m, sizeof *m);
    return st;
  }
  *out = m;
  return LOOM_OK;
}

void loom_graph_module_destroy(loom_graph_module *m) {
  if (!m) return;
  LOOM_VEC_FREE(m->alloc, &m->funcs);
  LOOM_VEC_FREE(m->alloc, &m->tps);
  LOOM_VEC_FREE(m->alloc, &m->generated);
  LOOM_VEC_FREE(m->alloc, &m->consts);
  LOOM_VEC_FREE(m->alloc, &m->externs);
  for (size_t i = 0; i < m->weights.len; i++) loom_safetensors_close(m->weights.data[i].file);
  LOOM_VEC_FREE(m->alloc, &m->weights);
  loom_libcall_lib_destroy(m->libcall);
  loom_sym_ctx_destroy(m->cx);
  loom_interner_destroy(&m->names);
  loom_arena_destroy(&m->arena);
  for (size_t i = 0; i < m->adopted.len; i++) m->adopted.data[i].free_fn(m->adopted.data[i].p);
  LOOM_VEC_FREE(m->alloc, &m->adopted);
  LOOM_VEC_FREE(m->alloc, &m->sources);
  loom_free(m->alloc, m, sizeof *m);
}

loom_status loom_graph_module_add_source(loom_graph_module *m, const void *base, size_t len, const char *path,
                                         const loom_file_id *id) {
  const char *p = loom_arena_strdup(&m->arena, path);
  if (!p || !LOOM_VEC_PUSH(m->alloc, &m->sources, ((loom_graph_source){base, len, p, *id}))) return LOOM_OOM();
  return LOOM_OK;
}

bool loom_graph_module_source_of(const loom_graph_module *m, const void *p, size_t n, const char **path,
                                 loom_file_id *id, uint64_t *offset) {
  uintptr_t a = (uintptr_t)p;
  for (size_t i = 0; i < m->sources.len; i++) {
    const loom_graph_source *s = &m->sources.data[i];
    uintptr_t b = (uintptr_t)s->base;
    if (a >= b && a - b <= s->len && n <= s->len - (a - b)) {
      *path = s->path, *id = s->id, *offset = (uint64_t)(a - b);
      return true;
    }
  }
  return false;
}

loom_status loom_graph_module_adopt(loom_graph_module *m, void *p, void (*free_fn)(void *)) {
  if (!LOOM_VEC_PUSH(m->alloc, &m->adopted, ((loom_graph_adopted){p, free_fn}))) {
    free_fn(p);
    return LOOM_OOM();
  }
  return LOOM_OK;
}

loom_sym_ctx *loom_graph_module_sym(loom_graph_module *m) { return m->cx; }
loom_arena *loom_graph_module_arena(loom_graph_module *m) { return &m->arena; }
void loom_graph_module_set_vector_bytes(loom_graph_module *m, int bytes) { m->vector_bytes = bytes > 0 ? bytes : 0; }
int loom_graph_module_vector_bytes(const loom_graph_module *m) { return m->vector_bytes ? m->vector_bytes : 64; }
const char *loom_graph_module_intern(loom_graph_module *m, const char *s, size_t len) {
  return loom_intern(&m->names, s, len);
}

size_t loom_graph_module_num_funcs(const loom_graph_module *m) { return m->funcs.len; }
uint32_t loom_graph_module_num_var_ids(const loom_graph_module *m) { return m->next_var_id; }
loom_graph_func *loom_graph_module_func_at(const loom_graph_module *m, size_t i) { return m->funcs.data[i]; }
size_t loom_graph_module_num_tps(const loom_graph_module *m) { return m->tps.len; }
loom_tp_func *loom_graph_module_tp_at(const loom_graph_module *m, size_t i) { return m->tps.data[i]; }
size_t loom_graph_module_num_consts(const loom_graph_module *m) { return m->consts.len; }
const loom_graph_const *loom_graph_module_const_at(const loom_graph_module *m, size_t i) {
  return &m->consts.data[i];
}
size_t loom_graph_module_num_externs(const loom_graph_module *m) { return m->externs.len; }
const loom_graph_extern *loom_graph_module_extern_at(const loom_graph_module *m, size_t i) {
  return &m->externs.data[i];
}

loom_tp_func *loom_graph_module_find_tp(const loom_graph_module *m, const char *name) {
  for (size_t i = 0; i < m->tps.len; i++)
    if (!strcmp(loom_graph_tp_name(m->tps.data[i]), name)) return m->tps.data[i];
  return NULL;
}

loom_graph_func *loom_graph_module_find_func(const loom_graph_module *m, const char *name) {
  for (size_t i = 0; i < m->funcs.len; i++)
    if (!strcmp(m->funcs.data[i]->name, name)) return m->funcs.data[i];
  return NULL;
}

loom_status loom_graph_module_add_func(loom_graph_module *m, loom_graph_func *f) {
  if (loom_graph_module_find_func(m, f->name))
    return LOOM_ERROR(ALREADY_EXISTS, "function @%s is defined twice", f->name);
  if (!LOOM_VEC_PUSH(m->alloc, &m->funcs, f)) return LOOM_OOM();
  return LOOM_OK;
}

loom_status loom_graph_module_remove_func(loom_graph_module *m, const char *name) {
  for (size_t i = 0; i < m->funcs.len; i++)
    if (!strcmp(m->funcs.data[i]->name, name)) {
      memmove(&m->funcs.data[i], &m->funcs.data[i + 1], (m->funcs.len - i - 1) * sizeof *m->funcs.data);
      m->funcs.len--;
      return LOOM_OK;
    }
  return LOOM_ERROR(NOT_FOUND, "no function @%s to remove", name);
}

loom_status loom_graph_module_add_tp(loom_graph_module *m, loom_tp_func *tp) {
  if (!LOOM_VEC_PUSH(m->alloc, &m->tps, tp)) return LOOM_OOM();
  return LOOM_OK;
}

loom_status loom_graph_module_add_const(loom_graph_module *m, const char *name, loom_graph_expr *c) {
  const char *n = loom_graph_module_intern(m, name, strlen(name));
  if (!n) return LOOM_OOM();
  for (size_t i = 0; i < m->consts.len; i++)
    if (m->consts.data[i].name == n) return LOOM_ERROR(ALREADY_EXISTS, "constant @%s is defined twice", name);
  c->u.cnst.name = n;
  loom_graph_const k = {n, c, NULL, NULL};
  if (!LOOM_VEC_PUSH(m->alloc, &m->consts, k)) return LOOM_OOM();
  return LOOM_OK;
}

/* A name the text can quote: no '"', no line break, not empty. */
static bool quotable(const char *s) { return *s && !strpbrk(s, "\"\n\r"); }

loom_status loom_graph_module_const_set_weights(loom_graph_module *m, size_t i, const char *file, const char *tensor) {
  if (i >= m->consts.len) return LOOM_ERROR(OUT_OF_RANGE, "constant %zu of %zu", i, m->consts.len);
  if (!quotable(file) || !quotable(tensor))
    return LOOM_ERROR(INVALID_ARGUMENT, "constant @%s: weights file '%s' or tensor '%s' is empty or holds a quote or line break",
                      m->consts.data[i].name, file, tensor);
  const char *f = loom_arena_strdup(&m->arena, file), *t = loom_arena_strdup(&m->arena, tensor);
  if (!f || !t) return LOOM_OOM();
  m->consts.data[i].file = f, m->consts.data[i].tensor = t;
  return LOOM_OK;
}

loom_status loom_graph_module_weights(loom_graph_module *m, const char *file, loom_safetensors **out) {
  *out = NULL;
  const char *path = file[0] == '/' || !m->dir ? loom_arena_strdup(&m->arena, file)
                                               : loom_arena_printf(&m->arena, "%s/%s", m->dir, file);
  if (!path) return LOOM_OOM();
  for (size_t i = 0; i < m->weights.len; i++)
    if (!strcmp(m->weights.data[i].path, path)) return *out = m->weights.data[i].file, LOOM_OK;
  loom_safetensors *f;
  LOOM_PROPAGATE(loom_safetensors_open(m->alloc, path, &f));
  loom_graph_weights w = {path, f};
  if (!LOOM_VEC_PUSH(m->alloc, &m->weights, w)) {
    loom_safetensors_close(f);
    return LOOM_OOM();
  }
  *out = f;
  return LOOM_OK;
}
