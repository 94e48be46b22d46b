"""A sentinel run as a job of the GitHub App, on the runner side.

The triage side (`triagebot.workers.sentinel`) makes the job: its record carries a
`SentinelRunSpec` (the release, the one it is measured against, the cases of one runner
kind). It runs here under the job's lock and heartbeat like any repro: each case in turn
through `triagebot.run.sentinel_steps.run_case` (new and previous release side by side in
one job), each case's figures stored as soon as it ends, so a worker killed mid-run
resumes with the next case and never measures a finished one twice. The triage side
turns the figures into history rows, flags and tracking issues.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from pydantic import Field

from triagebot.frozen import Frozen
from triagebot.jobs.record import JobRecord
from triagebot.jobs.sentinels import SentinelStore
from triagebot.jobs.store import JobStore
from triagebot.progress import Event
from triagebot.report.sentinel import verdict_table
from triagebot.run.orchestrate import RunCancelled
from triagebot.run.provision import ProvisionError, provision
from triagebot.run.runners import run_profile_for
from triagebot.run.sentinel_steps import SentinelContext, run_case
from triagebot.run.watch_steps import WatchSettings
from triagebot.sentinel.models import CaseFigures, SentinelCase
from triagebot.settings import Settings


class SentinelRunSpec(Frozen):
    """What one sentinel job runs, fixed when it was queued."""

    engine: str
    runner: str
    release: str
    previous: str
    date: str = ""
    cases: list[SentinelCase] = Field(min_length=1)
    margin: float = Field(default=0.05, gt=0.0, le=0.5)
    index: str = ""  # the package index a nightly `release` installs from


class SentinelHost(Protocol):
    settings: Settings
    store: JobStore

    def publish(self, id_: str) -> None: ...


def run_sentinel_job(host: SentinelHost, id_: str, job: JobRecord, stop: Callable[[], bool],
                     progress: Callable[[Event], None]) -> None:
    """Run (or resume) every case of the release; raises RunCancelled on cancel."""
    assert job.sentinel is not None
    store, settings = host.store, host.settings
    spec = SentinelRunSpec.model_validate_json(job.sentinel)
    sentinels = SentinelStore(store.redis, settings.namespace)
    done = sentinels.cases(id_)
    ctx = step_context(settings, id_, spec.margin)
    broken = installed(settings, spec) if len(done) < len(spec.cases) else None
    def log(line: str) -> None:
        store.set(id_, current=line[:300])

    for number, case in enumerate(spec.cases, 1):
        if case.case_id in done:
            continue
        if stop():
            raise RunCancelled(f"stopped before case {case.case_id}")
        store.set(id_, current=f"case {number}/{len(spec.cases)}: {case.case_id}",
                  runs_done=number - 1, runs_planned=len(spec.cases))
        try:
            figures = broken.model_copy(update={"case_id": case.case_id}) if broken \
                else run_case(ctx, case, spec.release, spec.previous, log=log, stop=stop)
        except RunCancelled:
            raise
        except Exception as exc:  # one case's failure is its own row, not the run's
            figures = CaseFigures(case_id=case.case_id, engine=case.engine,
                                  release=spec.release, previous=spec.previous,
                                  status="inconclusive",
                                  error_line=f"the case could not run: {type(exc).__name__}",
                                  measured_at=datetime.now(UTC))
        sentinels.put_case(id_, case.case_id, figures.model_dump_json(), settings.job_ttl_s)
    stored = [CaseFigures.model_validate_json(raw) for _, raw in
              sorted(sentinels.cases(id_).items())]
    flagged = sum(1 for f in stored if f.status != "ok")
    store.runs.save_report(id_, "{}", run_report(spec, stored))
    store.move(id_, "done", headline=(f"{spec.release} against {spec.previous}: "
                                      f"{len(stored)} cases, {flagged} not ok")[:300],
               runs_done=len(spec.cases), runs_planned=len(spec.cases), eta_s=0.0)
    host.publish(id_)


def installed(settings: Settings, spec: SentinelRunSpec) -> CaseFigures | None:
    """Both releases installed first, as a watch run does (from the runner's folder of
    wheels where it has one); a new release that does not install is every case's
    crash. The cpu runner installs its own locked builds as its cells start."""
    if settings.run_local or not run_profile_for(spec.engine, spec.runner).installs_before_watch:
        return None
    for release in (spec.previous, spec.release):
        try:
            provision(spec.engine, release, cache_dir=settings.env_cache_dir, local=False,
                      find_links=settings.bisect_find_links,
                      nightly_index=spec.index if "dev" in release else None)
        except ProvisionError as exc:
            if release != spec.release:
                raise
            return CaseFigures(case_id="-", engine=spec.engine, release=spec.release,
                               previous=spec.previous, status="crashed",
                               error_line=f"does not install: {str(exc)[:240]}",
                               measured_at=datetime.now(UTC))
    return None


def step_context(settings: Settings, id_: str, margin: float) -> SentinelContext:
    """What `run_case` is given: where the job's runs go, the caches, the wheels (the
    runner's folder of releases, as a bisect step installs from), the deployment's
    options for every case (`sentinel_options`)."""
    return SentinelContext(
        settings=WatchSettings(out_dir=settings.data_dir / id_, cache_dir=settings.env_cache_dir,
                               local=settings.run_local, wheels=settings.bisect_find_links,
                               escalate=settings.escalate, margin=margin),
        extra=list(settings.sentinel_options), margin=margin)


def run_report(spec: SentinelRunSpec, stored: list[CaseFigures]) -> str:
    """The job page's report: each case's verdict table."""
    parts = [f"## Sentinel run: {spec.engine} {spec.release} against {spec.previous} "
             f"on `{spec.runner}`"]
    for figures in stored:
        parts.append(f"### {figures.case_id}: {figures.status}")
        if figures.error_line:
            parts.append(f"`{figures.error_line[:300]}`")
        if figures.modes:
            parts.append(verdict_table(figures))
    return "\n\n".join(parts)
