"""The quieter signals, on what real vLLM printed and saved (tests/fixtures/vllm_cpu/).

The readers are the rendered templates' own functions (the offline script's names for
vLLM's counters, the serve script's reading of `vllm bench serve` JSON and its run record),
executed without running `measure`; the analysis is triagebot's (`findings.summarize`,
`spec.explain_ratio`, `spec.step_cost`). Speculative decoding's tokens per target step
is nearly deterministic under greedy sampling while tok/s is not: across two releases,
three sources (offline counters, serve JSON, server log lines) and a twelvefold change in
throughput, the recorded acceptance length stays at 3.90-3.91, and the explanation says
so and puts the change on the step cost. The recordings hold no pair whose acceptance
differs (the stand-in drafter accepts alike in every release), so the "explained by
acceptance" wording is tested on synthetic inputs in test_spec.py only.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from triagebot.analyze import spec
from triagebot.analyze.findings import summarize
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.parse.results import find_reported_numbers
from triagebot.plan import build_plan
from triagebot.plan_model import Cell
from triagebot.render import render_plan
from triagebot.run_result import RunResult, SpecCounters

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_cpu"
REPORT = (b"Speculative decoding on vLLM with ngram:\n\n```bash\n"
          b"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
          b"'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'\n```\n")
_RUN = re.compile(r"triagebot: run \d+/\d+: (\d+) tokens in ([\d.]+) s")


def _template(workload: str, spec_words: str) -> tuple[Cell, dict[str, Any]]:
    """A cpu plan's cell and its rendered script's module namespace (nothing runs)."""
    words = ["engine=vllm", "version=0.32.0", "gpu=cpu", f"workload={workload}",
             f"spec={spec_words}", "modes=eager", "runs=2", "warmups=0"]
    plan = build_plan(parse_report(REPORT), parse_overrides(words))
    cell = plan.cells[0]
    script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
    namespace: dict[str, Any] = {"__name__": "recorded_template"}
    # Our own rendered script: its top level only defines; `main` waits for __main__.
    exec(compile(script.text, script.filename, "exec"), namespace)
    return cell, namespace


def _offline(name: str) -> RunResult:
    """A RunResult from an offline log: its run lines, and its get_metrics dump mapped
    through the template's own names for the counters."""
    cell, ns = _template("offline", "ngram:3")
    text = (FIXTURES / name).read_text()
    runs = [ns["run_record"](int(t), float(s)) for t, s in _RUN.findall(text)]
    counters: SpecCounters | None = None
    dump = [line for line in text.splitlines() if "triagebot: get_metrics " in line]
    if dump:
        snap = {key: 0 for key in ns["SPEC_NAMES"].values()}
        per_pos: list[int] = []
        for kind, metric, value, values in json.loads(dump[0].split("get_metrics ", 1)[1]):
            if kind == "Counter" and metric in ns["SPEC_NAMES"]:
                snap[ns["SPEC_NAMES"][metric]] += int(value)
            elif kind == "Vector" and metric == ns["PER_POS_NAME"]:
                per_pos = [int(v) for v in values]
        counters = SpecCounters(**snap, per_position_accepted=per_pos)
    return RunResult(cell_id=cell.cell_id, engine="vllm", status="ok", runs=runs,
                     spec=counters)


def _serve(name: str) -> RunResult:
    """A RunResult from a saved `vllm bench serve` JSON, read by the serve template."""
    cell, ns = _template("serve", "ngram:3")
    doc = json.loads((FIXTURES / name).read_text())
    run = ns["run_record"](doc["total_output_tokens"], doc["duration"])
    counters = ns["spec_from_result"](doc)
    return RunResult(cell_id=cell.cell_id, engine="vllm", status="ok", runs=[run],
                     spec=SpecCounters(**counters) if counters else None)


def _per_step(result: RunResult) -> tuple[float, float]:
    """(tokens per target step, median tok/s) as the findings compute them."""
    cell, _ = _template("offline", "ngram:3")
    found = summarize(cell, [result.model_copy(update={"cell_id": cell.cell_id})])
    assert found.status == "ok" and found.throughput is not None
    assert found.tokens_per_step is not None, "no tokens per step from the recording"
    assert found.tokens_per_step_source == "acceptance length"
    return found.tokens_per_step, found.throughput.median


RECORDED_SPEC = {"offline 0.25.1": _offline("offline-ngram-0.25.1.log"),
                 "offline 0.32.0": _offline("offline-ngram-0.32.0.log"),
                 "serve 0.25.1": _serve("bench-serve-ngram-0.25.1.json"),
                 "serve 0.32.0": _serve("bench-serve-ngram-0.32.0.json")}


def test_acceptance_is_the_quiet_signal_across_releases_and_sources() -> None:
    measured = {name: _per_step(r) for name, r in RECORDED_SPEC.items()}
    lengths = [length for length, _ in measured.values()]
    rates = [tok_s for _, tok_s in measured.values()]
    assert max(lengths) / min(lengths) < 1.01, measured
    assert max(rates) / min(rates) > 5.0, measured
    # vLLM's own log lines say the same length the counters give.
    logged = [n.value for path in sorted(FIXTURES.glob("server-ngram-*.log"))
              for n in find_reported_numbers(path.read_text().splitlines())
              if n.metric == "acceptance_length"]
    assert logged and all(abs(v - lengths[0]) < 0.02 for v in logged), (logged, lengths)


@pytest.mark.parametrize("workload", ["offline", "serve"])
def test_a_release_change_is_put_on_the_step_cost(workload: str) -> None:
    new_len, new_tok_s = _per_step(RECORDED_SPEC[f"{workload} 0.32.0"])
    old_len, old_tok_s = _per_step(RECORDED_SPEC[f"{workload} 0.25.1"])
    ratio = new_tok_s / old_tok_s
    # One or two runs per recording: no interval, so the sentence carries none.
    told = spec.explain_ratio(ratio, None, new_len, old_len)
    assert told is not None
    assert told.driver == "step cost", told.sentence
    assert told.sentence.startswith("acceptance unchanged (3.9")
    assert f"step cost down {abs(told.step_cost_ratio - 1):.0%}" in told.sentence
    assert told.step_cost_ratio == pytest.approx(new_len / old_len / ratio)


def test_spec_against_no_spec_on_one_release_gives_the_break_even() -> None:
    length, spec_tok_s = _per_step(RECORDED_SPEC["offline 0.32.0"])
    base = _offline("offline-nospec-0.32.0.log")
    assert base.spec is None and len(base.runs) == 2
    base_tok_s = statistics.median(r.tok_s for r in base.runs)
    cost = spec.step_cost(length, spec_tok_s, base_tok_s)
    assert cost is not None
    # A spec step verifies ~3.9 tokens; on these recordings it costs less than 3.9 baseline
    # steps, so ngram pays off, and the sentence gives both numbers.
    assert 1.0 < cost.relative_cost < length
    assert cost.spec_pays_off
    assert f"acceptance length {length:.2f}" in cost.sentence
    assert f"costs {cost.relative_cost:.1f}x" in cost.sentence
