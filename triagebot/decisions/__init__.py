"""Decide, then act: pure functions from (event, repo config, gathered facts) to actions.

One module per command, named as its grammar module in `triagebot.commands`; each has a
`decide(command, facts) -> list[Action]`. Nothing here reads Redis or calls GitHub, so
they are tested with plain values. `decide` runs every command of a comment and turns a
bug in one of them into a reply saying so, never into silence.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from triagebot.commands import Command, CommandError
from triagebot.decisions import bisect, cancel, help, repro, status, strangers
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, React, Reply
from triagebot.decisions.facts import Facts

log = logging.getLogger(__name__)

DECIDERS: dict[str, Callable[[Command, Facts], list[Action]]] = {
    "help": help.decide, "status": status.decide, "cancel": cancel.decide,
    "repro": repro.decide, "bisect": bisect.decide,
}


def decide(items: Sequence[Command | CommandError], facts: Facts) -> list[Action]:
    """The actions for one comment's commands, in the order they were written; a
    stranger's comment gets one brief answer for all of them."""
    if not facts.may_talk:
        return strangers.decide(items, facts)
    actions: list[Action] = []
    for item in items:
        if isinstance(item, CommandError):
            actions.append(Reply(words.command_errors([item.message])))
            continue
        try:
            actions += DECIDERS[item.name](item, facts)
        except Exception as exc:
            log.exception("%s#%d: deciding %r failed", facts.event.repo, facts.event.number,
                          item.name)
            actions += [Reply(words.internal_error(type(exc).__name__)), React("confused")]
    return actions
