"""The auto-triage comment quotes, for every value it states, the words it was read from,
and names the `key=value` a maintainer writes to correct it; a value the report gives
two ways is left empty with both readings shown (issue 43, "What else")."""

from __future__ import annotations

import re

from triagebot.decisions.replies import triage_summary
from triagebot.parse import parse_report

REPORT = """\
Hardware: 2x H100 80GB, vLLM 0.11.0

| run | tok/s |
|---|---|
| baseline | 120 |
| eagle3 | 95 |

```
vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2 \\
  --speculative-config '{"method": "eagle3", "model": "someorg/llama31-eagle3"}' \\
  --num-speculative-tokens 3
```
Sampling at temperature 0.7 in one script and temperature 0 in the other.
"""


def _summary() -> str:
    request = parse_report(REPORT, title="EAGLE3 slower than baseline", repo="vllm-project/vllm")
    return triage_summary(request, command_name="triagebot", will_run=False, is_pr=False,
                          head_sha=None)


def test_every_stated_value_quotes_where_it_was_read() -> None:
    rows = [ln for ln in _summary().splitlines() if ln.startswith("| ") and "---" not in ln]
    body = rows[1:]  # past the header
    assert len(body) >= 8
    for row in body:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == 4, row  # a `|` in a quote must not split the row
        assert cells[2] != "–" and re.match(r"(title|line \d+):", cells[2]), row


def test_the_quote_is_the_line_the_value_came_from() -> None:
    text = _summary()
    tp = next(ln for ln in text.splitlines() if ln.startswith("| tensor parallel size"))
    assert "line 9:" in tp and "-tp 2" in tp and "`tp=…`" in tp


def test_a_value_read_two_ways_is_left_empty_and_both_readings_shown() -> None:
    text = _summary()
    assert "| temperature |" not in text
    assert "Left empty because the report gives more than one value" in text
    assert "0.7" in text and "0.0" in text
