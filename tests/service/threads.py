"""A thread on the fake GitHub and the events and queue contents the triage tests read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import redis

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from triagebot.github.events import ThreadEvent, normalise
from triagebot.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "webhooks"
ISSUE_BODY = (
    "vLLM 0.17.1 on one H100: MTP k=1 is slower than no speculation under CUDA graphs.\n\n"
    "```bash\nvllm serve zai-org/GLM-4.5-Air --speculative-config "
    "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n```\n\n"
    "| config | tok/s |\n|---|---|\n| no spec, graph | 2410 |\n| MTP k=1, graph | 1352 |\n")


def comment_event(fake: FakeGitHub, body: str, *, author: str = "maint",
                  author_type: str = "User", action: str = "created",
                  previous: str | None = None, comment_id: int | None = None,
                  delivery: str = "d-1") -> ThreadEvent:
    """The event GitHub sends for a comment, which exists on the fake (as on GitHub)."""
    if comment_id is None:
        comment_id = fake.add_comment(REPO, 42, body, author, author_type)
    payload = json.loads((FIXTURES / f"issue_comment.{action}.json").read_text())
    payload["comment"]["body"] = body
    payload["comment"]["id"] = comment_id
    payload["comment"]["user"]["login"] = author
    payload["comment"]["user"]["type"] = author_type
    payload["sender"]["login"] = author
    payload["sender"]["type"] = author_type
    payload["issue"]["number"] = 42
    payload["repository"]["full_name"] = REPO
    payload["installation"] = {"id": INSTALLATION_ID}
    if action == "edited":
        payload["changes"] = {"body": {"from": previous or ""}}
    event = normalise("issue_comment", payload, delivery)
    assert event is not None
    return event


def queued(settings: Settings, queue: str) -> list[dict[str, Any]]:
    client = redis.Redis.from_url(settings.redis_url)
    raw = client.lrange(settings.celery_key_prefix + queue, 0, -1)
    return [json.loads(m) for m in raw]


def bot_comments(fake: FakeGitHub) -> list[Any]:
    return [c for c in fake.comments(REPO, 42) if c.author == "triagebot[bot]"]
