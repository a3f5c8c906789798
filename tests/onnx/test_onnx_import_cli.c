/* test_onnx_import_cli.c — `loom import MODEL.onnx -o OUT.loom` and the commands that take a
 * .onnx file directly (check, eval): the written text re-parses; a failed import leaves no
 * output file and names the node; ONNX names that are not IR identifiers are renamed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/npy.h"
#include "frontend/onnx/onnx_import.h"
#include "onnx/onnx_test.h"

static bool exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

LOOM_TEST(onnx, import_cli_writes_text_that_checks) {
  char out[] = "/tmp/loom_import_XXXXXX";
  int fd = mkstemp(out);
  cr_assert_geq(fd, 0);
  close(fd);
  loom_test_proc p = loom_test_run("%s import %s/test_sce_mean_weight/model.onnx -o %s", loom_test_loom_bin(), NODE_DIR, out);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("cat %s", out);
  cr_assert(strstr(p.out, "log_softmax(x, axis=1)") && strstr(p.out, "gather_elements("), "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s check %s", loom_test_loom_bin(), out);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "0 unknown dims"), "%s", p.out);
  loom_test_proc_free(&p);
  remove(out);
}

LOOM_TEST(onnx, check_and_eval_take_onnx_directly) {
  loom_test_proc p = loom_test_run("%s check %s/test_gemm_default_single_elem_vector_bias/model.onnx", loom_test_loom_bin(), NODE_DIR);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "matmul(a, b)"), "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s eval %s/test_gemm_default_single_elem_vector_bias/model.onnx --input 'a=random:(3,7)' "
                    "--input 'b=random:(7,3)' --input 'c=random:(1)'",
                    loom_test_loom_bin(), NODE_DIR);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
}

LOOM_TEST(onnx, import_cli_failure_leaves_no_file) {
  char dir[] = "/tmp/loom_import_dir_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char out[128];
  snprintf(out, sizeof out, "%s/out.loom", dir);
  /* an unsupported op: the node is named, nothing is written */
  loom_test_proc p = loom_test_run("%s import %s/test_bernoulli/model.onnx -o %s", loom_test_loom_bin(), NODE_DIR, out);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "node 0 (Bernoulli): op type Bernoulli is not supported"), "%s", p.err);
  cr_assert(!exists(out), "a failed import left %s", out);
  loom_test_proc_free(&p);
  /* a truncated file */
  p = loom_test_run("head -c 100 %s/test_add/model.onnx > %s/cut.onnx && %s import %s/cut.onnx -o %s", NODE_DIR, dir,
                    loom_test_loom_bin(), dir, out);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "truncated"), "%s", p.err);
  cr_assert(!exists(out));
  loom_test_proc_free(&p);
  /* not an .onnx path */
  p = loom_test_run("%s import %s/cut.loom", loom_test_loom_bin(), dir);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "expected an ONNX model"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("rm -rf %s", dir);
  loom_test_proc_free(&p);
}

LOOM_TEST(onnx, import_renames_names_that_are_not_identifiers) {
  pb g = {0}, model = {0};
  const char *ins[] = {"0/in", NULL}, *outs[] = {"t0", NULL}, *ins2[] = {"t0", NULL}, *outs2[] = {"return", NULL};
  pb_node(&g, "Relu", NULL, ins, outs, NULL);
  pb_node(&g, "Neg", NULL, ins2, outs2, NULL);
  const char *dims[] = {"n"};
  pb_value_info(&g, 11, "0/in", 1, 1, dims);
  pb_value_info(&g, 12, "return", 1, 1, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &m);
  pb_free(&model);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_graph_module *gm = NULL;
  s = loom_onnx_import(m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(gm, &sb);
  cr_assert(strstr(sb.data, "v0_in: Tensor[(n,), f32]") && strstr(sb.data, "t0_: ") && strstr(sb.data, "return_: "), "%s", sb.data);
  loom_source src = {"printed", sb.data, sb.len};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *back = NULL;
  s = loom_graph_parse(&src, &dl, &back);
  cr_assert(s == LOOM_OK, "%s\n%s", loom_status_text(s, 1), sb.data);
  loom_graph_module_destroy(back);
  loom_diag_list_destroy(&dl);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* Expand with its shape fed at run time: the shape's values become symbolic vars, bound when
 * @main runs; a negative value is a clear error, not a wrong answer. */
LOOM_TEST(onnx, runtime_shape_operand_binds_symbols) {
  loom_onnx_model *m;
  loom_status s = loom_onnx_model_load(NODE_DIR "/test_expand_dim_changed/model.onnx", &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_graph_module *gm = NULL;
  s = loom_onnx_import(m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  for (int neg = 0; neg < 2; neg++) {
    loom_graph_value args[2];
    int64_t xs[2] = {3, 1}, ss[1] = {3};
    cr_assert(loom_graph_value_tensor(LOOM_DTYPE_F32, 2, xs, &args[0]) == LOOM_OK);
    cr_assert(loom_graph_value_tensor(LOOM_DTYPE_I64, 1, ss, &args[1]) == LOOM_OK);
    for (size_t i = 0; i < 3; i++) loom_graph_tensor_set_f64(&args[0].t, i, (double)i);
    int64_t shape[3] = {2, 1, neg ? -6 : 6};
    for (size_t i = 0; i < 3; i++) loom_graph_tensor_set_i64(&args[1].t, i, shape[i]);
    loom_graph_value res;
    s = loom_graph_eval(gm, "main", 2, args, NULL, &res);
    if (neg) {
      EXPECT_ERROR(s, INVALID_ARGUMENT, "element 2 is -6; a shape holds dims >= 0");
    } else {
      cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
      cr_assert_eq(res.t.ndim, 3);
      cr_assert(res.t.shape[0] == 2 && res.t.shape[1] == 3 && res.t.shape[2] == 6);
      cr_assert_eq(loom_graph_tensor_get_f64(&res.t, 6 * 2 + 5), 2.0); /* [0][2][5] = data[2][0] */
      loom_graph_value_free(&res);
    }
    loom_graph_value_free(&args[0]);
    loom_graph_value_free(&args[1]);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* Runs a shell command line and asserts it exits 0; returns its stdout (malloc'd). */
static char *ok_run(const char *cmd) {
  loom_test_proc p = loom_test_run("%s", cmd);
  cr_assert_eq(p.exit_code, 0, "%s\n%s%s", cmd, p.out, p.err);
  char *out = p.out;
  p.out = NULL;
  loom_test_proc_free(&p);
  return out;
}

/* `loom import -o m.loom` writes m.safetensors beside it and the text refers to it by name; running
 * the module equals the inline form (--inline-weights) bit for bit and the ORT reference; the
 * artifact embeds the weights; a missing, truncated or mismatched weights file is refused by name. */
LOOM_TEST(onnx, import_writes_weights_beside_the_text) {
  char dir[] = "/tmp/loom_import_w_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  const char *tt = "models/tiny_transformer";
  char cmd[2048], path[600], *L = realpath(loom_test_loom_bin(), NULL); /* absolute: one run is from / */
  cr_assert(L, "no %s", loom_test_loom_bin());
  snprintf(cmd, sizeof cmd, "%s import %s/model.onnx -o %s/m.loom && %s import %s/model.onnx -o %s/i.loom --inline-weights", L,
           tt, dir, L, tt, dir);
  free(ok_run(cmd));
  snprintf(path, sizeof path, "%s/m.safetensors", dir);
  cr_assert(exists(path));
  snprintf(path, sizeof path, "%s/i.safetensors", dir);
  cr_assert(!exists(path), "--inline-weights wrote %s", path);
  snprintf(cmd, sizeof cmd, "cat %s/m.loom", dir);
  char *text = ok_run(cmd);
  cr_assert(strstr(text, "const @tok_weight: Tensor[(256, 64), f32] = weights(\"m.safetensors\", \"tok_weight\")"), "%s", text);
  cr_assert_lt(strlen(text), 64 * 1024, "the weights are still in the text");
  free(text);
  snprintf(cmd, sizeof cmd, "grep -c 'weights(' %s/i.loom || true", dir);
  text = ok_run(cmd);
  cr_assert_str_eq(text, "0\n");
  free(text);
  /* Run both (from another directory: the path is relative to the module) and compare. */
  snprintf(cmd, sizeof cmd,
           "T=$(pwd)/%s/ref_2x7_tokens.npy; cd / && %s run %s/m.loom --input tokens=@$T --output %s/a.npy && "
           "%s run %s/i.loom --input tokens=@$T --output %s/b.npy && cmp %s/a.npy %s/b.npy",
           tt, L, dir, dir, L, dir, dir, dir, dir);
  free(ok_run(cmd));
  loom_npy got, want;
  snprintf(path, sizeof path, "%s/a.npy", dir);
  cr_assert(!loom_npy_read(path, &got));
  cr_assert(!loom_npy_read("models/tiny_transformer/ref_2x7_logits.npy", &want));
  cr_assert_eq(got.nbytes, want.nbytes);
  for (size_t i = 0; i < got.nbytes / 4; i++)
    cr_assert(fabsf(((const float *)got.data)[i] - ((const float *)want.data)[i]) <= 1e-5f, "logit %zu", i);
  loom_npy_free(&got), loom_npy_free(&want);
  /* The artifact embeds the weights: it runs with the weights file gone. */
  snprintf(cmd, sizeof cmd,
           "%s compile %s/m.loom -o %s/m.so && mv %s/m.safetensors %s/keep.safetensors && "
           "%s %s/m.so --input tokens=@%s/ref_2x7_tokens.npy --output %s/c.npy && cmp %s/a.npy %s/c.npy",
           L, dir, dir, dir, dir, loom_test_loom_run_bin(), dir, tt, dir, dir, dir);
  free(ok_run(cmd));
  /* A missing weights file, a truncated one, a mismatched declaration. */
  loom_test_proc p = loom_test_run("%s check %s/m.loom", L, dir);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "constant @tok_weight") && strstr(p.err, "m.safetensors") && strstr(p.err, "No such file"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("head -c 5000 %s/keep.safetensors > %s/m.safetensors && %s check %s/m.loom", dir, dir, L, dir);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "m.safetensors") && strstr(p.err, "run past the data section"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("cp %s/keep.safetensors %s/m.safetensors && sed -i 's/Tensor\\[(256, 64), f32\\] = weights/Tensor[(256, 64), f16] = weights/' %s/m.loom && %s check %s/m.loom",
                    dir, dir, dir, L, dir);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "constant @tok_weight is declared Tensor[(256, 64), f16]") && strstr(p.err, "[256, 64] of F32"), "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("rm -rf %s", dir);
  loom_test_proc_free(&p);
  free(L);
}

/* A conformance model with initializers: the imported module (weights in a file) computes what the
 * ONNX model does, bit for bit (the ONNX path is checked against the expected outputs by the
 * conformance suite). */
LOOM_TEST(onnx, import_weights_conformance_model) {
  char dir[] = "/tmp/loom_import_wc_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  const char *L = loom_test_loom_bin(), *model = "../shared/conformance/onnx-backend-1.22/pytorch-converted/test_Conv2d/model.onnx";
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "%s import %s -o %s/c.loom && grep -q 'weights(\"c.safetensors\", \"v1\")' %s/c.loom && "
           "%s run %s --input 'v0=random:(2,3,7,5)' --output %s/a.npy && "
           "%s run %s/c.loom --input 'v0=random:(2,3,7,5)' --output %s/b.npy && cmp %s/a.npy %s/b.npy",
           L, model, dir, dir, L, model, dir, L, dir, dir, dir, dir);
  free(ok_run(cmd));
  loom_test_proc p = loom_test_run("rm -rf %s", dir);
  loom_test_proc_free(&p);
}
