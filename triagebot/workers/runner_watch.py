"""A watch run as a job of the GitHub App, on the runner side.

The triage side (`triagebot.workers.watch`) makes the job: its plan is the watch step's
(the deciding comparison at the last release measured and at the new one, plus the A/A
pair) and its record carries a `WatchRunSpec`. It runs here under the job's lock and
heartbeat like any repro, every finished run stored (a worker killed mid-run resumes from
them), and ends with the step's reading saved as the job's findings and its report (the
job page shows both). The triage side turns the reading into each thread's row.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore
from triagebot.progress import Event
from triagebot.render import render_plan
from triagebot.report import render_report
from triagebot.report.watch import render_watch
from triagebot.run import vllm_cpu
from triagebot.run.orchestrate import RunSettings, SlotStore, execute
from triagebot.run.provision import ProvisionError, provision
from triagebot.run.watch_steps import read_logs
from triagebot.settings import Settings
from triagebot.watch.models import Reading, WatchRow, WatchRunSpec
from triagebot.watch.states import judge
from triagebot.watch.steps import read_step


def reading_key(settings: Settings, id_: str) -> str:
    """Where a finished watch run leaves its reading for the triage side."""
    return settings.key("job", id_, "watch-reading")


class WatchHost(Protocol):
    settings: Settings
    store: JobStore

    def publish(self, id_: str) -> None: ...


def run_watch_job(host: WatchHost, id_: str, job: JobRecord, slots: SlotStore,
                  stop: Callable[[], bool], progress: Callable[[Event], None]) -> None:
    """Run (or resume) the step and leave its reading; raises RunCancelled on cancel."""
    assert job.watch is not None
    store, settings = host.store, host.settings
    spec = WatchRunSpec.model_validate_json(job.watch)
    plan = store.plan(id_)
    request = store.request(id_)
    reading: Reading | None = None
    if not vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind) and not settings.run_local:
        # Installed first, as a bisect step does: a release that does not install is the
        # new release broken (or, for the old one, a run that could not tell).
        for release in dict.fromkeys(c.version for c in plan.cells):
            try:
                provision(plan.engine, release, cache_dir=settings.env_cache_dir,
                          local=False, find_links=settings.bisect_find_links)
            except ProvisionError as exc:
                line = f"does not install: {str(exc)[:240]}"
                reading = (Reading(release=spec.release, against=spec.against,
                                   comparison=spec.comparison, crash=line)
                           if release == spec.release else None)
                if reading is None:
                    raise
                break
    if reading is None:
        scripts = render_plan(plan)
        execution = execute(plan, scripts, request, RunSettings(
            out_dir=Path(settings.data_dir) / id_, cache_dir=settings.env_cache_dir,
            local=settings.run_local, silence_limit_s=settings.silence_limit_s,
            escalate=settings.escalate, margin=job.margin, negligible=job.negligible,
            stop_on_failure=True, pinned=False),
            progress, store=slots, stop=stop)
        reading = read_step(plan, execution.findings, spec.comparison,
                            read_logs(execution.outcomes), spec.against)
        findings = execution.findings.model_dump_json()
        report = render_report(plan, execution.findings, scripts=scripts, command=(
            f"triagebot watch {settings.thread_url(job.repo, job.number)}"),
            docs_url=settings.docs_url)
    else:
        findings, report = "{}", ""
    # The page shows the release's reading as a row of its own (judged without the
    # thread's history, which each thread adds when the triage side publishes).
    state, reason = judge(reading, [], spec.direction)
    row = WatchRow(release=spec.release, against=spec.against, date=spec.date,
                   comparison=spec.comparison, ratio=reading.ratio, change=reading.change,
                   state=state, reason=reason)
    section = render_watch([row], spec.comparison, heading="## Watch run")
    store.redis.set(reading_key(settings, id_), reading.model_dump_json(),
                    ex=settings.job_ttl_s)
    store.runs.save_report(id_, findings, f"{section}\n{report}")
    store.move(id_, "done", headline=f"{spec.release}: {reason}"[:300], eta_s=0.0)
    host.publish(id_)
