"""Environment dumps → Environment: composed fixtures and the real seeds, read in place."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import seed_lines as _seed
from triagebot.parse.envdump import parse_environment

FIXTURES = Path(__file__).parent / "fixtures" / "envdump"


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()


CASES: list[tuple[str, dict[str, Any], int | None]] = [
    (
        "new_style.txt",
        {
            "os": "Rocky Linux 9.4 (Blue Onyx) (x86_64)",
            "python": "3.12.8",
            "torch": "2.9.1+cu129",
            "cuda_build": "12.9",
            "cuda_runtime": "12.9.86",
            "driver": "575.57.08",
            "gpus": ["NVIDIA H200"] * 4,
            "engine_version": "0.23.1rc1.dev1302+ge765bbc97",
            "engine_commit": "e765bbc97",
        },
        4,
    ),
    (
        "old_style.txt",
        {
            "os": "Ubuntu 20.04.6 LTS (x86_64)",
            "python": "3.10.15",
            "torch": "2.4.0+cu121",
            "cuda_runtime": "12.1.105",
            "driver": "550.90.07",
            "gpus": ["NVIDIA L40S"],
            "engine_version": "0.6.3.post1",
            "engine_commit": None,
        },
        1,
    ),
    (
        "sglang_check_env.txt",
        {
            "python": "3.11.10",
            "torch": "2.5.1+cu124",
            "driver": "560.35.03",
            "gpus": ["NVIDIA H100 80GB HBM3"] * 8,
            "engine_version": "0.4.6.post2",
        },
        8,
    ),
    ("nvidia_smi.txt", {"gpus": ["NVIDIA H100 NVL"] * 2, "driver": None}, 2),
    ("pip_list.txt", {"gpus": [], "engine_version": None}, None),
    ("pip_freeze.txt", {"engine_version": None}, None),
]


@pytest.mark.parametrize(("name", "expected", "count"), CASES, ids=[c[0] for c in CASES])
def test_fixture_fields(name: str, expected: dict[str, Any], count: int | None) -> None:
    dump = parse_environment(_lines(name))
    env = dump.environment.model_dump()
    for key, value in expected.items():
        assert env[key] == value, key
    assert dump.gpu_count == count


PACKAGES: list[tuple[str, dict[str, str], list[str]]] = [
    ("new_style.txt", {"numpy": "2.2.6", "flash-attn": "2.8.3", "torch": "2.9.1"}, []),
    ("old_style.txt", {"transformers": "4.46.2", "torch": "2.4.0"}, []),
    ("sglang_check_env.txt", {"sgl-kernel": "0.1.1", "vllm": "0.7.2"}, ["hypervisor-vendor"]),
    ("pip_list.txt", {"vllm": "0.10.1", "flash-attn": "2.7.4.post1", "torch": "2.7.1"}, []),
    # Prose and code with `x==y` in them are not a freeze listing.
    (
        "pip_freeze.txt",
        {"accelerate": "1.6.0", "sglang": "0.4.9", "torch-audio": "2.7.1"},
        ["vllm", "x", "a"],
    ),
]


@pytest.mark.parametrize(("name", "present", "absent"), PACKAGES, ids=[p[0] for p in PACKAGES])
def test_packages(name: str, present: dict[str, str], absent: list[str]) -> None:
    packages = parse_environment(_lines(name)).environment.packages
    for key, version in present.items():
        assert packages.get(key) == version, key
    for key in absent:
        assert key not in packages


def test_sections_and_evidence() -> None:
    lines = _lines("new_style.txt")
    dump = parse_environment(lines)
    sections = dump.environment.sections
    assert sections["PyTorch Info"]["PyTorch version"] == "2.9.1+cu129"
    assert sections["CUDA / GPU Info"]["cuDNN version"] == "Could not collect"
    assert "vLLM Info" in sections and "System Info" in sections
    line, text = dump.evidence["driver"]
    assert lines[line - 1] == text and "575.57.08" in text
    assert dump.engine == "vllm"


def test_old_style_sections_split_at_cpu_block() -> None:
    sections = parse_environment(_lines("old_style.txt")).environment.sections
    assert sections["CPU"]["Architecture"] == "x86_64"
    assert "Architecture" not in sections["Environment"]


def test_markdown_stripped_dump_reads_the_same() -> None:
    plain = [ln for ln in _lines("new_style.txt") if not ln.startswith(("<", "```"))]
    fenced = parse_environment(_lines("new_style.txt")).environment
    assert parse_environment(plain).environment.model_dump(exclude={"sections"}) == (
        fenced.model_dump(exclude={"sections"})
    )


def test_inline_gpu_and_na_commit() -> None:
    lines = [
        "GPU models and configuration : GPU 0: NVIDIA GeForce RTX 4090",
        "vLLM Version                 : 0.11.0 (git sha: N/A)",
    ]
    dump = parse_environment(lines)
    assert dump.environment.gpus == ["NVIDIA GeForce RTX 4090"]
    assert dump.environment.engine_version == "0.11.0"
    assert dump.environment.engine_commit is None


def test_prose_version_mentions_are_not_packages() -> None:
    lines = ["I run vllm 0.10.1 and torch 2.7 on my box.", "It broke after `pip install x==2.0`."]
    dump = parse_environment(lines)
    assert dump.environment.packages == {}
    assert dump.gpu_count is None


# --- the real seeds, read in place -------------------------------------------------------



def test_seed_000_repeated_dump() -> None:
    dump = parse_environment(_seed("000"))
    env = dump.environment
    assert env.gpus == ["NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"]
    assert dump.gpu_count == 2  # the dump appears twice on the page; devices are not doubled
    assert env.driver == "570.211.01"
    assert env.engine_version == "0.17.1"
    assert env.torch == "2.10.0+cu128"
    assert env.cuda_build == "12.8"
    assert env.engine_commit is None
    assert env.packages["flashinfer-python"] == "0.6.4"


@pytest.mark.parametrize("prefix", ["001", "002", "003", "004"])
def test_seeds_without_dump_stay_empty(prefix: str) -> None:
    dump = parse_environment(_seed(prefix))
    assert dump.environment.engine_version is None
    assert dump.gpu_count is None


# --- robustness --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [""],
        ["\x00\x01\x02 GPU : \ufffd" * 50],
        ["GPU 99999999999999999999: NVIDIA X"],
        ["=" * 10_000, "x", "=" * 10],
        ["[pip3] ==", "[conda]", "| 0 |", "Package Version", "-- --"],
        ["vLLM Version : vv", "vLLM Version :"],
    ],
)
def test_garbage_never_raises(lines: list[str]) -> None:
    parse_environment(lines)


def test_large_input_is_fast() -> None:
    block = _lines("new_style.txt") + _lines("old_style.txt") + ["x" * 20_000]
    lines = block * (5_000_000 // sum(len(x) + 1 for x in block) + 1)
    start = time.perf_counter()
    parse_environment(lines)
    assert time.perf_counter() - start < 5.0  # generous: a guard against quadratic blow-ups
