"""What became of each webhook delivery, and the events that failed.

The ingress records a delivery id as `queued` when it queues the event (in the same
Redis script, see `triagebot.web.deliveries`); the triage worker records it as `done`
once the event was handled, or refused on purpose (no command, a bot, a refusal), and as
`failed` when it gave up. A failed delivery is taken again when GitHub redelivers it
(same `X-GitHub-Delivery`); a queued or done one is a duplicate. Failed events are also
kept in a short list for the failed-deliveries page, and counted for /metrics.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import redis
from pydantic import ValidationError

from triagebot.frozen import Frozen
from triagebot.jobs.store_keys import text_of
from triagebot.settings import Settings

QUEUED, DONE, FAILED = "queued", "done", "failed"
# Failed events kept for the page (newest first); older ones remain counted.
KEEP_FAILED = 200
_REASON_CHARS = 500


def delivery_key(settings: Settings, delivery: str) -> str:
    return settings.key("delivery", delivery)


class FailedEvent(Frozen):
    delivery: str
    event: str
    action: str
    repo: str
    private: bool
    number: int
    reason: str  # the kind of failure only; the detail is in the worker's log
    at: float


class DeliveryLog:
    """The worker's side of the delivery states, and the failed events, in Redis."""

    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        self.settings = settings
        self.redis = client

    def _k(self, *parts: str) -> str:
        return self.settings.key(*parts)

    def done(self, delivery: str) -> None:
        """Handled: and when it had failed before (this was its redelivery), it is no
        longer listed as failed."""
        pipe = self.redis.pipeline()
        pipe.set(delivery_key(self.settings, delivery), DONE, ex=self.settings.delivery_ttl_s)
        pipe.srem(self._k("failed-ids"), delivery)
        _, was_failed = pipe.execute()
        if was_failed:
            for raw in self.redis.lrange(self._k("failed-events"), 0, -1):
                try:
                    listed = FailedEvent.model_validate_json(raw).delivery
                except ValidationError:
                    continue
                if listed == delivery:
                    self.redis.lrem(self._k("failed-events"), 0, text_of(raw))

    def failed(self, failure: FailedEvent) -> None:
        """The event was given up on: its redelivery will be taken, and it is listed."""
        record = failure.model_copy(update={"reason": failure.reason[:_REASON_CHARS]})
        pipe = self.redis.pipeline()
        pipe.set(delivery_key(self.settings, failure.delivery), FAILED,
                 ex=self.settings.delivery_ttl_s)
        pipe.lpush(self._k("failed-events"), record.model_dump_json())
        pipe.sadd(self._k("failed-ids"), failure.delivery)
        pipe.expire(self._k("failed-ids"), self.settings.delivery_ttl_s)
        pipe.ltrim(self._k("failed-events"), 0, KEEP_FAILED - 1)
        pipe.expire(self._k("failed-events"), self.settings.delivery_ttl_s)
        pipe.incr(self._k("metrics", "events-failed"))
        pipe.execute()

    def state(self, delivery: str) -> str | None:
        raw = self.redis.get(delivery_key(self.settings, delivery))
        return raw.decode() if isinstance(raw, bytes) else raw

    def recent_failures(self, limit: int = 50) -> Sequence[FailedEvent]:
        out = []
        for raw in self.redis.lrange(self._k("failed-events"), 0, limit - 1):
            try:
                out.append(FailedEvent.model_validate(json.loads(raw)))
            except (ValueError, ValidationError):
                continue
        return out

    def failed_count(self) -> int:
        return int(self.redis.get(self._k("metrics", "events-failed")) or 0)
