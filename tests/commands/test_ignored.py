"""Commands in code, quotes, HTML and links never run; neither does talk about the bot."""

from __future__ import annotations

import pytest

from triagebot.commands import Command, help_text, parse_comment
from triagebot.commands.ignore import ignored_mask, prose_spans

IGNORED = {
    "fence": "```\n@triagebot repro\n```",
    "fence with info": "```bash\n@triagebot repro\n```",
    "tilde fence": "~~~\n@triagebot repro\n~~~",
    "long fence": "`````\n```\n@triagebot repro\n```\n`````",
    "nested fences": "~~~~\n```\n~~~\n@triagebot repro\n```\n~~~~",
    "unclosed fence": "text\n```\n\n@triagebot repro\n\nmore",
    "short closer": "````\n@triagebot repro\n```\n@triagebot help",
    "fence in list": "- step\n  ```\n  @triagebot repro\n  ```",
    "indented fence": "1. step\n\n    ```\n    @triagebot repro\n    ```",
    "fence after quote": "> quoted\n```\n\n@triagebot repro\n```",
    "indented code": "    @triagebot repro",
    "indented code after blank": "text\n\n\t@triagebot repro",
    "inline code": "use `@triagebot repro` to run it",
    "double backticks": "use ``@triagebot `repro` `` to run it",
    "code over a line break": "use `@triagebot\nrepro` here",
    "quote": "> @triagebot repro",
    "quote indented": "   > @triagebot repro",
    "nested quote": "> > @triagebot repro",
    "deep quote": ">>> @triagebot repro",
    "lazy quote": "> You wrote\n@triagebot repro",
    "quote in list": "- > @triagebot repro",
    "reply quote": "> On Monday:\n> > @triagebot repro k=1\n>\n> thanks",
    "html comment": "<!-- @triagebot repro -->",
    "multiline html comment": "<!--\n@triagebot repro\n-->",
    "unclosed html comment": "<!--\n\n@triagebot repro",
    "inline html comment": "text <!-- @triagebot repro --> more",
    "html block": "<div>\n@triagebot repro\n</div>",
    "html block with details": "<details><summary>@triagebot repro</summary>",
    "pre block": "<pre>\n\n@triagebot repro\n\n</pre>",
    "inline code tag": "see <code>@triagebot repro</code>",
    "inline a tag": "see <a href='x'>@triagebot repro</a>",
    "link text": "[@triagebot repro](https://example.com)",
    "link over two lines": "[please\n@triagebot repro](https://example.com)",
    "image alt": "![@triagebot repro](shot.png)",
    "reference link": "[@triagebot repro][ref]\n\n[ref]: https://example.com",
    "collapsed reference": "[@triagebot repro][]\n\n[@triagebot repro]: https://x.y",
    "shortcut reference": "[@triagebot repro]\n\n[@Triagebot   repro]: https://x.y",
    "url": "https://example.com/?q=@triagebot repro",
    "www url": "www.example.com/?q=@triagebot repro",
    "autolink": "<https://example.com/?q=@triagebot> repro",
    "email-like": "mail x@triagebot repro",
    "path": "see org/@triagebot repro",
    "other bot": "@triagebot-dev repro",
    "underscore": "@triagebot_ repro",
    "own login": "@triagebot[bot] repro",
    "own login, capitals": "@TriageBot[BOT] repro",
    "no space": "@triagebot:repro",
    "bare mention": "@triagebot",
    "thanks": "thanks @triagebot for the report",
    "cc": "cc @triagebot",
    "comma": "@triagebot, what do you think?",
    "code after mention": "@triagebot `repro`",
    "punctuation word": "@triagebot repro, please",
    # Known commands count only where they open a line, as the help says: a sentence that
    # names one is talk about it (these two ran on main: a queued job was cancelled).
    "no need to cancel": "Looks real to me. No need to @triagebot cancel",
    "please status": "please @triagebot status",
    "question then repro": "Could you look? @triagebot repro runs=3",
    "after emphasis": "**Note:** @triagebot help",
    "mid-line in a list item": "- as said, @triagebot cancel",
}


@pytest.mark.parametrize("body", list(IGNORED.values()), ids=list(IGNORED))
def test_ignored(body: str) -> None:
    assert parse_comment(body) == []


def test_the_bots_own_messages_hold_no_command() -> None:
    report = (
        "<!-- triagebot:v1 job=abc123 -->\n"
        "Requested by @alice with `@triagebot repro k=1`.\n\n"
        "> @triagebot repro k=1\n\n"
        "```\n@triagebot repro k=1\n```\n")
    assert parse_comment(report) == []
    assert parse_comment(help_text()) == []
    assert parse_comment(help_text("perfbot"), bot="perfbot") == []


def test_mask_covers_exactly_the_constructs() -> None:
    text = "a `b` [c](d) <!-- e --> f https://g.h i"
    mask = ignored_mask(text)
    shown = "".join("#" if m else ch for ch, m in zip(text, mask, strict=True))
    assert shown == "a ### ###### ########## f ########### i"
    assert [text[s:e] for s, e in prose_spans(text)] == ["a ", " ", " ", " f ", " i"]


def test_unclosed_backticks_are_text() -> None:
    text = "a `b c"
    assert not any(ignored_mask(text))
    assert parse_comment("`unclosed\n@triagebot help") != []


def test_escaped_markup_is_prose() -> None:
    # Unescaped, the first backtick would pair with the last and hide the command.
    [item] = parse_comment("\\`x\n@triagebot status\n`y`")
    assert isinstance(item, Command) and item.text == "status"
    assert parse_comment("`x\n@triagebot status\n`y`") == []
    assert not any(ignored_mask(r"\[a\](b)"))


def test_prose_spans_of_blocks() -> None:
    text = "one\n```\ncode\n```\ntwo\n> three"
    assert [text[s:e] for s, e in prose_spans(text)] == ["one\n", "two\n"]
