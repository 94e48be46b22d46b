"""Jobs in the states a person looks at (done, running, errored), from recorded runs.

The runs are the report tests' recordings (tests/report/fixtures), so the page shows what
a real job leaves in Redis: the plan, stored runs, findings and the rendered report.
"""

from __future__ import annotations

from tests.report import load_fixture, seed_request
from triagebot.analyze.findings import analyze
from triagebot.jobs.record import JobRecord, job_id
from triagebot.jobs.store import JobStore
from triagebot.report import render_report

LINK_KEY = b"web-tests-link-key"


def _job(store: JobStore, scenario: str, trigger: str) -> tuple[JobRecord, str]:
    plan, _ = load_fixture(scenario)
    record = JobRecord(id=job_id(LINK_KEY, "acme/engine", 42, trigger, "repro"),
                       repo="acme/engine", number=42, title=f"MTP slower ({scenario})",
                       trigger=trigger, requester="maint", command="@triagebot repro",
                       plan_hash=f"plan-{trigger}", gpu_kind="h100", cells=len(plan.cells),
                       runs_planned=len(plan.cells) * plan.budget.runs, eta_s=600)
    created = store.create(record, plan, None)
    assert created.status == "created"
    token = store.runs.acquire(record.id)
    assert token is not None
    return created.job, token


def finished(store: JobStore, scenario: str = "reproduced_slowdown",
             trigger: str = "comment-1") -> JobRecord:
    job, token = _job(store, scenario, trigger)
    plan, results = load_fixture(scenario)
    for cell_id, rounds in results.items():
        for round_, result in enumerate(rounds):
            store.runs.put_result(job.id, token, cell_id, round_, result)
    findings = analyze(plan, results, request=seed_request())
    store.runs.save_report(job.id, findings.model_dump_json(),
                      render_report(plan, findings, scripts=[], command="triagebot repro x"))
    store.move(job.id, "running", runs_done=job.runs_planned)
    return store.move(job.id, "done", outcome=findings.outcome, headline=findings.headline)


def running(store: JobStore, trigger: str = "comment-2") -> JobRecord:
    job, token = _job(store, "reproduced_slowdown", trigger)
    plan, results = load_fixture("reproduced_slowdown")
    first = plan.cells[0].cell_id
    store.runs.put_result(job.id, token, first, 0, results[first][0])
    return store.move(job.id, "running", runs_done=len(results[first][0].runs),
                      current=plan.cells[1].label)


def errored(store: JobStore, trigger: str = "comment-3") -> JobRecord:
    """Every cell crashed: the job ran to the end, and its outcome is `error`."""
    return finished(store, "config_rejected", trigger)
