"""Decide each ReproRequest field from the facts the extractors found.

The rule throughout: a value the reporter ran (a flag, a kwarg) beats one they describe;
a field stated with conflicting values is left null, because a wrong value costs a GPU
run and a null only asks the maintainer for it.

`resolve` below runs the deciders in order: `setup` for what was run, `compare` for
what is compared (with `scope` for whether the thread is ours), then the arms, workload
and missing fields here.
The facts they share are gathered in `assembler.Assembler`.
"""

from __future__ import annotations

import re
from typing import Any

from triagebot.parse import prose
from triagebot.parse.common import (
    as_bool,
    as_float,
    as_int,
    canonical_method,
    canonical_model,
)
from triagebot.parse.decide.arms import run_has_spec
from triagebot.parse.decide.assembler import Assembler, single
from triagebot.parse.decide.compare import decide_metrics, decide_scope
from triagebot.parse.decide.method import decide_method, decide_spec_tokens
from triagebot.parse.decide.modality import decide_modality
from triagebot.parse.decide.modes import decide_modes
from triagebot.parse.decide.settings import (
    decide_configs,
    decide_hardware,
    decide_parallel,
    decide_sampling,
)
from triagebot.parse.decide.setup import decide_engine, decide_models, decide_version
from triagebot.parse.envdump import EnvDump
from triagebot.parse.runs import spec_config_settings
from triagebot.request_model import Arm, ReportedNumber, ReproRequest, SourceInfo, Workload

__all__ = ["Assembler", "resolve", "single"]


def resolve(a: Assembler, dump: EnvDump, numbers: list[ReportedNumber]) -> ReproRequest:
    req = a.req
    env, env_evidence = dump.environment, dump.evidence
    lines = list(prose.iter_lines(a.doc.title, a.doc.body_lines, a.doc.layout))
    for fn in (prose.engine_mentions, prose.versions, prose.printed_versions, prose.models,
               prose.gpus, prose.numbers,
               prose.table_spec_tokens, prose.table_models):
        fn(lines, a.facts)
    a.add_run_facts()

    decide_engine(a, env)
    decide_version(a, dump)
    decide_models(a)
    decide_method(a)
    decide_spec_tokens(a)
    decide_parallel(a)
    decide_hardware(a, env, env_evidence, dump.gpu_count)
    decide_sampling(a)
    decide_configs(a)
    req.environment = env
    req.reported = numbers
    req.reported_metrics = decide_metrics(numbers)
    decide_scope(a, numbers)
    decide_modes(a, numbers)
    decide_modality(a)
    req.arms = _arms(a)
    req.workload = _workload(a)
    req.missing = _missing(req)
    if req.in_scope:
        req.missing += [f for f in a.conflicts if f not in req.missing]
    if "draft_models" in req.missing:
        req.suggestions["draft_models"] = _draft_suggestions(a)
        if not req.suggestions["draft_models"]:
            del req.suggestions["draft_models"]
    req.source = SourceInfo(title=a.doc.title, repo=a.repo, chars=a.doc.chars,
                            lines=len(a.doc.lines), scraped_page=a.doc.scraped,
                            truncated=a.doc.truncated)
    req.warnings = list(a.doc.warnings) + list(a.conflicts.values())
    return req


def _arms(a: Assembler) -> list[Arm]:
    arms: list[Arm] = []
    engine_runs = [r for r in a.runs if r.engine_side]
    for i, run in enumerate(engine_runs):
        spec_cfg = spec_config_settings(run.get("spec_config"))
        method = canonical_method(spec_cfg.get("method") or run.get("method")) or (
            "mtp" if run.get("mtp_flag") else None)
        tokens = as_int(spec_cfg.get("num_speculative_tokens")
                        or run.get("num_speculative_tokens"), 1, 64)
        eager = as_bool(run.get("enforce_eager")) if run.get("enforce_eager") is not None \
            else None
        comp = run.get("compilation_config")
        mode = str(comp["cudagraph_mode"]).upper() if isinstance(comp, dict) and \
            "cudagraph_mode" in comp else None
        runner = None
        flag = run.env.get("VLLM_USE_V2_MODEL_RUNNER")
        if flag is not None:
            runner = "v2" if as_bool(flag) else "v1"
        settings = {k2: _jsonable(v[0]) for k2, v in run.settings.items()}
        arms.append(Arm(name=run.name or f"{run.origin} #{i + 1}", spec=run_has_spec(run),
                        spec_method=method, num_speculative_tokens=tokens,
                        enforce_eager=eager, cudagraph_mode=mode, model_runner=runner,
                        settings=settings))
    return arms


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in list(value.items())[:100]}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in list(value)[:100]]
    return str(value)


def _workload(a: Assembler) -> Workload:
    w = Workload()
    programs = [r.origin for r in a.runs]
    if any("mm-processor" in p for p in programs):
        w.kind = "mm_processor"
    elif any(p in ("vllm bench serve", "sglang.bench_serving") or "benchmark_serving" in p
             or p.endswith("serve") or "launch_server" in p or "api_server" in p
             for p in programs):
        w.kind = "serve"
    elif any("latency" in p for p in programs):
        w.kind = "latency"
    elif any("throughput" in p for p in programs):
        w.kind = "throughput"
    elif any(r.origin.split(".")[-1] in ("LLM", "Engine") for r in a.runs):
        w.kind = "offline"
    if a.sampling:
        api = a.sampling.get("api")
        w.api = api if api in ("generate", "chat") else None
    w.dataset = single([str(f.value) for f in a.values("dataset")])
    path = single([str(f.value) for f in a.values("dataset_path")])
    if path and w.dataset in (None, "hf", "custom", "sharegpt"):
        w.dataset = f"{w.dataset}:{path}" if w.dataset else path
    w.backend = single([str(f.value) for f in a.values("backend")])
    w.input_len = single([as_int(f.value, 1) for f in a.values("input_len")])
    w.output_len = a.req.max_tokens
    w.num_prompts = single([as_int(f.value, 1) for f in a.values("num_prompts")])
    rates = [f.value for f in a.values("request_rate")]
    rate = single(rates)
    w.request_rate = None if rate in (None, "inf") else as_float(rate)
    ignore = [as_bool(f.value) for f in a.values("ignore_eos")]
    w.ignore_eos = single(ignore)
    limits = [f.value for f in a.values("mm_limits") if isinstance(f.value, dict)]
    if limits:
        w.image_inputs = single([as_int(v.get("image"), 0) for v in limits])
        w.video_inputs = single([as_int(v.get("video"), 0) for v in limits])
    w.image_size = single([size for f in a.values("mm_buckets")
                           for size in image_sizes(str(f.value))])
    return w


# One bucket of `--random-mm-bucket-config '{(224, 224, 1): 1.0}'`: (height, width,
# frames) and its weight; a bucket of one frame is an image, more frames a video.
_BUCKET = re.compile(r"\(\s*(\d{1,5})\s*,\s*(\d{1,5})\s*,\s*(\d{1,4})\s*\)\s*:\s*"
                     r"([0-9]*\.?[0-9]+)")


def image_sizes(config: str) -> list[tuple[int, int]]:
    """The (height, width) of each image bucket with a positive weight in a bucket
    config; videos' buckets are left out."""
    return [(int(h), int(w)) for h, w, frames, weight in _BUCKET.findall(config)
            if int(frames) == 1 and float(weight) > 0 and int(h) > 0 and int(w) > 0]


_ANY_HF_ID_RE = re.compile(r"(?<![\w/.:-])([A-Za-z0-9][\w.-]{1,60}/[A-Za-z0-9][\w.+-]{2,90})"
                           r"(?![\w/])")
_DRAFTISH_RE = re.compile(r"eagle|draft|speculator|medusa|dflash|assistant", re.I)


def _draft_suggestions(a: Assembler) -> list[str]:
    """Checkpoints anywhere in the thread whose name says they are drafts, for a method
    that needs one when no run or sentence says which draft ran."""
    found: list[str] = []
    targets = {m.lower() for m in a.req.models}
    for line in a.doc.body_lines:
        if "/" not in line or "github.com" in line:
            continue
        for m in _ANY_HF_ID_RE.finditer(line):
            name = canonical_model(m.group(1).rstrip(".,;:"))
            if name and _DRAFTISH_RE.search(name.split("/")[-1]) and \
                    name.lower() not in targets and name not in found:
                found.append(name)
    return found[:3]


def _missing(req: ReproRequest) -> list[str]:
    if not req.in_scope:
        return []
    missing = []
    for field, empty in (("engine", req.engine is None),
                         ("engine_version", req.engine_version is None
                          and req.engine_commit is None),
                         ("models", not req.models),
                         ("modes_compared", not req.modes_compared),
                         ("gpu", req.gpu is None),
                         ("max_tokens", req.max_tokens is None),
                         ("temperature", req.temperature is None),
                         ("workload", req.workload.kind is None)):
        if empty:
            missing.append(field)
    if req.is_spec_decode_perf_report:
        if req.spec_method is None:
            missing.append("spec_method")
        if not req.num_speculative_tokens:
            missing.append("num_speculative_tokens")
        if req.spec_method in ("eagle", "eagle3", "draft_model", "medusa", "dflash") and \
                not req.draft_models:
            missing.append("draft_models")
    return missing
