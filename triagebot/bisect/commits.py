"""The commit level: which commits lie between the last old and the first new build, and
where each one's wheel is.

The commits come from GitHub's compare API between the release tags around the bracket,
oldest first. Only the first-parent chain counts (the commits that landed on the branch
one by one, each of them a build): the chain is walked from the newest commit through
each commit's first parent; a listing without parents is taken as already linear.

A nightly names no commit, only its build date, so a nightly end is mapped to commits by
their committer date, a day at a time: a nightly built on day D holds every commit that
landed before D began, and none that landed after D ended. The last commit before the
old nightly's day is therefore known old (good in a regression) and the last commit of
the new nightly's day holds everything the new nightly holds; the commits from the old
day's start to the new day's end are the candidates. A day's commits on either side are
kept rather than guessed at from a build hour the version may not give.

The wheel index of a commit is the repo's `[bisect] commit_index` template with `{sha}`
replaced by the full SHA (vLLM: https://wheels.vllm.ai/{sha}); the template's form is
checked where the repo's config is read (`triagebot.repo_config.check_template`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from triagebot.bisect.ranges import BisectError, BisectRange, Direction, build_time
from triagebot.bisect.rank import CommitInfo
from triagebot.repo_config import check_template


def index_for(template: str, sha: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise BisectError(f"{sha[:40]!r} is not a full commit SHA: a wheel index is keyed "
                          "by all 40 hex digits")
    return check_template(template).replace("{sha}", sha)


def first_parent(commits: Sequence[CommitInfo]) -> list[CommitInfo]:
    """The first-parent chain of a compare listing, oldest first."""
    if not commits or all(c.parents is None for c in commits):
        return list(commits)
    by_sha = {c.sha: c for c in commits}
    chain: list[CommitInfo] = []
    here: CommitInfo | None = commits[-1]
    while here is not None:
        chain.append(here)
        first = here.parents[0] if here.parents else None
        here = by_sha.get(first) if first else None
    return list(reversed(chain))


def _when(commit: CommitInfo) -> datetime:
    try:
        when = datetime.fromisoformat(commit.date.replace("Z", "+00:00"))
    except ValueError:
        raise BisectError(f"commit {commit.sha[:10]} has no usable date ({commit.date!r}) "
                          "to place it between nightlies") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _day(version: str) -> datetime | None:
    when = build_time(version)
    return None if when is None else when.replace(hour=0, minute=0)


def commit_window(commits: Sequence[CommitInfo], old: str, new: str, *, base: str,
                  direction: Direction = "regress") -> BisectRange:
    """The commit range between two builds: `old` and `new` are the bracket's ends
    (releases or nightlies), `commits` the first-parent chain from the release tag
    `base` (the old end's tag) to the new end's tag, oldest first.

    `commits` must be the whole listing (`GitHubClient.compare` refuses to return part
    of one): where no commit landed before the old end's day, `base` is the last old
    point, which holds only when none was left out."""
    start, new_day = _day(old), _day(new)
    end = None if new_day is None else new_day + timedelta(days=1)
    before = [c for c in commits if start is not None and _when(c) < start]
    inside = [c for c in commits if (start is None or _when(c) >= start)
              and (end is None or _when(c) < end)]
    if not inside:
        raise BisectError(f"no commit landed between {old} and {new}: nothing to bisect")
    low = before[-1].sha if before else base
    return BisectRange.over("commit", direction, [low, *(c.sha for c in inside)])


def culprit(commits: Sequence[CommitInfo], sha: str) -> CommitInfo | None:
    return next((c for c in commits if c.sha == sha), None)
