"""The job record: identity, state and the moves between states, with nothing to store it.

A job is one `@triagebot repro` (or one auto-triage run) on one thread. Its id is a hash of
where it came from and what it asks, so a redelivered webhook or a duplicate task maps to
the same record. The record moves

    queued -> running -> done | failed | cancelled      (queued -> cancelled | failed too)

This module is pure: the bot's words, the decisions and the job pages read records without
loading Redis. `triagebot.jobs.store` keeps them in Redis and checks every move there.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from triagebot.analyze.outcome_models import Outcome

JobState = Literal["queued", "running", "done", "failed", "cancelled"]
STATES: tuple[JobState, ...] = ("queued", "running", "done", "failed", "cancelled")
TERMINAL: frozenset[str] = frozenset({"done", "failed", "cancelled"})
# What a finished report concluded, counted for /metrics.
OUTCOMES: tuple[str, ...] = get_args(Outcome)
MOVES: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "cancelled", "failed"}),
    # running -> queued: the worker lost the job (crash, shutdown) and it waits for a retry.
    "running": frozenset({"done", "failed", "cancelled", "queued"}),
}


JOB_ID_CHARS = 32


class JobError(Exception):
    """A move the state machine does not allow, or a job that does not exist."""


def job_id(key: bytes, repo: str, number: int, trigger: str, command: str) -> str:
    """Stable but unguessable id: the same comment asking the same thing is the same job.

    `trigger` names what started it (a comment id, or `issue-opened`), `command` is the
    normalised command text, so spacing and key order do not make a second job. The HMAC
    under the deployment's link key (128 bits shown) means nobody can compute the id of
    someone else's job from the thread's public facts.
    """
    text = "\x1f".join((repo.lower(), str(number), trigger, command))
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()[:JOB_ID_CHARS]


def page_token(key: bytes, id_: str) -> str:
    """The signature a private repository's job page link carries (see `triagebot/links.py`)."""
    return hmac.new(key, f"page\x1f{id_}".encode(), hashlib.sha256).hexdigest()[:32]


class JobRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    repo: str
    number: int
    installation_id: int | None = None
    is_pr: bool = False
    # The repository was private when the job was made: its page needs the signed link.
    private: bool = False
    title: str = ""
    trigger: str
    requester: str
    command: str
    plan_hash: str
    gpu_kind: str
    state: JobState = "queued"
    attempts: int = 0
    # Times the reaper found the job's worker gone and queued it again.
    reaped: int = 0
    created_at: float = Field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float = Field(default_factory=time.time)
    heartbeat_at: float | None = None
    cancel_requested: bool = False
    cancelled_by: str | None = None
    # Why it was cancelled, when not by a `cancel` command (its comment deleted, its
    # command edited): our own words, for its comment.
    cancel_reason: str | None = None
    worker: str | None = None
    # The sticky report comment on the thread, once created.
    comment_id: int | None = None
    # The run task has been sent to its GPU queue (a crash before that is repaired by a
    # redelivered event).
    enqueued: bool = False
    progress_posted_at: float | None = None
    published: bool = False
    cells: int = 0
    # The plan's own estimate of its GPU time, for queue ETAs.
    estimated_s: float = 0.0
    margin: float = Field(default=0.03, description="SAME means within ±margin: the repo "
                          "config's, fixed when the job was created")
    negligible: float = Field(default=0.0, description="DIFFERENT means beyond ±negligible "
                              "(the repo config's `negligible_pct`; 0: none)")
    runs_done: int = 0
    runs_planned: int = 0
    eta_s: float | None = None
    # What the runner is doing now, as one line (`triagebot.progress.describe`), and the
    # label of the cell it is running, if any.
    current: str = ""
    current_cell: str = ""
    outcome: str | None = None
    headline: str | None = None
    error: str | None = None
    gpu_seconds: float = 0.0
    # A bisect job: its range and predicate (triagebot.bisect.spec.BisectSpec, JSON).
    bisect: str | None = None
    # A watch run: the release it measures and against which
    # (triagebot.watch.models.WatchRunSpec, JSON).
    watch: str | None = None
    # A sentinel run: the release, the one it is measured against and the cases
    # (triagebot.workers.sentinel_runner.SentinelRunSpec, JSON).
    sentinel: str | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def thread(self) -> str:
        # A job of the repository itself (a sentinel run) has no thread: its number is 0.
        return f"{self.repo}#{self.number}" if self.number else self.repo


class Created(BaseModel):
    """What `JobStore.create` did: made it, found the same job, or found another one active."""

    status: Literal["created", "duplicate", "busy"]
    job: JobRecord
