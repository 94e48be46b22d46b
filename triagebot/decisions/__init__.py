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
from triagebot.decisions import (
    bisect,
    cancel,
    help,
    not_regression,
    repro,
    status,
    strangers,
    watch,
)
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, CancelJobs, React, Reply
from triagebot.decisions.facts import Facts

log = logging.getLogger(__name__)

DECIDERS: dict[str, Callable[[Command, Facts], list[Action]]] = {
    "help": help.decide, "status": status.decide, "cancel": cancel.decide,
    "repro": repro.decide, "bisect": bisect.decide,
    "watch": watch.decide, "unwatch": watch.decide_unwatch,
    "not-a-regression": not_regression.decide,
}


# Commands that start a job.
STARTS = frozenset({"repro", "bisect"})


def decide(items: Sequence[Command | CommandError], facts: Facts) -> list[Action]:
    """The actions for one comment's commands, in the order they were written, except
    that a `cancel` acts first (see `help_text`); a stranger's comment gets one brief
    answer for all of them."""
    if not facts.may_talk:
        return strangers.decide(items, facts)
    names = {item.name for item in items if isinstance(item, Command)}
    actions: list[Action] = []
    if names & STARTS and facts.may_run:
        actions += _replaced_by_edit(items, facts)
        if "cancel" in names:
            live = [job.id for job in facts.jobs if not job.terminal]
            actions.append(Reply(words.cancel_first(live, facts.job_urls)))
    cancels_first = sorted(items, key=lambda i: not (isinstance(i, Command)
                                                     and i.name == "cancel"))
    for item in cancels_first:
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


def _replaced_by_edit(items: Sequence[Command | CommandError], facts: Facts) -> list[Action]:
    """An edit that changes a comment's `repro` or `bisect` replaces the job the comment
    started: one still queued or running is cancelled, saying why, and the reply says so."""
    comment = facts.event.comment
    if facts.event.action != "edited" or comment is None:
        return []
    kept = {item.text for item in items if isinstance(item, Command)}
    earlier = tuple(job.id for job in facts.jobs
                    if job.trigger == f"comment-{comment.id}" and not job.terminal
                    and job.command not in kept)
    if not earlier:
        return []
    return [CancelJobs(earlier, reason=words.EDITED), Reply(words.replaced(earlier,
                                                                          facts.job_urls))]
