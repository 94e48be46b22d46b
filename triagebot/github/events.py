"""GitHub webhook payloads, normalised into one small event the rest of the service reads.

The payload models mirror only the fields we use and ignore the rest, so GitHub adding
fields never breaks us, and a payload missing one we need fails with the JSON path of
the gap. Everything here is pure: no I/O, no settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from triagebot.frozen import Frozen

# GitHub's own limits on what a person can type; longer text is cut, not refused.
MAX_BODY = 65_536
MAX_TITLE = 1_024

EventName = Literal["issue_comment", "issues", "pull_request"]

RELEVANT: frozenset[tuple[str, str]] = frozenset({
    ("issue_comment", "created"),
    ("issue_comment", "edited"),
    ("issue_comment", "deleted"),
    ("issues", "opened"),
    ("issues", "labeled"),
    ("issues", "edited"),
    ("issues", "closed"),  # a watch pauses
    ("issues", "reopened"),  # ...and resumes
    ("pull_request", "opened"),
    ("pull_request", "edited"),
})
_EVENTS = frozenset(event for event, _ in RELEVANT)


class EventError(ValueError):
    """A relevant payload lacks something we need; the message starts with its JSON path."""


# --- what we keep -----------------------------------------------------------------------------


class Actor(Frozen):
    login: str
    type: str = "User"
    id: int | None = None

    @property
    def is_bot(self) -> bool:
        return self.type == "Bot" or self.login.endswith("[bot]")


class CommentInfo(Frozen):
    id: int
    body: str
    author: Actor
    created_at: datetime | None = None
    previous_body: str | None = Field(
        default=None,
        description="the body before an edit (`changes.body.from`); None when it did not change",
    )


class ThreadEvent(Frozen):
    """One delivery that may concern an issue or PR thread, in the shape handlers read."""

    delivery: str
    event: EventName
    action: str
    installation_id: int | None = None
    repo: str
    repo_id: int | None = None
    private: bool = False
    number: int
    is_pr: bool
    title: str
    body: str
    author: Actor
    sender: Actor
    labels: tuple[str, ...] = ()
    label: str | None = Field(default=None, description="the label just added, on `issues.labeled`")
    comment: CommentInfo | None = None
    previous_body: str | None = Field(
        default=None,
        description="the issue or PR description before an `edited`; None when it did not change",
    )
    head_sha: str | None = None
    head_ref: str | None = None
    base_ref: str | None = None


# --- GitHub's shapes, as far as we read them ---------------------------------------------------


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


def _text(value: Any, limit: int) -> Any:
    # GitHub sends null for an empty body or title.
    if value is None:
        return ""
    return value[:limit] if isinstance(value, str) else value


class _User(_In):
    login: str
    type: str = "User"
    id: int | None = None

    def actor(self) -> Actor:
        return Actor(login=self.login, type=self.type, id=self.id)


class _Label(_In):
    name: str


class _Repository(_In):
    full_name: str = Field(pattern=r"^[^/\s]+/[^/\s]+$")
    id: int | None = None
    private: bool = False


class _Installation(_In):
    id: int


class _From(_In):
    from_: str | None = Field(default=None, alias="from")

    @field_validator("from_", mode="before")
    @classmethod
    def _cap(cls, value: Any) -> Any:
        return value[:MAX_BODY] if isinstance(value, str) else value


class _Changes(_In):
    body: _From | None = None


class _Thread(_In):
    number: int
    title: str = ""
    body: str = ""
    user: _User
    labels: list[_Label] = Field(default_factory=list)

    @field_validator("title", mode="before")
    @classmethod
    def _title(cls, value: Any) -> Any:
        return _text(value, MAX_TITLE)

    @field_validator("body", mode="before")
    @classmethod
    def _body(cls, value: Any) -> Any:
        return _text(value, MAX_BODY)


class _Issue(_Thread):
    # Present (an object of URLs) when the "issue" is a pull request.
    pull_request: dict[str, Any] | None = None


class _Ref(_In):
    sha: str
    ref: str


class _PullRequest(_Thread):
    head: _Ref
    base: _Ref


class _Comment(_In):
    id: int
    body: str = ""
    user: _User
    created_at: datetime | None = None

    @field_validator("body", mode="before")
    @classmethod
    def _body(cls, value: Any) -> Any:
        return _text(value, MAX_BODY)


class _Envelope(_In):
    action: str
    repository: _Repository
    sender: _User
    installation: _Installation | None = None
    changes: _Changes | None = None

    def common(self, delivery: str, event: EventName) -> dict[str, Any]:
        return {
            "delivery": delivery, "event": event, "action": self.action,
            "installation_id": self.installation.id if self.installation else None,
            "repo": self.repository.full_name, "repo_id": self.repository.id,
            "private": self.repository.private, "sender": self.sender.actor(),
        }

    def previous_body(self) -> str | None:
        return self.changes.body.from_ if self.changes and self.changes.body else None


class _IssueCommentPayload(_Envelope):
    issue: _Issue
    comment: _Comment


class _IssuesPayload(_Envelope):
    issue: _Issue
    label: _Label | None = None


class _PullRequestPayload(_Envelope):
    pull_request: _PullRequest


def _thread_fields(thread: _Thread) -> dict[str, Any]:
    return {"number": thread.number, "title": thread.title, "body": thread.body,
            "author": thread.user.actor(),
            "labels": tuple(label.name for label in thread.labels)}


def _from_issue_comment(p: _IssueCommentPayload, delivery: str) -> ThreadEvent:
    comment = CommentInfo(id=p.comment.id, body=p.comment.body, author=p.comment.user.actor(),
                          created_at=p.comment.created_at, previous_body=p.previous_body())
    return ThreadEvent(**p.common(delivery, "issue_comment"), **_thread_fields(p.issue),
                       is_pr=p.issue.pull_request is not None, comment=comment)


def _from_issues(p: _IssuesPayload, delivery: str) -> ThreadEvent:
    return ThreadEvent(**p.common(delivery, "issues"), **_thread_fields(p.issue),
                       is_pr=p.issue.pull_request is not None,
                       label=p.label.name if p.label else None,
                       previous_body=p.previous_body())


def _from_pull_request(p: _PullRequestPayload, delivery: str) -> ThreadEvent:
    pr = p.pull_request
    return ThreadEvent(**p.common(delivery, "pull_request"), **_thread_fields(pr), is_pr=True,
                       previous_body=p.previous_body(), head_sha=pr.head.sha,
                       head_ref=pr.head.ref, base_ref=pr.base.ref)


def _path_error(exc: ValidationError) -> EventError:
    parts = []
    for error in exc.errors()[:3]:
        path = ".".join(str(part) for part in error["loc"]) or "(payload)"
        message = error["msg"]
        parts.append(f"{path}: {message[:1].lower()}{message[1:]}")
    more = exc.error_count() - len(parts)
    return EventError("; ".join(parts) + (f" (and {more} more)" if more > 0 else ""))


def normalise(event: str, payload: Mapping[str, Any], delivery: str) -> ThreadEvent | None:
    """The event we act on, or None when this event/action is not ours.

    Raises EventError when a relevant payload lacks a field we need.
    """
    if event not in _EVENTS:
        return None
    if not isinstance(payload, Mapping):
        raise EventError("(payload): must be a JSON object")
    action = payload.get("action")
    if not isinstance(action, str):
        raise EventError("action: field required (a string)")
    if (event, action) not in RELEVANT:
        return None
    data = dict(payload)
    try:
        if event == "issue_comment":
            return _from_issue_comment(_IssueCommentPayload.model_validate(data), delivery)
        if event == "issues":
            return _from_issues(_IssuesPayload.model_validate(data), delivery)
        return _from_pull_request(_PullRequestPayload.model_validate(data), delivery)
    except ValidationError as exc:
        raise _path_error(exc) from None


def worth_queueing(ev: ThreadEvent, bot_login: str, command_name: str) -> str | None:
    """None when the event should reach a worker, else why it is dropped at the edge.

    Only cheap, certain filters live here; the command grammar runs on the worker.
    """
    own = bot_login.lower()
    if ev.sender.login.lower() == own:
        # Our own labels and edits must never start work, or the bot talks to itself.
        return "sent by the bot itself"
    if ev.comment is not None:
        author = ev.comment.author
        if author.login.lower() == own:
            return "comment by the bot itself"
        if author.is_bot:
            return "comment by a bot"
        if ev.action == "edited" and (ev.comment.previous_body is None
                                      or ev.comment.previous_body == ev.comment.body):
            return "edit without a body change"
        if f"@{command_name}".lower() not in ev.comment.body.lower():
            return f"no @{command_name} mention"
        return None
    if ev.action == "edited" and (ev.previous_body is None or ev.previous_body == ev.body):
        return "edit without a body change"
    return None
