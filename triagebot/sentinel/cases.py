"""The standing matrix: `[sentinel]`'s cases, or the defaults for an engine and runner.

The defaults cover the methods vLLM ships (ngram, draft model, EAGLE, EAGLE-3, MTP), each
under eager and graph, each with speculation on and off (every case's plan holds its
no-spec partner in every mode). On a GPU runner they name public checkpoints; on the
`cpu` runner (vLLM's CPU build) they run the project's stand-ins, and only the methods
whose stand-in measures something there:

- MTP (k=1), the draft model (k=3), ngram (k=3) and EAGLE-3 (k=3) load and run on the
  CPU build's stand-ins (docs/runners/cpu-vllm.md);
- EAGLE (-1) is left out on the cpu runner: its stand-in head keeps random weights and
  accepts nothing, so its series would carry no acceptance or speed-up, and vLLM's one
  EAGLE proposer (which also drives EAGLE-3 and MTP) is measured by those cases;
- MTP runs k=1 there: the stand-in has one MTP layer.

Before 0.20.0 the CPU build's model runner refuses speculative decoding outright (it
was not supported on CPUs then, which is no regression): `skip_reason` skips those
releases with the reason. A release known to crash (0.20.x, `engines.vllm_cpu.SPEC_BROKEN`)
still runs, so the sentinel names it with the engine's own line.
"""

from __future__ import annotations

from triagebot.engines.vllm_catalog import version_key
from triagebot.engines.vllm_cpu import SPEC_SINCE
from triagebot.repo_config import SentinelCaseConfig, SentinelConfig
from triagebot.sentinel.models import Method, Mode, SentinelCase

CPU = "cpu"
STANDIN = "standin"
MODES: tuple[Mode, ...] = ("eager", "graph")
# Methods the cpu runner's default matrix measures, with k (see the module doc).
CPU_METHODS: dict[Method, int] = {"mtp": 1, "draft_model": 3, "ngram": 3, "eagle3": 3}
CPU_LEFT_OUT: dict[Method, str] = {
    "eagle": "its cpu stand-in head keeps random weights and accepts nothing, so the "
             "series would hold no acceptance or speed-up; vLLM's one EAGLE proposer is "
             "measured by the EAGLE-3 and MTP cases",
}
# Public checkpoints for a GPU runner: a Llama-3.1-8B target with its published EAGLE
# and EAGLE-3 heads and a small Llama draft, and a model with its own MTP layer.
GPU_TARGET = "meta-llama/Llama-3.1-8B-Instruct"
GPU_CASES: dict[Method, tuple[str, str | None, int]] = {
    "ngram": (GPU_TARGET, None, 3),
    "draft_model": (GPU_TARGET, "meta-llama/Llama-3.2-1B-Instruct", 3),
    "eagle": (GPU_TARGET, "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", 3),
    "eagle3": (GPU_TARGET, "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 3),
    "mtp": ("XiaomiMiMo/MiMo-7B-RL", None, 1),
}


def case_id(engine: str, method: str, k: int, model: str, runner: str) -> str:
    """A stable slug: engine, method, k, model's last name part, runner."""
    name = STANDIN if model == STANDIN else model.rsplit("/", 1)[-1].lower()
    slug = "-".join((engine, method.replace("_", "-"), f"k{k}", name, runner))
    return "".join(ch if ch.isalnum() or ch in ".-" else "-" for ch in slug.lower())[:120]


def from_config(entry: SentinelCaseConfig) -> SentinelCase:
    return SentinelCase(
        case_id=case_id(entry.engine, entry.method, entry.k, entry.model, entry.runner),
        engine=entry.engine, model=entry.model, method=entry.method, k=entry.k,
        modes=list(entry.modes), workload=entry.workload, runner=entry.runner,
        draft=entry.draft or "")


def default_cases(engine: str, runner: str) -> list[SentinelCase]:
    """The default matrix of `engine` on `runner` (module doc)."""
    if runner == CPU:
        if engine != "vllm":
            return []  # the cpu runner's sentinel follows vLLM's CPU build only
        return [SentinelCase(case_id=case_id(engine, m, k, STANDIN, runner), engine=engine,
                             model=STANDIN, method=m, k=k, modes=list(MODES),
                             workload="offline", runner=runner)
                for m, k in CPU_METHODS.items()]
    return [SentinelCase(case_id=case_id(engine, m, k, model, runner), engine=engine,
                         model=model, method=m, k=k, modes=list(MODES), workload="offline",
                         runner=runner, draft=draft or "")
            for m, (model, draft, k) in GPU_CASES.items()]


def matrix(config: SentinelConfig, engine: str, runner: str | None = None) -> list[SentinelCase]:
    """The cases of `engine` (on `runner`, where given): the config's own, else the
    defaults for each of its runners."""
    if config.cases:
        cases = [from_config(c) for c in config.cases if c.engine == engine]
    else:
        cases = [c for r in config.runners for c in default_cases(engine, r)]
    return [c for c in cases if runner is None or c.runner == runner]


def select(cases: list[SentinelCase], wanted: list[str]) -> list[SentinelCase]:
    """The cases named in `wanted` by id or by method; a name that matches none is a
    ValueError listing the ids."""
    chosen = [c for c in cases if c.case_id in wanted or c.method in wanted]
    known = {c.case_id for c in cases} | {c.method for c in cases}
    missing = [w for w in wanted if w not in known]
    if missing:
        raise ValueError(f"no case {missing[0]!r}; cases: "
                         f"{', '.join(c.case_id for c in cases) or 'none'}")
    return chosen


def skip_reason(case: SentinelCase, release: str) -> str | None:
    """Why `case` cannot run at `release` at all (None: it can)."""
    if case.runner != CPU or case.engine != "vllm":
        return None
    if version_key(release) < SPEC_SINCE:
        return (f"vLLM's CPU build refuses speculative decoding before "
                f"{'.'.join(map(str, SPEC_SINCE))}")
    return None


def overrides(case: SentinelCase) -> list[str]:
    """The case as `triagebot repro` key=value options: speculation on and off, in each
    of its modes, on its runner."""
    words = [f"engine={case.engine}", f"gpu={case.runner}",
             f"spec={case.method}:{case.k},none", f"modes={','.join(case.modes)}",
             f"workload={case.workload}"]
    if case.model != STANDIN:
        words.append(f"model={case.model}")
    if case.draft and case.draft != STANDIN:
        words.append(f"draft={case.draft}")
    return words
