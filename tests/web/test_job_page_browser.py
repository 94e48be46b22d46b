"""The job page as a person sees it: headless Chromium loads it under its real CSP.

For a done, a running and an errored job the browser's DOM must hold the rendered report
table and the charts, the console must show no CSP refusal, and a screenshot of each is
kept under test-artifacts/job-page/ (or $TRIAGEBOT_TEST_ARTIFACTS) for people to look at.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from tests.web import job_states
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("TRIAGEBOT_TEST_ARTIFACTS", ROOT / "test-artifacts"))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "chromium is not installed (./dev test installs Debian's chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _browse(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("state", "make", "expect"), [
    ("done", job_states.finished, ("<table>", 'id="throughput-chart"',
                                   'id="acceptance-chart"', "tone-good")),
    ("running", job_states.running, ('id="steps"', "step-running", "tone-active")),
    ("errored", job_states.errored, ("<table>", 'id="throughput-chart"', "tone-bad")),
])
def test_job_page_in_chromium(state: str, make: Callable[[JobStore], JobRecord],
                              expect: tuple[str, ...], url: str, settings: Settings,
                              redis_client: redis.Redis, tmp_path: Path) -> None:
    browser = _chromium()
    job = make(JobStore(settings, redis_client))
    page = f"{url}/jobs/{job.id}"
    dom = _browse(browser, tmp_path / "profile-dom", "--dump-dom", page)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for text in expect:
        assert text in dom.stdout, (state, text)
    assert "<svg" in dom.stdout or state == "running"
    assert "Content Security Policy" not in dom.stderr, dom.stderr[-2000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"job-page-{state}.png"
    shot.unlink(missing_ok=True)
    taken = _browse(browser, tmp_path / "profile-shot", f"--screenshot={shot}",
                    "--window-size=1100,2600", page)
    assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]
