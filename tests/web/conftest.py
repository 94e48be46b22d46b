"""Fixtures for the ingress tests: live servers and settings with a webhook secret.

`redis_client` and `namespace` (one Redis namespace per test, removed afterwards) come
from tests/fakes/redis_fixture.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.fakes.redis_fixture import make_settings as base_settings
from tests.web.support import SECRET, LiveServer
from triagebot.settings import Settings
from triagebot.web.app import create_app


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"webhook_secrets": [SECRET], "gpu_kinds": ["h100"], "default_gpu": "h100"}


@pytest.fixture
def make_settings(namespace: str, settings_overrides: dict[str, Any]) -> Callable[..., Settings]:
    """Variants of `settings` (tests/fakes/redis_fixture.py) for one test."""

    def build(**overrides: Any) -> Settings:
        return base_settings(namespace, **{**settings_overrides, **overrides})

    return build


@pytest.fixture
def serve() -> Iterator[Callable[..., str]]:
    """start(settings, **create_app kwargs) -> base URL of a live server for the app."""
    with ExitStack() as stack:

        def start(settings: Settings, **kwargs: Any) -> str:
            return stack.enter_context(LiveServer(create_app(settings, **kwargs))).url

        yield start


@pytest.fixture
def url(serve: Callable[..., str], settings: Settings) -> str:
    return serve(settings)


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client
