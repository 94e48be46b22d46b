"""Webhook payloads → ThreadEvent, and the cheap filters applied at the edge."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from triagebot.github.events import (
    MAX_BODY,
    MAX_TITLE,
    RELEVANT,
    Actor,
    CommentInfo,
    EventError,
    ThreadEvent,
    normalise,
    worth_queueing,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "webhooks"
BOT = "triagebot[bot]"


def load(name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))


def event_of(name: str, payload: dict[str, Any] | None = None) -> ThreadEvent:
    ev = normalise(name.split(".")[0], payload if payload is not None else load(name), "d-1")
    assert ev is not None
    return ev


def test_every_fixture_is_named_after_its_event_and_action() -> None:
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert len(names) >= 12
    for name in names:
        payload = load(name)
        if name != "ping":
            assert name.split(".", 1)[1] == payload["action"], name
    assert {f"{e}.{a}" for e, a in RELEVANT} <= set(names)


def test_issue_comment_created() -> None:
    ev = event_of("issue_comment.created")
    assert ev.model_dump(exclude={"body", "comment", "title"}) == {
        "delivery": "d-1", "event": "issue_comment", "action": "created",
        "installation_id": 1, "repo": "acme/engine", "repo_id": 700000001, "private": False,
        "number": 42, "is_pr": False,
        "author": {"login": "reporter", "type": "User", "id": 9100003},
        "sender": {"login": "maint", "type": "User", "id": 9100002},
        "labels": ("bug", "performance"), "label": None, "previous_body": None,
        "head_sha": None, "head_ref": None, "base_ref": None,
    }
    assert ev.title.startswith("[Bug]: MTP is 0.56x slower")
    assert "CUDA graphs" in ev.body
    assert ev.comment == CommentInfo(
        id=2800000001, body="Thanks for the numbers. @triagebot repro runs=7 gpu=h100",
        author=Actor(login="maint", type="User", id=9100002),
        created_at=datetime(2026, 5, 3, 9, 12, 44, tzinfo=UTC), previous_body=None)


def test_comment_on_a_pull_request_is_marked() -> None:
    payload = load("issue_comment.created")
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/acme/engine/pulls/42"}
    assert event_of("issue_comment.created", payload).is_pr


def test_edits_carry_the_previous_body() -> None:
    comment = event_of("issue_comment.edited")
    assert comment.comment is not None
    assert comment.comment.previous_body == "Thanks for the numbers, I will look."
    assert comment.previous_body is None
    issue = event_of("issues.edited")
    assert issue.previous_body is not None and issue.previous_body.endswith("MTP is slow.\n")
    assert issue.comment is None


def test_issue_labeled_names_the_new_label() -> None:
    ev = event_of("issues.labeled")
    assert ev.label == "perf-repro"
    assert "perf-repro" in ev.labels


@pytest.mark.parametrize("name", ["pull_request.opened", "pull_request.edited"])
def test_pull_requests(name: str) -> None:
    ev = event_of(name)
    assert ev.is_pr
    assert ev.number == 43
    assert ev.author.login == "contrib"
    assert ev.head_sha == "5f2c1e0d9b8a7c6e5d4f3a2b1c0d9e8f7a6b5c4d"
    assert (ev.head_ref, ev.base_ref) == ("mtp-graph", "main")
    assert ev.labels == ("performance",)
    assert ev.repo == "acme/engine"  # the base repository, not the fork


@pytest.mark.parametrize(("event", "name"), [
    ("issue_comment", "issue_comment.pinned"),
    ("star", "star.created"),
    ("installation", "installation.created"),
    ("ping", "ping"),
    ("issues", "issues.opened"),
])
def test_events_that_are_not_ours(event: str, name: str) -> None:
    payload = load(name)
    if name == "issues.opened":
        payload["action"] = "transferred"
    assert normalise(event, payload, "d-1") is None


def test_null_title_and_bodies_become_empty() -> None:
    payload = load("issue_comment.created")
    payload["issue"]["title"] = None
    payload["issue"]["body"] = None
    payload["comment"]["body"] = None
    ev = event_of("issue_comment.created", payload)
    assert (ev.title, ev.body) == ("", "")
    assert ev.comment is not None and ev.comment.body == ""
    del payload["issue"]["body"]
    assert event_of("issue_comment.created", payload).body == ""


def test_long_text_is_cut_at_githubs_limits() -> None:
    payload = load("issue_comment.edited")
    payload["issue"]["title"] = "t" * (MAX_TITLE + 10)
    payload["issue"]["body"] = "b" * (MAX_BODY + 10)
    payload["comment"]["body"] = "@triagebot " + "c" * MAX_BODY
    payload["changes"]["body"]["from"] = "p" * (MAX_BODY * 2)
    ev = event_of("issue_comment.edited", payload)
    assert len(ev.title) == MAX_TITLE
    assert len(ev.body) == MAX_BODY
    assert ev.comment is not None
    assert len(ev.comment.body) == MAX_BODY
    assert ev.comment.previous_body == "p" * MAX_BODY


def _without(payload: dict[str, Any], *path: str) -> dict[str, Any]:
    node = payload
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return payload


@pytest.mark.parametrize(("name", "path", "message"), [
    ("issue_comment.created", ("issue", "number"), "issue.number: field required"),
    ("issue_comment.created", ("comment", "user"), "comment.user: field required"),
    ("issue_comment.created", ("repository",), "repository: field required"),
    ("issues.opened", ("sender", "login"), "sender.login: field required"),
    ("pull_request.opened", ("pull_request", "head"), "pull_request.head: field required"),
])
def test_missing_fields_are_named_by_path(name: str, path: tuple[str, ...],
                                          message: str) -> None:
    payload = _without(load(name), *path)
    with pytest.raises(EventError) as caught:
        normalise(name.split(".")[0], payload, "d-1")
    assert str(caught.value).startswith(message)


def test_wrong_types_and_shapes_are_errors() -> None:
    payload = load("issue_comment.created")
    payload["issue"]["number"] = "forty-two"
    with pytest.raises(EventError, match=r"^issue\.number: "):
        normalise("issue_comment", payload, "d-1")
    payload = load("issue_comment.created")
    payload["repository"]["full_name"] = "no-slash"
    with pytest.raises(EventError, match=r"^repository\.full_name: "):
        normalise("issue_comment", payload, "d-1")
    with pytest.raises(EventError, match=r"^action: "):
        normalise("issues", {"issue": {}}, "d-1")
    with pytest.raises(EventError):
        normalise("issues", ["not", "a", "mapping"], "d-1")  # type: ignore[arg-type]


def test_an_event_survives_the_queue() -> None:
    for name in ("issue_comment.edited", "pull_request.opened", "issues.labeled"):
        ev = event_of(name)
        assert ThreadEvent.model_validate(json.loads(json.dumps(ev.model_dump(mode="json")))) \
            == ev


# --- worth_queueing --------------------------------------------------------------------------


def _comment_event(*, login: str = "maint", type_: str = "User",
                   body: str = "@triagebot repro", action: str = "created",
                   previous: str | None = None, sender: str = "maint") -> ThreadEvent:
    payload = load("issue_comment.created")
    payload["action"] = action
    payload["comment"]["user"].update(login=login, type=type_)
    payload["comment"]["body"] = body
    payload["sender"]["login"] = sender
    if previous is not None:
        payload["changes"] = {"body": {"from": previous}}
    return event_of("issue_comment.created", payload)


@pytest.mark.parametrize(("ev", "reason"), [
    (_comment_event(), None),
    (_comment_event(body="Could you check? @TriageBot Repro runs=3"), None),
    (_comment_event(login="triagebot[bot]", type_="Bot", sender="triagebot[bot]"),
     "sent by the bot itself"),
    (_comment_event(login="TriageBot[bot]", type_="Bot"), "comment by the bot itself"),
    (_comment_event(login="renovate[bot]", type_="Bot"), "comment by a bot"),
    (_comment_event(login="renovate[bot]"), "comment by a bot"),
    (_comment_event(login="ci-runner", type_="Bot"), "comment by a bot"),
    (_comment_event(body="This is a duplicate of #41."), "no @triagebot mention"),
    (_comment_event(body="triagebot repro"), "no @triagebot mention"),
    (_comment_event(action="edited"), "edit without a body change"),
    (_comment_event(action="edited", previous="@triagebot repro"),
     "edit without a body change"),
    (_comment_event(action="edited", previous="@triagebot help"), None),
    (_comment_event(action="edited", previous="@triagebot repro", body="thanks"),
     "no @triagebot mention"),
])
def test_worth_queueing_comments(ev: ThreadEvent, reason: str | None) -> None:
    assert worth_queueing(ev, BOT, "triagebot") == reason


def test_worth_queueing_threads() -> None:
    for name in ("issues.opened", "issues.labeled", "issues.edited", "pull_request.opened",
                 "pull_request.edited"):
        assert worth_queueing(event_of(name), BOT, "triagebot") is None, name
    unchanged = load("pull_request.edited")
    unchanged["changes"] = {"title": {"from": "old title"}}
    assert worth_queueing(event_of("pull_request.edited", unchanged), BOT, "triagebot") \
        == "edit without a body change"
    same = load("issues.edited")
    same["changes"]["body"]["from"] = same["issue"]["body"]
    assert worth_queueing(event_of("issues.edited", same), BOT, "triagebot") \
        == "edit without a body change"
    ours = load("issues.labeled")
    ours["sender"].update(login="triagebot[bot]", type="Bot")
    assert worth_queueing(event_of("issues.labeled", ours), BOT, "triagebot") \
        == "sent by the bot itself"


def test_a_different_command_name() -> None:
    ev = _comment_event(body="@reprobot repro")
    assert worth_queueing(ev, "reprobot[bot]", "reprobot") is None
    assert worth_queueing(ev, BOT, "triagebot") == "no @triagebot mention"


def test_actor_is_bot() -> None:
    assert Actor(login="x", type="Bot").is_bot
    assert Actor(login="github-actions[bot]").is_bot
    assert not Actor(login="maint").is_bot
    assert not Actor(login="bot-fan", type="User").is_bot


def test_a_deleted_comment_is_ours() -> None:
    # Issue 41, item 4: deleting a command's comment withdraws it.
    ev = normalise("issue_comment", load("issue_comment.deleted"), "d-1")
    assert ev is not None and ev.action == "deleted" and ev.comment is not None
