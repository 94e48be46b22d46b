"""`triagebot sentinel --engine E --runner R --releases a,b,c [--cases ...]`.

The App's sentinel loop on one machine: each release installed as `repro` installs it,
every standing case at each release measured against the last release it ran on, side
by side in one job. Prints each release's table, the flags and the change points (or
`--json`), progress on stderr, and stores every figure in the history database. The run
layer imports numpy and scipy, so it is imported inside the command.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from triagebot.cli.base import (
    EXIT_NOT_REPRODUCED,
    EXIT_OK,
    EXIT_USAGE,
    app,
    console,
    escape,
    fail,
)

if TYPE_CHECKING:
    from triagebot.run.sentinel_steps import SentinelRound
    from triagebot.sentinel.models import Flag, SentinelCase

SENTINEL_HELP = "\n\n".join((
    "Measure the standing cases on each release: every case (a method at k, speculation "
    "on and off under eager and graph) at a release against the last release it ran on, "
    "both in one job with the group-sequential verdict. Each row: the spec/no-spec ratio "
    "[CI], the ratio of ratios against the previous release, acceptance from the engine's "
    "counters, greedy output equality, and its flags (stopped paying, speed-up fell, "
    "acceptance fell, outputs diverged, crashed, refused). Then the change points of each "
    "case's series in the history database.",
    "Cases: [sentinel] of --config (a .github/triagebot.toml), else the defaults for the "
    "engine and runner; --cases picks some by id or method (mtp,draft_model).",
    "Exit code: 0 nothing flagged, 1 something flagged, 2 bad input.",
))


@app.command(name="sentinel", help=SENTINEL_HELP)
def sentinel_command(
    overrides: Annotated[list[str] | None, typer.Argument(
        metavar="KEY=VALUE", help="Options added to every case, as in `triagebot repro` "
                                  "(runs=8, max_tokens=32).")] = None,
    engine: Annotated[str, typer.Option("--engine", help="The engine.")] = "vllm",
    runner: Annotated[str, typer.Option(
        "--runner", help="Runner kind (cpu: vLLM's CPU build).")] = "cpu",
    releases: Annotated[str, typer.Option(
        "--releases", help="Comma-separated releases, oldest first.")] = "",
    cases: Annotated[str | None, typer.Option(
        "--cases", help="Comma-separated case ids or methods (default: all).")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="A triagebot.toml whose [sentinel] lists the cases.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rounds as JSON.")] = False,
    db: Annotated[str | None, typer.Option(
        "--db", help="History database URL (default: sqlite under the output folder).")]
    = None,
    margin: Annotated[float | None, typer.Option(
        "--margin", help="Flag a speed-up that fell by more than this %.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Where the runs go (default ./triagebot-out/sentinel-...).")] = None,
    cache: Annotated[Path | None, typer.Option(help="Environment cache directory.")] = None,
    show: Annotated[bool, typer.Option(
        "--show", help="Print what the history holds for these cases and releases; run "
                       "nothing.")] = False,
) -> None:
    from triagebot.repo_config import RepoConfig, RepoConfigError, parse_repo_config
    from triagebot.sentinel import cases as matrix

    try:
        order = _release_list(releases)
        section = (parse_repo_config(config.read_bytes()) if config else RepoConfig()).sentinel
        chosen = matrix.matrix(section, engine, runner)
        if cases:
            chosen = matrix.select(chosen, [c.strip() for c in cases.split(",") if c.strip()])
    except (OSError, ValueError, RepoConfigError) as exc:
        raise fail(EXIT_USAGE, str(exc)) from None
    if not chosen:
        raise fail(EXIT_USAGE, f"no sentinel case for {engine} on the {runner} runner")
    if margin is not None and not 0.5 <= margin <= 50:
        raise fail(EXIT_USAGE, "--margin is a percentage from 0.5 to 50")
    folder = out or Path("triagebot-out") / f"sentinel-{engine}-{runner}-{order[0]}-{order[-1]}"
    if show:
        flagged = _show(chosen, order, db or _default_db(folder), folder, as_json)
    else:
        flagged = _run(chosen, order, folder, db, cache, overrides or [],
                       margin / 100 if margin is not None else section.margin(), as_json)
    raise typer.Exit(EXIT_NOT_REPRODUCED if flagged else EXIT_OK)


def _release_list(given: str) -> list[str]:
    """The releases as given, oldest first; a ValueError names a bad or repeated one."""
    order = [v.strip() for v in given.split(",") if v.strip()]
    if not order:
        raise ValueError("give --releases a,b,c (oldest first)")
    bad = [v for v in order if not re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){1,3}", v)]
    if bad:
        raise ValueError(f"--releases: {bad[0]!r} is not a release such as 0.25.1")
    if len(set(order)) != len(order):
        raise ValueError("--releases names a release twice")
    return order


def _run(cases: list[SentinelCase], order: list[str], folder: Path, db: str | None,
         cache: Path | None, extra: list[str], margin: float, as_json: bool) -> bool:
    """The loop, its tables and change points; whether anything was flagged."""
    from triagebot.bisect import envs
    from triagebot.overrides import OptionsError, parse_overrides
    from triagebot.run import vllm_cpu
    from triagebot.run.orchestrate import DEFAULT_CACHE
    from triagebot.run.sentinel_steps import SentinelContext, sentinel_releases
    from triagebot.run.watch_steps import WatchSettings
    from triagebot.sentinel.history import History

    err = console(stderr=True)
    try:
        parse_overrides(extra)
    except OptionsError as exc:
        raise fail(EXIT_USAGE, str(exc)) from None
    cache_dir = cache or DEFAULT_CACHE
    folder.mkdir(parents=True, exist_ok=True)
    history = History(db or _default_db(folder))
    ctx = SentinelContext(settings=WatchSettings(out_dir=folder, cache_dir=cache_dir),
                          extra=extra, margin=margin)
    on_cpu = any(vllm_cpu.is_cpu_plan(c.engine, c.runner) for c in cases)

    def say(message: str) -> None:
        err.print(escape(message))

    def before(release: str) -> None:
        if on_cpu:  # a release without a committed lock is locked here first
            envs.ensure_lock(release, cache_dir, log=say)

    say(f"sentinel: {len(cases)} case(s) x {len(order)} release(s) {', '.join(order)} into "
        f"{folder}; history in {history.url}")
    rounds = sentinel_releases(ctx, cases, order, log=say, before=before,
                               on_figures=lambda fig, flags: history.record(fig, flags))
    drift = [f for c in cases for f in history.drift_flags(c.case_id, modes=c.modes)]
    history.close()
    return _print(rounds, drift, folder, as_json)


def _default_db(folder: Path) -> str:
    from triagebot.sentinel.history import default_url

    return default_url(folder)


def _show(cases: list[SentinelCase], order: list[str], db: str, folder: Path,
          as_json: bool) -> bool:
    """The tables, flags and change points the history holds; whether any flag."""
    from triagebot.run.sentinel_steps import SentinelRound
    from triagebot.sentinel.history import History

    history = History(db)
    ids = {c.case_id for c in cases}
    rounds = []
    for release in order:
        held = [history.figures(c.case_id, release) for c in cases]
        rounds.append(SentinelRound(
            release=release, figures=[f for f in held if f is not None],
            flags=[f for f in history.flags(release=release) if f.case_id in ids]))
    drift = [f for c in cases for f in history.drift_flags(c.case_id, modes=c.modes)]
    history.close()
    return _print(rounds, drift, folder, as_json)


def _print(rounds: list[SentinelRound], drift: list[Flag], folder: Path, as_json: bool) -> bool:
    """Write sentinel.json and sentinel.md into `folder`, print one; whether any flag."""
    from triagebot.sentinel.table import flag_list, release_table

    folder.mkdir(parents=True, exist_ok=True)
    flags = [f for r in rounds for f in r.flags]
    (folder / "sentinel.json").write_text(json.dumps(
        {"rounds": [r.model_dump(mode="json") for r in rounds],
         "change_points": [f.model_dump(mode="json") for f in drift]}, indent=2) + "\n")
    if as_json:
        sys.stdout.write((folder / "sentinel.json").read_text())
    else:
        text = "".join(release_table(r.release, r.figures, r.flags, r.skipped) for r in rounds)
        text += flag_list(flags) + flag_list(drift, "Change points")
        (folder / "sentinel.md").write_text(text)
        sys.stdout.write(text)
    return bool(flags or drift)
