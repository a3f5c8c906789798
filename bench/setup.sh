# bench/setup.sh — what bench/run and bench/ops need, from a fresh clone; sourced by both:
#
#   . bench/setup.sh; bench_setup SYSTEM...     (SYSTEM: the systems to be measured; none = all)
#
# 1. the pinned Zig and the Debian packages (scripts/setup) when `scripts/zig` cannot run yet;
# 2. bench/.venv (git-ignored) with the groups of bench/requirements.txt that the systems need
#    (`core` always), each group installed on its own: a peer that fails to install is reported in
#    bench/out/install-failures.txt and the run goes on without it;
# 3. Loom's benchmark programs in release mode (zig build bench -Doptimize=ReleaseFast) into zig-out/.
# $BENCH_PYTHON is then the venv's python. Exits the calling script on what it cannot go on without.

bench_setup() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
  local venv=bench/.venv wanted=" core $* " line tags group install t
  mkdir -p bench/out
  if ! scripts/zig version >/dev/null 2>&1; then
    echo "bench: Zig is not installed yet; running scripts/setup"
    scripts/setup || { echo "bench: scripts/setup failed" >&2; exit 1; }
  fi
  if [ ! -x "$venv/bin/python" ]; then
    echo "bench: creating $venv"
    python3 -m venv "$venv" || { echo "bench: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
    "$venv/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
  fi
  : > bench/out/install-failures.txt
  while IFS= read -r line; do
    case "$line" in '#'* | '') continue ;; esac
    group="${line%%#*}"
    tags="${line#*#}"
    [ "$tags" = "$line" ] && tags=core
    install=0
    if [ $# -eq 0 ]; then install=1; fi
    for t in $tags; do case "$wanted" in *" $t "*) install=1 ;; esac; done
    [ $install -eq 1 ] || continue
    # installed at the pinned version already?
    if "$venv/bin/python" - $group <<'PY' 2>/dev/null; then continue; fi
import sys
from importlib import metadata
for spec in sys.argv[1:]:
    name, ver = spec.split("==")
    if metadata.version(name) != ver:
        sys.exit(1)
PY
    echo "bench: installing $group"
    if ! "$venv/bin/pip" install -q $group > bench/out/pip.log 2>&1; then
      echo "bench: could not install $group: $(tail -1 bench/out/pip.log)" | tee -a bench/out/install-failures.txt >&2
    fi
  done < bench/requirements.txt
  for core in numpy onnx; do
    "$venv/bin/python" -c "import $core" 2>/dev/null || { echo "bench: the harness needs $core, which did not install" >&2; exit 1; }
  done
  echo "bench: building benchmark programs (ReleaseFast)"
  scripts/zig build bench -Doptimize=ReleaseFast || { echo "bench: build failed" >&2; exit 1; }
  BENCH_PYTHON="$venv/bin/python"
}
