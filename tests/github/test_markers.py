from __future__ import annotations

import pytest

from triagebot.github.markers import has_marker, marker, with_marker


def test_marker_format() -> None:
    assert marker("job=abc123") == "<!-- triagebot:v1 job=abc123 -->"
    assert marker("reply=123456789") == "<!-- triagebot:v1 reply=123456789 -->"


@pytest.mark.parametrize("key", [
    "", "job", "=abc", "Job=abc", "job=", "job=a b", "job=a-->", "job=x\n", "job=é",
    "job=" + "a" * 81, "job=a=b", "job=<b>",
])
def test_marker_rejects_bad_keys(key: str) -> None:
    with pytest.raises(ValueError, match="marker key"):
        marker(key)


def test_with_marker_adds_the_first_line_once() -> None:
    body = with_marker("job=abc", "report")
    assert body == "<!-- triagebot:v1 job=abc -->\nreport"
    assert with_marker("job=abc", body) == body
    assert has_marker(body, "job=abc")
    assert has_marker("<!-- triagebot:v1 job=abc -->\r\nreport", "job=abc")


@pytest.mark.parametrize("body", [
    "report\n<!-- triagebot:v1 job=abc -->",
    "> <!-- triagebot:v1 job=abc -->",
    "<!-- triagebot:v1 job=abcd -->\nreport",
    "<!-- triagebot:v1 job=ab -->",
    "",
])
def test_has_marker_wants_the_exact_marker_on_the_first_line(body: str) -> None:
    assert not has_marker(body, "job=abc")
