"""The registry: one module per command, at most one per word, help built from it."""

from __future__ import annotations

from typing import get_args

import pytest

from triagebot.commands import COMMANDS, help_text
from triagebot.commands.base import CommandName, Malformed, Position, Word
from triagebot.commands.repro import KEY_HELP
from triagebot.overrides import KEYS

WORDS = [
    *(name for spec in COMMANDS.values() for name in (spec.name, *spec.aliases)),
    *(name.upper() for name in COMMANDS), "Repro", "reproduced", "rep", "helpme", "stat",
    "cancelled", "", "-", "repro-", "status_",
]


@pytest.mark.parametrize("word", WORDS)
def test_at_most_one_command_module_matches_a_word(word: str) -> None:
    assert sum(spec.matches(word) for spec in COMMANDS.values()) <= 1


def test_every_name_and_alias_matches_its_own_module() -> None:
    for key, spec in COMMANDS.items():
        assert key == spec.name
        for word in (spec.name, *spec.aliases):
            assert [s.name for s in COMMANDS.values() if s.matches(word)] == [spec.name]


def test_the_registry_holds_every_command_name() -> None:
    assert set(COMMANDS) == set(get_args(CommandName))


def test_every_option_key_has_a_help_line() -> None:
    assert set(KEY_HELP) == set(KEYS)
    assert all(line and "\n" not in line for line in KEY_HELP.values())


def test_help_lists_every_command_and_key() -> None:
    text = help_text("perfbot")
    for spec in COMMANDS.values():
        assert f"`@perfbot {spec.name}" in text
        assert spec.summary in text
    for key in KEYS:
        assert f"| `{key}` | {KEY_HELP[key]} |" in text
    assert "@triagebot" not in text


def test_commands_without_arguments_parse_to_their_name() -> None:
    for name in ("help", "cancel", "status"):
        assert COMMANDS[name].parse([]).text == name


def test_word_positions_survive_a_grammar_error() -> None:
    word = Word("x", Position(line=2, column=5))
    with pytest.raises(Malformed) as info:
        COMMANDS["status"].parse([word])
    assert info.value.position == word.position
