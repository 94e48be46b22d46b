"""`status`: the thread's jobs and where each stands."""

from __future__ import annotations

from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, Reply
from triagebot.decisions.facts import Facts
from triagebot.decisions.watch import status_lines


def decide(command: Command, facts: Facts) -> list[Action]:
    watched = status_lines(facts)
    return [Reply(words.status(facts.jobs, facts.job_urls)
                  + (f"\n\n{watched}" if watched else ""), same_for_all=True)]
