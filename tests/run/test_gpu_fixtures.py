"""What `bench/gpu_check.sh` brought back, kept in tests/fixtures/gpu/<gpu>-transformers/.

Each folder holds the files the check leaves in $OUT, as they came back: report.md,
findings.json, check.json, repro.tar.gz (plan, results, scripts, every cell's log) and,
from a GPU, nvidia-smi-q.txt. `cpu-transformers` is the check's CPU dry run
(`gpu_check.sh --dry-run`); a folder from a GPU run is read by the same tests, with the
CUDA facts (the machine's GPU in the environment table, CUDA graphs replayed in every
graph cell and in no eager one) required of it.
"""

from __future__ import annotations

import json
import re
import tarfile
from functools import cache
from pathlib import Path

import pytest

from triagebot.analyze.findings_models import Findings
from triagebot.model import Plan, RunResult
from triagebot.run.gpu import parse_smi_query

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"
FOLDERS = sorted(p.name for p in FIXTURES.glob("*-transformers"))


class Run:
    """One check's files, read once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.check = json.loads((folder / "check.json").read_text())
        self.findings = Findings.model_validate_json((folder / "findings.json").read_text())
        self.report = (folder / "report.md").read_text()
        self.on_gpu = self.check["device"] == "cuda"
        self.results: dict[str, list[RunResult]] = {}
        with tarfile.open(folder / "repro.tar.gz") as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}
            self.plan = Plan.model_validate_json(_read(tar, members["repro/plan.json"]))
            for name in sorted(members):
                if re.fullmatch(r"repro/results/c\w+-r\d+\.json", name):
                    result = RunResult.model_validate_json(_read(tar, members[name]))
                    self.results.setdefault(result.cell_id, []).append(result)
            self.logs = {n: _read(tar, m) for n, m in members.items()
                         if n.startswith("repro/logs/")}


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    f = tar.extractfile(member)
    assert f is not None
    return f.read().decode()


@cache
def load(name: str) -> Run:
    return Run(FIXTURES / name)


def test_a_fixture_is_kept() -> None:
    assert "cpu-transformers" in FOLDERS


@pytest.mark.parametrize("name", FOLDERS)
def test_seed_000s_plan_ran_through_repro(name: str) -> None:
    run = load(name)
    assert run.check["exit_code"] in (0, 1, 4), run.check
    command = run.check["command"]
    assert command[:2] == ["triagebot", "repro"] and "--local" in command
    assert command[command.index("--engine") + 1] == "transformers"
    # 2x2 + A/A, every cell run, every start ok, and the report is this analysis.
    assert len(run.plan.cells) == 5 and sum(c.replica for c in run.plan.cells) == 1
    assert {tuple(sorted(c.varies.items())) for c in run.plan.cells} == {
        (("graph", g), ("spec", s)) for g in ("eager", "graph") for s in ("no_spec", "spec")}
    assert set(run.results) == {c.cell_id for c in run.plan.cells}
    assert all(r.status == "ok" for rounds in run.results.values() for r in rounds)
    assert run.report.splitlines()[0] == run.check["verdict"]
    assert run.findings.plan_hash == run.plan.plan_hash
    for key in ("standins_s", "repro_s", "run_s"):
        assert run.check["timings"][key] >= 0


@pytest.mark.parametrize("name", FOLDERS)
def test_the_environment_is_the_machines(name: str) -> None:
    run = load(name)
    env = run.findings.runner_env
    row = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
           for line in run.report.splitlines()
           if line.startswith("| ") and line.split("|")[1].strip() in ("gpu", "cuda", "driver",
                                                                       "gpu_count")}
    if run.on_gpu:
        smi = parse_smi_query((run.folder / "nvidia-smi-q.txt").read_text())
        assert env["gpu"] == smi.gpus[0] and env["gpu_count"] == len(smi.gpus)
        assert env["driver"] == smi.driver
        assert env["cuda"] == run.check["machine"]["torch_cuda"] not in (None, "none")
        assert row["gpu"][1] == smi.gpus[0] and row["driver"][1] == smi.driver
        assert row["cuda"][1] == env["cuda"]
    else:
        assert not (run.folder / "nvidia-smi-q.txt").exists()
        # No GPU: CUDA 'none', whatever CUDA the torch wheel was built with.
        assert env["cuda"] == "none" and env["gpu_count"] == 0
        assert row["cuda"][1:] == ["none", "differs"]
    # The reporter's side is seed 000's own environment.
    assert row["gpu"][0] == "NVIDIA A100-SXM4-40GB" and row["cuda"][0] == "12.8.61"


@pytest.mark.parametrize("name", FOLDERS)
def test_graph_cells_show_their_cuda_graphs(name: str) -> None:
    run = load(name)
    checks = {g.cell_id: g for g in run.findings.graphs}
    if not run.on_gpu:
        # A CPU has no CUDA graphs: nothing is read and nothing is claimed.
        assert checks == {} and "<summary>CUDA graphs</summary>" not in run.report
        assert all(r.cuda_graphs is None for rs in run.results.values() for r in rs)
        return
    assert set(checks) == {c.cell_id for c in run.plan.cells}
    assert "<summary>CUDA graphs</summary>" in run.report and "not as labelled" not in run.report
    for cell in run.plan.cells:
        check = checks[cell.cell_id]
        assert not check.flagged, check.sentence
        assert check.state == ("eager" if cell.enforce_eager else "replayed"), check.sentence
        for result in run.results[cell.cell_id]:
            graphs = result.cuda_graphs
            assert graphs is not None and graphs.error is None
            assert graphs.target_forwards is not None and graphs.graph_launches is not None
            decode = graphs.target_forwards - graphs.prefills
            if cell.enforce_eager:
                assert graphs.graph_launches == 0
            else:
                assert graphs.graph_launches >= decode > 0 and graphs.cudagraph_skips == 0


@pytest.mark.parametrize("name", FOLDERS)
def test_counters_are_consistent(name: str) -> None:
    run = load(name)
    for cell in run.plan.cells:
        prompts, tokens = cell.workload.num_prompts, cell.sampling.max_tokens
        for result in run.results[cell.cell_id]:
            extra = result.model_extra or {}
            assert extra["runs_agree"] is True
            assert result.runs and all(r.output_tokens == prompts * tokens for r in result.runs)
            passes = extra["forward_passes"]
            if cell.spec is None:
                assert result.spec is None and passes["draft"] == 0
                # One forward per new token: the prefill gives the first.
                assert passes["target"] == len(result.runs) * prompts * tokens
                continue
            spec = result.spec
            assert spec is not None
            k = cell.spec.num_speculative_tokens
            assert 0 < spec.num_drafts <= spec.num_draft_tokens <= k * spec.num_drafts
            assert 0 <= spec.num_accepted_tokens <= spec.num_draft_tokens
            per_pos = spec.per_position_accepted
            assert per_pos == sorted(per_pos, reverse=True) and len(per_pos) <= k
            assert sum(per_pos) == spec.num_accepted_tokens
            # Every token is the target's: a step keeps its accepted drafts plus one.
            assert spec.num_drafts <= passes["target"]
            assert passes["target"] + spec.num_accepted_tokens == \
                len(result.runs) * prompts * tokens
            assert passes["draft"] >= spec.num_draft_tokens
    # Greedy speculation is lossless: spec and no-spec produced the same tokens.
    assert run.findings.divergence and all(not d.result.diverged
                                           for d in run.findings.divergence)
