"""POST /webhook against a live uvicorn and a real Redis (reliability.md §7 A)."""

from __future__ import annotations

import base64
import json
import logging
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import redis

from tests.web.support import (
    SECRET,
    deliver,
    encode,
    fixture,
    namespace_keys,
    new_delivery,
    queued,
    signed,
)
from triagebot.github.events import normalise
from triagebot.settings import Settings, SettingsError
from triagebot.web.app import create_app
from triagebot.web.signature import sign
from triagebot.web.task_message import task_message
from triagebot.web.webhook import INLINE_SCREEN_BYTES
from triagebot.workers import task_queues
from triagebot.workers.app import create_celery


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- start-up -----------------------------------------------------------------------------


def test_create_app_refuses_to_start_without_a_secret(
        make_settings: Callable[..., Settings]) -> None:
    with pytest.raises(SettingsError, match="WEBHOOK_SECRETS"):
        create_app(make_settings(webhook_secrets=[]))


def test_create_app_connects_to_nothing(make_settings: Callable[..., Settings]) -> None:
    # Redis on a closed port: building the app must not notice.
    assert create_app(make_settings(redis_url=f"redis://127.0.0.1:{_closed_port()}/0")).routes


# --- signatures ----------------------------------------------------------------------------


def test_bad_signatures_get_401_and_write_nothing(url: str, http: httpx.Client,
                                                  redis_client: redis.Redis,
                                                  namespace: str) -> None:
    body = encode(fixture("issue_comment.created"))
    good = sign(SECRET, body)
    digest = good.removeprefix("sha256=")
    cases: dict[str, tuple[bytes, str | None]] = {
        "wrong secret": (body, sign("another-secret-xyz", body)),
        "missing header": (body, None),
        "sha1 only": (body, None),
        "wrong prefix": (body, "sha512=" + digest),
        "no prefix": (body, digest),
        "non-hex": (body, "sha256=" + "g" * 64),
        "truncated": (body, good[:-2]),
        "empty body": (b"", good),
    }
    for case, (content, header) in cases.items():
        headers = signed(content, "issue_comment")
        del headers["X-Hub-Signature-256"]
        if header is not None:
            headers["X-Hub-Signature-256"] = header
        if case == "sha1 only":
            headers["X-Hub-Signature"] = "sha1=" + "0" * 40
        response = http.post(f"{url}/webhook", content=content, headers=headers)
        assert response.status_code == 401, case
    assert namespace_keys(redis_client, namespace) == []
    metrics = http.get(f"{url}/metrics").text
    assert ('triagebot_deliveries_total{event="unverified",result="unauthorized"} 8.0'
            in metrics)


def test_signature_covers_the_raw_bytes(url: str, http: httpx.Client,
                                        redis_client: redis.Redis, namespace: str) -> None:
    payload = fixture("issue_comment.created")
    original = json.dumps(payload).encode()
    reserialised = json.dumps(payload, indent=1, sort_keys=True).encode()
    assert json.loads(original) == json.loads(reserialised)
    headers = signed(original, "issue_comment")
    response = http.post(f"{url}/webhook", content=reserialised, headers=headers)
    assert response.status_code == 401
    assert namespace_keys(redis_client, namespace) == []


def test_secret_rotation(make_settings: Callable[..., Settings], serve: Callable[..., str],
                         http: httpx.Client) -> None:
    old, new = "old-secret-aaaa1111", "new-secret-bbbb2222"
    both = serve(make_settings(webhook_secrets=[new, old]))
    for secret in (old, new):
        response = deliver(http, both, "issue_comment", fixture("issue_comment.created"),
                           secret=secret)
        assert response.status_code == 202, response.text
        assert response.json()["queued"] is True
    only_new = serve(make_settings(webhook_secrets=[new]))
    payload = fixture("issue_comment.created")
    assert deliver(http, only_new, "issue_comment", payload, secret=old).status_code == 401
    assert deliver(http, only_new, "issue_comment", payload, secret=new).status_code == 202


# --- size -----------------------------------------------------------------------------------


def test_oversized_declared_body_gets_413(url: str, http: httpx.Client, settings: Settings,
                                          redis_client: redis.Redis, namespace: str) -> None:
    body = b"x" * (26 * 1024 * 1024)
    assert len(body) > settings.max_body_bytes
    response = http.post(f"{url}/webhook", content=body, headers=signed(body, "issue_comment"))
    assert response.status_code == 413
    assert namespace_keys(redis_client, namespace) == []


def test_oversized_chunked_body_gets_413(url: str, http: httpx.Client,
                                         redis_client: redis.Redis, namespace: str) -> None:
    chunk = b"y" * (1024 * 1024)

    def stream() -> Iterator[bytes]:
        for _ in range(26):
            yield chunk

    headers = signed(chunk * 26, "issue_comment")
    response = http.post(f"{url}/webhook", content=stream(), headers=headers)
    assert "content-length" not in response.request.headers
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code == 413
    assert namespace_keys(redis_client, namespace) == []


def test_a_small_cap_applies_to_chunked_bodies_too(make_settings: Callable[..., Settings],
                                                   serve: Callable[..., str],
                                                   http: httpx.Client) -> None:
    url = serve(make_settings(max_body_bytes=4096))
    body = encode(fixture("issue_comment.created"))
    assert len(body) > 4096
    headers = signed(body, "issue_comment")
    assert http.post(f"{url}/webhook", content=body, headers=headers).status_code == 413
    assert http.post(f"{url}/webhook", content=iter([body[:3000], body[3000:]]),
                     headers=headers).status_code == 413


# --- what is not ours ------------------------------------------------------------------------


def test_ping_is_answered(url: str, http: httpx.Client) -> None:
    response = deliver(http, url, "ping", fixture("ping"))
    assert response.status_code == 200
    assert response.json() == {"ok": True, "zen": "Design for failure."}


def test_only_post_is_served_at_the_webhook(url: str, http: httpx.Client) -> None:
    # POST /webhook is answered ahead of FastAPI's routing; other methods still get 405.
    for method in ("GET", "PUT", "DELETE"):
        response = http.request(method, f"{url}/webhook")
        assert response.status_code == 405, method
        assert response.headers["allow"] == "POST"


def test_a_large_delivery_is_screened_off_the_loop_and_queued(
        url: str, http: httpx.Client, settings: Settings, redis_client: redis.Redis) -> None:
    # Bodies over INLINE_SCREEN_BYTES are parsed in a worker thread: same answer, same queue.
    payload = fixture("issue_comment.created")
    payload["padding"] = "x" * (INLINE_SCREEN_BYTES + 1024)
    response = deliver(http, url, "issue_comment", payload)
    assert response.status_code == 202 and response.json().get("queued"), response.text
    [message] = queued(redis_client, settings)
    assert message["task"] == task_queues.HANDLE_EVENT
    assert message["args"][0]["comment"]["body"] == payload["comment"]["body"]


@pytest.mark.parametrize(("event", "name"), [
    ("star", "star.created"),
    ("issue_comment", "issue_comment.pinned"),
    ("installation", "installation.created"),
])
def test_other_events_are_acknowledged_and_dropped(event: str, name: str, url: str,
                                                   http: httpx.Client, settings: Settings,
                                                   redis_client: redis.Redis,
                                                   namespace: str) -> None:
    response = deliver(http, url, event, fixture(name))
    assert response.status_code == 202
    assert response.json() == {"ignored": f"{name} is not handled"}
    assert queued(redis_client, settings) == []
    assert namespace_keys(redis_client, namespace) == []


def test_malformed_requests_get_400(url: str, http: httpx.Client, redis_client: redis.Redis,
                                    namespace: str) -> None:
    def post(body: bytes, **drop_or_set: str | None) -> httpx.Response:
        headers = signed(body, "issue_comment")
        for name, value in drop_or_set.items():
            header = name.replace("_", "-")
            if value is None:
                del headers[header]
            else:
                headers[header] = value
        return http.post(f"{url}/webhook", content=body, headers=headers)

    good = encode(fixture("issue_comment.created"))
    assert post(b'{"action": "created", ').status_code == 400
    assert post(b"\xff\xfe not json").status_code == 400
    assert post(b"[1, 2, 3]").status_code == 400
    assert post(b"[" * 100_000 + b"]" * 100_000).status_code == 400
    assert post(good, X_GitHub_Event=None).status_code == 400
    assert post(good, X_GitHub_Delivery=None).status_code == 400
    assert post(good, X_GitHub_Delivery="../../etc").status_code == 400
    payload = fixture("issue_comment.created")
    del payload["issue"]["number"]
    response = post(encode(payload))
    assert response.status_code == 400
    assert "issue.number" in response.json()["error"]
    assert namespace_keys(redis_client, namespace) == []


# --- the fast path -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "issue_comment.created", "issue_comment.edited", "issues.opened", "issues.labeled",
    "issues.edited", "pull_request.opened", "pull_request.edited",
])
def test_relevant_events_are_queued_once(name: str, url: str, http: httpx.Client,
                                         settings: Settings,
                                         redis_client: redis.Redis) -> None:
    event = name.split(".")[0]
    payload = fixture(name)
    delivery = new_delivery()
    response = deliver(http, url, event, payload, delivery=delivery)
    assert response.status_code == 202, response.text
    assert response.json() == {"queued": True, "delivery": delivery}

    [message] = queued(redis_client, settings)
    assert message["task"] == task_queues.HANDLE_EVENT
    assert message["id"] == f"event-{delivery}"
    expected = normalise(event, payload, delivery)
    assert expected is not None
    assert message["args"] == [expected.model_dump(mode="json")]

    key = settings.key("delivery", delivery)
    # Queued, not yet handled: the worker marks it done or failed (issue 27, item 3).
    assert redis_client.get(key) == b"queued"
    assert settings.delivery_ttl_s - 60 < redis_client.ttl(key) <= settings.delivery_ttl_s

    again = deliver(http, url, event, payload, delivery=delivery)
    assert again.status_code == 202
    assert again.json() == {"duplicate": True, "delivery": delivery}
    # A delivery the worker gave up on is taken again when GitHub redelivers it; one it
    # handled stays a duplicate.
    redis_client.set(key, "failed")
    assert deliver(http, url, event, payload, delivery=delivery).json() == {
        "queued": True, "delivery": delivery}
    assert len(queued(redis_client, settings)) == 2
    redis_client.set(key, "done")
    assert deliver(http, url, event, payload, delivery=delivery).json()["duplicate"]
    assert len(queued(redis_client, settings)) == 2


def test_a_storm_of_one_delivery_queues_it_once(url: str, settings: Settings,
                                                redis_client: redis.Redis) -> None:
    body = encode(fixture("issue_comment.created"))
    headers = signed(body, "issue_comment")
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=50)

    def send(client: httpx.Client) -> int:
        # A pooled connection the server closes while idle resets a POST sent on it; a sender
        # resends it, and the delivery id makes the resend harmless, which is what is tested.
        for _ in range(3):
            try:
                return client.post(f"{url}/webhook", content=body, headers=headers).status_code
            except httpx.TransportError:
                continue
        raise AssertionError("three sends of one delivery all failed at the connection")

    with httpx.Client(timeout=60, limits=limits) as client, \
            ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(lambda _: send(client), range(1000)))
    assert len(statuses) == 1000
    assert all(200 <= s < 300 for s in statuses), sorted(set(statuses))
    assert len(queued(redis_client, settings)) == 1


# --- failures at the edge ----------------------------------------------------------------------


def test_redis_down_gives_503_and_records_nothing(make_settings: Callable[..., Settings],
                                                  serve: Callable[..., str],
                                                  http: httpx.Client,
                                                  redis_client: redis.Redis,
                                                  namespace: str) -> None:
    down = make_settings(redis_url=f"redis://127.0.0.1:{_closed_port()}/0")
    url = serve(down)
    response = deliver(http, url, "issue_comment", fixture("issue_comment.created"))
    assert response.status_code == 503
    assert namespace_keys(redis_client, namespace) == []
    # Ignored events never touch Redis, so they are still acknowledged.
    assert deliver(http, url, "star", fixture("star.created")).status_code == 202
    metrics = http.get(f"{url}/metrics")
    assert metrics.status_code == 200
    assert 'triagebot_deliveries_total{event="issue_comment",result="unavailable"} 1.0' \
        in metrics.text
    assert "triagebot_redis_up 0.0" in metrics.text


def test_task_message_is_what_celery_itself_writes(settings: Settings,
                                                   redis_client: redis.Redis) -> None:
    # The ingress writes task messages without Celery (one Lua script dedupes and queues);
    # they must have the shape Celery's own send_task writes, field for field.
    celery = create_celery(settings, register_tasks=False)
    args = [{"delivery": "d-1", "repo": "acme/engine"}]
    celery.send_task(task_queues.HANDLE_EVENT, args=args, queue=task_queues.TRIAGE_QUEUE,
                     task_id="event-celery", ignore_result=True, argsrepr="(x)",
                     kwargsrepr="{}")
    raw = redis_client.lrange(settings.celery_key_prefix + task_queues.TRIAGE_QUEUE, 0, -1)
    theirs = json.loads(raw[0])
    ours = json.loads(task_message(task_queues.HANDLE_EVENT, "event-celery", args,
                                   task_queues.TRIAGE_QUEUE, "(x)"))

    def shape(value: object) -> object:
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items()}
        return type(value).__name__

    assert shape(ours) == shape(theirs)
    for volatile in ("reply_to", "delivery_tag"):
        del ours["properties"][volatile], theirs["properties"][volatile]
    del ours["headers"]["origin"], theirs["headers"]["origin"]
    assert ours["headers"] == theirs["headers"]
    assert ours["properties"] == theirs["properties"]
    assert json.loads(base64.b64decode(ours["body"])) == \
        json.loads(base64.b64decode(theirs["body"]))


# --- filters --------------------------------------------------------------------------------


def _comment(**changes: Any) -> dict[str, Any]:
    payload = fixture("issue_comment.created")
    payload["comment"].update(changes)
    return payload


@pytest.mark.parametrize(("payload", "reason"), [
    (_comment(user={"login": "triagebot[bot]", "id": 7, "type": "Bot"}),
     "comment by the bot itself"),
    (_comment(user={"login": "dependabot[bot]", "id": 8, "type": "Bot"}), "comment by a bot"),
    (_comment(user={"login": "ci-helper", "id": 9, "type": "Bot"}), "comment by a bot"),
    (_comment(body="Looks like a graph capture problem, not MTP."), "no @triagebot mention"),
])
def test_comments_dropped_at_the_edge(payload: dict[str, Any], reason: str, url: str,
                                      http: httpx.Client, settings: Settings,
                                      redis_client: redis.Redis, namespace: str) -> None:
    response = deliver(http, url, "issue_comment", payload)
    assert response.status_code == 202
    assert response.json() == {"ignored": reason}
    assert namespace_keys(redis_client, namespace) == []


def test_edits_without_a_body_change_are_dropped(url: str, http: httpx.Client,
                                                 redis_client: redis.Redis,
                                                 namespace: str) -> None:
    same = fixture("issue_comment.edited")
    same["changes"]["body"]["from"] = same["comment"]["body"]
    title_only = fixture("issue_comment.edited")
    title_only["changes"] = {}
    issue_title = fixture("issues.edited")
    issue_title["changes"] = {"title": {"from": "MTP slow"}}
    for event, payload in (("issue_comment", same), ("issue_comment", title_only),
                           ("issues", issue_title)):
        response = deliver(http, url, event, payload)
        assert response.status_code == 202
        assert response.json() == {"ignored": "edit without a body change"}
    assert namespace_keys(redis_client, namespace) == []


def test_only_allowed_repositories_are_served(make_settings: Callable[..., Settings],
                                              serve: Callable[..., str], http: httpx.Client,
                                              redis_client: redis.Redis) -> None:
    settings = make_settings(allowed_repos="acme/other, ACME/Engine")
    url = serve(settings)
    payload = fixture("issue_comment.created")
    assert deliver(http, url, "issue_comment", payload).json()["queued"] is True
    payload["repository"]["full_name"] = "mallory/engine"
    response = deliver(http, url, "issue_comment", payload)
    assert response.status_code == 202
    assert response.json() == {"ignored": "repository is not served here"}
    assert len(queued(redis_client, settings)) == 1


# --- logging --------------------------------------------------------------------------------


def test_one_log_line_per_delivery_without_bodies_or_signatures(
        url: str, http: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    payload = fixture("issue_comment.created")
    body = encode(payload)
    delivery = new_delivery()
    headers = signed(body, "issue_comment", delivery=delivery)
    with caplog.at_level(logging.INFO, logger="triagebot.web.webhook"):
        assert http.post(f"{url}/webhook", content=body, headers=headers).status_code == 202
        forged = dict(headers, **{"X-Hub-Signature-256": "sha256=" + "0" * 64,
                                  "X-GitHub-Delivery": "bad id=<x>"})
        assert http.post(f"{url}/webhook", content=body, headers=forged).status_code == 401
    records = [r for r in caplog.records if r.name == "triagebot.web.webhook"]
    assert [(r.delivery, r.result, r.status) for r in records] == [  # type: ignore[attr-defined]
        (delivery, "queued", 202), ("?", "unauthorized", 401)]
    assert records[0].repo == "acme/engine"  # type: ignore[attr-defined]
    assert records[0].action == "created"  # type: ignore[attr-defined]
    text = "\n".join(r.getMessage() for r in records)
    assert "bad id" not in text
    assert headers["X-Hub-Signature-256"].removeprefix("sha256=") not in text
    assert payload["comment"]["body"] not in text
    assert "MTP" not in text
