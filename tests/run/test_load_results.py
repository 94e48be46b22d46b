"""Reading a repro folder back: rounds in numeric order, because analysis reads them by
position (round i of one arm is a block with round i of the other)."""

from __future__ import annotations

from pathlib import Path

from triagebot.run.orchestrate import load_results
from triagebot.run_result import RunMeasurement, RunResult


def test_rounds_come_back_in_numeric_order(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    for r in (0, 1, 2, 10, 9):
        result = RunResult(cell_id="c01", engine="transformers", status="ok",
                           runs=[RunMeasurement(output_tokens=1, seconds=1.0, tok_s=float(r + 1))])
        (tmp_path / "results" / f"c01-r{r}.json").write_text(result.model_dump_json())
    got = load_results(tmp_path)
    assert [res.runs[0].tok_s for res in got["c01"]] == [1.0, 2.0, 3.0, 10.0, 11.0]
