/* lower_vm.c — graph functions -> VM bytecode (see lower_vm.h). */
#include "driver/lower_vm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "graph/memplan.h"
#include "tensorprog/tp.h"
#include "tensorprog/tp_ir.h"

void lw_oom(lower *l) {
  if (!l->err) l->err = LOOM_OOM();
}

void lw_emit_main(lower *l, loom_vm_insn in) {
  if (l->dbg) loom_vm_fb_debug(l->fb, l->dbg);
  loom_vm_fb_emit(l->fb, in);
}

/* ---- int registers for symbolic expressions ---------------------------------- */

uint32_t lw_const_reg(lower *l, int64_t v) {
  const loom_sym_expr *c = loom_sym_const(l->cx, v);
  return c ? lw_sym_reg(l, c) : (lw_oom(l), NOREG);
}

static uint32_t fold(lower *l, const loom_sym_expr *e, loom_vm_op op) {
  uint32_t acc = lw_sym_reg(l, loom_sym_operand(e, 0));
  for (size_t i = 1; i < loom_sym_num_operands(e) && acc != NOREG; i++) {
    uint32_t r = lw_sym_reg(l, loom_sym_operand(e, i));
    if (r == NOREG) return NOREG;
    uint32_t d = loom_vm_fb_ireg(l->fb, NULL);
    loom_vm_fb_emit(l->fb, abc(op, d, acc, r));
    acc = d;
  }
  return acc;
}

uint32_t lw_sym_reg(lower *l, const loom_sym_expr *e) {
  if (l->err) return NOREG;
  if (!e) {
    l->err = loom_sym_ctx_take_error(l->cx);
    if (!l->err) lw_oom(l);
    return NOREG;
  }
  uint64_t r;
  if (loom_map_get(&l->sym_reg, (uint64_t)(uintptr_t)e, &r)) return (uint32_t)r;
  uint32_t d = NOREG;
  int64_t v;
  loom_sym_kind k = loom_sym_kind_of(e);
  if (loom_sym_is_const(e, &v)) {
    d = loom_vm_fb_ireg(l->fb, NULL);
    loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_ICONST, d, loom_vm_builder_intconst(l->b, v)));
  } else if (k == LOOM_SYM_VAR) {
    FAIL(l, INTERNAL, "function @%s, %s: symbolic variable '%s' is used before any parameter or match_cast defines it",
         l->f->name, l->where, loom_sym_var_name(e));
    return NOREG;
  } else if (k == LOOM_SYM_ADD) {
    d = fold(l, e, LOOM_VM_OP_IADD);
  } else if (k == LOOM_SYM_MUL) {
    d = fold(l, e, LOOM_VM_OP_IMUL);
  } else if (k == LOOM_SYM_SELECT) { /* b + c*(a - b) with c in {0, 1} */
    uint32_t c = lw_sym_reg(l, loom_sym_operand(e, 0)), a = lw_sym_reg(l, loom_sym_operand(e, 1)),
             b = lw_sym_reg(l, loom_sym_operand(e, 2));
    if (c == NOREG || a == NOREG || b == NOREG) return NOREG;
    uint32_t t = loom_vm_fb_ireg(l->fb, NULL);
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_ISUB, t, a, b));
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_IMUL, t, t, c));
    d = loom_vm_fb_ireg(l->fb, NULL);
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_IADD, d, b, t));
  } else if (k == LOOM_SYM_NOT) {
    uint32_t a = lw_sym_reg(l, loom_sym_operand(e, 0)), z = lw_const_reg(l, 0);
    if (a == NOREG || z == NOREG) return NOREG;
    d = loom_vm_fb_ireg(l->fb, NULL);
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_IEQ, d, a, z));
  } else {
    loom_vm_op op;
    switch (k) {
    case LOOM_SYM_FLOORDIV: op = LOOM_VM_OP_IFLOORDIV; break;
    case LOOM_SYM_FLOORMOD: op = LOOM_VM_OP_IFLOORMOD; break;
    case LOOM_SYM_MIN: op = LOOM_VM_OP_IMIN; break;
    case LOOM_SYM_MAX: op = LOOM_VM_OP_IMAX; break;
    case LOOM_SYM_EQ: op = LOOM_VM_OP_IEQ; break;
    case LOOM_SYM_NE: op = LOOM_VM_OP_INE; break;
    case LOOM_SYM_LT: op = LOOM_VM_OP_ILT; break;
    case LOOM_SYM_LE: op = LOOM_VM_OP_ILE; break;
    case LOOM_SYM_AND: op = LOOM_VM_OP_IMIN; break; /* on 0/1 values */
    case LOOM_SYM_OR: op = LOOM_VM_OP_IMAX; break;
    default:
      FAIL(l, UNIMPLEMENTED, "function @%s, %s: no VM form for a '%s' expression", l->f->name, l->where,
           loom_sym_kind_name(k));
      return NOREG;
    }
    d = fold(l, e, op);
  }
  if (d != NOREG && !loom_map_put(&l->sym_reg, (uint64_t)(uintptr_t)e, d)) lw_oom(l);
  return d;
}

/* ---- shape matching ----------------------------------------------------------- */

typedef LOOM_VEC(uint32_t) words;

static void push(lower *l, words *w, uint32_t v) {
  if (!LOOM_VEC_PUSH(NULL, w, v)) lw_oom(l);
}

static bool is_bound(lower *l, const loom_sym_expr *var) { return loom_map_contains(&l->sym_reg, (uint64_t)(uintptr_t)var); }

typedef struct var_scan {
  lower *l;
  const loom_map *pending; /* vars bound earlier in the same MATCH */
  bool unbound;            /* some var is neither bound nor pending */
  bool uses_pending;
  words regs;              /* registers of the vars, for messages */
} var_scan;

static void scan_var(void *ud, const loom_sym_expr *v) {
  var_scan *s = ud;
  uint64_t r;
  if (loom_map_get(s->pending, (uint64_t)(uintptr_t)v, &r)) {
    s->uses_pending = true;
    push(s->l, &s->regs, (uint32_t)r);
  } else if (loom_map_get(&s->l->sym_reg, (uint64_t)(uintptr_t)v, &r)) {
    push(s->l, &s->regs, (uint32_t)r);
  } else {
    s->unbound = true;
  }
}

static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* Emits MATCH of register `reg` (named `name` in errors) against tensor info `si`.
 * With `defer`, axes that need vars no earlier instruction binds are left ANY and
 * flagged in defer[axis]; without it they are errors. Returns false on error. */
bool lw_emit_match(lower *l, uint32_t reg, const char *name, const loom_sinfo *si, bool *defer, bool recheck) {
  bool values = si->kind == LOOM_SINFO_SHAPE; /* a Shape value: its elements are matched (MATCHV) */
  if ((si->kind != LOOM_SINFO_TENSOR && !values) || si->ndim < 0 || !si->dims || si->ndim > LOOM_VM_MAX_RANK) {
    FAIL(l, UNIMPLEMENTED, "function @%s: '%s' needs a tensor of known rank or a Shape of at most %d known dims to be "
         "matched at run time", l->f->name, name, LOOM_VM_MAX_RANK);
    return false;
  }
  words w = {0};
  loom_map pending;
  loom_map_init(&pending, NULL);
  push(l, &w, loom_vm_builder_str(l->b, name));
  push(l, &w, values || si->dtype == LOOM_DTYPE_UNKNOWN ? LOOM_VM_ANY_DTYPE : (uint32_t)si->dtype);
  push(l, &w, (uint32_t)si->ndim);
  for (int ax = 0; ax < si->ndim && !l->err; ax++) {
    const loom_sym_expr *e = si->dims[ax];
    int64_t v, k, c;
    const loom_sym_expr *var;
    bool rechecking = recheck && !(defer && defer[ax]);
    if (rechecking) {
      push(l, &w, LOOM_VM_AXIS_ANY);
      continue;
    }
    if (loom_sym_is_const(e, &v)) {
      push(l, &w, LOOM_VM_AXIS_CONST);
      push(l, &w, loom_vm_builder_intconst(l->b, v));
      if (defer) defer[ax] = false;
      continue;
    }
    bool affine = loom_sym_as_affine(e, &var, &k, &c) && fits32(k) && fits32(c);
    if (affine && k > 0 && !is_bound(l, var) && !loom_map_contains(&pending, (uint64_t)(uintptr_t)var)) {
      uint32_t r = loom_vm_fb_ireg(l->fb, loom_sym_var_name(var));
      push(l, &w, LOOM_VM_AXIS_BIND);
      push(l, &w, r);
      push(l, &w, (uint32_t)(int32_t)k);
      push(l, &w, (uint32_t)(int32_t)c);
      if (!loom_map_put(&pending, (uint64_t)(uintptr_t)var, r)) lw_oom(l);
      if (defer) defer[ax] = false;
      continue;
    }
    if (affine) {
      uint64_t r;
      if (!loom_map_get(&pending, (uint64_t)(uintptr_t)var, &r)) loom_map_get(&l->sym_reg, (uint64_t)(uintptr_t)var, &r);
      push(l, &w, LOOM_VM_AXIS_AFFINE);
      push(l, &w, (uint32_t)r);
      push(l, &w, (uint32_t)(int32_t)k);
      push(l, &w, (uint32_t)(int32_t)c);
      if (defer) defer[ax] = false;
      continue;
    }
    var_scan s = {l, &pending, false, false, {0}};
    loom_sym_for_each_var(e, scan_var, &s);
    if (s.unbound || s.uses_pending) {
      LOOM_VEC_FREE(NULL, &s.regs);
      if (defer && !recheck) {
        defer[ax] = true;
        push(l, &w, LOOM_VM_AXIS_ANY);
        continue;
      }
      char *t = loom_sym_to_string(e);
      FAIL(l, UNIMPLEMENTED, "function @%s: '%s' axis %d is %s, whose variables no parameter or match_cast defines",
           l->f->name, name, ax, t ? t : "?");
      free(t);
      break;
    }
    uint32_t r = lw_sym_reg(l, e);
    char *t = loom_sym_to_string(e);
    push(l, &w, LOOM_VM_AXIS_EXPR);
    push(l, &w, r);
    push(l, &w, loom_vm_builder_str(l->b, t ? t : "?"));
    free(t);
    push(l, &w, (uint32_t)s.regs.len);
    for (size_t i = 0; i < s.regs.len; i++) push(l, &w, s.regs.data[i]);
    LOOM_VEC_FREE(NULL, &s.regs);
    if (defer) defer[ax] = false;
  }
  if (!l->err) {
    lw_emit_main(l, abx(values ? LOOM_VM_OP_MATCHV : LOOM_VM_OP_MATCH, reg, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
    uint64_t key, r;
    for (size_t it = 0; loom_map_next(&pending, &it, &key, &r);)
      if (!loom_map_put(&l->sym_reg, key, r)) lw_oom(l);
  }
  LOOM_VEC_FREE(NULL, &w);
  loom_map_destroy(&pending);
  return !l->err;
}

/* ---- object registers ----------------------------------------------------------- */

loom_vm_obj_kind lw_kind_of(const loom_sinfo *si) {
  if (!si) return LOOM_VM_OBJ_ANY;
  if (si->kind == LOOM_SINFO_TENSOR || si->kind == LOOM_SINFO_SHAPE) return LOOM_VM_OBJ_TENSOR; /* a Shape: 1-D i64 */
  if (si->kind == LOOM_SINFO_TUPLE) return LOOM_VM_OBJ_TUPLE;
  if (si->kind == LOOM_SINFO_LIST) return LOOM_VM_OBJ_LIST;
  return LOOM_VM_OBJ_ANY;
}

static uint32_t const_index(lower *l, const loom_graph_expr *c) {
  uint64_t idx;
  if (loom_map_get(&l->consts, (uint64_t)(uintptr_t)c->u.cnst.data, &idx)) return (uint32_t)idx - 1;
  const loom_sinfo *si = c->sinfo;
  int64_t dims[LOOM_VM_MAX_RANK];
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || si->ndim > LOOM_VM_MAX_RANK || !si->dims) {
    FAIL(l, UNIMPLEMENTED, "function @%s, %s: a constant of unknown shape", l->f->name, l->where);
    return NOREG;
  }
  for (int i = 0; i < si->ndim; i++)
    if (!loom_sym_is_const(si->dims[i], &dims[i])) {
      FAIL(l, UNIMPLEMENTED, "function @%s, %s: a constant with a symbolic dim", l->f->name, l->where);
      return NOREG;
    }
  char name[32];
  if (!c->u.cnst.name) snprintf(name, sizeof name, "const%u", l->nconsts);
  l->nconsts++;
  uint32_t k = loom_vm_builder_const(l->b, c->u.cnst.name ? c->u.cnst.name : name, si->dtype, (uint32_t)si->ndim, dims,
                                     c->u.cnst.data);
  if (!loom_map_put(&l->consts, (uint64_t)(uintptr_t)c->u.cnst.data, (uint64_t)k + 1)) lw_oom(l);
  return k;
}

/* The register holding leaf `e` (a var, or a constant loaded here). */
uint32_t lw_leaf_reg(lower *l, const loom_graph_expr *e) {
  if (l->err) return NOREG;
  uint64_t r;
  if (e->kind == LOOM_GRAPH_EXPR_VAR) {
    if (loom_map_get(&l->var_reg, e->u.var.id, &r)) return (uint32_t)r;
    FAIL(l, INTERNAL, "function @%s, %s: '%s' has no register", l->f->name, l->where, e->u.var.name);
    return NOREG;
  }
  if (e->kind == LOOM_GRAPH_EXPR_CONST) {
    uint32_t k = const_index(l, e);
    if (k == NOREG) return NOREG;
    uint32_t d = loom_vm_fb_reg(l->fb, LOOM_VM_OBJ_TENSOR);
    loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_TCONST, d, k));
    return d;
  }
  FAIL(l, UNIMPLEMENTED, "function @%s, %s: a %s operand has no VM form here", l->f->name, l->where,
       e->kind == LOOM_GRAPH_EXPR_SHAPE ? "shape" : e->kind == LOOM_GRAPH_EXPR_SYM ? "scalar" : "non-leaf");
  return NOREG;
}

uint32_t lw_new_var_reg(lower *l, const loom_graph_expr *var) {
  uint32_t r = loom_vm_fb_reg(l->fb, lw_kind_of(var->sinfo));
  if (!loom_map_put(&l->var_reg, var->u.var.id, r)) lw_oom(l);
  return r;
}

/* ---- calls ---------------------------------------------------------------------- */

static uint32_t kernel_index(lower *l, const loom_tp_func *tp) {
  uint64_t k;
  if (loom_map_get(&l->kernels, (uint64_t)(uintptr_t)tp, &k)) return (uint32_t)k - 1;
  uint32_t nbuf = 0;
  for (size_t i = 0; i < tp->nparams; i++) nbuf += tp->params[i].is_buffer;
  loom_lower_words sig = {0};
  loom_status st = loom_lower_tp_sig(tp, l->b, &sig);
  if (st) {
    if (!l->err) l->err = st;
    else loom_status_free(st);
  }
  uint32_t idx = loom_vm_builder_kernel(l->b, tp->name, nbuf, (uint32_t)tp->nsyms, sig.data, (uint32_t)sig.len);
  LOOM_VEC_FREE(NULL, &sig);
  if (!loom_map_put(&l->kernels, (uint64_t)(uintptr_t)tp, (uint64_t)idx + 1)) lw_oom(l);
  return idx;
}

/* Destination of binding `bi`: a view into its planned storage, or a fresh tensor. */
/* Destination of binding `bi` (NOREG: a binding inside an `if` branch, which gets storage of
 * its own; the plan counts it in its `if` term). */
static uint32_t emit_output(lower *l, uint32_t bi, const loom_graph_expr *var) {
  const loom_sinfo *si = var->sinfo;
  uint32_t t = bi == NOREG ? LOOM_MEMPLAN_NONE : l->plan->tensor_of[bi];
  if (bi != NOREG && t == LOOM_MEMPLAN_NONE) {
    FAIL(l, INTERNAL, "function @%s, %s: no planned storage", l->f->name, l->where);
    return NOREG;
  }
  if (si->kind != LOOM_SINFO_TENSOR || !si->dims || si->ndim < 0 || si->dtype == LOOM_DTYPE_UNKNOWN) {
    FAIL(l, UNIMPLEMENTED, "function @%s, %s: the result needs a tensor type of known dtype and shape", l->f->name, l->where);
    return NOREG;
  }
  words w = {0};
  static const loom_memplan_storage own = {.output = true};
  const loom_memplan_storage *st = t == LOOM_MEMPLAN_NONE ? &own : &l->plan->storages[l->plan->tensors[t].storage];
  uint32_t s = t == LOOM_MEMPLAN_NONE ? 0 : l->plan->tensors[t].storage;
  if (!st->output) {
    if (l->storage_reg[s] == NOREG) {
      uint32_t size = lw_sym_reg(l, st->size);
      if (size == NOREG) return NOREG;
      l->storage_reg[s] = loom_vm_fb_reg(l->fb, LOOM_VM_OBJ_STORAGE);
      loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_ALLOC, l->storage_reg[s], size, 0));
    }
    push(l, &w, l->storage_reg[s]);
    push(l, &w, (uint32_t)si->dtype);
    push(l, &w, l->zero_reg);
  } else {
    push(l, &w, (uint32_t)si->dtype);
    push(l, &w, 0);
  }
  push(l, &w, (uint32_t)si->ndim);
  for (int d = 0; d < si->ndim; d++) push(l, &w, lw_sym_reg(l, si->dims[d]));
  uint32_t dst = lw_new_var_reg(l, var);
  if (!l->err)
    lw_emit_main(l, abx(st->output ? LOOM_VM_OP_EMPTY : LOOM_VM_OP_VIEW, dst, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
  LOOM_VEC_FREE(NULL, &w);
  return dst;
}

/* Solves the program's signature symbols from the struct info at the call. */
static void solve_syms(lower *l, const loom_tp_func *tp, const loom_graph_expr *call, const loom_sinfo *out,
                       const loom_sym_expr **val) {
  for (size_t j = 0; j < tp->nsyms; j++) val[j] = NULL;
  for (size_t i = 0; i < tp->nparams; i++) {
    const loom_tp_param *p = &tp->params[i];
    const loom_graph_expr *arg = i < call->u.call.nargs ? call->u.call.args[i] : NULL;
    if (!p->is_buffer) {
      const loom_sym_expr *v = NULL;
      if (arg && arg->kind == LOOM_GRAPH_EXPR_SYM) v = arg->u.sym;
      else if (arg && arg->sinfo && arg->sinfo->kind == LOOM_SINFO_SCALAR && arg->sinfo->value) v = arg->sinfo->value;
      for (size_t j = 0; j < tp->nsyms; j++)
        if (tp->syms[j] == p->scalar.var) val[j] = v;
      continue;
    }
    const loom_sinfo *si = i + 1 == tp->nparams ? out : arg ? arg->sinfo : NULL;
    if (!si || si->kind != LOOM_SINFO_TENSOR || !si->dims || si->ndim != p->buf->ndim) continue;
    for (int ax = 0; ax < si->ndim; ax++) {
      const loom_sym_expr *var;
      int64_t k, c;
      if (!loom_sym_as_affine(p->buf->dims[ax], &var, &k, &c)) continue;
      for (size_t j = 0; j < tp->nsyms; j++) {
        if (tp->syms[j] != var || val[j]) continue;
        const loom_sym_expr *g = si->dims[ax];
        if (c) g = loom_sym_sub(l->cx, g, loom_sym_const(l->cx, c));
        if (k != 1) g = loom_sym_floordiv(l->cx, g, loom_sym_const(l->cx, k));
        val[j] = g;
      }
    }
  }
}

static void emit_call_tp(lower *l, uint32_t bi, const loom_graph_binding *b) {
  const loom_graph_expr *c = b->value;
  const loom_tp_func *tp = loom_graph_module_find_tp(l->m, c->u.call.target);
  if (!tp) {
    FAIL(l, NOT_FOUND, "function @%s, %s: unknown tensor program @%s", l->f->name, l->where, c->u.call.target);
    return;
  }
  if (c->u.call.nargs + 1 != tp->nparams || tp->nparams > LOOM_VM_MAX_CALL_ARGS || tp->nsyms > LOOM_VM_MAX_CALL_ARGS) {
    FAIL(l, INVALID_ARGUMENT, "function @%s, %s: %zu arguments for @%s of %zu parameters (the last is the result)",
         l->f->name, l->where, c->u.call.nargs, tp->name, tp->nparams);
    return;
  }
  const loom_sym_expr *val[LOOM_VM_MAX_CALL_ARGS];
  solve_syms(l, tp, c, b->var->sinfo, val);
  words w = {0};
  uint32_t nbuf = 0;
  for (size_t i = 0; i < tp->nparams; i++) nbuf += tp->params[i].is_buffer;
  push(l, &w, nbuf);
  for (size_t i = 0; i + 1 < tp->nparams; i++)
    if (tp->params[i].is_buffer) push(l, &w, lw_leaf_reg(l, c->u.call.args[i]));
  uint32_t symregs[LOOM_VM_MAX_CALL_ARGS];
  for (size_t j = 0; j < tp->nsyms && !l->err; j++) {
    if (!val[j]) {
      FAIL(l, UNIMPLEMENTED, "function @%s, %s: cannot tell the value of @%s's symbol '%s' from the call", l->f->name,
           l->where, tp->name, loom_sym_var_name(tp->syms[j]));
      break;
    }
    symregs[j] = lw_sym_reg(l, val[j]);
  }
  uint32_t dst = emit_output(l, bi, b->var);
  push(l, &w, dst);
  push(l, &w, (uint32_t)tp->nsyms);
  for (size_t j = 0; j < tp->nsyms; j++) push(l, &w, symregs[j]);
  uint32_t k = kernel_index(l, tp);
  if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_CALLK, k, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
  LOOM_VEC_FREE(NULL, &w);
}

static void emit_call_extern(lower *l, uint32_t bi, const loom_graph_binding *b) {
  const loom_graph_expr *c = b->value;
  words bufs = {0}, syms = {0};
  const loom_sinfo *infos[LOOM_VM_MAX_CALL_ARGS];
  uint32_t n = 0;
  for (size_t i = 0; i < c->u.call.nargs && !l->err; i++) {
    const loom_graph_expr *a = c->u.call.args[i];
    if (a->kind == LOOM_GRAPH_EXPR_SYM) continue;
    if (n + 1 >= LOOM_VM_MAX_CALL_ARGS) break;
    infos[n++] = a->sinfo;
    push(l, &bufs, lw_leaf_reg(l, a));
  }
  infos[n++] = b->var->sinfo;
  /* the signature: each buffer's dims are the symbols passed for them, in order */
  words sig = {0};
  for (uint32_t i = 0; i < n && !l->err; i++) {
    const loom_sinfo *si = infos[i];
    if (!si || si->kind != LOOM_SINFO_TENSOR || !si->dims || si->dtype == LOOM_DTYPE_UNKNOWN) {
      FAIL(l, UNIMPLEMENTED, "function @%s, %s: call_extern needs tensors of known dtype and shape", l->f->name, l->where);
      break;
    }
    push(l, &sig, (uint32_t)si->dtype);
    push(l, &sig, (uint32_t)si->ndim);
    for (int d = 0; d < si->ndim; d++) {
      push(l, &sig, 1), push(l, &sig, LOOM_VM_SIG_SYM), push(l, &sig, (uint32_t)syms.len);
      push(l, &syms, lw_sym_reg(l, si->dims[d]));
    }
  }
  for (size_t i = 0; i < c->u.call.nargs && !l->err; i++)
    if (c->u.call.args[i]->kind == LOOM_GRAPH_EXPR_SYM) push(l, &syms, lw_sym_reg(l, c->u.call.args[i]->u.sym));
  for (size_t j = 0; j < syms.len && !l->err; j++) {
    char name[32];
    snprintf(name, sizeof name, "s%zu", j);
    push(l, &sig, loom_vm_builder_str(l->b, name));
  }
  uint32_t dst = emit_output(l, bi, b->var);
  push(l, &bufs, dst);
  if (!l->err) {
    uint32_t k = loom_vm_builder_extern(l->b, c->u.call.target, (uint32_t)bufs.len, (uint32_t)syms.len, sig.data,
                                        (uint32_t)sig.len);
    words w = {0};
    push(l, &w, (uint32_t)bufs.len);
    for (size_t i = 0; i < bufs.len; i++) push(l, &w, bufs.data[i]);
    push(l, &w, (uint32_t)syms.len);
    for (size_t i = 0; i < syms.len; i++) push(l, &w, syms.data[i]);
    if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_CALLX, k, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
    LOOM_VEC_FREE(NULL, &w);
  }
  LOOM_VEC_FREE(NULL, &bufs);
  LOOM_VEC_FREE(NULL, &syms);
  LOOM_VEC_FREE(NULL, &sig);
}

/* A view op (loom_graph_op_is_view): the input's memory under the result's dims. */
static void emit_view(lower *l, const loom_graph_binding *b) {
  const loom_sinfo *si = b->var->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || !si->dims || si->ndim < 0) {
    FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': a view needs a result of known shape", l->f->name, l->where);
    return;
  }
  words w = {0};
  push(l, &w, lw_leaf_reg(l, b->value->u.call.args[0]));
  push(l, &w, (uint32_t)si->ndim);
  for (int d = 0; d < si->ndim; d++) push(l, &w, lw_sym_reg(l, si->dims[d]));
  uint32_t dst = lw_new_var_reg(l, b->var);
  if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_RESHAPE, dst, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
  LOOM_VEC_FREE(NULL, &w);
}

static void emit_call_func(lower *l, const loom_graph_binding *b) {
  const loom_graph_expr *c = b->value;
  size_t idx = loom_graph_module_num_funcs(l->m);
  for (size_t i = 0; i < loom_graph_module_num_funcs(l->m); i++)
    if (!strcmp(loom_graph_module_func_at(l->m, i)->name, c->u.call.target)) idx = i;
  if (idx == loom_graph_module_num_funcs(l->m)) {
    FAIL(l, NOT_FOUND, "function @%s, %s: unknown function @%s", l->f->name, l->where, c->u.call.target);
    return;
  }
  words w = {0};
  push(l, &w, (uint32_t)idx);
  push(l, &w, (uint32_t)c->u.call.nargs);
  for (size_t i = 0; i < c->u.call.nargs; i++) push(l, &w, lw_leaf_reg(l, c->u.call.args[i]));
  push(l, &w, 0);
  uint32_t dst = lw_new_var_reg(l, b->var);
  if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_CALL, dst, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
  LOOM_VEC_FREE(NULL, &w);
}

/* ---- guards ------------------------------------------------------------------------ */

static void collect_reg(void *ud, const loom_sym_expr *v) {
  var_scan *s = ud;
  uint64_t r;
  if (loom_map_get(&s->l->sym_reg, (uint64_t)(uintptr_t)v, &r)) push(s->l, &s->regs, (uint32_t)r);
}

static void emit_guards(lower *l, const loom_graph_binding *b) {
  for (size_t i = 0; i < b->nguards && !l->err; i++) {
    int64_t v;
    if (loom_sym_is_const(b->guards[i], &v) && v) continue;
    uint32_t r = lw_sym_reg(l, b->guards[i]);
    char *g = loom_sym_to_string(b->guards[i]);
    loom_strbuf msg;
    loom_strbuf_init(&msg, NULL);
    loom_strbuf_printf(&msg, "guard of '%s' failed: %s (%s)", b->var->u.var.name, b->guard_why ? b->guard_why[i] : "",
                       g ? g : "?");
    free(g);
    var_scan s = {l, NULL, false, false, {0}};
    loom_sym_for_each_var(b->guards[i], collect_reg, &s);
    words w = {0};
    push(l, &w, loom_vm_builder_str(l->b, loom_strbuf_cstr(&msg)));
    push(l, &w, (uint32_t)s.regs.len);
    for (size_t k = 0; k < s.regs.len; k++) push(l, &w, s.regs.data[k]);
    if (msg.oom) lw_oom(l);
    if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_CHECK, r, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
    loom_strbuf_free(&msg);
    LOOM_VEC_FREE(NULL, &w);
    LOOM_VEC_FREE(NULL, &s.regs);
  }
}

/* ---- bindings ------------------------------------------------------------------------ */

/* A branch of `if`: its bindings (storage of their own), then result -> dst, then releases. */
static void emit_branch(lower *l, const loom_graph_seq *seq, uint32_t dst) {
  for (size_t i = 0; i < seq->nblocks && !l->err; i++)
    for (size_t j = 0; j < seq->blocks[i]->n && !l->err; j++) lw_emit_binding(l, NOREG, seq->blocks[i]->bindings[j]);
  uint32_t r = lw_leaf_reg(l, seq->result);
  if (l->err) return;
  loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_MOV, dst, r, 0));
  for (size_t i = 0; i < seq->nblocks; i++)
    for (size_t j = 0; j < seq->blocks[i]->n; j++) {
      uint64_t reg;
      if (loom_map_get(&l->var_reg, seq->blocks[i]->bindings[j]->var->u.var.id, &reg))
        loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, (uint32_t)reg, 0, 0));
    }
}

bool lw_copy_map(lower *l, loom_map *dst, const loom_map *src) {
  loom_map_clear(dst);
  uint64_t k, v;
  for (size_t it = 0; loom_map_next(src, &it, &k, &v);)
    if (!loom_map_put(dst, k, v)) {
      lw_oom(l);
      return false;
    }
  return true;
}

/* Shape values live in the VM as dense 1-D i64 tensors (SHAPE makes one; MATCHV binds from
 * one). tensor_to_shape copies its operand (i32 or i64) so the value outlives the operand's
 * planned storage; its elements are checked to be dims where a match_cast binds them. */
static void emit_tensor_to_shape(lower *l, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  uint32_t src = lw_leaf_reg(l, v->u.call.args[0]);
  uint32_t dst = lw_new_var_reg(l, b->var);
  uint32_t w[4] = {2, dst, src, 0};
  if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_COPY, loom_vm_fb_list(l->fb, w, 4)));
}

/* An int register holding position operand i of list op call v (ILOAD of its one element), or
 * NOREG when the call has no such operand. */
static uint32_t list_pos_reg(lower *l, const loom_graph_expr *v, size_t i) {
  if (v->u.call.nargs <= i) return NOREG;
  uint32_t t = lw_leaf_reg(l, v->u.call.args[i]);
  uint32_t r = loom_vm_fb_ireg(l->fb, NULL);
  if (!l->err) lw_emit_main(l, abc(LOOM_VM_OP_ILOAD, r, t, 0));
  return r;
}

/* Emits CALLB builtin `id` with object operands o[0..no) and int operands iv[0..ni). */
static void emit_builtin(lower *l, uint32_t id, const uint32_t *o, uint32_t no, const uint32_t *iv, uint32_t ni) {
  uint32_t w[8];
  uint32_t n = 0;
  w[n++] = no;
  for (uint32_t i = 0; i < no; i++) w[n++] = o[i];
  w[n++] = ni;
  for (uint32_t i = 0; i < ni; i++) w[n++] = iv[i];
  if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_CALLB, id, loom_vm_fb_list(l->fb, w, n)));
}

/* The register of list item `e` as a list holds it: a tensor is copied (COPY: its own storage),
 * since the memory plan may reuse the storage of a planned tensor, or of a loop body's tensor in
 * the next iteration, while the list still holds it; a list is shared (lists never change). */
static uint32_t list_item_reg(lower *l, const loom_graph_expr *e) {
  uint32_t src = lw_leaf_reg(l, e);
  if (l->err || !e->sinfo || e->sinfo->kind != LOOM_SINFO_TENSOR) return src;
  uint32_t t = loom_vm_fb_reg(l->fb, LOOM_VM_OBJ_TENSOR);
  uint32_t w[4] = {2, t, src, 0};
  lw_emit_main(l, abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_COPY, loom_vm_fb_list(l->fb, w, 4)));
  return t;
}

/* The list ops (graph/op_list.c) as the VM's LIST_* builtins: list_new is LIST_EMPTY then one
 * append per operand; a position is read from its tensor with ILOAD (the builtin checks it). */
static void emit_list_op(lower *l, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  uint32_t src = v->u.call.nargs ? lw_leaf_reg(l, v->u.call.args[0]) : NOREG;
  uint32_t zero = lw_const_reg(l, 0), one = lw_const_reg(l, 1);
  uint32_t dst = lw_new_var_reg(l, b->var);
  if (l->err) return;
  switch (v->u.call.op) {
  case LOOM_GRAPH_OP_LIST_NEW:
    emit_builtin(l, LOOM_VM_BUILTIN_LIST_EMPTY, &dst, 1, NULL, 0);
    for (size_t i = 0; i < v->u.call.nargs && !l->err; i++) {
      uint32_t o[3] = {dst, dst, list_item_reg(l, v->u.call.args[i])}, iv[2] = {zero, one};
      emit_builtin(l, LOOM_VM_BUILTIN_LIST_INSERT, o, 3, iv, 2);
      if (o[2] != lw_leaf_reg(l, v->u.call.args[i])) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, o[2], 0, 0));
    }
    break;
  case LOOM_GRAPH_OP_LIST_LENGTH:
  case LOOM_GRAPH_OP_LIST_HAS: {
    uint32_t o[2] = {dst, src};
    emit_builtin(l, v->u.call.op == LOOM_GRAPH_OP_LIST_LENGTH ? LOOM_VM_BUILTIN_LIST_LEN : LOOM_VM_BUILTIN_LIST_HAS, o, 2,
                 NULL, 0);
    break;
  }
  case LOOM_GRAPH_OP_LIST_GET: {
    uint32_t p = list_pos_reg(l, v, 1), o[2] = {dst, src}, iv[1] = {p == NOREG ? zero : p};
    emit_builtin(l, LOOM_VM_BUILTIN_LIST_GET, o, 2, iv, 1);
    break;
  }
  case LOOM_GRAPH_OP_LIST_INSERT: {
    uint32_t p = list_pos_reg(l, v, 2), o[3] = {dst, src, list_item_reg(l, v->u.call.args[1])};
    uint32_t iv[2] = {p == NOREG ? zero : p, p == NOREG ? one : zero};
    emit_builtin(l, LOOM_VM_BUILTIN_LIST_INSERT, o, 3, iv, 2);
    if (o[2] != lw_leaf_reg(l, v->u.call.args[1])) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, o[2], 0, 0));
    break;
  }
  case LOOM_GRAPH_OP_LIST_SELECT: {
    uint32_t c = list_pos_reg(l, v, 0), o[3] = {dst, lw_leaf_reg(l, v->u.call.args[1]), lw_leaf_reg(l, v->u.call.args[2])};
    emit_builtin(l, LOOM_VM_BUILTIN_LIST_SELECT, o, 3, &c, 1);
    break;
  }
  default: { /* LIST_ERASE */
    uint32_t p = list_pos_reg(l, v, 1), o[2] = {dst, src};
    uint32_t iv[2] = {p == NOREG ? zero : p, p == NOREG ? one : zero};
    emit_builtin(l, LOOM_VM_BUILTIN_LIST_ERASE, o, 2, iv, 2);
    break;
  }
  }
}

/* shape(d0, d1, ...): a new i64 tensor of the dims' values. */
static void emit_shape_literal(lower *l, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  words w = {0};
  push(l, &w, (uint32_t)v->u.shape.n);
  for (size_t i = 0; i < v->u.shape.n; i++) push(l, &w, lw_sym_reg(l, v->u.shape.dims[i]));
  uint32_t dst = lw_new_var_reg(l, b->var);
  if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_SHAPE, dst, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
  LOOM_VEC_FREE(NULL, &w);
}

/* if (sym(cond)) { then } else { else }: int registers computed inside a branch are valid
 * only there, so the expression cache is restored after each branch. */
static void emit_if(lower *l, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value, *c = v->u.if_.cond;
  if (c->kind != LOOM_GRAPH_EXPR_SYM) {
    FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': 'if' on a tensor condition has no VM lowering yet (a symbolic "
         "condition, sym(...), has)", l->f->name, b->var->u.var.name);
    return;
  }
  uint32_t r = lw_sym_reg(l, c->u.sym);
  uint32_t dst = lw_new_var_reg(l, b->var);
  if (l->err) return;
  loom_map saved;
  loom_map_init(&saved, NULL);
  if (lw_copy_map(l, &saved, &l->sym_reg)) {
    uint32_t jelse = loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_JMPIFNOT, r, 0));
    emit_branch(l, v->u.if_.then_seq, dst);
    uint32_t jend = loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_JMP, 0, 0));
    loom_vm_fb_patch(l->fb, jelse, abx(LOOM_VM_OP_JMPIFNOT, r, loom_vm_fb_pc(l->fb)));
    if (lw_copy_map(l, &l->sym_reg, &saved)) emit_branch(l, v->u.if_.else_seq, dst);
    loom_vm_fb_patch(l->fb, jend, abx(LOOM_VM_OP_JMP, 0, loom_vm_fb_pc(l->fb)));
    lw_copy_map(l, &l->sym_reg, &saved);
  }
  loom_map_destroy(&saved);
}

void lw_emit_binding(lower *l, uint32_t bi, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  loom_strbuf dbg;
  loom_strbuf_init(&dbg, NULL);
  loom_strbuf_printf(&dbg, "%s = ", b->var->u.var.name);
  if (b->kind == LOOM_GRAPH_BIND_MATCH_CAST) loom_strbuf_puts(&dbg, "match_cast(...)");
  else if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_TP) {
    /* the program and its arguments, so a kernel's error names the values it read */
    loom_strbuf_printf(&dbg, "call_tp(@%s", v->u.call.target);
    for (size_t i = 0; i < v->u.call.nargs; i++) {
      const loom_graph_expr *a = v->u.call.args[i];
      loom_strbuf_printf(&dbg, ", %s", a->kind == LOOM_GRAPH_EXPR_VAR ? a->u.var.name : a->kind == LOOM_GRAPH_EXPR_SYM ? "sym" : "const");
    }
    loom_strbuf_puts(&dbg, ")");
  }
  else if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_EXTERN) loom_strbuf_printf(&dbg, "call_extern(%s, ...)", v->u.call.target);
  else if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_FUNC) loom_strbuf_printf(&dbg, "@%s(...)", v->u.call.target);
  else if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.op >= LOOM_GRAPH_OP_LIST_NEW && v->u.call.op <= LOOM_GRAPH_OP_LIST_SELECT) {
    /* a list op's errors (a position out of range, an empty list) name the list it read */
    loom_strbuf_printf(&dbg, "%s(", loom_graph_op_name(v->u.call.op));
    for (size_t i = 0; i < v->u.call.nargs; i++) {
      const loom_graph_expr *a = v->u.call.args[i];
      loom_strbuf_printf(&dbg, "%s%s", i ? ", " : "", a->kind == LOOM_GRAPH_EXPR_VAR ? a->u.var.name : "const");
    }
    loom_strbuf_puts(&dbg, ")");
  } else if (v->kind == LOOM_GRAPH_EXPR_CALL) loom_strbuf_printf(&dbg, "%s(...)", loom_graph_op_name(v->u.call.op));
  else if (v->kind == LOOM_GRAPH_EXPR_LOOP) loom_strbuf_puts(&dbg, "loop(...)");
  else loom_strbuf_puts(&dbg, v->kind == LOOM_GRAPH_EXPR_TUPLE ? "(...)" : "...");
  l->dbg = dbg.oom ? NULL : loom_strbuf_cstr(&dbg);
  emit_guards(l, b);
  if (b->kind == LOOM_GRAPH_BIND_MATCH_CAST) {
    uint32_t src = lw_leaf_reg(l, v);
    uint32_t dst = lw_new_var_reg(l, b->var);
    if (!l->err) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_MOV, dst, src, 0));
    lw_emit_match(l, dst, b->var->u.var.name, b->var->sinfo, NULL, false);
    l->dbg = NULL;
    loom_strbuf_free(&dbg);
    return;
  }
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_VAR:
  case LOOM_GRAPH_EXPR_CONST: {
    uint32_t src = lw_leaf_reg(l, v);
    uint32_t dst = lw_new_var_reg(l, b->var);
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_MOV, dst, src, 0));
    break;
  }
  case LOOM_GRAPH_EXPR_TUPLE: {
    words w = {0};
    push(l, &w, (uint32_t)v->u.tuple.n);
    for (size_t i = 0; i < v->u.tuple.n; i++) push(l, &w, lw_leaf_reg(l, v->u.tuple.items[i]));
    uint32_t dst = lw_new_var_reg(l, b->var);
    if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_TUPLE, dst, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
    LOOM_VEC_FREE(NULL, &w);
    break;
  }
  case LOOM_GRAPH_EXPR_TUPLE_GET: {
    uint32_t t = lw_leaf_reg(l, v->u.get.tuple);
    uint32_t dst = lw_new_var_reg(l, b->var);
    if (!l->err) lw_emit_main(l, abc(LOOM_VM_OP_TGET, dst, t, (uint32_t)v->u.get.index));
    break;
  }
  case LOOM_GRAPH_EXPR_CALL:
    switch (v->u.call.callee) {
    case LOOM_GRAPH_CALLEE_TP: emit_call_tp(l, bi, b); break;
    case LOOM_GRAPH_CALLEE_EXTERN: emit_call_extern(l, bi, b); break;
    case LOOM_GRAPH_CALLEE_FUNC: emit_call_func(l, b); break;
    default:
      if (loom_graph_op_is_view(v->u.call.op) && v->u.call.nargs == 1) {
        emit_view(l, b);
        break;
      }
      if (v->u.call.op == LOOM_GRAPH_OP_TENSOR_TO_SHAPE) {
        emit_tensor_to_shape(l, b);
        break;
      }
      if (v->u.call.op >= LOOM_GRAPH_OP_LIST_NEW && v->u.call.op <= LOOM_GRAPH_OP_LIST_SELECT) {
        emit_list_op(l, b);
        break;
      }
      if (lw_is_hostop(v)) {
        lw_emit_hostop(l, b);
        break;
      }
      FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': operator '%s' was not lowered to a tensor program (pass "
           "'legalize' has no legalization for this form of it)", l->f->name, b->var->u.var.name,
           loom_graph_op_name(v->u.call.op));
      break;
    }
    break;
  case LOOM_GRAPH_EXPR_IF: emit_if(l, b); break;
  case LOOM_GRAPH_EXPR_LOOP: lw_emit_loop(l, bi, b); break;
  case LOOM_GRAPH_EXPR_SHAPE: emit_shape_literal(l, b); break;
  default:
    FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': %s has no VM lowering yet", l->f->name, b->var->u.var.name,
         v->kind == LOOM_GRAPH_EXPR_SHAPE ? "a shape value" : "a scalar value");
    break;
  }
  if (dbg.oom) lw_oom(l);
  l->dbg = NULL;
  loom_strbuf_free(&dbg);
}

/* ---- liveness of registers ------------------------------------------------------------- */

static void seq_uses(uint32_t *last, uint32_t nids, uint32_t at, const loom_graph_seq *s) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) lw_note_uses(last, nids, at, s->blocks[i]->bindings[j]->value);
  lw_note_uses(last, nids, at, s->result);
}

void lw_note_uses(uint32_t *last, uint32_t nids, uint32_t at, const loom_graph_expr *e) {
  if (!e) return;
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR:
    if (e->u.var.id < nids) last[e->u.var.id] = at + 1;
    break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < e->u.tuple.n; i++) lw_note_uses(last, nids, at, e->u.tuple.items[i]);
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: lw_note_uses(last, nids, at, e->u.get.tuple); break;
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < e->u.call.nargs; i++) lw_note_uses(last, nids, at, e->u.call.args[i]);
    break;
  case LOOM_GRAPH_EXPR_IF: /* a use inside a branch counts at the `if` */
    lw_note_uses(last, nids, at, e->u.if_.cond);
    seq_uses(last, nids, at, e->u.if_.then_seq);
    seq_uses(last, nids, at, e->u.if_.else_seq);
    break;
  case LOOM_GRAPH_EXPR_LOOP: /* and inside a loop's body at the loop */
    lw_note_uses(last, nids, at, e->u.loop.count);
    lw_note_uses(last, nids, at, e->u.loop.cond);
    for (size_t i = 0; i < e->u.loop.ncarry; i++) lw_note_uses(last, nids, at, e->u.loop.inits[i]);
    seq_uses(last, nids, at, e->u.loop.body);
    break;
  default: break;
  }
}

void lw_emit_kill(lower *l, const loom_graph_expr *var) {
  uint64_t r;
  if (loom_map_get(&l->var_reg, var->u.var.id, &r)) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, (uint32_t)r, 0, 0));
}

void lw_emit_plan(lower *l, const loom_memplan *p, size_t nparams, loom_graph_expr *const *params, const uint32_t *last,
                  const loom_graph_binding *skip) {
  uint32_t nids = l->nids;
  for (uint32_t i = 0; i < p->nbindings && !l->err; i++) {
    const loom_graph_binding *b = p->bindings[i];
    l->where = b->var->u.var.name;
    if (b != skip) lw_emit_binding(l, i, b);
    if (l->err) break;
    /* releases: values whose last use is this binding (or never used), and storages */
    for (size_t k = 0; k < nparams; k++)
      if (last[params[k]->u.var.id] == i + 1) lw_emit_kill(l, params[k]);
    for (uint32_t j = 0; j <= i; j++) {
      const loom_graph_expr *v = p->bindings[j]->var;
      uint32_t lu = v->u.var.id < nids ? last[v->u.var.id] : 0;
      if (lu == i + 1 || (lu == 0 && j == i)) lw_emit_kill(l, v);
    }
    for (uint32_t s = 0; s < p->nstorages; s++)
      if (!p->storages[s].output && !p->storages[s].hoist && p->storages[s].last == i && l->storage_reg[s] != NOREG)
        loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, l->storage_reg[s], 0, 0));
  }
}

/* ---- functions ------------------------------------------------------------------------------ */

static void lower_func(lower *l, const loom_graph_func *f, const loom_memplan *plan, uint32_t nids) {
  l->f = f;
  l->where = "entry";
  l->fb = loom_vm_builder_func(l->b, f->name);
  loom_map_clear(&l->var_reg);
  loom_map_clear(&l->sym_reg);
  /* parameters: R[0 .. nparams) */
  for (size_t i = 0; i < f->nparams && !l->err; i++) {
    const loom_graph_expr *p = f->params[i];
    const loom_sinfo *si = p->sinfo;
    if (si->kind == LOOM_SINFO_LIST) { /* its items' shapes are matched where they are read */
      const loom_sinfo *it = si->ret;
      uint32_t dt = it->kind == LOOM_SINFO_TENSOR && it->dtype != LOOM_DTYPE_UNKNOWN ? (uint32_t)it->dtype : LOOM_VM_ANY_DTYPE;
      uint32_t r = loom_vm_fb_list_param(l->fb, p->u.var.name, dt);
      if (!loom_map_put(&l->var_reg, p->u.var.id, r)) lw_oom(l);
      continue;
    }
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims || si->ndim > LOOM_VM_MAX_RANK) {
      FAIL(l, UNIMPLEMENTED, "function @%s: parameter '%s' must be a tensor of known rank to be compiled", f->name,
           p->u.var.name);
      return;
    }
    char *texts[LOOM_VM_MAX_RANK];
    for (int d = 0; d < si->ndim; d++) texts[d] = loom_sym_to_string(si->dims[d]);
    uint32_t r = loom_vm_fb_param(l->fb, p->u.var.name, si->dtype == LOOM_DTYPE_UNKNOWN ? LOOM_VM_ANY_DTYPE : (uint32_t)si->dtype,
                                  (uint32_t)si->ndim, (const char *const *)texts);
    for (int d = 0; d < si->ndim; d++) free(texts[d]);
    if (!loom_map_put(&l->var_reg, p->u.var.id, r)) lw_oom(l);
  }
  l->plan = plan;
  l->storage_reg = malloc(sizeof *l->storage_reg * (l->plan->nstorages + 1));
  uint32_t *last = calloc(nids + 1, sizeof *last);
  bool *defer = calloc((f->nparams + 1) * LOOM_VM_MAX_RANK, sizeof *defer);
  if (!l->storage_reg || !last || !defer) lw_oom(l);
  for (uint32_t s = 0; l->storage_reg && s < l->plan->nstorages; s++) l->storage_reg[s] = NOREG;
  /* shape binding at entry, then the axes that needed later parameters */
  for (size_t i = 0; i < f->nparams && !l->err; i++)
    if (f->params[i]->sinfo->kind != LOOM_SINFO_LIST)
      lw_emit_match(l, (uint32_t)i, f->params[i]->u.var.name, f->params[i]->sinfo, defer + i * LOOM_VM_MAX_RANK, false);
  for (size_t i = 0; i < f->nparams && !l->err; i++) {
    if (f->params[i]->sinfo->kind == LOOM_SINFO_LIST) continue;
    bool any = false;
    for (int d = 0; d < f->params[i]->sinfo->ndim; d++) any |= defer[i * LOOM_VM_MAX_RANK + d];
    if (any) lw_emit_match(l, (uint32_t)i, f->params[i]->u.var.name, f->params[i]->sinfo, defer + i * LOOM_VM_MAX_RANK, true);
  }
  l->zero_reg = lw_const_reg(l, 0);
  /* liveness: last use of every var */
  const loom_memplan *p = l->plan;
  for (uint32_t i = 0; last && i < p->nbindings; i++) lw_note_uses(last, nids, i, p->bindings[i]->value);
  if (last) lw_note_uses(last, nids, p->nbindings, f->body->result);
  if (last) lw_emit_plan(l, p, f->nparams, f->params, last, NULL);
  if (!l->err) {
    l->where = "return";
    uint32_t r = lw_leaf_reg(l, f->body->result);
    if (!l->err) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_RET, r, 0, 0));
  }
  free(l->storage_reg);
  l->storage_reg = NULL;
  free(last);
  free(defer);
  l->plan = NULL;
}

loom_status loom_lower_vm(loom_graph_module *m, loom_memplan *const *plans, loom_lower_hostops *hostops,
                          loom_vm_exec **out) {
  *out = NULL;
  if (hostops) hostops->len = 0;
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++)
    if (!plans[i] || plans[i]->func != loom_graph_module_func_at(m, i))
      return LOOM_ERROR(INTERNAL, "function @%s has no memory plan (run 'memplan' before 'lower')",
                        loom_graph_module_func_at(m, i)->name);
  lower l = {.m = m, .cx = loom_graph_module_sym(m), .hostops = hostops};
  LOOM_PROPAGATE(loom_vm_builder_new(NULL, &l.b));
  /* the constants stay in the module (its weights, borrowed from the ONNX model or a mapped
   * weights file): the executable reads them there and must not outlive the module; an
   * artifact's writer lays them out as its DATA region */
  loom_vm_builder_borrow(l.b);
  loom_map_init(&l.kernels, NULL);
  loom_map_init(&l.consts, NULL);
  loom_map_init(&l.var_reg, NULL);
  loom_map_init(&l.sym_reg, NULL);
  uint32_t nids = loom_graph_module_num_var_ids(m);
  l.nids = nids;
  for (size_t i = 0; i < loom_graph_module_num_funcs(m) && !l.err; i++) lower_func(&l, loom_graph_module_func_at(m, i), plans[i], nids);
  loom_status st = l.err;
  if (!st) st = loom_status_annotate(loom_vm_builder_finish(l.b, out), __FILE__, __LINE__, "while building the executable");
  loom_vm_builder_free(l.b);
  loom_map_destroy(&l.kernels);
  loom_map_destroy(&l.consts);
  loom_map_destroy(&l.var_reg);
  loom_map_destroy(&l.sym_reg);
  return st;
}
