"""The CLI contract: exit codes, exactly one JSON object, a readable table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from triagebot import __version__
from triagebot.cli import app

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "glm-ocr-mtp-graph.md"
runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_help_lists_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "parse" in result.output


def test_parse_json_is_one_object_on_stdout() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "triagebot.cli", "parse", str(SAMPLE), "--json",
         "--title", "MTP slower under CUDA graphs"],
        capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout)
    assert data["engine"] == "vllm" and data["engine_version"] == "0.17.1"
    assert data["models"] == ["zai-org/GLM-OCR"] and data["spec_method"] == "mtp"
    assert set(data["modes_compared"]) == {"spec", "no_spec", "eager", "cudagraph"}


def test_parse_stdin() -> None:
    result = runner.invoke(app, ["parse", "-", "--json"],
                           input="vllm serve Qwen/Qwen3-8B -tp 2 --enforce-eager\n")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["tensor_parallel_size"] == 2


def test_parse_table_shows_fields_and_missing() -> None:
    result = runner.invoke(app, ["parse", str(SAMPLE), "--title", "MTP slower"])
    assert result.exit_code == 0
    assert "spec_method" in result.output and "mtp" in result.output
    assert "nothing missing for a reproduction" in result.output
    result = runner.invoke(app, ["parse", "-", "--title", "EAGLE3 slower than no spec"],
                           input="vllm serve Qwen/Qwen3-8B --speculative-config "
                                 "'{\"method\": \"eagle3\"}'\n")
    assert result.exit_code == 0
    assert "missing for a reproduction" in result.output and "gpu" in result.output


def test_unreadable_path_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["parse", str(tmp_path / "nope.md")])
    assert result.exit_code == 2
    assert "cannot read" in result.output
    result = runner.invoke(app, ["parse", str(tmp_path)])
    assert result.exit_code == 2


def test_engines_vllm_keys_lists_what_a_release_accepts() -> None:
    result = runner.invoke(app, ["engines", "vllm-keys", "0.17.1"])
    assert result.exit_code == 0
    assert "speculative_config keys" in result.output and "num_speculative_tokens" in result.output


def test_engines_vllm_keys_not_a_version_exits_2() -> None:
    result = runner.invoke(app, ["engines", "vllm-keys", "latest"])
    assert result.exit_code == 2 and "not a version" in result.output


def test_engines_vllm_keys_unknown_release_shows_the_nearest() -> None:
    result = runner.invoke(app, ["engines", "vllm-keys", "0.7.3"])
    assert result.exit_code == 0 and "nearest release to 0.7.3" in result.output
    assert "vLLM 0.8.5" in result.output
