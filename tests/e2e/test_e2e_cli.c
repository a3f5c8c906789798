/* test_e2e_cli.c — `loom compile` / `loom run` / `loom inspect` and loom-run on compiled
 * artifacts: one artifact for every shape, clear errors for bad shapes, failed guards and
 * modules that cannot be compiled, and a runtime that stays usable after a bad call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e/e2e_util.h"
#include "onnx/pb_writer.h"

static void tmpdir(char *buf, size_t n) {
  snprintf(buf, n, "/tmp/loom-e2e-XXXXXX");
  cr_assert_not_null(mkdtemp(buf));
}

static void expect(loom_test_proc *p, int code, const char *out_has, const char *err_has) {
  cr_assert_eq(p->exit_code, code, "exit %d (want %d)\nstdout: %s\nstderr: %s", p->exit_code, code, p->out, p->err);
  if (out_has) cr_assert(strstr(p->out, out_has), "stdout lacks '%s':\n%s", out_has, p->out);
  if (err_has) cr_assert(strstr(p->err, err_has), "stderr lacks '%s':\n%s", err_has, p->err);
}

LOOM_TEST(e2e_cli, compile_once_run_every_batch_size_with_loom_run) {
  char dir[64], so[128];
  tmpdir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/mlp.so", dir);
  loom_test_proc p = loom_test_run("%s compile models/mlp.loom -o %s", loom_test_loom_bin(), so);
  expect(&p, 0, "3 kernels", NULL);
  loom_test_proc_free(&p);
  static const int bs[] = {1, 2, 7, 64};
  for (size_t i = 0; i < 4; i++) {
    p = loom_test_run("%s %s --bind b=%d", loom_test_loom_run_bin(), so, bs[i]);
    char want[64];
    snprintf(want, sizeof want, "output 0: f32(%d, 10)", bs[i]);
    expect(&p, 0, want, NULL);
    loom_test_proc_free(&p);
  }
  /* a wrong input shape: the error names the input, the axis and both values */
  p = loom_test_run("%s %s --bind b=3 --input 'x=random:(3,783)'", loom_test_loom_run_bin(), so);
  expect(&p, 1, NULL, "input 'x' axis 1: expected 784, got 783");
  loom_test_proc_free(&p);
  unlink(so);
  rmdir(dir);
}

/* `loom run` with string inputs (strings:a,b,c) and results; a string parameter without
 * strings, a string --output and an AOT artifact of string operators are refused by name. */
LOOM_TEST(e2e_cli, loom_run_strings) {
  loom_test_proc p = loom_test_run("%s run tests/e2e/data/strings.loom --fn cat --input 'a=strings:x,h\xc3\xa9,' "
                                   "--input 'b=strings:1,2,'", loom_test_loom_bin());
  expect(&p, 1, NULL, "input 'a' of 'cat': expected rank 2, got 1");
  loom_test_proc_free(&p);
  p = loom_test_run("%s run tests/e2e/data/strings.loom --fn mixed --input 'a=strings:ab,x,' --input 'b=strings:@c.com,x,' "
                    "--input 'w=random:(3)'", loom_test_loom_bin());
  expect(&p, 0, "output 0: string(3) first=[\"ab@c.com\", \"xx\", \"\"]", NULL);
  cr_assert(strstr(p.out, "output 2: i64(3) sum=3 first=[-1, 1, 3]"), "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run tests/e2e/data/strings.loom --fn norm --bind n=2", loom_test_loom_bin());
  expect(&p, 1, NULL, "input 'x' is a string tensor: give --input x=strings:a,b,c");
  loom_test_proc_free(&p);
  p = loom_test_run("%s run tests/e2e/data/strings.loom --fn norm --input x=strings:a --output /tmp/loom-e2e-str.npy",
                    loom_test_loom_bin());
  expect(&p, 1, NULL, "output 0 is a string tensor");
  loom_test_proc_free(&p);
  p = loom_test_run("%s compile tests/e2e/data/strings.loom -o /tmp/loom-e2e-str.so", loom_test_loom_bin());
  expect(&p, 1, NULL, "an AOT artifact (loom-run, libloomrt) cannot hold them yet");
  loom_test_proc_free(&p);
}

/* `loom run --input NAME=...` takes an ONNX input by the name the model gives it, also when the
 * IR spells it otherwise (an exporter's "gpu_0/data:0" is gpu_0_data_0 there); a name that is
 * neither is refused with the function's parameter names. */
LOOM_TEST(e2e_cli, loom_run_takes_onnx_input_names) {
  char dir[64], path[96];
  tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/relu.onnx", dir);
  pb g = {0}, model = {0};
  const char *dims[] = {"n", "3"}, *ins[] = {"gpu_0/data:0", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Relu", "relu0", ins, outs, NULL);
  pb_str(&g, 2, "g");
  pb_value_info(&g, 11, "gpu_0/data:0", 1, 2, dims);
  pb_value_info(&g, 12, "y", 1, 2, dims);
  pb_model(&model, 17, &g);
  cr_assert(pb_write_file(&model, path));
  pb_free(&g);
  pb_free(&model);
  loom_test_proc p = loom_test_run("%s run %s --input 'gpu_0/data:0=random:(2,3)'", loom_test_loom_bin(), path);
  expect(&p, 0, "output 0: f32(2, 3)", NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run %s --input 'gpu_0_data_0=random:(2,3)'", loom_test_loom_bin(), path);
  expect(&p, 0, "output 0: f32(2, 3)", NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run %s --input 'data=random:(2,3)'", loom_test_loom_bin(), path);
  expect(&p, 1, NULL, "--input 'data': 'main' has no such parameter (its parameters: gpu_0_data_0)");
  loom_test_proc_free(&p);
  remove(path);
  rmdir(dir);
}

LOOM_TEST(e2e_cli, loom_run_jit_guard_and_match_cast_errors) {
  loom_test_proc p = loom_test_run("%s run tests/e2e/data/guard.loom --bind n=6,m=1", loom_test_loom_bin());
  expect(&p, 0, "output 0: f32(6)", NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run tests/e2e/data/guard.loom --bind n=6,m=5", loom_test_loom_bin());
  expect(&p, 1, NULL, "guard of 'z' failed: add: operand 0 axis 0 is n, operand 1 axis 0 is m");
  cr_assert(strstr(p.err, "n = 6 from input 'x' axis 0, m = 5 from input 'y' axis 0"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run tests/e2e/data/match_cast.loom --bind n=8,k=4", loom_test_loom_bin());
  expect(&p, 0, "output 0: f32(4, 2)", NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run tests/e2e/data/match_cast.loom --bind n=7,k=3", loom_test_loom_bin());
  expect(&p, 1, NULL, "input 'y' axis 0: expected 2*k, got 7 (7 - 0 is not divisible by 2)");
  loom_test_proc_free(&p);
}

/* A fact legalization cannot prove (the indices' extent within the data's) compiles to a guard:
 * the program runs where it holds, and where it does not the CHECK names op, operands, axis
 * and both values, before the kernel reads anything. */
LOOM_TEST(e2e_cli, legalization_guards_fail_cleanly_where_the_fact_is_false) {
  loom_test_proc p = loom_test_run("%s run tests/e2e/data/guard_gather.loom --bind n=4,k=3", loom_test_loom_bin());
  expect(&p, 0, "output 0: f32(3, 3)", NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s run tests/e2e/data/guard_gather.loom --bind n=4,k=6", loom_test_loom_bin());
  expect(&p, 1, NULL, "guard of 'y' failed: gather_elements: indices (operand 1 'j') axis 0 (k) must not exceed data (operand 0 'x') axis 0 (n)");
  cr_assert(strstr(p.err, "n = 4 from input 'x' axis 0, k = 6 from input 'i' axis 0"), "%s", p.err);
  loom_test_proc_free(&p);
}

/* Small ONNX models with ONNX Runtime's outputs (tests/e2e/data/onnx/make.py): a 3-D Conv,
 * RoBERTa's embeddings (position ids computed from input_ids, GatherElements on them: a guarded
 * legalization), and recurrences and loops of run-time length (LSTM, GRU, RNN, a Loop with a
 * data-dependent exit, a Scan: the graph IR's loop), each at three shapes of its dynamic dims,
 * through the interpreter and compiled. */
LOOM_TEST(e2e_cli, onnx_small_models_equal_onnx_runtime) {
  static const char *const names[] = {"test_conv3d",   "test_roberta_embeddings", "test_lstm_dyn", "test_gru_dyn",
                                      "test_rnn_dyn",  "test_loop_decode",        "test_scan_dyn"};
  for (int compiled = 0; compiled < 2; compiled++) {
    loom_test_proc p = loom_test_run("%s conformance tests/e2e/data/onnx%s", loom_test_loom_bin(), compiled ? " --compiled" : "");
    expect(&p, 0, "7 passed, 0 failed, 0 unsupported of 7", NULL);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      char want[64];
      snprintf(want, sizeof want, "PASS %s\n", names[i]);
      cr_assert(strstr(p.out, want), "%s", p.out);
    }
    loom_test_proc_free(&p);
  }
}

LOOM_TEST(e2e_cli, a_module_that_cannot_compile_names_function_binding_and_pass) {
  char dir[64], so[128];
  tmpdir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/x.so", dir);
  loom_test_proc p = loom_test_run("%s compile tests/e2e/data/unlowered.loom -o %s", loom_test_loom_bin(), so);
  expect(&p, 1, NULL, "function @main, binding 'y': operator 'resize' was not lowered");
  cr_assert(strstr(p.err, "pass 'legalize'"), "%s", p.err);
  cr_assert(strstr(p.err, "legalize: tests/e2e/data/unlowered.loom:5:9: note: kept as an operator: resize: no legalization for "
                          "interpolation of integer data"), "%s", p.err);
  loom_test_proc_free(&p);
  struct stat sb;
  cr_assert_neq(stat(so, &sb), 0, "a failed compile left %s behind", so);
  /* no destination: a usage error, not a crash */
  p = loom_test_run("%s compile models/mlp.loom", loom_test_loom_bin());
  expect(&p, 2, NULL, "-o OUT.so");
  loom_test_proc_free(&p);
  /* an unwritable destination: an error, nothing half-written */
  p = loom_test_run("%s compile models/mlp.loom -o /nonexistent-dir/m.so", loom_test_loom_bin());
  expect(&p, 1, NULL, "/nonexistent-dir/m.so");
  loom_test_proc_free(&p);
  rmdir(dir);
}

/* e8m0 (since issue 22's conformance work) compiles as a storage type, as the other
 * low-precision dtypes do, and runs in eval. */
LOOM_TEST(e2e_cli, low_precision_dtypes_compile_and_run_in_eval) {
  char dir[64], so[128];
  tmpdir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/x.so", dir);
  loom_test_proc p = loom_test_run("%s compile tests/e2e/data/lowp.loom -o %s", loom_test_loom_bin(), so);
  expect(&p, 0, NULL, NULL);
  loom_test_proc_free(&p);
  unlink(so);
  p = loom_test_run("%s eval tests/e2e/data/lowp.loom --input 'x=random:(7)'", loom_test_loom_bin());
  expect(&p, 0, "result: f8e8m0 (7, 1)", NULL);
  loom_test_proc_free(&p);
  /* the 4- and 2-bit integers compile */
  p = loom_test_run("%s compile tests/e2e/data/nibbles.loom -o %s", loom_test_loom_bin(), so);
  expect(&p, 0, NULL, NULL);
  loom_test_proc_free(&p);
  unlink(so);
  rmdir(dir);
}

LOOM_TEST(e2e_cli, inspect_memory_kernels_shapes) {
  loom_test_proc p = loom_test_run("%s inspect models/mlp.loom --memory --kernels --shapes", loom_test_loom_bin());
  /* the GELU is fused into the first linear's epilogue: a, logits, y */
  expect(&p, 0, "memory plan of @main: 3 tensors in 3 storages", NULL);
  cr_assert(strstr(p.out, "storage s0: 1024*b bytes, a .. logits: a"), "%s", p.out);
  cr_assert(strstr(p.out, "peak = 1104*b bytes (without reuse: 1104*b bytes)"), "%s", p.out);
  cr_assert(strstr(p.out, "linear_f32_r2_bias"), "%s", p.out);
  cr_assert(strstr(p.out, "param  x            Tensor[(b, 784), f32]"), "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s inspect models/mlp.loom", loom_test_loom_bin());
  expect(&p, 2, NULL, "--memory");
  loom_test_proc_free(&p);
}

/* The C API: an AOT artifact through loom_rt_open; a bad call leaves it usable; the JIT and
 * the artifact give identical results. */
LOOM_TEST(e2e_cli, artifact_stays_usable_after_a_bad_call_and_equals_the_jit) {
  char dir[64], so[128];
  tmpdir(dir, sizeof dir);
  snprintf(so, sizeof so, "%s/mlp.so", dir);
  loom_compiled *c;
  cr_assert_null(loom_compile_file("models/mlp.loom", NULL, &c));
  loom_status s = loom_compiled_save(c, so);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_rt *aot, *jit;
  cr_assert_null(loom_rt_open(so, NULL, &aot));
  cr_assert_null(loom_compiled_open(c, NULL, &jit));
  static const int64_t wshape[][2] = {{256, 784}, {256, 0}, {10, 256}, {10, 0}};
  loom_tensor *in[5];
  int64_t xs[2] = {5, 784};
  cr_assert_null(loom_rt_tensor_new(aot, LOOM_DTYPE_F32, 2, xs, &in[0]));
  for (int i = 0; i < 4; i++)
    cr_assert_null(loom_rt_tensor_new(aot, LOOM_DTYPE_F32, wshape[i][1] ? 2 : 1, wshape[i], &in[1 + i]));
  for (int i = 0; i < 5; i++)
    for (size_t k = 0; k < loom_tensor_numel(in[i]); k++) ((float *)in[i]->data)[k] = (float)((k * 37 + (size_t)i) % 101) / 101.0f - 0.5f;
  /* bad calls: b1 given where x belongs (rank), w2 where w1 belongs (dims) */
  loom_tensor *bad[5] = {in[2], in[1], in[2], in[3], in[4]}, *bad2[5] = {in[0], in[3], in[2], in[3], in[4]};
  loom_rt_outputs o1, o2;
  s = loom_rt_call(aot, "main", bad, 5, &o1);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_text(s, 0), "'x'") && strstr(loom_status_text(s, 0), "rank 2, got 1"), "%s", loom_status_text(s, 0));
  loom_status_free(s);
  s = loom_rt_call(aot, "main", bad2, 5, &o1);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_text(s, 0), "input 'w1' axis 0: expected 256, got 10"), "%s", loom_status_text(s, 0));
  loom_status_free(s);
  cr_assert_null(loom_rt_call(aot, "main", in, 5, &o1));
  cr_assert_null(loom_rt_call(jit, "main", in, 5, &o2));
  const loom_tensor *a = (const loom_tensor *)o1.items[0], *b = (const loom_tensor *)o2.items[0];
  cr_assert_eq(loom_tensor_numel(a), 50);
  cr_assert_eq(memcmp(a->data, b->data, 50 * sizeof(float)), 0, "the AOT artifact and the JIT differ");
  loom_rt_outputs_free(&o1);
  loom_rt_outputs_free(&o2);
  for (int i = 0; i < 5; i++) loom_tensor_release(in[i]);
  loom_rt_close(aot);
  loom_rt_close(jit);
  loom_compiled_free(c);
  unlink(so);
  rmdir(dir);
}

/* ONNX backend tests through the compiled path (pipeline, VM lowering, JIT): families that
 * cover the transformer and CNN ops; no test may fail and the pass counts may not drop. */
LOOM_TEST(e2e_cli, onnx_conformance_families_through_the_compiled_path) {
  static const struct {
    const char *filter;
    int floor;
  } fams[] = {{"test_gemm", 11}, {"test_matmul", 4}, {"test_softmax", 21}, {"test_relu", 2}, {"test_conv_", 3},
              {"test_layer_normalization", 57}, {"test_where", 2}, {"test_sign", 1}, {"test_bitwise", 15}, {"test_atan", 4},
              {"test_maxpool", 19}, {"test_averagepool", 20}, {"test_lppool", 8}, {"test_convtranspose", 11},
              {"test_scatter", 14}, {"test_gather", 10}, {"test_bitshift", 8}, {"test_bitcast", 10}, {"test_gridsample", 18},
              {"test_det", 2}, {"test_dft", 6},
              /* run-time operands: dims bound from data (tensor_to_shape, match_cast) before the program */
              {"test_reduce_sum", 30}, {"test_reduce_max", 10}, {"test_top_k", 7}, {"test_tril", 9}, {"test_triu", 9},
              {"test_split", 16}, {"test_expand", 2}, {"test_constantofshape", 3}, {"test_cumsum", 9}, {"test_cumprod", 9},
              {"test_reshape", 10}, {"test_unsqueeze", 7}, {"test_squeeze", 2}, {"test_slice", 8}, {"test_constant_pad", 3},
              {"test_range", 4}, {"test_nonzero", 1}, {"test_compress", 4}, {"test_hannwindow", 4}, {"test_unique", 6},
              {"test_nonmax", 10}, {"test_resize", 39}, {"test_upsample", 1},
              /* the 4- and 2-bit integers, float8 / float4, e8m0, unsaturated float8 */
              {"test_cast_", 60}, {"test_castlike_no_saturate", 16}, {"test_quantizelinear", 13}, {"test_dequantizelinear", 14},
              /* training optimizers (ai.onnx.preview.training), batch norm's training mode, and image ops
               * with run-time shape operands (CenterCropPad, AffineGrid, Col2Im, MaxUnpool, Pad's modes) */
              {"test_adagrad", 2}, {"test_adam", 2}, {"momentum", 3}, {"test_batchnorm", 4}, {"test_center_crop_pad", 12},
              {"test_affine_grid", 5}, {"test_col2im", 5}, {"test_maxunpool", 2}, {"test_edge_pad", 1}, {"test_reflect_pad", 1},
              {"test_wrap_pad", 1},
              /* TfIdfVectorizer and the ai.onnx.ml ops built from graph ops at import; Dropout's training mode */
              {"test_tfidfvectorizer", 7}, {"test_ai_onnx_ml_binarizer", 1}, {"test_ai_onnx_ml_array_feature", 1},
              {"test_ai_onnx_ml_tree_ensemble", 2}, {"test_training_dropout", 6},
              /* sequences and optionals known only at run time: list values (graph inputs and outputs,
               * SequenceMap and Loop over a list's length, SplitToSequence with a run-time split, If over lists) */
              {"test_sequence_", 14}, {"test_optional", 11}, {"test_split_to_sequence", 3}, {"test_identity", 3},
              {"test_loop13_seq", 1}, {"test_if_seq", 1}, {"test_if_opt", 1}, {"test_loop16_seq_none", 1},
              /* string tensors: the VM's host operators (docs/vm.md "Host operators") */
              {"test_string_", 11}, {"test_strnormalizer", 6}, {"test_regex_full_match", 3}, {"test_equal_string", 2},
              {"test_ai_onnx_ml_label_encoder", 4}};
  for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++) {
    loom_test_proc p = loom_test_run("%s conformance ../shared/conformance/onnx-backend-1.22/node --compiled --filter %s",
                                     loom_test_loom_bin(), fams[i].filter);
    int pass = 0, fail = -1, unsup = 0, total = 0;
    const char *last = NULL;
    for (const char *q = p.out; (q = strstr(q, " passed, ")); q++) last = q;
    cr_assert_not_null(last, "%s: no totals:\n%s%s", fams[i].filter, p.out, p.err);
    while (last > p.out && last[-1] != '\n') last--;
    cr_assert_eq(sscanf(last, "%d passed, %d failed, %d unsupported of %d", &pass, &fail, &unsup, &total), 4, "%s", last);
    cr_assert_eq(fail, 0, "%s: compiled failures:\n%s", fams[i].filter, p.out);
    cr_assert_geq(pass, fams[i].floor, "%s: %d passed (floor %d)\n%s", fams[i].filter, pass, fams[i].floor, p.out);
    cr_log_info("compiled conformance %s: %d passed, %d unsupported", fams[i].filter, pass, unsup);
    loom_test_proc_free(&p);
  }
}

/* An AOT artifact carries the signatures of the externs it calls: a user kernel (C ABI,
 * library next to the artifact) and BLAS offload both run under loom-run, equal to the JIT. */
LOOM_TEST(e2e_cli, aot_artifacts_carry_their_externs) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  loom_test_proc p = loom_test_run("cc -O2 -shared -fPIC -o %s/scale_rows.so models/user_kernel/scale_rows.c && "
                                   "cp models/user_kernel/scale_rows.loom %s/ && %s compile %s/scale_rows.loom -o %s/m.so",
                                   dir, dir, loom_test_loom_bin(), dir, dir);
  expect(&p, 0, "2 kernels", NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s %s/m.so --bind n=3,m=5", loom_test_loom_run_bin(), dir);
  expect(&p, 0, "output 0: f32(3, 5)", NULL);
  loom_test_proc q = loom_test_run("%s run %s/scale_rows.loom --bind n=3,m=5", loom_test_loom_bin(), dir);
  expect(&q, 0, "output 0: f32(3, 5)", NULL);
  cr_assert_str_eq(p.out, q.out, "the artifact and the JIT differ:\n%s\n%s", p.out, q.out);
  loom_test_proc_free(&p);
  loom_test_proc_free(&q);
  /* the library missing next to the artifact: a load-time error naming extern and symbol */
  p = loom_test_run("rm %s/scale_rows.so && %s %s/m.so --bind n=3,m=5", dir, loom_test_loom_run_bin(), dir);
  expect(&p, 1, NULL, "scale_rows");
  loom_test_proc_free(&p);
  /* BLAS offload in an artifact */
  p = loom_test_run("%s compile models/mlp.loom --offload -o %s/o.so && %s %s/o.so --bind b=33", loom_test_loom_bin(), dir,
                    loom_test_loom_run_bin(), dir);
  expect(&p, 0, "output 0: f32(33, 10)", NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("rm -rf %s", dir);
  loom_test_proc_free(&p);
}
