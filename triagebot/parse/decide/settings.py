"""Deciding how it ran: parallelism, the GPU and its count, sampling and client
concurrency, and the raw configs and environment."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from triagebot.parse.common import Fact, as_bool, as_float, as_int, canonical_gpu
from triagebot.parse.decide.assembler import Assembler, single
from triagebot.parse.decide.setup import run_engine
from triagebot.request_model import Environment


def decide_parallel(a: Assembler) -> None:
    for key, field in (("tp", "tensor_parallel_size"), ("dp", "data_parallel_size")):
        facts = a.values(key, engine_side_only=True)
        values = [as_int(f.value, 1, 1024) for f in facts]
        value = single(values)
        if value is not None and value != 1:
            # Some engine runs state it and others leave the default: a sweep (1 vs N).
            engine_runs = [r for r in a.runs if r.engine_side and
                           run_engine(r) in ("vllm", "sglang")]
            if any(r.get(key) is None for r in engine_runs) and len(engine_runs) > 1:
                value = None
        if not facts:
            facts = a.facts.get(key)
            value = single([as_int(f.value, 1, 1024) for f in facts])
        a.competing(field, facts, [as_int(f.value, 1, 1024) for f in facts])
        setattr(a.req, field, value)
        if value is not None:
            a.cite(field, facts)
    ep = [as_bool(f.value) for f in a.values("ep")]
    a.req.expert_parallel = single(ep)


def decide_hardware(a: Assembler, env: Environment, ev: dict[str, tuple[int, str]],
              env_count: int | None) -> None:
    if env.gpus:
        a.req.gpu = canonical_gpu(Counter(env.gpus).most_common(1)[0][0])
        line, text = ev.get("gpus", (0, ""))
        a.cite("gpu", Fact("gpu", a.req.gpu, line, text, "envdump", "env"))
        a.req.gpu_count = env_count or len(env.gpus)
        a.cite("gpu_count", Fact("gpu_count", a.req.gpu_count, line, text, "envdump", "env"))
        return
    _gpu(a)
    counts = a.facts.get("gpu_count")
    count = single([f.value for f in counts])
    a.competing("gpu_count", counts, [f.value for f in counts])
    if count is not None:
        a.req.gpu_count = count
        a.cite("gpu_count", counts)


def _gpu(a: Assembler) -> None:
    """The device a line about the reporter's hardware names, else one named bare. Devices
    that are one spelled twice ("H100", "H100 80GB HBM3") count once, the longer spelling
    being the more precise; two different devices named as strongly compete."""
    facts = a.facts.get("gpu") or a.facts.get("gpu_mention")
    groups: dict[str, list[Fact]] = {}
    for f in facts:
        groups.setdefault(_device_core(f.value), []).append(f)
    labelled = {core: g for core, g in groups.items()
                if any(_HARDWARE_LABEL_RE.match(f.text) for f in g)}
    primary = {core: g for core, g in labelled.items()
               if any(_PRIMARY_RE.match(f.text) for f in g)}
    if len(primary) == 1:
        labelled = primary  # "Primary device: X", "Secondary device: Y"
    if len(groups) > 1 and len(labelled) == 1:
        # A `GPU: X` line is the reporter's device; another named elsewhere is a
        # platform compared against or someone else's.
        groups = labelled
    if len(groups) > 1:
        firsts = [g[0] for g in groups.values()]
        a.competing("gpu", firsts, [f.value for f in firsts])
    elif groups:
        same = next(iter(groups.values()))
        # "Apple Silicon" names the family; "M3 Ultra" the chip.
        a.req.gpu = max((f.value for f in same), key=lambda v: (v != "Apple Silicon", len(v)))
        a.cite("gpu", same)


_HARDWARE_LABEL_RE = re.compile(r"^\W*(?:(?:primary|main|secondary|other|second)\s+)?(?:gpus?|"
                                r"hardware|devices?|accelerators?|npus?)\W*[:=]", re.I)
_PRIMARY_RE = re.compile(r"^\W*(?:primary|main)\s", re.I)


def _device_core(name: str) -> str:
    """The device a spelling names: `A100-SXM-80GB` and `A100 80G` are one A100, and Apple's
    chips are one machine whatever the spelling."""
    low = name.lower()
    if low.startswith("apple") or re.match(r"m[1-5] ", low):
        return "apple"
    m = re.match(r"(rtx\s?(?:pro\s?)?(?:a)?\d{4}|[a-z]+\d+[a-z]?)", low)
    return m.group(1).replace(" ", "") if m else low


def _run_or_prose(a: Assembler, name: str,
                  read: Callable[[Any], Any]) -> tuple[Any, list[Fact]]:
    """The one value the runs state for `name` (read and range-checked by `read`), else the
    one the prose states when no run states any; with the facts it came from."""
    facts = a.values(name)
    value = single([read(f.value) for f in facts])
    if value is None and not facts:
        facts = a.facts.get(name)
        value = single([f.value for f in facts])
    a.competing(name, facts, [read(f.value) for f in facts])
    return value, facts


def decide_sampling(a: Assembler) -> None:
    value, temps = _run_or_prose(a, "temperature", lambda v: as_float(v, 0.0, 5.0))
    if value is None and any(as_bool(f.value) is False for f in a.values("do_sample")):
        value, temps = 0.0, a.values("do_sample")
    a.req.temperature = value
    if value is not None:
        a.cite("temperature", temps)
    a.req.top_p = single([as_float(f.value, 0.0, 1.0) for f in a.values("top_p")])

    value_i, maxes = _run_or_prose(a, "max_tokens", lambda v: as_int(v, 1, 10_000_000))
    a.req.max_tokens = value_i
    if value_i is not None:
        a.cite("max_tokens", maxes)

    _concurrency(a)


def _concurrency(a: Assembler) -> None:
    """One client concurrency: a client flag, a benchmark's batch size, `--max-num-seqs 1`,
    the prose, or (weakest) the running-request count every decode log line agrees on.
    Null when the thread sweeps it ("at concurrency > 8", "high-concurrency loads")."""
    conc = a.values("concurrency") or [f for f in a.values("batch_size")
                                       if "bench" in f.text or "one_batch" in f.text]
    value = single([as_int(f.value, 1, 1_000_000) for f in conc])
    if value is None and not conc:
        seqs = [f for f in a.values("max_num_seqs") if as_int(f.value) == 1]
        conc = seqs or a.facts.get("concurrency")
        value = single([as_int(f.value, 1, 1_000_000) for f in conc])
    if not conc and (logs := a.facts.get("concurrency_log")):
        conc = logs
        value = single([as_int(f.value, 1, 1_000_000) for f in logs])
    a.competing("concurrency", conc, [as_int(f.value, 1, 1_000_000) for f in conc])
    sweep = a.facts.get("concurrency_sweep")
    if sweep and value is not None:
        a.conflicts["concurrency"] = (
            f"concurrency {value} is stated, but line {sweep[0].line} speaks of several "
            f"({sweep[0].value!r}); left empty for the reporter to confirm")
        value = None
    a.req.concurrency = value
    if value is not None:
        a.cite("concurrency", conc)


def decide_configs(a: Assembler) -> None:
    req = a.req
    specs = [f for f in a.values("spec_config") if isinstance(f.value, dict)]
    if specs:
        req.speculative_config = specs[-1].value
        a.cite("speculative_config", specs)
    comps = [f for f in a.values("compilation_config") if isinstance(f.value, dict)]
    if comps:
        req.compilation_config = comps[0].value
        a.cite("compilation_config", comps)
    modes = [str(f.value["cudagraph_mode"]).upper() for f in comps
             if "cudagraph_mode" in f.value] + [str(f.value).upper()
                                                for f in a.values("cudagraph_mode")]
    req.cudagraph_mode = single(modes)
    eager = [as_bool(f.value) for f in a.values("enforce_eager")]
    if eager and len(eager) == len([r for r in a.runs if r.engine_side]):
        req.enforce_eager = single(eager)
    elif eager and all(eager):
        req.enforce_eager = single(eager) if len(a.runs) <= 1 else None
    env: dict[str, str] = {}
    for run in a.runs + ([a.sampling] if a.sampling else []):
        env.update({k: v for k, v in run.env.items() if _interesting_env(k)})
    for name, value, _line in a.env_assignments:
        if _interesting_env(name):
            env.setdefault(name, value)
    req.env_vars = env
    runner_flag = env.get("VLLM_USE_V2_MODEL_RUNNER")
    if runner_flag is not None:
        req.model_runner = "v2" if as_bool(runner_flag) else "v1"
    backends = [str(f.value) for f in a.values("attention_backend")]
    if env.get("VLLM_ATTENTION_BACKEND"):
        backends.append(env["VLLM_ATTENTION_BACKEND"])
    req.attention_backend = single(backends)


def _interesting_env(name: str) -> bool:
    return name.startswith(("VLLM_", "SGLANG_", "CUDA_", "NCCL_", "TORCH", "PYTORCH_",
                            "MLX_", "HF_HUB_OFFLINE"))
