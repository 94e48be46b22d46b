"""Golden plans and scripts for the five seed reports.

Regenerate with `pytest tests/golden --update-goldens` and review the diff line by line:
these files are what a maintainer would run for each seed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import seed_path
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.render import render_plan

HERE = Path(__file__).parent / "seeds"

# Seed 002 names no model (the plan refuses it without one); its golden uses the model
# a reviewer on the thread points at.
SEEDS = {"000": [], "001": [], "002": ["model=Qwen/Qwen3.6-27B"], "003": [], "004": []}


def produced(seed: str) -> dict[str, str]:
    request = parse_report(seed_path(seed).read_bytes())
    plan = build_plan(request, parse_overrides(SEEDS[seed]))
    files = {"plan.json": plan.model_dump_json(indent=2) + "\n"}
    files.update({s.filename: s.text for s in render_plan(plan)})
    return files


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_seed_golden(seed: str, update_goldens: bool) -> None:
    files = produced(seed)
    folder = HERE / seed
    if update_goldens:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, text in files.items():
            (folder / name).write_text(text)
    expected = {p.name: p.read_text() for p in sorted(folder.iterdir())} if folder.is_dir() \
        else {}
    assert sorted(files) == sorted(expected), "file set differs; rerun with --update-goldens"
    for name, text in files.items():
        assert text == expected[name], f"{seed}/{name} differs from its golden file"
