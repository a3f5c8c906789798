//! src/driver/: the CLI programs, pipeline, frontends and public API.
pub const compiler = [_][]const u8{
    "src/driver/pipeline.c",
    "src/driver/passes.c",
    "src/driver/pass_plugin.c",
    "src/driver/lower_vm.c",
    "src/driver/lower_loop.c",
    "src/driver/lower_host.c",
    "src/driver/hostop.c",
    "src/driver/lower_sig.c",
    "src/driver/compile.c",
    "src/driver/api_bind.c",
    "src/driver/fuzz_ops.c",
    "src/driver/fuzz_ops_cases.c",
    "src/driver/fuzz_ops_cases2.c",
};
/// The `loom` program (links libloom).
pub const loom_main = [_][]const u8{
    "src/driver/cli.c",
    "src/driver/main.c",
    "src/driver/cmd_version.c",
    "src/driver/cmd_selfcheck.c",
    "src/driver/cmd_sym.c",
    "src/driver/cmd_onnx_info.c",
    "src/driver/cmd_conformance.c",
    "src/driver/cmd_import.c",
    "src/driver/cmd_check.c",
    "src/driver/cmd_eval.c",
    "src/driver/cmd_opt.c",
    "src/driver/graph_file.c",
    "src/driver/cmd_disasm.c",
    "src/driver/cmd_compile.c",
    "src/driver/cmd_cache.c",
    "src/driver/cmd_keygen.c",
    "src/driver/cmd_run.c",
    "src/driver/cmd_inspect.c",
    "src/driver/cmd_demo.c",
    "src/driver/cmd_serve.c",
    "src/serve/http.c",
    "src/driver/cmd_fuzz_ops.c",
    "src/driver/run_tool.c",
};
/// The `loom-run` program (links libloomrt only).
pub const loom_run_main = [_][]const u8{
    "src/driver/cli.c",
    "src/driver/loom_run_main.c",
    "src/driver/run_tool.c",
};
