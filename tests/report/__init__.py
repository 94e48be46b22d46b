"""Recorded RunResults (tests/report/fixtures/*.json, written by fixtures/generate.py)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from tests.conftest import seed_path
from triagebot.model import Plan, ReproRequest, RunResult
from triagebot.parse import parse_report

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCENARIOS = ("reproduced_slowdown", "not_reproduced", "acceptance_collapse",
             "crash_in_one_cell", "config_rejected", "noisy_unknown", "cpu_demo")
# The demo's case: `./dev demo`'s sample on the cpu runner (the others are seed 000 on a GPU).
DEMO = Path(__file__).resolve().parents[2] / "samples" / "glm-ocr-mtp-graph.md"


def load_fixture(name: str) -> tuple[Plan, dict[str, list[RunResult]]]:
    doc = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    plan = Plan.model_validate(doc["plan"])
    results = {cid: [RunResult.model_validate(r) for r in rounds]
               for cid, rounds in doc["results"].items()}
    return plan, results


@cache
def seed_request(prefix: str = "000") -> ReproRequest:
    """The seed report parsed in place (never copied into the project)."""
    return parse_report(seed_path(prefix).read_bytes())


def request_for(name: str) -> ReproRequest:
    """The report a scenario's plan was built from, parsed in place."""
    return parse_report(DEMO.read_bytes()) if name == "cpu_demo" else seed_request()
