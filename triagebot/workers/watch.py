"""Watches on the triage side: starting and stopping them, the release feed poll that
beat drives, and what a finished watch run tells each thread.

- `start` / `stop` apply `@triagebot watch|unwatch`; a closed issue pauses its watch
  and a reopened one resumes it (`thread_closed`). The watch copies from the report's
  job what its runs need: the parsed report, the repro command's words, the comparison
  that decided it (`watch.steps.deciding_comparison`) and the release it ran.
- `poll` (Celery beat, 4 times per `watch_poll_s`; it polls once per jittered interval, however
  many beats tick) reads each watched engine's PEP 691 feed with a conditional request,
  and for each active watch claims the oldest release newer than its last one (`SET NX`
  per thread and release: exactly once) and queues its run. One run per (repo, plan,
  release, runner kind) serves every thread that needs it; runs queue below
  maintainers' commands (a lower broker priority).
- `publish_run` turns a finished run into each subscribed thread's row: the sticky
  comment gains the Watch table, a change of state gets one new comment that mentions
  the reporter with the evidence, labels mark fixed and back. triagebot never closes or
  reopens an issue. A failed run gives its claim back; the next poll retries it, and the
  table shows the failure meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Sequence

import httpx

from triagebot.analyze.findings_models import Findings
from triagebot.bisect import envs
from triagebot.bisect.ranges import BisectError
from triagebot.decisions import replies as words
from triagebot.decisions.actions import StartWatch
from triagebot.errors import PlanRejected
from triagebot.github.client import GitHubClient
from triagebot.github.events import ThreadEvent
from triagebot.jobs.record import JobRecord, job_id
from triagebot.jobs.store import utc_day
from triagebot.jobs.watches import WatchRecord, WatchStore
from triagebot.overrides import parse_overrides
from triagebot.repo_config import WatchConfig
from triagebot.report.markdown import inline
from triagebot.report.watch import render_watch
from triagebot.request_model import ReproRequest
from triagebot.run.watch_steps import StepContext, WatchSettings, plan_at
from triagebot.watch.feed import Release, newer_than
from triagebot.watch.models import STATE_WORDS, Reading, WatchRow, WatchRunSpec
from triagebot.watch.states import direction_of, judge, stop_after
from triagebot.watch.steps import deciding_comparison, ratio_of, refused, step_plan
from triagebot.workers import task_queues
from triagebot.workers.runner_watch import reading_key
from triagebot.workers.triage_facts import TriageContext, repo_config
from triagebot.workers.watch_feed import Feeds, next_poll_s

log = logging.getLogger(__name__)

# Broker priority of a watch run: on Redis a queue's messages sit in one list per
# priority step (0, 3, 6, 9) and a worker empties the lower ones first, so a repro (0,
# the default) waiting on the same runner is served before any watch run.
WATCH_PRIORITY = 9
LABELS = {"fixed": "perf-watch: fixed", "back": "perf-watch: back"}
# Tries a watch run gets (a run is lost with its worker, or fails) before its row stays
# failed and the watch moves on to the next release.
MAX_ATTEMPTS = 3


def store_of(ctx: TriageContext) -> WatchStore:
    return WatchStore(ctx.store.redis, ctx.settings.namespace)


def start_auto(ctx: TriageContext, job: JobRecord) -> None:
    """`[watch] auto`: a report that reproduced is watched on its own runner."""
    gh = ctx.github(job.installation_id)
    config, problems = repo_config(ctx, gh, job.repo)
    engine = ctx.store.plan(job.id).engine
    if problems or not config.watch.auto or not config.watch.watches(engine):
        return
    watches = store_of(ctx)
    rec = watches.get(job.repo, job.number)
    if rec is not None and rec.status != "stopped":
        return  # watched already (a retried publish, or an earlier report's watch)
    # The thread hears either way, in one comment of the job's own (a retried publish
    # edits it).
    name = ctx.settings.command_name
    threads = watches.active_in(job.repo)
    if threads >= config.watch.max_threads:
        log.info("watch %s: not started, [watch] max_threads is reached", job.thread)
        text = (f"Not watched across releases: this repository's `[watch] max_threads` is "
                f"{config.watch.max_threads} and {threads} threads are watched already "
                f"(`[watch] auto` would have started one here). `@{name} unwatch` on one "
                f"of them makes room; `@{name} watch` here then starts it.")
    else:
        thread = gh.read_thread(job.repo, job.number)
        text = start(ctx, StartWatch(job_id=job.id, engine=engine, gpu=job.gpu_kind),
                     thread.author, ctx.settings.bot_login)
        text = f"`[watch] auto` is on here. {text}"
    gh.upsert_comment(job.repo, job.number, f"watchauto={job.id}", text)


def start(ctx: TriageContext, action: StartWatch, reporter: str, started_by: str) -> str:
    """Record the watch; the reply section says what it follows and how to end it."""
    store = ctx.store
    job = store.require(action.job_id)
    plan, request = store.plan(job.id), store.request(job.id) or ReproRequest()
    raw = store.runs.findings(job.id)
    findings = Findings.model_validate(raw) if raw else None
    if findings is None:
        return "The report's findings have expired, so there is nothing to watch from."
    comparison = deciding_comparison(findings, request.symptom)
    result = next(c.result for c in findings.comparisons if c.name == comparison)
    ratio = ratio_of(result)
    record = WatchRecord(
        repo=job.repo, number=job.number, installation_id=job.installation_id,
        private=job.private, engine=action.engine or plan.engine, runner=action.gpu,
        reporter=reporter, started_by=started_by, job_id=job.id,
        comment_id=job.comment_id, request=request.model_dump_json(),
        words=tuple(job.command.split()[1:]), margin=job.margin, comparison=comparison,
        direction=direction_of(request.symptom, ratio), last=plan.engine_version,
        started_at=time.time())
    if not store_of(ctx).start(record):
        return "This thread is watched already."
    package = envs.package_for(record.engine, record.runner)
    name = ctx.settings.command_name
    return (f"Watching `{comparison}` (at {plan.engine_version}: "
            f"{ratio.value or 0:.2f}x) on every new `{package}` release: each is measured "
            f"against the last release measured, side by side in one job on the "
            f"`{record.runner}` runner, and this thread hears when the state changes. "
            f"`@{name} unwatch` ends it; closing the issue pauses it.")


def stop(ctx: TriageContext, repo: str, number: int) -> None:
    store_of(ctx).set_status(repo, number, "stopped")


def thread_closed(ctx: TriageContext, event: ThreadEvent) -> None:
    """A closed issue pauses its watch; reopened, it resumes (a stopped one stays so)."""
    watches = store_of(ctx)
    rec = watches.get(event.repo, event.number)
    if rec is None or rec.status == "stopped":
        return
    watches.set_status(event.repo, event.number,
                       "paused" if event.action == "closed" else "active")


# --- the feed ----------------------------------------------------------------------------


def poll(ctx: TriageContext, client: httpx.Client | None = None, today: str = "") -> int:
    """One beat tick: when a poll is due, read the feeds and queue the runs; returns how
    many runs it queued. `today` (YYYYMMDD, UTC; default: now) is the day whose runner
    minutes a run spends."""
    import random

    settings = ctx.settings
    watches = store_of(ctx)
    every = next_poll_s(settings.watch_poll_s, random.Random())
    if not watches.poll_due(every):
        return 0
    queued = 0
    # A client the caller gives stays the caller's to close.
    with contextlib.nullcontext(client) if client else httpx.Client(timeout=30) as http:
        feeds = Feeds(watches, http)
        for engine in watches.engines():
            for rec in watches.watching(engine):
                queued += _advance(ctx, watches, rec, feeds, today or utc_day())
    return queued


def _releases(ctx: TriageContext, feeds: Feeds, rec: WatchRecord, config: WatchConfig
              ) -> tuple[list[Release], str]:
    """The releases of the watch's package, and its nightlies where the repo follows
    them (oldest first), with the index the nightlies came from ("" for none)."""
    try:
        package = envs.package_for(rec.engine, rec.runner)
    except BisectError as exc:
        log.warning("watch %s: no release feed: %s", rec.thread, exc)
        return [], ""
    index = (config.nightly_index or ctx.settings.watch_index) if config.nightlies else ""
    return feeds.with_nightlies(ctx.settings.watch_index, package, index), index


def _advance(ctx: TriageContext, watches: WatchStore, rec: WatchRecord, feeds: Feeds,
             today: str) -> int:
    """Queue the run of the oldest release (or nightly, where the repo follows them) the
    watch has not measured; 1 if queued."""
    gh = ctx.github(rec.installation_id)
    config, problems = repo_config(ctx, gh, rec.repo)
    cfg = config.watch
    if problems or not cfg.watches(rec.engine):
        return 0
    releases, nightly_index = _releases(ctx, feeds, rec, cfg)
    if stop_after(rec.rows, cfg.stop_after_fixed):
        watches.set_status(rec.repo, rec.number, "stopped")
        return 0
    done = {r.release for r in rec.rows if r.state != "inconclusive"
            or rec.attempts.get(r.release, 0) >= MAX_ATTEMPTS}
    pending = [r for r in newer_than(releases, rec.last or "0") if r.version not in done]
    if not pending:
        return 0
    spent = watches.minutes(rec.repo, today)
    if spent >= cfg.runner_minutes_per_day:
        # The release waits, shown on the thread, and runs on the first day with minutes.
        note = (f"{pending[0].version} waits: the repository's runner minutes for today "
                f"(UTC) are spent ({spent:.0f} of `[watch] runner_minutes_per_day` = "
                f"{cfg.runner_minutes_per_day}); it runs on the next day's poll.")
        log.info("watch %s: %s", rec.thread, note)
        if note != rec.waiting:
            now = watches.change(rec.thread, waiting=note)
            if now is not None:
                _sticky(ctx, gh, now)
        return 0
    if not watches.claim(rec.thread, pending[0].version):
        return 0
    if rec.waiting:
        watches.change(rec.thread, waiting="")
    index = nightly_index if "dev" in pending[0].version else ""
    try:
        return _queue(ctx, watches, rec, pending[0], index)
    except Exception:
        watches.unclaim(rec.thread, pending[0].version)  # the next tick tries again
        raise


def _queue(ctx: TriageContext, watches: WatchStore, rec: WatchRecord, release: Release,
           index: str) -> int:
    request = ReproRequest.model_validate_json(rec.request)
    options = parse_overrides(list(rec.words)).model_copy(update={"gpu": rec.runner})
    step = StepContext(request=request, options=options,
                       settings=WatchSettings(out_dir=ctx.settings.data_dir))
    try:
        new = plan_at(step, release.version)
        old = plan_at(step, rec.last) if rec.last else None
        plan = step_plan(new, old, rec.comparison)
    except PlanRejected as exc:
        _tell(ctx, watches, rec, refused(exc, release.version, rec.last), release.date, "",
              ran=False)
        return 0
    attempt = rec.attempts.get(release.version, 0)
    spec = WatchRunSpec(release=release.version, against=rec.last, comparison=rec.comparison,
                        direction=rec.direction, date=release.date, index=index)
    trigger = f"watch-{release.version}-{rec.runner}-{attempt}"
    record = JobRecord(
        id=job_id(ctx.settings.link_key, rec.repo, 0, trigger, plan.plan_hash),
        repo=rec.repo, number=rec.number, installation_id=rec.installation_id,
        private=rec.private, trigger=trigger, requester=ctx.settings.bot_login,
        command=f"watch {release.version} against {rec.last or '-'}",
        plan_hash=plan.plan_hash, gpu_kind=rec.runner, cells=len(plan.cells),
        estimated_s=plan.estimated_seconds, margin=rec.margin,
        watch=spec.model_dump_json())
    created = ctx.store.create(record, plan, request)
    watches.subscribe(created.job.id, rec.thread)
    if created.status == "created":
        ctx.celery.send_task(task_queues.RUN_JOB, args=[created.job.id],
                             queue=ctx.settings.queue_for(rec.runner),
                             task_id=f"watch-{created.job.id}-{uuid.uuid4().hex[:8]}",
                             priority=WATCH_PRIORITY, ignore_result=True)
        ctx.store.set(created.job.id, enqueued=True)
        return 1
    if created.job.terminal:  # another thread's run of this release already ended
        publish_run(ctx, created.job)
    return 0


# --- a finished run ----------------------------------------------------------------------


def publish_run(ctx: TriageContext, job: JobRecord) -> None:
    """Each subscribed thread's row from the run's reading (or its failure)."""
    if job.watch is None or not job.terminal:
        return
    spec = WatchRunSpec.model_validate_json(job.watch)
    watches = store_of(ctx)
    raw = ctx.store.redis.get(reading_key(ctx.settings, job.id))
    reading = Reading.model_validate_json(raw) if raw and job.state == "done" else None
    if job.started_at and job.finished_at:
        with ctx.store.runs.claimed("watch-minutes", job.id, ttl_s=30 * 24 * 3600) as ours:
            if ours:
                watches.add_minutes(job.repo, utc_day(),
                                    (job.finished_at - job.started_at) / 60)
    for thread in watches.subscribers(job.id):
        repo, _, number = thread.rpartition("#")
        rec = watches.get(repo, int(number))
        if rec is None or rec.status == "stopped":
            continue
        if reading is not None:
            _tell(ctx, watches, rec, reading, spec.date, ctx.job_url(job),
                  ran=not (reading.crash or reading.invalid))
            continue
        tries = watches.give_back(thread, spec.release, job.error or job.state)
        left = MAX_ATTEMPTS - tries
        again = (f"it runs again on the next poll ({left} tr{'y' if left == 1 else 'ies'} "
                 "left)" if left > 0 else "no tries are left")
        failed = Reading(release=spec.release, against=spec.against,
                         comparison=spec.comparison, ratio=None)
        row = WatchRow(release=spec.release, against=spec.against, date=spec.date,
                       comparison=spec.comparison, state="inconclusive",
                       reason=f"the watch run {job.state} ({job.error or 'no reason'}); "
                              f"{again}", job_url=ctx.job_url(job))
        _write(ctx, watches, rec, row, failed, ran=False)
    ctx.store.set(job.id, published=True)


def _tell(ctx: TriageContext, watches: WatchStore, rec: WatchRecord, reading: Reading,
          date: str, url: str, *, ran: bool) -> None:
    state, reason = judge(reading, rec.rows, rec.direction)
    row = WatchRow(release=reading.release, against=reading.against, date=date,
                   comparison=rec.comparison, ratio=reading.ratio, change=reading.change,
                   state=state, reason=reason, job_url=url)
    _write(ctx, watches, rec, row, reading, ran=ran)


def _write(ctx: TriageContext, watches: WatchStore, rec: WatchRecord, row: WatchRow,
           reading: Reading, *, ran: bool) -> None:
    before = _standing(rec.rows)
    now = watches.put_row(rec.thread, row, ran=ran)
    if now is None:
        return
    gh = ctx.github(rec.installation_id)
    _sticky(ctx, gh, now)
    if row.state != "inconclusive" and row.state != before:
        gh.upsert_comment(rec.repo, rec.number, f"watchstate={row.release}",
                          _change_comment(ctx, now, row, before))
        if row.state in LABELS:
            gh.add_labels(rec.repo, rec.number, [LABELS[row.state]])
    config, problems = repo_config(ctx, gh, rec.repo)
    if not problems and stop_after(now.rows, config.watch.stop_after_fixed):
        watches.set_status(rec.repo, rec.number, "stopped")


def _standing(rows: Sequence[WatchRow]) -> str:
    """The state the thread stands in: its last row that says something, else the
    report's own (reproduced)."""
    return next((r.state for r in reversed(rows) if r.state != "inconclusive"), "reproduced")


def _sticky(ctx: TriageContext, gh: GitHubClient, rec: WatchRecord) -> None:
    """The report's comment with the Watch table under it; where the report's job has
    expired, a comment of the watch's own holds the table."""
    table = render_watch(rec.rows, rec.comparison, waiting=rec.waiting)
    job = ctx.store.get(rec.job_id) if rec.job_id else None
    if job is not None:
        body = words.final(job, ctx.store.runs.report(job.id), ctx.job_url(job))
        comment_id = gh.upsert_comment(rec.repo, rec.number, f"job={job.id}",
                                       f"{body}\n\n{table}", job.comment_id)
        ctx.store.set(job.id, comment_id=comment_id)
        return
    gh.upsert_comment(rec.repo, rec.number, f"watch={rec.number}", table, rec.comment_id)


def _change_comment(ctx: TriageContext, rec: WatchRecord, row: WatchRow, before: str) -> str:
    name = ctx.settings.command_name
    link = f" ([job]({row.job_url}))" if row.job_url else ""
    text = (f"@{rec.reporter} the watch on `{rec.comparison}` changed from "
            f"**{STATE_WORDS[before]}** to **{row.words}** at {inline(row.release, 40)}: "
            f"{inline(row.reason, 600)}{link}.")
    if row.state == "fixed":
        text += (" If this matches what you see, the issue can be closed; triagebot does "
                 "not close issues itself.")
    elif row.state == "back":
        text += " It had been fixed before."
    return text + f"\n\n`@{name} unwatch` stops these updates."
