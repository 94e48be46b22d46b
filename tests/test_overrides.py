"""The override grammar shared by the CLI and `@triagebot repro` comments."""

from __future__ import annotations

import pytest

from triagebot.overrides import KEYS, OptionsError, ReproOptions, SpecChoice, parse_overrides


def test_every_documented_key_parses() -> None:
    opts = parse_overrides([
        "engine=vllm", "version=0.17.1", "model=zai-org/GLM-OCR", "draft=org/d",
        "spec=mtp:1,eagle3:3,none", "k=1,2", "modes=eager,cudagraph", "workload=serve",
        "runs=7", "warmups=2", "gpu=h100", "tp=2", "temperature=0.7", "max_tokens=64",
        "concurrency=8", "prompts=10"])
    assert opts.spec == [SpecChoice(method="mtp", k=1), SpecChoice(method="eagle3", k=3),
                         SpecChoice()]
    assert opts.modes == ["eager", "graph"] and opts.tp == 2
    assert opts.num_speculative_tokens == [1, 2]
    assert set(KEYS) >= {"modes", "spec", "k", "version", "engine", "model", "runs", "gpu",
                         "workload", "tp", "temperature", "max_tokens"}


def test_round_trip_through_args() -> None:
    opts = parse_overrides(["spec=mtp:1,none", "runs=3", "modes=eager,graph"])
    assert parse_overrides(opts.as_args()) == opts
    assert ReproOptions().is_empty() and not opts.is_empty()


@pytest.mark.parametrize(("words", "message"), [
    (["colour=blue"], "unknown key 'colour'; valid keys: engine"),
    (["runs"], "is not key=value"),
    (["runs=3", "runs=4"], "runs is given twice"),
    (["runs="], "runs= needs a value"),
    (["runs=0"], "greater than or equal to 1"),
    (["spec=bogus:1"], "unknown method 'bogus'"),
    (["spec=mtp:x"], "k must be a whole number"),
    # Out of range: once an unhandled ValidationError that crashed the caller.
    (["spec=mtp:17"], "spec k=17: speculative tokens per step must be 1 to 16"),
    (["spec=eagle:0"], "spec k=0: speculative tokens per step must be 1 to 16"),
    (["k=0"], "k='0': speculative tokens per step must be 1 to 16"),
    (["k=1,17"], "k='17': speculative tokens per step must be 1 to 16"),
    (["modes=sideways"], "expected one of"),
    (["model=a b"], "not a model id"),
    (["model=$(id)"], "not a model id"),
    (["engine=llama.cpp"], "expected one of"),
    (["temperature=9"], "less than or equal to 5"),
    (["version=0.17.1;rm"], "not a version"),
])
def test_bad_overrides_say_what_is_wrong(words: list[str], message: str) -> None:
    with pytest.raises(OptionsError, match=None) as info:
        parse_overrides(words)
    assert message in str(info.value)
