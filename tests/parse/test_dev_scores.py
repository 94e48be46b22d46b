"""The labelled dev sets, scored as `../shared/tools/score_parse.py` scores them, hold the
targets issues 28 and 43 set: in-scope F1 and specificity, the reproduction-critical
fields, and the precision of every value the parser states. They are held on
`../shared/parse-dev` alone and on it together with `../shared/parse-dev-new` (the
reports issue 43 added). The scoring is the scorer's own, imported rather than restated;
the parse runs in-process (the scorer runs the CLI per report)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from tests.conftest import SHARED
from tests.parse.test_fuzz_dev import scorer
from triagebot.parse import parse_report

pytestmark = pytest.mark.shared("parse-dev", "parse-dev-new", "tools")
CORPORA = {"parse-dev": ("parse-dev",), "all": ("parse-dev", "parse-dev-new")}
TARGETS = {"in_scope_f1": 0.97, "specificity": 0.95, "fields": 0.95, "stated_precision": 0.97}


@cache
def scores(corpus: str) -> dict[str, float]:
    sp = scorer()
    cls = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    scalars = {f: [0, 0] for f in [*sp.SCALAR_EXACT, "engine_version", "gpu", "temperature"]}
    sets = {f: [0, 0, 0] for f in sp.SETS}
    stated = [0, 0]
    for path in sorted(p for folder in CORPORA[corpus] for p in (SHARED / folder).glob("*.json")):
        item: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        labels = item["labels"]
        pred = json.loads(parse_report(item["text"], title=item["title"],
                                       repo=sp.repo_of(item.get("url"))).model_dump_json())
        want, got = bool(labels.get("in_scope")), bool(pred.get("in_scope"))
        cls[("t" if want == got else "f") + ("p" if got else "n")] += 1
        if not want:
            continue
        for field, tally in scalars.items():
            ok = sp.scalar_ok(field, labels.get(field), pred.get(field))
            tally[0] += ok
            tally[1] += 1
            if pred.get(field) is not None:
                stated[0] += ok
                stated[1] += 1
        for field, tally in sets.items():
            for i, n in enumerate(sp.set_counts(field, labels.get(field), pred.get(field))):
                tally[i] += n
    precision = cls["tp"] / max(1, cls["tp"] + cls["fp"])
    recall = cls["tp"] / max(1, cls["tp"] + cls["fn"])
    field_scores = {f: ok / max(1, n) for f, (ok, n) in scalars.items()}
    for f, (tp, n_label, n_pred) in sets.items():
        p = tp / n_pred if n_pred else (1.0 if n_label == 0 else 0.0)
        r = tp / n_label if n_label else 1.0
        field_scores[f] = 2 * p * r / max(1e-9, p + r)
    return {
        "in_scope_f1": 2 * precision * recall / max(1e-9, precision + recall),
        "specificity": cls["tn"] / max(1, cls["tn"] + cls["fp"]),
        "fields": sum(field_scores[f] for f in sp.CRITICAL) / len(sp.CRITICAL),
        "stated_precision": stated[0] / max(1, stated[1]),
    }


@pytest.mark.parametrize("corpus", sorted(CORPORA))
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_dev_set_meets_its_target(corpus: str, name: str) -> None:
    assert scores(corpus)[name] >= TARGETS[name], scores(corpus)
