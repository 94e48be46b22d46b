"""The `fake_github` pytest fixture: a started FakeGitHub with installation 1 on acme/engine.

Register it with `pytest_plugins = ["tests.fakes.github_fixture"]` in the top conftest. A test
fails at teardown if the code under test called a route the fake does not implement.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.github_server import FakeGitHub

REPO = "acme/engine"
INSTALLATION_ID = 1


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo(REPO)
        fake.add_installation(INSTALLATION_ID, [REPO])
        yield fake
        unexpected = fake.unexpected
    if unexpected:
        listed = "\n".join(f"  {c.method} {c.path}" for c in unexpected)
        pytest.fail(f"calls to routes the fake GitHub does not implement:\n{listed}")
