/* lower_host.c — operators the VM runs on the host (docs/vm.md "Host operators"): a call that
 * takes or makes a string tensor, which no tensor program can (legalize keeps it as an
 * operator), becomes
 *     TUPLE  t := (operands)
 *     CALLB  HOSTOP (dst, t; i)      i: the call's index in l->hostops
 * and the host that opened the executable runs the operator's reference implementation on
 * the operands (src/driver/hostop.c). A tensor result is matched against its struct info,
 * which binds the dims only the data decides (string_split's pieces, string_normalize's
 * kept elements). */
#include "driver/lower_vm_internal.h"

#include <stdio.h>

/* Whether call v is one the VM runs as a host operator: an operator taking or making a string. */
bool lw_is_hostop(const loom_graph_expr *v) {
  if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP) return false;
  if (v->sinfo && loom_sinfo_holds_string(v->sinfo)) return true;
  for (size_t i = 0; i < v->u.call.nargs; i++)
    if (v->u.call.args[i]->sinfo && loom_sinfo_holds_string(v->u.call.args[i]->sinfo)) return true;
  return false;
}

void lw_emit_hostop(lower *l, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  const char *op = loom_graph_op_name(v->u.call.op);
  if (!l->hostops) {
    FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': operator '%s' takes or makes string tensors, which run on the "
         "host, and this lowering has no host operators", l->f->name, b->var->u.var.name, op);
    return;
  }
  uint32_t n = (uint32_t)v->u.call.nargs, w[1 + LOOM_VM_MAX_CALL_ARGS];
  if (n > LOOM_VM_MAX_CALL_ARGS) {
    FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': %u operands", l->f->name, b->var->u.var.name, n);
    return;
  }
  w[0] = n;
  for (uint32_t i = 0; i < n; i++) {
    const loom_graph_expr *a = v->u.call.args[i];
    if (!a->sinfo || a->sinfo->kind != LOOM_SINFO_TENSOR) {
      FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': operand %u of '%s' is not a tensor", l->f->name,
           b->var->u.var.name, i, op);
      return;
    }
    w[1 + i] = lw_leaf_reg(l, a);
  }
  uint32_t idx = lw_const_reg(l, (int64_t)l->hostops->len);
  if (!LOOM_VEC_PUSH(NULL, l->hostops, v)) {
    lw_oom(l);
    return;
  }
  uint32_t t = loom_vm_fb_reg(l->fb, LOOM_VM_OBJ_TUPLE);
  uint32_t dst = lw_new_var_reg(l, b->var);
  if (l->err) return;
  lw_emit_main(l, abx(LOOM_VM_OP_TUPLE, t, loom_vm_fb_list(l->fb, w, n + 1)));
  uint32_t c[5] = {2, dst, t, 1, idx};
  lw_emit_main(l, abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_HOSTOP, loom_vm_fb_list(l->fb, c, 5)));
  loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, t, 0, 0));
  if (b->var->sinfo && b->var->sinfo->kind == LOOM_SINFO_TENSOR)
    lw_emit_match(l, dst, b->var->u.var.name, b->var->sinfo, NULL, false);
}
