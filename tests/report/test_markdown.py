"""The markdown helpers render hostile text as the literal text, and nothing more."""

from __future__ import annotations

import pytest

from triagebot.report import markdown as md


@pytest.mark.parametrize("text", ["@user", "cc @vllm-project/maintainers", "a@b"])
def test_mentions_are_broken_by_a_zero_width_joiner(text: str) -> None:
    out = md.neutralize_mentions(text)
    assert "@" + md.ZWJ in out
    assert out.replace(md.ZWJ, "") == text


def test_email_like_and_lone_at_signs_are_left_alone() -> None:
    assert md.neutralize_mentions("a @ b") == "a @ b"


def test_inline_escapes_html_markdown_and_newlines() -> None:
    out = md.inline("<script>alert(1)</script> [x](http://e) | `c` *b*\n@u")
    assert "<" not in out and ">" not in out
    assert "\n" not in out
    assert "\\[x\\]" in out and "\\|" in out and "\\`c\\`" in out and "\\*b\\*" in out
    assert "@" + md.ZWJ + "u" in out


def test_inline_is_bounded() -> None:
    assert len(md.inline("x" * 10_000, 50)) == 50


@pytest.mark.parametrize("body", ["plain", "has ``` inside", "```` four\n`````` six"])
def test_fence_is_longer_than_any_backtick_run(body: str) -> None:
    out = md.fence(body, "python")
    opener = out.split("\n", 1)[0]
    ticks = len(opener) - len("python")
    assert ticks > md.longest_backtick_run(body) and ticks >= 3
    assert out.endswith("\n" + "`" * ticks)


def test_fence_language_is_sanitised() -> None:
    assert md.fence("x", "py thon\n<b>").split("\n", 1)[0] == "```pythonb"


@pytest.mark.parametrize("text", ["a`b", "`start", "``x``"])
def test_code_span_holds_backticks(text: str) -> None:
    out = md.code_span(text)
    run = md.longest_backtick_run(text)
    assert out.startswith("`" * (run + 1)) and out.endswith("`" * (run + 1))


def test_mermaid_label_keeps_only_safe_characters() -> None:
    assert md.mermaid_label('spec "+" graph]; click X') == '"spec + graph click X"'
    assert md.mermaid_label("@@@") == '"cell"'


def test_bar_chart_shape() -> None:
    chart = md.bar_chart("t", ["a", "b"], [1.0, 2.5], "tok/s")
    assert chart.startswith("```mermaid\nxychart-beta\n")
    assert 'x-axis ["a", "b"]' in chart and "bar [1.00, 2.50]" in chart


def test_shorten_keeps_head_and_tail() -> None:
    text = "".join(f"{i:05d}\n" for i in range(10_000))
    out = md.shorten(text, 1000)
    assert len(out) < 1100 and out.startswith("00000") and out.rstrip().endswith("09999")
    assert "left out" in out


def test_cut_closes_open_fence_and_details() -> None:
    text = "<details><summary>s</summary>\n\n````python\n" + "x = 1\n" * 1000
    out = md.cut(text, 500, "_cut_")
    assert len(out) <= 500
    assert "\n````\n" in out and out.count("</details>") == 1
    assert out.rstrip().endswith("_cut_")


def test_close_open_blocks_ignores_shorter_inner_fences() -> None:
    text = "````\n```\ninner\n```\n"
    assert md.close_open_blocks(text).endswith("\n````")
