"""Accepted and rejected `@triagebot` commands, with the positions users are shown."""

from __future__ import annotations

import pytest

from triagebot.commands import (
    MAX_COMMANDS,
    Command,
    CommandError,
    Position,
    parse_comment,
)
from triagebot.overrides import KEYS, SpecChoice


def _commands(body: str, bot: str = "triagebot") -> list[Command]:
    items = parse_comment(body, bot)
    assert all(isinstance(item, Command) for item in items), items
    return [item for item in items if isinstance(item, Command)]


@pytest.mark.parametrize(("body", "texts"), [
    ("@triagebot repro", ["repro"]),
    ("@triagebot repro engine=vllm k=1,2", ["repro engine=vllm k=1,2"]),
    # Canonical key order, whatever order the words came in.
    ("@triagebot repro k=1,2 engine=vllm", ["repro engine=vllm k=1,2"]),
    ("@TriageBot REPRO Engine=vllm", ["repro engine=vllm"]),
    ("@triagebot repro modes=cudagraph,eager runs=3", ["repro modes=graph,eager runs=3"]),
    ("@triagebot reproduce spec=MTP:1,off", ["repro spec=mtp:1,none"]),
    ("@triagebot: help", ["help"]),
    ("@triagebot help.", ["help"]),
    ("@triagebot status?", ["status"]),
    ("@triagebot\tcancel   ", ["cancel"]),
    ("- @triagebot status", ["status"]),
    ("1. @triagebot status", ["status"]),
    ("## @triagebot help", ["help"]),
    ("@triagebot repro\r\n@triagebot status\r\n", ["repro", "status"]),
    ("@triagebot repro\r@triagebot help", ["repro", "help"]),
    # The same command twice in one comment runs once.
    ("@triagebot repro k=1\n@triagebot repro   k=1", ["repro k=1"]),
    ("@triagebot help\n@triagebot repro\n@triagebot cancel", ["help", "repro", "cancel"]),
    # A closed code block or quote ends; the command after it counts.
    ("```\ncode\n```\n@triagebot repro", ["repro"]),
    ("~~~~\n~~~\n~~~~\n@triagebot repro", ["repro"]),
    ("> quoted\n\n@triagebot repro", ["repro"]),
    ("<details>\n\n@triagebot repro\n\n</details>", ["repro"]),
    ("<!-- template note -->\n@triagebot repro", ["repro"]),
    ("    indented code\n\n@triagebot repro", ["repro"]),
    ("see `code` and [a link](https://x.y)\n@triagebot repro", ["repro"]),
    ("a paragraph\n    @triagebot repro", ["repro"]),  # a continuation line, not code
])
def test_accepted(body: str, texts: list[str]) -> None:
    assert [c.text for c in _commands(body)] == texts


def test_command_fields() -> None:
    [cmd] = _commands("Hi!\n\n  @triagebot repro k=2,1 spec=mtp:1,none engine=vllm")
    assert cmd.name == "repro"
    assert cmd.words == ("k=2,1", "spec=mtp:1,none", "engine=vllm")
    assert cmd.options is not None and cmd.options.num_speculative_tokens == [2, 1]
    assert cmd.options.spec == [SpecChoice(method="mtp", k=1), SpecChoice()]
    assert cmd.text == "repro engine=vllm spec=mtp:1,none k=2,1"
    assert cmd.position == Position(line=3, column=3)
    [help_cmd] = _commands("x\n@triagebot help")
    assert (help_cmd.words, help_cmd.options) == ((), None)
    assert help_cmd.position == Position(line=2, column=1)


def test_other_bot_names() -> None:
    assert [c.text for c in _commands("@triagebot-dev repro", bot="triagebot-dev")] == ["repro"]
    assert _commands("@triagebot repro", bot="triagebot-dev") == []
    assert _commands("@triagebot-dev repro") == []
    # A login given with its app suffix or an @ still means the same mention.
    assert [c.text for c in _commands("@perfbot help", bot="@perfbot[bot]")] == ["help"]


@pytest.mark.parametrize(("body", "name", "fragment", "where"), [
    ("@triagebot frobnicate", None, "unknown command 'frobnicate'", (1, 12)),
    ("x\n- @triagebot launch now", None, "unknown command 'launch'", (2, 14)),
    ("@triagebot repro colour=blue", "repro", "unknown key 'colour'; valid keys: engine",
     (1, 18)),
    ("@triagebot repro runs=3 runs=4", "repro", "runs is given twice", (1, 25)),
    ("@triagebot repro runs", "repro", "is not key=value", (1, 18)),
    ("@triagebot repro engine=vllm runs=0", "repro", "greater than or equal to 1", (1, 30)),
    ("@triagebot repro spec=bogus:1", "repro", "unknown method 'bogus'", (1, 18)),
    ("ok\n  @triagebot repro model=$(id)", "repro", "not a model id", (2, 20)),
    ("@triagebot repro k=1,2.", "repro", "k", (1, 18)),
    ("@triagebot help me", "help", "`help` takes no arguments", (1, 17)),
    ("@triagebot status now", "status", "takes no arguments", (1, 19)),
    ("@triagebot cancel all of it", "cancel", "takes no arguments", (1, 19)),
    ("@triagebot repro `k=1`", "repro", "plain words", (1, 18)),
    ("@triagebot repro engine=vllm https://x.y/z", "repro", "plain words", (1, 30)),
    ("@triagebot repro <!-- note -->", "repro", "plain words", (1, 18)),
])
def test_rejected(body: str, name: str | None, fragment: str, where: tuple[int, int]) -> None:
    [item] = parse_comment(body)
    assert isinstance(item, CommandError)
    assert item.name == name
    assert fragment in item.message
    assert (item.position.line, item.position.column) == where


def test_unknown_command_lists_the_commands() -> None:
    [item] = parse_comment("@triagebot rerun")
    assert isinstance(item, CommandError)
    for name in ("repro", "help", "cancel", "status"):
        assert name in item.message


def test_unknown_key_lists_every_valid_key() -> None:
    [item] = parse_comment("@triagebot repro colour=blue")
    assert isinstance(item, CommandError)
    assert all(key in item.message for key in KEYS)


def test_errors_and_commands_keep_their_order() -> None:
    items = parse_comment("@triagebot status\n@triagebot help me\n@triagebot repro")
    assert [type(i).__name__ for i in items] == ["Command", "CommandError", "Command"]


def test_too_many_commands_is_one_error() -> None:
    lines = [f"@triagebot repro runs={n}" for n in range(1, MAX_COMMANDS + 2)]
    [item] = parse_comment("\n".join(lines))
    assert isinstance(item, CommandError)
    assert f"at most {MAX_COMMANDS}" in item.message
    assert item.position == Position(line=MAX_COMMANDS + 1, column=1)
    assert len(parse_comment("\n".join(lines[:MAX_COMMANDS]))) == MAX_COMMANDS


def test_the_scan_stops_at_githubs_body_cap() -> None:
    pad = "x" * 65_536
    assert parse_comment("@triagebot repro\n" + pad)[0].position == Position(line=1, column=1)
    assert parse_comment(pad + "\n@triagebot repro") == []
