"""A bisect as a job of the GitHub App: its record, its steps in Redis, its comment.

The decision (`triagebot.decisions.bisect`) stores a `BisectSpec` in the job record; the
GPU worker runs `run_bisect_job` under the job's lock and heartbeat, like a repro. Every
finished step is appended to a Redis list before the next begins, so a worker that dies
mid-bisect leaves the next one the steps to resume from; after each step the bisect
section is saved as the job's report (the job page shows it) and the sticky comment is
edited to show it too. Cancelling stops the running step at its next run.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import redis

from triagebot.bisect.search import Step
from triagebot.bisect.spec import BisectSpec

if TYPE_CHECKING:
    from triagebot.bisect.runner import BisectRun, CommitPlan

if TYPE_CHECKING:
    from triagebot.github.client import GitHubClient
    from triagebot.jobs.record import JobRecord
    from triagebot.jobs.store import JobStore
    from triagebot.workers.runner import JobRunner

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
    return store.settings.key("job", id_, "bisect-commits", level)


def answer_commits(gh: GitHubClient, job: JobRecord, store: JobStore, run_json: str,
                   template: str | None, problems: list[str]) -> None:
    """Triage side: the commit level below the runner's finished bracket, or why there
    is none, left in Redis for the runner waiting on it."""
    from triagebot.bisect import deeper
    from triagebot.bisect.runner import BisectRun, CommitPlan
    from triagebot.github.errors import GitHubError

    run = BisectRun.model_validate_json(run_json)
    answer: CommitPlan | str
    if problems:
        answer = (f"no commit level: {job.repo}'s .github/triagebot.toml cannot be used: "
                  f"{'; '.join(problems)}")
    elif run.range.level == "commit" and not run.earlier:
        answer = _sha_answer(gh, job, run, template)
    else:
        try:
            items = deeper.CompareReader(gh, job.repo).items(run) if template else []
            answer = deeper.commit_plan(run, items, job.repo, template)
        except GitHubError as exc:
            if exc.transient:
                raise
            answer = f"no commit level: GitHub refused the compare ({exc})"
    value = (answer.model_dump_json() if isinstance(answer, CommitPlan)
             else json.dumps({"none": answer}))
    store.redis.set(commits_key(store, job.id, run.range.level), value,
                    ex=store.settings.job_ttl_s)


def _sha_answer(gh: GitHubClient, job: JobRecord, run: BisectRun,
                template: str | None) -> CommitPlan | str:
    """good= or bad= is a SHA: the commits between the two ends (`run.range` holds just
    the ends), or the sentence refusing them."""
    from triagebot.bisect import deeper
    from triagebot.bisect.ranges import BisectError
    from triagebot.github.errors import GitHubError

    rng = run.range
    try:
        found = deeper.CompareReader(gh, job.repo).between_ends(rng.good, rng.bad,
                                                                rng.direction)
    except GitHubError as exc:
        if exc.transient:
            raise
        return f"GitHub refused to compare the two ends ({exc})"
    except BisectError as exc:
        return str(exc)
    if not template:
        return (f"no per-commit builds: {job.repo} names no `[bisect] commit_index` in "
                ".github/triagebot.toml, so the commits between the two ends cannot be "
                "installed; name one there, or give releases or nightlies")
    return found.model_copy(update={"index": template})


def _ask_commits(runner: JobRunner, id_: str,
                 stop: Callable[[], bool]) -> Callable[[BisectRun], CommitPlan | str]:
    """Runner side: ask the triage worker for the commit level and wait for its answer
    (kept in Redis, so a resumed bisect gets the same commits without asking again)."""
    from triagebot.bisect.runner import CommitPlan
    from triagebot.run.orchestrate import RunCancelled
    from triagebot.workers import task_queues

    store, wait_s = runner.store, runner.settings.bisect_commits_wait_s

    def ask(run: BisectRun) -> CommitPlan | str:
        key = commits_key(store, id_, run.range.level)
        raw = store.redis.get(key)
        if raw is None:
            runner.celery.send_task(task_queues.BISECT_COMMITS,
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


def run_bisect_job(runner: JobRunner, id_: str, job: JobRecord,
                   stop: Callable[[], bool]) -> None:
    """Run (or resume) the bisect and leave its report; raises RunCancelled on cancel."""
    from triagebot.bisect import envs, ranges, search
    from triagebot.bisect import start as starts
    from triagebot.bisect.render import answer, render_section
    from triagebot.bisect.runner import BisectRun, BisectSettings, Deeper, bisect
    from triagebot.commands.bisect import parse_words
    from triagebot.model import ReproRequest
    from triagebot.run.provision import ProvisionError

    assert job.bisect is not None
    store, settings = runner.store, runner.settings
    spec = BisectSpec.model_validate_json(job.bisect)
    plan = store.plan(id_)
    request = store.request(id_) or ReproRequest()
    options = parse_words(spec.overrides).options
    ask = _ask_commits(runner, id_, stop)
    try:
        package = envs.package_for(plan.engine, options.gpu)
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
        runner.publish(id_)
        return
    rng = start.range
    words = ["triagebot", "bisect", f"https://github.com/{job.repo}/issues/{job.number}",
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
        store.save_report(id_, now.model_dump_json(), render_section(now))
        store.set(id_, runs_done=len(now.steps),
                  runs_planned=search.step_budget(now.range.candidates), current=current)
        runner.send_progress(id_)

    steps = RedisSteps(store.redis, steps_key(store, id_), settings.job_ttl_s)
    deeper = Deeper(nightlies=lambda: ranges.nightlies(
        envs.index_versions(envs.nightly_package_for(package), where, wheels_here=True)),
        commits=ask) if rng.level == "release" else None
    try:
        result = bisect(run, request, options, spec.errors, bisect_settings, store=steps,
                        deeper=deeper, log=lambda _m: None, on_step=on_step, stop=stop)
    except ranges.BisectError as exc:  # an end that is not what good=/bad= say
        store.move(id_, "failed", error=f"cannot bisect: {exc}")
        runner.publish(id_)
        return
    store.save_report(id_, result.model_dump_json(), render_section(result))
    store.move(id_, "done", headline=answer(result).replace("**", ""), eta_s=0.0)
    runner.publish(id_)


def report_with_candidates(gh: GitHubClient, job: JobRecord, store: JobStore) -> str | None:
    """The finished bisect's section with the commits of its final bracket ranked against
    the report's subject (GitHub's compare API, through our client, from the triage side:
    the runner holds no GitHub credentials). None when there is nothing to add."""
    from triagebot.bisect import deeper
    from triagebot.bisect.render import render_section
    from triagebot.bisect.runner import BisectRun
    from triagebot.github.errors import GitHubError
    from triagebot.model import ReproRequest

    raw = store.findings(job.id)
    if raw is None or job.bisect is None:
        return None
    run = BisectRun.model_validate(raw)
    request = store.request(job.id) or ReproRequest()
    if run.range.level == "commit" and not run.earlier:
        from triagebot.bisect.shas import ranked_between

        section = render_section(run, ranked_between(run, request))
        store.save_report(job.id, run.model_dump_json(), section)
        return section
    tags = deeper.release_tags(run)
    if run.outcome is None or not run.outcome.done or tags is None:
        return None
    try:
        items = deeper.CompareReader(gh, job.repo).items(run)
    except GitHubError as exc:
        if exc.transient:
            raise
        items = None
    ranked = deeper.ranked(run, items, job.repo, request) if items else []
    if not ranked:
        note = (f"no candidates: {job.repo} has no comparable tags {tags[0]} and {tags[1]}"
                if items is None else "no candidates: no commit lies in the final bracket")
        run = run.model_copy(update={"notes": [*run.notes, note]})
    section = render_section(run, ranked)
    store.save_report(job.id, run.model_dump_json(), section)
    return section
