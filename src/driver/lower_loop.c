/* lower_loop.c — a graph loop -> VM bytecode with a backward jump (docs/pipeline.md "VM
 * lowering", docs/vm.md).
 *
 *       cnt := count (int registers of its expression, or ILOAD of a tensor)
 *       c := cond;  i := 0;  P[k] := MOV init[k];  S[j] := EMPTY (rows, item dims...)
 *       ALLOC the body's hoisted storages
 *   top:
 *       JMPIFNOT (i < cnt) -> exit;  JMPIFNOT c -> exit
 *       MATCH P[k] against param k's struct info (binds the loop's locals for this iteration)
 *       the body's bindings, from its own plan (storages allocated and released inside, or
 *       hoisted), registers released after their last use
 *       c := the next condition;  CALLB SCAN_PUT (S[j], item j; i, cnt);  T[k] := MOV next[k]
 *       P[k] := MOV T[k] (the previous carried values are released here);  KILL the body's registers
 *       i := i + 1;  JMP top
 *   exit:
 *       R[j] := CALLB ROWS (S[j]; i);  MATCH P[k], R[j] against the loop's struct info (binds its
 *       fresh symbols);  r := TUPLE (P..., R...);  KILL the hoisted storages
 *
 * The body's result tuple is not built: its items are taken where the body made them (a
 * condition given as sym(...) has no object form). Int registers the body computes are valid
 * only in the body, so the expression cache is restored when it ends (as for `if`). */
#include <stdlib.h>
#include <string.h>

#include "driver/lower_vm_internal.h"

typedef LOOM_VEC(uint32_t) words;

static void push(lower *l, words *w, uint32_t v) {
  if (!LOOM_VEC_PUSH(NULL, w, v)) lw_oom(l);
}

/* An int register holding the value of a count or condition leaf: a symbolic expression (a
 * sym(...) leaf, or a Scalar of known value), or a tensor of one element read with ILOAD; into
 * `into` (NOREG: any register). */
static uint32_t int_of(lower *l, const loom_graph_expr *e, uint32_t into, const char *what) {
  const loom_sym_expr *x = e->kind == LOOM_GRAPH_EXPR_SYM ? e->u.sym
                           : e->sinfo && e->sinfo->kind == LOOM_SINFO_SCALAR ? e->sinfo->value : NULL;
  if (x) {
    uint32_t r = lw_sym_reg(l, x);
    if (into == NOREG || r == NOREG) return r;
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_IMOV, into, r, 0));
    return into;
  }
  if (!e->sinfo || e->sinfo->kind != LOOM_SINFO_TENSOR) {
    FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': the loop's %s has no VM form (a tensor or sym(...) has)", l->f->name,
         l->where, what);
    return NOREG;
  }
  uint32_t t = lw_leaf_reg(l, e);
  if (t == NOREG) return NOREG;
  if (into == NOREG) into = loom_vm_fb_ireg(l->fb, NULL);
  lw_emit_main(l, abc(LOOM_VM_OP_ILOAD, into, t, 0));
  return into;
}

/* Whether every var of the expressions walked is bound (has an int register) before the loop. */
typedef struct bound_scan {
  lower *l;
  bool all;
} bound_scan;
static void bound_cb(void *ud, const loom_sym_expr *var) {
  bound_scan *b = ud;
  if (!loom_map_contains(&b->l->sym_reg, (uint64_t)(uintptr_t)var)) b->all = false;
}

/* The binding of `res` in plan p when it is a tuple the loop may take apart: a TUPLE no other
 * binding reads. */
static const loom_graph_binding *result_tuple(const loom_memplan *p, const loom_graph_expr *res) {
  const loom_graph_binding *rb = NULL;
  for (uint32_t i = 0; i < p->nbindings; i++)
    if (p->bindings[i]->var == res && p->bindings[i]->value->kind == LOOM_GRAPH_EXPR_TUPLE &&
        p->bindings[i]->kind == LOOM_GRAPH_BIND_VAR)
      rb = p->bindings[i];
  if (!rb) return NULL;
  for (uint32_t i = 0; i < p->nbindings; i++) {
    const loom_graph_expr *v = p->bindings[i]->value;
    if (p->bindings[i] == rb) continue;
    /* a read of the tuple anywhere else keeps it */
    if (v->kind == LOOM_GRAPH_EXPR_TUPLE_GET && v->u.get.tuple == res) return NULL;
    if (v->kind == LOOM_GRAPH_EXPR_CALL)
      for (size_t a = 0; a < v->u.call.nargs; a++)
        if (v->u.call.args[a] == res) return NULL;
    if (v->kind == LOOM_GRAPH_EXPR_TUPLE)
      for (size_t a = 0; a < v->u.tuple.n; a++)
        if (v->u.tuple.items[a] == res) return NULL;
    if (v->kind == LOOM_GRAPH_EXPR_IF || v->kind == LOOM_GRAPH_EXPR_LOOP || v == res) return NULL;
  }
  return rb;
}

/* The register of field f of the body's result: the item itself when the tuple is taken apart
 * (rt), else a TGET into a new register of the field's kind. */
static uint32_t field_reg(lower *l, const loom_graph_binding *rt, uint32_t tuple_reg, size_t f, const loom_sinfo *si) {
  if (rt) return lw_leaf_reg(l, rt->value->u.tuple.items[f]);
  uint32_t r = loom_vm_fb_reg(l->fb, lw_kind_of(si));
  loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_TGET, r, tuple_reg, (uint32_t)f));
  return r;
}

void lw_emit_loop(lower *l, uint32_t bi, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  const loom_sinfo *rs = b->var->sinfo;
  size_t nc = v->u.loop.ncarry, hc = v->u.loop.cond ? 1 : 0, nscan = loom_graph_loop_nscan(v);
  const char *fname = l->f->name, *bname = b->var->u.var.name;
  if (rs->kind != LOOM_SINFO_TUPLE || rs->nfields != nc + nscan) {
    FAIL(l, INTERNAL, "function @%s, binding '%s': the loop's struct info is not a tuple of %zu", fname, bname, nc + nscan);
    return;
  }
  for (size_t f = 0; f < nc + nscan; f++)
    if (f < nc && rs->fields[f]->kind == LOOM_SINFO_LIST) continue; /* a carried list: its items are matched where read */
    else if (rs->fields[f]->kind != LOOM_SINFO_TENSOR || !rs->fields[f]->dims || rs->fields[f]->ndim > LOOM_VM_MAX_RANK ||
        rs->fields[f]->dtype == LOOM_DTYPE_UNKNOWN) {
      FAIL(l, UNIMPLEMENTED, "function @%s, binding '%s': %s %zu of the loop must be a tensor of known dtype and shape to be "
           "compiled", fname, bname, f < nc ? "carried value" : "scan item", f < nc ? f : f - nc);
      return;
    }
  loom_memplan *own = NULL;
  const loom_memplan *bp = bi != NOREG && l->plan->sub ? l->plan->sub[bi] : NULL;
  if (!bp) {
    loom_status st = loom_memplan_build_loop(l->m, b, &own);
    if (st) {
      if (!l->err) l->err = st;
      else loom_status_free(st);
      return;
    }
    bp = own;
  }
  const loom_memplan *outer_plan = l->plan;
  uint32_t *outer_sreg = l->storage_reg;
  uint32_t *P = calloc(2 * nc + 2 * nscan + 1, sizeof *P), *T = P + nc, *S = T + nc, *R = S + nscan;
  uint32_t *sreg = malloc(sizeof *sreg * (bp->nstorages + 1));
  uint32_t *last = calloc(l->nids + 1, sizeof *last);
  loom_map saved;
  loom_map_init(&saved, NULL);
  if (!P || !sreg || !last) lw_oom(l);
  /* before the loop: count, condition, iteration number, carried values, stacks */
  uint32_t cnt = v->u.loop.count ? int_of(l, v->u.loop.count, NOREG, "trip count") : NOREG;
  uint32_t cr = NOREG;
  if (v->u.loop.cond && !l->err) cr = int_of(l, v->u.loop.cond, loom_vm_fb_ireg(l->fb, NULL), "condition");
  uint32_t it = l->err ? NOREG : loom_vm_fb_ireg(l->fb, loom_sym_var_name(v->u.loop.iter));
  if (!l->err) loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_ICONST, it, loom_vm_builder_intconst(l->b, 0)));
  uint32_t one = lw_const_reg(l, 1), cap = cnt != NOREG ? cnt : lw_const_reg(l, INT64_MAX);
  for (size_t k = 0; k < nc && !l->err; k++) {
    uint32_t src = lw_leaf_reg(l, v->u.loop.inits[k]);
    P[k] = lw_new_var_reg(l, v->u.loop.params[k]);
    if (!l->err) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_MOV, P[k], src, 0));
  }
  for (size_t j = 0; j < nscan && !l->err; j++) {
    const loom_sinfo *f = rs->fields[nc + j];
    S[j] = loom_vm_fb_reg(l->fb, LOOM_VM_OBJ_TENSOR);
    bound_scan bs = {l, true};
    for (int d = 1; d < f->ndim; d++) loom_sym_for_each_var(f->dims[d], bound_cb, &bs);
    if (!bs.all) continue; /* an item's dim the body decides: SCAN_PUT makes the stack from the first */
    uint32_t rows = l->zero_reg;
    if (!hc && cnt != NOREG) { /* the stack's final size: no growing */
      if (v->u.loop.count->kind == LOOM_GRAPH_EXPR_SYM) rows = lw_sym_reg(l, f->dims[0]);
      else if ((rows = loom_vm_fb_ireg(l->fb, NULL)) != NOREG)
        loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_IMAX, rows, cnt, l->zero_reg));
    }
    words w = {0};
    push(l, &w, (uint32_t)f->dtype);
    push(l, &w, 0);
    push(l, &w, (uint32_t)f->ndim);
    push(l, &w, rows);
    for (int d = 1; d < f->ndim; d++) push(l, &w, lw_sym_reg(l, f->dims[d]));
    if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_EMPTY, S[j], loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
    LOOM_VEC_FREE(NULL, &w);
  }
  for (uint32_t s = 0; sreg && s < bp->nstorages; s++) {
    sreg[s] = NOREG;
    if (!bp->storages[s].hoist || l->err) continue;
    uint32_t size = lw_sym_reg(l, bp->storages[s].size);
    sreg[s] = loom_vm_fb_reg(l->fb, LOOM_VM_OBJ_STORAGE);
    if (size != NOREG) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_ALLOC, sreg[s], size, 0));
  }
  if (l->err || !lw_copy_map(l, &saved, &l->sym_reg) ||
      !loom_map_put(&l->sym_reg, (uint64_t)(uintptr_t)v->u.loop.iter, it)) {
    lw_oom(l);
    goto done;
  }
  /* the test */
  uint32_t top = loom_vm_fb_pc(l->fb), jc = NOREG, jd = NOREG, tc = NOREG;
  if (cnt != NOREG) {
    tc = loom_vm_fb_ireg(l->fb, NULL);
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_ILT, tc, it, cnt));
    jc = loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_JMPIFNOT, tc, 0));
  }
  if (cr != NOREG) jd = loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_JMPIFNOT, cr, 0));
  /* this iteration's locals */
  for (size_t k = 0; k < nc && !l->err; k++) {
    const loom_sinfo *ps = v->u.loop.params[k]->sinfo;
    if (ps->kind == LOOM_SINFO_TENSOR && ps->dims && ps->ndim >= 0)
      lw_emit_match(l, P[k], v->u.loop.params[k]->u.var.name, ps, NULL, false);
  }
  /* the body, from its plan */
  const loom_graph_expr *res = v->u.loop.body->result;
  const loom_graph_binding *rt = result_tuple(bp, res);
  for (uint32_t i = 0; i < bp->nbindings; i++) lw_note_uses(last, l->nids, i, bp->bindings[i]->value);
  if (rt)
    for (size_t f = 0; f < rt->value->u.tuple.n; f++) lw_note_uses(last, l->nids, bp->nbindings, rt->value->u.tuple.items[f]);
  else lw_note_uses(last, l->nids, bp->nbindings, res);
  l->plan = bp;
  l->storage_reg = sreg;
  if (!l->err) lw_emit_plan(l, bp, nc, v->u.loop.params, last, rt);
  l->where = bname;
  /* the next condition, scan items and carried values */
  uint32_t tuple_reg = rt || l->err ? NOREG : lw_leaf_reg(l, res);
  if (hc && !l->err) {
    const loom_graph_expr *c = rt ? rt->value->u.tuple.items[0] : NULL;
    if (c) int_of(l, c, cr, "next condition");
    else {
      uint32_t t = field_reg(l, NULL, tuple_reg, 0, res->sinfo->fields[0]);
      if (!l->err) lw_emit_main(l, abc(LOOM_VM_OP_ILOAD, cr, t, 0));
    }
  }
  for (size_t j = 0; j < nscan && !l->err; j++) {
    uint32_t y = field_reg(l, rt, tuple_reg, hc + nc + j, res->sinfo->fields[hc + nc + j]);
    uint32_t w[6] = {2, S[j], y, 2, it, cap};
    if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_SCAN_PUT, loom_vm_fb_list(l->fb, w, 6)));
  }
  for (size_t k = 0; k < nc && !l->err; k++) {
    uint32_t y = field_reg(l, rt, tuple_reg, hc + k, res->sinfo->fields[hc + k]);
    T[k] = loom_vm_fb_reg(l->fb, lw_kind_of(v->u.loop.params[k]->sinfo));
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_MOV, T[k], y, 0));
  }
  for (size_t k = 0; k < nc && !l->err; k++) {
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_MOV, P[k], T[k], 0));
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, T[k], 0, 0));
  }
  /* release what the iteration made */
  for (uint32_t i = 0; i < bp->nbindings && !l->err; i++) lw_emit_kill(l, bp->bindings[i]->var);
  for (uint32_t s = 0; s < bp->nstorages && !l->err; s++)
    if (!bp->storages[s].hoist && sreg[s] != NOREG) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, sreg[s], 0, 0));
  if (!l->err) {
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_IADD, it, it, one));
    loom_vm_fb_emit(l->fb, abx(LOOM_VM_OP_JMP, 0, top));
    uint32_t exit_pc = loom_vm_fb_pc(l->fb);
    if (jc != NOREG) loom_vm_fb_patch(l->fb, jc, abx(LOOM_VM_OP_JMPIFNOT, tc, exit_pc));
    if (jd != NOREG) loom_vm_fb_patch(l->fb, jd, abx(LOOM_VM_OP_JMPIFNOT, cr, exit_pc));
  }
  l->plan = outer_plan;
  l->storage_reg = outer_sreg;
  l->where = bname;
  if (l->err || !lw_copy_map(l, &l->sym_reg, &saved)) goto done;
  /* the loop's value: the stacks cut to the iterations run, its fresh symbols bound */
  for (size_t j = 0; j < nscan && !l->err; j++) {
    R[j] = loom_vm_fb_reg(l->fb, LOOM_VM_OBJ_TENSOR);
    uint32_t w[5] = {2, R[j], S[j], 1, it};
    lw_emit_main(l, abx(LOOM_VM_OP_CALLB, LOOM_VM_BUILTIN_ROWS, loom_vm_fb_list(l->fb, w, 5)));
    loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, S[j], 0, 0));
  }
  for (size_t f = 0; f < nc + nscan && !l->err; f++)
    if (rs->fields[f]->kind != LOOM_SINFO_LIST) lw_emit_match(l, f < nc ? P[f] : R[f - nc], bname, rs->fields[f], NULL, false);
  words w = {0};
  push(l, &w, (uint32_t)(nc + nscan));
  for (size_t f = 0; f < nc + nscan; f++) push(l, &w, f < nc ? P[f] : R[f - nc]);
  uint32_t dst = lw_new_var_reg(l, b->var);
  if (!l->err) lw_emit_main(l, abx(LOOM_VM_OP_TUPLE, dst, loom_vm_fb_list(l->fb, w.data, (uint32_t)w.len)));
  LOOM_VEC_FREE(NULL, &w);
  for (size_t f = 0; f < nc + nscan && !l->err; f++) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, f < nc ? P[f] : R[f - nc], 0, 0));
  for (uint32_t s = 0; s < bp->nstorages && !l->err; s++)
    if (bp->storages[s].hoist && sreg[s] != NOREG) loom_vm_fb_emit(l->fb, abc(LOOM_VM_OP_KILL, sreg[s], 0, 0));
done:
  loom_map_destroy(&saved);
  free(P);
  free(sreg);
  free(last);
  loom_memplan_free(own);
}
