"""What a decision may read: gathered by the executor from GitHub and Redis beforehand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from triagebot.github.events import ThreadEvent
from triagebot.github.models import Thread
from triagebot.jobs.record import JobRecord
from triagebot.repo_config import RepoConfig


@dataclass(frozen=True)
class WatchFacts:
    """What `watch`, `unwatch` and `status` read of the repo's watches."""

    # This thread's watch, unless stopped: its status (active, paused) and its rows.
    status: str = ""
    lines: tuple[str, ...] = ()
    # Threads of the repo watched now, and the runner minutes watch runs took today.
    threads: int = 0
    minutes_today: float = 0.0
    # The engine of the thread's reproduced report (its plan's), when it has one.
    engine: str = ""


@dataclass(frozen=True)
class SentinelFacts:
    """What `not-a-regression` reads: the thread's sentinel tracking record, if any."""

    case_id: str = ""
    kind: str = ""


@dataclass(frozen=True)
class Facts:
    event: ThreadEvent
    command_name: str
    config: RepoConfig
    # The sender may start GPU work here (permission, the config's lists or teams).
    may_run: bool
    # The thread's jobs, newest first, and their page links.
    jobs: tuple[JobRecord, ...]
    job_urls: Mapping[str, str]
    # The thread as it is now (read only when a command needs it).
    thread: Thread | None
    # Runner kinds this deployment serves, and the repo's GPU seconds used today (UTC).
    gpu_kinds: tuple[str, ...]
    gpu_seconds_used: float
    # The key job ids are made with (`triagebot.jobs.record.job_id`).
    id_key: bytes
    # The kind a job runs on when the command names none and the report's (or the repo
    # config's) is not served here; "" means the first of `gpu_kinds`.
    default_gpu: str = ""
    # The sender has a role here (triage or more, or may run): else a stranger.
    may_talk: bool = True
    watch: WatchFacts = WatchFacts()
    sentinel: SentinelFacts = SentinelFacts()

    @property
    def fallback_gpu(self) -> str:
        return self.default_gpu or self.gpu_kinds[0]
