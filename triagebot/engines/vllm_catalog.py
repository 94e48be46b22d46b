"""What each vLLM release accepts, and how to say a config so that release takes it.

vLLM turns an unknown `speculative_config` / `compilation_config` key into a crash,
and keys, method names and enum values moved between 0.8.5 and 0.33 (engines.md §7).
The facts live in `data/vllm_releases.json`, extracted from each release's own wheel
by `vllm_refresh` (`triagebot engines refresh-vllm`). This module only reads that
table: no I/O beyond the packaged file, no imports of vLLM. `vllm_translate` writes a
plan's configs for one release from it.

Rule: a key or value a release cannot take is rejected with `ConfigRejected`, which
names it and lists what the release accepts. Nothing is silently dropped; a key is
only ever replaced by its documented successor or predecessor.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from pydantic import Field

from triagebot.frozen import Frozen

DATA_FILE = "vllm_releases.json"

# ---------------------------------------------------------------------------------------
# The shipped table


class WheelProvenance(Frozen):
    filename: str
    sha256: str
    size: int
    commit: str | None = None  # short sha from vllm/_version.py; 0.10.0 has none


class ReleaseInfo(Frozen):
    """Key names one release declares. Lists are sorted; enum members keep source order."""

    version: str
    ok: bool
    error: str | None = None
    wheel: WheelProvenance | None = None
    source_files: dict[str, str] = Field(default_factory=dict)
    spec_config_keys: list[str] = Field(default_factory=list)
    spec_literals: dict[str, list[str]] = Field(default_factory=dict)
    mtp_model_types: list[str] = Field(default_factory=list)
    mtp_model_type_aliases: dict[str, str] = Field(default_factory=dict)
    mtp_method_by_model_type: dict[str, str] = Field(default_factory=dict)
    compilation_config_keys: list[str] = Field(default_factory=list)
    compilation_literals: dict[str, list[str]] = Field(default_factory=dict)
    enums: dict[str, list[str]] = Field(default_factory=dict)
    engine_arg_keys: list[str] = Field(default_factory=list)
    env_vars: list[str] = Field(default_factory=list)
    has_mm_processor_bench: bool = False


class ReleaseTable(Frozen):
    schema_version: int = 1
    generated_by: str
    releases: dict[str, ReleaseInfo]


# ---------------------------------------------------------------------------------------
# Errors


class UnknownRelease(ValueError):
    """No usable table entry for the version (outside the table, or its extraction failed)."""


class ConfigRejected(ValueError):
    """Release `version` cannot take `key` (or `key=value`); `accepted` lists what it can."""

    def __init__(
        self,
        key: str,
        value: Any,
        version: str,
        accepted: list[str],
        *,
        section: str = "speculative_config",
        reason: str = "",
    ) -> None:
        self.key = key
        self.value = value
        self.version = version
        self.accepted = list(accepted)
        self.section = section
        self.reason = reason
        super().__init__(self._message())

    def _message(self) -> str:
        what = f"key {self.key!r}" if self.reason == "key" else f"{self.key}={self.value!r}"
        head = f"vLLM {self.version} does not accept {self.section} {what}"
        detail = "" if self.reason in ("", "key") else f" ({self.reason})"
        kind = "keys" if self.reason == "key" else f"values for {self.key}"
        return f"{head}{detail}; accepted {kind}: {', '.join(self.accepted) or '(none)'}"


def reject_key(
    key: str, value: Any, info: ReleaseInfo, accepted: list[str], section: str
) -> ConfigRejected:
    return ConfigRejected(key, value, info.version, accepted, section=section, reason="key")


# ---------------------------------------------------------------------------------------
# Versions


_VERSION_RE = re.compile(r"^v?(?P<release>\d+(?:\.\d+)*)(?P<rest>[^+]*)(?:\+.*)?$")


def version_key(version: str) -> tuple[int, ...]:
    """Numeric release tuple ("0.10.1.1" -> (0, 10, 1, 1)); suffixes are ignored here."""
    match = _VERSION_RE.match(version.strip())
    if match is None:
        raise UnknownRelease(f"not a version: {version!r}")
    return tuple(int(part) for part in match.group("release").split("."))


def _parse(version: str) -> tuple[tuple[int, ...], str]:
    match = _VERSION_RE.match(version.strip())
    if match is None:
        raise UnknownRelease(f"not a version: {version!r}")
    release = tuple(int(part) for part in match.group("release").split("."))
    # "0.9" in a report means the 0.9.0 line: compare it as 0.9.0, not below it.
    release += (0,) * (3 - len(release))
    return release, match.group("rest").lstrip(".-_").lower()


@cache
def load_table() -> ReleaseTable:
    text = resources.files("triagebot.engines").joinpath("data", DATA_FILE).read_text("utf-8")
    return ReleaseTable.model_validate(json.loads(text))


@cache
def _releases() -> tuple[str, ...]:
    ok = [v for v, info in load_table().releases.items() if info.ok]
    return tuple(sorted(ok, key=version_key))


def releases() -> list[str]:
    """Releases with usable data, oldest first."""
    return list(_releases())


def failed_releases() -> dict[str, str]:
    """Releases the last refresh could not read -> why."""
    return {v: i.error or "" for v, i in load_table().releases.items() if not i.ok}


@cache
def resolve_release(version: str) -> str:
    """The table release that stands for `version`.

    Exact match first ("v0.17.1", "0.17.1+cu129" count as exact). Otherwise the nearest
    lower known release of the same minor: a 0.17.0 report or a 0.23.1rc1.dev901 main
    build is described by 0.17.x / 0.23.0 keys better than by anything newer. A
    pre-release sorts below its release, so 0.11.0rc1 does not resolve to 0.11.0.
    """
    release, rest = _parse(version)
    known = releases()
    exact = [v for v in known if version_key(v) == release]
    if exact and not rest.startswith(("a", "b", "rc", "dev", "c", "pre")):
        return exact[0]
    below_or_equal = rest.startswith("post")
    candidates = [
        v
        for v in known
        if version_key(v)[:2] == release[:2]
        and (version_key(v) < release or (below_or_equal and version_key(v) == release))
    ]
    if not candidates:
        minor = ".".join(map(str, release[:2]))
        raise UnknownRelease(
            f"no known vLLM release for {version!r} (none at or below it in {minor}.x); "
            f"known: {', '.join(known)}"
        )
    return max(candidates, key=version_key)


def nearest_release(version: str) -> str:
    """The table release a plan runs for `version`, even one the table does not know.

    `resolve_release` when it has an answer; otherwise the newest known release below
    `version` (a build of an unknown minor sits on the code of the release before it),
    or the oldest known one for a version older than the whole table. Callers that take
    the fallback must say so: the keys checked are those of the release returned.
    Raises UnknownRelease only for text that is not a version ("latest", "").
    """
    try:
        return resolve_release(version)
    except UnknownRelease:
        release, _ = _parse(version)  # re-raises for non-versions
    known = releases()
    below = [v for v in known if version_key(v) < release]
    return max(below, key=version_key) if below else known[0]


def release_info(version: str) -> ReleaseInfo:
    return load_table().releases[resolve_release(version)]


# ---------------------------------------------------------------------------------------
# Questions


def spec_config_keys(version: str) -> list[str]:
    return list(release_info(version).spec_config_keys)


def compilation_config_keys(version: str) -> list[str]:
    return list(release_info(version).compilation_config_keys)


def engine_arg_keys(version: str) -> list[str]:
    """`EngineArgs` fields: the kwargs `LLM(...)` forwards, and the CLI flags' names."""
    return list(release_info(version).engine_arg_keys)


def engine_cli_flags(version: str) -> list[str]:
    return sorted("--" + key.replace("_", "-") for key in engine_arg_keys(version))


def spec_methods(version: str) -> list[str]:
    return list(release_info(version).spec_literals.get("method", []))


def rejection_sample_methods(version: str) -> list[str]:
    """[] for releases before `rejection_sample_method` existed (< 0.18)."""
    return list(release_info(version).spec_literals.get("rejection_sample_method", []))


def cudagraph_modes(version: str) -> list[str]:
    """CUDAGraphMode members; [] for 0.10.0, which only had use_cudagraph/full_cuda_graph."""
    return list(release_info(version).enums.get("CUDAGraphMode", []))


def encoder_cudagraph_keys(version: str) -> list[str]:
    """compilation_config keys for ViT/encoder graphs (cudagraph_mm_encoder, budgets...)."""
    keys = compilation_config_keys(version)
    return [k for k in keys if k == "cudagraph_mm_encoder" or k.startswith("encoder_cudagraph")]


def env_vars(version: str) -> list[str]:
    return list(release_info(version).env_vars)


def has_env_var(name: str, version: str) -> bool:
    return name in release_info(version).env_vars


def has_mm_processor_bench(version: str) -> bool:
    return release_info(version).has_mm_processor_bench


def synthetic_support(version: str) -> str | None:
    """Why vLLM `version` cannot pin acceptance (rejection_sample_method="synthetic" with
    per-position synthetic_acceptance_rates), or None when it can."""
    try:
        info = release_info(version)
    except (ConfigRejected, UnknownRelease) as exc:
        return str(exc)
    if ("synthetic_acceptance_rates" not in info.spec_config_keys
            or "synthetic" not in info.spec_literals.get("rejection_sample_method", [])):
        return (f"vLLM {version} has no synthetic acceptance mode (speculative_config "
                "rejection_sample_method='synthetic' with synthetic_acceptance_rates)")
    return None
