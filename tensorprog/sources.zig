//! tensorprog/: loop-level tensor programs (compiler side).
pub const runtime = [_][]const u8{};
pub const compiler = [_][]const u8{
    "tensorprog/classify.c",
    "tensorprog/fuse.c",
    "tensorprog/gen_common.c",
    "tensorprog/gen_elemwise.c",
    "tensorprog/gen_image.c",
    "tensorprog/gen_nn.c",
    "tensorprog/gen_reduce.c",
    "tensorprog/gen_scatter.c",
    "tensorprog/gen_shape.c",
    "tensorprog/gen_window.c",
    "tensorprog/interp.c",
    "tensorprog/ir.c",
    "tensorprog/parse.c",
    "tensorprog/print.c",
    "tensorprog/rewrite.c",
    "tensorprog/schedule.c",
    "tensorprog/variants.c",
    "tensorprog/schedule_cpu.c",
    "tensorprog/verify.c",
    "tensorprog/schedule_mem.c",
};
