"""Reading an issue or pull request and its comments into a `Thread`."""

from __future__ import annotations

from collections.abc import Callable

from github import Github
from github.IssueComment import IssueComment
from github.PaginatedList import PaginatedList

from triagebot.github.calls import Calls
from triagebot.github.models import Thread, ThreadComment


def read_thread(calls: Calls, repo: str, number: int, max_comments: int) -> Thread:
    where = f"{repo}#{number}"
    issue = calls.retried(f"read {where}",
                          lambda gh: gh.get_repo(repo).get_issue(number).complete())
    head_sha = head_ref = base_ref = None
    is_pr = issue.pull_request is not None
    if is_pr:
        pull = calls.retried(f"read pull request {where}",
                             lambda gh: gh.get_repo(repo).get_pull(number).complete())
        head_sha, head_ref, base_ref = pull.head.sha, pull.head.ref, pull.base.ref
    comments = scan_comments(calls, repo, number, limit=max_comments)
    author = issue.user.login if issue.user else "ghost"
    return Thread(repo=repo, number=number, title=issue.title, body=issue.body or "",
                  author=author, is_pr=is_pr, state=issue.state, html_url=issue.html_url,
                  labels=[label.name for label in issue.labels],
                  head_sha=head_sha, head_ref=head_ref, base_ref=base_ref, comments=comments)


def scan_comments(calls: Calls, repo: str, number: int, *, limit: int,
                  keep: Callable[[ThreadComment], bool] | None = None,
                  first_only: bool = False) -> list[ThreadComment]:
    """The thread's comments, oldest first: the first `limit` looked at, those `keep` accepts.

    Pages are fetched lazily, so `first_only` stops at the first kept comment. A failed
    page is retried from where it stopped: PyGithub keeps the pages it already has and the
    link to the next one, and a new pass over the list skips what was seen.
    """
    seen = 0
    kept: list[ThreadComment] = []
    pages: PaginatedList[IssueComment] | None = None
    bound: Github | None = None

    def step(gh: Github) -> list[ThreadComment]:
        nonlocal seen, pages, bound
        if pages is None or bound is not gh:
            # First pass, or a new client after a token refresh: start over, skip the seen.
            pages, bound = gh.get_repo(repo).get_issue(number).get_comments(), gh
        for index, item in enumerate(pages):
            if index < seen:
                continue
            seen += 1
            comment = _comment(item)
            if keep is None or keep(comment):
                kept.append(comment)
                if first_only:
                    break
            if seen >= limit:
                break
        return kept

    if limit <= 0:
        return []
    return calls.retried(f"read comments of {repo}#{number}", step)


def _comment(item: IssueComment) -> ThreadComment:
    user = item.user  # None only for some deleted accounts; GitHub shows them as "ghost"
    return ThreadComment(id=item.id, author=user.login if user else "ghost",
                         author_type=user.type if user else "User", body=item.body or "",
                         created_at=item.created_at)
