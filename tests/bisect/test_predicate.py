"""A step's findings read as good, bad or skip."""

from __future__ import annotations

from typing import Any

import pytest

from triagebot.analyze.findings_models import Findings
from triagebot.bisect.predicate import reported_errors, step_verdict

NOISE = {"low": 0.97, "high": 1.03, "half_width": 0.03, "source": "margin", "floor": 0.03}


def _findings(outcome: str, reason: str = "why", cells: list[dict[str, Any]] | None = None
              ) -> Findings:
    cells = cells if cells is not None else [
        {"cell_id": "c0000000001", "label": "ngram", "status": "ok", "throughput": {"n": 3}}]
    return Findings.model_validate({"engine": "vllm", "outcome": outcome,
                                    "outcome_reason": reason, "headline": "h",
                                    "cells": cells, "noise": NOISE})


@pytest.mark.parametrize(("outcome", "verdict"), [
    ("reproduced", "bad"), ("not_reproduced", "good"), ("inconclusive", "skip"),
    ("cannot_answer", "skip"), ("error", "skip")])
def test_outcome_maps_to_a_three_way_step(outcome: str, verdict: str) -> None:
    got, why = step_verdict(_findings(outcome, "because"))
    assert got == verdict and "because" in why


def test_unknown_after_escalation_says_so() -> None:
    assert step_verdict(_findings("inconclusive"))[1].startswith("UNKNOWN after escalation")


FAILED = [{"cell_id": "c0000000001", "label": "ngram", "status": "failed",
           "error": "Traceback ...\nTypeError: kernel() got an unexpected keyword "
                    "argument 'SYNTHETIC_MODE'", "throughput": {"n": 0}}]


def test_a_crash_counts_only_with_the_reported_error() -> None:
    errors = reported_errors("it dies:\n```\nAssertionError: spec decode is not supported.\n```")
    assert errors == ["AssertionError: spec decode is not supported"]
    verdict, why = step_verdict(_findings("reproduced", cells=FAILED), errors=errors)
    assert verdict == "good" and "SYNTHETIC_MODE" in why and "gone" in why
    logs = {"c0000000001": "AssertionError: spec decode is not supported."}
    verdict, why = step_verdict(_findings("reproduced", cells=FAILED), errors=errors,
                                logs=logs)
    assert verdict == "bad" and "reported error" in why


def test_without_a_quoted_error_any_crash_is_the_crash() -> None:
    assert step_verdict(_findings("reproduced", cells=FAILED))[0] == "bad"


def test_reported_errors_ignore_prose() -> None:
    assert reported_errors("The error rate went up. No exception here.") == []
    assert reported_errors("torch._dynamo.exc.Unsupported: x\nRuntimeError: CUDA error: "
                           "out of memory") == ["RuntimeError: CUDA error: out of memory"]


def test_the_root_cause_is_named_not_the_wrapper() -> None:
    from triagebot.bisect.predicate import root_error

    log = ("RuntimeError: Found no NVIDIA driver on your system\n"
           "TypeError: kernel() got an unexpected keyword argument 'SYNTHETIC_MODE'\n"
           "RuntimeError: Engine core initialization failed. See root cause above.\n")
    assert root_error(log) == ("TypeError: kernel() got an unexpected keyword argument "
                               "'SYNTHETIC_MODE'")
    assert root_error("all fine") is None
