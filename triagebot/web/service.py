"""What the routes share: settings, and the Redis and Celery clients built on first use.

Building them lazily keeps `create_app` free of connections (and importable anywhere);
building them once keeps their connection pools warm across requests.
"""

from __future__ import annotations

import threading
from functools import cached_property

import redis
from celery import Celery

from triagebot.jobs import JobStore, connect
from triagebot.settings import Settings
from triagebot.web.body import BodyBudget
from triagebot.web.deliveries import Deliveries
from triagebot.web.metrics import Metrics
from triagebot.workers.app import create_celery


class Service:
    def __init__(self, settings: Settings, *, celery: Celery | None = None,
                 redis_client: redis.Redis | None = None) -> None:
        self.settings = settings
        self._celery = celery
        self._redis = redis_client
        # Clients passed in belong to the caller; only those built here are closed here.
        self._own_celery = celery is None
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

    @property
    def celery(self) -> Celery:
        if self._celery is None:
            with self._lock:
                if self._celery is None:
                    self._celery = create_celery(
                        self.settings, register_tasks=False,
                        io_timeout_s=self.settings.ingress_redis_timeout_s)
        return self._celery

    @cached_property
    def jobs(self) -> JobStore:
        return JobStore(self.settings, self.redis)

    @cached_property
    def deliveries(self) -> Deliveries:
        return Deliveries(self.settings, self.redis)

    def prepare(self) -> None:
        """Build the clients ahead of the first request; neither connects yet."""
        _ = self.celery, self.jobs, self.deliveries

    def close(self) -> None:
        if self._own_celery and self._celery is not None:
            self._celery.close()
        if self._own_redis and self._redis is not None:
            self._redis.close()
