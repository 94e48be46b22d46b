"""The sentinel on the triage side: which repositories it follows, the release feed poll
that queues a run per new release, and what a finished run does (history, flags,
tracking issues, bisects).

- `enrol`: a repository whose `.github/triagebot.toml` has `[sentinel]` cases is followed
  from the first event triagebot handles for it (the config is read then anyway).
- `poll` (the watch's beat task, once per jittered `watch_poll_s`): for each enrolled
  repo and (engine, runner kind) of its cases, the oldest release newer than the last
  one queued gets one job that runs every case of it against that last release. The
  first release seen is the baseline, never measured. The job id is made from (repo,
  engine, runner kind, release), so a repeated or concurrent tick finds the same job
  and queues nothing twice; runs queue below maintainers' commands, as watch runs do.
- `publish_run` (the runner's `publish`): each case's figures go to the history, its
  flags to `triagebot.workers.sentinel_issues` (one tracking issue per regression).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import uuid
from collections.abc import Sequence

import httpx

from triagebot.bisect import envs
from triagebot.bisect.ranges import BisectError
from triagebot.jobs.record import JobRecord, job_id
from triagebot.jobs.sentinels import SentinelStore
from triagebot.jobs.store import utc_day
from triagebot.jobs.watches import WatchStore
from triagebot.plan_model import Plan
from triagebot.repo_config import RepoConfig
from triagebot.sentinel.models import CaseFigures, SentinelCase
from triagebot.watch.feed import Release, newer_than
from triagebot.workers import sentinel_issues, task_queues
from triagebot.workers.sentinel_runner import SentinelRunSpec
from triagebot.workers.triage_facts import TriageContext, repo_config
from triagebot.workers.watch import WATCH_PRIORITY
from triagebot.workers.watch_feed import Feeds, next_poll_s

log = logging.getLogger(__name__)


def store_of(ctx: TriageContext) -> SentinelStore:
    return SentinelStore(ctx.store.redis, ctx.settings.namespace)


def enrol(ctx: TriageContext, repo: str, installation_id: int | None,
          config: RepoConfig) -> None:
    if config.sentinel.auto:
        store_of(ctx).enrol(repo, installation_id)


def cases_of(config: RepoConfig) -> list[SentinelCase]:
    """The repo's standing cases (its own list, else the engine's defaults)."""
    from triagebot.sentinel.cases import matrix

    return [c for engine in config.sentinel.engines for c in matrix(config.sentinel, engine)]


def groups(cases: Sequence[SentinelCase]) -> dict[tuple[str, str], list[SentinelCase]]:
    """The cases by (engine, runner kind): one job per release and group."""
    out: dict[tuple[str, str], list[SentinelCase]] = {}
    for case in cases:
        out.setdefault((case.engine, case.runner), []).append(case)
    return out


def poll(ctx: TriageContext, client: httpx.Client | None = None) -> int:
    """One beat tick: when a poll is due, read the feeds and queue the runs; returns how
    many runs it queued."""
    sentinels = store_of(ctx)
    if not sentinels.repos() or not sentinels.poll_due(
            next_poll_s(ctx.settings.watch_poll_s, random.Random())):
        return 0
    watches = WatchStore(ctx.store.redis, ctx.settings.namespace)
    queued = 0
    # A client the caller gives stays the caller's to close.
    with contextlib.nullcontext(client) if client else httpx.Client(timeout=30) as http:
        feeds = Feeds(watches, http)
        for repo, installation in sentinels.repos().items():
            config, problems = repo_config(ctx, ctx.github(installation), repo)
            if problems or not config.sentinel.auto:
                if not problems:
                    sentinels.drop(repo)
                continue
            for (engine, runner), cases in groups(cases_of(config)).items():
                try:
                    package = envs.package_for(engine, runner)
                except BisectError as exc:
                    log.warning("sentinel %s: no release feed for %s on %s: %s", repo,
                                engine, runner, exc)
                    continue
                releases = feeds.with_nightlies(ctx.settings.watch_index, package,
                                                config.sentinel.nightly_index or "")
                queued += advance(ctx, repo, installation, config, cases, releases)
    return queued


def advance(ctx: TriageContext, repo: str, installation: int | None, config: RepoConfig,
            cases: list[SentinelCase], releases: Sequence[Release]) -> int:
    """Queue the oldest release newer than the last one queued; 1 if queued."""
    if not releases:
        return 0
    sentinels = store_of(ctx)
    engine, runner = cases[0].engine, cases[0].runner
    last = sentinels.last(repo, engine, runner)
    if last is None:
        # The newest release now is where the sentinel starts: nothing before it runs.
        sentinels.baseline(repo, engine, runner, releases[-1].version)
        return 0
    pending = newer_than(releases, last)
    if not pending:
        return 0
    cap = config.sentinel.runner_minutes_per_day
    if sentinels.minutes(repo, utc_day()) >= cap:
        log.info("sentinel %s: today's runner minutes ([sentinel] runner_minutes_per_day = "
                 "%d) are spent; %s waits", repo, cap, pending[0].version)
        return 0
    release = pending[0]
    nightly = "dev" in release.version  # installed from the index it was listed in
    spec = SentinelRunSpec(engine=engine, runner=runner, release=release.version,
                           previous=last, date=release.date, cases=cases,
                           margin=config.sentinel.margin(),
                           index=(config.sentinel.nightly_index or "") if nightly else "")
    # Exactly once without a claim of its own: the job's id is made from what it runs,
    # so a second caller (a repeated tick, a second beat) finds the same job, and
    # `queue` sends it once; a caller that died before sending leaves it to the next.
    sent = queue(ctx, repo, installation, spec)
    sentinels.set_last(repo, engine, runner, release.version)
    return sent


def queue(ctx: TriageContext, repo: str, installation: int | None,
          spec: SentinelRunSpec) -> int:
    """Create the run's job (once: its id is derived from what it runs) and send it."""
    words = f"{spec.engine} {spec.release} {spec.previous} {spec.runner}"
    plan_hash = hashlib.sha256(f"sentinel\x1f{repo.lower()}\x1f{words}".encode()).hexdigest()
    plan = Plan(plan_hash=plan_hash, engine=spec.engine, engine_version=spec.release,
                gpu_kind=spec.runner, question=f"sentinel: {words}", cells=[])
    trigger = f"sentinel-{spec.engine}-{spec.release}-{spec.runner}"
    record = JobRecord(
        id=job_id(ctx.settings.link_key, repo, 0, trigger, plan_hash),
        repo=repo, number=0, installation_id=installation, trigger=trigger,
        requester=ctx.settings.bot_login,
        command=f"sentinel {spec.engine} {spec.release} against {spec.previous} on "
                f"{spec.runner} ({len(spec.cases)} cases)",
        plan_hash=plan_hash, gpu_kind=spec.runner, cells=len(spec.cases),
        margin=spec.margin, sentinel=spec.model_dump_json())
    created = ctx.store.create(record, plan, None)
    job = created.job
    if job.state != "queued" or job.enqueued:
        return 0
    with ctx.store.runs.claimed("sentinel-enqueue", job.id) as ours:
        if not ours or ctx.store.require(job.id).enqueued:
            return 0
        ctx.celery.send_task(task_queues.RUN_JOB, args=[job.id],
                             queue=ctx.settings.queue_for(spec.runner),
                             task_id=f"sentinel-{job.id}-{uuid.uuid4().hex[:8]}",
                             priority=WATCH_PRIORITY, ignore_result=True)
        ctx.store.set(job.id, enqueued=True)
    return 1


# --- a finished run ----------------------------------------------------------------------


def publish_run(ctx: TriageContext, job: JobRecord) -> None:
    """Each case's figures into the history, each flag to its tracking issue; safe to
    repeat (a retried publish records, counts and posts nothing twice)."""
    if job.sentinel is None or not job.terminal:
        return
    from triagebot.sentinel.flags import flags_for

    spec = SentinelRunSpec.model_validate_json(job.sentinel)
    sentinels = store_of(ctx)
    counted = ctx.settings.key("sentinel-minutes-counted", job.id)
    if job.started_at and job.finished_at and ctx.store.redis.set(counted, 1, nx=True,
                                                                  ex=30 * 24 * 3600):
        # Once per run, however often it is published: `[sentinel]
        # runner_minutes_per_day` holds the next releases back once today's are spent.
        sentinels.add_minutes(job.repo, utc_day(), (job.finished_at - job.started_at) / 60)
    stored = sentinels.cases(job.id)
    cases = {c.case_id: c for c in spec.cases}
    config, problems = repo_config(ctx, ctx.github(job.installation_id), job.repo)
    history = sentinel_issues.history_of(ctx, config)
    url = ctx.job_url(job)
    for case_id, raw in sorted(stored.items()):
        figures = CaseFigures.model_validate_json(raw).model_copy(update={"job_url": url})
        flags = flags_for(figures, spec.margin)
        # The history replaces a release's figures and keeps a flag's answer, so a
        # repeated publish writes the same rows again, never new ones.
        history.record(figures, flags)
        drift = [f for f in history.drift_flags(case_id) if f.release == figures.release]
        if drift:
            history.record(figures, [*flags, *drift])
        case = cases.get(case_id)
        if case is None:
            continue
        for flag in [*flags, *drift]:
            sentinels.count_flag(job.repo, case_id, flag.kind, flag.release)
            sentinel_issues.track(ctx, job, config if not problems else None, case, flag,
                                  figures)
    ctx.store.set(job.id, published=True)
