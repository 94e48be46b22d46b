"""The word patterns that decide scope, symptom and modes find the same with and without
the first-character lookahead that speeds them up (`common.fast`): a character
missing from a pattern's `first` would silently drop the words it starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import shared_path
from triagebot.parse import common, prose  # noqa: F401 - importing registers the patterns
from triagebot.parse.decide import modality, symptom, words  # noqa: F401

CASES = Path(__file__).parent / "cases"


def _texts() -> list[str]:
    dev = sorted([*shared_path("parse-dev").glob("*.json"),
                  *shared_path("parse-dev-new").glob("*.json")])
    texts = [json.loads(p.read_text())["text"] for p in dev]
    texts += [p.read_text() for p in sorted(CASES.glob("*.md"))]
    texts += [json.loads(p.read_text())["title"] for p in sorted(CASES.glob("*.expect.json"))]
    return texts


@pytest.mark.parametrize("index", range(len(common.PREFILTERED)))
def test_the_lookahead_changes_nothing(index: int) -> None:
    quick, plain = common.PREFILTERED[index]
    for text in _texts():
        want = [m.span() for m in plain.finditer(text)]
        assert [m.span() for m in quick.finditer(text)] == want, (plain.pattern[:60], text[:80])


def test_a_missing_first_character_is_caught() -> None:
    quick = common.fast(r"\bslow|\bfast", "s")
    common.PREFILTERED.pop()
    assert [m.group(0) for m in quick.finditer("fast and slow")] == ["slow"]
