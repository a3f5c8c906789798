//! libloomrt: the runtime library, from this one list. Every file here is runtime code (no
//! LLVM, no GMP, no protobuf-c); libloom is this list plus each module's `compiler` list.
//! Layers, bottom up (docs/architecture.md, section 1; scripts/check-layers keeps them):
//!   src/base -> vm (VM, executables, thread pool, kernel ABI, device and extern interfaces,
//!   the CPU device) -> libcall (run side: the extern provider, libffi) and the devices of
//!   targets/ (targets/cuda, built with CUDA only) -> src/runtime (loomrt.h's API).
pub const files = [_][]const u8{
    // src/base/
    "src/base/alloc.c",
    "src/base/arena.c",
    "src/base/clock.c",
    "src/base/diag.c",
    "src/base/dtype.c",
    "src/base/file.c",
    "src/base/file_write.c",
    "src/base/hash.c",
    "src/base/intern.c",
    "src/base/log.c",
    "src/base/lowp.c",
    "src/base/map.c",
    "src/base/npy.c",
    "src/base/status.c",
    "src/base/strbuf.c",
    "src/base/vec.c",
    // vm/
    "vm/object.c",
    "vm/artifact.c",
    "vm/device_cpu.c",
    "vm/threadpool.c",
    "vm/exec_build.c",
    "vm/exec_io.c",
    "vm/verify.c",
    "vm/verify_flow.c",
    "vm/kernel_sig.c",
    "vm/interp.c",
    "vm/disasm.c",
    "vm/symeval.c",
    // libcall/ (run side)
    "libcall/call.c",
    "libcall/blas.c",
    // the same GEMMs on GPU memory: cuBLAS through dlopen (builds everywhere)
    "libcall/cublas.c",
    "libcall/sigtext.c",
    "libcall/provider.c",
    // devices outside vm/ (each compiles to nothing without its toolkit: LOOM_HAVE_CUDA)
    "targets/cuda/device.c",
    // the CUDA driver API through dlopen, and the CUDA device of vm/device.h on it (both build
    // without the toolkit; tests/fuzz/run_libfuzzer reads this list: one name per line, no comment)
    "targets/cuda/driver.c",
    "targets/cuda/device_cuda.c",
    // src/runtime/
    "src/runtime/rt_api.c",
};
