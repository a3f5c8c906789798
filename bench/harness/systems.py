"""systems.py — one class per system in the comparison; the worker drives them all the same way.

Every system implements:
    prepare(model_path, workload)  load / import / compile / create the session (timed as "compile")
    run(inputs) -> numpy y         one inference, host NumPy in, host NumPy out (what is timed)
    compilations()                 how many times it has compiled so far (JIT systems recompile)
`threads` is the system's own thread setting; the worker also runs under `taskset` on that many cores.

Loom's columns are the classes `Loom` and `LoomOffload`: `prepare` compiles the ONNX file once with
symbolic shapes in a bench-loom-serve process and `run` calls it for every shape.
"""
import os
import subprocess
import sys

import numpy as np

import modeldefs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class NotAvailable(Exception):
    """A system that cannot run here (not built yet, or the workload does not apply)."""


class System:
    name = "?"
    description = ""

    def __init__(self, threads, workdir):
        self.threads, self.workdir = threads, workdir
        self.n_compiles = 0

    def compilations(self):
        return self.n_compiles

    def set_threads(self, threads):
        """bench/ops: the same prepared model at another thread count (Loom and ORT only)."""
        raise NotAvailable(f"{self.name}: set_threads is not supported")

    def own_time(self):
        """The system's own time of the last run (s), measured on its side of any pipe, or None."""
        return None


# -- ONNX Runtime ---------------------------------------------------------------------------------
class OnnxRuntime(System):
    name = "ort"
    description = "ONNX Runtime CPU EP, graph optimisation level ALL, intra-op threads = T, sequential"

    def prepare(self, model_path, workload):
        self.model_path, self.sessions = model_path, {}
        self.set_threads(self.threads)
        self.n_compiles = 1

    def set_threads(self, threads):
        import onnxruntime as ort

        if threads not in self.sessions:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            so.add_session_config_entry("session.set_denormal_as_zero", "1")
            self.sessions[threads] = ort.InferenceSession(self.model_path, so, providers=["CPUExecutionProvider"])
        self.threads, self.sess = threads, self.sessions[threads]

    def run(self, I):
        return self.sess.run(["y"], I)[0]


# -- TVM Relax ------------------------------------------------------------------------------------
class TvmRelax(System):
    name = "tvm"
    description = "TVM Relax, ONNX frontend, default pipeline (relax.get_pipeline('default')), no tuning, llvm mcpu=native"

    def prepare(self, model_path, workload):
        import onnx
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx

        mod = from_onnx(onnx.load(model_path), keep_params_in_input=False)
        target = tvm.target.Target({"kind": "llvm", "mcpu": _host_cpu(), "num-cores": self.threads})
        # tvm.compile(mod, target) picks relax.get_pipeline("default") for CPU targets, but 0.27.0.post1
        # crashes evaluating `"gpu" in target.keys` (a method, not a list); passing the same pipeline
        # object explicitly skips that check and builds what the default would.
        ex = relax.build(mod, target, relax_pipeline=relax.get_pipeline("default"))
        self.vm = relax.VirtualMachine(ex, tvm.cpu())
        self.tvm = tvm
        self.names = [i.name for i in onnx.load(model_path, load_external_data=False).graph.input]
        self.n_compiles = 1

    def run(self, I):
        tensor = getattr(self.tvm.runtime, "tensor", None) or self.tvm.nd.array
        out = self.vm["main"](*[tensor(I[n]) for n in self.names])
        if not hasattr(out, "numpy"):
            out = out[0]
        return out.numpy()


def _host_cpu():
    try:
        r = subprocess.run(["gcc", "-march=native", "-Q", "--help=target"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.strip().startswith("-march="):
                return line.split()[-1]
    except OSError:
        pass
    return "generic"


# -- IREE -----------------------------------------------------------------------------------------
IREE_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
    "--iree-opt-level=O2",
    "--iree-opt-data-tiling",
]


class Iree(System):
    name = "iree"
    description = "IREE: iree-import-onnx, iree-compile " + " ".join(IREE_FLAGS[2:]) + ", local-task driver, T workers"
    compile_flags = IREE_FLAGS
    runtime_flags = []

    def prepare(self, model_path, workload):
        import iree.runtime as rt

        bindir = os.path.dirname(sys.executable)
        base = os.path.join(self.workdir, os.path.basename(model_path)[:-5])
        mlir, vmfb = base + ".mlir", base + ".vmfb"
        for cmd in (
            [os.path.join(bindir, "iree-import-onnx"), model_path, "-o", mlir],
            [os.path.join(bindir, "iree-compile"), mlir, *self.compile_flags, "-o", vmfb],
        ):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                err = [l for l in r.stderr.splitlines() if "error" in l][:1] or r.stderr.splitlines()[-1:]
                # the first error line names the failing op's source line and the reason; drop the path
                msg = " | ".join(l.split(" for backend")[0].replace(self.workdir + "/", "")[:300] for l in err)
                raise RuntimeError(os.path.basename(cmd[0]) + " failed: " + msg)
        rt.flags.parse_flags(f"--task_topology_max_group_count={self.threads}", *self.runtime_flags)
        self.mod = rt.load_vm_flatbuffer_file(vmfb, driver="local-task")
        import onnx

        g = onnx.load(model_path, load_external_data=False).graph
        self.fn = getattr(self.mod, g.name)
        self.names = [i.name for i in g.input]
        self.n_compiles = 1

    def run(self, I):
        out = self.fn(*[I[n] for n in self.names])
        if isinstance(out, (tuple, list)):
            out = out[0]
        return out.to_host()


class IreeNoDataTiling(Iree):
    """Not one of the issue's configurations (that is `iree`: O2 with data tiling): the flags under which
    IREE 3.13 does compile the models with LayerNormalization (B2-B5), so that it has a number there.
    With data tiling, llvm-cpu fuses the LayerNorm before the MLP into the dispatch that packs the next
    matmul's LHS and makes a vector<16x768xf32> of it (over its 32 KB large-vector check). Without data
    tiling, the LayerNorm dispatch (reduction_Dx768_f32) needs a 145,600-byte stack frame (over the
    32 KB limit): the limit is raised, and so is the task workers' stack (the default one overflows:
    segfault)."""

    name = "iree-nodt"
    description = ("IREE as `iree` but without data tiling (--iree-opt-data-tiling=false), stack allocation limit "
                   "256 KB, task worker stack 1 MB: the configuration that compiles B2-B5")
    compile_flags = IREE_FLAGS[:-1] + ["--iree-opt-data-tiling=false", "--iree-llvmcpu-stack-allocation-limit=262144"]
    runtime_flags = ["--task_worker_stack_size=1048576"]


# -- JAX / XLA ------------------------------------------------------------------------------------
class JaxJit(System):
    name = "jax-jit"
    description = "JAX/XLA CPU, jax.jit of the model function; one compilation per new shape (counted)"
    bucket = False

    def prepare(self, model_path, workload):
        import jax

        jax.config.update("jax_platforms", "cpu")
        F = modeldefs.JaxOps()
        fn = modeldefs.FUNCS[os.path.basename(model_path)[:-5]]
        self.W = {k: jax.device_put(v) for k, v in modeldefs.load_weights(model_path).items()}

        def traced(W, I):
            self.n_compiles += 1  # runs once per trace, i.e. per compilation
            return fn(F, W, I)

        self.f = jax.jit(traced)
        self.workload = workload
        if self.bucket and workload == "B3":
            raise NotAvailable("buckets not applied to B3 (padding `past` would need a mask the model does not take)")

    def run(self, I):
        if not self.bucket:
            return np.asarray(self.f(self.W, I))
        P, b, s = pad_to_buckets(self.workload, I)
        return np.asarray(self.f(self.W, P))[:b, :s] if s else np.asarray(self.f(self.W, P))[:b]


def _pow2(n):
    return 1 << (n - 1).bit_length()


def pad_to_buckets(workload, I):
    """Pads batch (and seq) up to powers of two; exact for these models: rows are independent in B1,
    padded positions come after the real ones in causal B2/B3-prefill, and carry mask 0 in B4."""
    x = I["x"]
    b = x.shape[0]
    if x.ndim == 2:
        return {"x": np.pad(x, ((0, _pow2(b) - b), (0, 0)))}, b, None
    s = x.shape[1]
    pb, ps = _pow2(b) - b, _pow2(s) - s
    P = {"x": np.pad(x, ((0, pb), (0, ps), (0, 0)))}
    if "attention_mask" in I:
        P["attention_mask"] = np.pad(I["attention_mask"], ((0, pb), (0, ps)))
    return P, b, s


class JaxBucket(JaxJit):
    name = "jax-pow2"
    description = "JAX/XLA CPU, jax.jit with batch and seq padded to power-of-two buckets (compilations counted)"
    bucket = True


# -- PyTorch --------------------------------------------------------------------------------------
class TorchEager(System):
    name = "torch-eager"
    description = "PyTorch eager, inference_mode, torch.set_num_threads(T), set_flush_denormal(True)"
    compiled = False

    def prepare(self, model_path, workload):
        import torch

        torch.set_num_threads(self.threads)
        torch.set_flush_denormal(True)
        self.torch = torch
        F = modeldefs.TorchOps()
        fn = modeldefs.FUNCS[os.path.basename(model_path)[:-5]]
        W = {k: torch.from_numpy(v) for k, v in modeldefs.load_weights(model_path).items()}

        def model(I):
            return fn(F, W, I)

        if self.compiled:
            import torch._dynamo

            torch._dynamo.config.cache_size_limit = 64
            self.f = torch.compile(model, dynamic=True)
        else:
            self.f = model
            self.n_compiles = 0

    def compilations(self):
        if not self.compiled:
            return 0
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])

    def run(self, I):
        with self.torch.inference_mode():
            return self.f({k: self.torch.from_numpy(v) for k, v in I.items()}).numpy()


class TorchCompile(TorchEager):
    name = "torch-compile"
    description = "torch.compile(dynamic=True), inductor CPU backend; graphs compiled (recompiles) counted"
    compiled = True


# -- Loom -----------------------------------------------------------------------------------------
class Loom(System):
    """Loom's compiled path, driven through bench-loom-serve (bench/loomserve/main.c): a process that
    compiles the ONNX file once (loom_compile_file: symbolic shapes, kernels JIT-compiled by LLVM) and
    then serves calls for every shape of the sweep. Tensors go through two files in /dev/shm mapped by
    both processes (inputs zero-copy into loom_rt_call, output 0 copied out); one line per call on a
    pipe. The timed call is that whole round trip, host NumPy in, host NumPy out: no process start, no
    file I/O. prepare (spawn, import, compile, JIT) is the compile time."""

    name = "loom"
    description = "Loom: ONNX compiled once with symbolic shapes (loom_compile_file + JIT), every shape on that one executable"
    flags = []

    def prepare(self, model_path, workload):
        import mmap
        import tempfile

        exe = os.path.join(ROOT, "zig-out", "bin", "bench-loom-serve")
        if not os.path.exists(exe):
            raise NotAvailable("zig-out/bin/bench-loom-serve is not built (zig build bench -Doptimize=ReleaseFast)")
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else self.workdir
        fd, self.in_path = tempfile.mkstemp(prefix="loom-in-", dir=shm)
        self.out_path = self.in_path.replace("loom-in-", "loom-out-")
        os.ftruncate(fd, 1 << 20)
        self.in_fd, self.in_map = fd, mmap.mmap(fd, 1 << 20)
        self.out_fd, self.out_map = None, None
        self.mmap = mmap
        import atexit

        atexit.register(self.close)
        cmd = [exe, model_path, "--in", self.in_path, "--out", self.out_path, "--threads", str(self.threads)] + self.flags
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            self.close()
            msg = " ".join(line[1:]) if line else f"bench-loom-serve exited with {self.proc.wait()}"
            msg = msg.replace(os.path.dirname(model_path) + "/", "")
            # Loom says "unimplemented" for what it does not support yet: that column is n/a, with why.
            raise (NotAvailable if msg.startswith("unimplemented") else RuntimeError)("loom: " + msg)
        self.compile_ms = dict(zip(("passes", "lower", "codegen"), map(float, line[1:4])))
        self.names = line[5:5 + int(line[4])]
        self.out_fd = os.open(self.out_path, os.O_RDWR)
        self.n_compiles = 1
        self.call_ns = None

    def set_threads(self, threads):
        self.proc.stdin.write(f"threads {threads}\n")
        self.proc.stdin.flush()
        r = self.proc.stdout.readline().split()
        if not r or r[0] != "ok":
            raise RuntimeError("loom: " + (" ".join(r[1:]) if r else f"bench-loom-serve exited with {self.proc.poll()}"))
        self.threads = threads

    def own_time(self):
        return None if self.call_ns is None else self.call_ns * 1e-9

    def run(self, I, want_output=True):
        """Output 0 as NumPy; with want_output False (bench/ops' timed calls) nothing is copied back,
        and inputs already written for this same `I` are not written again: between two timed calls
        neither process moves a tensor, as an in-process user's calls (and ORT's here) do not — the
        copies evicted a large case's working set from the cache before every Loom call."""
        if not want_output and getattr(self, "_written", None) is I:
            self.proc.stdin.write(self._time_line)
            self.proc.stdin.flush()
            r = self.proc.stdout.readline().split()
            if not r or r[0] != "ok":
                raise RuntimeError("loom: " + (" ".join(r[1:]) if r else f"bench-loom-serve exited with {self.proc.poll()}"))
            self.call_ns = int(r[1])
            return None
        arrays = [np.ascontiguousarray(I[n]) for n in self.names]
        offsets, end = [], 0
        for a in arrays:
            offsets.append(end)
            end += (a.nbytes + 63) // 64 * 64
        if end > len(self.in_map):
            size = max(end, 2 * len(self.in_map))
            self.in_map.close()
            os.ftruncate(self.in_fd, size)
            self.in_map = self.mmap.mmap(self.in_fd, size)
        spec = []
        for a, off in zip(arrays, offsets):
            np.frombuffer(self.in_map, a.dtype, a.size, off).reshape(a.shape)[...] = a
            spec += [_LOOM_DTYPE[a.dtype.str[1:]], str(a.ndim)] + [str(d) for d in a.shape] + [str(off)]
        self._written, self._time_line = I, f"time {len(self.in_map)} {len(arrays)} {' '.join(spec)}\n"
        self.proc.stdin.write(f"call {len(self.in_map)} {len(arrays)} {' '.join(spec)}\n")
        self.proc.stdin.flush()
        r = self.proc.stdout.readline().split()
        if not r or r[0] != "ok":
            raise RuntimeError("loom: " + (" ".join(r[1:]) if r else f"bench-loom-serve exited with {self.proc.poll()}"))
        size, dt, rank = int(r[1]), r[2], int(r[3])
        shape = tuple(int(d) for d in r[4:4 + rank])
        self.call_ns = int(r[4 + rank])  # the C side's own time of loom_rt_call (the output copy excluded)
        self.copy_ns = int(r[5 + rank])  # and of the copy of output 0 to the shared file
        if self.out_map is None or len(self.out_map) != size:
            if self.out_map is not None:
                self.out_map.close()
            self.out_map = self.mmap.mmap(self.out_fd, size)
        n = int(np.prod(shape))
        return np.frombuffer(self.out_map, _NP_DTYPE[dt], n).reshape(shape).copy()

    def close(self):
        if getattr(self, "proc", None) and self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.wait()
        for p in (getattr(self, "in_path", None), getattr(self, "out_path", None)):
            if p and os.path.exists(p):
                os.unlink(p)

    def __del__(self):
        self.close()


class LoomOffload(Loom):
    name = "loom-offload"
    description = "Loom with --offload: as `loom`, large matmuls handed to OpenBLAS (threads = T)"
    flags = ["--offload"]


_LOOM_DTYPE = {"f4": "f32", "f8": "f64", "f2": "f16", "i8": "i64", "i4": "i32", "i2": "i16", "i1": "i8",
               "u8": "u64", "u4": "u32", "u2": "u16", "u1": "u8", "b1": "bool"}
_NP_DTYPE = {v: np.dtype(k) for k, v in _LOOM_DTYPE.items()}


ALL = [Loom, LoomOffload, OnnxRuntime, TvmRelax, Iree, IreeNoDataTiling, JaxJit, JaxBucket, TorchEager, TorchCompile]
BY_NAME = {c.name: c for c in ALL}

