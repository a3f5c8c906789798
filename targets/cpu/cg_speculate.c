/* cg_speculate.c — which tensor-program expressions code generation may evaluate although the
 * program evaluates them only under a condition (cg_expr.c: lazy `select`, `&&`, `||`). */
#include "targets/cpu/cg_internal.h"

/* Is load `l` one that `e` (evaluated unconditionally) makes too: the same buffer at the same
 * indices (symbolic indices are hash-consed, so equal ones are one pointer)? */
static bool load_made_by(const loom_tp_expr *l, const loom_tp_expr *e) {
  if (!e) return false;
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: {
      if (e->u.load.buf != l->u.load.buf) return false;
      for (int k = 0; k < l->u.load.buf->ndim; k++) {
        const loom_tp_expr *a = l->u.load.idx[k], *b = e->u.load.idx[k];
        bool same = a == b || (a->kind == LOOM_TP_EXPR_SYM && b->kind == LOOM_TP_EXPR_SYM && a->u.sym == b->u.sym) ||
                    (a->kind == LOOM_TP_EXPR_CONST && b->kind == LOOM_TP_EXPR_CONST && a->u.c.i == b->u.c.i);
        if (!same) return false;
      }
      return true;
    }
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (load_made_by(l, e->u.op.args[i])) return true;
      return false;
    case LOOM_TP_EXPR_CAST: return load_made_by(l, e->u.cast_arg);
    case LOOM_TP_EXPR_SELECT: return load_made_by(l, e->u.select.cond);
    default: return false;
  }
}

/* Does evaluating `e` load memory or divide (so it must not be speculated)? A load is safe when
 * its buffer is a scalar (rank 0: one element, always in bounds) or when `known` (the select's
 * condition, evaluated anyway) makes the same load: LeakyRelu's select(x < 0, x * alpha, x) then
 * evaluates both sides, where branches became a masked gather of alpha per vector (1.3x ORT). */
bool cg_unsafe_to_speculate(const loom_tp_expr *e, const loom_tp_expr *known) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: return e->u.load.buf->ndim > 0 && !load_made_by(e, known);
    case LOOM_TP_EXPR_OP: {
      loom_tp_op op = e->u.op.op;
      if (!loom_dtype_is_float(e->u.op.args[0]->dtype) &&
          (op == LOOM_TP_OP_DIV || op == LOOM_TP_OP_MOD || op == LOOM_TP_OP_FLOORDIV || op == LOOM_TP_OP_FLOORMOD))
        return true;
      for (int i = 0; i < loom_tp_op_arity(op); i++)
        if (cg_unsafe_to_speculate(e->u.op.args[i], known)) return true;
      return false;
    }
    case LOOM_TP_EXPR_CAST: return cg_unsafe_to_speculate(e->u.cast_arg, known);
    case LOOM_TP_EXPR_SELECT:
      return cg_unsafe_to_speculate(e->u.select.cond, known) || cg_unsafe_to_speculate(e->u.select.then_e, known) ||
             cg_unsafe_to_speculate(e->u.select.else_e, known);
    default: return false;
  }
}
