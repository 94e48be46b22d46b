"""`triagebot parse` of an empty report warns, as docs/cli.md says (any text yields a
request with its problems under `warnings`): it printed `warnings: []` although there was
nothing to read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from triagebot.cli import app


@pytest.mark.parametrize("text", ["", "  \n\t\n"])
def test_an_empty_report_is_parsed_with_a_warning(text: str, tmp_path: Path) -> None:
    path = tmp_path / "empty.md"
    path.write_text(text)
    result = CliRunner().invoke(app, ["parse", str(path), "--json"])
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert any("empty" in w for w in warnings), warnings
