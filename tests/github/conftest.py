"""Fixtures for the GitHub client tests: settings and clients aimed at the fake GitHub."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes import github_fixture
from tests.fakes.github_server import FakeGitHub
from triagebot.github.calls import RetryPolicy
from triagebot.github.client import GitHubClient
from triagebot.settings import Settings, load_settings

REPO = github_fixture.REPO
# Production waits are minutes; these keep every retry path under a second.
FAST = RetryPolicy(backoff_base_s=0.01, backoff_max_s=0.05, rate_limit_floor_s=0.2,
                   reset_margin_s=0.1, seconds_between_requests=0, seconds_between_writes=0)


@pytest.fixture(scope="session")
def other_key_pem() -> str:
    """A private key GitHub does not know."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def github_values(fake: FakeGitHub) -> dict[str, Any]:
    """The settings that point the client at the fake GitHub."""
    return {"github_api_url": fake.base_url, "app_id": fake.app_id,
            "app_private_key": fake.private_key_pem, "app_slug": fake.app_slug}


def settings_for(fake: FakeGitHub, **overrides: object) -> Settings:
    """A variant of the `settings` fixture for one test (it needs no Redis namespace)."""
    return load_settings(**{**github_values(fake), "_env_file": None, **overrides})


@pytest.fixture
def settings_overrides(fake_github: FakeGitHub) -> dict[str, Any]:
    return github_values(fake_github)


@pytest.fixture
def client(settings: Settings) -> Iterator[GitHubClient]:
    with GitHubClient.for_installation(settings, github_fixture.INSTALLATION_ID,
                                       policy=FAST) as gh:
        yield gh
