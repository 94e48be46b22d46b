"""The GPU check's steps that need no GPU (bench/gpu_check.py, bench/gpu_check.sh).

What runs here, for real: the wheel list read from uv.lock, the download of those wheels
(for this interpreter's Python; cached under ~/.cache/triagebot so later runs need no
network) and the project wheel built from this tree, the install into a fresh virtual
environment exactly as gpu_check.sh does it on the GPU machine, and the repro path's
imports, plan and render from that environment with every third-party module outside the
GPU machine's list refused. The stand-ins' GPU size and `nvidia-smi -q` parsing are
checked on their own. What needs CUDA (graph capture, the profiler's reading) runs only
on a GPU; tests/run/test_gpu_fixtures.py reads what such a run brought back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import gpu_check
from tests.conftest import shared_path
from triagebot.engines import standins as recipes
from triagebot.plan_model import Cell, CellWorkload, Plan, Sampling, SpecParams
from triagebot.run import standins
from triagebot.run.gpu import parse_smi_query

ROOT = Path(__file__).resolve().parents[2]
PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
WHEELS = Path.home() / ".cache" / "triagebot" / f"gpu-check-py{PY}"

# `nvidia-smi -q`'s layout, abridged (the lines parse_smi_query reads, and neighbours).
SMI = """
==============NVSMI LOG==============

Timestamp                                 : Thu Nov 13 10:00:00 2026
Driver Version                            : 580.159.04
CUDA Version                              : 13.0

Attached GPUs                             : 1
GPU 00000000:00:05.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Product Brand                         : NVIDIA
    Product Architecture                  : Hopper
    FB Memory Usage
        Total                             : 81559 MiB
        Reserved                          : 551 MiB
        Used                              : 0 MiB
        Free                              : 81008 MiB
    BAR1 Memory Usage
        Total                             : 131072 MiB
"""

# A stand-in for the GPU machine's import list: what the repro path may import in the
# environment gpu_check.sh builds. Anything else third-party is refused.
BLOCKER = """
import importlib.abc, sys
allowed = set(sys.argv[1].split(",")) | set(sys.stdlib_module_names) | {"triagebot", "bench"}
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top not in allowed and not top.startswith("_"):
            raise ModuleNotFoundError(f"{top} is not on the GPU machine and not carried")
sys.meta_path.insert(0, Refuse())
sys.argv = ["triagebot", *sys.argv[2:]]
import triagebot.analyze.findings, triagebot.report, triagebot.run.orchestrate
import triagebot.run.standins, triagebot.cli.views
from triagebot.cli import app
app()
"""


def test_carried_versions_are_the_locked_ones() -> None:
    versions = gpu_check.locked_versions(ROOT / "uv.lock", gpu_check.CARRIED)
    assert versions["transformers"] == "5.24.0"  # the first with static-cache assisted decoding
    assert set(versions) == set(gpu_check.CARRIED)
    assert gpu_check.wheel_prefix("pydantic-core", "2.50.5") == "pydantic_core-2.50.5-"
    with pytest.raises(SystemExit, match="pins no version of celery-not-a-package"):
        gpu_check.locked_versions(ROOT / "uv.lock", ("celery-not-a-package",))


@pytest.fixture(scope="module")
def gpu_env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheels for this interpreter and the environment gpu_check.sh installs them into,
    with this test run's interpreter standing in for the GPU machine's. The wheels step
    carries seed 000's report beside them, from the corpus."""
    shared_path("seeds")
    code = gpu_check.main(["wheels", "--dest", str(WHEELS), "--python-version", PY])
    assert code == 0
    base = tmp_path_factory.mktemp("gpu")
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(base / "out"),
           "GPU_CHECK_VENV": str(base / "venv"), "GPU_CHECK_CARRY": str(WHEELS),
           "PIP_PYTHON": _pip_python()}
    proc = subprocess.run(["bash", "bench/gpu_check.sh", "--install-only"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return base / "venv", base


def _pip_python() -> str:
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                           check=False)
    return sys.executable if probe.returncode == 0 else gpu_check._pip_python()


def test_the_install_puts_every_carried_wheel_in_front(gpu_env: tuple[Path, Path]) -> None:
    venv, base = gpu_env
    assert "installed in" in (base / "out" / "check.log").read_text()
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-P", "-c",
         "import json, pydantic, transformers, triagebot, typer; print(json.dumps("
         "{m.__name__: m.__file__ for m in (pydantic, transformers, triagebot, typer)}))"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    where = json.loads(probe.stdout)
    # The carried copies, not the machine's, and the project installed, not this tree.
    assert all(path.startswith(str(venv)) for path in where.values()), where
    assert (venv / "bin" / "triagebot").exists()


def _blocked(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    allowed = {*gpu_check.ON_MACHINE,
               *(n.replace("-", "_") for n in gpu_check.CARRIED)}
    return subprocess.run([str(venv / "bin" / "python"), "-P", "-c", BLOCKER,
                           ",".join(sorted(allowed)), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_the_repro_path_needs_nothing_the_gpu_machine_lacks(gpu_env: tuple[Path, Path]) -> None:
    venv, base = gpu_env
    seed = WHEELS / f"seed-{gpu_check.SEED}.txt"
    target = recipes.target("llama", "gpu").model_id
    words = [str(seed), "--engine", "transformers", "gpu=h100", f"model={target}", "runs=6"]
    proc = _blocked(venv, "render", *words, "--out", str(base / "render"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    plan = Plan.model_validate_json((base / "render" / "plan.json").read_text())
    assert len(plan.cells) == 5 and {c.model for c in plan.cells} == {target}
    drafted = [c for c in plan.cells if c.spec is not None]
    assert drafted and all(c.engine_args["assistant_model"] == recipes.draft("llama", "gpu")
                           .model_id for c in drafted)
    graph = next(c for c in plan.cells if c.spec is not None and not c.enforce_eager)
    text = (base / "render" / f"{graph.cell_id}.py").read_text()
    assert "CACHE_IMPLEMENTATION = {'cuda': 'static', 'cpu': 'dynamic'}" in text
    assert "COMPILE_MODE = {'cuda': 'reduce-overhead', 'cpu': 'default'}" in text
    assert "STANDS_IN_FOR = 'mtp'" in text
    assert _blocked(venv, "repro", "--help").returncode == 0
    # The refusal itself works: a service-only package is not importable there.
    refused = subprocess.run([str(venv / "bin" / "python"), "-P", "-c",
                              BLOCKER.replace("import triagebot.analyze", "import celery\n#"),
                              "typer", "--help"], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, check=False)
    assert "celery is not on the GPU machine" in refused.stderr


# --- pieces -----------------------------------------------------------------------------------


def test_nvidia_smi_query_is_parsed() -> None:
    facts = parse_smi_query(SMI)
    assert facts.driver == "580.159.04" and facts.cuda == "13.0" and facts.attached == 1
    assert facts.gpus == ["NVIDIA H100 80GB HBM3"]
    assert facts.memory_mib == [81559]  # the framebuffer's, not BAR1's
    assert parse_smi_query("") == type(facts)()


def test_gpu_stand_ins_are_new_recipes_and_the_cpu_ones_keep_their_ids() -> None:
    # The cpu runner's ids predate sizes; a change here would orphan every built cache.
    assert recipes.target("llama").model_id == "triagebot-standins/llama-target-6d03731ccb"
    assert recipes.draft("llama").model_id == "triagebot-standins/llama-draft-9a0dd38b80"
    assert recipes.target("mimo").model_id == "triagebot-standins/mimo-target-00c7b98bd3"
    big, small = recipes.target("llama", "gpu"), recipes.draft("llama", "gpu")
    assert big.hidden * big.layers > 10 * recipes.target("llama").hidden
    assert small.target == big and small.hidden < big.hidden
    assert {r.model_id for r in recipes.recipes_for({big.model_id, small.model_id})} == {
        big.model_id, small.model_id}
    assert recipes.draft_for(big.model_id) == small.model_id
    assert recipes.draft_for(small.model_id) is None
    assert recipes.draft_for("org/model") is None


def test_a_plan_names_the_stand_ins_its_scripts_load() -> None:
    target = recipes.target("llama", "gpu").model_id
    draft = recipes.draft("llama", "gpu").model_id
    base = {"engine": "transformers", "template": "transformers/generate.py.j2",
            "sampling": Sampling(temperature=0.0, max_tokens=8),
            "workload": CellWorkload(kind="offline", num_prompts=1, input_len=8)}
    cells = [Cell(cell_id="c0000000001", label="a", model=target, **base),
             Cell(cell_id="c0000000002", label="b", model=target,
                  spec=SpecParams(method="mtp", num_speculative_tokens=1),
                  engine_args={"assistant_model": draft}, **base),
             Cell(cell_id="c0000000003", label="c", model="org/real", **base)]
    plan = Plan(engine="transformers", gpu_kind="h100", question="?", cells=cells)
    assert standins.loaded_by(plan) == {target, draft}
