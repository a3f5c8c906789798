"""Symbolic shape arithmetic, as ``loom sym`` (docs/symbolic.md).

Names in expressions are shape variables (integers >= 0); the same name is the same variable.
Expressions use ``+ - *``, ``floordiv``, ``floormod``, ``min``, ``max``; claims compare with
``== != < <= > >=`` and combine with ``&& || !``. Facts (``"n >= 1"``, ``"n % 8 == 0"``,
``"m == n"``) hold while simplifying or proving.

    >>> loom.sym.simplify("floordiv(4*n + 8, 4)")
    'n + 2'
    >>> loom.sym.prove("n < n + 1")
    True
    >>> loom.sym.eval("2*n + floordiv(m, 2)", n=3, m=5)
    8
"""

from __future__ import annotations

import builtins
import ctypes
from ctypes import c_char_p, c_int32, c_int64, c_void_p
from typing import Iterable, Optional

from . import _capi
from ._errors import check

__all__ = ["simplify", "prove", "eval"]


def _facts(assume: Iterable[str] | str | None) -> tuple[ctypes.Array, int]:
    if assume is None:
        items: list[str] = []
    elif isinstance(assume, str):
        items = [assume]
    else:
        items = list(assume)
    arr = (c_char_p * max(len(items), 1))(*[f.encode() for f in items])
    return arr, len(items)


def simplify(expr: str, assume: Iterable[str] | str | None = None) -> str:
    """The canonical, fact-simplified form of `expr` (``"min(s, 4096)"`` with
    ``assume="s <= 100"`` is ``"s"``). A malformed expression raises a ParseError with a caret."""
    arr, n = _facts(assume)
    out = c_void_p()
    check(_capi.loom_sym_text_simplify(expr.encode(), arr, n, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode()
    finally:
        _capi.libc_free(out.value)


def prove(claim: str, assume: Iterable[str] | str | None = None) -> Optional[bool]:
    """True or False when Loom's prover decides `claim` (never wrong when it does), None when
    it cannot tell."""
    arr, n = _facts(assume)
    out = c_int32()
    check(_capi.loom_sym_text_prove(claim.encode(), arr, n, ctypes.byref(out)))
    return None if out.value < 0 else builtins.bool(out.value)


def eval(expr: str, **values: int) -> int:  # noqa: A001 - the verb of `loom sym eval`
    """The value of `expr` with the names bound to the integers given; an unbound name or an
    overflow raises LoomError."""
    names = list(values)
    n = len(names)
    arr_n = (c_char_p * max(n, 1))(*[k.encode() for k in names])
    arr_v = (c_int64 * max(n, 1))(*[int(values[k]) for k in names])
    out = c_int64()
    check(_capi.loom_sym_text_eval(expr.encode(), arr_n, arr_v, n, ctypes.byref(out)))
    return out.value
