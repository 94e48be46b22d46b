"""What commands from a stranger get: people without a role on the repository (below
triage, and not listed in the repo config) are answered briefly and seldom, so that
nobody can make the bot talk at length or spend a maintainer's share of GitHub's limits.

The repo config chooses the answer (`[access] strangers`): one short reply, a reaction
only, or nothing. The executor holds either to the per-user and per-thread budgets.
"""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.commands import Command, CommandError
from triagebot.decisions import replies as words
from triagebot.decisions.actions import Action, Refuse
from triagebot.decisions.facts import Facts


def decide(items: Sequence[Command | CommandError], facts: Facts) -> list[Action]:
    mode = facts.config.access.strangers
    if mode == "ignore" or not items:
        return []
    if mode == "react":
        return [Refuse("", react_only=True)]
    names = [item.name for item in items if isinstance(item, Command)]
    return [Refuse(words.stranger(facts.command_name, names))]
