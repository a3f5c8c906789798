"""systems.py — one class per system in the comparison; the worker drives them all the same way.

Every system implements:
    prepare(model_path, workload)  load / import / compile / create the session (timed as "compile")
    run(inputs) -> numpy y         one inference, host NumPy in, host NumPy out (what is timed)
    compilations()                 how many times it has compiled so far (JIT systems recompile)
`threads` is the system's own thread setting; the worker also runs under `taskset` on that many cores.

Loom's column is the class `Loom`: it reports "not available yet" until Loom's compiled path runs ONNX
models; then `prepare` calls the compiler once (symbolic shapes) and `run` calls the artifact.
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


# -- ONNX Runtime ---------------------------------------------------------------------------------
class OnnxRuntime(System):
    name = "ort"
    description = "ONNX Runtime CPU EP, graph optimisation level ALL, intra-op threads = T, sequential"

    def prepare(self, model_path, workload):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.add_session_config_entry("session.set_denormal_as_zero", "1")
        self.sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
        self.n_compiles = 1

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

    def prepare(self, model_path, workload):
        import iree.runtime as rt

        bindir = os.path.dirname(sys.executable)
        base = os.path.join(self.workdir, os.path.basename(model_path)[:-5])
        mlir, vmfb = base + ".mlir", base + ".vmfb"
        for cmd in (
            [os.path.join(bindir, "iree-import-onnx"), model_path, "-o", mlir],
            [os.path.join(bindir, "iree-compile"), mlir, *IREE_FLAGS, "-o", vmfb],
        ):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                err = [l for l in r.stderr.splitlines() if "error" in l][:1] or r.stderr.splitlines()[-1:]
                # the first error line names the failing op's source line and the reason; drop the path
                msg = " | ".join(l.split(" for backend")[0].replace(self.workdir + "/", "")[:300] for l in err)
                raise RuntimeError(os.path.basename(cmd[0]) + " failed: " + msg)
        rt.flags.parse_flags(f"--task_topology_max_group_count={self.threads}")
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
    name = "loom"
    description = "Loom: one compilation with symbolic shapes (not available yet)"

    def prepare(self, model_path, workload):
        # Plug-in point: when `loom compile MODEL.onnx -o X` and `loom-run` (or libloomrt through a
        # small ctypes shim) exist, compile here once and call the artifact in run().
        exe = os.path.join(ROOT, "zig-out", "bin", "loom")
        r = subprocess.run([exe, "--help"], capture_output=True, text=True) if os.path.exists(exe) else None
        if r is None or "compile" not in r.stdout:
            raise NotAvailable("not available yet: Loom's compiled path (pipeline + ONNX frontend) is not built")
        raise NotAvailable("not available yet: `loom compile` exists but the bench hook is not wired")

    def run(self, I):
        raise NotAvailable("not available yet")


ALL = [Loom, OnnxRuntime, TvmRelax, Iree, JaxJit, JaxBucket, TorchEager, TorchCompile]
BY_NAME = {c.name: c for c in ALL}

