/* hostop.c — the VM's host operators and the object <-> value conversions (see hostop.h). */
#include "driver/hostop.h"

#include <stdlib.h>
#include <string.h>

/* Copies the elements of VM tensor t, in row-major order, to dense t->rank-d graph tensor g. */
static loom_status gather(const loom_tensor *t, loom_graph_tensor *g) {
  size_t es = loom_dtype_size(t->dtype), n = g->numel;
  int64_t idx[LOOM_VM_MAX_RANK] = {0};
  for (size_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int32_t k = 0; k < t->rank; k++) off += idx[k] * t->strides[k];
    const char *src = (const char *)t->data + off * (int64_t)es;
    if (loom_dtype_is_string(t->dtype)) LOOM_PROPAGATE(loom_graph_tensor_copy_strs(g, i, src, 1));
    else memcpy((char *)g->data + i * es, src, es);
    for (int32_t k = t->rank - 1; k >= 0 && ++idx[k] == t->shape[k]; k--) idx[k] = 0;
  }
  return LOOM_OK;
}

/* The items of tuple or list o as values of kind `kind`. */
static loom_status items_of(const loom_tuple *o, loom_sinfo_kind kind, loom_graph_value *out) {
  *out = (loom_graph_value){.kind = kind, .n = o->size};
  out->items = o->size ? calloc(o->size, sizeof *out->items) : NULL;
  if (o->size && !out->items) return LOOM_OOM();
  for (uint32_t i = 0; i < o->size; i++) {
    loom_status s = loom_driver_value_of_obj(o->items[i], &out->items[i]);
    if (s) {
      loom_graph_value_free(out);
      return s;
    }
  }
  return LOOM_OK;
}

loom_status loom_driver_value_of_obj(const loom_vm_obj *o, loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  if (o->kind == LOOM_VM_OBJ_LIST) return items_of((const loom_tuple *)o, LOOM_SINFO_LIST, out); /* a sequence or optional */
  if (o->kind == LOOM_VM_OBJ_TUPLE) return items_of((const loom_tuple *)o, LOOM_SINFO_TUPLE, out);
  if (o->kind != LOOM_VM_OBJ_TENSOR) return LOOM_ERROR(UNIMPLEMENTED, "a %s value", loom_vm_obj_kind_name(o->kind));
  const loom_tensor *t = (const loom_tensor *)o;
  if (t->rank > 8) return LOOM_ERROR(UNIMPLEMENTED, "a tensor of rank %d (the interpreter takes at most 8)", t->rank);
  LOOM_PROPAGATE(loom_graph_value_tensor(t->dtype, t->rank, t->shape, out));
  loom_status st = gather(t, &out->t);
  if (st) loom_graph_value_free(out);
  return st;
}

loom_status loom_driver_obj_of_value(loom_device *dev, const loom_graph_value *v, loom_vm_obj **out) {
  *out = NULL;
  if (v->kind == LOOM_SINFO_LIST || v->kind == LOOM_SINFO_TUPLE) {
    loom_vm_obj **items = calloc(v->n ? v->n : 1, sizeof *items);
    if (!items) return LOOM_OOM();
    loom_status st = v->n > UINT32_MAX ? LOOM_ERROR(OUT_OF_RANGE, "%zu items", v->n) : LOOM_OK;
    for (size_t i = 0; i < v->n && !st; i++) st = loom_driver_obj_of_value(dev, &v->items[i], &items[i]);
    loom_tuple *t = NULL;
    if (!st) st = v->kind == LOOM_SINFO_LIST ? loom_list_new(NULL, items, (uint32_t)v->n, &t)
                                             : loom_tuple_new(NULL, items, (uint32_t)v->n, &t);
    for (size_t i = 0; i < v->n; i++) loom_vm_obj_release(items[i]);
    free(items);
    if (!st) *out = &t->hdr;
    return st;
  }
  if (v->kind != LOOM_SINFO_TENSOR) return LOOM_ERROR(UNIMPLEMENTED, "a value of struct-info kind %d has no VM object here", (int)v->kind);
  const loom_graph_tensor *g = &v->t;
  loom_tensor *x;
  if (loom_dtype_is_string(g->dtype)) LOOM_PROPAGATE(loom_tensor_strings(dev, g->ndim, g->shape, g->data, &x));
  else {
    LOOM_PROPAGATE(loom_tensor_alloc(dev, g->dtype, g->ndim, g->shape, &x));
    if (g->numel) memcpy(x->data, g->data, g->numel * loom_dtype_size(g->dtype));
  }
  *out = &x->hdr;
  return LOOM_OK;
}

loom_status loom_driver_hostop(void *ctx, uint32_t op, loom_device *dev, uint32_t nargs, loom_vm_obj *const *args,
                               loom_vm_obj **out) {
  *out = NULL;
  const loom_driver_hostops *h = ctx;
  if (op >= h->calls->len) return LOOM_ERROR(OUT_OF_RANGE, "host operator %u of %zu", op, h->calls->len);
  const loom_graph_expr *call = h->calls->data[op];
  if (nargs != call->u.call.nargs)
    return LOOM_ERROR(INVALID_ARGUMENT, "host operator %u (%s): %u operands, the call has %zu", op,
                      loom_graph_op_name(call->u.call.op), nargs, call->u.call.nargs);
  loom_graph_value *vals = calloc(nargs ? nargs : 1, sizeof *vals), res = {0};
  if (!vals) return LOOM_OOM();
  loom_status st = LOOM_OK;
  for (uint32_t i = 0; i < nargs && !st; i++) st = loom_driver_value_of_obj(args[i], &vals[i]);
  if (!st) st = loom_graph_call_eval(h->m, call, vals, &res);
  if (!st) st = loom_driver_obj_of_value(dev, &res, out);
  loom_graph_value_free(&res);
  for (uint32_t i = 0; i < nargs; i++) loom_graph_value_free(&vals[i]);
  free(vals);
  return st;
}
