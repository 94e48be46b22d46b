"""Tracking issues in process (workers/sentinel_issues.py), against the fake GitHub and a
real Redis: racing publishers open one issue; an opener that died between opening the
issue and naming it is found by its marker, not duplicated; a later release comments."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from triagebot.github.client import GitHubClient
from triagebot.jobs.record import JobRecord
from triagebot.jobs.sentinels import SentinelStore, TrackRecord
from triagebot.jobs.store import JobStore
from triagebot.report.sentinel import LABEL, TrackRow
from triagebot.sentinel.models import CaseFigures, Flag, SentinelCase
from triagebot.workers.app import create_celery
from triagebot.workers.sentinel_issues import TrackBusy, marker_key, track
from triagebot.workers.triage_facts import TriageContext

CASE = SentinelCase(case_id="vllm-mtp-k1-standin-cpu", engine="vllm", model="standin",
                    method="mtp", k=1, modes=["eager"], workload="offline", runner="cpu")


def flag(release: str, previous: str) -> Flag:
    return Flag(case_id=CASE.case_id, release=release, previous=previous, kind="crashed",
                reason=f"{release} crashed: RuntimeError")


def figures(release: str, previous: str) -> CaseFigures:
    return CaseFigures(case_id=CASE.case_id, engine="vllm", release=release,
                       previous=previous, status="crashed", error_line="RuntimeError",
                       measured_at=datetime(2026, 11, 1, tzinfo=UTC), job_url="http://t/j")


@pytest.fixture
def ctx(fake_github: FakeGitHub, namespace: str, tmp_path: Path) -> Iterator[TriageContext]:
    settings = make_settings(namespace, github_api_url=fake_github.base_url,
                             app_id=fake_github.app_id,
                             app_private_key=fake_github.private_key_pem,
                             webhook_secrets=["tracking-test-secret"], data_dir=tmp_path)
    yield TriageContext(settings, JobStore(settings), create_celery(settings, register_tasks=False),
                        lambda iid: GitHubClient.for_installation(settings, iid or 0))


def job(ctx: TriageContext) -> JobRecord:
    return JobRecord(id="s" * 32, repo=REPO, number=0, installation_id=INSTALLATION_ID,
                     trigger="sentinel-vllm-0.32.0-cpu", requester="triagebot[bot]",
                     command="sentinel", plan_hash="p", gpu_kind="cpu")


def tracking(fake: FakeGitHub) -> list[object]:
    return [i for i in fake.issues(REPO) if LABEL in i.labels]


def test_racing_publishers_open_one_issue(ctx: TriageContext, fake_github: FakeGitHub) -> None:
    start = threading.Barrier(4)
    busy: list[str] = []

    def publish() -> None:
        start.wait()
        try:
            track(ctx, job(ctx), None, CASE, flag("0.32.0", "0.29.0"),
                  figures("0.32.0", "0.29.0"))
        except TrackBusy:
            busy.append("busy")  # the task retries it; below, as a retry would

    threads = [threading.Thread(target=publish) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in busy:
        track(ctx, job(ctx), None, CASE, flag("0.32.0", "0.29.0"), figures("0.32.0", "0.29.0"))
    [issue] = tracking(fake_github)
    assert "**0.32.0** against **0.29.0**" in issue.body  # type: ignore[attr-defined]
    assert fake_github.comments(REPO, issue.number) == []  # type: ignore[attr-defined]
    # A later release flagged the same way: one comment, however often it is published.
    for _ in range(2):
        track(ctx, job(ctx), None, CASE, flag("0.33.0", "0.32.0"), figures("0.33.0", "0.32.0"))
    assert len(tracking(fake_github)) == 1
    [comment] = fake_github.comments(REPO, issue.number)  # type: ignore[attr-defined]
    assert "again at **0.33.0**" in comment.body
    assert "| 0.33.0 |" in tracking(fake_github)[0].body  # type: ignore[attr-defined]


def test_an_opener_that_died_after_opening_is_found_not_duplicated(
        ctx: TriageContext, fake_github: FakeGitHub) -> None:
    # The opener wrote the record and opened the issue, then died before naming it.
    store = SentinelStore(ctx.store.redis, ctx.settings.namespace)
    row = TrackRow(release="0.32.0", previous="0.29.0", reason="crashed")
    assert store.open_track(TrackRecord(repo=REPO, case_id=CASE.case_id, kind="crashed",
                                        installation_id=INSTALLATION_ID, rows=(row,),
                                        flagged=("0.32.0",)))
    gh = ctx.github(INSTALLATION_ID)
    number = gh.open_issue(REPO, "Sentinel: opened before a crash",
                           marker_key(CASE.case_id, "crashed"), "body", LABEL)
    track(ctx, job(ctx), None, CASE, flag("0.32.0", "0.29.0"), figures("0.32.0", "0.29.0"))
    assert [i.number for i in tracking(fake_github)] == [number]  # type: ignore[attr-defined]
    rec = store.track(REPO, CASE.case_id, "crashed")
    assert rec is not None and rec.number == number
    assert store.track_of_issue(REPO, number) == rec
    assert "**0.32.0** against **0.29.0**" in tracking(fake_github)[0].body  # type: ignore[attr-defined]
