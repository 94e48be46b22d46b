"""End to end: composed reports, the seeds and the labelled dev set through parse_report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import seed_path, shared_files, shared_path
from tests.parse.test_fuzz_dev import scorer
from triagebot.parse import parse_report

FIXTURES = Path(__file__).parent / "fixtures" / "reports"
CASES = sorted(FIXTURES.glob("*.md"))


def _expectation(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.with_suffix(".expect.json").read_text())
    return result


def _check(actual: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    problems = []
    for field, want in expected.items():
        got = actual.get(field)
        if isinstance(want, list) and isinstance(got, list):
            ok = sorted(map(str, want)) == sorted(map(str, got))
        elif isinstance(want, float) and got is not None:
            ok = abs(float(got) - want) < 1e-9
        else:
            ok = got == want
        if not ok:
            problems.append(f"{field}: want {want!r}, got {got!r}")
    return problems


def check_labelled(path: Path) -> list[str]:
    """What `path` (a report beside its .expect.json) gets wrong, field by field."""
    spec = _expectation(path)
    req = parse_report(path.read_bytes(), title=spec["title"], repo=spec.get("repo"))
    return _check(req.model_dump(), spec["expect"])


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_composed_report(path: Path) -> None:
    problems = check_labelled(path)
    assert not problems, "\n".join(problems)


def test_every_fixture_has_an_expectation() -> None:
    assert CASES, "no composed reports found"
    for path in CASES:
        assert path.with_suffix(".expect.json").exists(), path.name


def test_values_carry_evidence() -> None:
    path = FIXTURES / "sglang_eagle3_flags.md"
    req = parse_report(path.read_text(), title="EAGLE3 slower")
    lines = path.read_text().splitlines()
    for field in ("models", "draft_models", "spec_method", "num_speculative_tokens",
                  "tensor_parallel_size", "concurrency"):
        evidence = req.evidence.get(field)
        assert evidence, f"{field} has no evidence"
        for ev in evidence:
            assert ev.line == 0 or ev.text.strip() in lines[ev.line - 1].strip() \
                or lines[ev.line - 1].strip() in ev.text, (field, ev)


SEED_EXPECT: dict[str, dict[str, Any]] = {
    "000": {"engine": "vllm", "engine_version": "0.17.1", "models": ["zai-org/GLM-OCR"],
            "spec_method": "mtp", "num_speculative_tokens": [1], "gpu_count": 2,
            "modes_compared": ["spec", "no_spec", "eager", "cudagraph"], "max_tokens": 500,
            "temperature": 0.0, "modality": "image", "tensor_parallel_size": 1},
    "003": {"engine": "vllm", "spec_method": "eagle3", "num_speculative_tokens": [3],
            "draft_models": ["RedHatAI/gpt-oss-20b-speculator.eagle3"], "concurrency": 16,
            "model_runner": "v2", "temperature": 1.0},
    "004": {"engine": "vllm", "engine_version": None, "models": ["deepseek-ai/DeepSeek-V3.2"],
            "tensor_parallel_size": 8, "expert_parallel": True, "spec_method": "mtp",
            "num_speculative_tokens": [1], "concurrency": 64, "max_tokens": 2048,
            "temperature": 0.0, "symptom": "other"},
}


@pytest.mark.parametrize("seed", sorted(SEED_EXPECT))
def test_seed(seed: str) -> None:
    path = seed_path(seed)
    title = json.loads(shared_path(f"parse-dev/seed-{seed}.json").read_text())["title"]
    req = parse_report(path.read_bytes(), title=title)
    problems = _check(req.model_dump(), SEED_EXPECT[seed])
    assert not problems, "\n".join(problems)


def test_seed_000_ignores_the_ai_fix_plan_in_the_page() -> None:
    # The scraped page ends with a generated "fix plan" that invents `mtp_optimized`.
    path = seed_path("000")
    req = parse_report(path.read_bytes())
    assert "mtp_optimized" not in json.dumps(req.model_dump())


def test_seed_004_ignores_versions_in_downstream_commits() -> None:
    # Commit messages quoted under the PR mention "vLLM 0.17.0"; the PR names no version.
    path = seed_path("004")
    req = parse_report(path.read_bytes())
    assert req.engine_version is None


@pytest.mark.parametrize("path", shared_files("parse-dev", "*.json")
                         + shared_files("parse-dev-new", "*.json"))
def test_dev_scope(path: Path) -> None:
    item = json.loads(path.read_text())
    req = parse_report(item["text"], title=item["title"],
                       repo=scorer().repo_of(item.get("url")))
    assert req.in_scope == item["labels"]["in_scope"], req.classification
    if not req.in_scope:
        assert req.classification.out_of_scope_reasons
    else:
        assert req.classification.in_scope_reasons
