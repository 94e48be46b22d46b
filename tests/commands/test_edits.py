"""On `edited`, only commands the previous body did not hold are new."""

from __future__ import annotations

import pytest

from triagebot.commands import Command, CommandError, new_commands, parse_comment

OLD = "Please check.\n\n@triagebot repro engine=vllm k=1,2\n"


@pytest.mark.parametrize("body", [
    OLD,
    OLD + "\nAlso, the numbers above are from an H100.",
    "Please check!\n\n@triagebot   repro  engine=vllm   k=1,2\n",
    "@triagebot repro k=1,2 engine=vllm",
    "@TriageBot Repro K=1,2 Engine=vllm",
    "@triagebot reproduce engine=vllm k=1,2",
])
def test_the_same_command_kept_is_nothing_new(body: str) -> None:
    assert new_commands(body, OLD) == []


def test_a_second_command_added_is_exactly_that_one() -> None:
    [item] = new_commands(OLD + "@triagebot status\n", OLD)
    assert isinstance(item, Command) and item.text == "status"
    [item] = new_commands("@triagebot repro k=1\n" + OLD, OLD)
    assert isinstance(item, Command) and item.text == "repro k=1"


def test_changed_arguments_are_a_new_command() -> None:
    [item] = new_commands(OLD.replace("k=1,2", "k=1,2,4"), OLD)
    assert isinstance(item, Command) and item.text == "repro engine=vllm k=1,2,4"


def test_a_command_moved_out_of_code_is_new() -> None:
    old = "```\n@triagebot repro\n```"
    [item] = new_commands("@triagebot repro", old)
    assert isinstance(item, Command) and item.text == "repro"
    assert new_commands("```\n@triagebot repro\n```", "@triagebot repro") == []


def test_no_previous_body_means_everything_is_new() -> None:
    assert new_commands(OLD, None) == parse_comment(OLD)
    assert new_commands(OLD, "") == parse_comment(OLD)


def test_errors_are_new_only_on_a_new_line() -> None:
    old = "@triagebot repro runs=x\n"
    assert new_commands(old + "more text", old) == []
    [item] = new_commands("@triagebot repro runs=y\n", old)
    assert isinstance(item, CommandError)
    [fixed] = new_commands("@triagebot repro runs=3\n", old)
    assert isinstance(fixed, Command) and fixed.text == "repro runs=3"


def test_removing_a_command_is_nothing_new() -> None:
    assert new_commands("@triagebot status", OLD + "@triagebot status") == []
