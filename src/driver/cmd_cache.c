/* cmd_cache.c — `loom cache verify [DIR] [--remove]`: the full check of the packed-weight cache
 * (graph/wcache.h) that a compile does not do. A compile checks an entry's header, key and a
 * sample of its pages; this reads every byte of every `w-` entry against its XXH3-128 and every
 * `h-` (source hash) file against its check line. Kernel entries (`k-`) are not listed: every
 * load checks them in full (targets/cpu/kcache.h). */
#include <stdio.h>
#include <string.h>

#include "driver/commands.h"
#include "graph/wcache.h"
#include "targets/cpu/kcache.h"

/* Prints one unsound file. */
static void report_bad(void *ud, const char *name, const char *why, bool removed) {
  const char *dir = ud;
  printf("bad: %s/%s: %s%s\n", dir, name, why, removed ? " (removed)" : "");
}

static int run(const loom_cli_args *args) {
  if (strcmp(args->positional[0], "verify"))
    return loom_cli_usage_error(args, "unknown action '%s' (the one action is 'verify')", args->positional[0]);
  loom_strbuf warn;
  loom_strbuf_init(&warn, NULL);
  /* the directory: the argument, else the kernel cache's ($LOOM_CACHE_DIR or the default) */
  loom_kcache *kc = args->npositional > 1 ? NULL : loom_kcache_open(NULL, 0, &warn);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", args->npositional > 1 ? args->positional[1] : loom_kcache_dir(kc));
  loom_kcache_close(kc);
  loom_strbuf_free(&warn);
  loom_wcache_verify_report r = loom_wcache_verify(dir, loom_cli_flag(args, "--remove"), report_bad, dir);
  if (r.unreadable) {
    fprintf(stderr, "loom cache: error: cannot list the cache directory '%s'\n", dir);
    return LOOM_EXIT_FAILURE;
  }
  printf("cache %s: %u packed-weight and source-hash files checked, %u bad%s\n", dir, r.checked, r.bad,
         r.removed ? " (removed)" : "");
  return r.bad && !loom_cli_flag(args, "--remove") ? LOOM_EXIT_FAILURE : LOOM_EXIT_OK;
}

const loom_cli_command loom_cmd_cache = {
    .name = "cache",
    .summary = "verify every byte of the packed-weight cache (a compile checks a sample)",
    .positional = "verify [DIR]",
    .min_positional = 1,
    .max_positional = 2,
    .opts = (const loom_cli_opt[]){{"--remove", NULL, "remove the unsound files (the next compile makes them again)", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "DIR defaults to the kernel cache's directory ($LOOM_CACHE_DIR, else ~/.cache/loom). Exit status 1 when "
               "a file is unsound and --remove was not given.",
};
