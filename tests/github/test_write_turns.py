"""Writes for one installation go one at a time, a second apart, across processes
(issue 27, item 5).

GitHub asks an integration to make the requests of one installation serially and to wait
between mutating ones. PyGithub spaces the writes of one client; the triage worker runs
several processes, each with its own client, so their writes interleaved. The turn is
now kept in Redis, shared by every process of the deployment."""

from __future__ import annotations

import itertools
import multiprocessing
import time
from multiprocessing.synchronize import Event
from typing import Any

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.github.conftest import FAST
from triagebot.settings import Settings

SPACING_S = 0.3
WRITES = 3


def _post(settings: Settings, start: Event, name: str) -> None:
    from triagebot.workers.write_turns import installation_client

    policy = FAST.model_copy(update={"seconds_between_writes": SPACING_S})
    with installation_client(settings, INSTALLATION_ID, policy=policy) as gh:
        gh.read_thread(REPO, 1)  # minted and warm before the race starts
        start.wait(30)
        first = gh.upsert_comment(REPO, 1, f"job={name}", "queued")
        for n in range(1, WRITES):
            gh.upsert_comment(REPO, 1, f"job={name}", f"step {n}", comment_id=first)


def test_two_processes_take_turns_at_writing(fake_github: FakeGitHub,
                                             settings: Settings) -> None:
    fake_github.add_issue(REPO, 1, "t", "b")
    fake_github.delay(0.05)  # every request takes a while, as GitHub's do
    spawn: Any = multiprocessing.get_context("spawn")
    start = spawn.Event()
    procs = [spawn.Process(target=_post, args=(settings, start, name))
             for name in ("one", "two")]
    for proc in procs:
        proc.start()
    try:
        _wait_until_warm(fake_github)
        start.set()
        for proc in procs:
            proc.join(60)
            assert proc.exitcode == 0
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    writes = sorted((c for c in fake_github.calls if c.method in ("POST", "PATCH")
                     and c.path.startswith("/repos/")), key=lambda c: c.time)
    assert len(writes) == 2 * WRITES
    gaps = [b.time - a.time for a, b in itertools.pairwise(writes)]
    # Each write starts a spacing after the one before it ended, whichever process sent it.
    assert min(gaps) >= SPACING_S, gaps


def _wait_until_warm(fake: FakeGitHub) -> None:
    deadline = time.monotonic() + 60
    while len(fake.calls_to("GET", rf"/repos/{REPO}/issues/1/comments")) < 2:
        assert time.monotonic() < deadline, "the writers did not start"
        time.sleep(0.05)


def _read(settings: Settings, start: Event) -> None:
    from triagebot.workers.write_turns import installation_client

    with installation_client(settings, INSTALLATION_ID, policy=FAST) as gh:
        gh.read_thread(REPO, 1)
        start.wait(30)
        for _ in range(4):
            gh.read_thread(REPO, 1)
            gh.permission(REPO, "someone")


def test_reads_take_the_turn_too(fake_github: FakeGitHub, settings: Settings) -> None:
    # Issue 41: writes waited their turn but reads of two processes still overlapped.
    # GitHub asks for every request of an installation to be serial.
    fake_github.add_issue(REPO, 1, "t", "b")
    fake_github.delay(0.05)
    spawn: Any = multiprocessing.get_context("spawn")
    start = spawn.Event()
    procs = [spawn.Process(target=_read, args=(settings, start)) for _ in range(3)]
    for proc in procs:
        proc.start()
    try:
        deadline = time.monotonic() + 60
        while len(fake_github.calls_to("GET", rf"/repos/{REPO}/issues/1/comments")) < 3:
            assert time.monotonic() < deadline, "the readers did not start"
            time.sleep(0.05)
        start.set()
        for proc in procs:
            proc.join(60)
            assert proc.exitcode == 0
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    assert len(fake_github.calls_to("GET", rf"/repos/{REPO}/issues/1")) >= 12
    assert fake_github.max_in_flight == 1
