"""`watch` and `unwatch`: follow the thread's reproduced report across new releases.

The same permission as `repro` (a watch spends runner time on every release). A watch
needs a report that reproduced: the newest finished repro job of the thread whose outcome
is `reproduced` (its comparison, release and runner are what the watch repeats). Each
refusal says what would be accepted: no such report, an engine the repo does not watch,
a runner kind nobody serves, or the repo's `[watch] max_threads`.
"""

from __future__ import annotations

from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, React, Refuse, Reply, StartWatch, StopWatch
from triagebot.decisions.facts import Facts
from triagebot.jobs.record import JobRecord


def reproduced_job(jobs: tuple[JobRecord, ...]) -> JobRecord | None:
    """The newest repro job of the thread that finished as reproduced."""
    return next((j for j in jobs if j.state == "done" and j.outcome == "reproduced"
                 and j.bisect is None and j.watch is None), None)


def decide(command: Command, facts: Facts) -> list[Action]:
    if not facts.may_run:
        return [Refuse(words.refusal(facts.command_name))]
    name = facts.command_name
    if facts.watch.status:
        return [Reply(f"This thread is watched already ({facts.watch.status}); "
                      f"`@{name} status` shows its rows and `@{name} unwatch` ends it.")]
    job = reproduced_job(facts.jobs)
    if job is None:
        return [Reply("There is no reproduced report on this thread to watch: a watch "
                      "re-measures the comparison that reproduced a report, on each new "
                      f"release. Ask for one with `@{name} repro`; once it reproduces, "
                      f"`@{name} watch` follows it.")]
    options = command.options
    engine = (options.engine if options and options.engine else "") or facts.watch.engine
    config = facts.config.watch
    if not config.watches(engine):
        return [Reply(f"This repository watches {', '.join(config.engines)} only "
                      f"(`[watch] engines` in `.github/triagebot.toml`), not {engine}.")]
    gpu = (options.gpu if options and options.gpu else "") or job.gpu_kind
    if gpu not in facts.gpu_kinds:
        return [Reply(f"No runner here serves GPU kind {gpu!r}; available: "
                      f"{', '.join(facts.gpu_kinds)} (choose one with `gpu=`).")]
    if facts.watch.threads >= config.max_threads:
        return [Reply(f"Over this repository's watch budget: `[watch] max_threads` is "
                      f"{config.max_threads} and {facts.watch.threads} threads are watched "
                      f"already. `@{name} unwatch` on one of them makes room.")]
    return [StartWatch(job_id=job.id, engine=engine, gpu=gpu), React("+1")]


def decide_unwatch(command: Command, facts: Facts) -> list[Action]:
    if not facts.may_run:
        return [Refuse(words.refusal(facts.command_name))]
    if not facts.watch.status:
        return [Reply("Nothing is watched on this thread.")]
    return [StopWatch(repo=facts.event.repo, number=facts.event.number), React("+1")]


def status_lines(facts: Facts) -> str:
    """The `status` reply's watch section; empty when the thread has no watch."""
    if not facts.watch.status:
        return ""
    rows = "\n".join(f"- {line}" for line in facts.watch.lines) or "- no release measured yet"
    return f"**Watch** ({facts.watch.status}):\n\n{rows}"

