/* tp_test_util.c — helpers shared by the tensor-program tests. */
#include "tp_test_util.h"

#include <stdlib.h>
#include <string.h>

loom_status tp_parse(tp_fixture *fx, const char *text) {
  memset(fx, 0, sizeof *fx);
  loom_status s = loom_sym_ctx_create(NULL, &fx->cx);
  if (s) return s;
  loom_arena_init(&fx->arena, NULL, 0);
  loom_diag_list_init(&fx->diags, NULL);
  fx->src = (loom_source){"test.loom", text, strlen(text)};
  size_t pos = 0;
  return loom_tp_parse_func(&fx->arena, fx->cx, &fx->src, &pos, &fx->diags, &fx->f);
}

void tp_fixture_free(tp_fixture *fx) {
  loom_diag_list_destroy(&fx->diags);
  loom_arena_destroy(&fx->arena);
  if (fx->cx) loom_sym_ctx_destroy(fx->cx);
}

char *tp_print(const loom_tp_func *f) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_tp_print_func(f, &sb);
  if (sb.oom) {
    loom_strbuf_free(&sb);
    return NULL;
  }
  char *out = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return out;
}
