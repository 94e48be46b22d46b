"""good=/bad= as releases, nightlies or commit SHAs: the kind, the level a bisect starts
at, and every pair that cannot be bisected (inverted, empty, a nightly with a SHA)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from triagebot.bisect.endpoints import classify, nightly_span, start_level, tag_or_sha
from triagebot.bisect.ranges import BisectError
from triagebot.bisect.runner import BisectRun
from triagebot.bisect.shas import ranked_between, refs, sha_plan
from triagebot.request_model import ReproRequest

SHAS = [hashlib.sha1(f"c{k}".encode()).hexdigest() for k in range(6)]
ITEMS: list[dict[str, Any]] = [
    {"sha": s, "title": f"change {k} (#{100 + k})", "url": "", "date": "", "files": [],
     "parents": [SHAS[k]]} for k, s in enumerate(SHAS[1:], 0)]


@pytest.mark.parametrize(("value", "kind"), [
    ("0.17.0", "release"), ("v0.17.1", "release"), ("0.20.1.post1", "release"),
    ("0.25.1.dev202607100938", "nightly"), ("0.22.2.dev20260611", "nightly"),
    ("abc1234", "commit"), (SHAS[0], "commit"), ("ABCDEF0123", "commit")])
def test_each_endpoint_has_one_kind(value: str, kind: str) -> None:
    assert classify(value) == kind


def test_a_sha_of_digits_only_is_told_to_give_more_digits() -> None:
    with pytest.raises(BisectError, match="needs more of its digits"):
        classify("1197955")


@pytest.mark.parametrize("value", ["abc12", "1234567", "0.20.1.dev7", "xyz1234",
                                   SHAS[0] + "0", "main", ""])
def test_anything_else_is_refused_with_the_accepted_forms(value: str) -> None:
    # Too short, all digits (a version, never a SHA), a dev number that is no date,
    # not hex, 41 digits, a branch name.
    with pytest.raises(BisectError, match=r"0\.17\.1|commit SHA|build date"):
        classify(value)


def test_the_start_level_follows_the_ends_and_says_why() -> None:
    assert start_level("0.16.0", "0.17.1", "regress")[0] == "release"
    level, why = start_level("0.20.1.dev20260101", "0.20.1.dev20260108", "regress")
    assert level == "nightly" and "nightly" in why
    level, why = start_level("0.20.0", "0.20.1.dev20260105", "regress")
    assert level == "nightly"
    level, why = start_level(SHAS[0], "0.17.1", "regress")
    assert level == "commit" and SHAS[0][:10] in why


@pytest.mark.parametrize(("good", "bad", "says"), [
    (SHAS[0], SHAS[0].upper(), "empty"),
    ("0.20.1.dev20260105", "0.20.1.dev20260105", "empty"),
    ("0.20.1.dev20260105", "0.20.1.dev202601050000", "same time"),
    # A later day with a shorter dev number: ordered by build date, not by the number.
    ("0.20.1.dev20260105", "0.20.1.dev202601040900", "newer than bad"),
    ("0.20.1.dev20260105", "0.20.0", "newer than bad"),
    ("0.20.1.dev20260105", SHAS[0], "nightly names no commit"),
])
def test_pairs_that_cannot_be_bisected_are_clear_errors(good: str, bad: str,
                                                        says: str) -> None:
    with pytest.raises(BisectError, match=says):
        start_level(good, bad, "regress")


def test_success_direction_wants_the_newer_nightly_good() -> None:
    start_level("0.20.1.dev20260108", "0.20.1.dev20260101", "success")
    with pytest.raises(BisectError, match="Swap them"):
        start_level("0.20.1.dev20260101", "0.20.1.dev20260108", "success")


def test_a_nightly_span_orders_by_build_time_and_checks_the_ends() -> None:
    known = ["0.20.1.dev20260103", "0.20.1.dev202601020600", "0.20.1.dev20260101",
             "0.20.1.dev20260105", "0.21.0.dev20260110"]
    rng = nightly_span(known, ["0.20.0", "0.20.1"], "0.20.1.dev20260101", "0.20.1")
    assert rng.points == ["0.20.1.dev20260101", "0.20.1.dev202601020600",
                          "0.20.1.dev20260103", "0.20.1.dev20260105", "0.20.1"]
    assert (rng.good, rng.bad, rng.level) == ("0.20.1.dev20260101", "0.20.1", "nightly")
    with pytest.raises(BisectError, match=r"not a nightly the index lists: the nearest "
                                          r"are 0\.20\.1\.dev20260103"):
        nightly_span(known, ["0.20.0"], "0.20.1.dev20260104", "0.20.1.dev20260105")
    with pytest.raises(BisectError, match="not a release the index lists"):
        nightly_span(known, ["0.20.0"], "0.19.0", "0.20.1.dev20260105")


def test_compare_refs_put_the_old_behaviour_first_and_releases_as_tags() -> None:
    assert refs(SHAS[0], "0.17.1", "regress") == (SHAS[0], "v0.17.1")
    assert refs("0.17.1", SHAS[1][:7], "success") == (SHAS[1][:7], "v0.17.1")
    assert tag_or_sha("ABC1234") == "abc1234"


def test_a_sha_range_comes_from_the_compare_answer() -> None:
    plan = sha_plan(SHAS[0][:8], SHAS[5][:12], "regress", ("ahead", SHAS[0], ITEMS), "o/r")
    assert plan.range.points == SHAS
    assert (plan.range.good, plan.range.bad) == (SHAS[0], SHAS[5])
    assert [c.sha for c in plan.commits] == SHAS[1:]
    run = BisectRun(package="vllm", range=plan.range, commits=plan.commits)
    assert len(ranked_between(run, ReproRequest())) == 5


@pytest.mark.parametrize(("status", "items", "says"), [
    ("behind", ITEMS, "newer than bad"),
    ("identical", [], "same commit"),
    ("ahead", [], "range is empty"),
    ("diverged", ITEMS, "no one history"),
])
def test_the_compare_status_catches_inverted_and_empty_sha_ranges(
        status: str, items: list[dict[str, Any]], says: str) -> None:
    with pytest.raises(BisectError, match=says):
        sha_plan(SHAS[0], SHAS[5], "regress", (status, SHAS[0], items), "o/r")


def test_unknown_refs_a_missing_base_sha_and_a_foreign_head_are_refused() -> None:
    with pytest.raises(BisectError, match="GitHub knows no"):
        sha_plan(SHAS[0], SHAS[5], "regress", None, "o/r")
    with pytest.raises(BisectError, match="full SHA"):
        sha_plan("0.17.0", SHAS[5], "regress", ("ahead", "", ITEMS), "o/r")
    with pytest.raises(BisectError, match="not the newest commit"):
        sha_plan(SHAS[0], SHAS[3], "regress", ("ahead", SHAS[0], ITEMS), "o/r")
