"""Transport-level dedupe of webhook deliveries by their `X-GitHub-Delivery` id, and the
enqueue, in one Redis script.

The script records the delivery id as `queued` (long TTL) and pushes the event's task
message onto the triage queue, or does neither when the id is queued or done already.
A delivery whose event the worker gave up on is `failed` (`triagebot.jobs.deliveries`),
and GitHub's redelivery of it (the same id) is queued again. Being one atomic step it
leaves no window to reason about: a crash before it changes nothing; a Redis that hangs
and runs it later both records and queues the delivery (so its redelivery is rightly a
duplicate); concurrent copies of one delivery queue it once. It is also one round trip
instead of three.

The client is redis-py's asyncio one, used on the event loop: a blocking client needs a
thread hop per delivery, which cost more CPU than everything else the ingress does. Its
pool opens a connection per concurrent call, so calls in flight are capped (as the thread
pool capped them before): a burst waits for a slot, at most half the Redis timeout,
rather than opening hundreds of connections. Each call's time limit is `within`'s, which
a stalled process does not turn into a false 503 (see `deadline.py`); the client's own
socket timeouts are only a backstop.
"""

from __future__ import annotations

import asyncio
import re

import redis.asyncio

from triagebot.jobs.deliveries import FAILED, QUEUED, delivery_key
from triagebot.settings import Settings
from triagebot.web.deadline import within

# GitHub sends a GUID; anything else is refused before it becomes part of a Redis key.
DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")
# Script calls in flight at once per process (so Redis connections per process).
MAX_IN_FLIGHT = 64

_ENQUEUE_ONCE = """
local state = redis.call('GET', KEYS[1])
if state and state ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[4], 'EX', ARGV[1])
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1
"""


class Deliveries:
    def __init__(self, settings: Settings, client: redis.asyncio.Redis) -> None:
        self.settings = settings
        self.redis = client
        self._enqueue_once = client.register_script(_ENQUEUE_ONCE)
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)

    def key(self, delivery: str) -> str:
        return delivery_key(self.settings, delivery)

    async def enqueue_once(self, delivery: str, queue: str, message: bytes) -> bool:
        """Queue `message` on `queue` unless `delivery` is queued or handled already (a
        failed one is taken again); True when it was queued.

        Raises TimeoutError when no slot frees within half the Redis timeout or Redis does
        not answer within it, and redis-py's errors when Redis fails.
        """
        timeout = self.settings.ingress_redis_timeout_s
        if self._slots.locked():
            # Only a full house pays for a timer. Half the Redis timeout, so waiting and
            # then a call that times out still answer well within a second.
            await within(timeout / 2, self._slots.acquire())
        else:
            await self._slots.acquire()
        try:
            return bool(await within(timeout, self._enqueue_once(
                keys=[self.key(delivery), self.settings.celery_key_prefix + queue],
                args=[self.settings.delivery_ttl_s, message, FAILED, QUEUED])))
        finally:
            self._slots.release()
