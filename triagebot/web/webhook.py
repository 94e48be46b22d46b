"""`POST /webhook`: verify, filter, dedupe, enqueue, acknowledge. Never calls GitHub.

The order is the contract: the body is read with a cap, the signature is checked over
those exact bytes (as they stream in) before anything parses them (a form-encoded body's
`payload` field only then), and the delivery is recorded as queued in the same atomic
step that puts its event on the queue; the worker records it as handled or failed, and a
failed one is taken again when GitHub redelivers it. When Redis fails or hangs the answer
is 503 within `ingress_redis_timeout_s`, so GitHub lists the delivery as failed and it
can be redelivered.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import redis
from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from triagebot.github.events import EventError, ThreadEvent, normalise, worth_queueing
from triagebot.settings import Settings
from triagebot.web.body import (
    BadContentLength,
    BodyTooLarge,
    NoRoom,
    declared_length,
    read_capped,
)
from triagebot.web.deliveries import DELIVERY_ID
from triagebot.web.deps import service_of
from triagebot.web.service import Service
from triagebot.web.signature import Verifier, claimed
from triagebot.web.task_message import task_message
from triagebot.workers import task_queues

log = logging.getLogger("triagebot.web.webhook")
PATH = "/webhook"
# Bodies up to this size are parsed and checked on the event loop (well under a
# millisecond); larger ones in a worker thread.
INLINE_SCREEN_BYTES = 256 * 1024


@dataclass
class Outcome:
    status: int
    body: dict[str, Any]
    result: str
    action: str | None = None
    repo: str | None = None
    verified: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def _refuse(status: int, result: str, error: str, *, verified: bool = True) -> Outcome:
    return Outcome(status, {"error": error}, result, verified=verified)


def _action_of(payload: Mapping[str, Any]) -> str | None:
    action = payload.get("action")
    return action[:40] if isinstance(action, str) else None


def screen(settings: Settings, headers: Mapping[str, str], body: bytes) -> Outcome | ThreadEvent:
    """The event to queue for a read and verified body, or the answer that ends it here.

    Pure CPU work, no I/O: `webhook` runs it on the event loop for a body of ordinary size
    and in a thread for a large one.
    """
    event = headers.get("x-github-event")
    delivery = headers.get("x-github-delivery")
    if not event or not delivery:
        return _refuse(400, "bad_request", "X-GitHub-Event and X-GitHub-Delivery are required")
    if not DELIVERY_ID.fullmatch(delivery):
        return _refuse(400, "bad_request", "X-GitHub-Delivery is not a delivery id")
    if _form_encoded(headers.get("content-type")):
        # The hook's other content type: the JSON is the form's `payload` field. The
        # signature was checked over the form bytes, as GitHub signs them.
        try:
            fields = urllib.parse.parse_qs(body.decode("utf-8", "replace"),
                                           max_num_fields=20)
        except ValueError:
            fields = {}
        if len(fields.get("payload", ())) != 1:
            return _refuse(400, "bad_request", "form body needs exactly one payload field")
        body = fields["payload"][0].encode()
    try:
        # pydantic-core's parser: the same values as the standard library's, in half the time.
        payload = from_json(body)
    except (ValueError, RecursionError):
        return _refuse(400, "bad_request", "body is not JSON")
    if not isinstance(payload, dict):
        return _refuse(400, "bad_request", "body is not a JSON object")
    if event == "ping":
        zen = payload.get("zen")
        return Outcome(200, {"ok": True, "zen": zen if isinstance(zen, str) else None}, "ping")
    action = _action_of(payload)
    try:
        ev = normalise(event, payload, delivery)
    except EventError as exc:
        outcome = _refuse(400, "bad_request", f"payload: {exc}")
        outcome.action = action
        return outcome
    if ev is None:
        what = f"{event}.{action}" if action else event
        return Outcome(202, {"ignored": f"{what} is not handled"}, "ignored", action=action)
    allowed = {repo.lower() for repo in settings.allowed_repos}
    if allowed and ev.repo.lower() not in allowed:
        return _ignored(ev, "repository is not served here")
    reason = worth_queueing(ev, settings.bot_login, settings.command_name)
    if reason is not None:
        return _ignored(ev, reason)
    return ev


def _form_encoded(content_type: str | None) -> bool:
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    return kind == "application/x-www-form-urlencoded"


def _ignored(ev: ThreadEvent, reason: str) -> Outcome:
    return Outcome(202, {"ignored": reason}, "ignored", action=ev.action, repo=ev.repo)


async def enqueue(service: Service, ev: ThreadEvent) -> Outcome:
    """Record the delivery and queue its event for triage, atomically, unless seen."""
    guid = ev.delivery
    message = task_message(
        task_queues.HANDLE_EVENT, f"event-{guid}", [ev.model_dump(mode="json")],
        task_queues.TRIAGE_QUEUE,
        # What Celery logs and shows (Flower) instead of a repr of the whole event: issue
        # text stays out of logs.
        argsrepr=f"({ev.event}.{ev.action} {ev.repo}#{ev.number})")
    try:
        fresh = await service.deliveries.enqueue_once(guid, task_queues.TRIAGE_QUEUE, message)
    except (redis.RedisError, TimeoutError) as exc:
        # Nothing was recorded, so GitHub's redelivery of this id will be taken.
        return Outcome(503, {"error": "queue unavailable; redeliver later"}, "unavailable",
                       action=ev.action, repo=ev.repo, extra={"error": type(exc).__name__})
    if not fresh:
        return Outcome(202, {"duplicate": True, "delivery": guid}, "duplicate",
                       action=ev.action, repo=ev.repo)
    return Outcome(202, {"queued": True, "delivery": guid}, "queued",
                   action=ev.action, repo=ev.repo)


def _safe(value: str | None) -> str:
    # Header values are attacker-controlled until verified; keep log lines one line.
    if value is None:
        return "-"
    plain = value.isascii() and value.replace("_", "").replace("-", "").isalnum()
    return value[:64] if plain else "?"


async def _receive(service: Service, request: Request) -> Outcome | bytes:
    """The verified body, or why there is none. Nothing is read for a request that is
    over the cap or carries no well-formed signature, and reading waits for room in the
    unverified-body budget."""
    settings = service.settings
    try:
        size = declared_length(request, settings.max_body_bytes)
    except BodyTooLarge:
        return _refuse(413, "too_large", "body over the size limit", verified=False)
    except BadContentLength:
        return _refuse(400, "bad_request", "Content-Length is not a number", verified=False)
    claim = claimed(request.headers.get("x-hub-signature-256"),
                    request.headers.get("x-hub-signature"))
    if claim is None:
        return _refuse(401, "unauthorized", "signature does not match", verified=False)
    verifier = Verifier(claim, settings.webhook_secrets)
    try:
        async with service.bodies.reserve(settings.max_body_bytes if size is None else size):
            body = await read_capped(request, settings.max_body_bytes, verifier.update)
    except BodyTooLarge:
        return _refuse(413, "too_large", "body over the size limit", verified=False)
    except NoRoom:
        return _refuse(503, "busy", "too many bodies in flight; redeliver later",
                       verified=False)
    except ClientDisconnect:
        return _refuse(400, "disconnected", "the client left before the body ended",
                       verified=False)
    if not verifier.matched():
        return _refuse(401, "unauthorized", "signature does not match", verified=False)
    return body


async def webhook(request: Request) -> JSONResponse:
    started = time.perf_counter()
    service = service_of(request)
    headers = request.headers
    received = await _receive(service, request)
    if isinstance(received, Outcome):
        outcome = received
    else:
        # A thread hop costs more CPU than parsing a typical delivery (about 10 kB), but a
        # body of megabytes would hold every other request on this loop while it parses.
        screened = (screen(service.settings, headers, received)
                    if len(received) <= INLINE_SCREEN_BYTES else
                    await run_in_threadpool(screen, service.settings, headers, received))
        outcome = (screened if isinstance(screened, Outcome)
                   else await enqueue(service, screened))
    event = headers.get("x-github-event")
    # Until the signature matched, the event header is anyone's word.
    service.metrics.delivery(event if outcome.verified else "unverified", outcome.result,
                             time.perf_counter() - started)
    fields = {"delivery": _safe(headers.get("x-github-delivery")),
              "event": _safe(event)[:40], "action": _safe(outcome.action),
              "repo": outcome.repo or "-", "result": outcome.result,
              "status": outcome.status, **outcome.extra}
    level = logging.WARNING if outcome.status >= 500 else logging.INFO
    log.log(level, " ".join(f"{k}={v}" for k, v in fields.items()), extra=fields)
    # After a refusal before reading, the rest of the body is unread: close rather than
    # drain whatever the client still sends.
    close = {"Connection": "close"} if not outcome.verified else None
    return JSONResponse(outcome.body, status_code=outcome.status, headers=close)


class WebhookRoute:
    """`POST /webhook` taken straight from the ASGI server, ahead of FastAPI's routing.

    A delivery used none of what lies between: route matching over every route, the
    exception and exit-stack middleware, and FastAPI's request handling (dependency
    solving, response building), which together cost about a tenth of the ingress's CPU
    per delivery. Added with `add_middleware`, it sits inside Starlette's error
    middleware, so an exception is still a logged 500.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != PATH:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST":
            response = await webhook(Request(scope, receive))
        else:
            response = JSONResponse({"error": "method not allowed"}, status_code=405,
                                    headers={"Allow": "POST"})
        await response(scope, receive, send)
