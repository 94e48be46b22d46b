"""The sentinel's tracking issues: one per regression (case and flag kind), never two.

A flag first writes the regression's tracking record (`SET NX`); the one caller that
wrote it opens the issue under a claim and names it in the record. Any other caller
(a repeated publish, a second worker, a later release) adds its row to the record and,
once the issue is named, rewrites the issue body (the sticky part) and, for a release
the issue has not heard of, comments once. A caller that finds the record with no issue
while the opener's claim is held retries shortly (`TrackBusy`); once the claim lapsed (the
opener died between opening and naming it), it looks the issue up by its marker before
opening one. A flagged case also queues the bisect between the two releases on the
tracking issue (its job id is made from the range, so it is queued once).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import uuid
from collections.abc import Sequence
from typing import Protocol

from triagebot.bisect.spec import BisectSpec
from triagebot.github.client import GitHubClient
from triagebot.jobs.record import Created, JobRecord, job_id
from triagebot.jobs.sentinels import SentinelStore, TrackRecord, false_positive_rate
from triagebot.jobs.store_keys import text_of
from triagebot.overrides import parse_overrides
from triagebot.plan import build_plan
from triagebot.repo_config import RepoConfig
from triagebot.report.sentinel import LABEL, TrackRow, change_comment, issue_body, title
from triagebot.request_model import ReproRequest
from triagebot.sentinel.cases import overrides
from triagebot.sentinel.models import CaseFigures, Flag, SentinelCase
from triagebot.workers import task_queues
from triagebot.workers.triage_facts import TriageContext, repo_config

log = logging.getLogger(__name__)
# How long an opener holds its claim: past it, a caller that finds no issue named
# takes over (looking for the issue by its marker first).
OPEN_CLAIM_S = 60
_MODES = {"eager": "eager", "graph": "cudagraph"}


class TrackBusy(Exception):
    """Another task is opening this regression's issue; try again in a moment."""


class HistoryStore(Protocol):
    """What the App writes to the sentinel's history (`triagebot.sentinel.history`)."""

    def record(self, figures: CaseFigures, flags: Sequence[Flag] = ()) -> object: ...

    def drift_flags(self, case_id: str) -> list[Flag]: ...

    def mark_not_regression(self, case_id: str, release: str, by: str) -> object: ...


@functools.cache
def _history(url: str) -> HistoryStore:
    from triagebot.sentinel.history import History

    return History(url)


def history_of(ctx: TriageContext, config: RepoConfig | None) -> HistoryStore:
    """The history the repo's figures go to: its `[sentinel] database`, else SQLite in
    the service's data folder."""
    url = config.sentinel.database if config is not None else None
    if not url:
        ctx.settings.data_dir.mkdir(parents=True, exist_ok=True)
        url = f"sqlite:///{ctx.settings.data_dir / 'sentinel.db'}"
    return _history(url)


def store_of(ctx: TriageContext) -> SentinelStore:
    return SentinelStore(ctx.store.redis, ctx.settings.namespace)


def marker_key(case_id: str, kind: str) -> str:
    return "sentinel=" + hashlib.sha256(f"{case_id}\x1f{kind}".encode()).hexdigest()[:24]


def track(ctx: TriageContext, job: JobRecord, config: RepoConfig | None, case: SentinelCase,
          flag: Flag, figures: CaseFigures) -> None:
    """The flag's tracking issue opened, or told of this release; its bisect queued."""
    sentinels = store_of(ctx)
    repo = (config.sentinel.tracking_repo if config and config.sentinel.tracking_repo
            else job.repo)
    row = TrackRow(release=flag.release, previous=flag.previous, reason=flag.reason,
                   job_url=figures.job_url or "")
    fresh = TrackRecord(repo=repo, source=job.repo, case_id=case.case_id, kind=flag.kind,
                        installation_id=job.installation_id, rows=(row,),
                        flagged=(flag.release,))
    gh = ctx.github(job.installation_id)
    if not sentinels.open_track(fresh):
        rec = sentinels.update_track(repo, case.case_id, flag.kind, lambda r: r.model_copy(
            update={"rows": _with_row(r.rows, row),
                    "flagged": tuple(dict.fromkeys([*r.flagged, flag.release]))}))
        assert rec is not None
        if rec.number is None:
            _open(ctx, gh, rec, (case, flag, figures), config, opener=False)
            return
        _bisect(ctx, rec, case, flag, config)
        rec = sentinels.track(repo, case.case_id, flag.kind) or rec
        assert rec.number is not None
        gh.edit_issue_body(repo, rec.number, marker_key(case.case_id, flag.kind),
                           _body(ctx, rec, case, flag, figures))
        if rec.rows[0].release != flag.release:  # a later release: one comment for it
            last = next(r for r in rec.rows if r.release == flag.release)
            key = "sentinelrow=" + hashlib.sha256(
                f"{case.case_id}\x1f{flag.kind}\x1f{flag.release}".encode()).hexdigest()[:24]
            gh.upsert_comment(repo, rec.number, key, change_comment(case, flag, last))
        return
    _open(ctx, gh, fresh, (case, flag, figures), config, opener=True)


def _with_row(rows: tuple[TrackRow, ...], row: TrackRow) -> tuple[TrackRow, ...]:
    """`row` replacing the one of its release (its bisect link kept), else appended."""
    old = next((r for r in rows if r.release == row.release), None)
    if old is not None:
        row = row.model_copy(update={"bisect_url": old.bisect_url or row.bisect_url,
                                     "bisect_note": old.bisect_note or row.bisect_note})
        return tuple(row if r.release == row.release else r for r in rows)
    return (*rows, row)


def _open(ctx: TriageContext, gh: GitHubClient, rec: TrackRecord,
          what: tuple[SentinelCase, Flag, CaseFigures], config: RepoConfig | None, *,
          opener: bool) -> None:
    """Open the issue under the claim (found by its marker first where an opener may
    have died after opening it), then name it in the record."""
    case, flag, figures = what
    sentinels = store_of(ctx)
    key = marker_key(case.case_id, flag.kind)
    with ctx.store.runs.claimed("sentinel-open", rec.repo.lower(), key,
                                ttl_s=OPEN_CLAIM_S) as ours:
        if not ours:
            raise TrackBusy(f"{rec.repo}: {case.case_id} {flag.kind}")
        now = sentinels.track(rec.repo, rec.case_id, rec.kind) or rec
        if now.number is not None:
            return
        number = None if opener else gh.find_issue(rec.repo, LABEL, key)
        if number is None:
            number = gh.open_issue(rec.repo, title(case, flag), key,
                                   _body(ctx, now, case, flag, figures), LABEL)
        sentinels.name_issue(now, number)
    rec = sentinels.track(rec.repo, rec.case_id, rec.kind) or now
    _bisect(ctx, rec, case, flag, config)
    rec = sentinels.track(rec.repo, rec.case_id, rec.kind) or rec
    gh.edit_issue_body(rec.repo, number, key, _body(ctx, rec, case, flag, figures))


def _body(ctx: TriageContext, rec: TrackRecord, case: SentinelCase, flag: Flag,
          figures: CaseFigures) -> str:
    return issue_body(case, flag, figures, rec.rows, command_name=ctx.settings.command_name,
                      marked_by=rec.not_regression, source=rec.source or rec.repo)


def request_for(case: SentinelCase, release: str) -> ReproRequest:
    """The question a step of the bisect asks: the case's method against no speculation
    under its modes, at one release."""
    return ReproRequest(
        in_scope=True, is_spec_decode_perf_report=True, engine=case.engine,
        engine_version=release, models=[case.model],
        draft_models=[case.draft] if case.draft else [], spec_method=case.method,
        num_speculative_tokens=[case.k],
        modes_compared=["spec", "no_spec", *(_MODES[m] for m in case.modes)],
        symptom="spec_slower_than_baseline")


def _bisect(ctx: TriageContext, rec: TrackRecord, case: SentinelCase, flag: Flag,
            config: RepoConfig | None) -> None:
    """Queue the bisect between the flag's two releases on the tracking issue, once, and
    link it from the release's row (or say why there is none)."""
    row = next((r for r in rec.rows if r.release == flag.release), None)
    if row is None or rec.number is None or row.bisect_url or row.bisect_note \
            or flag.previous is None:
        return
    note, url = "", ""
    # One bisect per case and range, whichever of its flags asks first: the others link
    # it (their issues are about the same two releases of the same case).
    shared = ctx.settings.key("sentinel-bisect", rec.repo.lower(), case.case_id,
                              flag.previous, flag.release)
    try:
        request = request_for(case, flag.release)
        words = [*overrides(case), f"version={flag.release}"]
        plan = build_plan(request, parse_overrides(words))
        spec = BisectSpec(good=flag.previous, bad=flag.release, overrides=[f"gpu={case.runner}"])
        command = f"bisect good={flag.previous} bad={flag.release} gpu={case.runner}"
        record = JobRecord(
            id=job_id(ctx.settings.link_key, rec.repo, rec.number,
                      f"sentinel-bisect-{case.case_id}", command),
            repo=rec.repo, number=rec.number, installation_id=rec.installation_id,
            trigger=f"sentinel-{flag.kind}", requester=ctx.settings.bot_login,
            command=command, plan_hash=plan.plan_hash, gpu_kind=case.runner,
            cells=len(plan.cells), estimated_s=plan.estimated_seconds,
            bisect=spec.model_dump_json())
        ctx.store.redis.set(shared, record.id, nx=True)
        first = ctx.store.redis.get(shared)
        found = ctx.store.get(text_of(first)) if first else None
        created = (ctx.store.create(record, plan, request) if found is None
                   or found.id == record.id else Created(status="duplicate", job=found))
        url = ctx.job_url(created.job)
        if created.status == "created":
            ctx.celery.send_task(task_queues.RUN_JOB, args=[created.job.id],
                                 queue=ctx.settings.queue_for(case.runner),
                                 task_id=f"job-{created.job.id}-{uuid.uuid4().hex[:8]}",
                                 ignore_result=True)
            ctx.store.set(created.job.id, enqueued=True)
        if config is None or not config.bisect.commit_index:
            note = ("releases, then nightlies; no commit steps: the repository's config "
                    "names no per-commit wheels (its bisect commit index)")
    except Exception as exc:  # a plan the case cannot make is said, never a crash
        log.warning("sentinel %s: no bisect for %s: %s", rec.repo, case.case_id, exc)
        note = f"not started: {type(exc).__name__}: {str(exc)[:200]}"
    store_of(ctx).update_track(rec.repo, rec.case_id, rec.kind, lambda r: r.model_copy(
        update={"rows": tuple(x.model_copy(update={"bisect_url": url, "bisect_note": note})
                              if x.release == flag.release else x for x in r.rows)}))


def mark_not_regression(ctx: TriageContext, repo: str, number: int, by: str) -> str:
    """`@triagebot not-a-regression` on a tracking issue: counted once per flagged
    release, written to the history, and the body says who marked it."""
    sentinels = store_of(ctx)
    rec = sentinels.track_of_issue(repo, number)
    if rec is None:
        return "This thread is not a sentinel tracking issue."
    new = sentinels.count_not_regression(rec.repo, rec.case_id, rec.kind, rec.flagged)
    sentinels.update_track(rec.repo, rec.case_id, rec.kind, lambda r: r.model_copy(
        update={"not_regression": tuple(dict.fromkeys([*r.not_regression, by]))}))
    if new:
        config, problems = repo_config(ctx, ctx.github(rec.installation_id),
                                       rec.source or rec.repo)
        history = history_of(ctx, None if problems else config)
        for release in rec.flagged:
            history.mark_not_regression(rec.case_id, release, by)
    flags, marked = sentinels.counts()
    rate = false_positive_rate(flags, marked)
    from triagebot.report.sentinel import not_regression_reply

    log.info("sentinel %s#%d marked not a regression by %s (rate %s)", repo, number, by, rate)
    return not_regression_reply(new, flags, marked)
