/* op_list.c — list values (docs/ir.md "Lists"): list_new, list_length, list_get, list_insert,
 * list_erase, list_has, list_select. A list holds tensors (or lists) whose shapes may differ item to item;
 * its length is known only at run time. The ops are run by the VM itself (flag VM: builtins
 * LIST_* of vm/builtins.def), never legalized to tensor programs. A value read out of a list
 * has the items' struct info (often a rank without dims): a match_cast names its dims where a
 * computation needs them. An optional is a list of at most one item (List with `optional`).
 *
 * Positions follow ONNX's sequence ops: negative positions count from the end; list_get and
 * list_erase take -n .. n-1, list_insert -n .. n; without a position list_insert appends and
 * list_erase drops the last item, list_get reads item 0 (an optional's value). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static const loom_graph_attr_spec no_attrs[] = {{0}};
static const loom_graph_attr_spec new_attrs[] = {{"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_F32},
                                                 {"optional", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                 {"nest", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                 {0}};

/* Requires operand i to be a list; *out is its struct info. */
static loom_status list_operand(loom_graph_icx *ic, size_t i, const loom_sinfo **out) {
  const loom_sinfo *s = loom_graph_icx_arg(ic, i);
  if (s->kind != LOOM_SINFO_LIST)
    return loom_graph_icx_error(ic, "operand %zu must be a List, got %s", i, loom_graph_sinfo_kind_word(s));
  *out = s;
  return LOOM_OK;
}

/* Requires operand i (when present) to be a one-element integer tensor: a position. */
static loom_status pos_operand(loom_graph_icx *ic, size_t i) {
  if (ic->call->u.call.nargs <= i) return LOOM_OK;
  const loom_sinfo *p;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, false, &p));
  if (p->dtype != LOOM_DTYPE_I32 && p->dtype != LOOM_DTYPE_I64 && p->dtype != LOOM_DTYPE_UNKNOWN)
    return loom_graph_icx_error(ic, "operand %zu (the position) has dtype %s, expected i32 or i64", i,
                                loom_dtype_name(p->dtype));
  if (p->ndim > 1) return loom_graph_icx_error(ic, "operand %zu (the position) has rank %d, expected 0 or 1", i, p->ndim);
  return LOOM_OK;
}

/* The struct info describing both a and b (tensors or lists): what they share. */
static const loom_sinfo *join(loom_graph_module *m, const loom_sinfo *a, const loom_sinfo *b) {
  if (loom_sinfo_equal(a, b)) return a;
  if (a->kind == LOOM_SINFO_LIST && b->kind == LOOM_SINFO_LIST && a->optional == b->optional)
    return loom_sinfo_list(m, join(m, a->ret, b->ret), NULL, a->optional);
  if (a->kind != LOOM_SINFO_TENSOR || b->kind != LOOM_SINFO_TENSOR) return NULL;
  loom_dtype dt = a->dtype == b->dtype ? a->dtype : LOOM_DTYPE_UNKNOWN;
  int nd = a->ndim == b->ndim ? a->ndim : LOOM_SINFO_NDIM_UNKNOWN;
  return loom_sinfo_tensor(m, dt, nd, NULL, NULL);
}

/* Items as a list holds them: dims dropped (each item has its own), dtype and rank kept. */
static const loom_sinfo *item_of(loom_graph_module *m, const loom_sinfo *s) {
  if (s->kind != LOOM_SINFO_TENSOR || !s->dims) return s;
  return loom_sinfo_tensor(m, s->dtype, s->ndim, NULL, s->device);
}

/* Requires operand i to be a value list `l` can hold (a tensor of its dtype, or a list). */
static loom_status item_operand(loom_graph_icx *ic, size_t i, const loom_sinfo *l) {
  const loom_sinfo *x = loom_graph_icx_arg(ic, i);
  if (x->kind != LOOM_SINFO_TENSOR && x->kind != LOOM_SINFO_LIST)
    return loom_graph_icx_error(ic, "operand %zu must be a Tensor or a List, got %s", i, loom_graph_sinfo_kind_word(x));
  if (x->kind != l->ret->kind)
    return loom_graph_icx_error(ic, "operand %zu is %s but the list holds %s", i, loom_graph_sinfo_kind_word(x),
                                loom_graph_sinfo_kind_word(l->ret));
  if (x->kind == LOOM_SINFO_TENSOR && l->ret->dtype != LOOM_DTYPE_UNKNOWN && x->dtype != LOOM_DTYPE_UNKNOWN &&
      x->dtype != l->ret->dtype)
    return loom_graph_icx_error(ic, "operand %zu has dtype %s but the list holds %s", i, loom_dtype_name(x->dtype),
                                loom_dtype_name(l->ret->dtype));
  return LOOM_OK;
}

/* The length of l plus `d` (NULL when unknown). */
static const loom_sym_expr *len_plus(loom_graph_icx *ic, const loom_sinfo *l, int64_t d) {
  return l->value ? loom_sym_add(ic->cx, l->value, loom_sym_const(ic->cx, d)) : NULL;
}

/* A fresh zeroed list value of n items. */
static loom_status list_value(size_t n, loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_LIST;
  out->n = n;
  if (!n) return LOOM_OK;
  out->items = calloc(n, sizeof *out->items);
  return out->items ? LOOM_OK : LOOM_OOM();
}

/* The name of operand i for messages ("'seq'" or "operand 0"). */
static void operand_name(const loom_graph_ecx *ec, size_t i, char *buf, size_t cap) {
  const loom_graph_expr *a = ec->call->u.call.args[i];
  if (a->kind == LOOM_GRAPH_EXPR_VAR) snprintf(buf, cap, "'%s'", a->u.var.name);
  else snprintf(buf, cap, "operand %zu", i);
}

/* The position operand i (when present) in range lo..hi after counting a negative one from n;
 * `dflt` when absent. Errors name the list and its length. */
static loom_status position(const loom_graph_ecx *ec, const loom_graph_value *args, size_t i, int64_t n, bool insert,
                            int64_t dflt, int64_t *out) {
  if (ec->call->u.call.nargs <= i) {
    *out = dflt;
    return LOOM_OK;
  }
  if (args[i].kind != LOOM_SINFO_TENSOR || args[i].t.numel != 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: the position must be one integer", ec->op);
  int64_t p = loom_graph_tensor_get_i64(&args[i].t, 0), q = p < 0 ? p + n : p;
  if (q < 0 || q > n || (!insert && q == n)) {
    char nm[160];
    operand_name(ec, 0, nm, sizeof nm);
    return LOOM_ERROR(OUT_OF_RANGE, "%s: position %lld is out of range for %s of %lld items (%s%lld .. %lld)", ec->op,
                      (long long)p, nm, (long long)n, n ? "-" : "", (long long)n, (long long)(insert ? n : n - 1));
  }
  *out = q;
  return LOOM_OK;
}

/* ---- list_new ---------------------------------------------------------------------------------- */

/* list_new(x0, x1, ..., dtype=f32, optional=false, nest=0) -> List[items, n]: the items in order
 * (dtype names the items of an empty list; nest > 0: they are lists, nested that deep, of such
 * tensors: an empty Optional of a sequence); optional: an optional of the one item, or empty. */
static loom_status infer_new(loom_graph_icx *ic, const loom_sinfo **out) {
  size_t n = ic->call->u.call.nargs;
  bool opt = loom_graph_call_int(ic->call, "optional") != 0;
  if (opt && n > 1) return loom_graph_icx_error(ic, "an optional holds at most one item, got %zu", n);
  const loom_sinfo *it = n ? NULL : loom_sinfo_tensor(ic->m, loom_graph_call_dtype(ic->call, "dtype"), LOOM_SINFO_NDIM_UNKNOWN, NULL, NULL);
  int64_t nest = loom_graph_call_int(ic->call, "nest");
  if (nest < 0 || nest > 8) return loom_graph_icx_error(ic, "nest %lld is outside 0..8", (long long)nest);
  for (int64_t k = 0; !n && it && k < nest; k++) it = loom_sinfo_list(ic->m, it, NULL, false);
  if (!n && !it) return LOOM_OOM();
  for (size_t i = 0; i < n; i++) {
    const loom_sinfo *x = loom_graph_icx_arg(ic, i);
    if (x->kind != LOOM_SINFO_TENSOR && x->kind != LOOM_SINFO_LIST)
      return loom_graph_icx_error(ic, "operand %zu must be a Tensor or a List, got %s", i, loom_graph_sinfo_kind_word(x));
    const loom_sinfo *xi = item_of(ic->m, x);
    it = it ? join(ic->m, it, xi) : xi;
    if (!it) return loom_graph_icx_error(ic, "operand %zu is %s, operand 0 %s: a list holds one kind", i,
                                         loom_graph_sinfo_kind_word(x), loom_graph_sinfo_kind_word(loom_graph_icx_arg(ic, 0)));
  }
  *out = loom_sinfo_list(ic->m, it, loom_sym_const(ic->cx, (int64_t)n), opt);
  return LOOM_OK;
}

static loom_status eval_new(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  size_t n = ec->call->u.call.nargs;
  LOOM_PROPAGATE(list_value(n, out));
  for (size_t i = 0; i < n; i++) {
    loom_status s = loom_graph_value_copy(&args[i], &out->items[i]);
    if (s) {
      loom_graph_value_free(out);
      return s;
    }
  }
  return LOOM_OK;
}

/* ---- list_length / list_has --------------------------------------------------------------------- */

/* list_length(l) -> Tensor[(), i64]: the number of items. */
static loom_status infer_length(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *l;
  LOOM_PROPAGATE(list_operand(ic, 0, &l));
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_I64, 0, NULL, NULL);
  return LOOM_OK;
}

static loom_status eval_length(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  (void)ec;
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_I64, 0, NULL, out));
  loom_graph_tensor_set_i64(&out->t, 0, (int64_t)args[0].n);
  return LOOM_OK;
}

/* list_has(l) -> Tensor[(), bool]: whether l holds an item (an optional's OptionalHasElement). */
static loom_status infer_has(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *l;
  LOOM_PROPAGATE(list_operand(ic, 0, &l));
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_BOOL, 0, NULL, NULL);
  return LOOM_OK;
}

static loom_status eval_has(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  (void)ec;
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_BOOL, 0, NULL, out));
  loom_graph_tensor_set_i64(&out->t, 0, args[0].n > 0);
  return LOOM_OK;
}

/* ---- list_get ------------------------------------------------------------------------------------ */

/* list_get(l, pos?) -> the item at pos (item 0 without one): the list's item struct info. */
static loom_status infer_get(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *l;
  LOOM_PROPAGATE(list_operand(ic, 0, &l));
  LOOM_PROPAGATE(pos_operand(ic, 1));
  *out = l->ret;
  return LOOM_OK;
}

static loom_status eval_get(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  int64_t n = (int64_t)args[0].n, p;
  if (n == 0 && ec->call->u.call.nargs < 2) {
    char nm[160];
    operand_name(ec, 0, nm, sizeof nm);
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s is empty", ec->op, nm);
  }
  LOOM_PROPAGATE(position(ec, args, 1, n, false, 0, &p));
  return loom_graph_value_copy(&args[0].items[p], out);
}

/* ---- list_insert / list_erase ---------------------------------------------------------------------- */

/* list_insert(l, x, pos?) -> l with x before item pos (appended without pos). */
static loom_status infer_insert(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *l;
  LOOM_PROPAGATE(list_operand(ic, 0, &l));
  if (l->optional) return loom_graph_icx_error(ic, "operand 0 is an Optional: it holds at most one item");
  LOOM_PROPAGATE(item_operand(ic, 1, l));
  LOOM_PROPAGATE(pos_operand(ic, 2));
  const loom_sinfo *it = join(ic->m, l->ret, item_of(ic->m, loom_graph_icx_arg(ic, 1)));
  if (!it) return LOOM_OOM();
  *out = loom_sinfo_list(ic->m, it, len_plus(ic, l, 1), false);
  return LOOM_OK;
}

static loom_status eval_insert(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  size_t n = args[0].n;
  int64_t p;
  LOOM_PROPAGATE(position(ec, args, 2, (int64_t)n, true, (int64_t)n, &p));
  LOOM_PROPAGATE(list_value(n + 1, out));
  loom_status s = LOOM_OK;
  for (size_t i = 0, j = 0; i <= n && !s; i++)
    s = loom_graph_value_copy(i == (size_t)p ? &args[1] : &args[0].items[j++], &out->items[i]);
  if (s) loom_graph_value_free(out);
  return s;
}

/* list_erase(l, pos?) -> l without item pos (the last without pos). */
static loom_status infer_erase(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *l;
  LOOM_PROPAGATE(list_operand(ic, 0, &l));
  LOOM_PROPAGATE(pos_operand(ic, 1));
  *out = loom_sinfo_list(ic->m, l->ret, len_plus(ic, l, -1), l->optional);
  return LOOM_OK;
}

static loom_status eval_erase(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  size_t n = args[0].n;
  int64_t p;
  if (n == 0) {
    char nm[160];
    operand_name(ec, 0, nm, sizeof nm);
    return LOOM_ERROR(OUT_OF_RANGE, "%s: %s is empty", ec->op, nm);
  }
  LOOM_PROPAGATE(position(ec, args, 1, (int64_t)n, false, (int64_t)n - 1, &p));
  LOOM_PROPAGATE(list_value(n - 1, out));
  loom_status s = LOOM_OK;
  for (size_t i = 0, j = 0; i < n && !s; i++)
    if (i != (size_t)p) s = loom_graph_value_copy(&args[0].items[i], &out->items[j++]);
  if (s) loom_graph_value_free(out);
  return s;
}

/* ---- list_select ---------------------------------------------------------------------------------- */

/* list_select(c, a, b) -> a when the one-element bool / integer tensor c holds (is not 0), else b:
 * an If choosing between lists on a run-time condition (both lists already made: ops are pure). */
static loom_status infer_select(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *c, *a, *b;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, false, &c));
  if (c->ndim > 1) return loom_graph_icx_error(ic, "operand 0 (the condition) has rank %d, expected 0 or 1", c->ndim);
  LOOM_PROPAGATE(list_operand(ic, 1, &a));
  LOOM_PROPAGATE(list_operand(ic, 2, &b));
  if (a->optional != b->optional || a->ret->kind != b->ret->kind)
    return loom_graph_icx_error(ic, "operands 1 and 2 are lists of different kinds");
  const loom_sinfo *it = join(ic->m, item_of(ic->m, a->ret), item_of(ic->m, b->ret));
  if (!it) return LOOM_OOM();
  *out = loom_sinfo_list(ic->m, it, a->value == b->value ? a->value : NULL, a->optional);
  return LOOM_OK;
}

static loom_status eval_select(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  if (args[0].kind != LOOM_SINFO_TENSOR || args[0].t.numel != 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: the condition must hold one element", ec->op);
  return loom_graph_value_copy(loom_graph_tensor_get_i64(&args[0].t, 0) ? &args[1] : &args[2], out);
}

const loom_graph_op_impl loom_graph_op_impl_list_new = {new_attrs, infer_new, eval_new, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_list_length = {no_attrs, infer_length, eval_length, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_list_has = {no_attrs, infer_has, eval_has, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_list_get = {no_attrs, infer_get, eval_get, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_list_insert = {no_attrs, infer_insert, eval_insert, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_list_erase = {no_attrs, infer_erase, eval_erase, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_list_select = {no_attrs, infer_select, eval_select, NULL, NULL};
