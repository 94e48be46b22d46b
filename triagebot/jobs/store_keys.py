"""The job store's Redis client, settings and key names, and how a client is made.

Every key lives under the settings' namespace (`Settings.key`); `JobStore`, its runs and
its counters (`store`, `store_runs`, `store_counters`) all name their keys here.
"""

from __future__ import annotations

import time
from typing import Any

import redis
import redis.asyncio

from triagebot.settings import Settings


def connect(settings: Settings, timeout_s: float = 5.0) -> redis.Redis:
    """A client for the service's Redis; it connects on first use, not here.

    `timeout_s` bounds every call (connecting included): the ingress passes its short one.
    """
    return redis.Redis.from_url(settings.redis_url, **_client_options(timeout_s))


def connect_async(settings: Settings, timeout_s: float) -> redis.asyncio.Redis:
    """An asyncio client for the service's Redis, bounded like `connect`'s; it connects on
    first use, in the event loop that uses it."""
    return redis.asyncio.Redis.from_url(settings.redis_url, **_client_options(timeout_s))


def _client_options(timeout_s: float) -> dict[str, Any]:
    return {"socket_timeout": timeout_s, "socket_connect_timeout": min(2.0, timeout_s),
            "health_check_interval": 30}


class StoreKeys:
    """The Redis client, the settings and the names of the keys that several parts share."""

    def __init__(self, settings: Settings, client: redis.Redis | None = None) -> None:
        self.settings = settings
        self.redis = client if client is not None else connect(settings)

    def k(self, *parts: str) -> str:
        return self.settings.key(*parts)

    def job(self, id_: str, *part: str) -> str:
        return self.k("job", id_, *part)

    def active(self, repo: str, number: int, plan_hash: str) -> str:
        return self.k("active", f"{repo.lower()}#{number}", plan_hash)

    def thread(self, repo: str, number: int) -> str:
        return self.k("thread", f"{repo.lower()}#{number}")


def text_of(value: Any) -> str:
    """A Redis reply as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def utc_day() -> str:
    return time.strftime("%Y%m%d", time.gmtime())
