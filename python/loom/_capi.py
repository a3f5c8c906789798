"""The ctypes layer over Loom's C API (src/loom.h and src/loomrt.h in libloom.so).

Every C function the package calls is declared here once, with its argument and result types.
ctypes releases the GIL around each foreign call, so threads calling a module run the
runtime concurrently (loomrt.h's threads contract). Structs mirror the C headers; their
layouts are checked against the library at import (``loom_rt_abi`` / ``loom_compile_abi``).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_bool,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

MAX_RANK = 16  # LOOM_VM_MAX_RANK (vm/object.h)


class CompileOptions(Structure):
    """loom_compile_options (src/loom.h)."""

    _fields_ = [
        ("target", c_char_p),
        ("cpu", c_char_p),
        ("features", c_char_p),
        ("emit", c_int),
        ("print_after_all", c_bool),
        ("time_passes", c_bool),
        ("no_verify", c_bool),
        ("offload", c_bool),
        ("report", c_void_p),
        ("no_cache", c_bool),
        ("pack_tied", c_bool),
        ("cache_dir", c_char_p),
    ]


class RtOptions(Structure):
    """loom_rt_options (src/loomrt.h)."""

    _fields_ = [
        ("threads", c_uint32),
        ("externs", c_void_p),
        ("nexterns", c_uint32),
        ("kernels", c_void_p),
        ("nkernels", c_uint32),
        ("user", c_void_p),
        ("extern_provider", c_void_p),
        ("trust", c_void_p),
        ("check_weights", c_bool),
        ("hostop", c_void_p),
        ("hostop_ctx", c_void_p),
        ("device", c_char_p),  # NULL: the CPU
    ]


class RtParam(Structure):
    """loom_rt_param: a parameter's name, dtype (-1: any), rank, symbolic dims as text, and
    whether it takes a list (a sequence or optional; this package passes tensors only)."""

    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int32),
        ("rank", c_uint32),
        ("dims", c_char_p * MAX_RANK),
        ("list", c_bool),
    ]


class RtOutputs(Structure):
    """loom_rt_outputs: results of a call, each a reference the caller owns."""

    _fields_ = [("count", c_uint32), ("items", POINTER(c_void_p))]


class ObjHeader(Structure):
    """loom_vm_obj: the kind (1 tensor, 2 storage, 3 tuple) and reference count."""

    _fields_ = [("kind", c_uint32), ("refs", c_uint32)]


OBJ_TENSOR = 1


class TensorStruct(Structure):
    """loom_tensor (vm/object.h) up to strides (its flexible dims follow); checked at import."""

    _fields_ = [
        ("hdr", ObjHeader),
        ("dtype", c_int32),
        ("rank", c_int32),
        ("data", c_void_p),
        ("device", c_void_p),
        ("storage", c_void_p),
        ("dl", c_void_p),
        ("alloc", c_void_p),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
    ]


# ---- DLPack (dlpack.h, the unversioned ABI: capsules named "dltensor") ----


class DLDevice(Structure):
    _fields_ = [("device_type", c_int), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


DLDeleter = CFUNCTYPE(None, c_void_p)


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DLDeleter)]


KDLCPU = 1  # DLDeviceType kDLCPU


def _library_path() -> str:
    """libloom.so beside this file (the wheel), or $LOOM_LIBRARY (a build tree's)."""
    env = os.environ.get("LOOM_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libloom.so")


# RTLD_GLOBAL: the call-path extension (loom._fastcall) resolves its loom_* symbols from it.
lib = ctypes.CDLL(_library_path(), mode=ctypes.RTLD_GLOBAL)


def _fn(name: str, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


S = c_void_p  # loom_status: NULL is OK, else an error the caller frees
PP = POINTER(c_void_p)

# status (src/base/status.h)
loom_status_code = _fn("loom_status_code", c_int, S)
loom_status_text = _fn("loom_status_text", c_char_p, S, c_int)
loom_status_free = _fn("loom_status_free", None, S)
loom_code_name = _fn("loom_code_name", c_char_p, c_int)
loom_dtype_name = _fn("loom_dtype_name", c_char_p, c_int)
loom_dtype_size = _fn("loom_dtype_size", c_size_t, c_int)

# compiler (src/loom.h)
loom_compile_file = _fn("loom_compile_file", S, c_char_p, POINTER(CompileOptions), PP)
loom_compile_buffer = _fn(
    "loom_compile_buffer", S, c_char_p, c_size_t, c_char_p, c_char_p, POINTER(CompileOptions), PP
)
loom_compiled_free = _fn("loom_compiled_free", None, c_void_p)
loom_compiled_save = _fn("loom_compiled_save", S, c_void_p, c_char_p)
loom_compiled_open = _fn("loom_compiled_open", S, c_void_p, POINTER(RtOptions), PP)
loom_compiled_memory_peak = _fn("loom_compiled_memory_peak", S, c_void_p, c_char_p, POINTER(c_void_p))
loom_interp_call_buffer = _fn(
    "loom_interp_call_buffer",
    S,
    c_char_p,
    c_size_t,
    c_char_p,
    c_char_p,
    c_char_p,
    PP,
    c_uint32,
    POINTER(RtOutputs),
)
loom_sym_text_simplify = _fn("loom_sym_text_simplify", S, c_char_p, POINTER(c_char_p), c_uint32, POINTER(c_void_p))
loom_sym_text_prove = _fn("loom_sym_text_prove", S, c_char_p, POINTER(c_char_p), c_uint32, POINTER(c_int32))
loom_sym_text_eval = _fn(
    "loom_sym_text_eval", S, c_char_p, POINTER(c_char_p), POINTER(c_int64), c_uint32, POINTER(c_int64)
)

# runtime (src/loomrt.h)
loom_rt_open = _fn("loom_rt_open", S, c_char_p, POINTER(RtOptions), PP)
loom_rt_close = _fn("loom_rt_close", None, c_void_p)
loom_rt_function_count = _fn("loom_rt_function_count", c_uint32, c_void_p)
loom_rt_function_name = _fn("loom_rt_function_name", c_char_p, c_void_p, c_uint32)
loom_rt_param_count = _fn("loom_rt_param_count", c_uint32, c_void_p, c_uint32)
loom_rt_param_get = _fn("loom_rt_param_get", None, c_void_p, c_uint32, c_uint32, POINTER(RtParam))
loom_rt_signature_text = _fn("loom_rt_signature_text", None, c_void_p, c_uint32, c_char_p, c_size_t)
loom_rt_threads = _fn("loom_rt_threads", c_uint32, c_void_p)
loom_rt_set_threads = _fn("loom_rt_set_threads", S, c_void_p, c_uint32)
loom_rt_call = _fn("loom_rt_call", S, c_void_p, c_char_p, PP, c_uint32, POINTER(RtOutputs))
# desc and res are passed as addresses (array.array buffers: cheaper to make than ctypes arrays)
loom_rt_call_packed = _fn(
    "loom_rt_call_packed", S, c_void_p, c_char_p, c_void_p, c_size_t, c_uint32, POINTER(RtOutputs), c_void_p, c_size_t
)
ARG_HOST, ARG_TENSOR, ARG_HOST_AT = 0, 1, 2  # LOOM_RT_ARG_* (src/loomrt.h)
loom_rt_outputs_free = _fn("loom_rt_outputs_free", None, POINTER(RtOutputs))
loom_rt_tensor_new = _fn("loom_rt_tensor_new", S, c_void_p, c_int, c_int32, POINTER(c_int64), PP)
loom_rt_tensor_borrow = _fn(
    "loom_rt_tensor_borrow", S, c_void_p, c_int, c_int32, POINTER(c_int64), c_void_p, c_size_t, PP
)
loom_rt_tensor_from_dlpack = _fn("loom_rt_tensor_from_dlpack", S, c_void_p, c_void_p, PP)
loom_tensor_release = _fn("loom_tensor_release", None, c_void_p)
loom_tensor_is_borrowed = _fn("loom_tensor_is_borrowed", c_bool, c_void_p)
loom_tensor_to_dlpack = _fn("loom_tensor_to_dlpack", S, c_void_p, PP)
class AbiField(Structure):
    """loom_abi_field (src/loomrt.h): one field of a struct, or (field NULL) the struct's size."""

    _fields_ = [("type", c_char_p), ("field", c_char_p), ("offset", c_uint64), ("size", c_uint64)]


loom_rt_abi = _fn("loom_rt_abi", POINTER(AbiField), POINTER(c_size_t))
loom_compile_abi = _fn("loom_compile_abi", POINTER(AbiField), POINTER(c_size_t))
loom_vm_obj_release = _fn("loom_vm_obj_release", None, c_void_p)
loom_vm_obj_kind_name = _fn("loom_vm_obj_kind_name", c_char_p, c_uint32)

libc_free = ctypes.CDLL(None).free
libc_free.restype = None
libc_free.argtypes = [c_void_p]


# The ctypes mirrors, by the C struct each copies.
MIRRORS = {
    "loom_rt_options": RtOptions,
    "loom_rt_param": RtParam,
    "loom_rt_outputs": RtOutputs,
    "loom_tensor": TensorStruct,
    "loom_compile_options": CompileOptions,
}


def abi_mismatches(rows, mirrors) -> list[str]:
    """What differs between the library's struct layouts (`rows`: (type, field or None, offset,
    size) tuples, loom_rt_abi's form) and the ctypes `mirrors`: a field missing, added, out of
    order, at another offset or of another size, or another struct size."""
    layouts: dict[str, list] = {}
    sizes: dict[str, int] = {}
    for t, f, off, size in rows:
        if f is None:
            sizes[t] = size
        else:
            layouts.setdefault(t, []).append((f, off, size))
    bad = []
    for t, cls in mirrors.items():
        if t not in sizes:
            bad.append(f"{t}: not described by the library")
            continue
        c_fields = layouts.get(t, [])
        py_fields = [(f, getattr(cls, f).offset, getattr(cls, f).size) for f, *_ in cls._fields_]
        if [f for f, *_ in c_fields] != [f for f, *_ in py_fields]:
            bad.append(f"{t}: the library has fields {[f for f, *_ in c_fields]}, this package "
                       f"{[f for f, *_ in py_fields]}")
            continue
        for (f, off, size), (_, poff, psize) in zip(c_fields, py_fields):
            if (off, size) != (poff, psize):
                bad.append(f"{t}.{f}: offset {off} size {size} in the library, {poff} / {psize} here")
        if sizes[t] != ctypes.sizeof(cls):
            bad.append(f"{t}: {sizes[t]} bytes in the library, {ctypes.sizeof(cls)} here")
    return bad


def library_abi() -> list:
    rows = []
    for fn in (loom_rt_abi, loom_compile_abi):
        n = c_size_t()
        p = fn(ctypes.byref(n))
        for i in range(n.value):
            r = p[i]
            rows.append((r.type.decode(), r.field.decode() if r.field else None, r.offset, r.size))
    return rows


def _check_layout() -> None:
    """Refuses a libloom.so whose structs differ from the mirrors here (a stale build)."""
    bad = abi_mismatches(library_abi(), MIRRORS)
    if bad:
        raise ImportError(f"loom: {_library_path()} does not match this package ({'; '.join(bad)}): rebuild the package")


_check_layout()

# dtypes: the library's names, index = loom_dtype
DTYPE_NAMES: list[str] = []
for _i in range(64):
    _n = loom_dtype_name(_i).decode()
    if _n == "?":
        break
    DTYPE_NAMES.append(_n)
DTYPE_INDEX = {n: i for i, n in enumerate(DTYPE_NAMES)}

# ---- PyCapsule (DLPack exchange) ----
_py = ctypes.pythonapi
PyCapsule_New = _py.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
PyCapsule_GetPointer = _py.PyCapsule_GetPointer
PyCapsule_GetPointer.restype = c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
PyCapsule_SetName = _py.PyCapsule_SetName
PyCapsule_SetName.restype = c_int
PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
# The destructor gets the capsule as a raw pointer (it is being destroyed).
PyCapsule_IsValid_raw = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _py))
PyCapsule_GetPointer_raw = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _py))
