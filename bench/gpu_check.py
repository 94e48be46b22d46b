"""The GPU path, run on a GPU: one prepared check that fits in a few minutes.

Two steps on two machines (docs/runners/gpu.md):

    python3 bench/gpu_check.py wheels             # here, with PyPI: fills .gpu/
    bash bench/gpu_check.sh                       # there, offline: the report lands in $OUT

`wheels` puts in `.gpu/` (ignored by git; it travels as a carried folder) what a GPU
machine that has torch, transformers, typer, jinja2, rich, numpy and scipy lacks for
`triagebot repro --local --engine transformers`: pydantic and its parts, transformers 5.24
(the first release whose assisted generation verifies over a static KV cache, which CUDA
graphs need) and the project itself as a wheel, at the versions uv.lock pins, as
CPython 3.12 manylinux wheels; and seed 000's report, since `../shared` does not travel.

`run` is what gpu_check.sh calls once those are installed: it builds the GPU-sized
stand-ins on the GPU with the cpu runner's builders, runs seed 000's plan (spec x graph
plus an A/A pair) with the transformers engine through `triagebot repro --local`, the same
orchestrator, analysis and report as every runner, and leaves at most six flat files in
OUT: report.md, findings.json, check.json (timings, versions, the verdict line and the
CUDA graph checks), repro.tar.gz (plan, scripts, results and every cell's log),
nvidia-smi-q.txt, and check.log (written by gpu_check.sh). With `--size cpu --device cpu`
(gpu_check.sh --dry-run) the same steps run on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARRY = ROOT / ".gpu"
SEED = "000"

# What the GPU machine's image lacks for the repro path (KINDS.md's package list), by the
# names uv.lock gives them; each is carried at the locked version. typing-extensions,
# packaging, typer and annotated-doc are there, but in releases we have not tested (the
# locked typer needs pydantic, which the image lacks, so its own typer is another).
CARRIED = ("annotated-doc", "annotated-types", "packaging", "pydantic", "pydantic-core",
           "typer", "typing-extensions", "typing-inspection", "transformers")
# What the image has that the repro path imports (import names): torch and transformers
# for the scripts; the CLI, plan, render, analysis and report for the rest.
ON_MACHINE = ("torch", "transformers", "tokenizers", "safetensors", "huggingface_hub",
              "typer", "click", "shellingham", "rich", "pygments", "markdown_it", "mdurl",
              "jinja2", "markupsafe", "yaml", "numpy", "scipy", "regex", "tqdm", "filelock",
              "fsspec", "packaging", "typing_extensions", "prometheus_client", "psutil",
              "requests", "urllib3", "idna", "certifi", "charset_normalizer", "httpx",
              "httpcore", "h11", "anyio", "sniffio", "sympy", "mpmath", "networkx",
              "triton", "hf_xet", "uvloop")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")

# Seed 000's plan on the GPU: 6 runs per cell in two mirrored starts, at most one
# escalation round (8), so the whole check stays near five minutes on an H100; past the
# deadline the repro is stopped and what ran is reported, so it never passes about seven.
RUNS = {"gpu": 6, "cpu": 2}
MAX_RUNS = {"gpu": 8, "cpu": 2}
DEADLINE_S = {"gpu": 330.0, "cpu": None}


def say(message: str) -> None:
    print(f"[gpu-check {time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- wheels (here) ---------------------------------------------------------------------------


def locked_versions(lock: Path, names: tuple[str, ...]) -> dict[str, str]:
    """The version uv.lock pins for each of `names`."""
    packages = {p["name"]: p["version"] for p in tomllib.loads(lock.read_text())["package"]
                if "version" in p}
    missing = [n for n in names if n not in packages]
    if missing:
        raise SystemExit(f"uv.lock pins no version of {', '.join(missing)}")
    return {n: packages[n] for n in names}


def wheel_prefix(name: str, version: str) -> str:
    """How a wheel file of this release starts (names normalised as wheels spell them)."""
    return f"{name.replace('-', '_').lower()}-{version}-"


def download(versions: dict[str, str], dest: Path, python_version: str) -> None:
    """One wheel per package for CPython `python_version` on x86-64 Linux; a wheel
    already in `dest` is kept, so a second call needs no network."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, version in versions.items():
        prefix = wheel_prefix(name, version)
        if any(p.name.lower().startswith(prefix) for p in dest.glob("*.whl")):
            continue
        for old in dest.glob(f"{name.replace('-', '_')}-*.whl"):
            old.unlink()  # two versions of one package stop the whole install
        cmd = [_pip_python(), "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary=:all:", "--python-version", python_version,
               "--implementation", "cp", "--dest", str(dest), f"{name}=={version}"]
        for plat in PLATFORMS:
            cmd += ["--platform", plat]
        subprocess.run(cmd, check=True)


def _pip_python() -> str:
    """An interpreter with pip: this one, or the tool venv `./dev` keeps (uv's venvs
    have none)."""
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                           check=False)
    tools = ROOT / ".cache" / "tools" / "bin" / "python"
    return sys.executable if probe.returncode == 0 or not tools.exists() else str(tools)


def build_project(dest: Path) -> Path:
    """The project as a wheel, built from this tree (replacing an older one)."""
    for old in dest.glob("triagebot-*.whl"):
        old.unlink()
    uv = ROOT / ".cache" / "tools" / "bin" / "uv"
    if uv.exists():
        subprocess.run([str(uv), "build", "--quiet", "--wheel", "--out-dir", str(dest),
                        str(ROOT)], check=True)
    else:
        subprocess.run([_pip_python(), "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--wheel-dir", str(dest), str(ROOT)], check=True)
    return next(dest.glob("triagebot-*.whl"))


def seed_file() -> Path:
    found = sorted((ROOT.parent / "shared" / "seeds").glob(f"{SEED}_*.txt"))
    if not found:
        raise SystemExit(f"seed {SEED} is not under {ROOT.parent / 'shared' / 'seeds'}")
    return found[0]


def wheels(args: argparse.Namespace) -> int:
    dest = Path(args.dest)
    versions = locked_versions(ROOT / "uv.lock", CARRIED)
    download(versions, dest / "wheels", args.python_version)
    project = build_project(dest / "wheels")
    shutil.copyfile(seed_file(), dest / f"seed-{SEED}.txt")
    total = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    for p in sorted((dest / "wheels").glob("*.whl")):
        say(f"{p.name} ({p.stat().st_size / 2**20:.1f} MiB)")
    say(f"{dest}: {total / 2**20:.1f} MiB in all (the device takes 64 MiB with the tree); "
        f"project wheel {project.name}")
    return 0


# --- run (there) -----------------------------------------------------------------------------


def machine(out: Path) -> dict[str, object]:
    """What torch and nvidia-smi say about this machine; nvidia-smi -q goes to OUT."""
    import torch

    from triagebot.run import gpu

    facts: dict[str, object] = {
        "python": platform.python_version(), "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(), "torch_cuda": torch.version.cuda}
    if torch.cuda.is_available():
        facts["device_name"] = torch.cuda.get_device_name(0)
        facts["device_count"] = torch.cuda.device_count()
    text = gpu.smi_query()
    if text is not None:
        (out / "nvidia-smi-q.txt").write_text(text)
        facts["nvidia_smi"] = gpu.parse_smi_query(text).model_dump()
    return facts


def run(args: argparse.Namespace) -> int:
    import torch
    import transformers

    from triagebot.engines import standins as recipes
    from triagebot.plan.defaults import gpu_kind
    from triagebot.run import standins

    started = time.monotonic()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        say("error: --device cuda, but torch sees no usable GPU")
        return 2
    facts = machine(out)
    say(f"python {facts['python']}, torch {torch.__version__}, transformers "
        f"{transformers.__version__}, device {device}")

    timings: dict[str, float] = {}
    target, draft = recipes.target("llama", args.size), recipes.draft("llama", args.size)
    tick = time.monotonic()
    standins.ensure({target.model_id, draft.model_id}, standins.DEFAULT_CACHE, log=say,
                    device=device)
    if device == "cuda":
        torch.cuda.empty_cache()  # the training's memory, before the cells measure theirs
    timings["standins_s"] = round(time.monotonic() - tick, 1)

    kind = (gpu_kind(str(facts.get("device_name", ""))) or "h100") if device == "cuda" \
        else "cpu"
    repro_dir = work / "repro"
    # The installed command, as a user runs it (`python -m` would import the tree's copy).
    command = [str(Path(sys.executable).parent / "triagebot"), "repro", str(args.seed),
               "--engine", "transformers", "--local", f"gpu={kind}",
               f"model={target.model_id}", f"runs={args.runs}",
               "--max-runs", str(args.max_runs), "--out", str(repro_dir)]
    say("$ triagebot " + " ".join(command[1:]))
    tick = time.monotonic()
    code, stopped = repro_until(command, args.deadline_s, repro_dir)
    timings["repro_s"] = round(time.monotonic() - tick, 1)
    timings["run_s"] = round(time.monotonic() - started, 1)
    summary = collect(repro_dir, out, facts, timings, command, (code, stopped), args)
    say(f"repro exited {code}; {summary.get('verdict', 'no report')}")
    for line in summary.get("graphs", []):
        say(f"graphs: {line}")
    say(f"stand-ins {timings['standins_s']} s, repro {timings['repro_s']} s, "
        f"run {timings['run_s']} s")
    # 0, 1 and 4 are verdicts (reproduced, not, inconclusive); anything else is a failure.
    return 0 if code in (0, 1, 4) else code or 1


def repro_until(command: list[str], deadline_s: float | None,
                repro_dir: Path) -> tuple[int, bool]:
    """Run the repro: its exit code, and whether the deadline stopped it. Past the
    deadline it is interrupted (its running cell is stopped, as on Ctrl-C) and what ran
    is reported with `triagebot report`, so a slow machine still brings back a report
    inside the device's time."""
    proc = subprocess.Popen(command)
    try:
        return proc.wait(timeout=deadline_s), False
    except subprocess.TimeoutExpired:
        say(f"the repro passed its {deadline_s:.0f} s deadline: interrupting it and "
            "reporting the runs that finished")
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    report = [command[0], "report", str(repro_dir)]
    return subprocess.run(report, stdout=subprocess.DEVNULL, check=False).returncode, True


def collect(repro_dir: Path, out: Path, facts: dict[str, object],
            timings: dict[str, float], command: list[str], ended: tuple[int, bool],
            args: argparse.Namespace) -> dict[str, object]:
    """report.md, findings.json, repro.tar.gz and check.json into OUT; `ended` is the
    repro's exit code and whether the deadline stopped it."""
    summary: dict[str, object] = {
        "size": args.size, "device": args.device, "machine": facts, "timings": timings,
        "command": ["triagebot", *command[1:]], "exit_code": ended[0],
        "deadline_s": args.deadline_s, "stopped_at_deadline": ended[1]}
    for name in ("report.md", "findings.json"):
        if (repro_dir / name).exists():
            shutil.copyfile(repro_dir / name, out / name)
    if (repro_dir / "report.md").exists():
        summary["verdict"] = (repro_dir / "report.md").read_text().splitlines()[0]
    if (repro_dir / "findings.json").exists():
        findings = json.loads((repro_dir / "findings.json").read_text())
        summary["graphs"] = [("FLAGGED " if g["flagged"] else "") + g["sentence"]
                             for g in findings.get("graphs", [])]
        summary["runner_env"] = findings.get("runner_env", {})
    if repro_dir.exists():
        # Everything but the link to the stand-in weights (gigabytes on a GPU).
        with tarfile.open(out / "repro.tar.gz", "w:gz") as tar:
            tar.add(repro_dir, arcname="repro",
                    filter=lambda info: None if info.issym() else info)
    (out / "check.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    w = sub.add_parser("wheels", help="here: download the wheels and seed into .gpu/")
    w.add_argument("--dest", default=str(CARRY))
    w.add_argument("--python-version", default="3.12",
                   help="the GPU machine's Python (default 3.12)")
    r = sub.add_parser("run", help="there, after the install: stand-ins, repro, OUT")
    r.add_argument("--out", default=os.environ.get("OUT", "gpu-check-out"))
    r.add_argument("--work", default="/tmp/triagebot-gpu-check")
    r.add_argument("--seed", default=str(CARRY / f"seed-{SEED}.txt"))
    r.add_argument("--size", choices=("gpu", "cpu"), default="gpu")
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    r.add_argument("--runs", type=int)
    r.add_argument("--max-runs", type=int)
    r.add_argument("--deadline-s", type=float,
                   help="stop the repro after this long and report what ran "
                        "(default 330 s on a GPU, none on a CPU)")
    args = parser.parse_args(argv)
    if args.step == "wheels":
        return wheels(args)
    args.runs = args.runs or RUNS[args.size]
    args.max_runs = max(args.max_runs or MAX_RUNS[args.size], args.runs)
    args.deadline_s = args.deadline_s or DEADLINE_S[args.size]
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
