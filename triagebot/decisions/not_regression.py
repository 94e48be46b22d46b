"""`not-a-regression`: a maintainer says a sentinel flag was no regression.

The same permission as `repro` (it changes what the sentinel reports). It only means
something on a sentinel tracking issue; anywhere else the reply says where it belongs.
Saying it twice counts once (the executor counts flagged releases, not commands).
"""

from __future__ import annotations

from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, MarkNotRegression, React, Refuse, Reply
from triagebot.decisions.facts import Facts


def decide(command: Command, facts: Facts) -> list[Action]:
    if not facts.may_run:
        return [Refuse(words.refusal(facts.command_name))]
    if not facts.sentinel.case_id:
        return [Reply("`not-a-regression` answers a sentinel tracking issue (one the "
                      "sentinel opened for a flagged case); this thread is not one.")]
    return [MarkNotRegression(repo=facts.event.repo, number=facts.event.number,
                              by=facts.event.sender.login), React("+1")]
