"""The triage side of a watch driven by hand: its context on a given Redis, a beat tick
with its poll due, and a runner's finished run (the reading it leaves), so a test can
step a watch through releases without a GPU worker."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.fakes.github_fixture import INSTALLATION_ID, REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.redis_fixture import make_settings
from tests.watch.test_app_e2e import reproduced_job
from triagebot.decisions.actions import StartWatch
from triagebot.github.client import GitHubClient
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.jobs.watches import WatchRecord, WatchStore
from triagebot.settings import Settings
from triagebot.watch.models import Ratio, Reading
from triagebot.workers import watch
from triagebot.workers.app import create_celery
from triagebot.workers.runner_watch import reading_key
from triagebot.workers.triage_facts import TriageContext


def settings_for(namespace: str, fake: FakeGitHub, feed_url: str, tmp_path: Path,
                 **overrides: object) -> Settings:
    return make_settings(
        namespace, github_api_url=fake.base_url, app_id=fake.app_id,
        app_private_key=fake.private_key_pem, data_dir=tmp_path / "jobs",
        gpu_kinds=["h100"], default_gpu="h100", run_local=False, watch_index=feed_url,
        **overrides)


def context(settings: Settings) -> TriageContext:
    """The triage side's context, with clients of its own (as a restarted worker has)."""
    return TriageContext(settings, JobStore(settings), create_celery(
        settings, register_tasks=False), lambda installation: GitHubClient.for_installation(
            settings, installation or INSTALLATION_ID))


def watched(ctx: TriageContext) -> JobRecord:
    """Issue 42's report reproduced at 0.20.1, and watched on the h100 runner."""
    job = reproduced_job({"store": ctx.store, "settings": ctx.settings})
    watch.start(ctx, StartWatch(job_id=job.id, engine="vllm", gpu="h100"), "reporter",
                "maint")
    return job


def watches(ctx: TriageContext) -> WatchStore:
    return WatchStore(ctx.store.redis, ctx.settings.namespace)


def record(ctx: TriageContext) -> WatchRecord:
    rec = watches(ctx).get(REPO, 42)
    assert rec is not None
    return rec


def tick(ctx: TriageContext, today: str = "") -> int:
    """One beat tick with its poll due (the gate's interval passed)."""
    ctx.store.redis.delete(ctx.settings.key("watch-poll-gate"))
    with httpx.Client(timeout=10) as http:
        return watch.poll(ctx, http, today)


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
