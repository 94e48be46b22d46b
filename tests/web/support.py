"""Helpers for the ingress tests: a live uvicorn, signed deliveries, and queue inspection."""

from __future__ import annotations

import base64
import copy
import json
import threading
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx
import redis
import uvicorn
from fastapi import FastAPI

from triagebot.settings import Settings
from triagebot.web.signature import sign
from triagebot.workers import task_queues

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "webhooks"
SECRET = "test-secret-It-s-ours"


def fixture(name: str) -> dict[str, Any]:
    """A webhook payload from tests/fixtures/webhooks, as a fresh dict the test may change."""
    return copy.deepcopy(json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))


def new_delivery() -> str:
    return str(uuid.uuid4())


def signed(body: bytes, event: str, *, secret: str = SECRET, delivery: str | None = None,
           **extra: str) -> dict[str, str]:
    """The headers GitHub sends with `body`."""
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or new_delivery(),
        "X-Hub-Signature-256": sign(secret, body),
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/test",
    }
    headers.update(extra)
    return headers


def encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def deliver(client: httpx.Client, url: str, event: str, payload: dict[str, Any] | bytes, *,
            secret: str = SECRET, delivery: str | None = None) -> httpx.Response:
    body = payload if isinstance(payload, bytes) else encode(payload)
    return client.post(f"{url}/webhook", content=body,
                       headers=signed(body, event, secret=secret, delivery=delivery))


class LiveServer:
    """uvicorn serving `app` on 127.0.0.1 with a free port, in a thread."""

    def __init__(self, app: FastAPI) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)
        self.url = ""

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.005)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def namespace_keys(client: redis.Redis, namespace: str) -> list[str]:
    return sorted(k.decode() for k in client.scan_iter(match=f"{namespace}:*", count=1000))


def queued(client: redis.Redis, settings: Settings,
           queue: str = task_queues.TRIAGE_QUEUE) -> list[dict[str, Any]]:
    """The task messages waiting in `queue`: {"task", "id", "args", "kwargs"} each."""
    out = []
    for raw in client.lrange(settings.celery_key_prefix + queue, 0, -1):
        message = json.loads(raw)
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args, kwargs, _embed = json.loads(body)
        out.append({"task": message["headers"]["task"], "id": message["headers"]["id"],
                    "args": args, "kwargs": kwargs})
    return out
