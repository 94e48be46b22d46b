"""What an arm ran, read from its name or its settings: speculation on or off, eager or
graphs; and what the numbers of arms so named say."""

from __future__ import annotations

import re

from triagebot.parse.runs import RunConfig
from triagebot.request_model import ReportedNumber

# How a results row, a labelled block or a table names its arm. An arm name that says
# "no MTP" or "baseline" is a run without speculation; one naming a method is a run with.
# Names join their words with `_` ("no_mtp_graph"): a word ends at a non-letter.
_ARM_NO_SPEC_RE = re.compile(
    r"\bno[-_ ]?(?:spec\w*|mtp|eagle\d?|draft|sd|ngram)(?![a-z])|\bbaseline\b|\bwithout\b|"
    r"\bw/o\b|\bvanilla\b|\bplain\b|^\s*(?:off|none|disabled?|target(?: only)?|ar|"
    r"autoregressive|no)\s*$|\bdisabled?\b|\bnon[-_ ]?(?:spec\w*|mtp|eagle\w*|draft|ngram)",
    re.I)
_ARM_SPEC_RE = re.compile(
    r"spec(?:ulat\w*|[-_ ]?dec\w*)?\b|(?<![a-z])mtp\d?(?![a-z])|(?<![a-z])eagle[-_]?\d?(?![a-z])|"
    r"\bn-?gram\b|\bdraft\b|"
    r"\bmedusa\b|\bdflash\b|\bsuffix\b|\bnextn\b|prompt[-_ ]lookup|\bk\s?=\s?\d", re.I)
_ARM_EAGER_RE = re.compile(r"(?<![a-z])eager(?![a-z])|no[-_ ]?(?:cuda[-_ ]?)?graphs?\b|"
                           r"\bno[-_ ]?cg\b|"
                           r"(?:cuda[-_ ]?graphs?|cudagraphs?)[-_ :=]*(?:off|none|disabled?)\b",
                           re.I)
_ARM_GRAPH_RE = re.compile(r"(?<!no )(?<!no-)(?<!no_)(?<![a-z])(?:cuda[-_ ]?graphs?|cudagraphs?|"
                           r"graph mode|graphs? on|with cg|graph)(?![a-z])", re.I)
_SPEC_KEYS = ("spec_config", "method", "mtp_flag", "draft", "prompt_lookup")


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


# "Qwen3-8B + EAGLE3", "baseline w/ MTP": an arm that adds a method to another arm's name.
_PLUS_METHOD_RE = re.compile(r"^(.+?)\s*(?:\+|w/|with)\s*(?:" + _ARM_SPEC_RE.pattern + r")",
                             re.I)


def kinds_of_arms(names: list[str]) -> dict[str, set[str]]:
    """Each arm's kinds (`arm_kinds`), and an arm whose name another arm repeats with a
    method added ("Qwen3-8B" beside "Qwen3-8B + EAGLE3") ran without speculation."""
    kinds = {name: arm_kinds(name) for name in names}
    lowered = {name.strip().lower(): name for name in names}
    for name in names:
        m = _PLUS_METHOD_RE.match(name.strip())
        base = lowered.get(m.group(1).strip().lower()) if m else None
        if base is not None and not kinds[base] & {"spec", "no_spec"}:
            kinds[base] = kinds[base] | {"no_spec"}
    return kinds


def engine_runs_of(runs: list[RunConfig]) -> list[RunConfig]:
    return [r for r in runs if r.engine_side and not r.build]


def run_has_spec(run: RunConfig) -> bool:
    return any(run.get(k) not in (None, "", {}) for k in _SPEC_KEYS)


def measured_symptom(reported: list[ReportedNumber], spec: bool,
                     runs: list[RunConfig]) -> tuple[str, str] | None:
    """A problem the numbers state: the spec arm's tok/s below the baseline's, or the
    graph arm's below eager's, with the figures. Only arms whose names say which is which
    count, and numbers printed below a command of runs that differ in speculation: those
    belong to the command above them."""
    engine_runs = sorted(engine_runs_of(runs), key=lambda r: r.line)
    split = len({run_has_spec(r) for r in engine_runs}) > 1
    speeds: dict[str, list[tuple[float, str]]] = {}
    kinds = kinds_of_arms(list(dict.fromkeys(n.arm for n in reported if n.arm)))
    for num in reported:
        if num.metric != "output_tok_s":
            continue
        if num.arm:
            for kind in kinds[num.arm]:
                speeds.setdefault(kind, []).append((num.value, num.arm))
        elif split and num.evidence is not None:
            above = [r for r in engine_runs if r.line < num.evidence.line]
            if above:
                run = above[-1]
                kind = "spec" if run_has_spec(run) else "no_spec"
                speeds.setdefault(kind, []).append((num.value, f"the run at line {run.line}"))
    for on, off, symptom in (("spec", "no_spec", "spec_slower_than_baseline"),
                             ("cudagraph", "eager", "graph_slower_than_eager")):
        if (on == "spec" and not spec) or not speeds.get(on) or not speeds.get(off):
            continue
        slow, fast = max(speeds[on]), max(speeds[off])
        if slow[0] < fast[0]:
            return symptom, (f"the numbers: {slow[1]!r} {slow[0]:g} tok/s < {fast[1]!r} "
                             f"{fast[0]:g} tok/s")
    return None
