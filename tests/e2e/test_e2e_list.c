/* test_e2e_list.c — list values (docs/ir.md "Lists") compiled once against the interpreter
 * (tests/e2e/data/lists.loom): every list op on lists of 0, 1, 2 and 7 items whose items differ
 * in shape, at every position (negative ones too); a loop over a list's length; the run-time
 * errors (a position out of range, an empty optional read, a tensor where a list is expected)
 * name the list and the length in both paths. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e/e2e_util.h"

#define LISTS "tests/e2e/data/lists.loom"

/* Item k of a test list: a 1-D f32 tensor of k % 4 + 1 elements (so items differ in shape). */
static int64_t item_len(size_t k) { return (int64_t)(k % 4) + 1; }
static float item_val(size_t k, int64_t j) { return 0.25f * (float)k - 0.125f * (float)j; }

/* The list of n test items, as an interpreter value and as a runtime object. */
static void make_list(loom_rt *rt, size_t n, loom_graph_value *gv, loom_vm_obj **obj) {
  loom_vm_obj *items[16];
  memset(gv, 0, sizeof *gv);
  gv->kind = LOOM_SINFO_LIST;
  gv->n = n;
  gv->items = n ? calloc(n, sizeof *gv->items) : NULL;
  for (size_t k = 0; k < n; k++) {
    int64_t len = item_len(k);
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 1, &len, &gv->items[k]));
    loom_tensor *t;
    cr_assert_null(loom_rt_tensor_new(rt, LOOM_DTYPE_F32, 1, &len, &t));
    for (int64_t j = 0; j < len; j++) ((float *)gv->items[k].t.data)[j] = ((float *)t->data)[j] = item_val(k, j);
    items[k] = &t->hdr;
  }
  cr_assert_null(loom_rt_list_new(rt, items, (uint32_t)n, obj));
  for (size_t k = 0; k < n; k++) loom_vm_obj_release(items[k]);
}

/* A tensor as both forms. */
static void make_tensor(loom_rt *rt, loom_dtype dt, int rank, const int64_t *shape, const void *data, loom_graph_value *gv,
                        loom_vm_obj **obj) {
  cr_assert_null(loom_graph_value_tensor(dt, rank, shape, gv));
  loom_tensor *t;
  cr_assert_null(loom_rt_tensor_new(rt, dt, rank, shape, &t));
  size_t nb = gv->t.numel * loom_dtype_size(dt);
  memcpy(gv->t.data, data, nb);
  memcpy(t->data, data, nb);
  *obj = &t->hdr;
}

/* Asserts that compiled object o equals interpreter value v (lists item by item). */
static void expect_same(const loom_vm_obj *o, const loom_graph_value *v, const char *what) {
  if (v->kind == LOOM_SINFO_LIST) {
    cr_assert_eq(o->kind, LOOM_VM_OBJ_LIST, "%s: compiled gave a %s, not a list", what, loom_vm_obj_kind_name(o->kind));
    const loom_tuple *l = (const loom_tuple *)o;
    cr_assert_eq(l->size, v->n, "%s: %u items compiled, %zu interpreted", what, l->size, v->n);
    for (size_t k = 0; k < v->n; k++) {
      char w[128];
      snprintf(w, sizeof w, "%s item %zu", what, k);
      expect_same(l->items[k], &v->items[k], w);
    }
    return;
  }
  cr_assert_eq(v->kind, LOOM_SINFO_TENSOR, "%s", what);
  cr_assert_eq(o->kind, LOOM_VM_OBJ_TENSOR, "%s: compiled gave a %s", what, loom_vm_obj_kind_name(o->kind));
  const loom_tensor *t = (const loom_tensor *)o;
  cr_assert_eq(t->dtype, v->t.dtype, "%s", what);
  cr_assert_eq(t->rank, v->t.ndim, "%s", what);
  for (int d = 0; d < t->rank; d++) cr_assert_eq(t->shape[d], v->t.shape[d], "%s axis %d", what, d);
  for (size_t i = 0; i < v->t.numel; i++) {
    loom_graph_tensor ct = {.dtype = t->dtype, .ndim = t->rank, .numel = v->t.numel, .data = t->data};
    double a = loom_graph_tensor_get_f64(&ct, i), e = loom_graph_tensor_get_f64(&v->t, i);
    cr_assert_leq(fabs(a - e), 1e-6 * (1 + fabs(e)), "%s element %zu: %g compiled, %g interpreted", what, i, a, e);
  }
}

/* Runs @fn both ways on args; both succeed and agree (result: a tuple flattened by the runtime
 * or one value), or both fail with messages holding `err`. */
static void run_both(e2e_model *md, const char *fn, size_t nargs, loom_graph_value *gv, loom_vm_obj **obj, const char *err,
                     const char *what) {
  loom_graph_value ref;
  loom_status si = loom_graph_eval(md->ref, fn, nargs, gv, NULL, &ref);
  loom_rt_outputs out = {0};
  loom_status sc = loom_rt_call_values(md->rt, fn, obj, (uint32_t)nargs, &out);
  if (err) {
    cr_assert_not_null(si, "%s: the interpreter accepted it", what);
    cr_assert_not_null(sc, "%s: the compiled call accepted it", what);
    cr_expect(strstr(loom_status_message(si), err), "%s: interpreter: %s", what, loom_status_message(si));
    cr_expect(strstr(loom_status_message(sc), err), "%s: compiled: %s", what, loom_status_message(sc));
    loom_status_free(si);
    loom_status_free(sc);
    return;
  }
  cr_assert_null(si, "%s: interpreter: %s", what, loom_status_text(si, 0));
  cr_assert_null(sc, "%s: compiled: %s", what, loom_status_text(sc, 0));
  if (ref.kind == LOOM_SINFO_TUPLE) {
    cr_assert_eq(out.count, ref.n, "%s", what);
    for (size_t i = 0; i < ref.n; i++) {
      char w[128];
      snprintf(w, sizeof w, "%s: result %zu", what, i);
      expect_same(out.items[i], &ref.items[i], w);
    }
  } else {
    cr_assert_eq(out.count, 1, "%s", what);
    expect_same(out.items[0], &ref, what);
  }
  loom_graph_value_free(&ref);
  loom_rt_outputs_free(&out);
}

static void free_args(size_t n, loom_graph_value *gv, loom_vm_obj **obj) {
  for (size_t i = 0; i < n; i++) {
    loom_graph_value_free(&gv[i]);
    loom_vm_obj_release(obj[i]);
  }
}

LOOM_TEST(e2e_list, every_list_op_at_every_position_and_length) {
  e2e_model md = e2e_compile(LISTS);
  static const size_t lens[] = {0, 1, 2, 7};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    size_t n = lens[li];
    /* positions: list_insert takes -n .. n (then list_get / list_erase, on n + 2 items, take
     * more); both ends and two past them */
    for (int64_t p = -(int64_t)n - 2; p <= (int64_t)n + 2; p++) {
      loom_graph_value gv[3];
      loom_vm_obj *obj[3];
      int64_t xl = 3;
      float xd[3] = {1.5f, -2.0f, 0.5f};
      make_list(md.rt, n, &gv[0], &obj[0]);
      make_tensor(md.rt, LOOM_DTYPE_F32, 1, &xl, xd, &gv[1], &obj[1]);
      make_tensor(md.rt, LOOM_DTYPE_I64, 0, NULL, &p, &gv[2], &obj[2]);
      char what[96];
      snprintf(what, sizeof what, "@ops with %zu items at position %lld", n, (long long)p);
      bool ok = p >= -(int64_t)n && p <= (int64_t)n;
      run_both(&md, "ops", 3, gv, obj, ok ? NULL : "is out of range", what);
      free_args(3, gv, obj);
    }
  }
  e2e_model_free(&md);
}

LOOM_TEST(e2e_list, a_loop_over_a_lists_length) {
  e2e_model md = e2e_compile(LISTS);
  static const size_t lens[] = {0, 1, 2, 7, 13};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    loom_graph_value gv[1];
    loom_vm_obj *obj[1];
    make_list(md.rt, lens[li], &gv[0], &obj[0]);
    char what[64];
    snprintf(what, sizeof what, "@map over %zu items", lens[li]);
    run_both(&md, "map", 1, gv, obj, NULL, what);
    free_args(1, gv, obj);
  }
  e2e_model_free(&md);
}

LOOM_TEST(e2e_list, a_list_chosen_at_run_time) {
  e2e_model md = e2e_compile(LISTS);
  for (int c = 0; c < 2; c++)
    for (size_t na = 0; na < 3; na++) {
      loom_graph_value gv[3];
      loom_vm_obj *obj[3];
      bool cv = c != 0;
      make_tensor(md.rt, LOOM_DTYPE_BOOL, 0, NULL, &cv, &gv[0], &obj[0]);
      make_list(md.rt, na, &gv[1], &obj[1]);
      make_list(md.rt, 5 - na, &gv[2], &obj[2]);
      char what[64];
      snprintf(what, sizeof what, "@pick(%d) of %zu and %zu items", c, na, 5 - na);
      run_both(&md, "pick", 3, gv, obj, NULL, what);
      free_args(3, gv, obj);
    }
  e2e_model_free(&md);
}

LOOM_TEST(e2e_list, run_time_errors_name_the_list) {
  e2e_model md = e2e_compile(LISTS);
  loom_graph_value gv[1];
  loom_vm_obj *obj[1];
  /* an empty optional read: both name emptiness */
  make_list(md.rt, 0, &gv[0], &obj[0]);
  run_both(&md, "get", 1, gv, obj, "empty", "@get of an empty optional");
  loom_rt_outputs out = {0};
  loom_status s = loom_rt_call_values(md.rt, "get", obj, 1, &out);
  cr_assert_not_null(s);
  cr_expect(strstr(loom_status_text(s, 0), "[y = list_get(o)]"), "the binding and its list: %s", loom_status_text(s, 0));
  loom_status_free(s);
  free_args(1, gv, obj);
  /* a tensor where a list is expected */
  int64_t two[2] = {2, 2};
  float z[4] = {0};
  make_tensor(md.rt, LOOM_DTYPE_F32, 2, two, z, &gv[0], &obj[0]);
  s = loom_rt_call_values(md.rt, "get", obj, 1, &out);
  cr_assert_not_null(s);
  cr_expect(strstr(loom_status_message(s), "input 'o' of 'get': expected a list, got tensor"), "%s", loom_status_message(s));
  loom_status_free(s);
  loom_graph_value ref;
  s = loom_graph_eval(md.ref, "get", 1, gv, NULL, &ref);
  cr_assert_not_null(s);
  cr_expect(strstr(loom_status_message(s), "expected a list, got a tensor"), "%s", loom_status_message(s));
  loom_status_free(s);
  free_args(1, gv, obj);
  /* an item of the wrong dtype */
  int64_t one = 1, v = 3;
  loom_tensor *t;
  cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_I64, 1, &one, &t));
  *(int64_t *)t->data = v;
  loom_vm_obj *it = &t->hdr, *l;
  cr_assert_null(loom_rt_list_new(md.rt, &it, 1, &l));
  s = loom_rt_call_values(md.rt, "map", &l, 1, &out);
  cr_assert_not_null(s);
  cr_expect(strstr(loom_status_message(s), "input 's' of 'map': item 0 has dtype i64, expected f32"), "%s",
            loom_status_message(s));
  loom_status_free(s);
  loom_vm_obj_release(l);
  loom_vm_obj_release(it);
  /* the signature shows a list parameter */
  char sig[256];
  loom_rt_signature_text(md.rt, loom_rt_function_find(md.rt, "map"), sig, sizeof sig);
  cr_expect_str_eq(sig, "map(s: list of f32)");
  e2e_model_free(&md);
}

/* `loom run` takes a list input as list:[SPEC;...] and prints a list result item by item. */
LOOM_TEST(e2e_list, loom_run_lists_in_and_out) {
  loom_test_proc p = loom_test_run("%s run %s --fn map --input 's=list:[random:(3);random:(0);random:(2)]' --no-cache",
                                   loom_test_loom_bin(), LISTS);
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  cr_expect(strstr(p.out, "output 0: list of 3\n  item 0: f32(3)"), "%s", p.out);
  cr_expect(strstr(p.out, "  item 1: f32(0)"), "%s", p.out);
  cr_expect(strstr(p.out, "  item 2: f32(2)"), "%s", p.out);
  loom_test_proc_free(&p);
  /* an item of another rank: the match_cast that reads it names it */
  p = loom_test_run("%s run %s --fn map --input 's=list:[random:(3);random:(2, 2)]' --no-cache", loom_test_loom_bin(), LISTS);
  cr_expect_neq(p.exit_code, 0);
  cr_expect(strstr(p.err, "input 'x1': expected rank 1, got 2"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run %s --fn map --input 's=random:(3)' --no-cache", loom_test_loom_bin(), LISTS);
  cr_expect_neq(p.exit_code, 0);
  cr_expect(strstr(p.err, "input 's' is a list: give list:[SPEC;SPEC;...]"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run %s --fn get --input 'o=list:[]' --no-cache", loom_test_loom_bin(), LISTS);
  cr_expect_neq(p.exit_code, 0);
  cr_expect(strstr(p.err, "LIST_GET: the list is empty") && strstr(p.err, "[y = list_get(o)]"), "%s", p.err);
  loom_test_proc_free(&p);
}
