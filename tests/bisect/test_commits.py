"""The commit level: first-parent chains, nightly days mapped to commits, the wheel index
template (in `.github/triagebot.toml` and on the CLI), and the stop at releases with
ranked candidates where no per-commit builds are named."""

from __future__ import annotations

from typing import Any

import pytest

from triagebot.bisect import deeper
from triagebot.bisect.commits import commit_window, first_parent, index_for
from triagebot.bisect.ranges import BisectError, release_range
from triagebot.bisect.rank import CommitInfo, commits_from_compare
from triagebot.bisect.runner import BisectRun, Deeper, _deeper
from triagebot.bisect.search import Step, outcome
from triagebot.repo_config import RepoConfigError, check_template, parse_repo_config
from triagebot.request_model import ReproRequest

REPO = "acme/engine"


def _c(k: int, date: str, parents: list[str] | None = None, **more: Any) -> CommitInfo:
    return CommitInfo(sha=f"{k:040x}", date=date, parents=parents, **more)


def test_first_parent_leaves_out_the_commits_a_merge_brought_in() -> None:
    a, b = _c(1, "2026-01-01T01:00:00Z", []), _c(2, "2026-01-01T02:00:00Z", [])
    side = _c(3, "2026-01-01T03:00:00Z", [a.sha])
    merge = _c(4, "2026-01-01T04:00:00Z", [b.sha, side.sha])
    b = b.model_copy(update={"parents": [a.sha]})
    assert [c.sha for c in first_parent([a, b, side, merge])] == [a.sha, b.sha, merge.sha]
    # A listing without parents is taken as linear.
    plain = [c.model_copy(update={"parents": None}) for c in (a, b)]
    assert first_parent(plain) == plain


DAYS = [_c(k, f"2026-01-{k // 2 + 1:02d}T{6 + 10 * (k % 2):02d}:00:00Z") for k in range(8)]


def test_nightly_days_map_to_the_commits_that_landed_on_them() -> None:
    # Nightlies of 01-02 (good) and 01-03 (bad): the commits of both days are candidates,
    # the last commit before 01-02 is the known-good end.
    rng = commit_window(DAYS, "0.2.0.dev20260102", "0.2.0.dev202601030930", base="v0.1.0")
    assert rng.level == "commit"
    assert rng.points == [DAYS[1].sha, *(c.sha for c in DAYS[2:6])]
    assert rng.good == DAYS[1].sha and rng.bad == DAYS[5].sha


def test_release_ends_take_every_commit_between_the_tags() -> None:
    rng = commit_window(DAYS, "0.1.0", "0.2.0", base="v0.1.0")
    assert rng.points == ["v0.1.0", *(c.sha for c in DAYS)]
    # A nightly old end on the first day: nothing landed before it, so the tag is the end.
    first = commit_window(DAYS, "0.2.0.dev20260101", "0.2.0", base="v0.1.0")
    assert first.points[0] == "v0.1.0" and first.candidates == 8


def test_no_commit_in_the_window_is_a_clear_error() -> None:
    with pytest.raises(BisectError, match="no commit landed between"):
        commit_window(DAYS, "0.2.0.dev20260201", "0.2.0.dev20260202", base="v0.1.0")
    broken = [DAYS[0].model_copy(update={"date": "yesterday"})]
    with pytest.raises(BisectError, match="no usable date"):
        commit_window(broken, "0.2.0.dev20260101", "0.2.0", base="v0.1.0")


def test_the_template_needs_one_sha_field_in_an_http_url() -> None:
    assert check_template("https://wheels.vllm.ai/{sha}") == "https://wheels.vllm.ai/{sha}"
    sha = "a" * 40
    assert index_for("https://wheels.vllm.ai/{sha}", sha) == f"https://wheels.vllm.ai/{sha}"
    for bad in ("https://wheels.vllm.ai/", "https://x/{sha}/{sha}", "https://x/{commit}",
                "file:///tmp/{sha}", "https://x/{sha} extra", "https://x/{sha}{"):
        with pytest.raises(ValueError):
            check_template(bad)
    with pytest.raises(BisectError, match="full commit SHA"):
        index_for("https://wheels.vllm.ai/{sha}", "abc1234")


def test_a_bad_template_in_the_repo_config_names_the_key() -> None:
    config = parse_repo_config('[bisect]\ncommit_index = "https://wheels.vllm.ai/{sha}"\n')
    assert config.bisect.commit_index == "https://wheels.vllm.ai/{sha}"
    assert parse_repo_config("").bisect.commit_index is None
    with pytest.raises(RepoConfigError) as err:
        parse_repo_config('[bisect]\ncommit_index = "https://wheels.vllm.ai/{commit}"\n')
    assert err.value.problems[0].startswith('bisect.commit_index = "https://wheels.vllm.ai/')
    assert "{sha}" in err.value.problems[0]
    with pytest.raises(RepoConfigError, match=r"bisect\.index: unknown key; valid keys in "
                                              r"\[bisect\]: commit_index"):
        parse_repo_config('[bisect]\nindex = "https://wheels.vllm.ai/{sha}"\n')


RELEASES = ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]
ITEMS: list[dict[str, Any]] = [{"sha": f"{k:040x}", "title": title, "url": "", "files": files,
          "date": "2026-01-01T00:00:00Z", "parents": [f"{k - 1:040x}"] if k else []}
         for k, (title, files) in enumerate([
             ("[Docs] typo (#11)", ["docs/a.md"]),
             ("[Spec Decode] faster ngram (#12)", ["vllm/v1/spec_decode/ngram_proposer.py"]),
             ("[CI] runners (#13)", [".buildkite/x.yaml"])])]


def _finished_release_run() -> BisectRun:
    rng = release_range(RELEASES, "0.1.0", "0.4.0")
    steps = [Step(point="0.2.0", verdict="good"), Step(point="0.3.0", verdict="bad"),
             Step(point="0.3.0", verdict="bad")]
    return BisectRun(package="vllm", range=rng, steps=steps, outcome=outcome(rng, steps))


def test_without_per_commit_builds_the_bisect_stops_at_releases_and_ranks() -> None:
    run = _finished_release_run()
    assert run.outcome is not None and run.outcome.exact
    said = deeper.commit_plan(run, ITEMS, REPO, None)
    assert isinstance(said, str) and "no per-commit builds" in said
    assert "[bisect] commit_index" in said
    stopped = _deeper(run, Deeper(nightlies=lambda: [],
                                  commits=lambda r: deeper.commit_plan(r, ITEMS, REPO, None)),
                      log=lambda _m: None)
    assert stopped is not None and stopped.range.level == "release"
    assert any("no nightly build lies between 0.2.0 and 0.3.0" in n for n in stopped.notes)
    assert any("no per-commit builds" in n for n in stopped.notes)
    ranked = deeper.ranked(run, ITEMS, REPO, ReproRequest(spec_method="ngram"))
    assert ranked[0].commit.title == "[Spec Decode] faster ngram (#12)"
    assert ranked[0].commit.pr_url == f"https://github.com/{REPO}/pull/12"
    assert deeper.release_tags(run) == ("v0.2.0", "v0.3.0")


def test_with_a_template_the_next_level_is_the_commits_between_the_tags() -> None:
    run = _finished_release_run()
    plan = deeper.commit_plan(run, ITEMS, REPO, "https://wheels.vllm.ai/{sha}")
    assert not isinstance(plan, str)
    assert plan.range.points == ["v0.2.0", *(i["sha"] for i in ITEMS)]
    assert plan.index == "https://wheels.vllm.ai/{sha}"
    assert [c.title for c in plan.commits] == [i["title"] for i in ITEMS]
    below = _deeper(run, Deeper(commits=lambda r: plan), log=lambda _m: None)
    assert below is not None and below.range.level == "commit"
    assert [lv.range.level for lv in below.earlier] == ["release"]
    missing = deeper.commit_plan(run, None, REPO, "https://wheels.vllm.ai/{sha}")
    assert isinstance(missing, str) and "no comparable tags v0.2.0 and v0.3.0" in missing


def test_compare_items_keep_date_and_parents() -> None:
    [first, *_] = commits_from_compare(ITEMS, REPO)
    assert first.date == "2026-01-01T00:00:00Z" and first.parents == []
