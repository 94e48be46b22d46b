"""Transport-level dedupe of webhook deliveries by their `X-GitHub-Delivery` id.

A delivery is *claimed* (short TTL) before its work is enqueued and *recorded* (long TTL)
only after, so a crash in between leaves a claim that expires and a redelivery that
works, while concurrent copies of one delivery see the claim and are dropped.
"""

from __future__ import annotations

import re

import redis

from triagebot.settings import Settings

# GitHub sends a GUID; anything else is refused before it becomes part of a Redis key.
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")
CLAIM_TTL_S = 120

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
