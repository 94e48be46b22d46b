"""What the routes share: settings, the Redis clients built on first use, and the helpers
over them.

Building the clients lazily keeps `create_app` free of connections (and importable
anywhere); building them once keeps their connection pools warm across requests. Their
timeout is the ingress's short one, so a hung Redis costs a request at most that. Two
clients: the webhook's dedupe-and-enqueue runs on the event loop with an asyncio client
(its own, always from `redis_url`); the pages, health and metrics use a blocking one in
threads. The ingress needs no Celery client: it writes task messages itself (see
`task_message.py`).
"""

from __future__ import annotations

import threading
from functools import cached_property

import redis
from redis.asyncio import Redis as AsyncRedis

from triagebot.jobs.store import JobStore, connect, connect_async
from triagebot.settings import Settings
from triagebot.web.body import BodyBudget
from triagebot.web.deliveries import Deliveries
from triagebot.web.metrics import Metrics

BACKSTOP_TIMEOUT_S = 5.0


class Service:
    def __init__(self, settings: Settings, *, redis_client: redis.Redis | None = None) -> None:
        self.settings = settings
        self._redis = redis_client
        # A client passed in belongs to the caller; only one built here is closed here.
        self._own_redis = redis_client is None
        self._lock = threading.Lock()
        self.metrics = Metrics(settings, lambda: self.jobs)
        self.bodies = BodyBudget(settings.unverified_body_budget_bytes, wait_s=1.0)

    @property
    def redis(self) -> redis.Redis:
        if self._redis is None:
            with self._lock:
                if self._redis is None:
                    self._redis = connect(self.settings,
                                          self.settings.ingress_redis_timeout_s)
        return self._redis

    @cached_property
    def jobs(self) -> JobStore:
        return JobStore(self.settings, self.redis)

    @cached_property
    def deliveries(self) -> Deliveries:
        return Deliveries(self.settings, self._async_redis)

    @cached_property
    def _async_redis(self) -> AsyncRedis:
        # The ingress's short limit is applied per call by `Deliveries` (see deadline.py);
        # the client's own timeouts, asyncio timers that a stall can fire falsely, are
        # only a backstop.
        return connect_async(self.settings, BACKSTOP_TIMEOUT_S)

    def prepare(self) -> None:
        """Build the helpers ahead of the first request; nothing connects yet."""
        _ = self.jobs, self.deliveries

    async def aclose(self) -> None:
        if "_async_redis" in self.__dict__:
            await self._async_redis.aclose()
        if self._own_redis and self._redis is not None:
            self._redis.close()
