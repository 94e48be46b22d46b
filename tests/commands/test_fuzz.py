"""Any text at all: the grammar never raises, and code or quotes never yield a command."""

from __future__ import annotations

import random
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triagebot.commands import Command, CommandError, new_commands, parse_comment
from triagebot.commands.ignore import ignored_mask, line_spans, prose_spans

FRAGMENTS = [
    "@triagebot", "@TriageBot", "@triagebot[bot]", "@triagebot-dev", " repro", " help",
    " cancel", " status", " frob", " k=1,2", " engine=vllm", " runs=x", " spec=mtp:1,none",
    "\n", "\r\n", "\r", "\n\n", "```", "~~~", "````", "`", "``", "    ", "\t", "> ", ">",
    "- ", "1. ", "# ", "<!--", "-->", "<div>", "</div>", "<pre>", "<a href='x'>", "</a>",
    "<code>", "[", "]", "(", ")", "![", "[x]: https://u", "https://x.y/", "www.", "<", ">",
    "\\", "*", "_", ":", ",", ".", "é", "😀", "\u2028", "\x00", "\ufeff", " ", "x",
]

# Whole lines built around a command, so that examples often hold one, in or out of context.
command_lines = st.lists(st.tuples(
    st.sampled_from(["", "> ", "- ", "    ", "```\n", "~~~\n", "<!-- ", "`", "[", "x ", "\n"]),
    st.sampled_from(["@triagebot repro", "@triagebot help", "@triagebot repro k=1,2",
                     "@triagebot frob", "@triagebot status now", "@triagebot cancel"]),
    st.sampled_from(["", "`", "](u)", " -->", "\n```", "!", " runs=3", "\n"]),
).map("".join), max_size=8).map("\n".join)

bodies = st.one_of(
    command_lines,
    st.text(max_size=400),
    st.lists(st.sampled_from(FRAGMENTS), max_size=80).map("".join),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=60)
    .map("".join),
)

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(body: str) -> None:
    items = parse_comment(body)
    assert len(items) <= 5
    lines = body[:65_536]
    starts = [s for s, _ in line_spans(lines)]
    for item in items:
        assert isinstance(item, Command | CommandError)
        offset = starts[item.position.line - 1] + item.position.column - 1
        if isinstance(item, Command):
            assert lines[offset:offset + 10].lower() == "@triagebot"
    mask = ignored_mask(body)
    assert len(mask) == len(body) and set(mask) <= {0, 1}
    assert all(0 <= s < e <= len(body) for s, e in prose_spans(body))
    assert new_commands(body, body) == []


@FUZZ
@given(bodies)
def test_never_raises(body: str) -> None:
    _check(body)


@settings(max_examples=75, deadline=None)
@given(bodies)
def test_fenced_text_holds_no_command(body: str) -> None:
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    assert parse_comment(f"{fence}\n{body}\n{fence}\n") == []


@settings(max_examples=75, deadline=None)
@given(bodies)
def test_quoted_text_holds_no_command(body: str) -> None:
    quoted = "\n".join("> " + line for line in re.split(r"\r\n|\r|\n", body))
    assert parse_comment(quoted) == []


def test_bodies_at_githubs_cap() -> None:
    rng = random.Random(5)
    for _ in range(4):
        _check("".join(rng.choices(FRAGMENTS, k=20_000))[:70_000])
    for body in ("[" * 65_536, "`" * 65_536, "<a " * 22_000, "x @triagebot y " * 4_400,
                 "> " * 33_000, "```\n" * 16_000, "@triagebot repro\n" * 3_900):
        _check(body)
