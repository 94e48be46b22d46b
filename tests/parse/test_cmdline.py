"""Command lines in report text: programs, flags, env, continuations and lists."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import seed_rel as _seed
from tests.conftest import shared_lines as _shared_lines
from triagebot.parse.commands import (
    Invocation,
    find_env_assignments,
    find_invocations,
    parse_json_value,
)

FIXTURES = Path(__file__).parent / "fixtures" / "cmdline"


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().split("\n")


def _by_program(invs: list[Invocation], program: str) -> list[Invocation]:
    return [i for i in invs if i.program == program]


# (fixture, index, program, line, expected (flag, value, line) subset, env subset)
CASES = [
    (
        "shell_continuations.md", 0, "vllm serve", 7,
        [(None, "acme/tiny-moe-7b", 7), ("--tensor-parallel-size", "2", 8),
         ("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}', 10),
         ("--max-num-seqs", "32", 11)],
        {"CUDA_VISIBLE_DEVICES": "0,1"},
    ),
    (
        "shell_continuations.md", 1, "vllm bench serve", 16,
        [("--model", "acme/tiny-moe-7b", 16), ("--max-concurrency", "8", 17),
         ("--ignore-eos", None, 17), ("--seed", "7", 17)],
        {},
    ),
    (
        "windows_caret.txt", 0, "vllm serve", 5,
        [("--model", "acme/small-chat", 6), ("--enforce-eager", None, 7), ("--port", "8001", 8)],
        {},
    ),
    (
        "powershell_backtick.txt", 0, "vllm serve", 2,
        [(None, "acme/small-chat", 2), ("--gpu-memory-utilization", "0.8", 3),
         ("-sc", '{"method": "eagle3", "model": "acme/small-chat-eagle3", '
                 '"num_speculative_tokens": 2}', 4)],
        {},
    ),
    (
        "k8s_deployment.yaml", 0, "vllm serve", 9,
        [(None, "acme/big-moe-fp8", 11), ("--tensor-parallel-size", "4", 12),
         ("--enable-expert-parallel", None, 14),
         ("--speculative-config",
          '{"method":"eagle3","model":"acme/big-moe-eagle3","num_speculative_tokens":3}', 15)],
        {},
    ),
    (
        "compose.yaml", 0, "vllm serve", 7,
        [("--model", "acme/mid-dense-13b", 7), ("--tensor-parallel-size", "2", 7),
         ("--compilation-config", '{"cudagraph_mode": "PIECEWISE"}', 7)],
        {},
    ),
    (
        "compose.yaml", 1, "vllm bench serve", 13,
        [("--max-concurrency", "16", 17), ("--num-prompts", "200", 19)],
        {},
    ),
    (
        "docker_run.md", 0, "docker run", 4,
        [("--model", "acme/small-chat", 8), ("--enforce-eager", None, 8),
         ("--speculative-config",
          '{"method":"ngram","num_speculative_tokens":5,"prompt_lookup_max":4}', 8)],
        {"VLLM_USE_V1": "1", "HF_HUB_OFFLINE": "1"},
    ),
    (
        "docker_run.md", 1, "docker run", 14,
        [("--model-path", "acme/small-chat", 14), ("--speculative-algorithm", "EAGLE3", 14),
         ("--speculative-num-steps", "3", 14), ("--cuda-graph-max-bs", "8", 14)],
        {},
    ),
    (
        "other_engines.md", 0, "sglang.launch_server", 3,
        [("--model-path", "acme/qwenish-30b", 3), ("--tp", "2", 3),
         ("--speculative-algorithm", "NEXTN", 3), ("--disable-cuda-graph", None, 3)],
        {},
    ),
    (
        "other_engines.md", 1, "sglang.bench_serving", 4,
        [("--max-concurrency", "1", 4)],
        {},
    ),
    (
        "other_engines.md", 2, "llama-server", 9,
        [("-m", "target-q4.gguf", 9), ("-md", "draft-q8.gguf", 9), ("--draft-max", "16", 9),
         ("-fa", None, 9), ("-c", "8192", 9)],
        {},
    ),
    (
        "other_engines.md", 3, "vllm-mlx serve", 12,
        [(None, "mlx-community/tiny-4bit", 12), ("--enable-mtp", None, 12),
         ("--mtp-num-draft-tokens", "3", 12), ("--continuous-batching", None, 12)],
        {},
    ),
    (
        "other_engines.md", 4, "mlx_lm.server", 17,
        [("--draft-model", "mlx-community/tinier-4bit", 17), ("--num-draft-tokens", "4", 17)],
        {},
    ),
    (
        "other_engines.md", 5, "vllm bench serve", 23,
        [("--backend", "vllm", 23), ("--request-rate", "4", 23)],
        {},
    ),
    (
        "broken_json.md", 0, "vllm serve", 4,
        [("--speculative-config", '{"method": "mtp", "num_speculative_tokens": 2}', 4),
         ("--port", "8000", 4)],
        {},
    ),
    (
        "broken_json.md", 1, "vllm serve", 5,
        [("--speculative-config", '{"method": "suffix", "num_speculative_tokens": 8}', 5),
         ("-O3", None, 5)],
        {},
    ),
    (
        "broken_json.md", 2, "vllm serve", 6,
        [("-cc.cudagraph_mode", "FULL_DECODE_ONLY", 6),
         ("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 4}', 6)],
        {},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("fixture", "index", "program", "line", "args", "env"), CASES)
def test_fixture_invocations(
    fixture: str,
    index: int,
    program: str,
    line: int,
    args: list[tuple[str | None, str | None, int]],
    env: dict[str, str],
) -> None:
    invs = find_invocations(_lines(fixture))
    inv = invs[index]
    assert inv.program == program
    assert inv.line == line
    got = {(a.flag, a.value, a.line) for a in inv.args}
    for expected in args:
        assert expected in got, (expected, inv.args)
    for name, value in env.items():
        assert inv.env.get(name) == value


def test_fixture_counts_and_no_prose_commands() -> None:
    counts = {
        "shell_continuations.md": 2, "windows_caret.txt": 1, "powershell_backtick.txt": 1,
        "k8s_deployment.yaml": 1, "compose.yaml": 2, "docker_run.md": 2,
        "other_engines.md": 6, "broken_json.md": 3,
    }  # fmt: skip
    for name, n in counts.items():
        assert len(find_invocations(_lines(name))) == n, name


def test_commented_out_flag_is_skipped() -> None:
    inv = find_invocations(_lines("shell_continuations.md"))[0]
    assert not inv.has("--enforce-eager")


def test_docker_inner_program_and_image() -> None:
    vllm, sglang = find_invocations(_lines("docker_run.md"))
    assert (vllm.inner, vllm.image) == ("vllm serve", "vllm/vllm-openai:v0.10.1")
    assert vllm.engine_program == "vllm serve"
    assert sglang.inner == "sglang.launch_server"
    assert sglang.value("--speculative-num-draft-tokens") == "4"
    # docker's own options are not the engine's arguments
    assert not vllm.has("--gpus", "-p", "-v")


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("shell_continuations.md",
         [("MODEL", "acme/tiny-moe-7b", 4), ("VLLM_USE_V2_MODEL_RUNNER", "0", 5),
          ("CUDA_VISIBLE_DEVICES", "0,1", 7)]),
        ("windows_caret.txt", [("HF_HOME", "D:\\hf", 3), ("VLLM_LOGGING_LEVEL", "DEBUG", 4)]),
        ("powershell_backtick.txt", [("VLLM_ATTENTION_BACKEND", "FLASH_ATTN", 1)]),
        ("k8s_deployment.yaml", [("VLLM_USE_V1", "1", 18)]),
        ("compose.yaml",
         [("VLLM_LOG_STATS_INTERVAL", "2", 5), ("NCCL_DEBUG", "WARN", 6), ("TRIAL", "second", 11)]),
        ("docker_run.md", [("VLLM_USE_V1", "1", 5), ("HF_HUB_OFFLINE", "1", 5)]),
    ],
)  # fmt: skip
def test_env_assignments(fixture: str, expected: list[tuple[str, str, int]]) -> None:
    assert find_env_assignments(_lines(fixture)) == expected


# --- small inline cases --------------------------------------------------------------

INLINE = [
    # `--flag=value` split, booleans with no value
    ("vllm serve org/m --max-model-len=8192 --trust-remote-code --enforce-eager",
     "vllm serve", [("--max-model-len", "8192"), ("--trust-remote-code", None),
                    ("--enforce-eager", None)]),
    # old entry point reported as vllm serve
    ("python -m vllm.entrypoints.openai.api_server --model org/m -tp 2",
     "vllm serve", [("--model", "org/m"), ("-tp", "2")]),
    ("python3 -m sglang.bench_one_batch --model-path org/m --batch-size 1",
     "sglang.bench_one_batch", [("--batch-size", "1")]),
    ("python3 -m sglang.bench_offline_throughput --model-path org/m --num-prompts 10",
     "sglang.bench_offline_throughput", [("--num-prompts", "10")]),
    ("vllm bench latency --model org/m --output-len 128", "vllm bench latency",
     [("--output-len", "128")]),
    ("vllm bench throughput --model org/m --input-len 64", "vllm bench throughput",
     [("--input-len", "64")]),
    ("vllm bench mm-processor --model org/m --num-prompts 5", "vllm bench mm-processor",
     [("--num-prompts", "5")]),
    ("python benchmarks/benchmark_latency.py --model org/m", "vllm bench latency",
     [("--model", "org/m")]),
    ("python3 run_spec.py --draft org/d --k 4", "python run_spec.py", [("--k", "4")]),
    ("llama-speculative -m a.gguf -md b.gguf --draft 8", "llama-speculative",
     [("--draft", "8")]),
    ("trtllm-serve org/m --backend pytorch --tp_size 2", "trtllm-serve", [("--tp_size", "2")]),
    ("$ sudo -E env VLLM_USE_V1=0 nohup vllm serve org/m --port 9000 > log.txt 2>&1 &",
     "vllm serve", [(None, "org/m"), ("--port", "9000")]),
    ("uv run vllm serve org/m --speculative-model [ngram] --num-speculative-tokens 5",
     "vllm serve", [("--speculative-model", "[ngram]"), ("--num-speculative-tokens", "5")]),
    ("vllm serve org/m --speculative-config='{\"method\": \"mtp\"}' --seed -1",
     "vllm serve", [("--speculative-config", '{"method": "mtp"}'), ("--seed", "-1")]),
    ("vllm serve org/m --speculative_config {'method': 'eagle', 'model': 'org/e'}",
     "vllm serve", [("--speculative_config", "{'method': 'eagle', 'model': 'org/e'}")]),
    ("- vllm serve org/m --enable-chunked-prefill false", "vllm serve",
     [("--enable-chunked-prefill", "false")]),
]  # fmt: skip


@pytest.mark.parametrize(("text", "program", "args"), INLINE)
def test_inline_commands(text: str, program: str, args: list[tuple[str | None, str]]) -> None:
    invs = find_invocations(["Some words first.", "", text])
    assert [i.program for i in invs] == [program]
    got = [(a.flag, a.value) for a in invs[0].args]
    for expected in args:
        assert expected in got, (expected, got)


def test_env_prefix_and_variable_resolution() -> None:
    lines = [
        "```bash",
        "NUM_SPEC=4",
        "export DRAFT=org/drafty",
        "VLLM_ENABLE_V1_MULTIPROCESSING=0 vllm serve org/m \\",
        "  --spec-tokens $NUM_SPEC --spec-model ${DRAFT} --max-num-seqs ${MAX_SEQS:-16} \\",
        "  --port ${PORT} --spec-method ${METHOD:=draft_model}",
        "```",
    ]
    (inv,) = find_invocations(lines)
    assert inv.env == {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert inv.value("--spec-tokens") == "4"
    assert inv.value("--spec-model") == "org/drafty"
    assert inv.value("--max-num-seqs") == "16"
    assert inv.value("--port") == "${PORT}"  # unknown and no default: left as written
    assert inv.value("--spec-method") == "draft_model"
    assert find_env_assignments(lines) == [
        ("DRAFT", "org/drafty", 3),
        ("VLLM_ENABLE_V1_MULTIPROCESSING", "0", 4),
    ]


def test_prose_is_not_a_command() -> None:
    lines = [
        "vllm serve is slower with speculation than without",
        "python is 3.11 here",
        "I ran it with --enforce-eager and got the same.",
        "Use `vllm serve org/m -tp 4` to see it.",
    ]
    invs = find_invocations(lines)
    assert [(i.program, i.line, i.source) for i in invs] == [("vllm serve", 4, "inline")]
    assert invs[0].value("-tp") == "4"


def test_unknown_program_only_in_code() -> None:
    fenced = ["```", "curl -s localhost:8000/metrics --max-time 5", "```"]
    assert [i.program for i in find_invocations(fenced)] == ["curl"]
    assert find_invocations(["curl -s localhost:8000/metrics --max-time 5"]) == []


def test_multiline_quoted_json_and_flag_lines_without_backslash() -> None:
    lines = [
        "vllm serve org/m --speculative-config '{",
        '    "method": "eagle3",',
        '    "num_speculative_tokens": 2',
        "  }' \\",
        "  --port 8001",
        "--max-model-len 2048",
        "Results below.",
    ]
    (inv,) = find_invocations(lines)
    cfg = parse_json_value(inv.value("--speculative-config") or "")
    assert cfg == {"method": "eagle3", "num_speculative_tokens": 2}
    assert inv.value("--port") == "8001"
    assert inv.value("--max-model-len") == "2048"
    assert [a.line for a in inv.args if a.flag] == [1, 5, 6]


def test_json_arg_list_in_python_and_bash_c() -> None:
    lines = [
        'subprocess.Popen(["vllm", "serve", "org/m", "--tensor-parallel-size", "2"])',
        "command: [\"bash\", \"-c\", \"vllm serve org/n --enforce-eager && echo ok\"]",
        "  args: [--model, org/p, '--max-num-seqs 8']",
    ]
    invs = find_invocations(lines)
    assert [(i.program, i.line) for i in invs] == [
        ("vllm serve", 1),
        ("vllm serve", 2),
        ("unknown", 3),
    ]
    assert invs[0].value("--tensor-parallel-size") == "2"
    assert invs[1].has("--enforce-eager")
    assert invs[2].value("--max-num-seqs") == "8"


# --- parse_json_value ----------------------------------------------------------------

JSON_CASES = [
    ('{"method": "mtp", "num_speculative_tokens": 1}', {"method": "mtp",
                                                        "num_speculative_tokens": 1}),
    ("{'method': 'ngram', 'enforce_eager': True, 'model': None}",
     {"method": "ngram", "enforce_eager": True, "model": None}),
    ("'{\"cudagraph_mode\": \"FULL\"}'", {"cudagraph_mode": "FULL"}),
    ('{"method": "eagle", "num_speculative_tokens": 3,}', {"method": "eagle",
                                                           "num_speculative_tokens": 3}),
    ('{"method": "mtp", "num_speculative_tokens": 2', {"method": "mtp",
                                                       "num_speculative_tokens": 2}),
    ("{method: suffix, num_speculative_tokens: 8}", {"method": "suffix",
                                                     "num_speculative_tokens": 8}),
    ('{\\"method\\": \\"ngram\\"}', {"method": "ngram"}),
    ("[128, 256]", [128, 256]),
    ("FULL", None),
    ("", None),
    ("{" * 100 + "}" * 100, None),
    ("{(224, 224, 1): 1.0}", {(224, 224, 1): 1.0}),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), JSON_CASES)
def test_parse_json_value(text: str, expected: object) -> None:
    assert parse_json_value(text) == expected


# --- hostile input -------------------------------------------------------------------


def test_enormous_and_deeply_nested_json_flag_is_capped_quickly() -> None:
    deep = "{" * 200_000 + "}" * 200_000
    wide = json.dumps({f"k{i}": list(range(10)) for i in range(60_000)})
    lines = [
        f"vllm serve org/m --speculative-config '{deep}' --port 1",
        f"vllm serve org/m --compilation-config '{wide}' --port 2",
        "vllm serve org/m --speculative-config '" + "[" * 300_000,
    ]
    start = time.perf_counter()
    invs = find_invocations(lines)
    assert time.perf_counter() - start < 10
    assert [i.line for i in invs] == [1, 2, 3]
    for inv in invs:
        for arg in inv.args:
            assert arg.value is None or len(arg.value) <= 200_000
    assert parse_json_value(deep) is None
    assert parse_json_value(invs[1].value("--compilation-config") or "") is None


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [""],
        ["vllm serve '"],
        ['vllm serve "{'],
        ["vllm serve \\"],
        ["command: [", "- - -"],
        ["env:", "  - name:", "    value:"],
        ["docker run"],
        ["python -m"],
        ["$ "],
        ["\x00\x01\x02 vllm serve --x \udcff"],
        ["vllm serve x --a '" + "\\" * 5000],
        ["export"],
        ["args: " + "[" * 10_000],
    ],
)
def test_garbage_never_raises(lines: list[str]) -> None:
    find_invocations(lines)
    find_env_assignments(lines)


def test_large_document_is_linear() -> None:
    block = [
        "Some prose about the issue, with `inline code` and a --flag mention.",
        "vllm serve org/m --tensor-parallel-size 2 \\",
        "  --speculative-config '{\"method\": \"ngram\"}'",
        "    indented text that is not code: x = 1",
        "export FOO=bar",
    ]
    lines = block * 40_000  # ~2.5 MB
    start = time.perf_counter()
    invs = find_invocations(lines)
    elapsed = time.perf_counter() - start
    assert len(invs) == 40_000
    assert elapsed < 30
    lines = ["x" * 5_000_000]
    assert find_invocations(lines) == []


# --- real inputs (read in place from ../shared) -----------------------------------------




def test_seed_004_serve_and_bench() -> None:
    invs = find_invocations(_shared_lines(_seed("004")))
    (serve,) = _by_program(invs, "vllm serve")
    assert serve.positionals() == ["deepseek-ai/DeepSeek-V3.2"]
    assert serve.value("-tp") == "8"
    assert serve.has("-ep") and serve.value("-ep") is None
    assert parse_json_value(serve.value("--speculative-config") or "") == {
        "method": "mtp",
        "num_speculative_tokens": 1,
    }
    (bench,) = _by_program(invs, "vllm bench serve")
    assert bench.value("--max-concurrency") == "64"
    assert bench.value("--output-len") == "2048"
    assert bench.has("--ignore-eos")


def test_seed_003_env_prefix_and_spec_config() -> None:
    lines = _shared_lines(_seed("003"))
    invs = find_invocations(lines)
    (serve,) = _by_program(invs, "vllm serve")
    assert serve.env == {"VLLM_USE_V2_MODEL_RUNNER": "1"}
    cfg = parse_json_value(serve.value("--speculative-config") or "")
    assert isinstance(cfg, dict) and cfg["method"] == "eagle3"
    assert cfg["num_speculative_tokens"] == 3
    assert serve.value("--tensor-parallel-size") == "1"
    (bench,) = _by_program(invs, "vllm bench serve")
    assert bench.value("--max-concurrency") == "16"
    assert ("VLLM_USE_V2_MODEL_RUNNER", "1", serve.line) in find_env_assignments(lines)


def test_seed_000_has_no_commands() -> None:
    # The script is Python; collect_env and prose must not read as commands.
    assert find_invocations(_shared_lines(_seed("000"))) == []


def test_parse_dev_old_api_server_with_ngram() -> None:
    invs = find_invocations(_shared_lines("parse-dev/vllm-project__vllm__6494.json"))
    assert [i.program for i in invs] == ["vllm serve", "vllm serve"]
    spec = invs[1]
    assert spec.env == {"CUDA_VISIBLE_DEVICES": "1"}
    assert spec.value("--speculative-model") == "[ngram]"
    assert spec.value("--num-speculative-tokens") == "8"
    assert spec.value("--ngram-prompt-lookup-min") == "2"


def test_parse_dev_sglang_items_do_not_crash() -> None:
    for name in ("12411", "6160", "6783"):
        lines = _shared_lines(f"parse-dev/sgl-project__sglang__{name}.json")
        for inv in find_invocations(lines):
            assert inv.program  # truncated pages: whatever is found is well formed
        find_env_assignments(lines)
