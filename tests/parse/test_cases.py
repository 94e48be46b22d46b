"""Labelled reports written for this project (tests/parse/cases/), in the shapes real
threads take: scope decided by the question, modes read from tables and command pairs,
symptoms stated only by numbers, multimodal inputs only in code. Each case states only
the fields it is about; `../shared/parse-dev` stays the held-out check."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parse.test_reports import _expectation, check_labelled
from triagebot.parse import parse_report

CASES_DIR = Path(__file__).parent / "cases"
CASES = sorted(CASES_DIR.glob("*.md"))


_spec = _expectation


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_labelled_case(path: Path) -> None:
    problems = check_labelled(path)
    assert not problems, "\n".join(problems)


def test_the_cases_cover_scope_both_ways() -> None:
    scopes = [_spec(p)["expect"].get("in_scope") for p in CASES]
    assert len(CASES) >= 30
    assert scopes.count(False) >= 6 and scopes.count(True) >= 20


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_stated_value_has_evidence(path: Path) -> None:
    spec = _spec(path)
    req = parse_report(path.read_bytes(), title=spec["title"], repo=spec.get("repo"))
    # Every field the auto-triage comment states quotes where it was read (issue 43).
    for field in ("engine", "engine_version", "engine_commit", "spec_method", "gpu",
                  "gpu_count", "temperature", "max_tokens", "concurrency",
                  "tensor_parallel_size", "data_parallel_size", "models", "draft_models",
                  "num_speculative_tokens", "modes_compared", "modality", "symptom"):
        if getattr(req, field) not in (None, []):
            assert req.evidence.get(field), f"{field}={getattr(req, field)!r} has no evidence"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_scope_reasons_say_why(path: Path) -> None:
    spec = _spec(path)
    req = parse_report(path.read_bytes(), title=spec["title"], repo=spec.get("repo"))
    c = req.classification
    assert req.scope_reasons, "no reason given for the scope decision"
    assert req.scope_reasons == (c.in_scope_reasons if req.in_scope else
                                 c.out_of_scope_reasons)


def test_the_help_explains_the_scope_reasons() -> None:
    from triagebot.cli import PARSE_HELP

    for phrase in ("scope_reasons", "only mentioned", "output quality", "crash outside graph "
                   "capture", "feature request", "crash check", "accuracy"):
        assert phrase in PARSE_HELP, phrase


def test_competing_values_are_left_empty_and_quoted() -> None:
    path = CASES_DIR / "conflict_two_temperatures.md"
    req = parse_report(path.read_bytes(), title=_spec(path)["title"])
    assert req.temperature is None and "temperature" in req.missing
    warning = next(w for w in req.warnings if w.startswith("temperature"))
    assert "0.6 at line 2" in warning and "0.0 at line 3" in warning
