"""Reported numbers: composed fixtures for every form, plus the real seeds read in place."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import dev_lines as _dev
from tests.conftest import seed_lines as _seed
from triagebot.parse.results import find_reported_numbers, summarise
from triagebot.request_model import Evidence, ReportedNumber

FIXTURES = Path(__file__).parent / "fixtures" / "results"

Triple = tuple[str, float, str | None]
LLAMA_ARM = "llama-speculative, qwen 7B target with a 0.5B draft"


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()


def _triples(lines: list[str]) -> list[Triple]:
    return [(n.metric, round(n.value, 6), n.arm) for n in find_reported_numbers(lines)]


# (fixture, numbers that must be found as (metric, value, arm))
CASES: list[tuple[str, list[Triple]]] = [
    (
        "serve_blocks.md",
        [
            ("output_tok_s", 795.31, "Baseline (no spec)"),
            ("ttft_ms_p99", 190.02, "Baseline (no spec)"),
            ("itl_ms_median", 9.61, "Baseline (no spec)"),
            ("output_tok_s", 619.77, "With EAGLE-3 (k=3)"),
            ("acceptance_rate", 0.4127, "With EAGLE-3 (k=3)"),
            ("acceptance_length", 2.24, "With EAGLE-3 (k=3)"),
            ("drafted_tokens", 43890, "With EAGLE-3 (k=3)"),
            ("accepted_tokens", 18113, "With EAGLE-3 (k=3)"),
            ("per_position_acceptance[2]", 0.2224, "With EAGLE-3 (k=3)"),
        ],
    ),
    (
        "side_by_side.txt",
        [
            ("output_tok_s", 1137.4, "Eager"),
            ("output_tok_s", 1436.02, "Graph (piecewise)"),
            ("output_tok_s", 1443.81, "Graph (full)"),
            ("acceptance_rate", 0.5188, "Graph (piecewise)"),
            ("per_position_acceptance[0]", 0.7155, "Graph (full)"),
        ],
    ),
    (
        "pipe_tables.md",
        [
            ("output_tok_s", 142.7, "no spec, graphs"),
            ("acceptance_length", 1.61, "ngram k=4, graphs"),
            ("speedup", 0.43, "ngram k=4, eager"),
            ("output_tok_s", 2004.5, "before"),
            ("ttft_ms_mean", 44.7, "after"),
        ],
    ),
    (
        "tab_table.txt",
        [
            ("output_tok_s", 88.4, "baseline"),
            ("acceptance_rate", 0.745, "mtp1"),
            ("ttft_ms_median", 35.8, "mtp3"),
        ],
    ),
    (
        "spec_logs.log",
        [
            ("acceptance_length", 2.41, "with MTP"),
            ("accepted_tokens", 1210, "with MTP"),
            ("drafted_tokens", 2565, "with MTP"),
            ("per_position_acceptance[0]", 0.702, "with MTP"),
            ("per_position_acceptance[2]", 0.275, "with MTP"),
            ("acceptance_rate", 0.472, "with MTP"),
            ("acceptance_rate", 0.635, "with MTP"),
            ("per_position_acceptance[1]", 0.529, "with MTP"),
            ("acceptance_rate", 0.612, "with MTP"),
            ("accepted_tokens", 9120, "with MTP"),
        ],
    ),
    (
        "offline_tools.txt",
        [
            ("request_throughput", 9.84, "Offline throughput, spec off"),
            ("output_tok_s", 2516.05, "Offline throughput, spec off"),
            ("total_tok_s", 1890.55, "Old build prints only total tokens"),
            ("e2e_latency_s", 2.731, "Latency run (batch 1)"),
        ],
    ),
    (
        "sglang.txt",
        [
            ("acceptance_length", 3.12, "server log with EAGLE3"),
            ("acceptance_rate", 0.78, "server log with EAGLE3"),
            ("output_tok_s", 171.84, "server log with EAGLE3"),
            ("output_tok_s", 455.1, "bench_serving"),
            ("e2e_latency_s", 3.12055, "bench_serving"),
            ("acceptance_length", 3.05, "bench_serving"),
        ],
    ),
    (
        "llamacpp.txt",
        [
            ("output_tok_s", 121.615, LLAMA_ARM),
            ("drafted_tokens", 480, LLAMA_ARM),
            ("accepted_tokens", 301, LLAMA_ARM),
            ("acceptance_rate", 0.62708, LLAMA_ARM),
            ("acceptance_rate", 0.57143, "server side"),
            ("output_tok_s", 84.73, None),
        ],
    ),
    (
        "json_fragments.txt",
        [
            ("output_tok_s", 812.5, "saved result (trimmed)"),
            ("acceptance_rate", 0.661, "saved result (trimmed)"),
            ("acceptance_length", 2.98, "saved result (trimmed)"),
            ("per_position_acceptance[1]", 0.62, "saved result (trimmed)"),
            ("output_tok_s", 38.2, "/v1/status on the mac"),
            ("acceptance_rate", 0.4146, "/v1/status on the mac"),
        ],
    ),
    (
        "prose.md",
        [
            ("output_tok_s", 41.3, "eager_base"),
            ("output_tok_s", 66.0, "eager_mtp"),
            ("speedup", 1.598, "eager_mtp"),
            ("output_tok_s", 180.25, "graph_base"),
            ("output_tok_s", 150.0, "graph_mtp"),
            ("speedup", 0.83, "graph_mtp"),
            ("acceptance_rate", 0.72, "graph_mtp"),
            ("acceptance_length", 1.72, "graph_mtp"),
            ("acceptance_rate", 0.35, None),
            ("speedup", 0.5, None),
        ],
    ),
]


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[c[0] for c in CASES])
def test_fixture_numbers(name: str, expected: list[Triple]) -> None:
    found = _triples(_lines(name))
    for item in expected:
        assert item in found, item


# Numbers a fixture must never yield (prompt speeds, code, settings, versions, dates).
ABSENT: list[tuple[str, list[tuple[str, float]]]] = [
    ("llamacpp.txt", [("output_tok_s", 784.314), ("output_tok_s", 333.06)]),
    ("spec_logs.log", [("output_tok_s", 212.4)]),
    ("prose.md", [("speedup", 2.0)]),
]


@pytest.mark.parametrize(("name", "absent"), ABSENT, ids=[a[0] for a in ABSENT])
def test_fixture_non_numbers(name: str, absent: list[tuple[str, float]]) -> None:
    found = {(m, v) for m, v, _ in _triples(_lines(name))}
    for item in absent:
        assert item not in found, item


def test_code_versions_and_dates_yield_nothing() -> None:
    assert find_reported_numbers(_lines("code_traps.md")) == []


def test_evidence_points_at_the_line() -> None:
    lines = _lines("serve_blocks.md")
    for num in find_reported_numbers(lines):
        assert num.evidence.source == "results"
        assert lines[num.evidence.line - 1] == num.evidence.text


SUMMARIES: list[tuple[str, dict[str, float] | None, float | None, float | None]] = [
    ("serve_blocks.md", {"Baseline (no spec)": 795.31, "With EAGLE-3 (k=3)": 619.77}, 0.4127, 2.24),
    (
        "side_by_side.txt",
        {"Eager": 1137.4, "Graph (piecewise)": 1436.02, "Graph (full)": 1443.81},
        0.521,
        2.56,
    ),
    ("spec_logs.log", None, 0.472, 2.41),
    ("tab_table.txt", {"baseline": 88.4, "mtp1": 103.9, "mtp3": 97.0}, 0.745, None),
    ("code_traps.md", None, None, None),
]


@pytest.mark.parametrize(
    ("name", "tput", "rate", "length"), SUMMARIES, ids=[s[0] for s in SUMMARIES]
)
def test_summaries(
    name: str, tput: dict[str, float] | None, rate: float | None, length: float | None
) -> None:
    summary = summarise(find_reported_numbers(_lines(name)))
    assert summary.throughput_tok_s == tput
    assert summary.acceptance_rate == rate
    assert summary.acceptance_length == length


def _num(metric: str, value: float, arm: str | None = None) -> ReportedNumber:
    return ReportedNumber(
        metric=metric, value=value, arm=arm, evidence=Evidence(line=1, text="", source="results")
    )


def test_summarise_rules() -> None:
    only_unarmed = summarise([_num("output_tok_s", 12.0), _num("output_tok_s", 13.0)])
    assert only_unarmed.throughput_tok_s == {"reported": 12.0}
    mixed = summarise(
        [
            _num("output_tok_s", 12.0),
            _num("output_tok_s", 30.0, "spec"),
            _num("output_tok_s", 31.0, "spec"),
        ]
    )
    assert mixed.throughput_tok_s == {"spec": 30.0}
    # A "rate" above one is a length by another name.
    lengthy = summarise([_num("acceptance_rate", 5.6)])
    assert lengthy.acceptance_rate is None and lengthy.acceptance_length == 5.6
    assert summarise([]).throughput_tok_s is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("acceptance rate: 5.6", ("acceptance_length", 5.6)),
        ("acceptance rate: 64", ("acceptance_rate", 0.64)),
        ("Previous AL=3.53", ("acceptance_length", 3.53)),
        ("- spec on: 1,204.5 tok/s", ("output_tok_s", 1204.5)),
        ("ttft: 62.5 ms", ("ttft_ms_mean", 62.5)),
        ("- Avg latency: 850ms", ("e2e_latency_s", 0.85)),
    ],
)
def test_single_lines(line: str, expected: tuple[str, float]) -> None:
    found = [(n.metric, round(n.value, 6)) for n in find_reported_numbers([line])]
    assert expected in found


@pytest.mark.parametrize(
    "line",
    [
        "SamplingParams(max_tokens=500, temperature=0.0)",
        'print(f"{name}: {tps:.2f} tok/s")',
        "vllm serve m --max-num-seqs 64 --num-speculative-tokens 3 \\",
        "Running on 8x H100 with vllm 0.10.1 since 2025-03-04",
        "INFO 01-02 03:04:05 [loggers.py:1] Engine 000: Avg generation throughput: 40.1 tokens/s",
        "Position 0: 98.5",
    ],
)
def test_lines_that_are_not_results(line: str) -> None:
    assert find_reported_numbers([line]) == []


# --- the real seeds and parse-dev items, read in place -----------------------------------




def test_seed_000_prose_bullets() -> None:
    numbers = find_reported_numbers(_seed("000"))
    summary = summarise(numbers)
    assert summary.throughput_tok_s == {
        "no_mtp_eager": 60.082,
        "no_mtp_graph": 465.308,
        "mtp_eager": 91.792,
        "mtp_graph": 260.372,
    }
    assert summary.acceptance_rate == 0.69
    assert summary.acceptance_length == 1.69
    speedups = {(n.arm, n.value) for n in numbers if n.metric == "speedup"}
    assert ("mtp_graph", 0.56) in speedups
    # The script's print(f"... tok/s") and max_tokens=500 are code, not results.
    assert all(n.value != 500 for n in numbers)


def test_seed_001_two_blocks_under_labels() -> None:
    summary = summarise(find_reported_numbers(_seed("001")))
    assert summary.throughput_tok_s == {"eager": 451.65, "cuda graph": 483.91}
    assert summary.acceptance_rate is None


def test_seed_003_side_by_side_table() -> None:
    numbers = find_reported_numbers(_seed("003"))
    summary = summarise(numbers)
    assert summary.throughput_tok_s == {
        "MRV1": 1813.92,
        "MRV2 (strict)": 2362.12,
        "MRV2 (probabilistic)": 2392.5,
    }
    assert summary.acceptance_rate == 0.3533
    assert summary.acceptance_length == 2.06
    pos = [(n.arm, n.value) for n in numbers if n.metric == "per_position_acceptance[2]"]
    assert pos == [("MRV1", 0.1899), ("MRV2 (strict)", 0.2331), ("MRV2 (probabilistic)", 0.2624)]


def test_seed_004_two_serving_blocks() -> None:
    numbers = find_reported_numbers(_seed("004"))
    tput = [(n.arm, n.value) for n in numbers if n.metric == "output_tok_s"]
    assert tput == [("Main", 943.04), ("PR", 2116.2)]
    summary = summarise(numbers)
    assert summary.acceptance_rate == 0.9943
    assert summary.acceptance_length == 1.99


def test_parse_dev_offline_spec_decode_output() -> None:
    summary = summarise(find_reported_numbers(_dev("vllm-project__vllm__26191")))
    assert summary.acceptance_length == 3.53


def test_parse_dev_latency_bullets_take_the_bold_heading() -> None:
    numbers = find_reported_numbers(_dev("vllm-project__vllm__35387"))
    latencies = [(n.arm, n.value) for n in numbers if n.metric == "e2e_latency_s"]
    assert latencies[:2] == [("Baseline (no MTP, no prefix caching)", 0.894), ("With MTP", 1.578)]
    assert summarise(numbers).throughput_tok_s is None


def test_parse_dev_plain_metrics() -> None:
    numbers = find_reported_numbers(_dev("vllm-project__vllm__6494"))
    values = [n.value for n in numbers if n.metric == "output_tok_s"]
    assert values == [485.52, 301.09]


@pytest.mark.parametrize("name", ["vllm-project__vllm__15025", "sgl-project__sglang__6160"])
def test_parse_dev_without_numbers(name: str) -> None:
    assert summarise(find_reported_numbers(_dev(name))).throughput_tok_s is None


# --- robustness --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [""],
        ["\x00\xff 1.5x tok/s | | |" * 100],
        ["=" * 50 + " Serving Benchmark Result " + "=" * 50, "Position 99999999999999: 1"],
        ["SpecDecoding metrics: Per-position acceptance rate: , , ,", "Throughput: requests/s"],
        ["| a |", "|---|", "| 1 |"],
        ["9" * 100_000 + " tok/s"],
    ],
)
def test_garbage_never_raises(lines: list[str]) -> None:
    find_reported_numbers(lines)


def test_large_input_is_fast() -> None:
    block = [line for f in sorted(FIXTURES.iterdir()) for line in _lines(f.name)]
    block.append("x" * 20_000)
    lines = block * (5_000_000 // sum(len(x) + 1 for x in block) + 1)
    start = time.perf_counter()
    find_reported_numbers(lines)
    assert time.perf_counter() - start < 5.0  # generous: a guard against quadratic blow-ups
