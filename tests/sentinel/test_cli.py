"""`triagebot sentinel` end to end where no engine has to start: releases before the CPU
build took speculation are skipped with their reason, a configuration the release's plan
refuses is a `refused` flag with its line, the history keeps it, and bad input is exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from triagebot.cli import EXIT_NOT_REPRODUCED, EXIT_OK, EXIT_USAGE, app
from triagebot.sentinel.history import History, default_url

runner = CliRunner()


def test_skipped_releases_flag_nothing(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sentinel", "--releases", "0.17.1", "--out", str(tmp_path)])
    assert result.exit_code == EXIT_OK, result.output
    assert "skipped: vLLM's CPU build refuses speculative decoding before 0.20.0" in (
        result.stdout)
    assert "**Flags:** none." in result.stdout


def test_a_refused_configuration_is_flagged_stored_and_exits_1(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sentinel", "--releases", "0.17.1,0.25.1", "--cases",
                                 "mtp", "--out", str(tmp_path), "--json", "tp=2"])
    assert result.exit_code == EXIT_NOT_REPRODUCED, result.output
    doc = json.loads(result.stdout)
    first, second = doc["rounds"]
    assert first["skipped"] and not first["figures"]
    [figures] = second["figures"]
    assert figures["status"] == "refused" and "tp>1 needs a GPU runner" in figures["error_line"]
    [flag] = second["flags"]
    assert flag["kind"] == "refused" and flag["reason"].startswith(
        "0.25.1 refused the configuration: the cpu runner runs one process")
    history = History(default_url(tmp_path))
    assert [f.kind for f in history.flags("vllm-mtp-k1-standin-cpu")] == ["refused"]
    history.close()
    # --show prints what the history holds, running nothing
    shown = runner.invoke(app, ["sentinel", "--releases", "0.25.1", "--cases", "mtp",
                                "--out", str(tmp_path), "--show"])
    assert shown.exit_code == EXIT_NOT_REPRODUCED, shown.output
    assert "| vllm-mtp-k1-standin-cpu (first measured) | - | - | - | - | - | **refused**: " \
           "the cpu runner runs one process" in shown.stdout
    assert "- vllm-mtp-k1-standin-cpu at 0.25.1: 0.25.1 refused the configuration" in (
        shown.stdout)


def test_bad_input_is_exit_2_with_the_reason(tmp_path: Path) -> None:
    for args, words in ((["--releases", "0.25.1,latest"], "'latest' is not a release"),
                        (["--releases", ""], "give --releases"),
                        (["--releases", "0.25.1", "--cases", "medusa"], "no case 'medusa'"),
                        (["--releases", "0.25.1", "--engine", "sglang"], "no sentinel case"),
                        (["--releases", "0.25.1", "runs=0"], "runs"),
                        (["--releases", "0.25.1", "--margin", "90"], "--margin")):
        result = runner.invoke(app, ["sentinel", *args, "--out", str(tmp_path)])
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert words in result.output, (args, result.output)
