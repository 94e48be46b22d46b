"""Hostile and broken input: always a valid ReproRequest, never an exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triagebot.parse import parse_report
from triagebot.request_model import ReproRequest

NESTED = "[" * 5000 + "]" * 5000
BAD_INPUTS: dict[str, str | bytes] = {
    "empty": "",
    "whitespace": " \n\t\n   \n",
    "binary": bytes(range(256)) * 64,
    "not utf8": b"vllm serve \xff\xfe\xfa model --speculative-config '{\"method\": \"mtp\"}'",
    "nul bytes": "vllm serve x\x00\x00 --enforce-eager\x00",
    "unbalanced fence": "```python\nLLM(model='a/b'\n```bash\nvllm serve",
    "invalid python": "```python\ndef f(:\n    LLM(model=\n```",
    "deep json in flag": f"vllm serve m --speculative-config '{NESTED}'",
    "huge json in flag": "vllm serve m --speculative-config '{"
    + ",".join(f'"k{i}": {i}' for i in range(50_000)) + "}'",
    "only backticks": "`" * 10_000,
    "long line": "vllm serve " + "a" * 300_000,
    "unicode lookalikes": "vІlm sеrve mоdel --spеculative-config '{}'",
    "fullwidth": "ｖｌｌｍ ｓｅｒｖｅ --tensor-parallel-size ８",
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_gives_a_request(name: str) -> None:
    req = parse_report(BAD_INPUTS[name], title=None)
    assert isinstance(req, ReproRequest)
    json.loads(req.model_dump_json())


def test_five_megabytes() -> None:
    block = "vllm serve Qwen/Qwen3-8B --speculative-config '{\"method\": \"eagle3\"}'\n" \
        + "word " * 2000 + "\n"
    data = (block * (5_000_000 // len(block) + 1)).encode()
    req = parse_report(data, title="EAGLE3 slower with graphs")
    assert req.source.truncated
    assert any("characters" in w for w in req.warnings)


def test_binary_is_flagged() -> None:
    req = parse_report(bytes(range(256)) * 64)
    assert any("binary" in w or "UTF-8" in w for w in req.warnings)


def test_empty_is_out_of_scope_with_nulls() -> None:
    req = parse_report("")
    assert not req.in_scope and req.engine is None and req.models == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=2000), title=st.one_of(st.none(), st.text(max_size=200)))
def test_arbitrary_text_never_raises(text: str, title: str | None) -> None:
    req = parse_report(text, title=title)
    ReproRequest.model_validate_json(req.model_dump_json())


_PIECES = st.sampled_from([
    "vllm serve ", "--speculative-config ", "'{\"method\": ", "\"mtp\"", "}'", " \\\n",
    "```python\n", "```\n", "LLM(", "model=", "speculative_config={", ")", "-tp 8 ",
    "GPU 0: NVIDIA H100\n", "vLLM Version : 0.11.0\n", "| a | b |\n|---|---|\n",
    "Output token throughput (tok/s): 12.5\n", "${K:-3}", "^\n", "export X=1\n", "\"", "'",
    "SpecDecoding metrics: Mean acceptance length: 1.5\n", "- --model\n", "[\"--tp\", \"2\"]",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_PIECES, max_size=60))
def test_report_shaped_noise_never_raises(pieces: list[str]) -> None:
    req = parse_report("".join(pieces))
    ReproRequest.model_validate_json(req.model_dump_json())
