"""`help`: the commands and the repro keys."""

from __future__ import annotations

from triagebot.commands import Command, help_text
from triagebot.decisions.actions import Action, Reply
from triagebot.decisions.facts import Facts


def decide(command: Command, facts: Facts) -> list[Action]:
    return [Reply(help_text(facts.command_name, gpu_kinds=facts.gpu_kinds,
                            default_gpu=facts.fallback_gpu), same_for_all=True)]
