"""Maintenance side of the vLLM release catalog: wheels in, key tables out.

`refresh()` fetches (or reuses) one PyPI wheel per vLLM release, reads the few config
modules straight out of the zip with `ast` (`vllm_extract`) and writes the table that
`vllm_catalog` ships. vLLM is never imported: the wheels need CUDA and torch, and
importing a release is not the same as reading what it declares.

This is an edge module (network, subprocess, disk). Everything that looks at source
text is a plain function of bytes, so tests drive it with a tiny hand-made wheel.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from triagebot.engines.vllm_catalog import (
    ReleaseInfo,
    ReleaseTable,
    version_key,
)
from triagebot.engines.vllm_extract import extract_release, wheel_version

# The maintenance command's defaults: every final release of these minors, plus the
# releases tests and the issue name exactly (listed so a PyPI hiccup shows up as a
# recorded failure rather than a missing row).
MINORS = range(9, 34)
EXACT_RELEASES = ("0.8.5", "0.10.0", "0.10.1.1", "0.11.0", "0.17.1", "0.20.2", "0.33.0")

# What `triagebot engines refresh-vllm` writes and where it keeps wheels by default.
SHIPPED_TABLE = Path(__file__).resolve().parent / "data" / "vllm_releases.json"
DEFAULT_CACHE = Path.home() / ".cache" / "triagebot" / "vllm-wheels"  # ~16 GB for 0.8.5-0.33

_RELEASE_RE = re.compile(r"^\d+(\.\d+)*$")

Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]


# ---------------------------------------------------------------------------------------
# Top level


def refresh(
    versions: list[str] | None,
    out: Path,
    cache: Path,
    *,
    offline: bool = False,
    keep_wheels: bool = True,
    merge: bool = True,
    runner: Runner | None = None,
    log: Callable[[str], None] | None = None,
) -> ReleaseTable:
    """Build the release table for `versions` and write it to `out`.

    `versions` holds release strings ("0.17.1") or paths to local wheels; None means the
    default set (`default_versions`). Wheels are looked up in `cache` first and
    downloaded into it unless `offline`. With `merge`, releases already in `out` that
    were not refreshed are kept, so adding one release does not need every wheel.
    """
    run = runner or _run
    say = log or (lambda _msg: None)
    cache.mkdir(parents=True, exist_ok=True)
    wanted = versions if versions is not None else default_versions(cache, offline, run)
    releases: dict[str, ReleaseInfo] = dict(_load_existing(out).releases) if merge else {}
    for item in wanted:
        info = _refresh_one(item, cache, offline, keep_wheels, run)
        say(f"{info.version}: " + ("ok" if info.ok else f"FAILED ({info.error})"))
        releases[info.version] = info
    table = ReleaseTable(
        generated_by="triagebot engines refresh-vllm",
        releases=releases,
    )
    write_table(table, out)
    return table


def default_versions(cache: Path, offline: bool, run: Runner | None = None) -> list[str]:
    """Every final release of minors 0.9..0.33, plus `EXACT_RELEASES` (0.8.5 is the oldest
    release vLLM's CPU build has, so the oldest triagebot can provision).

    Every patch, not just the newest per minor: `resolve_release` only falls back to a
    lower release of the same minor, so a report on 0.17.0 needs 0.17.0 in the table.
    Online the candidates come from PyPI's index; offline from the cache's wheel names.
    A minor with no release at all is still listed (as X.Y.0) so the table records it
    as missing instead of silently skipping it.
    """
    available = _cached_versions(cache) if offline else _pypi_versions(run or _run)
    if not available and not offline:
        available = _cached_versions(cache)
    chosen = set(EXACT_RELEASES)
    for minor in MINORS:
        in_minor = [v for v in available if _is_release(v) and version_key(v)[:2] == (0, minor)]
        chosen.update(in_minor or [f"0.{minor}.0"])
    return sorted(chosen, key=version_key)


def write_table(table: ReleaseTable, out: Path) -> None:
    """Sorted keys, two-space indent, trailing newline: diffs show real changes only."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data = table.model_dump(mode="json")
    out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------
# One release: find or fetch a wheel, then extract


def _refresh_one(
    item: str, cache: Path, offline: bool, keep_wheels: bool, run: Runner
) -> ReleaseInfo:
    local = Path(item)
    if item.endswith(".whl") and local.is_file():
        version, wheel, origin = wheel_version(local), local, "local"
        if not version:
            return _failed(item, "cannot read a vllm version from the wheel's file name")
    else:
        version = item.removeprefix("v")
        if not _is_release(version):
            return _failed(version, f"not a release version: {item!r}")
        found = _find_cached(cache, version)
        origin = "cache"
        if found is None and offline:
            return _failed(version, "no wheel in cache (offline)")
        if found is None:
            found, error = _download(version, cache, run)
            origin = "pypi"
            if found is None:
                return _failed(version, error)
        wheel = found
    try:
        info = extract_release(wheel, version=version)
    except Exception as exc:  # one unreadable release must not cost the whole table
        info = _failed(version, f"{type(exc).__name__}: {exc}")
    if not keep_wheels and origin != "local":
        wheel.unlink(missing_ok=True)
    return info


def _failed(version: str, error: str) -> ReleaseInfo:
    return ReleaseInfo(version=version, ok=False, error=error)


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)


def _pip() -> list[str]:
    return [sys.executable, "-m", "pip"]


def _pypi_versions(run: Runner) -> list[str]:
    try:
        proc = run([*_pip(), "index", "versions", "vllm"])
    except (OSError, subprocess.SubprocessError):
        return []  # the caller falls back to the cache
    match = re.search(r"Available versions:\s*(.+)", proc.stdout)
    return [v.strip() for v in match.group(1).split(",")] if match else []


def _download(version: str, cache: Path, run: Runner) -> tuple[Path | None, str]:
    cmd = [*_pip(), "download", f"vllm=={version}", "--no-deps", "--only-binary=:all:"]
    try:
        proc = run([*cmd, "-d", str(cache)])
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"pip download failed: {type(exc).__name__}: {exc}"
    found = _find_cached(cache, version)
    if found is not None:
        return found, ""
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    if "No matching distribution" in (proc.stderr or ""):
        return None, f"not on PyPI as a wheel: {tail[0]}"
    return None, f"pip download failed (rc={proc.returncode}): {tail[0]}"


def _find_cached(cache: Path, version: str) -> Path | None:
    # Build tags exist ("vllm-0.21.0-1-cp38-..."), so match the parsed version exactly.
    hits = sorted(p for p in cache.glob("vllm-*.whl") if wheel_version(p) == version)
    return hits[0] if hits else None


def _cached_versions(cache: Path) -> list[str]:
    return sorted({wheel_version(p) for p in cache.glob("vllm-*.whl")} - {""}, key=version_key)


def _is_release(version: str) -> bool:
    return bool(_RELEASE_RE.match(version))


def _load_existing(out: Path) -> ReleaseTable:
    if not out.is_file():
        return ReleaseTable(generated_by="", releases={})
    return ReleaseTable.model_validate_json(out.read_text(encoding="utf-8"))
