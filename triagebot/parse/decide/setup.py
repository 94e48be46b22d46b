"""Deciding what the reporter ran: engine and version, models, speculative method and
tokens per step, parallelism, GPU, sampling, and the raw configs."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from triagebot.model import (
    Environment,
)
from triagebot.parse.common import (
    PROGRAM_ENGINE,
    Fact,
    as_bool,
    as_float,
    as_int,
    canonical_gpu,
    canonical_method,
    canonical_model,
    canonical_version,
    version_key,
)
from triagebot.parse.decide.assembler import Assembler, single
from triagebot.parse.envdump import EnvDump
from triagebot.parse.prose import iter_lines
from triagebot.parse.runs import RunConfig

REPO_ENGINE = {"vllm-project/vllm": "vllm", "sgl-project/sglang": "sglang",
               "waybarrios/vllm-mlx": "vllm-mlx", "ggml-org/llama.cpp": "llama.cpp",
               "ggerganov/llama.cpp": "llama.cpp", "nvidia/tensorrt-llm": "tensorrt-llm",
               "vllm-project/vllm-ascend": "vllm-ascend",
               "huggingface/transformers": "transformers"}

# sglang runs native MTP heads under `--speculative-algorithm EAGLE`.
_NATIVE_MTP_MODEL_RE = re.compile(r"deepseek-(?:v3|r1)|qwen3[.-]?next|glm-4\.[5-9]|glm-5|mimo|"
                                  r"ernie-4\.5|kimi-k2|longcat|step-?3", re.I)
_PROSE_METHOD_RE = re.compile(
    r"(?<![\w-])(eagle[-_]?3|eagle[-_]?1?|mtp\d?|nextn|n-?gram|prompt[-_ ]lookup|"
    r"draft[-_ ]model|medusa|dflash|suffix decoding)(?![\w-])", re.I)


def decide_engine(a: Assembler, env: Environment) -> None:
    votes: Counter[str] = Counter()
    evidence: dict[str, list[Fact]] = {}
    for run in a.runs:
        engine = _run_engine(run)
        if engine:
            votes[engine] += 3
            fact = Fact("engine", engine, run.line, run.text, "cmdline")
            evidence.setdefault(engine, []).append(fact)
    mentions = a.facts.get("engine_mention")
    for f in mentions:
        votes[f.value] += 2 if f.kind == "title" else 1
        evidence.setdefault(f.value, []).append(f)
    if env.engine_version and "vllm" not in votes:
        votes["vllm"] += 1
    hint = REPO_ENGINE.get(a.repo or "")
    if not votes:
        if hint:
            a.req.engine = hint  # type: ignore[assignment]
            a.cite("engine", Fact("engine", hint, 0, f"repository {a.repo}", "repo", "hint"))
        return
    best = max(votes.values())
    leaders = [e for e, n in votes.items() if n == best]
    engine = hint if hint in leaders else leaders[0]
    # vllm-mlx and vllm-ascend reports say "vllm" too; the specific name wins when present.
    for specific in ("vllm-mlx", "vllm-ascend"):
        if engine == "vllm" and votes.get(specific, 0) >= max(2, best // 3):
            engine = specific
    a.req.engine = engine  # type: ignore[assignment]
    a.cite("engine", evidence.get(engine, []))


def _run_engine(run: RunConfig) -> str | None:
    origin = run.origin.lower()
    if origin.startswith(("llm", "vllm.llm", "engineargs", "asyncengineargs")):
        return "vllm"
    if origin.startswith(("sgl.", "sglang")):
        return "sglang"
    if origin.endswith("from_pretrained"):
        return "transformers"
    for prefix, engine in PROGRAM_ENGINE.items():
        if origin.startswith(prefix) or origin.startswith(f"python -m {prefix}"):
            return engine
    if "benchmark_serving" in origin or "vllm" in origin:
        return "vllm"
    return None


def decide_version(a: Assembler, dump: EnvDump) -> None:
    env, ev = dump.environment, dump.evidence
    engine = a.req.engine
    # A dump's own engine version counts only for that engine: an SGLang dump lists vLLM
    # as a package, and a vLLM dump may list SGLang.
    dump_engine = dump.engine or "vllm"
    if env.engine_version and engine in (dump_engine, None) and \
            canonical_version(env.engine_version):
        a.req.engine_version = canonical_version(env.engine_version)
        line, text = ev.get("engine_version", (0, ""))
        a.cite("engine_version", Fact("engine_version", a.req.engine_version, line, text,
                                      "envdump", "env"))
    elif engine and engine in env.packages and dump.engine in (None, engine) and \
            canonical_version(env.packages[engine]):
        a.req.engine_version = canonical_version(env.packages[engine])
        line, text = ev.get(f"package:{engine}", ev.get("packages", (0, "")))
        a.cite("engine_version", Fact("engine_version", a.req.engine_version, line, text,
                                      "envdump", "env"))
    else:
        stated = [f for f in a.facts.get("version") if f.value[0] == engine]
        upgrades = a.facts.get("version_upgrade")
        pool = upgrades or stated or a.facts.get("version_bare") or _labelled(a, engine)
        if pool:
            best = max(pool, key=lambda f: version_key(f.value if isinstance(f.value, str)
                                                       else f.value[1]))
            value = best.value if isinstance(best.value, str) else best.value[1]
            a.req.engine_version = value
            a.cite("engine_version", best)
    commit = env.engine_commit
    if commit:
        a.req.engine_commit = commit
        line, text = ev.get("engine_commit", (0, ""))
        a.cite("engine_commit", Fact("engine_commit", commit, line, text, "envdump", "env"))
    elif (commits := a.facts.get("commit")):
        a.req.engine_commit = commits[0].value
        a.cite("engine_commit", commits[0])


def _labelled(a: Assembler, engine: str | None) -> list[Fact]:
    """`version: X` lines that name no package, read as the engine's release: llama.cpp
    prints its build as a bare number (`version: 9330 (328874d05)`)."""
    out: list[Fact] = []
    for f in a.facts.get("version_label"):
        raw = str(f.value)
        value = f"b{raw}" if engine == "llama.cpp" and re.fullmatch(r"\d{4,5}", raw) \
            else canonical_version(raw)
        if value and engine:
            out.append(Fact("version", value, f.line, f.text, f.source, f.kind))
    return out


def decide_models(a: Assembler) -> None:
    drafts: list[tuple[str, Fact]] = []
    for f in a.values("draft"):
        raw = str(f.value)
        if raw.strip().lower() in ("[ngram]", "ngram"):
            continue
        name = canonical_model(raw)
        if name:
            drafts.append((name, f))
    engine_models = [f for f in a.values("model", engine_side_only=True)]
    # transformers loads the assistant with from_pretrained too: that load is the draft's.
    draft_ids = {n.lower() for n, _ in drafts}
    engine_models = [f for f in engine_models if not (
        "from_pretrained" in f.text and (canonical_model(f.value) or "").lower() in draft_ids)]
    client_models = [f for f in a.values("model") if f not in engine_models]
    targets: list[tuple[str, Fact]] = []
    for f in engine_models or client_models:
        name = canonical_model(f.value)
        if name:
            targets.append((name, f))
    if not targets:
        targets = [(f.value, f) for f in a.facts.get("model_prose")]
    if not drafts:
        drafts = [(f.value, f) for f in a.facts.get("draft_prose")]
    draft_names = _unique([n for n, _ in drafts])
    a.req.draft_models = [n for n in draft_names if n.lower() not in
                          {t.lower() for t, _ in targets} or not targets]
    a.req.models = _drop_shortened(
        [n for n in _unique([n for n, _ in targets])
         if n.lower() not in {d.lower() for d in a.req.draft_models}])
    a.cite("models", [f for n, f in targets if n in a.req.models])
    a.cite("draft_models", [f for n, f in drafts if n in a.req.draft_models])


def _drop_shortened(names: list[str]) -> list[str]:
    """Without a title's short form of an id the body spells out: "Qwen2.5-VL-7B" beside
    "Qwen/Qwen2.5-VL-7B-Instruct" is one model, named twice."""
    def tail(name: str) -> str:
        return name.split("/")[-1].lower()

    return [n for n in names if not any(
        m != n and "/" in m and "/" not in n and tail(m).startswith(tail(n)) for m in names)]


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(item.lower(), item)
    return list(seen.values())


def decide_method(a: Assembler) -> None:
    found: list[tuple[str, Fact]] = []
    for f in a.values("method"):
        method = canonical_method(f.value)
        if method:
            found.append((method, f))
    for f in a.values("mtp_flag"):
        found.append(("mtp", f))
    for f in a.values("draft"):
        raw = str(f.value).strip().lower()
        if raw in ("[ngram]", "ngram"):
            found.append(("ngram", f))
        elif not a.values("method"):
            found.append(("eagle3" if "eagle3" in raw.replace("-", "") else
                          "eagle" if "eagle" in raw else "draft_model", f))
    for f in a.values("prompt_lookup"):
        found.append(("ngram", f))
    if not found:
        for no, text, kind in iter_lines(a.doc.title, a.doc.body_lines):
            for m in _PROSE_METHOD_RE.finditer(text):
                method = canonical_method(re.sub(r"\d$", "", m.group(1)) if m.group(1).lower()
                                          .startswith("mtp") else m.group(1).replace(" ", "_"))
                if method:
                    found.append((method, Fact("method", method, no, text, "prose",
                                               "title" if kind == "title" else "prose")))
    if not found:
        return
    counts: Counter[str] = Counter()
    for method, f in found:
        counts[method] += 3 if f.kind == "title" else 1
    title_methods = [m for m, f in found if f.kind == "title"]
    method = title_methods[0] if title_methods and found[0][1].kind != "config" \
        else counts.most_common(1)[0][0]
    if method == "eagle" and counts.get("eagle3") and not any(
            m == "eagle" and f.kind != "title" for m, f in found):
        method = "eagle3"  # a title's "EAGLE" names the family; the body says which one
    if a.req.engine == "sglang" and method == "eagle" and not a.req.draft_models and any(
            _NATIVE_MTP_MODEL_RE.search(m) for m in a.req.models):
        method = "mtp"
    a.req.spec_method = method  # type: ignore[assignment]
    a.cite("spec_method", [f for m, f in found if m == method])


def decide_spec_tokens(a: Assembler) -> None:
    stated: list[int] = []
    cited: list[Fact] = []
    for f in a.values("num_speculative_tokens") + a.facts.get("num_speculative_tokens"):
        tokens = as_int(f.value, 1, 64)
        if tokens is not None:
            if tokens not in stated:
                stated.append(tokens)
            cited.append(f)
    a.req.num_speculative_tokens = sorted(stated)
    a.cite("num_speculative_tokens", cited)


def decide_parallel(a: Assembler) -> None:
    for key, field in (("tp", "tensor_parallel_size"), ("dp", "data_parallel_size")):
        facts = a.values(key, engine_side_only=True)
        values = [as_int(f.value, 1, 1024) for f in facts]
        value = single(values)
        if value is not None and value != 1:
            # Some engine runs state it and others leave the default: a sweep (1 vs N).
            engine_runs = [r for r in a.runs if r.engine_side and
                           _run_engine(r) in ("vllm", "sglang")]
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
    if len(groups) > 1:
        firsts = [g[0] for g in groups.values()]
        a.competing("gpu", firsts, [f.value for f in firsts])
    elif groups:
        same = next(iter(groups.values()))
        # "Apple Silicon" names the family; "M3 Ultra" the chip.
        a.req.gpu = max((f.value for f in same), key=lambda v: (v != "Apple Silicon", len(v)))
        a.cite("gpu", same)


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
