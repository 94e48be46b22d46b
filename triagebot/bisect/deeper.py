"""Below releases: the commits of the final bracket, read from GitHub's compare API
between the release tags around it, for the commit level and for ranked candidates.

The pure part (`window`, `commit_plan`, `ranked`) takes the compare answer as our GitHub
client returns it; `CompareReader` does the reading. The CLI reads with the user's token;
the service reads on the triage side (the runner holds no GitHub credentials) and hands
the runner the answer (`triagebot.workers.triage_bisect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from triagebot.bisect import shas
from triagebot.bisect.commits import commit_window, first_parent
from triagebot.bisect.ranges import BisectError, Direction
from triagebot.bisect.rank import CommitInfo, RankedCommit, commits_from_compare, rank, subject_of
from triagebot.bisect.runner import BisectRun, CommitPlan
from triagebot.request_model import ReproRequest

if TYPE_CHECKING:
    from triagebot.github.client import GitHubClient

# Release tags of the engine's repository (vLLM's and SGLang's both read v0.20.0).
TAG = "v{version}"
# Changed paths are one call per commit: read them for at most this many candidates.
MAX_FILES = 60


def release_tags(run: BisectRun) -> tuple[str, str] | None:
    """The tags around the release-level bracket, older first."""
    rel = run.level("release")
    if rel is None or rel.outcome is None or not rel.outcome.done:
        return None
    ends = sorted([rel.outcome.last_old, rel.outcome.first_new],
                  key=lambda v: rel.range.points.index(v))
    return TAG.format(version=ends[0]), TAG.format(version=ends[1])


def window(run: BisectRun, items: Sequence[dict[str, Any]], repo: str
           ) -> tuple[list[CommitInfo], CommitPlan] | str:
    """The first-parent commits of the deepest finished bracket (its nightly days where
    it is a nightly one), and the commit level over them; a sentence where there is none."""
    tags, out = release_tags(run), run.outcome
    if tags is None or out is None or not out.done:
        return "no finished release bracket to read commits for"
    chain = first_parent(commits_from_compare(items, repo))
    if run.range.level == "commit":
        inside = [c for c in chain if c.sha in run.range.points]
        return inside, CommitPlan(range=run.range, commits=inside, index=run.commit_index)
    try:
        rng = commit_window(chain, out.last_old, out.first_new, base=tags[0],
                            direction=run.range.direction)
    except BisectError as exc:
        return str(exc)
    inside = [c for c in chain if c.sha in set(rng.points[1:])]
    return inside, CommitPlan(range=rng, commits=inside, index="")


def commit_plan(run: BisectRun, items: Sequence[dict[str, Any]] | None, repo: str,
                template: str | None) -> CommitPlan | str:
    """The commit level for a finished run, or why there is none."""
    if not template:
        return (f"no per-commit builds: {repo} names no `[bisect] commit_index` in "
                ".github/triagebot.toml, so the bisect stops here and ranks the commits")
    if items is None:
        tags = release_tags(run)
        return f"no commits: {repo} has no comparable tags {' and '.join(tags or ())}"
    found = window(run, items, repo)
    if isinstance(found, str):
        return found
    return found[1].model_copy(update={"index": template})


def ranked(run: BisectRun, items: Sequence[dict[str, Any]], repo: str,
           request: ReproRequest, top: int = 5) -> list[RankedCommit]:
    found = window(run, items, repo)
    return [] if isinstance(found, str) else rank(found[0], subject_of(request), top)


class CompareReader:
    """The compare answer between the release tags of a run, read once, with the changed
    paths of the commits in the run's final bracket."""

    def __init__(self, gh: GitHubClient, repo: str) -> None:
        self.gh, self.repo = gh, repo
        self._items: dict[tuple[str, str], list[dict[str, Any]] | None] = {}

    def between_ends(self, good: str, bad: str, direction: Direction) -> CommitPlan:
        """The commits between two ends of which one at least is a SHA, the index left
        for the caller; GitHubError or ValueError where GitHub cannot compare them, a
        BisectError for a pair that cannot be bisected."""
        base, head = shas.refs(good, bad, direction)
        answer = self.gh.compare(self.repo, base, head, with_files=MAX_FILES)
        return shas.sha_plan(good, bad, direction, answer, self.repo)

    def items(self, run: BisectRun) -> list[dict[str, Any]] | None:
        tags = release_tags(run)
        if tags is None:
            return None
        if tags not in self._items:
            self._items[tags] = self.gh.compare_commits(self.repo, *tags, with_files=0)
        found = self._items[tags]
        if found is None:
            return None
        inside = window(run, found, self.repo)
        wanted = {c.sha for c in inside[0]} if not isinstance(inside, str) else set()
        for item in found:
            if item["sha"] in wanted and not item["files"] and len(wanted) <= MAX_FILES:
                item["files"] = self.gh.commit_files(self.repo, item["sha"])
        return found
