"""A bisect over a 300-commit bracket, read from the fake GitHub as the triage worker reads
it, finds the culprit among the oldest commits (issue 27, item 1).

GitHub lists at most the newest 250 commits of an unpaged compare. Read that way, the 50
oldest were left out without a word and the bisect, starting at the release tag, named
commit 51 for a change made in commit 21."""

from __future__ import annotations

from tests.bisect.test_commits import _finished_release_run
from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.github.conftest import FAST, settings_for
from tests.github.test_compare_pages import commits
from triagebot.bisect import deeper
from triagebot.bisect.search import Step, next_point, outcome
from triagebot.github.client import GitHubClient

TEMPLATE = "https://wheels.example.org/{sha}"
CULPRIT = 20  # the 21st commit of 300, inside the 50 an unpaged compare leaves out


def test_a_300_commit_bracket_is_bisected_without_skipping_a_commit(
        fake_github: FakeGitHub) -> None:
    listed = commits(300)
    run = _finished_release_run()
    assert deeper.release_tags(run) == ("v0.2.0", "v0.3.0")
    fake_github.add_compare(REPO, "v0.2.0", "v0.3.0", listed)
    with GitHubClient.for_installation(settings_for(fake_github), INSTALLATION_ID,
                                       policy=FAST) as gh:
        items = deeper.CompareReader(gh, REPO).items(run)
    plan = deeper.commit_plan(run, items, REPO, TEMPLATE)
    assert not isinstance(plan, str), plan
    assert plan.range.points == ["v0.2.0", *(c["sha"] for c in listed)]
    index = {c["sha"]: k for k, c in enumerate(listed)}
    steps: list[Step] = []
    while (point := next_point(plan.range, steps)) is not None:
        steps.append(Step(point=point, level="commit",
                          verdict="bad" if index[point] >= CULPRIT else "good"))
    found = outcome(plan.range, steps)
    assert found.exact and found.first_new == listed[CULPRIT]["sha"]
    assert len(steps) <= 10  # log2(300) steps and one to confirm
