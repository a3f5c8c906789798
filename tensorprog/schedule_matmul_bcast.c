/* schedule_matmul_bcast.c — rule 0 (the matmul rule) on a nest whose batch axes broadcast by a
 * run-time test (schedule_matmul_internal.h, docs/codegen.md "Schedule rules").
 *
 * A batch axis read through `select(x == 1, 0, i)` (Swin's window attention after its mask) is no
 * row of an operand to the rule, and the nest ran as scalar loops (a 49 x 32 x 49 batched matmul
 * at 7 GFLOP/s). The nest is versioned instead (schedule_bcast.h):
 *     if x == E && .. { the nest, each such index i: the plain batched matmul, tiled }
 *     else { the nest as it was, its outermost loop parallel } */
#include <string.h>

#include "tensorprog/schedule_bcast.h"
#include "tensorprog/schedule_matmul_internal.h"

/* The variant (its selects already plain indices): the rule; refused (the program left as it
 * was) unless the rule tiles it. */
static loom_status plain_batches(void *ud, loom_tp_func *view) {
  const loom_tp_rule_ud *v = ud;
  bool done;
  LOOM_PROPAGATE(loom_tpmm_schedule_plain(v->a, v->cx, view, &view->body, v->p, v->why, &done));
  return done ? LOOM_OK : LOOM_ERROR(FAILED_PRECONDITION, "the nest with plain batch indices is no matmul the rule tiles");
}

loom_status loom_tpmm_schedule_bcast(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                     const loom_tp_cpu_params *p, loom_strbuf *why, bool *done) {
  *done = false;
  loom_tp_func view = *f;
  view.body = *slot;
  loom_strbuf inner;
  loom_strbuf_init(&inner, NULL);
  loom_tp_rule_ud ud = {a, cx, p, &inner};
  int n;
  loom_status st = loom_tp_version_bcast(a, cx, &view, &view.body, NULL, plain_batches, &ud, &n);
  if (!st && !n) {
    loom_strbuf_free(&inner);
    return LOOM_OK;
  }
  if (!st) {
    /* the fallback (a batch axis that does broadcast): its outermost loop in parallel */
    loom_tp_stmt *fb = view.body->kind == LOOM_TP_STMT_IF ? view.body->u.if_.else_s : NULL;
    if (fb && fb->kind == LOOM_TP_STMT_FOR && !fb->u.loop.reduce && fb->u.loop.kind == LOOM_TP_LOOP_SERIAL) {
      loom_status ps = loom_tp_set_kind(cx, fb, LOOM_TP_LOOP_PARALLEL);
      loom_status_free(ps);
    }
    loom_strbuf_printf(why, "nest %s: batch axes broadcast by a run-time test (%d): versioned, where each equals its loop's "
                            "extent the plain batched matmul:\n%s", loom_sym_var_name((*slot)->u.loop.var), n, loom_strbuf_cstr(&inner));
    *slot = view.body;
    *done = true;
  } else if (loom_status_code(st) == LOOM_CODE_FAILED_PRECONDITION || loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED) {
    loom_status_free(st);
    st = LOOM_OK;
  }
  loom_strbuf_free(&inner);
  return st;
}
