"""A bisect as a job of the GitHub App, on the GPU side: its steps in Redis, its report.

The decision (`triagebot.decisions.bisect`) stores a `BisectSpec` in the job record; the
GPU worker (`triagebot.workers.runner`) runs `run_bisect_job` under the job's lock and
heartbeat, like a repro. Every finished step is appended to a Redis list before the next
begins, so a worker that dies mid-bisect leaves the next one the steps to resume from;
after each step the bisect section is saved as the job's report (the job page shows it)
and the triage side edits the sticky comment to show it too. Cancelling stops the running
step at its next run. The commits below a release bracket come from the triage side
(`triagebot.workers.triage_bisect`), which holds the GitHub credentials this side lacks.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from typing import Protocol

import redis
from celery import Celery

from triagebot.bisect import envs, ranges, search
from triagebot.bisect import start as starts
from triagebot.bisect.render import answer, render_section
from triagebot.bisect.runner import (
    BisectRun,
    BisectSettings,
    CommitPlan,
    Deeper,
    StepInputs,
    bisect,
)
from triagebot.bisect.search import Step
from triagebot.bisect.spec import BisectSpec
from triagebot.commands.bisect import parse_words
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.request_model import ReproRequest
from triagebot.run.orchestrate import RunCancelled
from triagebot.run.provision import ProvisionError
from triagebot.settings import Settings
from triagebot.workers import task_queues


class JobHost(Protocol):
    """What a bisect job needs of the GPU worker running it (`runner.JobRunner` is one):
    the settings, the job store, the Celery app, and a way to tell the triage side."""

    settings: Settings
    store: JobStore
    celery: Celery

    def publish(self, id_: str) -> None: ...

    def send_progress(self, id_: str) -> None: ...


class RedisSteps:
    """The job's finished steps, oldest first, as a Redis list of JSON."""

    def __init__(self, client: redis.Redis, key: str, ttl_s: int) -> None:
        self.client = client
        self.key = key
        self.ttl_s = ttl_s

    def load(self) -> list[Step]:
        return [Step.model_validate_json(raw) for raw in self.client.lrange(self.key, 0, -1)]

    def save(self, step: Step) -> None:
        pipe = self.client.pipeline()
        pipe.rpush(self.key, step.model_dump_json())
        pipe.expire(self.key, self.ttl_s)
        pipe.execute()


def steps_key(store: JobStore, id_: str) -> str:
    return store.settings.key("job", id_, "bisect-steps")


def commits_key(store: JobStore, id_: str, level: str) -> str:
    """Where the triage side leaves the commit level (or why there is none) for the runner."""
    return store.settings.key("job", id_, "bisect-commits", level)


def ask_commits(host: JobHost, id_: str,
                stop: Callable[[], bool]) -> Callable[[BisectRun], CommitPlan | str]:
    """Runner side: ask the triage worker for the commit level and wait for its answer
    (kept in Redis, so a resumed bisect gets the same commits without asking again)."""
    store, wait_s = host.store, host.settings.bisect_commits_wait_s

    def ask(run: BisectRun) -> CommitPlan | str:
        key = commits_key(store, id_, run.range.level)
        raw = store.redis.get(key)
        if raw is None:
            host.celery.send_task(task_queues.BISECT_COMMITS,
                                  args=[id_, run.model_dump_json()],
                                  queue=task_queues.TRIAGE_QUEUE, ignore_result=True)
            deadline = time.monotonic() + wait_s
            while raw is None and time.monotonic() < deadline:
                if stop():
                    raise RunCancelled("stopped while waiting for the commit list")
                time.sleep(0.5)
                raw = store.redis.get(key)
        if raw is None:
            return (f"no commit level: the triage worker did not list the commits within "
                    f"{wait_s:.0f} s")
        data = json.loads(raw)
        return str(data["none"]) if "none" in data else CommitPlan.model_validate(data)

    return ask


def run_bisect_job(host: JobHost, id_: str, job: JobRecord,
                   stop: Callable[[], bool]) -> None:
    """Run (or resume) the bisect and leave its report; raises RunCancelled on cancel."""
    assert job.bisect is not None
    store, settings = host.store, host.settings
    spec = BisectSpec.model_validate_json(job.bisect)
    plan = store.plan(id_)
    request = store.request(id_) or ReproRequest()
    options = parse_words(spec.overrides).options
    ask = ask_commits(host, id_, stop)
    try:
        # The kind the job runs on (a fallback from the report's GPU, or the command's).
        package = envs.package_for(plan.engine, plan.gpu_kind)
        where = str(settings.bisect_find_links or settings.bisect_index)
        known = ranges.finals(envs.index_versions(package, where))

        def sha_plan(good: str, bad: str, direction: ranges.Direction) -> CommitPlan:
            ends = ranges.BisectRange.over("commit", direction,
                                           ranges.oriented(good, bad, direction))
            found = ask(BisectRun(package=package, range=ends))
            if isinstance(found, str):
                raise ranges.BisectError(found)
            return found

        start = starts.first_level(spec.good, spec.bad, spec.direction, known, sha_plan,
                                   lambda: envs.index_versions(envs.nightly_package_for(package),
                                                               where, wheels_here=True))
    except (ranges.BisectError, ProvisionError) as exc:
        store.move(id_, "failed", error=f"cannot bisect: {exc}")
        host.publish(id_)
        return
    rng = start.range
    words = ["triagebot", "bisect", settings.thread_url(job.repo, job.number),
             *job.command.split()[1:]]
    run = BisectRun(package=package, range=rng, question=plan.question,
                    predicate=(f"the repro plan's question ({plan.question.rstrip('.')}); "
                               "bad where it reproduces the report, good where not, skip "
                               "where UNKNOWN after escalation or the build fails"),
                    notes=[*spec.notes, start.why], command=shlex.join(words),
                    commits=start.commits, commit_index=start.index,
                    plan_version=start.plan_version)
    bisect_settings = BisectSettings(
        out_dir=settings.data_dir / id_, cache_dir=settings.env_cache_dir,
        find_links=settings.bisect_find_links, escalate=settings.escalate)
    def on_step(now: BisectRun) -> None:
        # Called after each step, and once as a level below begins (with no step yet).
        level = now.range.level
        current = (f"{level} step {len(now.steps)}: {now.steps[-1].point[:12]} -> "
                   f"{now.steps[-1].verdict}" if now.steps else f"{level}s: starting")
        store.runs.save_report(id_, now.model_dump_json(), render_section(now))
        store.set(id_, runs_done=len(now.steps),
                  runs_planned=search.step_budget(now.range.candidates), current=current)
        host.send_progress(id_)

    steps = RedisSteps(store.redis, steps_key(store, id_), settings.job_ttl_s)
    deeper = Deeper(nightlies=lambda: ranges.nightlies(
        envs.index_versions(envs.nightly_package_for(package), where, wheels_here=True)),
        commits=ask) if rng.level == "release" else None
    try:
        inputs = StepInputs(request, options, spec.errors, bisect_settings,
                            log=lambda _m: None, stop=stop)
        result = bisect(run, inputs, store=steps, deeper=deeper, on_step=on_step)
    except ranges.BisectError as exc:  # an end that is not what good=/bad= say
        store.move(id_, "failed", error=f"cannot bisect: {exc}")
        host.publish(id_)
        return
    store.runs.save_report(id_, result.model_dump_json(), render_section(result))
    store.move(id_, "done", headline=answer(result).replace("**", ""), eta_s=0.0)
    host.publish(id_)
