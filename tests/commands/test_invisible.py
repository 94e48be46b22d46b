"""Invisible characters around a command (issue 41, item 11): a zero-width space before
`@` or a word joiner after the command word dropped it with no reply. Characters that
change nothing a reader sees are now ignored; a direction control, which can make what
GitHub shows differ from what would run, gets a reply saying the line was not read."""

from __future__ import annotations

import pytest

from triagebot.commands import Command, CommandError, new_commands, parse_comment


@pytest.mark.parametrize("body", [
    "\u200b@triagebot help",
    "@triagebot help\u2060",
    "\ufeff@triagebot help",
    "@triagebot\u200b help",
    "thanks!\n\u200b@triagebot help\u2060\n",
])
def test_invisible_characters_are_ignored(body: str) -> None:
    [item] = parse_comment(body)
    assert isinstance(item, Command) and item.name == "help"


def test_invisible_characters_inside_arguments_are_ignored() -> None:
    [item] = parse_comment("@triagebot repro k=1\u200b,2 runs=3\u2060")
    assert isinstance(item, Command) and item.options is not None
    assert item.text == parse_comment("@triagebot repro k=1,2 runs=3")[0].text


@pytest.mark.parametrize(("body", "code"), [
    ("\u202e@triagebot help", "U+202E"),
    ("@triagebot cancel \u2067", "U+2067"),
    ("- \u200f@triagebot repro", "U+200F"),
])
def test_a_direction_control_on_a_command_line_is_answered(body: str, code: str) -> None:
    [item] = parse_comment(body)
    assert isinstance(item, CommandError)
    assert "not read as a command" in item.message and code in item.message


def test_a_direction_control_elsewhere_changes_nothing() -> None:
    [item] = parse_comment("\u202ehello\u202c\n@triagebot status")
    assert isinstance(item, Command) and item.name == "status"


def test_an_edit_that_only_adds_invisible_characters_adds_no_command() -> None:
    assert new_commands("@triagebot help\u200b", "@triagebot help") == []
