"""Runner kinds are profiles, not flags: the planner and the orchestrator ask the runner's
profile (`triagebot/plan/runner.py`, `triagebot/run/runners/`) where kinds differ, and a
runner flag (`on_cpu`, `mlx_cpu`, `is_cpu_plan`) or a branch on the runner's name
(`options.gpu == "cpu"`) does not come back there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import seed_path
from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan.runners import DEFAULT_KIND, profile_for, profiles
from triagebot.plan_model import Plan
from triagebot.run.runners import profile_named, run_profile
from triagebot.run.runners.base import RunProfile

ROOT = Path(__file__).resolve().parents[2] / "triagebot"
# Where runner kinds must not be told apart by flags: the planner, except the kinds' own
# modules (which say which engine and runner they claim), and the orchestrator.
GUARDED = sorted(p for p in (ROOT / "plan").rglob("*.py") if "runners" not in p.parts)
GUARDED.append(ROOT / "run" / "orchestrate.py")
FLAG = re.compile(r"^(?:on_cpu|mlx_cpu|is_\w*cpu\w*|\w+_on_cpu|cpu_plan|multimodal_on_cpu)$")
RUNNER_NAMES = {"cpu", "apple-silicon", "gpu"}
RUNNER_FIELDS = {"gpu", "gpu_kind", "RUNNER"}


def runner_flags(source: str) -> list[str]:
    """Each use of a runner flag, or comparison with a runner's name or the runner field,
    in `source` (its code: comments and strings do not count), as 'line: what'."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        name = (node.id if isinstance(node, ast.Name) else node.attr
                if isinstance(node, ast.Attribute) else node.arg if isinstance(node, ast.arg)
                else node.name if isinstance(node, ast.FunctionDef) else None)
        if name is not None and FLAG.match(name):
            found.append(f"{node.lineno}: {name}")
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                named = (side.attr if isinstance(side, ast.Attribute)
                         else side.id if isinstance(side, ast.Name) else None)
                if (isinstance(side, ast.Constant) and side.value in RUNNER_NAMES) \
                        or named in RUNNER_FIELDS:
                    found.append(f"{node.lineno}: compares {ast.unparse(node)}")
                    break
    return sorted(found, key=lambda line: int(line.split(":")[0]))


@pytest.mark.parametrize("path", GUARDED, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_runner_flag_in_the_planner_or_the_orchestrator(path: Path) -> None:
    assert runner_flags(path.read_text(encoding="utf-8")) == []


def test_the_flag_check_finds_each_kind_of_flag() -> None:
    source = '''
# on_cpu in a comment is not a flag, nor is "on_cpu" in a string
on_cpu = engine == "vllm"
def f(options, plan, mlx_cpu=False):
    if options.gpu == "cpu":
        pass
    if vllm_cpu.is_cpu_plan(plan.engine, plan.gpu_kind):
        pass
    if "cpu" == kind:
        pass
    return options.gpu == C.RUNNER
'''
    assert runner_flags(source) == [
        "3: on_cpu", "4: mlx_cpu", "5: compares options.gpu == 'cpu'", "7: is_cpu_plan",
        "9: compares 'cpu' == kind", "11: compares options.gpu == C.RUNNER"]
    assert runner_flags('text = "on_cpu if gpu == cpu"  # on_cpu\n') == []


@pytest.mark.parametrize(("engine", "gpu", "kind"), [
    ("vllm", None, "gpu"), ("vllm", "h100", "gpu"), ("sglang", None, "gpu"),
    ("transformers", "cpu", "gpu"), ("vllm", "cpu", "vllm-cpu"), ("sglang", "cpu", "vllm-cpu"),
    ("vllm-mlx", "cpu", "vllm-mlx-cpu"), ("vllm-mlx", None, "apple-silicon"),
    ("vllm-mlx", "apple-silicon", "apple-silicon"),
])
def test_each_engine_and_runner_finds_one_kind(engine: str, gpu: str | None,
                                              kind: str) -> None:
    assert profile_for(engine, gpu).kind == kind


def test_every_kind_has_a_module_and_the_gpu_runner_is_the_default() -> None:
    modules = {p.stem for p in (ROOT / "plan" / "runners").glob("*.py")} - {"__init__"}
    assert {k.replace("-", "_") for k in profiles()} == modules
    assert set(profiles()) == {"gpu", "vllm-cpu", "vllm-mlx-cpu", "apple-silicon"}
    assert DEFAULT_KIND in profiles()


def test_the_run_side_is_found_by_the_same_name() -> None:
    # The cpu runners run differently; the GPU runner and Apple silicon run as the base.
    assert profile_named("vllm-cpu").kind == "vllm-cpu"
    assert profile_named("vllm-cpu").offline_arms
    assert profile_named("vllm-mlx-cpu").kind == "vllm-mlx-cpu"
    assert type(profile_named("gpu")) is RunProfile
    assert type(profile_named("apple-silicon")) is RunProfile
    run_modules = {p.stem for p in (ROOT / "run" / "runners").glob("*.py")}
    assert run_modules - {"__init__", "base"} <= {k.replace("-", "_") for k in profiles()}


@pytest.mark.shared("seeds")
def test_a_plan_finds_its_run_side_by_its_engine_and_gpu_kind() -> None:
    request = parse_report(seed_path("000").read_bytes())
    plans: dict[str, Plan] = {
        words: build_plan(request, parse_overrides(words.split()))
        for words in ("gpu=cpu", "engine=vllm-mlx gpu=cpu", "engine=vllm-mlx", "gpu=h100")}
    assert {w: run_profile(p).kind for w, p in plans.items()} == {
        "gpu=cpu": "vllm-cpu", "engine=vllm-mlx gpu=cpu": "vllm-mlx-cpu",
        "engine=vllm-mlx": "apple-silicon", "gpu=h100": "gpu"}
