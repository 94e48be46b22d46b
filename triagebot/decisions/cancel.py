"""`cancel`: stop the thread's queued and running jobs (people who may start them only).

The answer is the job comments themselves, each edited to say it was cancelled and by
whom, and a reaction on the command; a reply comes only when there is nothing to cancel.
"""

from __future__ import annotations

from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, CancelJobs, React, Refuse, Reply
from triagebot.decisions.facts import Facts


def decide(command: Command, facts: Facts) -> list[Action]:
    if not facts.may_run:
        return [Refuse(words.refusal(facts.command_name, "cancel"))]
    active = [job for job in facts.jobs if not job.terminal]
    if not active:
        return [Reply(words.nothing_to_cancel())]
    # Each job's own comment says it was cancelled, and by whom: a reply beside it would
    # be a second comment saying the same; a reaction acknowledges the command.
    return [CancelJobs(tuple(job.id for job in active)), React("+1")]
