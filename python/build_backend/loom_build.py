"""loom_build — the in-tree PEP 517 build backend of the Loom Python package.

``pip install ./python`` calls :func:`build_wheel`, which
  1. builds libloom.so (the whole C API of src/loom.h and src/loomrt.h as one shared library)
     with the project's pinned Zig: ``scripts/zig build python -Doptimize=ReleaseFast``
     ($LOOM_PY_OPTIMIZE picks another mode), into a temporary prefix;
  2. packs ``python/loom/*.py``, ``py.typed``, a generated ``_version.py`` and libloom.so into a
     wheel. libloom.so does not use CPython's ABI (ctypes loads it); when the running Python has
     its headers (python3-dev), the call-path extension ``loom._fastcall`` is built too
     (``-Dpython-include``) and the wheel is tagged for this CPython (cp311-cp311-<platform>),
     else py3-none-<platform> ($LOOM_PY_FASTCALL=0 leaves the extension out).
The version is the one in build.zig.zon. Nothing is downloaded; no compiler but Zig runs.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # python/
ROOT = PACKAGE_DIR.parent  # the Loom checkout
NAME = "loom"


def _version() -> str:
    zon = (ROOT / "build.zig.zon").read_text()
    m = re.search(r'\.version\s*=\s*"([^"]+)"', zon)
    if not m:
        raise RuntimeError(f"loom_build: no .version in {ROOT / 'build.zig.zon'}")
    return m.group(1)


def _platform_tag() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _python_include() -> str | None:
    """The running Python's include directory, when it has Python.h (python3-dev)."""
    inc = sysconfig.get_paths().get("include")
    return inc if inc and (Path(inc) / "Python.h").exists() else None


def _build_library(prefix: Path) -> Path:
    """Runs Zig; returns the built libloom.so (and, with Python's headers, libloom_fastcall.so
    beside it)."""
    zig = ROOT / "scripts" / "zig"
    if not (ROOT / "build.zig").exists() or not zig.exists():
        raise RuntimeError(f"loom_build: {ROOT} is not a Loom checkout (build the package from python/ inside one)")
    optimize = os.environ.get("LOOM_PY_OPTIMIZE", "ReleaseFast")
    cmd = [str(zig), "build", "python", f"-Doptimize={optimize}", "-p", str(prefix)]
    inc = _python_include()
    if inc and os.environ.get("LOOM_PY_FASTCALL", "1") != "0":
        cmd.append(f"-Dpython-include={inc}")
    print("loom_build: " + " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, cwd=ROOT, stdout=sys.stderr, stderr=sys.stderr)
    if r.returncode != 0:
        raise RuntimeError(
            f"loom_build: `{' '.join(cmd)}` failed (exit {r.returncode}); run scripts/setup first (it installs Zig "
            "and the system libraries), see README.md"
        )
    lib = prefix / "lib" / "libloom.so"
    if not lib.exists():
        raise RuntimeError(f"loom_build: the build made no {lib}")
    return lib


def _metadata(version: str) -> str:
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {version}\n"
        "Summary: Loom: a compiler and runtime for ML models with symbolic shapes\n"
        "Requires-Python: >=3.9\n"
        "Requires-Dist: numpy>=1.22\n"
    )


def _wheel_file(tag: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: loom_build\nRoot-Is-Purelib: false\nTag: {tag}\n"


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


# ---- PEP 517 hooks ----


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    files: list[tuple[str, bytes]] = []
    for p in sorted((PACKAGE_DIR / "loom").iterdir()):
        if p.suffix == ".py" or p.name == "py.typed":
            if p.name != "_version.py":
                files.append((f"loom/{p.name}", p.read_bytes()))
    files.append(("loom/_version.py", f'__version__ = "{version}"\n'.encode()))
    with tempfile.TemporaryDirectory(prefix="loom-wheel-") as tmp:
        lib = _build_library(Path(tmp))
        files.append(("loom/libloom.so", lib.read_bytes()))
        ext = lib.parent / "libloom_fastcall.so"
        if ext.exists():
            # the extension ties the wheel to this CPython version and ABI
            files.append((f"loom/_fastcall{sysconfig.get_config_var('EXT_SUFFIX')}", ext.read_bytes()))
            py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
            tag = f"{py}-{py}-{_platform_tag()}"
        else:
            tag = f"py3-none-{_platform_tag()}"
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_name = f"{NAME}-{version}-{tag}.whl"
    files.append((f"{dist_info}/METADATA", _metadata(version).encode()))
    files.append((f"{dist_info}/WHEEL", _wheel_file(tag).encode()))
    files.append((f"{dist_info}/top_level.txt", b"loom\n"))
    record = [_record_line(a, d) for a, d in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    out = Path(wheel_directory) / wheel_name
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            info = zipfile.ZipInfo(arcname, date_time=(2024, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if arcname.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError(
        "loom_build: the Python package builds from a Loom checkout (it needs the C sources and build.zig "
        "around python/); install it with `pip install ./python` instead of building an sdist"
    )
