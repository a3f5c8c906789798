/* test_e2e_string.c — string tensors on the compiled path (docs/vm.md "Strings" and "Host
 * operators"; tests/e2e/data/strings.loom): every string operator compiled once and run
 * against the interpreter and hand-computed values, on empty strings, UTF-8, 0-d tensors,
 * 0-element tensors, broadcasting and data-dependent result shapes (split, normalize); a string
 * result feeding tensor programs; bad input (a non-string for a string parameter) refused naming
 * the parameter; AOT artifacts refusing host operators by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/hostop.h"
#include "e2e/e2e_util.h"

#define STRINGS "tests/e2e/data/strings.loom"

/* A string tensor as both forms: an interpreter value and a runtime tensor. */
static void make_str(loom_rt *rt, int rank, const int64_t *shape, const char *const *s, loom_graph_value *gv,
                     loom_tensor **t) {
  cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_STRING, rank, shape, gv));
  for (size_t i = 0; i < gv->t.numel; i++) cr_assert_null(loom_graph_tensor_set_str(&gv->t, i, s[i], strlen(s[i])));
  cr_assert_null(loom_rt_tensor_strings(rt, rank, shape, s, NULL, t));
}

/* Asserts that values a (compiled) and b (interpreted) are equal: shapes, dtypes and elements. */
static void expect_equal(const loom_graph_value *a, const loom_graph_value *b, const char *what) {
  cr_assert_eq(a->kind, b->kind, "%s: kinds differ", what);
  cr_assert_eq(a->t.dtype, b->t.dtype, "%s: dtype %s vs %s", what, loom_dtype_name(a->t.dtype), loom_dtype_name(b->t.dtype));
  cr_assert_eq(a->t.ndim, b->t.ndim, "%s: rank %d vs %d", what, a->t.ndim, b->t.ndim);
  for (int k = 0; k < a->t.ndim; k++) cr_assert_eq(a->t.shape[k], b->t.shape[k], "%s: axis %d", what, k);
  for (size_t i = 0; i < a->t.numel; i++) {
    if (loom_dtype_is_string(a->t.dtype)) {
      loom_str x = loom_graph_tensor_get_str(&a->t, i), y = loom_graph_tensor_get_str(&b->t, i);
      cr_assert(loom_graph_str_equal(x, y), "%s element %zu: \"%.*s\" vs \"%.*s\"", what, i, (int)x.len,
                x.data ? x.data : "", (int)y.len, y.data ? y.data : "");
    } else {
      cr_assert_eq(loom_graph_tensor_get_f64(&a->t, i), loom_graph_tensor_get_f64(&b->t, i), "%s element %zu", what, i);
    }
  }
}

/* Runs @fn compiled and interpreted on the same inputs; returns the compiled results as values
 * (nres of them, a returned tuple flattened) after checking them against the interpreter's. */
static loom_graph_value *run_both(e2e_model *md, const char *fn, loom_graph_value *in, loom_tensor **t, uint32_t n,
                                  uint32_t *nres) {
  loom_rt_outputs out = {0};
  loom_status s = loom_rt_call(md->rt, fn, t, n, &out);
  cr_assert_null(s, "@%s: %s", fn, loom_status_text(s, 0));
  loom_graph_value ref;
  s = loom_graph_eval(md->ref, fn, n, in, NULL, &ref);
  cr_assert_null(s, "@%s interpreted: %s", fn, loom_status_text(s, 0));
  bool tuple = ref.kind == LOOM_SINFO_TUPLE;
  cr_assert_eq(out.count, tuple ? ref.n : 1);
  loom_graph_value *got = calloc(out.count, sizeof *got);
  for (uint32_t i = 0; i < out.count; i++) {
    cr_assert_null(loom_driver_value_of_obj(out.items[i], &got[i]));
    char what[64];
    snprintf(what, sizeof what, "@%s result %u", fn, i);
    expect_equal(&got[i], tuple ? &ref.items[i] : &ref, what);
  }
  *nres = out.count;
  loom_rt_outputs_free(&out);
  loom_graph_value_free(&ref);
  return got;
}

/* Asserts s failed with `code` and a message holding `needle`; frees it. */
static void expect_fail(loom_status s, loom_code code, const char *needle) {
  cr_assert(s, "no error; expected one holding '%s'", needle);
  const char *m = loom_status_text(s, 0);
  cr_assert(loom_status_code(s) == code && strstr(m, needle), "got: %s", m);
  loom_status_free(s);
}

static void free_all(loom_graph_value *v, loom_tensor **t, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    loom_graph_value_free(&v[i]);
    loom_tensor_release(t[i]);
  }
}

static void free_res(loom_graph_value *r, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) loom_graph_value_free(&r[i]);
  free(r);
}

/* Asserts string tensor v holds want[0 .. numel). */
static void expect_strs(const loom_graph_value *v, const char *const *want) {
  for (size_t i = 0; i < v->t.numel; i++) {
    loom_str s = loom_graph_tensor_get_str(&v->t, i);
    cr_assert(s.len == strlen(want[i]) && (!s.len || !memcmp(s.data, want[i], s.len)), "element %zu: \"%.*s\", want \"%s\"",
              i, (int)s.len, s.data ? s.data : "", want[i]);
  }
}

LOOM_TEST(e2e_string, concat_broadcast_utf8_empty_and_0d) {
  e2e_model md = e2e_compile(STRINGS);
  /* (2, 3) with (3,): broadcasting, UTF-8, empty strings */
  loom_graph_value in[2];
  loom_tensor *t[2];
  make_str(md.rt, 2, (int64_t[]){2, 3}, (const char *[]){"a", "", "h\xc3\xa9", "\xe6\x97\xa5", "bc", ""}, &in[0], &t[0]);
  make_str(md.rt, 1, (int64_t[]){3}, (const char *[]){"1", "\xe6\x9c\xac", ""}, &in[1], &t[1]);
  uint32_t nr;
  loom_graph_value *r = run_both(&md, "cat", in, t, 2, &nr);
  expect_strs(&r[0], (const char *[]){"a1", "\xe6\x9c\xac", "h\xc3\xa9", "\xe6\x97\xa5" "1", "bc\xe6\x9c\xac", ""});
  free_res(r, nr);
  free_all(in, t, 2);
  /* 0 rows, 1 row, 7 rows (primes and 1 on both axes) */
  static const int64_t rows[] = {0, 1, 7};
  const char *cells[21];
  for (int k = 0; k < 21; k++) cells[k] = k % 2 ? "xyz" : "";
  for (int q = 0; q < 3; q++) {
    make_str(md.rt, 2, (int64_t[]){rows[q], 3}, cells, &in[0], &t[0]);
    make_str(md.rt, 1, (int64_t[]){3}, (const char *[]){"-", "", "\xf0\x9f\x98\x80"}, &in[1], &t[1]);
    r = run_both(&md, "cat", in, t, 2, &nr);
    cr_assert_eq(r[0].t.shape[0], rows[q]);
    free_res(r, nr);
    free_all(in, t, 2);
  }
  /* 0-d */
  make_str(md.rt, 0, NULL, (const char *[]){"ab"}, &in[0], &t[0]);
  make_str(md.rt, 0, NULL, (const char *[]){""}, &in[1], &t[1]);
  r = run_both(&md, "cat0", in, t, 2, &nr);
  cr_assert_eq(r[0].t.ndim, 0);
  expect_strs(&r[0], (const char *[]){"ab"});
  free_res(r, nr);
  free_all(in, t, 2);
  e2e_model_free(&md);
}

LOOM_TEST(e2e_string, split_and_normalize_shapes_from_data) {
  e2e_model md = e2e_compile(STRINGS);
  loom_graph_value in;
  loom_tensor *t;
  make_str(md.rt, 1, (int64_t[]){3}, (const char *[]){"a,b,,c", "", " one  two "}, &in, &t);
  uint32_t nr;
  loom_graph_value *r = run_both(&md, "split", &in, &t, 1, &nr);
  cr_assert_eq(nr, 3);
  cr_assert(r[0].t.shape[0] == 3 && r[0].t.shape[1] == 4, "pieces (%lld, %lld)", (long long)r[0].t.shape[0],
            (long long)r[0].t.shape[1]);
  expect_strs(&r[0], (const char *[]){"a", "b", "", "c", "", "", "", "", " one  two ", "", "", ""});
  const int64_t *k = r[1].t.data;
  cr_assert(k[0] == 4 && k[1] == 1 && k[2] == 1, "counts %lld %lld %lld", (long long)k[0], (long long)k[1], (long long)k[2]);
  expect_strs(&r[2], (const char *[]){"a,b,,c", "", "", "", "one", "two"}); /* whitespace split: (3, 2) */
  free_res(r, nr);
  free_all(&in, &t, 1);
  /* 0 elements: pieces (0, 0) */
  make_str(md.rt, 1, (int64_t[]){0}, NULL, &in, &t);
  r = run_both(&md, "split", &in, &t, 1, &nr);
  cr_assert(r[0].t.shape[0] == 0 && r[0].t.shape[1] == 0);
  free_res(r, nr);
  free_all(&in, &t, 1);
  /* normalize: stopwords dropped, upper case; every element dropped leaves one "" */
  make_str(md.rt, 1, (int64_t[]){4}, (const char *[]){"Monday", "tue", "h\xc3\xa9llo", "MONDAY"}, &in, &t);
  r = run_both(&md, "norm", &in, &t, 1, &nr);
  cr_assert_eq(r[0].t.shape[0], 2);
  expect_strs(&r[0], (const char *[]){"TUE", "H\xc3\xa9LLO"});
  free_res(r, nr);
  free_all(&in, &t, 1);
  make_str(md.rt, 1, (int64_t[]){1}, (const char *[]){"monday"}, &in, &t);
  r = run_both(&md, "norm", &in, &t, 1, &nr);
  cr_assert_eq(r[0].t.shape[0], 1);
  expect_strs(&r[0], (const char *[]){""});
  free_res(r, nr);
  free_all(&in, &t, 1);
  e2e_model_free(&md);
}

/* String results feed tensor programs (regex -> cast -> mul/add) next to equal and label_encode:
 * the memory plan gives the numeric tensors storage, the host operators make their own. */
LOOM_TEST(e2e_string, mixed_with_tensor_programs) {
  e2e_model md = e2e_compile(STRINGS);
  static const int64_t ns[] = {0, 1, 5};
  const char *a[5] = {"ab", "x", "h\xc3\xa9llo", "", "zz"}, *b[5] = {"@cd.com", "x", "@w.com", "", "@q.org"};
  for (int q = 0; q < 3; q++) {
    int64_t n = ns[q];
    loom_graph_value in[3];
    loom_tensor *t[3];
    make_str(md.rt, 1, &n, a, &in[0], &t[0]);
    make_str(md.rt, 1, &n, b, &in[1], &t[1]);
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 1, &n, &in[2]));
    cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_F32, 1, &n, &t[2]));
    for (int64_t i = 0; i < n; i++) ((float *)in[2].t.data)[i] = ((float *)t[2]->data)[i] = 0.5f + (float)i;
    uint32_t nr;
    loom_graph_value *r = run_both(&md, "mixed", in, t, 3, &nr);
    if (n == 5) {
      const int64_t *k = r[2].t.data;
      cr_assert(k[0] == -1 && k[1] == 1 && k[2] == 2 && k[3] == 3 && k[4] == -1);
      const uint8_t *e = r[1].t.data;
      cr_assert(!e[0] && e[1] && !e[2] && e[3] && !e[4]);
      const float *h = r[3].t.data; /* (match + 1) * w: "ab@cd.com" matches, "héllo@w.com" does not (é) */
      cr_assert(h[0] == 1.0f && h[1] == 1.5f && h[2] == 2.5f && h[3] == 3.5f && h[4] == 4.5f, "%g %g %g %g %g", h[0], h[1],
                h[2], h[3], h[4]);
    }
    free_res(r, nr);
    free_all(in, t, 3);
  }
  e2e_model_free(&md);
}

/* cast to and from strings: a tensor program's result printed, strings parsed into a program */
LOOM_TEST(e2e_string, casts_between_numbers_and_strings) {
  e2e_model md = e2e_compile(STRINGS);
  static const int64_t ns[] = {0, 1, 3};
  for (int q = 0; q < 3; q++) {
    int64_t n = ns[q];
    loom_graph_value in[2];
    loom_tensor *t[2];
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 1, &n, &in[0]));
    cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_F32, 1, &n, &t[0]));
    for (int64_t i = 0; i < n; i++) ((float *)in[0].t.data)[i] = ((float *)t[0]->data)[i] = (float)i - 1.0f;
    make_str(md.rt, 1, &n, (const char *[]){"12", " -7 ", "100.5"}, &in[1], &t[1]);
    uint32_t nr;
    loom_graph_value *r = run_both(&md, "casts", in, t, 2, &nr);
    if (n == 3) {
      expect_strs(&r[0], (const char *[]){"0.36787945", "1.0", "2.7182817"});
      const int64_t *w = r[1].t.data;
      cr_assert(w[0] == 24 && w[1] == -14 && w[2] == 200, "%lld %lld %lld", (long long)w[0], (long long)w[1], (long long)w[2]);
    }
    free_res(r, nr);
    free_all(in, t, 2);
  }
  /* an element that is not a number: the interpreter's message, from the compiled call */
  loom_tensor *t[2];
  int64_t one = 1;
  cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_F32, 1, &one, &t[0]));
  cr_assert_null(loom_rt_tensor_strings(md.rt, 1, &one, (const char *[]){"12abc"}, NULL, &t[1]));
  loom_rt_outputs out = {0};
  expect_fail(loom_rt_call(md.rt, "casts", t, 2, &out), LOOM_CODE_INVALID_ARGUMENT, "\"12abc\", is not a number");
  loom_tensor_release(t[0]);
  loom_tensor_release(t[1]);
  e2e_model_free(&md);
}

LOOM_TEST(e2e_string, bad_input_and_aot_refused) {
  e2e_model md = e2e_compile(STRINGS);
  /* a number tensor for a string parameter: refused naming the parameter */
  loom_tensor *t[2];
  cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_F32, 2, (int64_t[]){1, 1}, &t[0]));
  cr_assert_null(loom_rt_tensor_strings(md.rt, 1, (int64_t[]){1}, (const char *[]){"x"}, NULL, &t[1]));
  loom_rt_outputs out = {0};
  loom_status s = loom_rt_call(md.rt, "cat", t, 2, &out);
  cr_assert(s, "a f32 tensor for a string parameter ran");
  printf("bad input: %s\n", loom_status_text(s, 0));
  cr_assert(strstr(loom_status_text(s, 0), "'a'") && strstr(loom_status_text(s, 0), "string"), "%s", loom_status_text(s, 0));
  loom_status_free(s);
  loom_tensor_release(t[0]);
  loom_tensor_release(t[1]);
  /* string tensors come only from loom_rt_tensor_strings */
  loom_tensor *x = NULL;
  expect_fail(loom_rt_tensor_new(md.rt, LOOM_DTYPE_STRING, 1, (int64_t[]){2}, &x), LOOM_CODE_INVALID_ARGUMENT, "loom_rt_tensor_strings");
  /* an AOT artifact cannot hold a host operator: refused naming it */
  expect_fail(loom_compiled_save(md.c, "/tmp/loom-e2e-strings.so"), LOOM_CODE_UNIMPLEMENTED,
              "operator 'string_concat' takes or makes string tensors");
  e2e_model_free(&md);
}
