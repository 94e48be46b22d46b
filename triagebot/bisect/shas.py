"""The commit level when good= or bad= is a commit SHA: the first-parent commits between
the two ends, from GitHub's compare API (older end as base, newer as head).

Two SHAs do not show their order; the compare status does: "ahead" is the order asked
for, "behind" an inverted range, "identical" an empty one, "diverged" two ends on no one
history. Pure: the caller reads the compare answer (`GitHubClient.compare`).
"""

from __future__ import annotations

import re
from typing import Any

from triagebot.bisect.commits import first_parent
from triagebot.bisect.endpoints import tag_or_sha
from triagebot.bisect.ranges import (
    BisectError,
    BisectRange,
    Direction,
    check_direction,
    oriented,
)
from triagebot.bisect.rank import CommitInfo, RankedCommit, commits_from_compare, rank, subject_of
from triagebot.bisect.runner import BisectRun, CommitPlan
from triagebot.request_model import ReproRequest

Answer = tuple[str, str, list[dict[str, Any]]]  # status, base's full SHA, commits
_FULL = re.compile(r"^[0-9a-f]{40}$")


def refs(good: str, bad: str, direction: Direction) -> tuple[str, str]:
    """(base, head) for the compare API: the end with the old behaviour is the older."""
    older, newer = oriented(good, bad, direction)
    return tag_or_sha(older), tag_or_sha(newer)


def sha_plan(good: str, bad: str, direction: Direction, answer: Answer | None,
             repo: str) -> CommitPlan:
    """The commit range between two ends (the index is left for the caller to fill in);
    a BisectError that says what is wrong with the pair."""
    base, head = refs(good, bad, direction)
    if answer is None:
        raise BisectError(f"GitHub knows no {base} or no {head} in {repo}: check the SHAs "
                          "(and that release tags read v<release>)")
    status, base_sha, items = answer
    if status == "behind":
        check_direction(good, bad, direction, direction == "success")
    if status == "identical" or not items:
        raise BisectError(f"good={good} and bad={bad} are the same commit: the range is "
                          "empty")
    if status == "diverged":
        raise BisectError(f"{good} and {bad} are on no one history (GitHub: diverged): "
                          "give two points of the same branch")
    if status not in ("ahead", ""):
        raise BisectError(f"GitHub compared {base}...{head} as {status!r}, not ahead")
    if not _FULL.match(base_sha):
        base_sha = base if _FULL.match(base) else ""
    if not base_sha:
        raise BisectError(f"GitHub did not name {base}'s full SHA: a wheel index is keyed "
                          "by all 40 hex digits")
    chain = first_parent(commits_from_compare(items, repo))
    if not head.startswith("v") and not chain[-1].sha.startswith(head):
        raise BisectError(f"{head} is not the newest commit GitHub lists between the two "
                          "ends")
    rng = BisectRange.over("commit", direction, [base_sha, *(c.sha for c in chain)])
    return CommitPlan(range=rng, commits=chain, index="")


def bracket_commits(run: BisectRun) -> list[CommitInfo]:
    """The commits still in the run's final bracket (all of them before any step)."""
    points = run.range.points
    out = run.outcome
    if out is not None:
        lo, hi = sorted((points.index(out.last_old), points.index(out.first_new)))
        points = points[lo:hi + 1]
    keep = set(points[1:])
    return [c for c in run.commits if c.sha in keep]


def ranked_between(run: BisectRun, request: ReproRequest,
                   top: int = 5) -> list[RankedCommit]:
    return rank(bracket_commits(run), subject_of(request), top)
