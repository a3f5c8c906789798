// build.zig — how Loom is built. Read top to bottom:
//   1. the manifest (version, the pinned Zig version) and the shared C flags;
//   2. the source lists: libloomrt's one list (src/runtime/sources.zig), and each compiler
//      module's own list in its sources.zig;
//   3. libloomrt (runtime only: no LLVM, no GMP) and libloom (everything);
//   4. the programs `loom` and `loom-run`;
//   5. `zig build test`: every suite rebuilt with AddressSanitizer + UBSan and run;
//      `zig build test-tsan`: the runtime's suites (vm, e2e, concurrency) with ThreadSanitizer.
//
// Options: -Doptimize=Debug|ReleaseSafe|ReleaseFast, -Dcuda=auto|on|off, -Dsuite=NAME;
// arguments after `--` go to the test suites (Criterion: --filter 'suite/test*', --verbose).
const std = @import("std");
const builtin = @import("builtin");

// ---------------------------------------------------------------------------
// 1. Manifest and flags
// ---------------------------------------------------------------------------

/// build.zig.zon is the one place the version and the Zig pin are written.
const manifest: struct {
    name: @TypeOf(.enum_literal),
    version: []const u8,
    fingerprint: u64,
    minimum_zig_version: []const u8,
    dependencies: struct {},
    paths: []const []const u8,
} = @import("build.zig.zon");

/// One warning set for every C file of the project (tests relax nothing but
/// -Wmissing-prototypes, which Criterion's macros trip).
const warning_flags = [_][]const u8{
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wstrict-prototypes",
    "-Wvla",
    "-Wshadow",
    "-Wimplicit-fallthrough",
    "-Wpointer-arith",
    "-Wundef",
    "-D_GNU_SOURCE",
};
const library_only_flags = [_][]const u8{"-Wmissing-prototypes"};

/// Generated code (protoc-c output) is not ours to fix: it gets the language
/// standard and no warnings, and nothing else of the project's flag list.
const generated_flags = [_][]const u8{ "-std=c11", "-w" };

/// The ONNX schema comes from the system (package libonnx-dev); it is never copied into the repo.
const onnx_proto_dir = "/usr/include/onnx";

/// The test build: ASan + UBSan with clang-19's runtime (Zig 0.14 bundles
/// LLVM 19, so its instrumentation matches Debian's libclang-rt-19-dev).
/// UBSan's `function` check is off: before an indirect call it reads a type signature just
/// before the callee, which JIT-compiled and dlopen'ed kernels do not carry (a kernel placed at
/// the start of a page made that read fault).
const sanitizer_flags = [_][]const u8{
    "-fsanitize=address,undefined",
    "-fno-sanitize=function",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-DLOOM_SANITIZED=1",
};
const clang_rt_dir = "/usr/lib/llvm-19/lib/clang/19/lib/linux";
const asan_runtime = clang_rt_dir ++ "/libclang_rt.asan-x86_64.so";

/// The ThreadSanitizer build (`zig build test-tsan`): the runtime's suites, where threads
/// meet (the thread pool, concurrent calls on one runtime), built with TSan alone (it cannot
/// be combined with ASan), optimised so the suites run in CI time, and run with
/// tsan_options: the first report ends the test's process with exit code 66, which
/// Criterion counts as a crash, so any report fails the run. LOOM_TSAN turns off the
/// per-test LeakSanitizer check, which only the ASan runtime has.
const tsan_flags = [_][]const u8{
    "-fsanitize=thread",
    "-fno-omit-frame-pointer",
    "-DLOOM_SANITIZED=1",
    "-DLOOM_TSAN=1",
};
const tsan_runtime = clang_rt_dir ++ "/libclang_rt.tsan-x86_64.so";
const tsan_options = "halt_on_error=1:exitcode=66:second_deadlock_stack=1";
/// The suites built with TSan, and the Criterion filter each runs (all of it unless given).
const tsan_suites = .{
    .{ .name = "vm", .filter = "" },
    .{ .name = "concurrency", .filter = "" },
    // Not under TSan (both run in the ASan build): fuzz-ops forks a multi-threaded process and
    // starts threads in the child, which TSan does not support; the ONNX conformance families
    // compile ~1,000 modules one at a time (5 minutes under TSan) and start no threads of
    // their own beyond what every other e2e test does.
    .{ .name = "e2e", .filter = "!(fuzz_ops/interpreter_equals_compiled_for_every_family|e2e_cli/onnx_conformance_families_through_the_compiled_path)" },
};

const llvm_prefix = "/usr/lib/llvm-19";
const cuda_prefix = "/usr/local/cuda";

// ---------------------------------------------------------------------------
// 2. Source lists: libloomrt from one list (src/runtime/sources.zig); each compiler
//    module owns its `compiler` list (libloom = the runtime list + those).
// ---------------------------------------------------------------------------

const runtime_sources = @import("src/runtime/sources.zig").files;
const modules = .{
    @import("symbolic/sources.zig"),
    @import("graph/sources.zig"),
    @import("tensorprog/sources.zig"),
    @import("libcall/sources.zig"),
    @import("targets/cpu/sources.zig"),
    @import("src/driver/sources.zig"),
    @import("src/serve/sources.zig"),
    @import("src/frontend/onnx/sources.zig"),
};
const cuda_sources = @import("targets/cuda/sources.zig");
comptime {
    for (modules) |m| if (@hasDecl(m, "runtime")) @compileError("runtime files belong in src/runtime/sources.zig, libloomrt's one list");
}
const test_suites = @import("tests/suites.zig").suites;

const CudaMode = enum { auto, on, off };

const Variant = enum { normal, sanitized, tsan };

const Config = struct {
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    cuda: bool,
    /// Directory holding onnx.pb-c.{c,h}, generated by protoc-c at build time.
    onnx_gen: std.Build.LazyPath,
};

pub fn build(b: *std.Build) void {
    if (!std.mem.eql(u8, builtin.zig_version_string, manifest.minimum_zig_version)) {
        std.debug.panic("Loom pins Zig {s} (build.zig.zon); this is Zig {s}. Run scripts/setup and use scripts/zig.", .{ manifest.minimum_zig_version, builtin.zig_version_string });
    }
    const cfg = Config{
        .b = b,
        .target = b.standardTargetOptions(.{}),
        .optimize = b.standardOptimizeOption(.{}),
        .cuda = detectCuda(b),
        .onnx_gen = generateOnnxProto(b),
    };

    // 3. Libraries and 4. programs, normal variant.
    const libs = addLibraries(cfg, .normal);
    b.installArtifact(libs.rt);
    b.installArtifact(libs.full);
    const loom_exe = addProgram(cfg, "loom", &@import("src/driver/sources.zig").loom_main, libs.full, .normal);
    loom_exe.rdynamic = true; // pass plugins (src/loom_pass.h) call Loom's functions in the program
    loom_exe.root_module.linkSystemLibrary("microhttpd", .{}); // `loom serve`'s HTTP front (src/serve/http.c) only
    b.installArtifact(loom_exe);
    b.installArtifact(addProgram(cfg, "loom-run", &@import("src/driver/sources.zig").loom_run_main, libs.rt, .normal));

    // The shared library of the Python package (python/: loom/_capi.py loads it with ctypes),
    // built on request: `zig build python -Doptimize=ReleaseFast` -> zig-out/lib/libloom.so.
    const py_step = b.step("python", "Build libloom.so (the whole C API as a shared library) for the Python package");
    py_step.dependOn(&b.addInstallArtifact(addSharedLibrary(cfg), .{}).step);
    // With the running Python's include directory (the package's build backend passes it), also
    // the package's call-path extension, python/loom/_fastcall.c -> lib/libloom_fastcall.so.
    if (b.option([]const u8, "python-include", "Python's include directory: also build the loom._fastcall extension")) |inc| {
        py_step.dependOn(&b.addInstallArtifact(addPythonExtension(cfg, inc), .{}).step);
    }

    // Benchmark programs (bench/sources.zig), built on request.
    const bench_step = b.step("bench", "Build the benchmark programs (use -Doptimize=ReleaseFast)");
    inline for (@import("bench/sources.zig").programs) |prog| {
        const lib = if (prog.runtime_only) libs.rt else libs.full;
        const exe = addProgram(cfg, prog.name, prog.files, lib, .normal);
        // Optional `.system_libs` (e.g. openblas for the peer comparison), linked into that program only.
        if (@hasField(@TypeOf(prog), "system_libs")) {
            inline for (prog.system_libs) |l| exe.root_module.linkSystemLibrary(l, .{ .use_pkg_config = .no });
        }
        bench_step.dependOn(&b.addInstallArtifact(exe, .{}).step);
    }

    // Examples: the out-of-tree pass plugin (examples/passes/, src/loom_pass.h).
    const examples_step = b.step("examples", "Build the examples (zig-out/lib/libloom_example_passes.so)");
    const example_passes = b.addInstallArtifact(addPassPlugin(cfg, "loom_example_passes", "examples/passes/twice_to_add.c", &.{}), .{});
    examples_step.dependOn(&example_passes.step);
    // Plugins the CLI tests load: the example, and broken ones (tests/cli/bad_plugin.c).
    const test_plugins = [_]struct { name: []const u8, define: []const u8 }{
        .{ .name = "loom_test_plugin_abi", .define = "-DBAD_ABI" },
        .{ .name = "loom_test_plugin_taken", .define = "-DBAD_TAKEN_NAME" },
        .{ .name = "loom_test_plugin_wrong", .define = "-DBAD_WRONG_REWRITE" },
        .{ .name = "loom_test_plugin_noentry", .define = "-DBAD_NO_ENTRY" },
    };
    const plugins_step = b.step("test-plugins", "Build the pass plugins the CLI tests load (into zig-out/lib)");
    plugins_step.dependOn(&example_passes.step);
    inline for (test_plugins) |tp| {
        const lib = addPassPlugin(cfg, tp.name, "tests/cli/bad_plugin.c", &.{tp.define});
        plugins_step.dependOn(&b.addInstallArtifact(lib, .{}).step);
    }
    // The stand-in CUDA driver the cuda suite runs the CUDA device on without a GPU (tests/cuda/fake_driver.c).
    plugins_step.dependOn(&b.addInstallArtifact(addPassPlugin(cfg, "loom_test_fakecuda", "tests/cuda/fake_driver.c", &.{}), .{}).step);

    // 5. Tests, sanitized. Suites run one after another so their output reads in order.
    const test_step = b.step("test", "Build every test suite with ASan+UBSan and run it");
    const san = addLibraries(cfg, .sanitized);
    const loom_san_exe = addProgram(cfg, "loom-san", &@import("src/driver/sources.zig").loom_main, san.full, .sanitized);
    loom_san_exe.rdynamic = true;
    loom_san_exe.root_module.linkSystemLibrary("microhttpd", .{});
    const loom_san = b.addInstallArtifact(loom_san_exe, .{});
    const loom_run_san = b.addInstallArtifact(addProgram(cfg, "loom-run-san", &@import("src/driver/sources.zig").loom_run_main, san.rt, .sanitized), .{});
    var previous: ?*std.Build.Step = null;
    const only_suite = b.option([]const u8, "suite", "Build and run only this test suite (e.g. -Dsuite=e2e)");
    inline for (test_suites) |suite| {
        if (only_suite == null or std.mem.eql(u8, only_suite.?, suite.name)) {
            const exe = addTestSuite(cfg, suite.name, suite.files, san.full, .sanitized);
            const run = b.addRunArtifact(exe);
            // `zig build test -Dsuite=e2e -- --filter 'e2e_norms/*'`: arguments after -- go to Criterion.
            if (b.args) |args| run.addArgs(args);
            run.setCwd(b.path("."));
            run.stdio = .inherit;
            setSanitizerEnv(run);
            // CLI-level tests find the sanitized programs through these variables.
            run.setEnvironmentVariable("LOOM_BIN", b.getInstallPath(.bin, "loom-san"));
            run.setEnvironmentVariable("LOOM_RUN_BIN", b.getInstallPath(.bin, "loom-run-san"));
            run.setEnvironmentVariable("LOOM_PLUGIN_DIR", b.getInstallPath(.lib, ""));
            run.step.dependOn(plugins_step);
            run.step.dependOn(&loom_san.step);
            run.step.dependOn(&loom_run_san.step);
            if (previous) |p| run.step.dependOn(p);
            previous = &run.step;
            test_step.dependOn(&run.step);
        }
    }

    // The runtime's suites again under ThreadSanitizer (scripts/test runs this after `test`).
    const tsan_step = b.step("test-tsan", "Build the runtime's suites (vm, e2e, concurrency) with ThreadSanitizer and run them");
    const tsan_libs = addLibraries(cfg, .tsan);
    var previous_tsan: ?*std.Build.Step = null;
    inline for (tsan_suites) |ts| {
        if (only_suite == null or std.mem.eql(u8, only_suite.?, ts.name)) {
            const exe = addTestSuite(cfg, "tsan-" ++ ts.name, suiteFiles(ts.name), tsan_libs.full, .tsan);
            const run = b.addRunArtifact(exe);
            if (b.args) |args| run.addArgs(args) else if (ts.filter.len > 0) run.addArgs(&.{ "--filter", ts.filter });
            run.setCwd(b.path("."));
            run.stdio = .inherit;
            run.setEnvironmentVariable("TSAN_OPTIONS", tsan_options);
            // CLI-level tests run the ASan programs (a separate process each).
            run.setEnvironmentVariable("LOOM_BIN", b.getInstallPath(.bin, "loom-san"));
            run.setEnvironmentVariable("LOOM_RUN_BIN", b.getInstallPath(.bin, "loom-run-san"));
            run.setEnvironmentVariable("LOOM_PLUGIN_DIR", b.getInstallPath(.lib, ""));
            run.step.dependOn(plugins_step);
            run.step.dependOn(&loom_san.step);
            run.step.dependOn(&loom_run_san.step);
            if (previous_tsan) |p| run.step.dependOn(p);
            previous_tsan = &run.step;
            tsan_step.dependOn(&run.step);
        }
    }
}

/// The files of test suite `name` (tests/suites.zig).
fn suiteFiles(comptime name: []const u8) []const []const u8 {
    inline for (test_suites) |suite| if (comptime std.mem.eql(u8, suite.name, name)) return suite.files;
    @compileError("no test suite named " ++ name);
}

/// CUDA is used when its headers and runtime are present (or -Dcuda=on demands it).
fn detectCuda(b: *std.Build) bool {
    const mode = b.option(CudaMode, "cuda", "CUDA support: auto (default), on, off") orelse .auto;
    if (mode == .off) return false;
    const present = blk: {
        std.fs.accessAbsolute(cuda_prefix ++ "/include/cuda_runtime.h", .{}) catch break :blk false;
        std.fs.accessAbsolute(cuda_prefix ++ "/lib64/libcudart.so", .{}) catch break :blk false;
        break :blk true;
    };
    if (!present) {
        if (mode == .on) std.debug.panic("-Dcuda=on but no CUDA toolkit at {s}", .{cuda_prefix});
        std.debug.print("note: no CUDA toolkit at {s}: building without CUDA support\n", .{cuda_prefix});
    }
    return present;
}

/// Runs `protoc-c` on the system's onnx.proto; the output directory (onnx.pb-c.c and
/// onnx.pb-c.h) is a generated path, cached by Zig and rebuilt when the schema changes.
fn generateOnnxProto(b: *std.Build) std.Build.LazyPath {
    const protoc = b.addSystemCommand(&.{ "protoc-c", "--proto_path=" ++ onnx_proto_dir });
    const out_dir = protoc.addPrefixedOutputDirectoryArg("--c_out=", "onnx-pb-c");
    protoc.addFileArg(.{ .cwd_relative = onnx_proto_dir ++ "/onnx.proto" });
    return out_dir;
}

fn cFlags(cfg: Config, variant: Variant, library_code: bool) []const []const u8 {
    const b = cfg.b;
    var list = std.ArrayList([]const u8).init(b.allocator);
    list.appendSlice(&warning_flags) catch @panic("OOM");
    if (library_code) list.appendSlice(&library_only_flags) catch @panic("OOM");
    if (variant == .sanitized) list.appendSlice(&sanitizer_flags) catch @panic("OOM");
    if (variant == .tsan) list.appendSlice(&tsan_flags) catch @panic("OOM");
    list.append(b.fmt("-DLOOM_VERSION=\"{s}\"", .{manifest.version})) catch @panic("OOM");
    const mode_name = switch (variant) {
        .sanitized => "Debug+ASan+UBSan",
        .tsan => "ReleaseSafe+TSan",
        .normal => @tagName(cfg.optimize),
    };
    list.append(b.fmt("-DLOOM_BUILD_MODE=\"{s}\"", .{mode_name})) catch @panic("OOM");
    list.append(if (cfg.cuda) "-DLOOM_HAVE_CUDA=1" else "-DLOOM_HAVE_CUDA=0") catch @panic("OOM");
    return list.items;
}

fn newModule(cfg: Config, variant: Variant) *std.Build.Module {
    const m = cfg.b.createModule(.{
        .target = cfg.target,
        .optimize = switch (variant) {
            .sanitized => .Debug,
            .tsan => .ReleaseSafe,
            .normal => cfg.optimize,
        },
        .link_libc = true,
        // Zig's own trapping UBSan is replaced by the full runtime in the sanitized variant
        // (and kept out of the TSan one, whose runtime is TSan's alone).
        .sanitize_c = if (variant == .normal) null else false,
    });
    m.addIncludePath(cfg.b.path("."));
    m.addIncludePath(cfg.b.path("src"));
    return m;
}

/// The sanitizer runtime must be the first shared object the program needs.
fn linkSanitizerRuntime(m: *std.Build.Module, variant: Variant) void {
    m.addObjectFile(.{ .cwd_relative = if (variant == .tsan) tsan_runtime else asan_runtime });
    m.addRPath(.{ .cwd_relative = clang_rt_dir });
}

fn setSanitizerEnv(run: *std.Build.Step.Run) void {
    run.setEnvironmentVariable("ASAN_OPTIONS", "detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1");
    run.setEnvironmentVariable("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
}

/// Adds C sources (skipping empty lists, which would only add noise to the command line).
fn addSources(m: *std.Build.Module, files: []const []const u8, flags: []const []const u8) void {
    if (files.len > 0) m.addCSourceFiles(.{ .files = files, .flags = flags });
}

const Libraries = struct { rt: *std.Build.Step.Compile, full: *std.Build.Step.Compile };

fn addLibraries(cfg: Config, variant: Variant) Libraries {
    const b = cfg.b;
    const suffix = switch (variant) {
        .sanitized => "-san",
        .tsan => "-tsan",
        .normal => "",
    };
    const flags = cFlags(cfg, variant, true);

    const rt_mod = newModule(cfg, variant);
    addSources(rt_mod, &runtime_sources, flags);
    if (cfg.cuda) rt_mod.addSystemIncludePath(.{ .cwd_relative = cuda_prefix ++ "/include" });
    const rt = b.addLibrary(.{ .name = b.fmt("loomrt{s}", .{suffix}), .root_module = rt_mod, .linkage = .static });

    const full_mod = newModule(cfg, variant);
    addSources(full_mod, &runtime_sources, flags);
    inline for (modules) |m| addSources(full_mod, &m.compiler, flags);
    if (cfg.cuda) {
        addSources(full_mod, &cuda_sources.compiler, flags);
        full_mod.addSystemIncludePath(.{ .cwd_relative = cuda_prefix ++ "/include" });
    }
    full_mod.addSystemIncludePath(.{ .cwd_relative = llvm_prefix ++ "/include" });
    addOnnxGenerated(cfg, full_mod, variant);
    const full = b.addLibrary(.{ .name = b.fmt("loom{s}", .{suffix}), .root_module = full_mod, .linkage = .static });
    return .{ .rt = rt, .full = full };
}

/// libloom.so: the same sources as the static libloom (position-independent), linked with the
/// same system libraries as the programs, so every public function of src/loom.h and
/// src/loomrt.h is reachable through dlopen (the Python package's ctypes layer).
fn addSharedLibrary(cfg: Config) *std.Build.Step.Compile {
    const b = cfg.b;
    const flags = cFlags(cfg, .normal, true);
    const m = newModule(cfg, .normal);
    m.pic = true;
    addSources(m, &runtime_sources, flags);
    inline for (modules) |mod| addSources(m, &mod.compiler, flags);
    if (cfg.cuda) {
        addSources(m, &cuda_sources.compiler, flags);
        m.addSystemIncludePath(.{ .cwd_relative = cuda_prefix ++ "/include" });
    }
    m.addSystemIncludePath(.{ .cwd_relative = llvm_prefix ++ "/include" });
    addOnnxGenerated(cfg, m, .normal);
    linkCompilerDeps(cfg, m);
    return b.addLibrary(.{ .name = "loom", .root_module = m, .linkage = .dynamic });
}

/// loom._fastcall (python/loom/_fastcall.c): a CPython extension for the package's call path.
/// It does not link libloom.so or libpython: both are already in the process when Python
/// imports it (the package opens libloom.so with RTLD_GLOBAL first), as for any extension.
fn addPythonExtension(cfg: Config, include_dir: []const u8) *std.Build.Step.Compile {
    const b = cfg.b;
    const m = newModule(cfg, .normal);
    m.pic = true;
    m.addSystemIncludePath(.{ .cwd_relative = include_dir });
    m.addCSourceFiles(.{ .files = &.{"python/loom/_fastcall.c"}, .flags = cFlags(cfg, .normal, true) });
    const lib = b.addLibrary(.{ .name = "loom_fastcall", .root_module = m, .linkage = .dynamic });
    lib.linker_allow_shlib_undefined = true;
    return lib;
}

/// The generated protobuf-c code of the ONNX schema (compiler side: libloom only).
fn addOnnxGenerated(cfg: Config, m: *std.Build.Module, variant: Variant) void {
    var flags = std.ArrayList([]const u8).init(cfg.b.allocator);
    flags.appendSlice(&generated_flags) catch @panic("OOM");
    if (variant == .sanitized) flags.appendSlice(&sanitizer_flags) catch @panic("OOM");
    if (variant == .tsan) flags.appendSlice(&tsan_flags) catch @panic("OOM");
    m.addCSourceFile(.{ .file = cfg.onnx_gen.path(cfg.b, "onnx.pb-c.c"), .flags = flags.items });
    m.addIncludePath(cfg.onnx_gen);
}

/// System libraries of the runtime: libc, libffi, libsodium (artifact hashes and signatures,
/// vm/artifact.c), pthread/dl/m, and cudart when built with CUDA.
fn linkRuntimeDeps(cfg: Config, m: *std.Build.Module) void {
    m.linkSystemLibrary("ffi", .{});
    m.linkSystemLibrary("sodium", .{});
    m.linkSystemLibrary("pthread", .{});
    m.linkSystemLibrary("dl", .{});
    m.linkSystemLibrary("m", .{});
    if (cfg.cuda) {
        m.addLibraryPath(.{ .cwd_relative = cuda_prefix ++ "/lib64" });
        m.addRPath(.{ .cwd_relative = cuda_prefix ++ "/lib64" });
        m.linkSystemLibrary("cudart", .{ .use_pkg_config = .no });
    }
}

/// System libraries of the compiler on top of the runtime's: LLVM 19, GMP, protobuf-c, jansson
/// (safetensors weights headers, graph/safetensors.c).
fn linkCompilerDeps(cfg: Config, m: *std.Build.Module) void {
    linkRuntimeDeps(cfg, m);
    m.addLibraryPath(.{ .cwd_relative = llvm_prefix ++ "/lib" });
    m.addRPath(.{ .cwd_relative = llvm_prefix ++ "/lib" });
    m.linkSystemLibrary("LLVM-19", .{ .use_pkg_config = .no });
    m.linkSystemLibrary("gmp", .{});
    m.linkSystemLibrary("protobuf-c", .{});
    m.linkSystemLibrary("jansson", .{});
}

fn addProgram(cfg: Config, name: []const u8, files: []const []const u8, lib: *std.Build.Step.Compile, variant: Variant) *std.Build.Step.Compile {
    const m = newModule(cfg, variant);
    if (variant != .normal) linkSanitizerRuntime(m, variant);
    m.addCSourceFiles(.{ .files = files, .flags = cFlags(cfg, variant, true) });
    m.linkLibrary(lib);
    const runtime_only = std.mem.startsWith(u8, lib.name, "loomrt");
    if (runtime_only) linkRuntimeDeps(cfg, m) else linkCompilerDeps(cfg, m);
    return cfg.b.addExecutable(.{ .name = name, .root_module = m });
}

/// A pass plugin: a shared library whose undefined symbols are Loom's, resolved from the
/// `loom` program that loads it (src/loom_pass.h).
fn addPassPlugin(cfg: Config, name: []const u8, file: []const u8, defines: []const []const u8) *std.Build.Step.Compile {
    const m = newModule(cfg, .normal);
    var flags = std.ArrayList([]const u8).init(cfg.b.allocator);
    flags.appendSlice(&warning_flags) catch @panic("OOM");
    flags.appendSlice(defines) catch @panic("OOM");
    flags.append("-fPIC") catch @panic("OOM");
    m.addCSourceFiles(.{ .files = &.{file}, .flags = flags.items });
    m.pic = true;
    const lib = cfg.b.addLibrary(.{ .name = name, .linkage = .dynamic, .root_module = m });
    lib.linker_allow_shlib_undefined = true;
    return lib;
}

fn addTestSuite(cfg: Config, comptime name: []const u8, files: []const []const u8, lib: *std.Build.Step.Compile, variant: Variant) *std.Build.Step.Compile {
    const m = newModule(cfg, variant);
    linkSanitizerRuntime(m, variant);
    m.addCSourceFiles(.{ .files = files, .flags = cFlags(cfg, variant, false) });
    m.addCSourceFiles(.{ .files = &@import("tests/suites.zig").support, .flags = cFlags(cfg, variant, false) });
    // Criterion's start-up under TSan needs help (see the file's banner).
    if (variant == .tsan) m.addCSourceFiles(.{ .files = &.{"tests/support/tsan_criterion.c"}, .flags = cFlags(cfg, variant, false) });
    m.addIncludePath(cfg.b.path("tests"));
    m.addSystemIncludePath(.{ .cwd_relative = llvm_prefix ++ "/include" });
    m.linkLibrary(lib);
    linkCompilerDeps(cfg, m);
    m.linkSystemLibrary("criterion", .{});
    const exe = cfg.b.addExecutable(.{ .name = "test-" ++ name, .root_module = m });
    // Criterion finds tests through a section nothing references: an optimised build must
    // not collect it as garbage.
    exe.link_gc_sections = false;
    return exe;
}
