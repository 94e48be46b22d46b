"""`cancel`: stop the thread's queued and running jobs (people who may start them only)."""

from __future__ import annotations

from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, CancelJobs, Refuse, Reply
from triagebot.decisions.facts import Facts


def decide(command: Command, facts: Facts) -> list[Action]:
    if not facts.may_run:
        return [Refuse(words.refusal(facts.command_name))]
    active = [job for job in facts.jobs if not job.terminal]
    return [CancelJobs(tuple(job.id for job in active)), Reply(words.cancelled_jobs(active))]
