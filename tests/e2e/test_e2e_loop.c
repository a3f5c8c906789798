/* test_e2e_loop.c — loops compiled once (JIT and AOT) against the interpreter
 * (tests/e2e/data/loops.loom): trip counts 0, 1, 2, primes and large, a carried value that
 * grows a row per step, a condition the body computes (greedy decoding), a count read from a
 * tensor, nested loops; what a call holds stays within the plan's peak, and a loop whose carried
 * values keep their shape holds the same whatever its trip count (its body's storage is reused
 * across iterations); the executable shows the backward jump, and a run-time shape error in a
 * loop names the carried value; the default pipeline on loops is checked numerically pass by pass.
 * ONNX LSTM / GRU / RNN models over a symbolic sequence length,
 * compiled ONCE, equal ONNX Runtime's outputs at three sequence lengths
 * (tests/e2e/data/onnx/make.py wrote them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e/e2e_util.h"
#include "frontend/onnx/onnx_model.h"
#include "graph/memplan.h"

#define LOOPS "tests/e2e/data/loops.loom"

static const int64_t counts[] = {0, 1, 2, 3, 7, 13, 100};

LOOM_TEST(e2e_loop, growing_carried_value_and_scan_at_many_trip_counts) {
  e2e_model md = e2e_compile(LOOPS);
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    int64_t n = counts[c];
    e2e_bind b[] = {{"n", n}, {"k0", 3}, {"r_k0", 3 + n}};
    e2e_io io = {0};
    double err = e2e_check(&md, "grow", b, 3, false, &io);
    cr_expect_leq(err, 1e-5, "n = %lld: worst error %g", (long long)n, err);
    cr_assert_eq(io.nout, 3);
    cr_expect_eq(io.out[1]->shape[0], 3 + n, "the final acc has k0 + n rows");
    cr_expect_eq(io.out[2]->shape[0], n, "one scan item per iteration");
    e2e_io_free(&io);
  }
  e2e_model_free(&md);
}

LOOM_TEST(e2e_loop, body_storage_is_reused_across_iterations) {
  e2e_model md = e2e_compile(LOOPS);
  /* the plan: the body's temporaries in storage allocated before the loop; the peak does not
   * name the trip count */
  loom_graph_module *cm = loom_compiled_module(md.c);
  loom_memplan *p;
  cr_assert_null(loom_memplan_build(cm, loom_graph_module_find_func(cm, "steady"), &p));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_memplan_print(p, &sb);
  const char *text = loom_strbuf_cstr(&sb);
  cr_expect(strstr(text, "(allocated before the loop)"), "%s", text);
  cr_expect(strstr(text, "peak = 768*b bytes"), "%s", text);
  loom_strbuf_free(&sb);
  loom_memplan_free(p);
  /* measured: the same bytes at 2, 10 and 100 steps (one step makes one state: no second buffer) */
  size_t used[4];
  static const int64_t steps[4] = {2, 10, 100, 1};
  for (int i = 0; i < 4; i++) {
    e2e_bind b[] = {{"t", steps[i]}, {"b", 5}};
    e2e_io io = {0};
    double err = e2e_check(&md, "steady", b, 2, false, &io);
    cr_expect_leq(err, 1e-5, "t = %lld: worst error %g", (long long)steps[i], err);
    used[i] = io.used;
    cr_expect_leq(io.used, (size_t)io.planned);
    e2e_io_free(&io);
  }
  cr_expect(used[0] == used[1] && used[1] == used[2], "held %zu, %zu, %zu bytes at 2, 10, 100 steps", used[0], used[1], used[2]);
  cr_expect_lt(used[3], used[0], "one step holds less: %zu", used[3]);
  e2e_model_free(&md);
}

/* Greedy decoding: the table sends token t to t + 1 (and 3, the end token, to 0). */
LOOM_TEST(e2e_loop, greedy_decode_with_an_early_exit) {
  e2e_model md = e2e_compile(LOOPS);
  loom_tensor *table, *prompt, *steps;
  int64_t ts[2] = {4, 4}, one = 1;
  cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_F32, 2, ts, &table));
  for (int r = 0; r < 4; r++)
    for (int k = 0; k < 4; k++) ((float *)table->data)[r * 4 + k] = k == (r + 1) % 4 ? 1.0f : 0.1f * (float)k;
  struct {
    int64_t start, steps, len;
  } cases[] = {{0, 10, 4}, {0, 2, 3}, {3, 10, 5}, {1, 0, 1}, {2, 1, 2}, {1, -4, 1}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_I64, 1, &one, &prompt));
    cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_I64, 0, NULL, &steps));
    *(int64_t *)prompt->data = cases[c].start;
    *(int64_t *)steps->data = cases[c].steps;
    int64_t it = cases[c].len - 1;
    e2e_bind b[] = {{"p", 1}, {"r_k1", cases[c].len}, {"r_n2", it}};
    e2e_io io = {.given = {prompt, steps, table}, .ngiven = 3};
    double err = e2e_check(&md, "decode", b, 3, false, &io);
    cr_expect_eq(err, 0);
    cr_assert_eq(io.nout, 3);
    cr_expect_eq(io.out[0]->shape[0], cases[c].len, "case %zu: %lld tokens", c, (long long)io.out[0]->shape[0]);
    for (int64_t k = 0; k < io.out[0]->shape[0]; k++)
      cr_expect_eq(((int64_t *)io.out[0]->data)[k], (cases[c].start + k) % 4, "case %zu token %lld", c, (long long)k);
    cr_expect_eq(io.out[2]->shape[0], it);
    e2e_io_free(&io);
    loom_tensor_release(prompt);
    loom_tensor_release(steps);
  }
  loom_tensor_release(table);
  e2e_model_free(&md);
}

LOOM_TEST(e2e_loop, nested_loops_and_a_count_read_from_a_tensor) {
  e2e_model md = e2e_compile(LOOPS);
  static const int64_t ms[] = {1, 17};
  for (size_t i = 0; i < 2; i++) {
    e2e_bind b[] = {{"m", ms[i]}};
    cr_expect_leq(e2e_check(&md, "nested", b, 1, false, NULL), 1e-6);
  }
  static const int64_t ns[] = {-2, 0, 1, 2, 11};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    loom_tensor *n;
    cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_I64, 0, NULL, &n));
    *(int64_t *)n->data = ns[i];
    int64_t it = ns[i] > 0 ? ns[i] : 0;
    e2e_bind b[] = {{"m", 6}, {"r_n3", it}};
    e2e_io io = {.given = {NULL, n}, .ngiven = 2};
    cr_expect_leq(e2e_check(&md, "counted", b, 2, false, &io), 1e-6);
    cr_expect_eq(io.out[1]->shape[0], it);
    e2e_io_free(&io);
    loom_tensor_release(n);
  }
  e2e_model_free(&md);
}

LOOM_TEST(e2e_loop, scan_items_whose_shape_the_body_decides) {
  e2e_model md = e2e_compile(LOOPS);
  for (int64_t it = 1; it <= 5; it += 4) {
    loom_tensor *n;
    cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_I64, 0, NULL, &n));
    *(int64_t *)n->data = it;
    e2e_bind b[] = {{"n", 3}, {"r_k4", 3}, {"r_n5", it}, {"r_s6", 3}};
    e2e_io io = {.given = {NULL, n}, .ngiven = 2};
    cr_expect_leq(e2e_check(&md, "shaped", b, 4, false, &io), 1e-6);
    cr_expect(io.out[1]->rank == 3 && io.out[1]->shape[0] == it && io.out[1]->shape[1] == 3);
    e2e_io_free(&io);
    loom_tensor_release(n);
  }
  /* no iteration: the items' shape is unknown */
  loom_tensor *in[2];
  int64_t xs[2] = {3, 4};
  cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_F32, 2, xs, &in[0]));
  cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_I64, 0, NULL, &in[1]));
  memset(in[0]->data, 0, 12 * sizeof(float));
  *(int64_t *)in[1]->data = 0;
  loom_rt_outputs out;
  loom_status s = loom_rt_call(md.rt, "shaped", in, 2, &out);
  cr_assert(s, "ran");
  cr_expect(strstr(loom_status_text(s, 0), "a loop ran no iteration, and the shape of its scan items is known only from them"),
            "%s", loom_status_text(s, 0));
  loom_status_free(s);
  loom_tensor_release(in[0]);
  loom_tensor_release(in[1]);
  e2e_model_free(&md);
}

static void expect(loom_test_proc *p, int code, const char *out_has, const char *err_has) {
  cr_assert_eq(p->exit_code, code, "exit %d (want %d)\nstdout: %s\nstderr: %s", p->exit_code, code, p->out, p->err);
  if (out_has) cr_assert(strstr(p->out, out_has), "stdout lacks '%s':\n%s", out_has, p->out);
  if (err_has) cr_assert(strstr(p->err, err_has), "stderr lacks '%s':\n%s", err_has, p->err);
}

LOOM_TEST(e2e_loop, aot_artifact_runs_and_shows_the_backward_jump) {
  char dir[64] = "/tmp/loom-e2e-loop-XXXXXX", so[128];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(so, sizeof so, "%s/loops.so", dir);
  loom_test_proc p = loom_test_run("%s compile %s -o %s", loom_test_loom_bin(), LOOPS, so);
  expect(&p, 0, "6 functions", NULL);
  loom_test_proc_free(&p);
  /* 2 + 3 + ... : x[i][j] = sin(7i + 13*0) ... loom-run's random inputs; the shapes tell */
  p = loom_test_run("%s %s --fn grow --bind n=9,k0=2", loom_test_loom_run_bin(), so);
  expect(&p, 0, "output 1: f32(11, 4)", "");
  cr_expect(strstr(p.out, "output 2: f32(9, 1, 4)"), "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s %s --fn steady --bind t=13,b=2", loom_test_loom_run_bin(), so);
  expect(&p, 0, "output 0: f32(2, 64)", NULL);
  loom_test_proc_free(&p);
  /* the disassembly: a JMP back to the loop's test, the count compared with ILT */
  p = loom_test_run("%s disasm %s", loom_test_loom_bin(), so);
  expect(&p, 0, "CALLB     SCAN_PUT(", NULL);
  const char *g = strstr(p.out, "func 0 grow");
  cr_assert(g, "%s", p.out);
  const char *j = strstr(g, "JMP       -> ");
  cr_assert(j, "%s", g);
  int target = atoi(j + strlen("JMP       -> "));
  int at = -1;
  for (const char *q = j; q > g && at < 0; q--)
    if (q[-1] == '\n') at = atoi(q);
  cr_expect(target < at, "JMP at %d goes to %d: backward", at, target);
  cr_expect(strstr(g, "ILT"), "%s", g);
  cr_expect(strstr(p.out, "CALLB     ROWS("), "%s", p.out);
  loom_test_proc_free(&p);
  unlink(so);
  rmdir(dir);
}

LOOM_TEST(e2e_loop, a_carried_value_that_breaks_its_shape_is_named_at_run_time) {
  loom_test_proc p = loom_test_run("%s run tests/e2e/data/loop_bad.loom --bind n=2", loom_test_loom_bin());
  expect(&p, 1, NULL, "input 'b' axis 0: expected n = 2");
  cr_expect(strstr(p.err, "got 4") && strstr(p.err, "r = loop"), "%s", p.err);
  loom_test_proc_free(&p);
  /* n = 0: doubling nothing keeps the shape */
  p = loom_test_run("%s run tests/e2e/data/loop_bad.loom --bind n=0", loom_test_loom_bin());
  expect(&p, 0, "output 0: f32(0, 4)", NULL);
  loom_test_proc_free(&p);
}

/* The default pipeline on loops (tests/e2e/data/loops.loom: a growing carried value, an RNN
 * cell, a data-dependent exit, nested loops, a count from a tensor, scan items of a shape the body
 * decides): every stage verified and checked numerically against the module before it. */
LOOM_TEST(e2e_loop, the_default_pipeline_on_loops_is_checked_numerically) {
  loom_test_proc p = loom_test_run("%s opt tests/e2e/data/loops.loom --check-passes=3 --print-after-all | grep '^// '",
                                   loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  cr_assert(strstr(p.out, "input sets agreed after every pass") != NULL, "%s", p.out); /* 3 per function */
  cr_assert(strstr(p.out, "// ---- after fuse ----") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
}

/* dir/model.onnx compiled once; each test_data_set_N's inputs run through it (1 and 2 threads)
 * and every output compared with ONNX Runtime's within rtol 1e-4, atol 1e-5. */
static void check_onnx_sets(const char *dir, int nsets, const char *sym) {
  char path[256];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  e2e_model md = e2e_compile(path);
  loom_onnx_model *om;
  loom_status s = loom_onnx_model_load(path, &om);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  for (int k = 0; k < nsets; k++) {
    loom_arena arena;
    loom_arena_init(&arena, NULL, 0);
    loom_tensor *in[8];
    size_t nin = 0;
    for (size_t i = 0; i < om->graph->n_inputs; i++) {
      if (loom_onnx_graph_find_initializer(om->graph, om->graph->inputs[i].name)) continue;
      loom_onnx_tensor *t;
      snprintf(path, sizeof path, "%s/test_data_set_%d/input_%zu.pb", dir, k, i);
      s = loom_onnx_tensor_load(path, &arena, &t);
      cr_assert_null(s, "%s", loom_status_text(s, 0));
      cr_assert_null(loom_rt_tensor_new(md.rt, t->dtype, (int32_t)t->rank, t->dims, &in[nin]));
      memcpy(in[nin]->data, t->data, t->nbytes);
      nin++;
    }
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      loom_rt_outputs out;
      s = loom_rt_call(md.rt, "main", in, (uint32_t)nin, &out);
      cr_assert_null(s, "%s set %d: %s", dir, k, loom_status_text(s, 0));
      cr_assert_eq(out.count, om->graph->n_outputs);
      for (uint32_t o = 0; o < out.count; o++) {
        loom_onnx_tensor *want;
        snprintf(path, sizeof path, "%s/test_data_set_%d/output_%u.pb", dir, k, o);
        s = loom_onnx_tensor_load(path, &arena, &want);
        cr_assert_null(s, "%s", loom_status_text(s, 0));
        const loom_tensor *y = (const loom_tensor *)out.items[o];
        cr_assert_eq((size_t)y->rank, want->rank, "%s set %d output %u: rank", dir, k, o);
        for (size_t d = 0; d < want->rank; d++) cr_assert_eq(y->shape[d], want->dims[d], "%s set %d output %u axis %zu", dir, k, o, d);
        loom_graph_tensor got = {.dtype = want->dtype, .data = y->data}, ref = {.dtype = want->dtype, .data = want->data};
        for (int64_t e = 0; e < want->numel; e++) {
          double a = loom_graph_tensor_get_f64(&got, (size_t)e), b = loom_graph_tensor_get_f64(&ref, (size_t)e);
          cr_assert(fabs(a - b) <= 1e-5 + 1e-4 * fabs(b), "%s set %d (%u threads) output %u element %lld: %g, ONNX Runtime %g",
                    dir, k, threads, o, (long long)e, a, b);
        }
      }
      loom_rt_outputs_free(&out);
    }
    for (size_t i = 0; i < nin; i++) loom_tensor_release(in[i]);
    loom_arena_destroy(&arena);
  }
  /* one compilation served every length: the model's signature names it */
  char sig[512];
  uint32_t fn = loom_rt_function_find(md.rt, "main");
  cr_assert_lt(fn, loom_rt_function_count(md.rt));
  loom_rt_signature_text(md.rt, fn, sig, sizeof sig);
  cr_expect(strstr(sig, sym), "%s lacks %s", sig, sym);
  loom_onnx_model_free(om);
  e2e_model_free(&md);
}

LOOM_TEST(e2e_loop, onnx_recurrences_of_any_length_from_one_compilation_equal_onnx_runtime) {
  check_onnx_sets("tests/e2e/data/onnx/test_lstm_dyn", 3, "f32(seq, batch, 3)"); /* lengths 1, 5, 17; peepholes, sequence_lens */
  check_onnx_sets("tests/e2e/data/onnx/test_gru_dyn", 3, "f32(seq, batch, 5)");  /* 1, 6, 13; bidirectional, linear_before_reset, clip */
  check_onnx_sets("tests/e2e/data/onnx/test_rnn_dyn", 3, "f32(seq, batch, 2)");  /* 2, 3, 11; reverse, Relu */
  check_onnx_sets("tests/e2e/data/onnx/test_loop_decode", 3, "i64(p)");        /* run-time steps, data-dependent exit */
  check_onnx_sets("tests/e2e/data/onnx/test_scan_dyn", 3, "f32(t, 3)");         /* 1, 4, 23; reverse, output axis 1 */
}
