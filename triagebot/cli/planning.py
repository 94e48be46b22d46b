"""`triagebot parse`, `plan` and `render`: a report read, planned and rendered."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from triagebot.cli.base import (
    EXIT_REFUSED,
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
    read_report,
)

if TYPE_CHECKING:
    from triagebot.plan_model import Plan
    from triagebot.request_model import ReproRequest

# One string per paragraph: the help renderer wraps paragraphs itself.
PARSE_HELP = "\n\n".join((
    "Read a report into a ReproRequest: every field, its value and where it came from.",
    "`in_scope` is decided from what the thread asks, and `scope_reasons` says why. A thread "
    "is in scope when it compares or measures speed (throughput, latency, acceptance, the "
    "memory captured graphs take) with speculative decoding or CUDA/encoder graphs, or "
    "reports a crash while capturing or replaying graphs; the reasons then name the "
    "speculation or graph words, the speed words, and whether numbers or a configuration "
    "were found. Words in pasted commands, logs and templates' headings do not count.",
    "It is out of scope when neither speculation nor graphs are involved (a graph flag every "
    "run shares is a setting, not the subject); when they are only mentioned (a roadmap, a "
    "list of features, a logging change) with no sentence, numbers or configuration tying "
    "them to speed; when it asks about output quality (accuracy, eval scores, outputs that "
    "differ) rather than speed; when it is a crash outside graph capture with no speed "
    "question; or when it is a usage question, a feature request, an installation problem "
    "or a documentation, test or CI change without measurements.",
    "`symptom` says what went wrong, the title read first: spec_slower_than_baseline, "
    "graph_slower_than_eager, acceptance_drop, regression_between_versions, crash (the repro "
    "is a crash check), other (a speed-up below expectation, outputs that change), or null "
    "when no problem is reported. A value is given only where the text states it; where two "
    "readings compete it is null, listed in `missing` and quoted in `warnings`.",
))


@app.command(help=PARSE_HELP)
def parse(
    path: Annotated[str, typer.Argument(
        metavar="REPORT",
        help="Report file (markdown or a saved page), - for stdin, or an issue/PR URL.")],
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
    if not data.strip() and not request.warnings:
        # Belongs in the parser's document stage; kept at this boundary while the
        # parser is being reworked.
        request = request.model_copy(update={"warnings": ["the input is empty: there is "
                                                          "no report to read"]})
    _show(request, json_out)


@app.command()
def plan(
    path: ReportArg,
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
    inputs = PlanInputs(path, overrides, title, repo, engine, runs, trust, runner)
    _show(inputs.load()[1], json_out)


def _show(result: ReproRequest | Plan, json_out: bool) -> None:
    """Exactly one JSON object on stdout with --json; the tables otherwise."""
    if json_out:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return
    from triagebot.cli import views
    from triagebot.plan_model import Plan

    if isinstance(result, Plan):
        views.render_plan(console(), result)
    else:
        views.render_request(console(), result)


@app.command()
def render(
    path: ReportArg,
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

    inputs = PlanInputs(path, overrides, title, repo, engine, runs, trust, runner)
    _, result = inputs.load()
    try:
        scripts = render_plan(result, cell)
    except RenderError as exc:
        raise fail(EXIT_REFUSED, str(exc)) from None
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
    out_console = console()
    out_console.print(f"wrote {len(scripts)} files and plan.json to {escape(str(out))}; run them "
                  f"with: bash {escape(str(out / 'run_all.sh'))}")
