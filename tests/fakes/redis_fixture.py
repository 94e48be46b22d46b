"""A real Redis for tests, with a namespace of its own that is removed afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from triagebot.settings import Settings, load_settings

REDIS_URL = "redis://127.0.0.1:6379/0"


def clean_namespace(client: redis.Redis, namespace: str) -> None:
    keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start:start + 500])


def make_settings(namespace: str, **overrides: Any) -> Settings:
    """Settings for a test: its own namespace, short clocks, nothing read from a .env."""
    values: dict[str, Any] = {
        "namespace": namespace, "redis_url": REDIS_URL, "lock_ttl_s": 4, "heartbeat_s": 1.0,
        "job_time_limit_s": 600, "visibility_timeout_s": 900, "progress_interval_s": 0.0,
        "gpu_kinds": ["cpu"], "default_gpu": "cpu", "worker_heartbeat_max_age_s": 10,
        "link_secret": "tests-link-secret",
        "_env_file": None,
    }
    values.update(overrides)
    return load_settings(**values)


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail("the tests need Redis at 127.0.0.1:6379 (./dev test starts one)")
    yield client
    client.close()


@pytest.fixture
def namespace(redis_client: redis.Redis) -> Iterator[str]:
    name = f"tbtest-{uuid.uuid4().hex[:10]}"
    yield name
    clean_namespace(redis_client, name)


@pytest.fixture
def settings_overrides(tmp_path: Any) -> dict[str, Any]:
    """What a folder's tests set on top of `make_settings`; its conftest may override this."""
    return {"data_dir": tmp_path / "jobs", "run_local": True}


@pytest.fixture
def settings(namespace: str, settings_overrides: dict[str, Any]) -> Settings:
    """The one `settings` fixture: a namespace of its own, plus the folder's overrides."""
    return make_settings(namespace, **settings_overrides)
