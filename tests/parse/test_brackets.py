from __future__ import annotations

from triagebot.parse.common import brackets


def test_brackets_inside_strings_are_skipped() -> None:
    text = """f(a="(", b='[x]', c={"k": "}"})"""
    assert [c for _, c in brackets(text)] == ["(", "{", "}", ")"]


def test_an_escaped_quote_does_not_close_the_string() -> None:
    text = r'{"a": "x\"}", "b": [1]}'
    assert "".join(c for _, c in brackets(text)) == "{[]}"


def test_only_the_named_quotes_open_strings() -> None:
    text = """{'a': "}"}"""
    assert "".join(c for _, c in brackets(text, quotes='"')) == "{}"
    assert "".join(c for _, c in brackets(text, quotes="")) == "{}}"


def test_the_window_and_the_indexes() -> None:
    text = "ab(cd)ef(g)"
    assert list(brackets(text, 3)) == [(5, ")"), (8, "("), (10, ")")]
    assert list(brackets(text, 0, 6)) == [(2, "("), (5, ")")]
