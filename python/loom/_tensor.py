"""Tensors between Python and the runtime: NumPy arrays and DLPack producers in, NumPy arrays
or zero-copy :class:`Tensor` objects (DLPack producers themselves) out.

Inputs:
  * a NumPy array is *borrowed* for the call (``loom_rt_tensor_borrow``): no copy when it is
    C-contiguous, the array is kept alive until the call returns;
  * a :class:`Tensor` (a previous result) is passed as it is;
  * any other object with ``__dlpack__`` (a PyTorch tensor, a JAX or CuPy host array) is
    imported zero-copy through its DLPack capsule (``loom_rt_tensor_from_dlpack``);
  * anything else goes through ``numpy.asarray``.
Outputs are copied into fresh NumPy arrays, or wrapped as :class:`Tensor` without a copy.
"""

from __future__ import annotations

import ctypes
from ctypes import c_int64, c_void_p
from typing import Any

import numpy as np

from . import _capi
from ._errors import LoomError, check

# Loom dtype name <-> NumPy dtype (those NumPy has)
_NP_OF_NAME = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
# indexed by loom_dtype (None: no NumPy counterpart)
NP_OF_DTYPE: list[np.dtype | None] = [_NP_OF_NAME.get(n) for n in _capi.DTYPE_NAMES]
DTYPE_OF_NP: dict[np.dtype, int] = {d: _capi.DTYPE_INDEX[n] for n, d in _NP_OF_NAME.items()}

_DLTENSOR = b"dltensor"
_USED_DLTENSOR = b"used_dltensor"


def dtype_name(dt: int) -> str:
    """Loom's name of a loom_dtype value ("f32"); "any" for -1."""
    return "any" if dt < 0 else _capi.DTYPE_NAMES[dt]


@_capi.ctypes.PYFUNCTYPE(None, c_void_p)
def _capsule_destructor(capsule: int) -> None:
    """Deletes a DLManagedTensor whose capsule died unconsumed (its name still "dltensor")."""
    if _capi.PyCapsule_IsValid_raw(capsule, _DLTENSOR):
        p = _capi.PyCapsule_GetPointer_raw(capsule, _DLTENSOR)
        m = _capi.DLManagedTensor.from_address(p)
        if m.deleter:
            m.deleter(p)


class Tensor:
    """A runtime tensor owned from Python: a result returned without a copy.

    It is a DLPack producer, so ``numpy.from_dlpack(t)`` and ``torch.from_dlpack(t)`` view its
    memory without copying, and it can be passed back into a call as it is. ``numpy()`` makes
    a NumPy view. The memory lives as long as this object or any view made from it.
    """

    __slots__ = ("_ptr", "__weakref__")

    def __init__(self, ptr: int):
        # takes over one reference to a loom_tensor*
        self._ptr = ptr

    def __del__(self) -> None:
        if self._ptr:
            _capi.loom_tensor_release(self._ptr)
            self._ptr = 0

    @property
    def _struct(self) -> _capi.TensorStruct:
        return _capi.TensorStruct.from_address(self._ptr)

    @property
    def shape(self) -> tuple[int, ...]:
        """The dims."""
        t = self._struct
        return tuple(t.shape[: t.rank])

    @property
    def dtype(self) -> str:
        """Loom's dtype name ("f32", "i64", "bf16", ...)."""
        return dtype_name(self._struct.dtype)

    @property
    def ndim(self) -> int:
        return self._struct.rank

    def __repr__(self) -> str:
        return f"loom.Tensor(shape={self.shape}, dtype={self.dtype})"

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_capi.KDLCPU, 0)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None):
        """A DLPack capsule viewing this tensor (the unversioned ABI; it holds a reference)."""
        if dl_device is not None and tuple(dl_device) != (_capi.KDLCPU, 0):
            raise BufferError(f"loom.Tensor lives on the CPU, not on DLPack device {tuple(dl_device)}")
        if copy:
            raise BufferError("loom.Tensor exports without a copy; copy after import")
        dl = c_void_p()
        check(_capi.loom_tensor_to_dlpack(self._ptr, ctypes.byref(dl)))
        return _capi.PyCapsule_New(dl.value, _DLTENSOR, ctypes.cast(_capsule_destructor, c_void_p).value)

    def numpy(self) -> np.ndarray:
        """A NumPy array viewing this tensor's memory (no copy)."""
        return np.from_dlpack(self)


def torch_numpy_view(a: Any) -> Any:
    """A zero-copy NumPy view of a PyTorch CPU tensor, or `a` itself when it is not one or has
    no NumPy form (bf16, another device): the general path then takes it. (``Tensor.numpy()``
    refuses other devices and, with requires_grad, asks for ``detach()``: cheaper than asking.)"""
    if type(a).__module__ != "torch":
        return a
    try:
        return a.numpy()
    except RuntimeError:
        try:
            return a.detach().numpy()
        except (TypeError, RuntimeError):
            return a
    except (TypeError, AttributeError):
        return a


def from_dlpack_capsule(rt: int, capsule: Any) -> int:
    """Imports a "dltensor" capsule zero-copy; returns a new loom_tensor* reference."""
    p = _capi.PyCapsule_GetPointer(capsule, _DLTENSOR)  # raises for a consumed capsule
    _capi.PyCapsule_SetName(capsule, _USED_DLTENSOR)  # Loom owns it now (deleter called by Loom)
    t = c_void_p()
    check(_capi.loom_rt_tensor_from_dlpack(rt, p, ctypes.byref(t)))
    return t.value


def to_loom(rt: int, x: Any, keep: list, what: str) -> int:
    """A new loom_tensor* reference for input `x` (see the module docstring); objects that
    must stay alive during the call are appended to `keep`."""
    if isinstance(x, np.ndarray):
        a = x
    elif isinstance(x, Tensor):
        # its memory, borrowed for the call (the Tensor is kept alive until it returns)
        keep.append(x)
        s = x._struct
        shape = (c_int64 * s.rank)(*s.shape[: s.rank])
        out = c_void_p()
        check(_capi.loom_rt_tensor_borrow(rt, s.dtype, s.rank, shape, s.data, _nbytes(s), ctypes.byref(out)))
        return out.value
    elif hasattr(x, "__dlpack__") and not isinstance(x, (np.generic,)):
        if hasattr(x, "is_contiguous") and callable(x.is_contiguous) and not x.is_contiguous():
            x = x.contiguous()  # PyTorch: the VM takes dense tensors
        if getattr(x, "requires_grad", False):
            x = x.detach()
        return from_dlpack_capsule(rt, x.__dlpack__())
    else:
        a = np.asarray(x)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    dt = DTYPE_OF_NP.get(a.dtype)
    if dt is None:
        raise LoomError(f"{what}: NumPy dtype {a.dtype} has no Loom counterpart", "TYPE_ERROR")
    keep.append(a)
    shape = (c_int64 * a.ndim)(*a.shape)
    out = c_void_p()
    check(
        _capi.loom_rt_tensor_borrow(
            rt, dt, a.ndim, shape, a.__array_interface__["data"][0], a.nbytes, ctypes.byref(out)
        )
    )
    return out.value


def _nbytes(s: _capi.TensorStruct) -> int:
    """Bytes of a dense tensor."""
    n = _capi.loom_dtype_size(s.dtype)
    for i in range(s.rank):
        n *= s.shape[i]
    return n


def _copy_tensor(rt: int, p: int) -> Tensor:
    """A Tensor with a fresh copy of loom_tensor* `p`."""
    s = _capi.TensorStruct.from_address(p)
    shape = (c_int64 * s.rank)(*s.shape[: s.rank])
    out = c_void_p()
    check(_capi.loom_rt_tensor_new(rt, s.dtype, s.rank, shape, ctypes.byref(out)))
    t = Tensor(out.value)
    n = _nbytes(s)
    if n:
        ctypes.memmove(t._struct.data, s.data, n)
    return t


def to_numpy(ptr: int) -> np.ndarray:
    """A fresh NumPy array with a copy of loom_tensor* `ptr`'s data (the caller keeps `ptr`)."""
    s = _capi.TensorStruct.from_address(ptr)
    dt = NP_OF_DTYPE[s.dtype] if 0 <= s.dtype < len(NP_OF_DTYPE) else None
    if dt is None:
        raise LoomError(
            f"result of dtype {dtype_name(s.dtype)} has no NumPy dtype: call with dlpack=True", "TYPE_ERROR"
        )
    a = np.empty(tuple(s.shape[: s.rank]), dt)
    if a.nbytes:
        ctypes.memmove(a.__array_interface__["data"][0], s.data, a.nbytes)
    return a


def take_outputs(rt: int, outs: _capi.RtOutputs, dlpack: bool) -> list:
    """The results of a call as NumPy arrays (copied) or Tensors (zero-copy; a result that is a
    view of borrowed input memory is copied into a fresh Tensor instead). Frees `outs`."""
    res = []
    try:
        for i in range(outs.count):
            p = outs.items[i]
            hdr = _capi.ObjHeader.from_address(p)
            if hdr.kind != _capi.OBJ_TENSOR:
                raise LoomError(
                    f"result {i} is a {_capi.loom_vm_obj_kind_name(hdr.kind).decode()}, not a tensor", "TYPE_ERROR"
                )
            if dlpack and _capi.loom_tensor_is_borrowed(p):
                res.append(_copy_tensor(rt, p))
            elif dlpack:
                outs.items[i] = None  # the Tensor takes this reference
                res.append(Tensor(p))
            else:
                res.append(to_numpy(p))
    finally:
        _capi.loom_rt_outputs_free(ctypes.byref(outs))
    return res


# ---- the fast path's NumPy access ----
# An ndarray's data pointer is the first field after the object header (PyArrayObject_fields
# in numpy/ndarraytypes.h: ob_base, data, nd, dimensions, ...; the layout NumPy's C API macros
# such as PyArray_DATA compile to, unchanged since NumPy 1.7). Reading it is much cheaper than
# building __array_interface__; the offset is checked here against __array_interface__.
NP_DATA_OFFSET = object.__basicsize__  # sizeof(PyObject)


def _check_np_data_offset() -> bool:
    a = np.arange(3, dtype=np.float32)
    b = a[1:]
    try:
        return all(
            c_void_p.from_address(id(x) + NP_DATA_OFFSET).value == x.__array_interface__["data"][0] for x in (a, b)
        )
    except (ValueError, OSError):
        return False


NP_FAST = _check_np_data_offset()


def np_data(a: np.ndarray) -> int:
    """The address of `a`'s first element."""
    if NP_FAST:
        return c_void_p.from_address(id(a) + NP_DATA_OFFSET).value or 0
    return a.__array_interface__["data"][0]


def results_to_numpy(outs: _capi.RtOutputs, res) -> Any:
    """The results described in `res` (loom_rt_call_packed) copied into fresh NumPy arrays: one
    array, or a tuple of them. Frees `outs`."""
    try:
        arrays = []
        p = 1
        for i in range(res[0]):
            kind, dt, rank = res[p], res[p + 1], res[p + 2]
            if kind != _capi.OBJ_TENSOR:
                raise LoomError(
                    f"result {i} is a {_capi.loom_vm_obj_kind_name(kind).decode()}, not a tensor", "TYPE_ERROR"
                )
            npdt = NP_OF_DTYPE[dt]
            if npdt is None:
                raise LoomError(
                    f"result {i} of dtype {dtype_name(dt)} has no NumPy dtype: call with dlpack=True", "TYPE_ERROR"
                )
            a = np.empty(res[p + 3 : p + 3 + rank], npdt)
            if a.nbytes:
                ctypes.memmove(np_data(a), res[p + 3 + rank], a.nbytes)
            arrays.append(a)
            p += 5 + rank
    finally:
        _capi.loom_rt_outputs_free(outs)
    return arrays[0] if len(arrays) == 1 else tuple(arrays)
