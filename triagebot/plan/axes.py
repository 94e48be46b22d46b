"""What a plan varies: axes of levels, read from what the report compares.

Each level is a name (shown in labels and comparison names) and the cell fields it
sets. The first level of an axis is its baseline; the last is the configuration the
report is about (spec on, graphs on, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from triagebot.overrides import ReproOptions, SpecChoice
from triagebot.plan.defaults import K_BY_METHOD, Choices
from triagebot.plan_model import SpecParams
from triagebot.request_model import ReproRequest

# The order axes appear in labels, and the priority for the plan's main question.
AXIS_ORDER = ("spec", "variant", "cudagraph_mode", "encoder_graph", "graph")

DRAFTED_METHODS = {"eagle", "eagle3", "draft_model", "medusa", "dflash"}
GRAPH_MODES = {"piecewise": "PIECEWISE", "full": "FULL", "full_and_piecewise":
               "FULL_AND_PIECEWISE", "full_decode_only": "FULL_DECODE_ONLY"}
_REQUEST_MODES = {"cudagraph": "graph", "vit_cudagraph": "vit_graph"}
_LABEL_BAD = re.compile(r"[^A-Za-z0-9 _.,:=+/()@-]+")


@dataclass
class Level:
    name: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class Axis:
    name: str
    levels: list[Level]

    @property
    def baseline(self) -> Level:
        return self.levels[0]

    @property
    def treatment(self) -> Level:
        return self.levels[-1]


def safe_label(text: str, limit: int = 40) -> str:
    """A reporter's arm name cut to the characters labels allow."""
    cleaned = _LABEL_BAD.sub(" ", text).strip()
    return re.sub(r"\s+", " ", cleaned)[:limit].strip() or "arm"


def requested_modes(request: ReproRequest, options: ReproOptions) -> set[str]:
    if options.modes:
        return set(options.modes)
    return {_REQUEST_MODES.get(m, m) for m in request.modes_compared}


# --- spec ------------------------------------------------------------------------------


def spec_levels(
    request: ReproRequest, options: ReproOptions, draft: str | None, choices: Choices
) -> list[Level]:
    """The spec settings the plan runs: `[no_spec, mtp k=1, ...]`, or one fixed setting."""
    if options.spec:
        picked = list(dict.fromkeys(options.spec))
        picked.sort(key=lambda c: c.method is not None)  # no-spec, if asked, is the baseline
    elif request.spec_method is None and not options.num_speculative_tokens:
        return [Level("no_spec", {"spec": None})]
    else:
        method = request.spec_method or "ngram"
        ks = options.num_speculative_tokens or request.num_speculative_tokens
        if not ks:
            ks = [K_BY_METHOD[method]]
            choices.default("num_speculative_tokens", ks[0],
                            f"the usual k for {method}; the report does not say")
        picked = [SpecChoice(method=method, num_speculative_tokens=k) for k in dict.fromkeys(ks)]
        if _spec_is_compared(request, options, picked):
            picked.insert(0, SpecChoice())
    return [_spec_level(c, request, draft, choices, many=len(picked) > 2) for c in picked]


def _spec_is_compared(request: ReproRequest, options: ReproOptions,
                      picked: list[SpecChoice]) -> bool:
    """Whether no-spec belongs in the plan as the baseline of a spec axis."""
    modes = requested_modes(request, options)
    if "no_spec" in request.modes_compared or len(picked) > 1:
        return True
    if request.symptom == "spec_slower_than_baseline":
        return True
    # A report that compares something else with spec on (graph modes, runners) keeps
    # spec fixed; one that compares nothing asks the basic question.
    others = modes - {"spec", "no_spec"}
    return not others and request.symptom in (None, "other")


def _spec_level(choice: SpecChoice, request: ReproRequest, draft: str | None,
                choices: Choices, *, many: bool) -> Level:
    if choice.method is None:
        return Level("no_spec", {"spec": None})
    k = choice.num_speculative_tokens or K_BY_METHOD[choice.method]
    if choice.num_speculative_tokens is None:
        choices.default("num_speculative_tokens", k, f"the usual k for {choice.method}")
    params = SpecParams(
        method=choice.method,
        num_speculative_tokens=k,
        draft_model=draft if choice.method in DRAFTED_METHODS else None,
    )
    name = f"{choice.method} k={k}" if many or request.spec_method != choice.method else "spec"
    return Level(name, {"spec": params})


# --- graphs ----------------------------------------------------------------------------


def graph_axis(request: ReproRequest, options: ReproOptions, spec_on: bool) -> Axis | None:
    modes = requested_modes(request, options)
    if options.modes:
        wanted = "eager" in modes and "graph" in modes
    else:
        wanted = "eager" in modes or request.symptom == "graph_slower_than_eager" or (
            request.symptom == "acceptance_drop" and spec_on)
    if not wanted:
        return None
    eager: dict[str, Any] = {"enforce_eager": True}
    if spec_on and _draft_eager_when_eager(request):
        eager["draft_enforce_eager"] = True
    return Axis("graph", [Level("eager", eager), Level("graph", {"enforce_eager": False})])


def _draft_eager_when_eager(request: ReproRequest) -> bool:
    """Whether the reporter's eager spec arm also made the draft eager explicitly."""
    for arm in request.arms:
        cfg = arm.settings.get("spec_config")
        if arm.enforce_eager and isinstance(cfg, dict) and cfg.get("enforce_eager") is True:
            return True
    return False


def cudagraph_mode_axis(request: ReproRequest, options: ReproOptions) -> Axis | None:
    named = [GRAPH_MODES[m] for m in GRAPH_MODES if m in requested_modes(request, options)]
    if request.cudagraph_mode and request.cudagraph_mode.upper() in GRAPH_MODES.values():
        named.append(request.cudagraph_mode.upper())
    named = list(dict.fromkeys(named))
    if not named:
        return None
    if len(named) == 1:
        # One named mode is compared with the mode it is usually weighed against.
        other = "PIECEWISE" if named[0] != "PIECEWISE" else "FULL_AND_PIECEWISE"
        named.append(other)
    order = ("NONE", "PIECEWISE", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE", "FULL")
    named.sort(key=order.index)
    return Axis("cudagraph_mode", [Level(m, {"cudagraph_mode": m}) for m in named])


def encoder_graph_axis(request: ReproRequest, options: ReproOptions) -> Axis | None:
    modes = requested_modes(request, options)
    cc = request.compilation_config or {}
    if not ({"vit_eager", "vit_graph"} & modes or cc.get("cudagraph_mm_encoder")):
        return None
    return Axis("encoder_graph", [Level("vit_eager", {"encoder_cudagraph": False}),
                                  Level("vit_graph", {"encoder_cudagraph": True})])


# --- variants the reporter ran ---------------------------------------------------------

_RUNNER = (("v2", re.compile(r"\b(?:MRV2|V2|runner v2|model runner v2)\b", re.I)),
           ("v1", re.compile(r"\b(?:MRV1|V1|runner v1|model runner v1)\b", re.I)))
_REJECTION = re.compile(r"\b(strict|probabilistic|synthetic|standard)\b", re.I)


def variant_axis(request: ReproRequest, options: ReproOptions) -> Axis | None:
    """Runner / rejection-sampling variants named in the reporter's result labels, or
    the distinct model / modality / parallelism set-ups of the reporter's arms."""
    if options.modes and {"v1", "v2"} <= set(options.modes):
        return Axis("variant", [Level("v1", {"model_runner": "v1"}),
                                Level("v2", {"model_runner": "v2"})])
    return _runner_variants(request) or _arm_variants(request)


def _runner_variants(request: ReproRequest) -> Axis | None:
    labels = list((request.reported_metrics.throughput_tok_s or {}).keys())
    labels += [a.name for a in request.arms]
    levels: dict[tuple[str | None, str | None], Level] = {}
    for label in labels:
        runner = next((r for r, rx in _RUNNER if rx.search(label)), None)
        m = _REJECTION.search(label)
        rejection = m.group(1).lower() if m else None
        if runner is None and rejection is None:
            continue
        fields: dict[str, Any] = {}
        if runner:
            fields["model_runner"] = runner
        if rejection:
            fields["rejection_sample_method"] = rejection
        name = " ".join(x for x in (runner, rejection) if x)
        levels.setdefault((runner, rejection), Level(name, fields))
    if len(levels) < 2:
        return None
    # The reporter's order, except that V1 (the old runner) is the baseline when present.
    ordered = sorted(levels.items(), key=lambda kv: kv[0][0] != "v1")
    return Axis("variant", [lv for _, lv in ordered])


def _arm_variants(request: ReproRequest) -> Axis | None:
    levels: dict[str, Level] = {}
    for arm in request.arms:
        fields = _arm_fields(arm.settings)
        if not fields:
            continue
        key = repr(sorted(fields.items()))
        if key not in levels:
            what = [safe_label(arm.name, 20)]
            if "model" in fields:
                what.append(safe_label(str(fields["model"]).split("/")[-1], 24))
            if "modality" in fields:
                what.append(str(fields["modality"]))
            levels[key] = Level(" ".join(what), fields)
    # An arm that states less than another (a serve line without its inputs) is the
    # same set-up seen partly, not a variant of its own.
    kept = [lv for lv in levels.values() if not any(
        lv is not other and lv.fields.items() < other.fields.items()
        for other in levels.values())]
    if len(kept) < 2:
        return None
    return Axis("variant", kept)


def _arm_fields(settings: dict[str, Any]) -> dict[str, Any]:
    """The cell fields an arm's settings pin down beyond the compared axes."""
    out: dict[str, Any] = {}
    if isinstance(settings.get("model"), str):
        out["model"] = settings["model"]
    tp = _as_int(settings.get("tp"))
    if tp:
        out["tensor_parallel_size"] = tp
    if settings.get("encoder_tp_mode") in ("data", "weights"):
        out["mm_encoder_tp_mode"] = settings["encoder_tp_mode"]
    limits = settings.get("mm_limits")
    if isinstance(limits, dict):
        images, videos = _as_int(limits.get("image")) or 0, _as_int(limits.get("video")) or 0
        if images or videos:
            out["modality"] = "video" if videos else "image"
            out["images_per_prompt"] = images
            out["videos_per_prompt"] = videos
    # Only set-ups that say what they ran count; a bare model name is not a variant.
    return out if set(out) - {"model"} else {}


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
