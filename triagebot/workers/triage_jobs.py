"""The triage executor's work on jobs: starting one (the acknowledgement comment, then the
GPU task), cancelling, and editing the job's one comment with progress and the report."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from triagebot.bisect.expected import expected_steps, unlisted_ends
from triagebot.bisect.spec import BisectSpec
from triagebot.decisions import replies as words
from triagebot.decisions.actions import StartJob
from triagebot.github.client import GitHubClient
from triagebot.jobs.record import JobRecord
from triagebot.plan_model import Plan
from triagebot.workers import sentinel, task_queues, watch
from triagebot.workers.triage_bisect import answer_commits, report_with_candidates
from triagebot.workers.triage_facts import TriageContext, repo_config, runner_live


class CommentBusy(Exception):
    """Another task is editing this job's comment; try again in a moment."""


def start(ctx: TriageContext, gh: GitHubClient, action: StartJob) -> str | None:
    """Create the job and acknowledge it; a reply when another job is live, or a bisect's
    ends are not in the engine's release list, else None."""
    if action.record.bisect is not None:
        spec = BisectSpec.model_validate_json(action.record.bisect)
        problem = unlisted_ends(ctx.settings, spec, action.plan)
        if problem:
            return words.plan_refused(f"bisect: {problem}")
    created = ctx.store.create(action.record, action.plan, action.request)
    if created.status == "busy":
        return words.busy(created.job, ctx.job_url(created.job))
    _acknowledge_and_enqueue(ctx, gh, created.job, list(action.notes))
    return None


def _acknowledge_and_enqueue(ctx: TriageContext, gh: GitHubClient, job: JobRecord,
                             notes: list[str]) -> None:
    """Post the job's comment and queue it, once.

    Concurrent deliveries of one comment (GitHub redelivers, edits re-fire) all reach
    here with the same job: the claim lets one of them post and enqueue, and the others
    add nothing. A holder that crashed midway leaves the claim to expire and the job
    not `enqueued`, so a redelivery finishes the step.
    """
    store = ctx.store
    if job.state != "queued" or job.enqueued:
        return
    with store.runs.claimed("acknowledge", job.id) as ours:
        if not ours:
            return
        job = store.require(job.id)
        if job.state != "queued" or job.enqueued:
            return
        plan = store.plan(job.id)
        ahead, wait_s = store.queue_position(job)
        request = store.request(job.id)
        place = words.QueuePlace(ahead, wait_s, runner_live(ctx, job.gpu_kind))
        body = words.acknowledgement(job, plan, place, ctx.job_url(job), notes,
                                     crash_check=request is not None
                                     and request.symptom == "crash",
                                     **_bisect_words(ctx, job, plan))
        comment_id = gh.upsert_comment(job.repo, job.number, f"job={job.id}", body,
                                       job.comment_id)
        store.set(job.id, comment_id=comment_id)
        ctx.celery.send_task(task_queues.RUN_JOB, args=[job.id],
                             queue=ctx.settings.queue_for(job.gpu_kind),
                             task_id=f"job-{job.id}-{uuid.uuid4().hex[:8]}",
                             ignore_result=True)
        store.set(job.id, enqueued=True)


def _bisect_words(ctx: TriageContext, job: JobRecord, plan: Plan) -> dict[str, Any]:
    """A bisect's acknowledgement says so: its range, the steps it should take (from
    the package index its runner reads) and their GPU time in all."""
    if job.bisect is None:
        return {}
    spec = BisectSpec.model_validate_json(job.bisect)
    found = expected_steps(ctx.settings, spec, plan)
    headline = words.bisect_headline(
        spec.good, spec.bad, plan, found.between if found else None,
        found.steps if found else None, found.most if found else None,
        found.level if found else "point")
    steps = found.steps if found else 1
    return {"headline": headline, "gpu_seconds": steps * plan.estimated_seconds}


def cancel(ctx: TriageContext, ids: tuple[str, ...], actor: str,
           reason: str | None = None) -> None:
    for id_ in ids:
        record = ctx.store.request_cancel(id_, actor, reason)
        if record.state == "cancelled":
            # Queued: no worker will pick it up, so say so on its comment now.
            ctx.celery.send_task(task_queues.PUBLISH, args=[id_],
                                 queue=task_queues.TRIAGE_QUEUE, ignore_result=True)


@contextmanager
def _comment_lock(ctx: TriageContext, id_: str) -> Iterator[None]:
    key = ctx.settings.key("comment-lock", id_)
    token = uuid.uuid4().hex
    redis = ctx.store.redis
    if not redis.set(key, token, nx=True, ex=120):
        raise CommentBusy(id_)
    try:
        yield
    finally:
        if redis.get(key) == token.encode():
            redis.delete(key)


def progress(ctx: TriageContext, id_: str) -> None:
    """Edit the job's comment with where it stands, at most once per interval."""
    store = ctx.store
    job = store.get(id_)
    # A watch or sentinel run has no comment of its own: its thread (a tracking issue)
    # hears when it ends.
    if job is None or job.terminal or job.watch is not None or job.sentinel is not None \
            or not _progress_due(ctx, job):
        return
    with _comment_lock(ctx, id_):
        job = store.get(id_)
        if job is None or job.terminal or not _progress_due(ctx, job):
            return
        gh = ctx.github(job.installation_id)
        body = words.progress(job, ctx.job_url(job))
        partial = store.runs.report(id_) if job.bisect else None
        if partial:
            body += "\n\n" + partial  # a bisect shows its steps as they finish
        comment_id = gh.upsert_comment(job.repo, job.number, f"job={job.id}", body,
                                       job.comment_id)
        store.set(id_, comment_id=comment_id, progress_posted_at=time.time())


def _progress_due(ctx: TriageContext, job: JobRecord) -> bool:
    last = job.progress_posted_at
    return last is None or time.time() - last >= ctx.settings.progress_interval_s


def bisect_commits(ctx: TriageContext, id_: str, run_json: str) -> None:
    """A bisect's runner asks for the commits below its bracket: read them (and the
    repo's per-commit wheel index) and leave the answer where it waits."""
    job = ctx.store.get(id_)
    if job is None or job.terminal:
        return
    gh = ctx.github(job.installation_id)
    config, problems = repo_config(ctx, gh, job.repo)
    answer_commits(gh, job, ctx.store, run_json, config.bisect.commit_index, problems)


def publish(ctx: TriageContext, id_: str) -> None:
    """The job ended: its comment becomes the report (or says why there is none)."""
    store = ctx.store
    job = store.get(id_)
    if job is None or not job.terminal or job.published:
        return
    if job.watch is not None:
        with _comment_lock(ctx, id_):
            watch.publish_run(ctx, store.require(id_))
        return
    if job.sentinel is not None:
        with _comment_lock(ctx, id_):
            sentinel.publish_run(ctx, store.require(id_))
        return
    with _comment_lock(ctx, id_):
        job = store.get(id_)
        if job is None or job.published:
            return
        gh = ctx.github(job.installation_id)
        report = store.runs.report(id_)
        if job.bisect and job.state == "done":
            report = report_with_candidates(gh, job, store) or report
        body = words.final(job, report, ctx.job_url(job))
        comment_id = gh.upsert_comment(job.repo, job.number, f"job={job.id}", body,
                                       job.comment_id)
        store.set(id_, comment_id=comment_id)
        # Labels and reactions are idempotent: a retried publish may repeat them.
        _outcome_marks(ctx, gh, job)
        store.set(id_, published=True)
    if job.outcome == "reproduced" and job.bisect is None:
        watch.start_auto(ctx, job)


def _outcome_marks(ctx: TriageContext, gh: GitHubClient, job: JobRecord) -> None:
    config, problems = repo_config(ctx, gh, job.repo)
    label = None if problems or job.outcome is None else config.outcome_label(job.outcome)
    if job.state == "failed" and not problems:
        label = config.outcome_label("error")
    if label:
        gh.add_labels(job.repo, job.number, [label])
    if job.trigger.startswith("comment-"):
        # A job that ran but whose outcome is `error` (every run failed) is no success.
        state = "failed" if job.outcome == "error" else job.state
        reaction = {"done": "rocket", "failed": "confused"}.get(state)
        if reaction:
            gh.react(job.repo, int(job.trigger.removeprefix("comment-")), reaction)
