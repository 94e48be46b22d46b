"""What a decision asks the executor to do. Frozen data: deciding never touches anything.

The executor (`triagebot.workers.triage`) applies them idempotently: one consolidated
reply per comment, reactions GitHub itself dedupes, a job created once and acknowledged
under a claim, cancels that are no-ops the second time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triagebot.decisions import replies as words
from triagebot.jobs.record import JobRecord
from triagebot.plan_model import Plan
from triagebot.request_model import ReproRequest


@dataclass(frozen=True)
class _Words:
    """Text for the one reply to the comment; the subclass says when it may be posted."""

    text: str


@dataclass(frozen=True)
class Reply(_Words):
    """One section of the single reply to the comment. `same_for_all`: the answer does
    not depend on who asked (help, status), so a reply made only of such sections that
    the thread already holds from the last day is not posted again: the repeat gets a
    reaction instead."""

    same_for_all: bool = False


@dataclass(frozen=True)
class Refuse(_Words):
    """A polite refusal, posted at most once per user, thread and day, and only within
    the per-thread and per-user budgets (no spam lever). `react_only`: a reaction stands
    in for the words, under the same budgets."""

    react_only: bool = False


@dataclass(frozen=True)
class React:
    content: str


@dataclass(frozen=True)
class StartJob:
    """Create the job (unless it exists), post its comment and queue it, once."""

    record: JobRecord
    plan: Plan
    request: ReproRequest
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class CancelJobs:
    ids: tuple[str, ...]
    # Why, when not a `cancel` command: shown on each job's comment.
    reason: str | None = None


@dataclass(frozen=True)
class StartWatch:
    """Watch the thread from the report of job `job_id`, on `engine` and runner `gpu`."""

    job_id: str
    engine: str
    gpu: str


@dataclass(frozen=True)
class StopWatch:
    repo: str
    number: int


@dataclass(frozen=True)
class MarkNotRegression:
    """The sentinel tracking issue `repo#number` is no regression, says `by`."""

    repo: str
    number: int
    by: str


Action = (Reply | Refuse | React | StartJob | CancelJobs | StartWatch | StopWatch
          | MarkNotRegression)


@dataclass(frozen=True)
class PostSummary:
    """Auto-triage's parse summary, on the thread's one comment under `marker`: what was
    read from the report, then the sections of the actions decided before it. Whether it
    says a reproduction is queued is known only once its StartJob has been applied."""

    marker: str
    request: ReproRequest
    command_name: str
    is_pr: bool
    head_sha: str | None

    def text(self, *, will_run: bool) -> str:
        return words.triage_summary(self.request, command_name=self.command_name,
                                    will_run=will_run, is_pr=self.is_pr,
                                    head_sha=self.head_sha)


# What auto-triage decides for an issue or PR event: a run (or why not), then the summary.
TriageAction = StartJob | Reply | PostSummary
