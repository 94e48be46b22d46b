"""Python in report text: calls, kwargs, constants, env settings, invalid code."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import seed_rel as _seed
from tests.conftest import shared_lines as _shared_lines
from tests.conftest import shared_path
from triagebot.parse.python import PyCall, PyFacts, extract_python

FIXTURES = Path(__file__).parent / "fixtures" / "pycode"


def _facts(name: str) -> PyFacts:
    return extract_python((FIXTURES / name).read_text().split("\n"))


def _calls(facts: PyFacts, func: str) -> list[PyCall]:
    return [c for c in facts.calls if c.func == func]


def _assign(facts: PyFacts, name: str) -> Any:
    found = [a.value for a in facts.assigns if a.name == name]
    assert found, name
    return found[-1]


# (fixture, func, line, kwargs subset, starstar, positional args subset)
CALLS = [
    ("offline_modes.md", "LLM", 28,
     {"model": "acme/coder-14b", "tensor_parallel_size": 2, "max_model_len": 4096}, ("arm",), ()),
    ("offline_modes.md", "SamplingParams", 29,
     {"max_tokens": 256, "temperature": 0.0, "top_p": 1.0}, (), ()),
    ("scraped_script.txt", "LLM", 11,
     {"model": "acme/vision-3b", "enforce_eager": True, "limit_mm_per_prompt": {"image": 1}},
     (), ()),
    ("scraped_script.txt", "SamplingParams", 16, {"max_tokens": 128, "temperature": 0.2}, (), ()),
    ("scraped_script.txt", "llm.generate", 18, {}, (), ("hello",)),
    ("invalid_block.md", "LLM", 5,
     {"model": "acme/small-chat",
      "speculative_config": {"method": "ngram", "num_speculative_tokens": 4}}, (), ()),
    ("invalid_block.md", "LLM", 14, {"model": "acme/other-chat", "enforce_eager": True}, (), ()),
    ("other_apis.md", "AutoModelForCausalLM.from_pretrained", 5, {"torch_dtype": "auto"}, (),
     ("acme/base-1b",)),
    ("other_apis.md", "GenerationConfig", 7, {"max_new_tokens": 64, "do_sample": False}, (), ()),
    ("other_apis.md", "model.generate", 8,
     {"assistant_model": "<expr: helper>", "generation_config": "<expr: cfg>"}, ("inputs",), ()),
    ("other_apis.md", "model.generate", 9,
     {"prompt_lookup_num_tokens": 10, "max_new_tokens": 64}, ("inputs",), ()),
    ("other_apis.md", "sgl.Engine", 15,
     {"model_path": "acme/base-1b", "speculative_algorithm": "EAGLE",
      "speculative_num_steps": 2, "disable_cuda_graph": True}, (), ()),
    ("other_apis.md", "LLM", 18,
     {"model": "acme/base-1b", "speculative_config": {"method": "suffix"}}, (), ()),
]  # fmt: skip


@pytest.mark.parametrize(("fixture", "func", "line", "kwargs", "starstar", "args"), CALLS)
def test_fixture_calls(
    fixture: str,
    func: str,
    line: int,
    kwargs: dict[str, Any],
    starstar: tuple[str, ...],
    args: tuple[Any, ...],
) -> None:
    matches = [c for c in _calls(_facts(fixture), func) if c.line == line]
    assert matches, [(c.func, c.line) for c in _facts(fixture).calls]
    call = matches[0]
    for key, value in kwargs.items():
        assert call.kwargs.get(key) == value, (key, call.kwargs)
    assert call.starstar == starstar
    assert call.args[: len(args)] == args
    assert func.split(".")[-1] in call.text


# (fixture, blocks, invalid_blocks)
BLOCKS = [
    ("offline_modes.md", 1, 0),
    ("scraped_script.txt", 1, 0),
    ("invalid_block.md", 2, 2),
    ("other_apis.md", 2, 0),
]


@pytest.mark.parametrize(("fixture", "blocks", "invalid"), BLOCKS)
def test_block_counts(fixture: str, blocks: int, invalid: int) -> None:
    facts = _facts(fixture)
    assert (facts.blocks, facts.invalid_blocks) == (blocks, invalid)


def test_constants_dicts_and_modes() -> None:
    facts = _facts("offline_modes.md")
    spec = {"method": "eagle3", "model": "acme/coder-14b-eagle3", "num_speculative_tokens": 4}
    assert _assign(facts, "SPEC") == spec
    arms = _assign(facts, "ARMS")
    assert arms["eagle_graph"] == {"speculative_config": spec}
    assert arms["eagle_piecewise"]["compilation_config"] == {"cudagraph_mode": "PIECEWISE"}
    assert arms["baseline_graph"] == {"enforce_eager": False}
    assert [a.line for a in facts.assigns if a.name == "ARMS"] == [17]


def test_environment_settings() -> None:
    facts = _facts("offline_modes.md")
    env = {a.name: (a.value, a.line) for a in facts.assigns if a.name.startswith("env:")}
    assert env == {
        "env:VLLM_USE_V2_MODEL_RUNNER": ("1", 7),
        "env:VLLM_LOG_STATS_INTERVAL": ("2", 8),
        "env:TOKENIZERS_PARALLELISM": ("false", 9),
    }


def test_salvaged_code_after_an_invalid_statement() -> None:
    facts = _facts("invalid_block.md")
    assert _assign(facts, "EXTRA") == {"enforce_eager": True}


def test_unresolved_and_non_literal_values() -> None:
    lines = [
        "```python",
        "import sys",
        "BASE = sys.argv[1]",
        "K = 2",
        "K += 1",
        "sizes = []",
        "def go(model_name, k=4):",
        "    return LLM(model=model_name, draft=BASE, tokens=K, caps=sizes, dtype=DT,",
        "               note=f'run {model_name}', seq=2 ** 10, **{'seed': 3})",
        "```",
    ]
    (call,) = _calls(extract_python(lines), "LLM")
    assert call.kwargs["model"] == "<expr: model_name>"  # a parameter, not a constant
    assert call.kwargs["draft"] == "<expr: BASE>"
    assert call.kwargs["tokens"] == "<expr: K>"  # rebound with +=: not a constant
    assert call.kwargs["caps"] == "<expr: sizes>"  # an empty list filled later
    assert call.kwargs["dtype"] == "<expr: DT>"
    assert call.kwargs["note"].startswith("<expr: f'run")
    assert call.kwargs["seq"] == "<expr: 2 ** 10>"
    assert call.kwargs["seed"] == 3  # `**{literal}` is plain kwargs
    assert call.line == 8


def test_long_expressions_are_truncated() -> None:
    arg = " + ".join(f"part_{i}" for i in range(100))
    facts = extract_python(["```python", f"LLM(model={arg})", "```"])
    value = facts.calls[0].kwargs["model"]
    assert value.startswith("<expr: part_0 + part_1")
    assert len(value) <= len("<expr: >") + 80


def test_unlabeled_fence_and_shell_fence() -> None:
    lines = [
        "```",
        "vllm serve org/m --tensor-parallel-size 2",
        "```",
        "```",
        "params = SamplingParams(temperature=0.7, max_tokens=64)",
        "```",
        "```bash",
        "python -c 'LLM(model=1)'",
        "```",
    ]
    facts = extract_python(lines)
    # The shell fence is no Python block, but the one-line `python -c` snippet in it
    # is still read as an inline call.
    assert [(c.func, c.line) for c in facts.calls] == [("SamplingParams", 5), ("LLM", 8)]
    assert (facts.blocks, facts.invalid_blocks) == (1, 0)


def test_nothing_in_plain_prose() -> None:
    lines = [
        "The model generates text fine but speculative decoding (MTP) is slow.",
        "Config: TP=4, max-model-len=4096, num_speculative_tokens=2",
        "Throughput dropped from 120 tok/s to 80 tok/s.",
    ]
    facts = extract_python(lines)
    assert facts.calls == () and facts.blocks == 0


def test_quoted_and_repl_code() -> None:
    lines = [
        "> ```python",
        "> llm = LLM(model='org/q', enforce_eager=True)",
        "> ```",
        ">>> from vllm import SamplingParams",
        ">>> sp = SamplingParams(",
        "...     n=1, temperature=0)",
    ]
    facts = extract_python(lines)
    assert [(c.func, c.line, c.kwargs) for c in facts.calls] == [
        ("LLM", 2, {"model": "org/q", "enforce_eager": True}),
        ("SamplingParams", 5, {"n": 1, "temperature": 0}),
    ]


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [""],
        ["```python"],
        ["```python", "def broken(:", "```"],
        ["```python", "x = " + "[" * 100_000, "```"],
        ["```python", "x = " + "(" * 5000 + ")" * 5000, "```"],
        ["```python", "y = " + "-" * 50_000 + "1", "```"],
        ["```python", "f" + "()" * 50_000, "```"],
        ["```python", "a." * 30_000 + "b()", "```"],
        ["```python", "z = {" + ", ".join(f"'k{i}': {{'v': {i}}}" for i in range(20_000)) + "}"],
        ["LLM(" * 100_000],
        ["import os", "os.environ[1] = 2", "os.environ.setdefault()", "os.environ.update(5)"],
        ["\x00import x", "from . import (", "\udcff = 1"],
        ["```python", "x = '\\q'", "```"],
    ],
)
def test_garbage_never_raises(lines: list[str]) -> None:
    facts = extract_python(lines)
    assert facts.invalid_blocks <= facts.blocks


def test_large_invalid_python_is_bounded() -> None:
    lines = ["```python"] + ["value = (", "oops here"] * 100_000 + ["```"]
    start = time.perf_counter()
    extract_python(lines)
    lines = ["import os"] + ["x = call(", "  prose that is indented"] * 100_000
    extract_python(lines)
    assert time.perf_counter() - start < 60


# --- real inputs (read in place from ../shared) -----------------------------------------




def test_seed_000_script_without_fences() -> None:
    facts = extract_python(_shared_lines(_seed("000")))
    llms = _calls(facts, "LLM")
    assert llms, "the scraped script (no fences) must be found"
    llm = llms[0]
    assert llm.kwargs["model"] == "zai-org/GLM-OCR"
    assert llm.kwargs["tensor_parallel_size"] == 1
    assert llm.kwargs["disable_log_stats"] is False
    assert llm.starstar == ("extra",)
    sp = _calls(facts, "SamplingParams")[0]
    assert sp.kwargs == {"max_tokens": 500, "temperature": 0.0, "ignore_eos": True}
    modes = _assign(facts, "MODES")
    assert set(modes) == {"no_mtp_eager", "no_mtp_graph", "mtp_eager", "mtp_graph"}
    assert modes["mtp_graph"]["speculative_config"] == {
        "method": "mtp",
        "num_speculative_tokens": 1,
    }
    assert modes["no_mtp_eager"] == {"enforce_eager": True}
    env = {a.name: a.value for a in facts.assigns if a.name.startswith("env:")}
    assert env["env:VLLM_LOGGING_LEVEL"] == "DEBUG"
    assert facts.blocks >= 1


def test_parse_dev_kwargs_with_unresolved_names() -> None:
    facts = extract_python(_shared_lines("parse-dev/vllm-project__vllm__15025.json"))
    (llm,) = _calls(facts, "LLM")
    assert llm.kwargs["num_speculative_tokens"] == 5
    assert llm.kwargs["model"].startswith("<expr:")
    (sp,) = _calls(facts, "SamplingParams")
    assert sp.kwargs["max_tokens"] == 256


@pytest.mark.parametrize("rel", ["seeds/{003}", "seeds/{004}", "parse-dev/sgl"])
def test_real_inputs_without_python_do_not_crash(rel: str) -> None:
    if rel.startswith("seeds/"):
        paths = [_seed(rel[7:10])]
    else:
        paths = [f"parse-dev/{p.name}" for p in sorted(shared_path("parse-dev").glob("sgl-*"))]
    for path in paths:
        facts = extract_python(_shared_lines(path))
        assert not _calls(facts, "LLM")
