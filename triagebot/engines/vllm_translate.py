"""A plan's vLLM configs written for one release: speculative_config and compilation_config
keys, methods and enum values translated across renames, engine arguments checked, and
what the release cannot take refused with what it accepts (from `vllm_catalog`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from triagebot.engines.vllm_catalog import (
    ConfigRejected,
    ReleaseInfo,
    reject_key,
    release_info,
)

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
            raise reject_key(key, value, info, info.spec_config_keys, "speculative_config")
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
        raise reject_key(
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
            raise reject_key(key, value, info, keys, "compilation_config")
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
        raise reject_key(bad, flags[bad], info, keys, "compilation_config")
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
            raise reject_key(key, value, info, info.engine_arg_keys, "engine argument")
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
