"""10,000 hostile values through parse -> plan -> render (issue 3: issue text never becomes code).

Each value carries a marker. It must either be refused (a PlanRejected that names a
field) or reach the script only inside string literals or comments: every Python token
holding the marker is a STRING or COMMENT token, and the shell runner never holds it
outside single quotes.
"""

from __future__ import annotations

import io
import json
import random
import re
import tokenize

import pytest

from triagebot.errors import PlanRejected
from triagebot.overrides import ReproOptions
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.render import render_cell, render_runner

MARK = "ZQX"
FRAGMENTS = [
    '"', "'", '"""', "'''", "\\", "\n", "\r\n", "\x00", "`", "$(id)", "${IFS}", ";", "&&",
    "|", "#", "{{ cell }}", "{% raw %}", "__import__('os').system('id')", "exec(", "eval(",
    "os.system", "\u2028", "\u0435", "ｍｏｄｅｌ", "\uff02", "\u02bc", "\u200b", "%(x)s",
    "{0}", "../..", "--trust-remote-code", "\t", "\x1b[31m", "'; rm -rf / #",
    '"); import os; os.system("id"); ("', "\\x41", "\\N{QUOTATION MARK}", "a/b", "org/model",
    "0.17.1", "mtp", "-", ".", "_", "\x7f", "\u00a0", "ß", "\ufeff", "</details>", "@admin",
]

SITES = [
    "vllm serve {v} --speculative-config '{{\"method\": \"mtp\", \"num_speculative_tokens\": 1}}'",
    "llm = LLM(model=\"{j}\", speculative_config={{\"method\": \"eagle3\", \"model\": \"{j}\", "
    "\"num_speculative_tokens\": 3}})",
    "vllm serve org/model --speculative-config '{{\"method\": \"{j}\", "
    "\"num_speculative_tokens\": 2}}'",
    "vllm serve org/model -sc '{{\"method\": \"mtp\", \"num_speculative_tokens\": 1, "
    "\"{j}\": \"{j}\"}}'",
    "VLLM_USE_V2_MODEL_RUNNER={v} vllm serve org/model --speculative-config "
    "'{{\"method\": \"mtp\", \"num_speculative_tokens\": 1}}'",
    "export VLLM_LOGGING_LEVEL={v}\nvllm serve org/model --speculative-config "
    "'{{\"method\": \"ngram\", \"num_speculative_tokens\": 4}}'",
    "| config | tok/s |\n|---|---|\n| {v} | 100.5 |\n| MRV2 {v} | 120.0 |",
    "vllm==0.{v}",
    "vllm serve org/model -cc '{{\"cudagraph_mode\": \"{j}\"}}' --speculative-config "
    "'{{\"method\": \"mtp\", \"num_speculative_tokens\": 1}}'",
    "vllm serve org/model -cc '{{\"encoder_cudagraph_token_budgets\": [\"{j}\"], "
    "\"cudagraph_mm_encoder\": true}}'",
    "python -m sglang.launch_server --model-path {v} --speculative-algorithm EAGLE",
    "vllm serve org/model --tensor-parallel-size {v} --speculative-config "
    "'{{\"method\": \"mtp\", \"num_speculative_tokens\": 1}}'",
]
PREAMBLE = "MTP makes decoding slower than no speculation on vLLM 0.17.1 with CUDA graphs.\n\n"


def hostile_values(n: int, seed: int = 20261121) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = [rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 4))]
        parts.insert(rng.randint(0, len(parts)), MARK)
        out.append("".join(parts))
    return out


def report_for(value: str, site: str) -> str:
    escaped = json.dumps(value)[1:-1]
    return PREAMBLE + "```\n" + site.format(v=value, j=escaped) + "\n```\n"


def _python_marker_tokens_are_inert(text: str) -> None:
    if MARK not in text:
        return
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if MARK in tok.string:
            assert tok.type in (tokenize.STRING, tokenize.COMMENT), (
                f"marker in a {tokenize.tok_name[tok.type]} token: {tok.string!r}")


_SINGLE_QUOTED = re.compile(r"'[^']*'")


def _shell_marker_is_quoted(text: str) -> None:
    assert MARK not in _SINGLE_QUOTED.sub("", text)


def check_value(value: str, site: str, *, runner: bool) -> str:
    request = parse_report(report_for(value, site).encode("utf-8", "surrogatepass"),
                           title=f"[Bug] MTP slower {value}")
    try:
        plan = build_plan(request, ReproOptions(runs=2))
    except PlanRejected as exc:
        assert str(exc) and exc.field, "a refusal must say what it refused"
        return "rejected"
    # Cells of one plan share the values that came from the report; one is enough for
    # most values, and every cell is rendered whenever the runner script is checked.
    scripts = [render_cell(plan, c) for c in (plan.cells if runner else plan.cells[:1])]
    for s in scripts:
        _python_marker_tokens_are_inert(s.text)
        assert "trust_remote_code=True" not in s.text
    if runner:
        _shell_marker_is_quoted(render_runner(plan, scripts).text)
    return "rendered"


def test_ten_thousand_hostile_values() -> None:
    values = hostile_values(10_000)
    outcomes = {"rejected": 0, "rendered": 0}
    for i, value in enumerate(values):
        site = SITES[i % len(SITES)]
        outcomes[check_value(value, site, runner=i % 100 == 0)] += 1
    # Both paths are exercised: some values are refused, and the reports whose hostile
    # value sits somewhere harmless (a label, a title) still render.
    assert outcomes["rejected"] > 0 and outcomes["rendered"] > 0, outcomes


@pytest.mark.parametrize("site", SITES)
def test_each_site_with_a_classic_injection(site: str) -> None:
    check_value(f'{MARK}"); __import__("os").system("id"); ("', site, runner=True)
