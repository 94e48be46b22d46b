"""The compare API and a commit's file list, read whole or refused.

Unpaged, GitHub lists only the newest 250 commits of a comparison, and a commit's changed
files 300 to a page: a single answer silently loses the rest, and a bisect over what is
left can name the wrong commit. Both are read page by page here, and a comparison GitHub
does not list whole (more than `MAX_COMPARE_COMMITS`, or pages that stop short of its
`total_commits`) is refused with a GitHubError that says so, never returned in part.
"""

from __future__ import annotations

import re
from typing import Any

from triagebot.github.calls import Calls
from triagebot.github.errors import GitHubError

# Items per page of the lists read page by page (GitHub's most for these endpoints).
PAGE = 100
# A comparison longer than this is refused rather than read: 100 requests already.
MAX_COMPARE_COMMITS = 10_000
# GitHub lists at most this many of a commit's changed files.
MAX_COMMIT_FILES = 3000
_REF = re.compile(r"^[A-Za-z0-9._/-]{1,100}$")
_SHA = re.compile(r"[0-9a-f]{7,40}")


def compare(calls: Calls, repo: str, base: str, head: str, *, with_files: int = 40
            ) -> tuple[str, str, list[dict[str, Any]]] | None:
    """GitHub's status of head against base, base's full SHA, and the commits between,
    oldest first, as {"sha", "title", "url", "date", "parents", "files"} (date: when it
    was committed to the branch); the changed paths of the newest `with_files` (one call
    each: the compare answer carries only the sum). None when a ref does not exist."""
    if not (_REF.fullmatch(base) and _REF.fullmatch(head)) or ".." in base + head:
        raise ValueError(f"{base!r}...{head!r} are not refs")
    what = f"compare {base}...{head} in {repo}"
    path = f"/repos/{repo}/compare/{base}...{head}"
    data = calls.get_json(what, path, {"per_page": PAGE, "page": 1})
    if data is None:
        return None
    total = int(data.get("total_commits") or 0)
    if total > MAX_COMPARE_COMMITS:
        raise GitHubError(f"{what}: {total} commits lie between them, more than the "
                          f"{MAX_COMPARE_COMMITS} triagebot lists; name ends closer together")
    listed = list(data.get("commits") or [])
    page = 1
    while len(listed) < total:
        page += 1
        more = calls.get_json(what, path, {"per_page": PAGE, "page": page})
        batch = list((more or {}).get("commits") or [])
        if not batch:
            break
        listed += batch
    if len(listed) != total:
        raise GitHubError(f"{what}: GitHub listed {len(listed)} of the {total} commits "
                          "between them; a bisect over part of a range could name the "
                          "wrong commit, so the range is not used")
    out = [_item(c) for c in listed]
    for item in out[-with_files:] if with_files else []:
        if _SHA.fullmatch(item["sha"]):
            item["files"] = commit_files(calls, repo, item["sha"])
    base_sha = str((data.get("base_commit") or {}).get("sha") or "")
    return str(data.get("status") or ""), base_sha, out


def commit_files(calls: Calls, repo: str, sha: str) -> list[str]:
    """The paths a commit changed, from every page of its file list; empty where the
    commit is unknown."""
    if not _SHA.fullmatch(sha):
        raise ValueError(f"{sha[:50]!r} is not a commit SHA")
    what = f"commit {sha[:10]} in {repo}"
    path = f"/repos/{repo}/commits/{sha}"
    files: list[str] = []
    for page in range(1, MAX_COMMIT_FILES // PAGE + 1):
        one = calls.get_json(what, path, {"per_page": PAGE, "page": page})
        batch = (one or {}).get("files") or []
        files += [str(f.get("filename", "")) for f in batch]
        if len(batch) < PAGE:
            break
    return files


def _item(c: dict[str, Any]) -> dict[str, Any]:
    message = str(c.get("commit", {}).get("message", ""))
    committer = c.get("commit", {}).get("committer") or {}
    return {"sha": str(c.get("sha", "")), "title": message.split("\n")[0][:200],
            "url": str(c.get("html_url", "")), "files": [],
            "date": str(committer.get("date") or ""),
            "parents": [str(p.get("sha", "")) for p in c.get("parents") or []]}
