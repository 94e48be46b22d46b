"""What the job page shows, worked out from the stored job: pure, so tests need no server.

The badge follows the outcome, not only the state: a job that ended `done` with outcome
`error` (every cell failed) is red, never a green "done". The step list is the plan's
cells in order, each marked from the runs stored so far, so it moves while a job runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from markupsafe import Markup
from pydantic import ValidationError

from triagebot.analyze.findings_models import Findings
from triagebot.jobs.record import JobRecord
from triagebot.plan_model import Plan
from triagebot.web.page_charts import acceptance_chart, throughput_chart
from triagebot.web.page_markdown import report_html

Tone = Literal["waiting", "active", "good", "neutral", "bad", "muted"]
StepState = Literal["done", "running", "pending", "failed"]

# (label, tone) for each outcome of a finished job, and for each state before that.
_OUTCOME_BADGE: dict[str, tuple[str, Tone]] = {
    "reproduced": ("reproduced", "good"),
    "not_reproduced": ("not reproduced", "neutral"),
    "inconclusive": ("inconclusive", "waiting"),
    "cannot_answer": ("could not answer", "muted"),
    "error": ("error", "bad"),
}
_STATE_BADGE: dict[str, tuple[str, Tone]] = {
    "queued": ("queued", "waiting"),
    "running": ("running", "active"),
    "done": ("done", "good"),
    "failed": ("failed", "bad"),
    "cancelled": ("cancelled", "muted"),
}


@dataclass(frozen=True)
class Step:
    label: str
    state: StepState
    detail: str = ""


@dataclass(frozen=True)
class JobView:
    badge: str
    tone: Tone
    steps: list[Step]
    report: Markup | None
    throughput: Markup | None
    acceptance: Markup | None


def badge(job: JobRecord) -> tuple[str, Tone]:
    if job.state == "done" and job.outcome in _OUTCOME_BADGE:
        return _OUTCOME_BADGE[job.outcome]
    return _STATE_BADGE[job.state]


def steps(job: JobRecord, plan: Plan | None, stored: dict[str, int],
          findings: Findings | None) -> list[Step]:
    """One step per cell: runs stored per cell decide done / running / pending."""
    if plan is None:
        return []
    failed = {c.cell_id: c.error or c.status for c in findings.cells
              if c.status != "ok"} if findings else {}
    runs = plan.budget.runs
    out = []
    for cell in plan.cells:
        have = stored.get(cell.cell_id, 0)
        detail = f"{have} run{'' if have == 1 else 's'} stored" if have else ""
        if cell.cell_id in failed:
            out.append(Step(cell.label, "failed", str(failed[cell.cell_id])[:120]))
        elif have >= runs or (job.terminal and have):
            out.append(Step(cell.label, "done", detail))
        elif job.state == "running" and (have or cell.label in (job.current_cell,
                                                                job.current)):
            out.append(Step(cell.label, "running", detail))
        else:
            out.append(Step(cell.label, "pending", detail))
    return out


def findings_of(raw: dict[str, Any] | None) -> Findings | None:
    """The stored findings, or None when absent or from another schema."""
    if raw is None:
        return None
    try:
        return Findings.model_validate(raw)
    except ValidationError:
        return None


def job_view(job: JobRecord, plan: Plan | None, stored: dict[str, int],
             findings_raw: dict[str, Any] | None, report: str | None) -> JobView:
    findings = findings_of(findings_raw)
    label, tone = badge(job)
    return JobView(
        badge=label, tone=tone, steps=steps(job, plan, stored, findings),
        report=report_html(report) if report else None,
        throughput=throughput_chart(findings) if findings else None,
        acceptance=acceptance_chart(findings) if findings else None)
