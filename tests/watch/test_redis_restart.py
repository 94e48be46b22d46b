"""Watch state survives a Redis restart with persistence: a redis-server of the test's
own, started from the deployment's `redis.conf` (AOF), holds a watch and the row of a
release it processed; after a restart the watch and its row are intact, a repeated poll
neither runs that release again nor loses its row, and the next release runs once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.fakes.redis_server import RedisServer, redis_server
from tests.fakes.release_feed import ReleaseFeed, serve_feed
from tests.watch.test_app_e2e import reproduced_job
from triagebot.decisions.actions import StartWatch
from triagebot.github.client import GitHubClient
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.jobs.watches import WatchStore
from triagebot.settings import Settings
from triagebot.watch.models import Ratio, Reading
from triagebot.workers import watch
from triagebot.workers.app import create_celery
from triagebot.workers.runner_watch import reading_key
from triagebot.workers.triage_facts import TriageContext

NAMESPACE = "tbrestart"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path / "redis") as started:
        yield started


def context(settings: Settings) -> TriageContext:
    """The triage side's context, with clients of its own (as a restarted worker has)."""
    return TriageContext(settings, JobStore(settings), create_celery(
        settings, register_tasks=False), lambda installation: GitHubClient.for_installation(
            settings, installation or INSTALLATION_ID))


def tick(ctx: TriageContext) -> int:
    """One beat tick with its poll due (the gate's interval passed)."""
    ctx.store.redis.delete(ctx.settings.key("watch-poll-gate"))
    with httpx.Client(timeout=10) as http:
        return watch.poll(ctx, http)


def runs(ctx: TriageContext, release: str) -> list[JobRecord]:
    return [j for j in ctx.store.thread_jobs(REPO, 42)
            if j.watch is not None and j.trigger.startswith(f"watch-{release}-")]


def finish(ctx: TriageContext, release: str, against: str, value: float) -> None:
    """The runner's part: the run measured `release` and left its reading."""
    (run,) = runs(ctx, release)
    ctx.store.move(run.id, "running")
    reading = Reading(release=release, against=against, comparison="spec/no_spec",
                      ratio=Ratio(value=value, ci_low=value - 0.04, ci_high=value + 0.04,
                                  verdict="DIFFERENT", n_a=4, n_b=4))
    ctx.store.redis.set(reading_key(ctx.settings, run.id), reading.model_dump_json())
    watch.publish_run(ctx, ctx.store.move(run.id, "done"))


def test_a_watch_and_its_rows_survive_a_redis_restart(
        server: RedisServer, fake_github: FakeGitHub, tmp_path: Path) -> None:
    fake_github.add_issue(REPO, 42, "ngram slower than no speculation", "-",
                          author="reporter")
    feed: ReleaseFeed
    with serve_feed() as feed:
        settings = make_settings(
            NAMESPACE, redis_url=server.url, github_api_url=fake_github.base_url,
            app_id=fake_github.app_id, app_private_key=fake_github.private_key_pem,
            data_dir=tmp_path / "jobs", gpu_kinds=["h100"], default_gpu="h100",
            run_local=False, watch_index=feed.url)
        ctx = context(settings)
        job = reproduced_job({"store": ctx.store, "settings": settings})
        watch.start(ctx, StartWatch(job_id=job.id, engine="vllm", gpu="h100"), "reporter",
                    "maint")
        feed.publish("vllm", "0.20.1", "2026-01-02")
        feed.publish("vllm", "0.21.0", "2026-02-01")
        assert tick(ctx) == 1
        finish(ctx, "0.21.0", "0.20.1", 0.6)
        watches = WatchStore(ctx.store.redis, NAMESPACE)
        before = watches.get(REPO, 42)
        assert before is not None
        assert [(r.release, r.state, r.date) for r in before.rows] == [
            ("0.21.0", "reproduced", "2026-02-01")]
        assert before.last == "0.21.0"

        server.restart()
        ctx = context(settings)
        watches = WatchStore(ctx.store.redis, NAMESPACE)
        assert watches.get(REPO, 42) == before
        assert watches.watching("vllm") == [before]
        # Nothing that says what a thread has seen expires (only the poll's interval
        # gate and a day's runner minutes are meant to).
        meant = (f"{NAMESPACE}:watch-poll-gate", f"{NAMESPACE}:watch-minutes:")
        expiring = [k for k in map(bytes.decode, ctx.store.redis.scan_iter(
            match=f"{NAMESPACE}:watch*")) if not k.startswith(meant)
            and ctx.store.redis.ttl(k) != -1]
        assert expiring == []

        # The tick repeated after the restart runs nothing again and keeps the row.
        assert tick(ctx) == 0
        assert len(runs(ctx, "0.21.0")) == 1
        # The next release runs once, however many ticks ask, and adds its row.
        feed.publish("vllm", "0.22.0", "2026-03-01")
        assert tick(ctx) == 1
        assert tick(ctx) == 0
        finish(ctx, "0.22.0", "0.21.0", 1.0)
        after = watches.get(REPO, 42)
        assert after is not None
        assert [r.release for r in after.rows] == ["0.21.0", "0.22.0"]
        assert after.rows[0] == before.rows[0]
