//! Test suites: one Criterion executable per module (`test-<name>`), each built
//! with ASan + UBSan. `support` is linked into every suite.
pub const support = [_][]const u8{
    "tests/support/loom_fuzz.c",
    "tests/support/loom_test.c",
};
pub const suites = .{
    .{ .name = "base", .files = &[_][]const u8{
        "tests/base/test_alloc.c",
        "tests/base/test_arena.c",
        "tests/base/test_diag.c",
        "tests/base/test_dtype.c",
        "tests/base/test_intern.c",
        "tests/base/test_map.c",
        "tests/base/test_status.c",
        "tests/base/test_strbuf.c",
        "tests/base/test_vec.c",
    } },
    .{ .name = "cli", .files = &[_][]const u8{
        "tests/cli/test_cli.c",
    } },
    .{ .name = "symbolic", .files = &[_][]const u8{
        "tests/symbolic/test_sym_prop.c",
        "tests/symbolic/test_sym_rules.c",
        "tests/symbolic/test_sym_cli.c",
    } },
    .{ .name = "tensorprog", .files = &[_][]const u8{
        "tests/tensorprog/tp_test_util.c",
        "tests/tensorprog/test_tp_classify.c",
        "tests/tensorprog/test_tp_fuse.c",
        "tests/tensorprog/test_tp_fuzz.c",
        "tests/tensorprog/test_tp_gen.c",
        "tests/tensorprog/test_tp_interp.c",
        "tests/tensorprog/test_tp_schedule.c",
        "tests/tensorprog/test_tp_text.c",
        "tests/tensorprog/test_tp_variants.c",
        "tests/tensorprog/test_tp_verify.c",
    } },
    .{ .name = "onnx", .files = &[_][]const u8{
        "tests/onnx/test_onnx_model.c",
        "tests/onnx/test_onnx_tensor.c",
        "tests/onnx/test_onnx_conformance.c",
        "tests/onnx/test_conformance_run.c",
        "tests/onnx/test_onnx_import_cli.c",
        "tests/onnx/test_onnx_import_misc.c",
        "tests/fuzz/fuzz_onnx_model.c",
        "tests/fuzz/test_fuzz_onnx.c",
    } },
    .{ .name = "graph", .files = &[_][]const u8{
        "tests/graph/test_infer.c",
        "tests/graph/test_text.c",
        "tests/graph/test_verify.c",
        "tests/graph/test_interp.c",
        "tests/graph/test_interp_misc.c",
        "tests/graph/test_models.c",
        "tests/fuzz/fuzz_graph_parse.c",
    } },
    .{ .name = "legalize", .files = &[_][]const u8{
        "tests/legalize/test_legalize.c",
        "tests/legalize/test_legalize_models.c",
        "tests/legalize/test_opt_cli.c",
    } },
    .{ .name = "cpu", .files = &[_][]const u8{
        "tests/tensorprog/tp_test_util.c",
        "tests/cpu/cpu_test_util.c",
        "tests/cpu/test_cpu_diff.c",
    } },
    .{ .name = "libcall", .files = &[_][]const u8{
        "tests/libcall/test_libcall.c",
        "tests/libcall/test_decl.c",
    } },
    .{ .name = "vm", .files = &[_][]const u8{
        "tests/vm/test_vm.c",
        "tests/vm/test_threadpool.c",
        "tests/vm/test_exec.c",
        "tests/fuzz/fuzz_exec.c",
        "tests/vm/test_aot.c",
        "tests/vm/test_model.c",
    } },
    .{ .name = "e2e", .files = &[_][]const u8{
        "tests/e2e/e2e_util.c",
        "tests/e2e/test_e2e_models.c",
        "tests/e2e/test_e2e_cli.c",
        "tests/e2e/test_memplan.c",
    } },
    .{ .name = "passes", .files = &[_][]const u8{
        "tests/passes/test_passes.c",
        "tests/passes/test_fuse.c",
    } },
};
