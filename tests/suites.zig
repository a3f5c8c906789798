//! Test suites: one Criterion executable per module (`test-<name>`), each built
//! with ASan + UBSan. `support` is linked into every suite.
pub const support = [_][]const u8{
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
    .{ .name = "vm", .files = &[_][]const u8{
        "tests/vm/test_vm.c",
        "tests/vm/test_threadpool.c",
        "tests/vm/test_exec.c",
        "tests/fuzz/fuzz_exec.c",
        "tests/vm/test_aot.c",
        "tests/vm/test_model.c",
    } },
};
