"""Golden plans and scripts for the five seed reports.

Regenerate with `pytest tests/golden --update-goldens` and review the diff line by line:
these files are what a maintainer would run for each seed.

Every script carries the same runtime (`repro_templates/_common/runtime.py.j2`): its
environment probe, digest and result writer. It is kept once, in `seeds/runtime.py`, and
each script's golden file holds only its own lines, with the runtime's cell-specific
constants left in place of it. Both parts are compared in full, so a changed runtime
fails once, in one file, and a changed cell fails in that cell's file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import seed_path
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.render import render_plan

HERE = Path(__file__).parent / "seeds"
RUNTIME = HERE / "runtime.py"
RUNTIME_START = "# --- triagebot runtime:"
RUNTIME_END = "# --- end of triagebot runtime ---"
# The runtime's only lines that differ from cell to cell.
CELL_CONSTANT = re.compile(r"^(?:CELL_ID|ENGINE|WARMUPS|RUNS|SCHEMA_VERSION) = ")
KEPT_ONCE = f"# (the rest of the runtime is kept once, in {RUNTIME.name})"

# Seed 002 names no model (the plan refuses it without one); its golden uses the model
# a reviewer on the thread points at.
SEEDS = {"000": [], "001": [], "002": ["model=Qwen/Qwen3.6-27B"], "003": [], "004": []}


def split_runtime(name: str, text: str) -> tuple[str, str]:
    """A script's own lines (runtime constants kept) and the runtime's shared lines."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(RUNTIME_START)]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\n") == RUNTIME_END]
    assert len(starts) == len(ends) == 1, f"{name}: expected one runtime block"
    start, end = starts[0], ends[0]
    block = lines[start:end + 1]
    constants = [line for line in block if CELL_CONSTANT.match(line)]
    shared = [line for line in block if not CELL_CONSTANT.match(line)]
    own = [*lines[:start], block[0], *constants, KEPT_ONCE + "\n", block[-1], *lines[end + 1:]]
    return "".join(own), "".join(shared)


def produced(seed: str) -> tuple[dict[str, str], set[str]]:
    """The seed's golden files, and every distinct runtime its scripts carry."""
    request = parse_report(seed_path(seed).read_bytes())
    plan = build_plan(request, parse_overrides(SEEDS[seed]))
    files = {"plan.json": plan.model_dump_json(indent=2) + "\n"}
    runtimes: set[str] = set()
    for script in render_plan(plan):
        if script.language != "python":
            files[script.filename] = script.text
            continue
        files[script.filename], runtime = split_runtime(script.filename, script.text)
        runtimes.add(runtime)
    return files, runtimes


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_seed_golden(seed: str, update_goldens: bool) -> None:
    files, _ = produced(seed)
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


def test_every_script_carries_the_one_runtime(update_goldens: bool) -> None:
    runtimes = set().union(*(produced(seed)[1] for seed in sorted(SEEDS)))
    assert len(runtimes) == 1, "scripts carry different runtimes"
    if update_goldens:
        RUNTIME.write_text(next(iter(runtimes)))
    assert runtimes == {RUNTIME.read_text()}, f"the runtime differs from {RUNTIME.name}"


def test_split_runtime_keeps_every_line() -> None:
    text = ("#!/usr/bin/env python3\n" + RUNTIME_START + " x ---\nimport os\n"
            "CELL_ID = 'c1'\nRUNS = 3\n\ndef f():\n    return 1\n" + RUNTIME_END + "\nf()\n")
    own, shared = split_runtime("t.py", text)
    assert "CELL_ID = 'c1'" in own and "RUNS = 3" in own and "import os" not in own
    assert "import os" in shared and "CELL_ID" not in shared and own.endswith("f()\n")
    with pytest.raises(AssertionError, match="one runtime block"):
        split_runtime("t.py", "print(1)\n")
