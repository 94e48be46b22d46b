"""Deciding what the reporter ran: the engine and its version, the target and draft
models."""

from __future__ import annotations

import re
from collections import Counter

from triagebot.parse.common import (
    PROGRAM_ENGINE,
    Fact,
    canonical_model,
    canonical_version,
    version_key,
)
from triagebot.parse.decide.assembler import Assembler
from triagebot.parse.envdump import EnvDump
from triagebot.parse.runs import RunConfig
from triagebot.request_model import Environment

REPO_ENGINE = {"vllm-project/vllm": "vllm", "sgl-project/sglang": "sglang",
               "waybarrios/vllm-mlx": "vllm-mlx", "ggml-org/llama.cpp": "llama.cpp",
               "ggerganov/llama.cpp": "llama.cpp", "nvidia/tensorrt-llm": "tensorrt-llm",
               "vllm-project/vllm-ascend": "vllm-ascend",
               "huggingface/transformers": "transformers"}

# sglang runs native MTP heads under `--speculative-algorithm EAGLE`.

# A fork or a downstream project names the engine it builds on (`someone/llama-cpp-x`).
_REPO_NAME_ENGINE = (("vllm-mlx", "vllm-mlx"), ("vllm-ascend", "vllm-ascend"),
                     ("llama.cpp", "llama.cpp"), ("llama-cpp", "llama.cpp"),
                     ("tensorrt-llm", "tensorrt-llm"), ("sglang", "sglang"), ("vllm", "vllm"))


def repo_engine(repo: str | None) -> str | None:
    """The engine a thread's repository implies: the engine's own, or a fork named for it."""
    if not repo:
        return None
    if repo.lower() in REPO_ENGINE:
        return REPO_ENGINE[repo.lower()]
    name = repo.split("/")[-1].lower()
    return next((engine for key, engine in _REPO_NAME_ENGINE if key in name), None)


def decide_engine(a: Assembler, env: Environment) -> None:
    votes: Counter[str] = Counter()
    evidence: dict[str, list[Fact]] = {}
    for run in a.runs:
        engine = run_engine(run)
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
    hint = repo_engine(a.repo)
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
    ascend = _ascend_device(a) if engine == "vllm" else []
    if engine == "vllm" and (ascend or hint == "vllm-ascend"):
        # vLLM on an Ascend NPU runs through the vllm-ascend plugin, whose reports say
        # "vllm serve" and "vllm 0.x" like any other.
        engine = "vllm-ascend"
        why = ascend or [Fact("engine", engine, 0, f"repository {a.repo}", "repo", "hint")]
        evidence[engine] = [*evidence.get(engine, []), *why, *evidence.get("vllm", [])]
    a.req.engine = engine  # type: ignore[assignment]
    a.cite("engine", evidence.get(engine, []))


_ASCEND_RE = re.compile(r"ascend|9[13]0[bc]|310p|atlas", re.I)


def _ascend_device(a: Assembler) -> list[Fact]:
    """The lines that name an Ascend NPU as the reporter's device."""
    return [f for f in a.facts.get("gpu") if _ASCEND_RE.search(str(f.value))]


def run_engine(run: RunConfig) -> str | None:
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
        if not stated and engine == "vllm-ascend":
            # Its reports give the vLLM release they run on; vllm-ascend's releases track it.
            stated = [f for f in a.facts.get("version") if f.value[0] == "vllm"]
        upgrades = a.facts.get("version_upgrade")
        pool = upgrades or stated or a.facts.get("version_bare") or _labelled(a, engine)
        pool = [f for f in pool if not _good_build(a.doc.lines, f.line)]
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


# A build the reporter calls good or fast is the side of a comparison without the problem.
_GOOD_RE = re.compile(r"\b(?:good|fast(?:er)?|quick(?:er)?|working|works)\b", re.I)
_BAD_RE = re.compile(r"\b(?:bad|slow(?:er)?|broken|regress\w*|fails?)\b", re.I)


def _good_build(lines: list[str], line: int) -> bool:
    """Whether the version on 1-based `line` is the good side: said on its own line, or
    (when that line says neither) in the sentence just above the block it sits in."""
    if not 0 < line <= len(lines):
        return False
    own = lines[line - 1]
    if _GOOD_RE.search(own) or _BAD_RE.search(own):
        return bool(_GOOD_RE.search(own)) and not _BAD_RE.search(own)
    for above in reversed(lines[max(0, line - 4):line - 1]):
        if above.strip() and not above.strip().startswith("`"):
            return bool(_GOOD_RE.search(above)) and not _BAD_RE.search(above)
    return False


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
    # A conversion or build step (`convert_checkpoint.py`, `trtllm-build`) reads one
    # checkpoint, target or draft: its heading says which ("convert draft model").
    built: set[tuple[int, str]] = set()
    built_targets: list[tuple[str, Fact]] = []
    for run in a.runs:
        if run.build and "model" in run.settings:
            value, line, text = run.settings["model"]
            built.add((line, str(value)))
            role = _BUILD_ROLE_RE.search(run.name or "")
            name = canonical_model(value)
            if role and name:
                fact = Fact("model", name, line, text, run.source)
                (drafts if role.group(1) else built_targets).append((name, fact))
    engine_models = [f for f in a.values("model", engine_side_only=True)
                     if (f.line, str(f.value)) not in built]
    # transformers loads the assistant with from_pretrained too: that load is the draft's.
    draft_ids = {n.lower() for n, _ in drafts}
    engine_models = [f for f in engine_models if not (
        "from_pretrained" in f.text and (canonical_model(f.value) or "").lower() in draft_ids)]
    client_models = [f for f in a.values("model") if f not in engine_models
                     and (f.line, str(f.value)) not in built]
    targets: list[tuple[str, Fact]] = list(built_targets)
    for f in engine_models or client_models:
        name = canonical_model(_mounted(str(f.value), _command_of(a, f)))
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


# `docker run -v /host/models/X:/model ... --model /model`: the container path is a mount.
_MOUNT_RE = re.compile(r"""(?:^|\s)(?:-v|--volume|--mount\s+type=bind,source=)[ =]?['"]?"""
                       r"""([^\s:'",]+)(?::|,target=)([^\s:'",]+)""")


def _command_of(a: Assembler, f: Fact) -> str:
    """The whole command a setting's line belongs to."""
    for run in a.runs:
        if run.line <= f.line <= run.line + run.text.count("\n"):
            return run.text
    return f.text


def _mounted(value: str, text: str) -> str:
    """A model path inside a container, as the host path mounted there."""
    if not value.startswith("/") or not any(f in text for f in ("-v", "--volume", "--mount")):
        return value
    for m in _MOUNT_RE.finditer(text):
        host, inside = m.group(1), m.group(2).rstrip("/")
        if value == inside or value.startswith(inside + "/"):
            return host.rstrip("/") + value[len(inside):]
    return value


_BUILD_ROLE_RE = re.compile(r"\b(?:(draft|assistant|small|speculat\w*)|target|main|base|large|"
                            r"verifier)\b", re.I)


def _drop_shortened(names: list[str]) -> list[str]:
    """Without a title's short form of an id the body spells out: "Qwen2.5-VL-7B" beside
    "Qwen/Qwen2.5-VL-7B-Instruct" is one model, named twice; nor an id a pasted line cut
    short, nor a GGUF file's name without its `.gguf`."""
    def tail(name: str) -> str:
        return name.split("/")[-1].lower()

    def cut(n: str, m: str) -> bool:
        # A line cut mid-word ("Org/Model-Instr" beside "Org/Model-Instruct"), not a
        # variant of the same name ("Org/Model-8B" beside "Org/Model-8B-FP8").
        if not (len(m) > len(n) and m.lower().startswith(n.lower())):
            return False
        return (m[len(n)].isalnum() and n[-1].isalnum()) or m[len(n):].lower() == ".gguf"

    return [n for n in names if not any(
        m != n and (("/" in m and "/" not in n and tail(n) in tail(m)) or cut(n, m))
        for m in names)]


def _unique(items: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(item.lower(), item)
    return list(seen.values())
