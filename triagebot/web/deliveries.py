"""Transport-level dedupe of webhook deliveries by their `X-GitHub-Delivery` id.

A delivery is *claimed* (a few seconds) before its work is enqueued and *recorded* (long
TTL) only after, so a crash or a hung Redis in between leaves a claim that soon expires
and a redelivery that works, while concurrent copies of one delivery see the claim and
are dropped. Copies that slip through anyway make no second job: triage dedupes by job.
"""

from __future__ import annotations

import re

import redis

from triagebot.settings import Settings

# GitHub sends a GUID; anything else is refused before it becomes part of a Redis key.
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")
# Claim to record takes well under a second (every Redis call on this path times out at
# `ingress_redis_timeout_s`). A longer claim only matters when a claim was written but its
# answer lost, as when Redis hangs and later runs the queued SET: the event was never
# enqueued, and a redelivery after this many seconds is accepted again.
CLAIM_TTL_S = 5

# Only a claim that is still pending is ours to drop; a recorded delivery stays.
_RELEASE = """
if redis.call('GET', KEYS[1]) == 'pending' then return redis.call('DEL', KEYS[1]) end
return 0
"""


class Deliveries:
    def __init__(self, settings: Settings, client: redis.Redis) -> None:
        self.settings = settings
        self.redis = client
        self._release = client.register_script(_RELEASE)

    def key(self, delivery: str) -> str:
        return self.settings.key("delivery", delivery)

    def claim(self, delivery: str) -> bool:
        """True when this delivery was not seen (nor is in flight) and is now ours."""
        return bool(self.redis.set(self.key(delivery), "pending", nx=True, ex=CLAIM_TTL_S))

    def record(self, delivery: str) -> None:
        """Mark the delivery done once its work is durably enqueued."""
        self.redis.set(self.key(delivery), "done", ex=self.settings.delivery_ttl_s)

    def release(self, delivery: str) -> None:
        """Give up a claim whose enqueue failed, so a redelivery is accepted."""
        self._release(keys=[self.key(delivery)])
