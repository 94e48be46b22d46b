"""Findings models reject unknown fields and survive a JSON round trip."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from triagebot.analyze import verdict
from triagebot.analyze.findings_models import CellSummary, ComparisonResult, Decision


def test_extra_fields_are_forbidden() -> None:
    with pytest.raises(ValidationError):
        CellSummary(n=1, bogus=2)  # type: ignore[call-arg]


def test_round_trip_json() -> None:
    res = verdict.compare([[1.0, 2.0, 3.0], [4.0, 5.0]], [[6.0, 7.0, 8.0], [9.0, 10.0]],
                          name="a/b")
    assert res.drift is not None
    assert ComparisonResult.model_validate_json(res.model_dump_json()) == res
    dec = verdict.next_step([[1.0, 2.0]], [[3.0, 4.0]], 2, 10)
    assert Decision.model_validate_json(dec.model_dump_json()) == dec
