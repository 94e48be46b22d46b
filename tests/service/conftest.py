"""Fixtures of the service tests: a job store on the test's namespace and a small plan."""

from __future__ import annotations

import pytest

from tests.service.support import small_plan
from triagebot.jobs import JobStore
from triagebot.model import Plan
from triagebot.settings import Settings


@pytest.fixture
def store(settings: Settings) -> JobStore:
    return JobStore(settings)


@pytest.fixture
def plan() -> Plan:
    return small_plan()
