"""`[sentinel]` in the repo config and the matrix it gives: strict like every section,
defaults that cover the methods the engine ships, the cpu runner held to its stand-ins."""

from __future__ import annotations

import pytest

from triagebot.model import ReproRequest
from triagebot.overrides import parse_overrides
from triagebot.plan import build_plan
from triagebot.repo_config import RepoConfig, RepoConfigError, parse_repo_config
from triagebot.sentinel.cases import (
    CPU_LEFT_OUT,
    default_cases,
    matrix,
    overrides,
    select,
    skip_reason,
)


def test_the_defaults_cover_every_method_on_a_gpu_and_the_stand_ins_on_the_cpu() -> None:
    gpu = default_cases("vllm", "h100")
    assert {c.method for c in gpu} == {"ngram", "draft_model", "eagle", "eagle3", "mtp"}
    assert all(c.modes == ["eager", "graph"] for c in gpu)
    cpu = default_cases("vllm", "cpu")
    assert {c.method for c in cpu} == {"mtp", "draft_model", "ngram", "eagle3"}
    assert {c.method for c in cpu} | set(CPU_LEFT_OUT) == {c.method for c in gpu}
    assert next(c for c in cpu if c.method == "mtp").k == 1
    assert len({c.case_id for c in cpu + gpu}) == len(cpu + gpu)
    assert default_cases("sglang", "cpu") == []


def test_every_default_case_plans_spec_and_no_spec_in_each_mode() -> None:
    for case in default_cases("vllm", "cpu"):
        opts = parse_overrides([*overrides(case), "version=0.32.0"])
        plan = build_plan(ReproRequest(), opts, exact_version=True)
        kinds = {(c.spec is not None, c.varies.get("graph")) for c in plan.cells}
        assert kinds == {(s, m) for s in (True, False) for m in ("eager", "graph")}, case


def test_the_config_lists_its_own_cases() -> None:
    config = parse_repo_config(
        '[sentinel]\nmargin_pct = 4\ntracking_repo = "org/perf"\n'
        '[[sentinel.cases]]\nmethod = "draft_model"\nk = 2\nmodes = ["eager"]\n'
        '[[sentinel.cases]]\nmethod = "mtp"\nrunner = "h100"\nmodel = "XiaomiMiMo/MiMo-7B-RL"\n')
    assert config.sentinel.margin() == pytest.approx(0.04)
    cases = matrix(config.sentinel, "vllm")
    assert [c.case_id for c in cases] == ["vllm-draft-model-k2-standin-cpu",
                                          "vllm-mtp-k1-mimo-7b-rl-h100"]
    assert [c.case_id for c in matrix(config.sentinel, "vllm", "cpu")] == [cases[0].case_id]
    assert "model=XiaomiMiMo/MiMo-7B-RL" in overrides(cases[1])
    # without cases: the defaults of each runner named
    assert len(matrix(RepoConfig().sentinel, "vllm")) == len(default_cases("vllm", "cpu"))


@pytest.mark.parametrize(("text", "problem"), [
    ('[[sentinel.cases]]\nmethod = "medusa"', "sentinel.cases[0].method"),
    ('[[sentinel.cases]]\nmethod = "mtp"\nk = 0', "must be at least 1"),
    ('[[sentinel.cases]]\nmethod = "mtp"\nmodes = []', "needs at least 1 entries"),
    ('[[sentinel.cases]]\nmethod = "mtp"\nlanes = 2', "valid keys: method, k, modes"),
    ('[sentinel]\ndatabase = "mysql://db"', "not a database URL"),
    ('[sentinel]\nmargin_pct = 90', "must be at most 50"),
    ('[sentinel]\ntracking_repo = "nope"', "OWNER/NAME"),
])
def test_a_bad_sentinel_section_names_its_key(text: str, problem: str) -> None:
    with pytest.raises(RepoConfigError, match="sentinel") as caught:
        parse_repo_config(text)
    assert problem in str(caught.value)


def test_cases_are_chosen_by_id_or_method_and_a_wrong_name_lists_them() -> None:
    cases = default_cases("vllm", "cpu")
    assert [c.method for c in select(cases, ["mtp", "vllm-draft-model-k3-standin-cpu"])] == [
        "mtp", "draft_model"]
    with pytest.raises(ValueError, match="vllm-mtp-k1-standin-cpu"):
        select(cases, ["eagle"])


def test_a_cpu_release_without_speculation_is_skipped_with_its_reason() -> None:
    mtp = default_cases("vllm", "cpu")[0]
    assert "refuses speculative decoding before 0.20.0" in (skip_reason(mtp, "0.17.1") or "")
    assert skip_reason(mtp, "0.20.0") is None  # it runs, and its crash is named
    assert skip_reason(mtp, "0.25.1") is None
    assert skip_reason(default_cases("vllm", "h100")[0], "0.17.1") is None
