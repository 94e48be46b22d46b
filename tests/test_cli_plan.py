"""`triagebot plan` and `triagebot render`: output, overrides, refusals and files."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from triagebot.cli import EXIT_REFUSED, EXIT_USAGE, app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "glm-ocr-mtp-graph.md"
runner = CliRunner()


def test_plan_table_names_cells_comparisons_and_defaults() -> None:
    result = runner.invoke(app, ["plan", str(SAMPLE)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("spec + graph (A/A)", "spec/no_spec @ graph", "interaction",
                 "Defaults used", "vllm 0.17.1"):
        assert text in result.output


def test_plan_json_with_overrides() -> None:
    result = runner.invoke(app, ["plan", str(SAMPLE), "k=1,2", "runs=3", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["budget"]["runs"] == 3
    labels = [c["label"] for c in plan["cells"]]
    assert "mtp k=2 + graph" in labels and "no_spec + eager" in labels


def test_unknown_override_key_lists_the_valid_ones() -> None:
    result = runner.invoke(app, ["plan", str(SAMPLE), "colour=blue"])
    assert result.exit_code == EXIT_USAGE
    assert "unknown key 'colour'" in result.output and "max_tokens" in result.output


@pytest.mark.parametrize("word", ["k=17", "k=0", "spec=mtp:17"])
def test_out_of_range_values_are_usage_errors_not_tracebacks(word: str) -> None:
    result = runner.invoke(app, ["plan", str(SAMPLE), word])
    assert result.exit_code == EXIT_USAGE, result.output
    assert "speculative tokens per step must be 1 to 16" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_plan_over_budget_is_refused_with_numbers() -> None:
    result = runner.invoke(app, ["plan", str(SAMPLE), "k=1,2,3,4,5,6"])
    assert result.exit_code == EXIT_REFUSED
    assert "cells" in result.output and "budget allows 12" in result.output


def test_a_version_that_cannot_take_the_config_is_refused() -> None:
    result = runner.invoke(app, ["plan", str(SAMPLE), "spec=draft_model:4,none",
                                 "draft=org/small", "version=0.11.0"])
    assert result.exit_code == EXIT_REFUSED
    assert "draft_model" in result.output


def test_render_writes_scripts_runner_and_plan(tmp_path: Path) -> None:
    result = runner.invoke(app, ["render", str(SAMPLE), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    plan = json.loads((tmp_path / "plan.json").read_text())
    for cell in plan["cells"]:
        ast.parse((tmp_path / f"{cell['cell_id']}.py").read_text())
    runner_sh = tmp_path / "run_all.sh"
    subprocess.run(["bash", "-n", str(runner_sh)], check=True)
    assert all(c["cell_id"] in runner_sh.read_text() for c in plan["cells"])


def test_render_one_cell_and_an_unknown_cell() -> None:
    plan = json.loads(runner.invoke(app, ["plan", str(SAMPLE), "--json"]).stdout)
    first = plan["cells"][0]["cell_id"]
    result = runner.invoke(app, ["render", str(SAMPLE), "--cell", first])
    assert result.exit_code == 0 and f"===== {first}.py" in result.output
    assert result.output.count("=====") == 4  # the cell and run_all.sh
    result = runner.invoke(app, ["render", str(SAMPLE), "--cell", "cdeadbeef00"])
    assert result.exit_code == EXIT_REFUSED and "no cell cdeadbeef00" in result.output
