"""The report's layout as a reader meets it: what the first screen holds, and the
collapsed sections after it. Shared by the report goldens and the App's end-to-end test,
so the comment posted on a thread is held to the same layout as `report.md`.

"Rendered lines" counts what a reader scrolls past on GitHub, honestly rather than
generously: every non-blank markdown line counts, a table row is one line (the header
and its `|---|` rule are two), an HTML comment (the sticky comment's marker) renders
nothing and counts none, and a line of prose counts once per 100 characters begun, since
GitHub wraps a long paragraph or list item at about that width.
"""

from __future__ import annotations

import math
import re

FIRST_SCREEN_LINES = 25
WRAP = 100
DETAILS = re.compile(r"^<details><summary>(.+)</summary>$")
# The sections after the first screen, in the order a maintainer asks for them; a report
# holds those its findings have, in this order.
SECTION_ORDER = (
    "Comparisons",
    "Against the report",
    "Cells",
    "Speculation never engaged",
    "Why speculation is slower or faster here",
    "Speculative decoding",
    "Where a step's time goes",
    "CUDA graphs",
    "Vision encoder",
    "Diagnostics and hints, with the log lines behind them",
    "Environment",
    "Method and plan notes",
    "Reproduce with",
)
ALWAYS = ("Comparisons", "Cells", "Method and plan notes")


def rendered_lines(markdown: str) -> int:
    """How many lines `markdown` takes on screen, by the rule in the module docstring."""
    count = 0
    for line in markdown.splitlines():
        text = line.strip()
        if not text or re.fullmatch(r"<!--.*-->", text):
            continue
        count += 1 if text.startswith("|") else max(1, math.ceil(len(text) / WRAP))
    return count


def first_screen(markdown: str) -> str:
    """Everything before the first collapsed section."""
    at = markdown.find("\n<details>")
    assert at >= 0, "no collapsed section"
    return markdown[:at]


def sections(markdown: str) -> list[str]:
    """The summaries of the collapsed sections, in order."""
    return [m.group(1) for line in markdown.splitlines() if (m := DETAILS.match(line))]


def assert_layout(markdown: str) -> None:
    """The answer on the first screen, then only collapsed sections, in the order asked."""
    head = first_screen(markdown)
    lines = rendered_lines(head)
    assert lines <= FIRST_SCREEN_LINES, f"first screen is {lines} rendered lines:\n{head}"
    for part in ("**Deciding ratio**: ", "**Acceptance**: ",
                 "**What this runner could not answer**", "Why this verdict: "):
        assert part in head, f"the first screen lacks {part!r}"
    assert re.search(r"^(<!--.*-->\n)?\*\*[A-Z][a-z ]+\*\*: ", head), head[:200]
    found = sections(markdown)
    assert [s for s in SECTION_ORDER if s in found] == found, found
    assert all(s in found for s in ALWAYS), found
    assert markdown.count("<details>") == markdown.count("</details>") == len(found)
    # Nothing outside the collapsed sections until the last one has closed (then only a
    # footer): no heading, table or paragraph left open between them.
    end = markdown.rindex("</details>") + len("</details>")
    outside = re.sub(r"<details>.*?</details>", "", markdown[len(head):end], flags=re.S)
    assert not outside.strip(), outside
    footer = markdown[end:].lstrip("\n")
    assert footer.startswith("---\n"), footer[:200]


def section(markdown: str, title: str) -> str:
    """The body of the collapsed section `title` ("" when the report has none)."""
    start = markdown.find(f"<details><summary>{title}</summary>\n")
    if start < 0:
        return ""
    return markdown[start:markdown.index("\n</details>", start)].split("\n", 1)[1]
