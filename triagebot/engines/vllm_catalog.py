"""What each vLLM release accepts, and how to say a config so that release takes it.

vLLM turns an unknown `speculative_config` / `compilation_config` key into a crash,
and keys, method names and enum values moved between 0.8.5 and 0.33 (engines.md §7).
The facts live in `data/vllm_releases.json`, extracted from each release's own wheel
by `vllm_refresh` (`triagebot engines refresh-vllm`). This module only reads that
table: no I/O beyond the packaged file, no imports of vLLM.

Rule: a key or value a release cannot take is rejected with `ConfigRejected`, which
names it and lists what the release accepts. Nothing is silently dropped; a key is
only ever replaced by its documented successor or predecessor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DATA_FILE = "vllm_releases.json"

# ---------------------------------------------------------------------------------------
# The shipped table


class WheelProvenance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    filename: str
    sha256: str
    size: int
    commit: str | None = None  # short sha from vllm/_version.py; 0.10.0 has none


class ReleaseInfo(BaseModel):
    """Key names one release declares. Lists are sorted; enum members keep source order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

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


class ReleaseTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

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


def _reject_key(
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


# ---------------------------------------------------------------------------------------
# Translation: speculative_config


# Key renames confirmed by diffing consecutive releases' key sets (engines.md §7):
# each pair is (older name, newer name) and the two never coexist in one release.
COMPILATION_KEY_RENAMES: tuple[tuple[str, str], ...] = (
    ("level", "mode"),
    ("encoder_cudagraph_max_images_per_batch", "encoder_cudagraph_max_vision_items_per_batch"),
)
SPEC_KEY_RENAMES: tuple[tuple[str, str], ...] = ()

# 0.18.1-0.20.2 said strict/probabilistic; 0.21.0 folded both into "standard" and moved
# the difference to draft_sample_method (greedy draft == strict, sampled draft ==
# probabilistic). draft_sample_method itself said "gumbel" in 0.21.0, "probabilistic" after.
_STOCHASTIC_DRAFT = ("probabilistic", "gumbel")


def translate_speculative_config(
    cfg: Mapping[str, Any], version: str, *, model_type: str | None = None
) -> dict[str, Any]:
    """`cfg` rewritten for release `version`, or ConfigRejected.

    `model_type` (the target's or the draft's HF model_type) lets MTP be expressed on
    releases before the generic "mtp" method (0.10.x wanted e.g. "deepseek_mtp").
    """
    info = release_info(version)
    items = {str(k).replace("-", "_"): v for k, v in cfg.items()}  # vLLM normalises "-" too
    rejection: dict[str, Any] = {}
    consumed: set[str] = set()
    if "rejection_sample_method" in items:
        rejection, consumed = _translate_rejection(items, info)
    out: dict[str, Any] = {}
    for key, value in items.items():  # input order kept: rendered scripts stay readable
        if key == "rejection_sample_method":
            out.update(rejection)
            continue
        if key in consumed:
            continue
        new_key = _renamed(key, info.spec_config_keys, SPEC_KEY_RENAMES)
        if new_key not in info.spec_config_keys:
            raise _reject_key(key, value, info, info.spec_config_keys, "speculative_config")
        out[new_key] = _spec_value(new_key, value, info, model_type)
    return out


def _spec_value(key: str, value: Any, info: ReleaseInfo, model_type: str | None) -> Any:
    if key == "method" and value is not None:
        return _translate_method(str(value), info, model_type)
    if key == "draft_sample_method" and isinstance(value, str):
        value = _alias(value, info.spec_literals.get(key, []), _STOCHASTIC_DRAFT)
    return _check_literal(key, value, info.spec_literals, info, "speculative_config")


def _translate_method(method: str, info: ReleaseInfo, model_type: str | None) -> str:
    methods = info.spec_literals.get("method", [])
    is_mtp = method == "mtp" or method.endswith("_mtp")
    if is_mtp and "mtp" in methods:
        return "mtp"  # every *_mtp is rewritten to "mtp" from 0.11 on (with a warning)
    if method in methods:
        return method
    if method == "[ngram]" and "ngram" in methods:
        return "ngram"
    if is_mtp:
        legacy = _legacy_mtp_method(method, info, model_type)
        if legacy is not None:
            return legacy
        reason = (
            f"release predates method 'mtp'; the MTP method is named per model type "
            f"(known: {', '.join(sorted(info.mtp_method_by_model_type)) or 'none'})"
        )
        raise ConfigRejected("method", method, info.version, methods, reason=reason)
    raise ConfigRejected("method", method, info.version, methods)


def _legacy_mtp_method(method: str, info: ReleaseInfo, model_type: str | None) -> str | None:
    """Before 0.11: pick e.g. "deepseek_mtp" from the draft or target model type."""
    candidates = [method] if method != "mtp" else []
    if model_type:
        candidates += [model_type, info.mtp_model_type_aliases.get(model_type, "")]
        candidates.append(f"{model_type}_mtp")
    methods = info.spec_literals.get("method", [])
    for candidate in filter(None, candidates):
        mapped = info.mtp_method_by_model_type.get(candidate)
        if mapped in methods:
            return mapped
    return None


def _translate_rejection(
    items: dict[str, Any], info: ReleaseInfo
) -> tuple[dict[str, Any], set[str]]:
    """rejection_sample_method across the strict/probabilistic -> standard rename.

    Returns the keys to emit in its place and the input keys it folded in.
    """
    value = items["rejection_sample_method"]
    if "rejection_sample_method" not in info.spec_config_keys:
        raise _reject_key(
            "rejection_sample_method", value, info, info.spec_config_keys, "speculative_config"
        )
    accepted = info.spec_literals.get("rejection_sample_method", [])
    out: dict[str, Any] = {}
    if value in ("strict", "probabilistic") and value not in accepted and "standard" in accepted:
        out["rejection_sample_method"] = "standard"
        draft_values = info.spec_literals.get("draft_sample_method", [])
        if value == "probabilistic" and "draft_sample_method" not in items:
            # probabilistic == standard with sampled drafts; without that key the
            # release would quietly run the strict variant.
            stochastic = [v for v in _STOCHASTIC_DRAFT if v in draft_values]
            if not stochastic:
                raise ConfigRejected(
                    "rejection_sample_method",
                    value,
                    info.version,
                    accepted,
                    reason="no draft_sample_method to express it",
                )
            out["draft_sample_method"] = stochastic[0]
        return out, set()
    if value == "standard" and value not in accepted and "strict" in accepted:
        draft = items.get("draft_sample_method", "greedy")
        if "draft_sample_method" in info.spec_config_keys:
            return {"rejection_sample_method": "strict"}, set()
        if draft not in ("greedy", *_STOCHASTIC_DRAFT):
            raise ConfigRejected(
                "draft_sample_method", draft, info.version, ["greedy", *_STOCHASTIC_DRAFT]
            )
        out["rejection_sample_method"] = "probabilistic" if draft in _STOCHASTIC_DRAFT else "strict"
        return out, {"draft_sample_method"}  # folded into the value above
    out["rejection_sample_method"] = _check_literal(
        "rejection_sample_method", value, info.spec_literals, info, "speculative_config"
    )
    return out, set()


# ---------------------------------------------------------------------------------------
# Translation: compilation_config


_LEGACY_GRAPH_FLAGS = ("use_cudagraph", "full_cuda_graph")


def translate_compilation_config(cfg: Mapping[str, Any], version: str) -> dict[str, Any]:
    """`cfg` rewritten for release `version`, or ConfigRejected."""
    info = release_info(version)
    keys = info.compilation_config_keys
    items = {str(k).replace("-", "_"): v for k, v in cfg.items()}
    out: dict[str, Any] = {}
    if any(k in items for k in (*_LEGACY_GRAPH_FLAGS, "cudagraph_mode")):
        out.update(_translate_graph_mode(items, info))
    for key, value in items.items():
        if key in (*_LEGACY_GRAPH_FLAGS, "cudagraph_mode"):
            continue
        new_key = _renamed(key, keys, COMPILATION_KEY_RENAMES)
        if new_key not in keys:
            raise _reject_key(key, value, info, keys, "compilation_config")
        if new_key in ("mode", "level"):
            value = _translate_compile_mode(new_key, value, info)
        out[new_key] = _check_literal(
            new_key, value, info.compilation_literals, info, "compilation_config"
        )
    return out


def _translate_graph_mode(items: dict[str, Any], info: ReleaseInfo) -> dict[str, Any]:
    """cudagraph_mode (0.10.1.1+) <-> use_cudagraph/full_cuda_graph (<= 0.11.0).

    0.10.1.1 itself migrates use_cudagraph=False -> NONE and full_cuda_graph=True -> FULL,
    which is the mapping used in both directions.
    """
    keys = info.compilation_config_keys
    flags = {k: items[k] for k in _LEGACY_GRAPH_FLAGS if k in items}
    if "cudagraph_mode" in items and flags:
        bad = next(iter(flags))
        raise ConfigRejected(
            bad,
            flags[bad],
            info.version,
            ["cudagraph_mode"],
            section="compilation_config",
            reason="mutually exclusive with cudagraph_mode; use only that",
        )
    if "cudagraph_mode" in items:
        mode = _graph_mode_name(items["cudagraph_mode"], info)
        if "cudagraph_mode" in keys:
            return {"cudagraph_mode": mode}
        legacy = {
            "NONE": {"use_cudagraph": False},
            "PIECEWISE": {"use_cudagraph": True, "full_cuda_graph": False},
            "FULL": {"use_cudagraph": True, "full_cuda_graph": True},
        }
        if mode in legacy and all(k in keys for k in legacy[mode]):
            return legacy[mode]
        raise ConfigRejected(
            "cudagraph_mode",
            items["cudagraph_mode"],
            info.version,
            list(legacy),
            section="compilation_config",
            reason="release predates cudagraph_mode",
        )
    if all(k in keys for k in flags):
        return flags
    if "cudagraph_mode" not in keys:
        bad = next(k for k in flags if k not in keys)
        raise _reject_key(bad, flags[bad], info, keys, "compilation_config")
    use, full = flags.get("use_cudagraph", True), flags.get("full_cuda_graph", False)
    if not use and full:
        raise ConfigRejected(
            "full_cuda_graph",
            full,
            info.version,
            ["cudagraph_mode"],
            section="compilation_config",
            reason="contradicts use_cudagraph=False",
        )
    # What the flags meant where they were real knobs (0.10.x): graphs on = PIECEWISE.
    return {"cudagraph_mode": "NONE" if not use else "FULL" if full else "PIECEWISE"}


def _graph_mode_name(value: Any, info: ReleaseInfo) -> str:
    modes = info.enums.get("CUDAGraphMode", [])
    # Before cudagraph_mode existed, judge against the modes the legacy flags can express.
    accepted = modes or ["NONE", "PIECEWISE", "FULL"]
    if isinstance(value, str) and value.upper() in accepted:
        return value.upper()  # vLLM upper-cases strings itself; normalising keeps plans stable
    reason = "" if modes else "release predates cudagraph_mode; use_cudagraph/full_cuda_graph"
    raise ConfigRejected(
        "cudagraph_mode", value, info.version, accepted, section="compilation_config", reason=reason
    )


def _translate_compile_mode(key: str, value: Any, info: ReleaseInfo) -> Any:
    """level (CompilationLevel) and mode (CompilationMode) share ints 0..3; names differ."""
    target = info.enums.get("CompilationMode" if key == "mode" else "CompilationLevel", [])
    other = info.enums.get("CompilationLevel" if key == "mode" else "CompilationMode", [])
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigRejected(key, value, info.version, target, section="compilation_config")
    if isinstance(value, int):
        if target and not 0 <= value < len(target):
            raise ConfigRejected(key, value, info.version, target, section="compilation_config")
        return value
    name = value.upper()
    if name in target:
        return name
    for names in (other, _KNOWN_MODE_NAMES, _KNOWN_LEVEL_NAMES):
        if name in names and names.index(name) < len(target):
            return target[names.index(name)]
    raise ConfigRejected(key, value, info.version, target, section="compilation_config")


# Declaration order of the two enums (same ints), for releases that have only one of them.
_KNOWN_MODE_NAMES = ["NONE", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE", "VLLM_COMPILE"]
_KNOWN_LEVEL_NAMES = ["NO_COMPILATION", "DYNAMO_AS_IS", "DYNAMO_ONCE", "PIECEWISE"]


# ---------------------------------------------------------------------------------------
# Engine arguments


def check_engine_args(kwargs: Mapping[str, Any], version: str) -> dict[str, Any]:
    """`LLM(**kwargs)` / EngineArgs kwargs, checked key by key; returned unchanged."""
    info = release_info(version)
    for key, value in kwargs.items():
        if key not in info.engine_arg_keys:
            raise _reject_key(key, value, info, info.engine_arg_keys, "engine argument")
    return dict(kwargs)


# ---------------------------------------------------------------------------------------
# Shared helpers


def _renamed(key: str, accepted: list[str], renames: tuple[tuple[str, str], ...]) -> str:
    """The name this release uses for `key`, following a rename in either direction."""
    if key in accepted:
        return key
    for old, new in renames:
        if key == old and new in accepted:
            return new
        if key == new and old in accepted:
            return old
    return key


def _alias(value: str, accepted: list[str], group: tuple[str, ...]) -> str:
    if value in accepted or value not in group:
        return value
    return next((v for v in group if v in accepted), value)


def _check_literal(
    key: str, value: Any, literals: dict[str, list[str]], info: ReleaseInfo, section: str
) -> Any:
    accepted = literals.get(key)
    if accepted is None or value is None or value in accepted:
        return value
    raise ConfigRejected(key, value, info.version, accepted, section=section)
