"""Loom's status values as Python exceptions.

Every failing C call returns a ``loom_status``; :func:`check` turns it into an instance of a
:class:`LoomError` subclass chosen by the status code (src/base/status_codes.def), carrying
Loom's whole message (what failed, the input, axis and both values, and the "while ..." context
lines) and freeing the status.
"""

from __future__ import annotations

from . import _capi


class LoomError(Exception):
    """Any error Loom reports. ``code`` names the status code (``"TYPE_ERROR"``,
    ``"INVALID_ARGUMENT"``); the message is Loom's, with its "while ..." context lines."""

    code: str = "UNKNOWN"

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgumentError(LoomError, ValueError):
    """Bad input from the caller (a wrong value, a symbolic dim bound inconsistently)."""


class ParseError(LoomError, ValueError):
    """Text or binary input that does not parse (.loom text, an ONNX file, an expression)."""


class LoomTypeError(LoomError, TypeError):
    """A dtype, rank or shape that does not match what the function declares."""


class OutOfRangeError(LoomError, ValueError):
    """A value outside its domain: an index, a shape, an overflow."""


class NotFoundError(LoomError, LookupError):
    """A missing file, function or name."""


class UnimplementedError(LoomError, NotImplementedError):
    """A valid request Loom does not support yet."""


# keyed by the code's text in src/base/status_codes.def (loom_code_name)
_BY_CODE = {
    "invalid argument": InvalidArgumentError,
    "parse error": ParseError,
    "type error": LoomTypeError,
    "out of range": OutOfRangeError,
    "not found": NotFoundError,
    "unimplemented": UnimplementedError,
}


def error_from_status(status: int) -> LoomError:
    """The exception for a non-NULL status (which it frees)."""
    name = _capi.loom_code_name(_capi.loom_status_code(status)).decode()
    text = _capi.loom_status_text(status, 0).decode(errors="replace")
    _capi.loom_status_free(status)
    return _BY_CODE.get(name, LoomError)(text, name.upper().replace(" ", "_"))


def check(status) -> None:
    """Raises the LoomError of a failed C call; returns for OK (NULL)."""
    if status:
        raise error_from_status(status)
