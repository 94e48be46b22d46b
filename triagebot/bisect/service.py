"""A bisect as a job of the GitHub App: its record, its steps in Redis, its comment.

The decision (`triagebot.decisions.bisect`) stores a `BisectSpec` in the job record; the
GPU worker runs `run_bisect_job` under the job's lock and heartbeat, like a repro. Every
finished step is appended to a Redis list before the next begins, so a worker that dies
mid-bisect leaves the next one the steps to resume from; after each step the bisect
section is saved as the job's report (the job page shows it) and the sticky comment is
edited to show it too. Cancelling stops the running step at its next run.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

import redis

from triagebot.bisect.search import Step
from triagebot.bisect.spec import BisectSpec

if TYPE_CHECKING:
    from triagebot.github.client import GitHubClient
    from triagebot.jobs.record import JobRecord
    from triagebot.jobs.store import JobStore
    from triagebot.workers.runner import JobRunner

# Release tags of the engine's repository (vLLM's and SGLang's both read v0.20.0).
TAG = "v{version}"


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


def run_bisect_job(runner: JobRunner, id_: str, job: JobRecord,
                   stop: Callable[[], bool]) -> None:
    """Run (or resume) the bisect and leave its report; raises RunCancelled on cancel."""
    from triagebot.bisect import envs, ranges, search
    from triagebot.bisect.cli import package_for
    from triagebot.bisect.render import answer, render_section
    from triagebot.bisect.runner import BisectRun, BisectSettings, bisect
    from triagebot.commands.bisect import parse_words
    from triagebot.model import ReproRequest
    from triagebot.run.provision import ProvisionError

    assert job.bisect is not None
    store, settings = runner.store, runner.settings
    spec = BisectSpec.model_validate_json(job.bisect)
    plan = store.plan(id_)
    request = store.request(id_) or ReproRequest()
    options = parse_words(spec.overrides).options
    try:
        package = package_for(plan.engine, options.gpu)
        where = str(settings.bisect_find_links or settings.bisect_index)
        known = ranges.finals(envs.index_versions(package, where))
        rng = ranges.release_range(known, spec.good, spec.bad, direction=spec.direction)
    except (ranges.BisectError, ProvisionError) as exc:
        store.move(id_, "failed", error=f"cannot bisect: {exc}")
        runner.publish(id_)
        return
    words = ["triagebot", "bisect", f"https://github.com/{job.repo}/issues/{job.number}",
             *job.command.split()[1:]]
    run = BisectRun(package=package, range=rng, question=plan.question,
                    predicate=(f"the repro plan's question ({plan.question.rstrip('.')}); "
                               "bad where it reproduces the report, good where not, skip "
                               "where UNKNOWN after escalation or the build fails"),
                    notes=spec.notes, command=shlex.join(words))
    bisect_settings = BisectSettings(
        out_dir=settings.data_dir / id_, cache_dir=settings.env_cache_dir,
        find_links=settings.bisect_find_links, escalate=settings.escalate)
    limit = search.step_budget(rng.candidates)

    def on_step(now: BisectRun) -> None:
        last = now.steps[-1]
        store.save_report(id_, now.model_dump_json(), render_section(now))
        store.set(id_, runs_done=len(now.steps), runs_planned=limit,
                  current=f"step {len(now.steps)}: {last.point} -> {last.verdict}")
        runner.send_progress(id_)

    steps = RedisSteps(store.redis, steps_key(store, id_), settings.job_ttl_s)
    result = bisect(run, request, options, spec.errors, bisect_settings, store=steps,
                    log=lambda _m: None, on_step=on_step, stop=stop)
    store.save_report(id_, result.model_dump_json(), render_section(result))
    store.move(id_, "done", headline=answer(result).replace("**", ""), eta_s=0.0)
    runner.publish(id_)


def report_with_candidates(gh: GitHubClient, job: JobRecord, store: JobStore) -> str | None:
    """The finished bisect's section with the commits between its last old and first new
    release ranked against the report's subject (GitHub's compare API, through our
    client, from the triage side: the runner holds no GitHub credentials). None when
    there is nothing to add."""
    from triagebot.bisect.rank import commits_from_compare, rank, subject_of
    from triagebot.bisect.render import render_section
    from triagebot.bisect.runner import BisectRun
    from triagebot.github.errors import GitHubError
    from triagebot.model import ReproRequest

    raw = store.findings(job.id)
    if raw is None or job.bisect is None:
        return None
    run = BisectRun.model_validate(raw)
    out = run.outcome
    if out is None or not out.done or run.range.level != "release":
        return None
    base, head = TAG.format(version=out.last_old), TAG.format(version=out.first_new)
    try:
        items = gh.compare_commits(job.repo, base, head)
    except GitHubError as exc:
        if exc.transient:
            raise
        items = None
    if not items:
        note = f"no candidates: {job.repo} has no comparable tags {base} and {head}"
        section = render_section(run.model_copy(update={"notes": [*run.notes, note]}))
    else:
        request = store.request(job.id) or ReproRequest()
        ranked = rank(commits_from_compare(items, job.repo), subject_of(request))
        note = (f"{len(items)} commits lie between {base} and {head}; per-commit builds are "
                "not listed here, so the bisect stops at releases and ranks them")
        section = render_section(run.model_copy(update={"notes": [*run.notes, note]}),
                                 ranked)
    store.save_report(job.id, run.model_dump_json(), section)
    return section
