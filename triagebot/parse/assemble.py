"""Decide each ReproRequest field from the facts the extractors found.

The rule throughout: a value the reporter ran (a flag, a kwarg) beats one they describe;
a field stated with conflicting values is left null, because a wrong value costs a GPU
run and a null only asks the maintainer for it.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from triagebot.model import (
    Arm,
    Classification,
    Environment,
    Evidence,
    ReportedMetrics,
    ReportedNumber,
    ReproRequest,
    SourceInfo,
    Workload,
)
from triagebot.parse import classify, envdump, prose, results
from triagebot.parse.document import Document
from triagebot.parse.facts import Fact, Facts
from triagebot.parse.normalize import (
    canonical_gpu,
    canonical_method,
    canonical_mode,
    canonical_model,
    canonical_version,
    version_key,
)
from triagebot.parse.runs import RunConfig, spec_config_settings
from triagebot.parse.vocabulary import PROGRAM_ENGINE, as_bool, as_float, as_int

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


class Assembler:
    def __init__(self, doc: Document, repo: str | None) -> None:
        self.doc = doc
        self.repo = (repo or "").strip().lower() or None
        self.facts = Facts()
        self.req = ReproRequest()
        self.runs: list[RunConfig] = []
        self.sampling: RunConfig | None = None
        self.env_assignments: list[tuple[str, str, int]] = []
        self.conflicts: dict[str, str] = {}

    def competing(self, field: str, facts: list[Fact], values: list[Any]) -> None:
        """Record a field stated with different values: it stays null, and the warning
        quotes each reading so the bot can ask the reporter which one ran."""
        seen: list[tuple[Any, Fact]] = []
        for value, fact in zip(values, facts, strict=False):
            if value is not None and value not in [v for v, _ in seen]:
                seen.append((value, fact))
        if len(seen) > 1:
            spans = "; ".join(f"{v!r} at line {f.line}: {f.text.strip()[:80]!r}"
                              for v, f in seen[:4])
            self.conflicts[field] = (f"{field} is stated with {len(seen)} different values "
                                     f"({spans}); left empty for the reporter to confirm")

    # --- evidence -------------------------------------------------------------------

    def cite(self, field: str, facts: list[Fact] | Fact | None) -> None:
        if not facts:
            return
        items = facts if isinstance(facts, list) else [facts]
        out = self.req.evidence.setdefault(field, [])
        for f in items[:5]:
            ev = Evidence(line=f.line, text=f.text, source=f.source)
            if ev not in out:
                out.append(ev)

    # --- settings from runs -----------------------------------------------------------

    def add_run_facts(self) -> None:
        for run in self.runs + ([self.sampling] if self.sampling else []):
            for key, (value, line, text) in [*run.settings.items(), *run.later]:
                self.facts.add(f"run:{key}", value, line, text, run.source)
                if key == "spec_config":
                    for sub, val in spec_config_settings(value).items():
                        self.facts.add(f"run:{sub}", val, line, text, run.source)

    def values(self, key: str, engine_side_only: bool = False) -> list[Fact]:
        facts = self.facts.get(f"run:{key}")
        if engine_side_only:
            client_lines = {r.line for r in self.runs if not r.engine_side}
            facts = [f for f in facts if f.line not in client_lines]
        return facts


def single(values: list[Any]) -> Any:
    """The one value stated, or None when none or several different ones were."""
    distinct = []
    for v in values:
        if v is not None and v not in distinct:
            distinct.append(v)
    return distinct[0] if len(distinct) == 1 else None


def resolve(a: Assembler, dump: envdump.EnvDump, numbers: list[ReportedNumber]) -> ReproRequest:
    req = a.req
    env, env_evidence = dump.environment, dump.evidence
    lines = list(prose.iter_lines(a.doc.title, a.doc.body_lines))
    for fn in (prose.engine_mentions, prose.versions, prose.printed_versions, prose.models,
               prose.gpus, prose.numbers,
               prose.table_spec_tokens, prose.table_models):
        fn(lines, a.facts)
    a.add_run_facts()

    _engine(a, env)
    _version(a, dump)
    _models(a)
    _method(a)
    _spec_tokens(a)
    _parallel(a)
    _hardware(a, env, env_evidence, dump.gpu_count)
    _sampling(a)
    _configs(a)
    req.environment = env
    req.reported = numbers
    req.reported_metrics = _metrics(numbers)
    _classify(a, numbers)
    _modes(a)
    _modality(a)
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


def _engine(a: Assembler, env: Environment) -> None:
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


def _version(a: Assembler, dump: envdump.EnvDump) -> None:
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
        bare = a.facts.get("version_bare") if engine == "vllm" else []
        pool = upgrades or stated or bare
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


def _models(a: Assembler) -> None:
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


def _method(a: Assembler) -> None:
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
        for no, text, kind in prose.iter_lines(a.doc.title, a.doc.body_lines):
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


def _spec_tokens(a: Assembler) -> None:
    ks: list[int] = []
    cited: list[Fact] = []
    for f in a.values("k") + a.facts.get("k"):
        k = as_int(f.value, 1, 64)
        if k is not None:
            if k not in ks:
                ks.append(k)
            cited.append(f)
    a.req.num_speculative_tokens = sorted(ks)
    a.cite("num_speculative_tokens", cited)


def _parallel(a: Assembler) -> None:
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
            value = single([f.value for f in a.facts.get(key)])
            facts = a.facts.get(key)
        a.competing(field, facts, [as_int(f.value, 1, 1024) for f in facts])
        setattr(a.req, field, value)
        if value is not None:
            a.cite(field, facts)
    ep = [as_bool(f.value) for f in a.values("ep")]
    a.req.expert_parallel = single(ep)


def _hardware(a: Assembler, env: Environment, ev: dict[str, tuple[int, str]],
              env_count: int | None) -> None:
    if env.gpus:
        a.req.gpu = canonical_gpu(Counter(env.gpus).most_common(1)[0][0])
        line, text = ev.get("gpus", (0, ""))
        a.cite("gpu", Fact("gpu", a.req.gpu, line, text, "envdump", "env"))
        a.req.gpu_count = env_count or len(env.gpus)
        a.cite("gpu_count", Fact("gpu_count", a.req.gpu_count, line, text, "envdump", "env"))
        return
    gpus = a.facts.get("gpu")
    if gpus:
        # The first device named decides; a longer spelling of it elsewhere ("H100" then
        # "H100 80GB HBM3") is the more precise value.
        first = gpus[0].value.lower()
        same = [f for f in gpus if f.value.lower() in first or first in f.value.lower()]
        a.req.gpu = max((f.value for f in same), key=len)
        a.cite("gpu", same)
    counts = a.facts.get("gpu_count")
    count = single([f.value for f in counts])
    a.competing("gpu_count", counts, [f.value for f in counts])
    if count is not None:
        a.req.gpu_count = count
        a.cite("gpu_count", counts)
    elif not counts and a.req.gpu and re.match(r"M[1-5] ", a.req.gpu):
        a.req.gpu_count = 1  # Apple silicon: one device per machine


def _sampling(a: Assembler) -> None:
    temps = a.values("temperature")
    value = single([as_float(f.value, 0.0, 5.0) for f in temps])
    if value is None and not temps:
        temps = a.facts.get("temperature")
        value = single([f.value for f in temps])
    a.competing("temperature", temps, [as_float(f.value, 0.0, 5.0) for f in temps])
    if value is None and any(as_bool(f.value) is False for f in a.values("do_sample")):
        value, temps = 0.0, a.values("do_sample")
    a.req.temperature = value
    if value is not None:
        a.cite("temperature", temps)
    a.req.top_p = single([as_float(f.value, 0.0, 1.0) for f in a.values("top_p")])

    maxes = a.values("max_tokens")
    value_i = single([as_int(f.value, 1, 10_000_000) for f in maxes])
    if value_i is None and not maxes:
        maxes = a.facts.get("max_tokens")
        value_i = single([f.value for f in maxes])
    a.competing("max_tokens", maxes, [as_int(f.value, 1, 10_000_000) for f in maxes])
    a.req.max_tokens = value_i
    if value_i is not None:
        a.cite("max_tokens", maxes)

    conc = a.values("concurrency") or [f for f in a.values("batch_size")
                                       if "bench" in f.text or "one_batch" in f.text]
    value_c = single([as_int(f.value, 1, 1_000_000) for f in conc])
    if value_c is None and not conc:
        seqs = [f for f in a.values("max_num_seqs") if as_int(f.value) == 1]
        conc = seqs or a.facts.get("concurrency")
        value_c = single([as_int(f.value) for f in conc])
    a.competing("concurrency", conc, [as_int(f.value, 1, 1_000_000) for f in conc])
    a.req.concurrency = value_c
    if value_c is not None:
        a.cite("concurrency", conc)


def _configs(a: Assembler) -> None:
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


def _metrics(numbers: list[ReportedNumber]) -> ReportedMetrics:
    return results.summarise(numbers)


def _classify(a: Assembler, numbers: list[ReportedNumber]) -> None:
    body = "\n".join(a.doc.body_lines)
    signals = classify.Signals(
        spec_configured=bool(a.req.speculative_config or a.values("method")
                             or a.values("mtp_flag") or a.req.draft_models
                             or a.values("prompt_lookup")),
        graph_configured=bool(a.values("enforce_eager") or a.req.cudagraph_mode
                              or a.values("encoder_graph")),
        has_numbers=any(n.metric.endswith(("tok_s", "_ms_mean", "acceptance_rate",
                                           "acceptance_length", "e2e_latency_s"))
                        for n in numbers),
        traceback="Traceback (most recent call last)" in body,
    )
    v = classify.classify(a.doc.title or "", body, signals)
    if v.in_scope and v.symptom is None:
        v.symptom, v.symptom_reasons = _symptom_from_numbers(a.req, v.is_spec)
    a.req.in_scope = v.in_scope
    a.req.is_spec_decode_perf_report = v.is_spec
    a.req.symptom = v.symptom  # type: ignore[assignment]
    a.req.classification = Classification(
        in_scope_reasons=v.in_scope_reasons, spec_reasons=v.spec_reasons,
        out_of_scope_reasons=v.out_of_scope_reasons, symptom_reasons=v.symptom_reasons)
    a.req.scope_reasons = list(v.in_scope_reasons if v.in_scope else v.out_of_scope_reasons)


def _symptom_from_numbers(req: ReproRequest, spec: bool) -> tuple[str | None, list[str]]:
    """A problem stated only by the numbers: the spec arm's tok/s below the baseline's,
    or the graph arm's below eager's. Only arms whose names say which is which count."""
    speeds: dict[str, list[tuple[float, str]]] = {}
    for num in req.reported:
        if num.metric == "output_tok_s" and num.arm:
            for kind in arm_kinds(num.arm):
                speeds.setdefault(kind, []).append((num.value, num.arm))
    for on, off, symptom in (("spec", "no_spec", "spec_slower_than_baseline"),
                             ("cudagraph", "eager", "graph_slower_than_eager")):
        if (on == "spec" and not spec) or not speeds.get(on) or not speeds.get(off):
            continue
        slow, fast = max(speeds[on]), max(speeds[off])
        if slow[0] < fast[0]:
            return symptom, [f"the numbers: {slow[1]!r} {slow[0]:g} tok/s < {fast[1]!r} "
                             f"{fast[0]:g} tok/s"]
    return None, []


_ENCODER_RE = re.compile(r"\bvit\b|vision (?:encoder|tower)|mm[-_ ]encoder|encoder[-_ ]"
                         r"(?:cuda ?graph|cudagraph|graph)|cudagraph_mm_encoder|vit_cuda_graph",
                         re.I)
_EAGER_RE = re.compile(r"(?<![\w-])(?:--)?(?:eager(?: mode)?|enforce[-_]eager|no[-_ ]graph|"
                       r"without (?:cuda ?graphs?|cudagraphs?))(?![\w-])", re.I)
_GRAPH_RE = re.compile(r"(?<![\w-])(?:cuda[-_ ]?graphs?|cudagraphs?|graph mode|_graph\b)", re.I)
_FULL_RE = re.compile(r"\bFULL(?:_AND_PIECEWISE|_DECODE_ONLY)?\b[ _-]*(?:cuda ?graphs?|"
                      r"cudagraphs?)|cudagraph_mode\W+FULL|\bFULL_AND_PIECEWISE\b|"
                      r"\bFULL_DECODE_ONLY\b|full cuda ?graph capture")
_PIECEWISE_RE = re.compile(r"\bpiecewise\b", re.I)
_CONFIG_MODE_RE = re.compile(r"CUDAGRAPH_MODE['\"]?\s*[:=]\s*['\"]?(?:CUDAGRAPHMODE\.)?"
                             r"(FULL_AND_PIECEWISE|FULL_DECODE_ONLY|FULL|PIECEWISE|NONE)\b",
                             re.I)
_FUTURE_RE = re.compile(r"upcoming|follow[- ]up|future|next pr|another pr|will be supported|"
                        r"todo|later", re.I)
_NO_SPEC_ARM_RE = re.compile(r"\bno[-_ ]?(?:spec|mtp|eagle|draft|sd)\b|baseline|without|w/o|"
                             r"vanilla|^main$|disabled?", re.I)
# How a results row, a labelled block or a table names its arm. An arm name that says
# "no MTP" or "baseline" is a run without speculation; one naming a method is a run with.
_ARM_NO_SPEC_RE = re.compile(
    r"\bno[-_ ]?(?:spec\w*|mtp|eagle\d?|draft|sd|ngram)\b|\bbaseline\b|\bwithout\b|"
    r"\bw/o\b|\bvanilla\b|\bplain\b|^\s*(?:off|none|disabled?|target(?: only)?|ar|"
    r"autoregressive|no)\s*$|\bdisabled?\b|\bnon[-_ ]spec", re.I)
_ARM_SPEC_RE = re.compile(
    r"spec(?:ulat\w*|[-_ ]?dec\w*)?\b|\bmtp\d?\b|\beagle[-_]?\d?\b|\bn-?gram\b|\bdraft\b|"
    r"\bmedusa\b|\bdflash\b|\bsuffix\b|\bnextn\b|prompt[-_ ]lookup|\bk\s?=\s?\d", re.I)
_ARM_EAGER_RE = re.compile(r"\beager\b|no[-_ ]?(?:cuda[-_ ]?)?graphs?\b|"
                           r"(?:cuda[-_ ]?graphs?|cudagraphs?)[-_ :=]*(?:off|none|disabled?)\b",
                           re.I)
_ARM_GRAPH_RE = re.compile(r"(?<!no )(?<!no-)(?<!no_)\b(?:cuda[-_ ]?graphs?|cudagraphs?|"
                           r"graph mode|graphs? on)\b", re.I)


def arm_kinds(name: str) -> set[str]:
    """The execution modes an arm's own name states: `spec`/`no_spec`, `eager`/`cudagraph`."""
    kinds: set[str] = set()
    if _ARM_NO_SPEC_RE.search(name):
        kinds.add("no_spec")
    elif _ARM_SPEC_RE.search(name):
        kinds.add("spec")
    if _ARM_EAGER_RE.search(name):
        kinds.add("eager")
    elif _ARM_GRAPH_RE.search(name):
        kinds.add("cudagraph")
    return kinds


def _reported_arms(req: ReproRequest) -> dict[str, tuple[set[str], ReportedNumber]]:
    """Arm names from results tables, labelled blocks and result lines, with their kinds."""
    arms: dict[str, tuple[set[str], ReportedNumber]] = {}
    for num in req.reported:
        if num.arm and num.arm not in arms:
            arms[num.arm] = (arm_kinds(num.arm), num)
    return arms


def _modes(a: Assembler) -> None:
    req = a.req
    text_lines = [(no, t) for no, t, _ in prose.iter_lines(a.doc.title, a.doc.body_lines)
                  if not _FUTURE_RE.search(t)]
    joined = "\n".join(t for _, t in text_lines)
    encoder = bool(_ENCODER_RE.search(a.doc.title or "")) or bool(a.values("encoder_graph")) \
        or any(isinstance(f.value, dict) and any("encoder" in k or "mm_encoder" in k
                                                 for k in f.value)
               for f in a.values("compilation_config"))
    modes: dict[str, Fact | None] = {}
    arm_modes: dict[str, Fact] = {}

    def add(mode: str, fact: Fact | None) -> None:
        if encoder and mode in ("eager", "cudagraph", "full", "piecewise"):
            mode = "vit_eager" if mode == "eager" else "vit_cudagraph"
        modes.setdefault(mode, fact)

    engine_runs = [r for r in a.runs if r.engine_side]
    spec_runs = [r for r in engine_runs if _run_has_spec(r)]
    if (req.is_spec_decode_perf_report or spec_runs) and (
            spec_runs or a.values("method") or req.speculative_config
            or _NO_SPEC_ARM_RE.search(joined) or req.reported_metrics.acceptance_length):
        add("spec", _first(a.values("spec_config") + a.values("method")
                           + a.values("mtp_flag")))
    if spec_runs and len(spec_runs) < len(engine_runs):
        baseline = next(r for r in engine_runs if not _run_has_spec(r))
        add("no_spec", Fact("mode", "no_spec", baseline.line, baseline.text, "cmdline"))
    if req.in_scope and req.spec_method and classify.NO_SPEC_RE.search(joined):
        add("no_spec", None)
    for f in a.values("enforce_eager"):
        add("eager" if as_bool(f.value) else "cudagraph", f)
    # Two invocations of one program, one with --enforce-eager and one without: the
    # difference between them is the axis.
    eager_runs = [r for r in engine_runs if "enforce_eager" in r.settings
                  and as_bool(r.get("enforce_eager"))]
    graph_runs = [r for r in engine_runs if "enforce_eager" not in r.settings
                  and any(e.origin == r.origin for e in eager_runs)]
    if graph_runs:
        add("cudagraph", Fact("mode", "cudagraph", graph_runs[0].line, graph_runs[0].text,
                              "cmdline"))
    # A graph mode set in a config is a mode compared only when runs differ in it; one
    # value on every run is the setting, not a comparison.
    config_modes: list[tuple[str, Fact]] = []
    for f in a.values("compilation_config"):
        if isinstance(f.value, dict) and "cudagraph_mode" in f.value:
            mode = canonical_mode(str(f.value["cudagraph_mode"]))
            if mode:
                config_modes.append((mode, f))
    for f in a.values("cudagraph_mode"):
        mode = canonical_mode(str(f.value))
        if mode:
            config_modes.append((mode, f))
    if len({m for m, _ in config_modes}) > 1 or modes.keys() & {"eager", "cudagraph"}:
        for mode, f in config_modes:
            add(mode, f)
    config_lines = {f.line for _, f in config_modes}
    for name, (kinds, num) in _reported_arms(req).items():
        for kind in kinds:
            arm_fact = Fact("mode", kind, num.evidence.line if num.evidence else 0,
                            num.evidence.text if num.evidence else name, "results")
            arm_modes.setdefault(kind, arm_fact)
    for pair in (("spec", "no_spec"), ("eager", "cudagraph")):
        if all(k in arm_modes for k in pair):
            for k in pair:
                add(k, arm_modes[k])
    if a.values("encoder_graph"):
        add("cudagraph", _first(a.values("encoder_graph")))
    if req.in_scope:
        qualified = False
        for no, t in text_lines:
            if no in config_lines:
                continue  # the config's own value, counted above only when runs differ
            if _CONFIG_MODE_RE.search(t) and not (modes.keys() & {"eager", "cudagraph"}) \
                    and len({m.group(1).upper() for m in _CONFIG_MODE_RE.finditer(t)}) < 2 \
                    and len(set(_CONFIG_MODE_RE.findall(joined.upper()))) < 2:
                continue  # one `cudagraph_mode: FULL` wherever it is written: a setting
            if _FULL_RE.search(t):
                add("full", Fact("mode", "full", no, t, "prose"))
                qualified = True
            if _PIECEWISE_RE.search(t) and re.search(r"cuda ?graph|cudagraph|mode|vs", t, re.I):
                add("piecewise", Fact("mode", "piecewise", no, t, "prose"))
                qualified = True
        for no, t in text_lines:
            if _EAGER_RE.search(t) and not re.search(r"enforce_eager\s*=\s*False", t):
                add("eager", Fact("mode", "eager", no, t, "prose"))
            plain = _FULL_RE.sub("", t)
            if _GRAPH_RE.search(plain) and not (qualified and not encoder and
                                                "vs" not in plain.lower()):
                add("cudagraph", Fact("mode", "cudagraph", no, t, "prose"))
        title = a.doc.title or ""
        if re.search(r"\b(?:support|apply|enable|add|use)\b.*(?:cuda ?graph|cudagraph)", title,
                     re.I) and "full" not in modes and "piecewise" not in modes:
            add("eager", Fact("mode", "eager", 0, title, "title", "title"))
            add("cudagraph", Fact("mode", "cudagraph", 0, title, "title", "title"))
    # The symptom is itself a comparison: "slower than without speculation" has two arms.
    if req.symptom == "spec_slower_than_baseline":
        add("spec", _first(a.values("spec_config") + a.values("method")))
        add("no_spec", None)
    elif req.symptom == "graph_slower_than_eager" and not modes.keys() & {"full",
                                                                          "piecewise"}:
        add("eager", None)
        add("cudagraph", None)
    if "no_spec" in modes and "spec" not in modes and req.spec_method:
        # A baseline without speculation is compared with the method the report names.
        add("spec", _first(a.values("spec_config") + a.values("method")))
    order = ["spec", "no_spec", "eager", "cudagraph", "piecewise", "full", "vit_eager",
             "vit_cudagraph"]
    req.modes_compared = [m for m in order if m in modes]  # type: ignore[misc]
    a.cite("modes_compared", [f for f in modes.values() if f])


def _run_has_spec(run: RunConfig) -> bool:
    return any(run.get(k) not in (None, "", {}) for k in ("spec_config", "method", "mtp_flag",
                                                         "draft", "prompt_lookup"))


def _first(facts: list[Fact]) -> Fact | None:
    return facts[0] if facts else None


_IMAGE_RE = re.compile(r"image_url|\"image\"\s*:\s*[1-9]|image=[1-9]|multi_modal_data=\{\s*"
                       r"['\"]image|['\"]multi_modal_data['\"]\s*:\s*\{\s*['\"]image|"
                       r"\bimages?=[A-Za-z_\[]|PIL\.Image|Image\.open\(|--modality image|"
                       r"<image>|visionarena|mmmu|\bimages?\b.*(?:input|prompt)", re.I)
_VIDEO_RE = re.compile(r"video_url|\"video\"\s*:\s*[1-9]|video=[1-9]|--modality video|"
                       r"['\"]video['\"]\s*:\s*(?:\[|[A-Za-z_])|\bvideos?=[A-Za-z_\[]", re.I)
_VLM_RE = re.compile(r"\bVLM\b|-VL\b|-VL-|\bOCR\b|vision|multimodal|multi-modal|--mllm|"
                     r"\bmllm\b|\d+V\b|\d+V-", re.I)


_IMAGE_NOUN_RE = re.compile(r"\b(?:images?|pictures?|photos?|screenshots?|charts?|diagrams?|"
                            r"scanned (?:pages?|documents?))\b", re.I)
_VIDEO_NOUN_RE = re.compile(r"\bvideos?\b|\bvideo frames\b|\bclips?\b", re.I)


def _modality(a: Assembler) -> None:
    body = "\n".join(a.doc.body_lines)
    image = _IMAGE_RE.search(body)
    video = _VIDEO_RE.search(body)
    vision_model = any(_VLM_RE.search(m) for m in a.req.models)
    if vision_model and not (image or video):
        # A vision model fed "screenshots" or "videos": the inputs are named in words.
        image = _IMAGE_NOUN_RE.search(body)
        video = _VIDEO_NOUN_RE.search(body)
    if image and not video:
        a.req.modality = "image"
    elif video and not image:
        a.req.modality = "video"
    elif image and video:
        return
    elif a.req.in_scope and (a.req.models or a.req.draft_models or a.runs
                             or a.req.spec_method) and not (
            _VLM_RE.search(a.doc.title or "") or _VLM_RE.search(body)
            or any(_VLM_RE.search(m) for m in a.req.models)):
        a.req.modality = "text"


def _arms(a: Assembler) -> list[Arm]:
    arms: list[Arm] = []
    engine_runs = [r for r in a.runs if r.engine_side]
    for i, run in enumerate(engine_runs):
        spec_cfg = spec_config_settings(run.get("spec_config"))
        method = canonical_method(spec_cfg.get("method") or run.get("method")) or (
            "mtp" if run.get("mtp_flag") else None)
        k = as_int(spec_cfg.get("k") or run.get("k"), 1, 64)
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
        arms.append(Arm(name=run.name or f"{run.origin} #{i + 1}", spec=_run_has_spec(run),
                        spec_method=method, num_speculative_tokens=k,
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
    return w


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
