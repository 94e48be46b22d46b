#!/usr/bin/env bash
# The GPU path on a GPU, offline, in minutes (docs/runners/gpu.md; bench/gpu_check.py).
#
#   python3 bench/gpu_check.py wheels               # first, here: fills .gpu/ (carried)
#   bash bench/gpu_check.sh                         # there: report.md etc. land in $OUT
#   bash bench/gpu_check.sh --dry-run               # the same steps on a CPU, small models
#   bash bench/gpu_check.sh --install-only          # the install alone (./dev test runs it)
#
# It installs the carried wheels (pydantic, transformers 5.24, the project built from this
# tree, ...) into a virtual environment that sees the machine's own packages (torch, ...)
# behind them, checks that the installed project is this tree, then runs
# `bench/gpu_check.py run`. PYTHON names the machine's interpreter (default python3),
# GPU_CHECK_CARRY the carried folder (default .gpu); further arguments go to `run`.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=gpu
case "${1:-}" in
    --dry-run) mode=dry-run; shift ;;
    --install-only) mode=install; shift ;;
esac
PYTHON=${PYTHON:-python3}
# The interpreter whose pip installs into the venv (pip --python); the machine's by default.
PIP_PYTHON=${PIP_PYTHON:-$PYTHON}
OUT=${OUT:-$PWD/gpu-check-out}
VENV=${GPU_CHECK_VENV:-/tmp/triagebot-gpu-venv}
CARRY=${GPU_CHECK_CARRY:-.gpu}
mkdir -p "$OUT"
# Nothing is fetched: the stand-ins are local folders, and a hub lookup would only hang.
export HF_HUB_OFFLINE=1
# Everything below is also in $OUT/check.log, which comes back with the report.
exec > >(tee "$OUT/check.log") 2>&1

clock() { date +%s%N; }
say() { echo "[gpu-check $(date +%H:%M:%S)] $*"; }
started=$(clock)

if ! ls "$CARRY"/wheels/*.whl >/dev/null 2>&1 || [ ! -f "$CARRY/seed-000.txt" ]; then
    say "error: $CARRY/ is empty: run 'python3 bench/gpu_check.py wheels' first, then carry .gpu"
    exit 2
fi
if command -v nvidia-smi >/dev/null; then nvidia-smi -L || true; fi

# A venv made from a venv sees only the base interpreter's packages, so the machine's own
# site-packages (torch, ...) are added behind the venv's with a .pth file: the carried
# wheels shadow the machine's copies (its older transformers), and nothing of the
# machine is changed.
rm -rf "$VENV"
"$PYTHON" -m venv --without-pip "$VENV"
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
"$PYTHON" - "$site/zz-machine-site.pth" <<'EOF'
import site, sys
with open(sys.argv[1], "w") as f:
    f.write("".join(f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages()))
EOF
# --ignore-installed: the venv holds every carried wheel, whatever the machine has.
"$PIP_PYTHON" -m pip --python "$VENV/bin/python" install --quiet --no-index --no-deps \
    --no-compile --ignore-installed --disable-pip-version-check "$CARRY"/wheels/*.whl
# The project wheel must be this tree: a stale one would test other code. (-P: the
# installed triagebot, not the tree's, is the one imported.)
"$VENV/bin/python" -P - <<'EOF'
import filecmp, pathlib, sys, triagebot
installed = pathlib.Path(triagebot.__file__).parent
pairs = [(p, installed / p.relative_to("triagebot")) for p in pathlib.Path("triagebot").rglob("*")]
pairs += [(p, installed / p) for p in pathlib.Path("repro_templates").rglob("*")]
stale = [str(src) for src, dst in pairs if src.is_file() and "__pycache__" not in src.parts
         and not (dst.is_file() and filecmp.cmp(src, dst, shallow=False))]
if stale:
    sys.exit(f"the carried triagebot wheel is not this tree ({', '.join(stale[:5])}): "
             "rerun bench/gpu_check.py wheels")
EOF
versions=$("$VENV/bin/python" -c '
import importlib.metadata as m
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return "missing"
print(", ".join(f"{n} {version(n)}" for n in ("triagebot", "pydantic", "transformers", "torch")))')
say "installed in $(( ($(clock) - started) / 1000000 )) ms: $versions"
case "$mode" in
    install) exit 0 ;;
    dry-run) args=(--size cpu --device cpu) ;;
    *) args=(--size gpu --device cuda) ;;
esac
status=0
PYTHONUNBUFFERED=1 "$VENV/bin/python" bench/gpu_check.py run --out "$OUT" \
    --seed "$CARRY/seed-000.txt" "${args[@]}" "$@" \
    || status=$?
say "done in $(( ($(clock) - started) / 1000000000 )) s (exit $status); files in $OUT:"
ls -la "$OUT"
exit "$status"
