"""`triagebot repro` and `report`: run a plan on this machine, and re-render its report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from triagebot.cli.base import (
    EXIT_REFUSED,
    EXIT_USAGE,
    OUTCOME_EXIT,
    EngineOpt,
    OverridesArg,
    PlanInputs,
    RepoOpt,
    ReportArg,
    RunnerOpt,
    RunsOpt,
    TitleOpt,
    TrustOpt,
    app,
    console,
    escape,
    fail,
    stoppable,
)


@app.command()
@stoppable
def repro(
    path: ReportArg,
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
                                           "verdicts (default 30; a runner's plan may "
                                           "lower it).")] = None,
) -> None:
    """Parse, plan, run every cell here, analyse and print the report.

    Exit code: 0 reproduced, 1 not reproduced, 4 inconclusive, 6 could not answer
    (the report's own comparison cannot run on this runner; the report says why and what
    was measured instead), 5 the runs failed, 2 bad input, 3 the plan was refused.
    """
    from triagebot.render import RenderError, render_plan
    from triagebot.report import render_report
    from triagebot.run.orchestrate import DEFAULT_CACHE, RunSettings, execute

    inputs = PlanInputs(path, overrides, title, repo, engine, runs, trust, runner)
    request, loaded_plan = inputs.load(max_runs)
    try:
        scripts = render_plan(loaded_plan)
    except RenderError as exc:
        raise fail(EXIT_REFUSED, str(exc)) from None
    folder = out or Path("triagebot-out") / loaded_plan.plan_hash
    settings = RunSettings(out_dir=folder, cache_dir=cache or DEFAULT_CACHE,
                           local=not provision_envs)
    from triagebot.cli.views import ProgressView

    with ProgressView(console(stderr=True), loaded_plan) as view:
        execution = execute(loaded_plan, scripts, request, settings, view.update)
    command = " ".join(["triagebot repro", *map(_shell_word, _command_words(inputs))])
    report = render_report(loaded_plan, execution.findings, scripts=scripts, command=command)
    (folder / "report.md").write_text(report)
    sys.stdout.write(report + ("" if report.endswith("\n") else "\n"))
    console(stderr=True).print(f"wrote {escape(str(folder))}/report.md")
    raise typer.Exit(OUTCOME_EXIT[execution.findings.outcome])


@app.command()
def report(
    folder: Annotated[Path, typer.Argument(
        metavar="FOLDER", help="A `triagebot repro` output directory.")],
) -> None:
    """Re-render report.md (and findings.json) from the plan, results and logs a repro
    left in FOLDER. Exit code: the outcome's, as for `repro`."""
    from pydantic import ValidationError

    from triagebot.analyze.findings import analyze
    from triagebot.plan_model import Plan
    from triagebot.render import RenderedScript
    from triagebot.report import render_report
    from triagebot.request_model import ReproRequest
    from triagebot.run.orchestrate import load_results

    try:
        loaded_plan = Plan.model_validate_json((folder / "plan.json").read_text())
        request_path = folder / "request.json"
        request = (ReproRequest.model_validate_json(request_path.read_text())
                   if request_path.exists() else None)
        results = load_results(folder)
    except (OSError, ValidationError) as exc:
        raise fail(EXIT_USAGE, f"{folder} is not a readable repro folder: {exc}") from None
    logs = {p.name.split("-r")[0]: p.read_text(errors="replace")
            for p in sorted((folder / "logs").glob("c*-r*.log"))}
    margin, negligible = _previous_rule(folder)
    by_cell = {c.cell_id: results.get(c.cell_id, []) for c in loaded_plan.cells}
    findings = analyze(loaded_plan, by_cell, request=request, logs=logs, margin=margin,
                       negligible=negligible)
    scripts = [RenderedScript(cell_id=p.stem if p.suffix == ".py" else None, filename=p.name,
                              language="python" if p.suffix == ".py" else "bash",
                              text=p.read_text())
               for p in sorted((folder / "scripts").glob("*")) if p.is_file()]
    text = render_report(loaded_plan, findings, scripts=scripts,
                         command=f"triagebot report {_shell_word(str(folder))}")
    # A repro stopped before its end left no findings.json; this reading is the one now.
    (folder / "findings.json").write_text(findings.model_dump_json(indent=2) + "\n")
    (folder / "report.md").write_text(text)
    sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    raise typer.Exit(OUTCOME_EXIT[findings.outcome])


def _previous_rule(folder: Path) -> tuple[float, float]:
    """The margin and negligible band the repro was judged with (its findings.json), so a
    re-render agrees."""
    from pydantic import ValidationError

    from triagebot.analyze.findings_models import Findings
    from triagebot.analyze.verdict import DEFAULT_MARGIN, DEFAULT_NEGLIGIBLE

    try:
        old = Findings.model_validate_json((folder / "findings.json").read_text())
    except (OSError, ValidationError):
        return DEFAULT_MARGIN, DEFAULT_NEGLIGIBLE
    return old.margin, old.negligible


def _shell_word(word: str) -> str:
    import shlex

    return shlex.quote(word)


def _command_words(inputs: PlanInputs) -> list[str]:
    """The report and the options that shaped the plan, as the report quotes the command."""
    words = [inputs.path, *(inputs.overrides or [])]
    if inputs.engine:
        words.append(f"--engine={inputs.engine}")
    if inputs.runner:
        words.append(f"--runner={inputs.runner}")
    if inputs.runs is not None:
        words.append(f"--runs={inputs.runs}")
    return words
