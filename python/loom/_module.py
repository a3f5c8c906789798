"""Compiled modules: compile, load, save, signatures, calls, memory plans, the interpreter."""

from __future__ import annotations

import ctypes
import os
from array import array
import shutil
from ctypes import c_void_p
from dataclasses import dataclass
from typing import Any, Sequence, Union

import numpy as np

from . import _capi, sym
from ._errors import LoomError, check
from ._errors import error_from_status
from ._tensor import (
    DTYPE_OF_NP,
    NP_OF_DTYPE,
    NP_DATA_OFFSET,
    NP_FAST,
    dtype_name,
    np_data,
    results_to_numpy,
    take_outputs,
    to_loom,
    torch_numpy_view,
)

_HOST, _TENSOR, _HOST_AT = _capi.ARG_HOST, _capi.ARG_TENSOR, _capi.ARG_HOST_AT

# The call path as a CPython extension (python/loom/_fastcall.c), when the wheel has one and
# LOOM_PY_FASTCALL is not "0"; otherwise (and for inputs it does not take) the ctypes path.
_fast = None
if os.environ.get("LOOM_PY_FASTCALL", "1") != "0":
    try:
        from . import _fastcall as _fast  # type: ignore[attr-defined]

        _fast.init(np.empty, tuple(NP_OF_DTYPE))
    except ImportError:
        _fast = None
_RES_TEMPLATE = bytes(8 * 256)  # room to describe the results (more: read from the outputs)

PathLike = Union[str, "os.PathLike[str]"]
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


@dataclass(frozen=True)
class Param:
    """One parameter of a function: its name, dtype ("f32"; "any") and symbolic dims."""

    name: str
    dtype: str
    shape: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}({', '.join(self.shape)})"


@dataclass(frozen=True)
class Function:
    """A function of a module and its parameters, dims as text ("b", "s + past", "768")."""

    name: str
    params: tuple[Param, ...]

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(p) for p in self.params)})"


class Signature(dict):
    """Function name -> :class:`Function`, in the executable's order."""

    def __str__(self) -> str:
        return "\n".join(str(f) for f in self.values())

    @property
    def symbols(self) -> list[str]:
        """The symbolic dim expressions that are not plain integers, in order of appearance."""
        seen: list[str] = []
        for f in self.values():
            for p in f.params:
                for d in p.shape:
                    if not d.lstrip("-").isdigit() and d not in seen:
                        seen.append(d)
        return seen


@dataclass(frozen=True)
class MemoryPlan:
    """The planned memory of one call: ``peak`` is the symbolic bound in bytes (text, e.g.
    ``"4096*b + 40"``); ``bytes`` is its value for the dims given to ``memory_plan``, or None."""

    function: str
    peak: str
    bytes: int | None

    def __str__(self) -> str:
        v = f" = {self.bytes} bytes" if self.bytes is not None else ""
        return f"{self.function}: peak {self.peak} bytes{v}"


def _opts_rt(threads: int | None) -> _capi.RtOptions:
    o = _capi.RtOptions()
    if threads is not None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0, got {threads}")
        o.threads = threads
    return o


class Module:
    """A compiled model, ready to call for any shape its symbolic signature admits.

    Make one with :func:`compile`, :func:`load` or :func:`from_torch`. ``module(*args)`` calls
    ``main``; :meth:`call` names the function. Calls release the GIL and may run from many
    threads at once on one module (the runtime's concurrency contract, src/loomrt.h).
    """

    def __init__(self, rt: int, compiled: int | None, artifact: str | None):
        self._rt = rt
        self._compiled = compiled
        self._artifact = artifact
        self._signature: Signature | None = None
        self._fn_names: dict[str, bytes] = {}

    def close(self) -> None:
        """Frees the runtime (and the compiled module). No call may be in flight."""
        if getattr(self, "_rt", None):
            _capi.loom_rt_close(self._rt)
            self._rt = None
        if getattr(self, "_compiled", None):
            _capi.loom_compiled_free(self._compiled)
            self._compiled = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _live(self) -> int:
        if not self._rt:
            raise LoomError("the module is closed", "FAILED_PRECONDITION")
        return self._rt

    # ---- introspection ----

    @property
    def signature(self) -> Signature:
        """Every function with its parameters' names, dtypes and symbolic dims."""
        if self._signature is None:
            rt = self._live()
            sig = Signature()
            p = _capi.RtParam()
            for fi in range(_capi.loom_rt_function_count(rt)):
                name = _capi.loom_rt_function_name(rt, fi).decode()
                params = []
                for pi in range(_capi.loom_rt_param_count(rt, fi)):
                    _capi.loom_rt_param_get(rt, fi, pi, ctypes.byref(p))
                    dims = tuple(p.dims[k].decode() for k in range(p.rank))
                    params.append(Param(p.name.decode() if p.name else f"arg{pi}", dtype_name(p.dtype), dims))
                sig[name] = Function(name, tuple(params))
            self._signature = sig
        return self._signature

    @property
    def threads(self) -> int:
        """Threads of the runtime's pool."""
        return _capi.loom_rt_threads(self._live())

    @threads.setter
    def threads(self, n: int) -> None:
        # not concurrent with calls (loomrt.h)
        check(_capi.loom_rt_set_threads(self._live(), n))

    def __repr__(self) -> str:
        fns = ", ".join(str(f) for f in self.signature.values()) if self._rt else "closed"
        return f"<loom.Module {fns}>"

    # ---- calls ----

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls ``main``; see :meth:`call`."""
        return self.call("main", *args, **kwargs)

    def call(self, fn: str, *args: Any, dlpack: bool = False, **kwargs: Any) -> Any:
        """Runs function `fn` on `args` (positional) and `kwargs` (by parameter name).

        Inputs: NumPy arrays (borrowed, no copy when C-contiguous), :class:`Tensor` results,
        any DLPack producer (PyTorch tensors: zero-copy) or anything ``numpy.asarray`` takes.
        Returns one NumPy array, or a tuple of them when the function returns several; with
        ``dlpack=True``, :class:`Tensor` objects instead (no copy; ``torch.from_dlpack`` and
        ``numpy.from_dlpack`` view them). A wrong dtype, rank or dim raises a
        :class:`LoomError` naming the input, the axis and both values.
        """
        rt = self._live()
        name = self._fn_names.get(fn)
        if name is None:
            name = self._fn_names[fn] = fn.encode()
        if kwargs:
            args = self._bind_kwargs(fn, args, kwargs)
        if _fast is not None and not dlpack:
            r = _fast.call(rt, name, args)
            if r is None and any(type(a).__module__ == "torch" for a in args):
                # PyTorch CPU tensors as zero-copy NumPy views, which the extension takes
                args = tuple(torch_numpy_view(a) for a in args)
                r = _fast.call(rt, name, args)
            if type(r) is list:
                return r[0] if len(r) == 1 else tuple(r)
            if r is not None:
                raise error_from_status(r)
            # None: an input the extension does not take, or a result NumPy cannot hold (a
            # bf16 tensor: the call then runs again below, to return it as the general path does)
        # one packed description, one foreign call (loom_rt_call_packed): C-contiguous NumPy
        # arrays are borrowed by address; anything else becomes a tensor first (to_loom)
        desc: list[int] = []
        made: list[int] = []
        keep: list = []
        try:
            for i, a in enumerate(args):
                if type(a) is np.ndarray and a.flags.c_contiguous and a.dtype in DTYPE_OF_NP:
                    if NP_FAST:
                        desc += (_HOST_AT, DTYPE_OF_NP[a.dtype], a.ndim, *a.shape, id(a) + NP_DATA_OFFSET, a.nbytes)
                    else:
                        desc += (_HOST, DTYPE_OF_NP[a.dtype], a.ndim, *a.shape, np_data(a), a.nbytes)
                else:
                    t = to_loom(rt, a, keep, f"input {i} of '{fn}'")
                    made.append(t)
                    desc += (_TENSOR, t)
            d = array("q", desc)
            res = array("q", _RES_TEMPLATE)
            outs = _capi.RtOutputs()
            check(
                _capi.loom_rt_call_packed(
                    rt, name, d.buffer_info()[0], len(d), len(args), outs, res.buffer_info()[0], len(res)
                )
            )
        finally:
            for t in made:
                _capi.loom_tensor_release(t)
        if dlpack or res[0] < 0:
            out = take_outputs(rt, outs, dlpack)
            return out[0] if len(out) == 1 else tuple(out)
        return results_to_numpy(outs, res)

    def _bind_kwargs(self, fn: str, args: Sequence[Any], kwargs: dict) -> tuple:
        f = self.signature.get(fn)
        if f is None:
            raise LoomError(f"no function '{fn}' in the module (has: {', '.join(self.signature)})", "NOT_FOUND")
        names = [p.name for p in f.params]
        full: list[Any] = list(args) + [None] * (len(names) - len(args))
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"'{fn}' has no parameter '{k}' (parameters: {', '.join(names)})")
            i = names.index(k)
            if i < len(args):
                raise TypeError(f"'{fn}': parameter '{k}' given twice")
            full[i] = v
        missing = [names[i] for i, v in enumerate(full) if v is None]
        if missing:
            raise TypeError(f"'{fn}': missing input(s) {', '.join(missing)}")
        return tuple(full)

    # ---- artifacts and plans ----

    def save(self, path: PathLike) -> None:
        """Writes an AOT artifact (a shared object holding kernels and bytecode) that
        :func:`load` and ``loom-run`` open. Needs a C compiler driver (``cc`` or $LOOM_CC)
        to link it."""
        path = os.fspath(path)
        if self._compiled:
            check(_capi.loom_compiled_save(self._compiled, path.encode()))
        elif self._artifact:
            if os.path.abspath(path) != os.path.abspath(self._artifact):
                shutil.copyfile(self._artifact, path)
        else:
            raise LoomError("the module is closed", "FAILED_PRECONDITION")

    def memory_plan(self, fn: str = "main", **dims: int) -> MemoryPlan:
        """The symbolic peak of the memory plan of `fn` (with the functions it calls), and its
        value in bytes for the symbolic dims given (``memory_plan(b=4, s=128)``). Needs the
        compiled module (not one opened from an artifact)."""
        if not self._compiled:
            raise LoomError(
                "memory_plan needs the compiled module: this one was loaded from an artifact", "FAILED_PRECONDITION"
            )
        out = c_void_p()
        check(_capi.loom_compiled_memory_peak(self._compiled, fn.encode(), ctypes.byref(out)))
        try:
            peak = ctypes.string_at(out.value).decode()
        finally:
            _capi.libc_free(out.value)
        value = sym.eval(peak, **dims) if dims else None
        return MemoryPlan(fn, peak, value)


def _compile_options(target: str, offload: bool) -> _capi.CompileOptions:
    o = _capi.CompileOptions()
    o.target = target.encode() if target else None
    o.offload = bool(offload)
    return o


def compile(
    source: Source,
    target: str = "cpu",
    offload: bool = False,
    threads: int | None = None,
) -> Module:
    """Compiles a model into a :class:`Module` (the kernels are JIT-compiled in process).

    `source` is a path to an ``.onnx`` model or a ``.loom`` text module, or the model's bytes
    (ONNX protobuf or .loom text, told apart by content). `target` is the code generation
    target ("cpu"); `offload` sends large matmuls to BLAS; `threads` sizes the runtime's
    thread pool (None: $LOOM_NUM_THREADS or all cores). Errors (a parse error with its line
    and caret, an unsupported ONNX node) raise :class:`LoomError`.
    """
    opts = _compile_options(target, offload)
    c = c_void_p()
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        check(_capi.loom_compile_buffer(data, len(data), b"<bytes>", None, ctypes.byref(opts), ctypes.byref(c)))
    else:
        path = os.fspath(source)
        if path.endswith(".so"):
            raise LoomError(f"{path} is an AOT artifact: open it with loom.load", "INVALID_ARGUMENT")
        check(_capi.loom_compile_file(path.encode(), ctypes.byref(opts), ctypes.byref(c)))
    rt = c_void_p()
    ro = _opts_rt(threads)
    st = _capi.loom_compiled_open(c, ctypes.byref(ro), ctypes.byref(rt))
    if st:
        _capi.loom_compiled_free(c)
        check(st)
    return Module(rt.value, c.value, None)


def load(artifact: PathLike, threads: int | None = None) -> Module:
    """Opens an AOT artifact written by :meth:`Module.save` (or ``loom compile``), verified
    before any of its code runs."""
    path = os.fspath(artifact)
    rt = c_void_p()
    ro = _opts_rt(threads)
    check(_capi.loom_rt_open(path.encode(), ctypes.byref(ro), ctypes.byref(rt)))
    return Module(rt.value, None, os.path.abspath(path))


def interpret(source: Source, *args: Any, fn: str = "main") -> Any:
    """Runs `fn` of a model (path or bytes, as :func:`compile` takes) in Loom's reference
    interpreter, uncompiled: the numerics every compiled module is checked against. Inputs as
    for :meth:`Module.call`; returns NumPy arrays (a tuple when several)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, name = bytes(source), b"<bytes>"
    else:
        path = os.fspath(source)
        with open(path, "rb") as f:
            data = f.read()
        name = path.encode()
    holder = None  # inputs get a CPU device of their own (loom_rt_tensor_borrow with no runtime)
    n = len(args)
    inputs = (c_void_p * n)()
    keep: list = []
    try:
        for i, a in enumerate(args):
            inputs[i] = to_loom(holder, a, keep, f"input {i} of '{fn}'")
        outs = _capi.RtOutputs()
        check(_capi.loom_interp_call_buffer(data, len(data), name, None, fn.encode(), inputs, n, ctypes.byref(outs)))
    finally:
        for i in range(n):
            if inputs[i]:
                _capi.loom_tensor_release(inputs[i])
    res = take_outputs(holder, outs, False)
    return res[0] if len(res) == 1 else tuple(res)
