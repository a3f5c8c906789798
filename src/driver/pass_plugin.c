/* pass_plugin.c — passes loaded from shared libraries (src/loom_pass.h): loading, checking
 * and the table of loaded passes the pass manager reads (loom_pass_info_of, loom_pass_lookup).
 *
 * The table only grows. A pass is published by writing its entry and then raising the count
 * with release order; readers load the count with acquire order, so a reader sees every entry
 * below the count whole. Loads are serialised by a mutex. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "driver/pipeline.h"
#include "loom_pass.h"

static loom_pass_info loaded[LOOM_PASS_PLUGIN_MAX];
static size_t nloaded; /* atomic: entries published */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

size_t loom_pass_plugin_count(void) { return __atomic_load_n(&nloaded, __ATOMIC_ACQUIRE); }

const loom_pass_info *loom_pass_plugin_info(size_t k) { return k < loom_pass_plugin_count() ? &loaded[k] : NULL; }

static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Why pass i of a plugin's table cannot be registered after the `have` loaded ones, or LOOM_OK. */
static loom_status check_pass(const char *path, const loom_plugin_pass *ps, size_t i, size_t have) {
  const loom_plugin_pass *p = &ps[i];
  if (!p->name || !*p->name) return LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: pass %zu has no name", path, i);
  for (const char *c = p->name; *c; c++)
    if (!name_char(*c))
      return LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: pass %zu's name '%s' has '%c' (letters, digits, '_' and '-' only)",
                        path, i, p->name, *c);
  if (!p->run) return LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: pass '%s' has no run function", path, p->name);
  loom_pass_id id;
  if (loom_pass_lookup(p->name, strlen(p->name), &id))
    return LOOM_ERROR(ALREADY_EXISTS, "pass plugin %s: a pass named '%s' exists already (%s)", path, p->name,
                      id < LOOM_PASS_COUNT ? "built in" : "loaded before");
  for (size_t j = 0; j < i; j++)
    if (!strcmp(ps[j].name, p->name))
      return LOOM_ERROR(ALREADY_EXISTS, "pass plugin %s: two passes are named '%s'", path, p->name);
  if (have + i >= LOOM_PASS_PLUGIN_MAX)
    return LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: pass '%s' is over the limit of %d loaded passes", path, p->name,
                      LOOM_PASS_PLUGIN_MAX);
  return LOOM_OK;
}

loom_status loom_pass_plugin_load(const char *path, size_t *nadded) {
  if (nadded) *nadded = 0;
  if (!path || !*path) return LOOM_ERROR(INVALID_ARGUMENT, "pass plugin: no file named");
  /* dlopen searches the library path for a bare name; a path with a slash is taken as given */
  char buf[4096];
  if (!strchr(path, '/') && snprintf(buf, sizeof buf, "./%s", path) < (int)sizeof buf) path = buf;
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    return LOOM_ERROR(NOT_FOUND, "pass plugin %s: cannot load: %s", path, why ? why : "unknown reason");
  }
  loom_pass_plugin_entry entry;
  void *sym = dlsym(lib, LOOM_PASS_PLUGIN_ENTRY);
  memcpy(&entry, &sym, sizeof entry);
  if (!sym) {
    dlclose(lib);
    return LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: no function '%s' (src/loom_pass.h)", path, LOOM_PASS_PLUGIN_ENTRY);
  }
  const loom_pass_plugin *pl = entry();
  loom_status st = LOOM_OK;
  if (!pl) st = LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: %s returned no plugin", path, LOOM_PASS_PLUGIN_ENTRY);
  else if (pl->abi != LOOM_PASS_PLUGIN_ABI)
    st = LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: built for pass interface %u, this Loom has %u", path, pl->abi,
                    LOOM_PASS_PLUGIN_ABI);
  else if (pl->npasses && !pl->passes)
    st = LOOM_ERROR(INVALID_ARGUMENT, "pass plugin %s: %zu passes and no table", path, pl->npasses);
  if (st) {
    dlclose(lib);
    return st;
  }
  pthread_mutex_lock(&load_lock);
  size_t have = nloaded;
  for (size_t i = 0; i < pl->npasses && !st; i++) st = check_pass(path, pl->passes, i, have);
  if (!st) {
    for (size_t i = 0; i < pl->npasses; i++) {
      const loom_plugin_pass *p = &pl->passes[i];
      loaded[have + i] = (loom_pass_info){.name = p->name,
                                          .level = LOOM_PASS_LEVEL_MODULE,
                                          .purpose = p->purpose ? p->purpose : "(a loaded pass)",
                                          .requires = "a verified module",
                                          .invalidates = "what the plugin says",
                                          .plugin = p};
    }
    __atomic_store_n(&nloaded, have + pl->npasses, __ATOMIC_RELEASE);
    if (nadded) *nadded = pl->npasses;
  }
  pthread_mutex_unlock(&load_lock);
  if (st) dlclose(lib);
  return st;
}
