"""`triagebot repro` and `triagebot report` end to end on this CPU (transformers engine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import seed_path
from triagebot.cli import EXIT_RUN_ERROR, app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "glm-ocr-mtp-graph.md"
runner = CliRunner()


def test_repro_runs_every_cell_and_report_rereads_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["repro", str(SAMPLE), "--engine", "transformers",
                                 "modes=eager", "spec=ngram:2,none", "runs=3",
                                 "--max-runs", "3", "--out", str(out)])
    assert result.exit_code in (0, 1, 4), result.output
    report = (out / "report.md").read_text()
    plan = json.loads((out / "plan.json").read_text())
    assert [c["label"] for c in plan["cells"]] == ["no_spec", "ngram k=2", "ngram k=2 (A/A)"]
    for cell in plan["cells"]:
        results = sorted((out / "results").glob(f"{cell['cell_id']}-r*.json"))
        assert results, cell["label"]
        first = json.loads(results[0].read_text())
        # Two mirrored rounds (A B | B A) share the 3 runs: 2 then 1.
        runs = sum(len(json.loads(p.read_text())["runs"]) for p in results)
        assert first["status"] == "ok" and runs >= 3 and len(results) >= 2
        assert (first["spec"] is None) == (cell["spec"] is None)
    # Every number in the report comes from these runs: the cells' medians are there.
    findings = json.loads((out / "findings.json").read_text())
    assert findings["outcome"] in ("reproduced", "not_reproduced", "inconclusive")
    assert "<summary>Cells</summary>" in report and "ngram k=2" in report
    assert "triagebot repro" in report and "tiny-random-llama" in report

    (out / "findings.json").unlink()  # as a repro stopped before its end leaves it
    again = runner.invoke(app, ["report", str(out)])
    assert again.exit_code == result.exit_code
    assert (out / "report.md").read_text().splitlines()[0] == report.splitlines()[0]
    assert json.loads((out / "findings.json").read_text())["outcome"] == findings["outcome"]


def test_a_relative_output_folder_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["repro", str(SAMPLE), "--engine", "transformers",
                                 "modes=eager", "spec=none", "runs=2", "--max-runs", "2",
                                 "--out", "rel/out"])
    assert result.exit_code in (0, 1, 4), result.output
    assert list((tmp_path / "rel" / "out" / "results").glob("*.json"))


def test_a_missing_engine_is_a_provisioning_error_not_a_slowdown(tmp_path: Path) -> None:
    result = runner.invoke(app, ["repro", str(seed_path("002")), "model=org/model",
                                 "--out", str(tmp_path)])
    assert result.exit_code == EXIT_RUN_ERROR, result.output
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("**Error**") and "provisioning failed" in report


def test_report_on_a_folder_that_is_not_a_repro(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a readable repro folder" in " ".join(result.output.split())


def test_report_exits_could_not_answer_when_the_question_cannot_run_here(
        tmp_path: Path) -> None:
    from triagebot.cli import EXIT_CANNOT_ANSWER
    from triagebot.model import RunMeasurement, RunResult
    from triagebot.overrides import parse_overrides
    from triagebot.parse import parse_report
    from triagebot.plan import build_plan

    # Seed 003 compares model runner V1 with V2, which the cpu runner cannot run; stand-in
    # results for the cells it does run, in a repro folder's layout.
    request = parse_report(seed_path("003").read_bytes())
    plan = build_plan(request, parse_overrides(["gpu=cpu"]))
    (tmp_path / "results").mkdir()
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    (tmp_path / "request.json").write_text(request.model_dump_json())
    for cell in plan.cells:
        for r, values in enumerate(([400.0, 410.0, 395.0], [405.0, 398.0, 402.0])):
            runs = [RunMeasurement(output_tokens=96, seconds=96 / v, tok_s=v) for v in values]
            result = RunResult(cell_id=cell.cell_id, engine="vllm", status="ok", runs=runs)
            (tmp_path / "results" / f"{cell.cell_id}-r{r}.json").write_text(
                result.model_dump_json())
    result = runner.invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == EXIT_CANNOT_ANSWER == 6, result.output
    assert result.output.startswith("**Could not answer**: the report's own comparison (v1, "
                                    "v2 strict, v2 probabilistic) cannot run on the cpu runner")
    help_text = " ".join(runner.invoke(app, ["repro", "--help"]).output.split())
    assert "6 could not answer" in help_text
