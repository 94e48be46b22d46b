"""What triagebot reads from a thread: plain models, with no PyGithub object inside."""

from __future__ import annotations

from datetime import datetime

from triagebot.frozen import Frozen


class ThreadComment(Frozen):
    id: int
    author: str
    author_type: str
    body: str
    created_at: datetime


class Thread(Frozen):
    """An issue or pull request with its comments (the first `max_comments` of them)."""

    repo: str
    number: int
    title: str
    body: str
    author: str
    is_pr: bool
    state: str
    html_url: str
    labels: list[str]
    head_sha: str | None
    head_ref: str | None
    base_ref: str | None
    comments: list[ThreadComment]
