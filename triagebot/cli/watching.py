"""`triagebot watch REPORT --engine E --runner R --from V1 [--to V2 | --releases a,b,c]`.

The App's watch loop on one machine: each release installed as `repro` installs it, the
first one measured with the report's whole plan, each later one against the last release
measured, side by side in one job. Prints the Watch table (or `--json`) with progress on
stderr. The run layer imports numpy and scipy, so it is imported inside the command.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from triagebot.cli.base import (
    EXIT_INCONCLUSIVE,
    EXIT_NOT_REPRODUCED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_RUN_ERROR,
    EXIT_USAGE,
    PlanInputs,
    app,
    console,
    escape,
    fail,
    stoppable,
)

if TYPE_CHECKING:
    from triagebot.run.watch_steps import Watched

# The exit code of the last row's state: 0 says the report is fixed.
STATE_EXIT = {"fixed": EXIT_OK, "reproduced": EXIT_NOT_REPRODUCED,
              "worse": EXIT_NOT_REPRODUCED, "back": EXIT_NOT_REPRODUCED,
              "inconclusive": EXIT_INCONCLUSIVE, "broken": EXIT_RUN_ERROR,
              "config_invalid": EXIT_RUN_ERROR}

WATCH_HELP = "\n\n".join((
    "Re-measure a report on each release: the first release that runs gets the report's "
    "whole plan, which names the comparison that decides it; each later release runs that "
    "comparison side by side with the last release measured, in one job, with the A/A "
    "pair. Each row's state: still reproduced, fixed, worse, back, broken (the line it "
    "failed on), config no longer valid (the key), inconclusive.",
    "Releases: --releases a,b,c, or --from V1 with --to V2 (default: the newest), listed "
    "from the package index (--index; PyPI by default).",
    "Exit code: 0 the last state is fixed, 1 the report still holds (still reproduced, "
    "worse, back), 4 inconclusive, 5 broken or config no longer valid, 2 bad input, 3 "
    "refused.",
))


@app.command(name="watch", help=WATCH_HELP)
@stoppable
def watch_command(
    path: Annotated[str, typer.Argument(
        metavar="REPORT", help="Report file, - for stdin, or an issue/PR URL.")],
    overrides: Annotated[list[str] | None, typer.Argument(
        metavar="KEY=VALUE", help="Repro overrides, as in `triagebot repro`.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="Same as engine=.")] = None,
    runner: Annotated[str | None, typer.Option(
        "--runner", help="Runner kind, same as gpu= (cpu: vLLM's CPU build).")] = None,
    first: Annotated[str | None, typer.Option("--from", help="The first release.")] = None,
    last: Annotated[str | None, typer.Option("--to", help="The last release.")] = None,
    releases: Annotated[str | None, typer.Option(
        "--releases", help="Comma-separated releases, in the order to measure them.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    title: Annotated[str | None, typer.Option("--title", help="The issue title.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Where each release's runs go (default ./triagebot-out/watch-...).")]
    = None,
    cache: Annotated[Path | None, typer.Option(help="Environment cache directory.")] = None,
    index: Annotated[str | None, typer.Option(
        "--index", help="Package index (simple API URL) to list releases from.")] = None,
) -> None:
    from triagebot.bisect import envs
    from triagebot.report.watch import render_watch
    from triagebot.run import vllm_cpu
    from triagebot.run.orchestrate import DEFAULT_CACHE
    from triagebot.run.provision import ProvisionError
    from triagebot.run.watch_steps import StepContext, WatchSettings, watch_releases

    inputs = PlanInputs(path, overrides, title, None, engine, None, None, runner)
    request, probe = inputs.load()
    err = console(stderr=True)
    package = envs.package_for(probe.engine, probe.gpu_kind)
    try:
        order = _releases(first, last, releases, lambda: envs.index_versions(
            package, index or envs.PYPI_SIMPLE))
    except (ValueError, ProvisionError) as exc:
        raise fail(EXIT_USAGE, str(exc)) from None
    if not order:
        raise fail(EXIT_REFUSED, "no release lies in that range")
    from triagebot.overrides import parse_overrides

    options = parse_overrides([*(overrides or []), *([f"engine={engine}"] if engine else []),
                               *([f"gpu={runner}"] if runner else [])])
    cache_dir = cache or DEFAULT_CACHE
    folder = out or Path("triagebot-out") / f"watch-{probe.engine}-{order[0]}-{order[-1]}"
    ctx = StepContext(request=request, options=options,
                      settings=WatchSettings(out_dir=folder, cache_dir=cache_dir))
    on_cpu = vllm_cpu.is_cpu_plan(probe.engine, probe.gpu_kind)

    def before(release: str) -> None:
        if on_cpu:  # a release without a committed lock is locked here first
            envs.ensure_lock(release, cache_dir, log=lambda m: err.print(escape(m)))

    err.print(f"watching {len(order)} release(s) {', '.join(order)} into "
              f"{escape(str(folder))}")
    folder.mkdir(parents=True, exist_ok=True)

    def saved(watched: Watched) -> None:
        (folder / "watch.json").write_text(watched.model_dump_json(indent=2) + "\n")

    watched = watch_releases(ctx, order, log=lambda m: err.print(escape(m)), on_row=saved,
                             before=before, dates=release_dates(package, index or envs.PYPI_SIMPLE))
    if as_json:
        sys.stdout.write(json.dumps(watched.model_dump(mode="json"), indent=2) + "\n")
    else:
        table = render_watch(watched.rows, watched.comparison or "the report's comparison")
        (folder / "watch.md").write_text(table)
        sys.stdout.write(table)
    raise typer.Exit(STATE_EXIT[watched.rows[-1].state])


def _releases(first: str | None, last: str | None, given: str | None,
              listed: Callable[[], Sequence[str]]) -> list[str]:
    """The releases to measure, in order: as given, or the index's between the ends."""
    from triagebot.bisect.ranges import finals
    from triagebot.engines.vllm_catalog import version_key

    if given:
        if first or last:
            raise ValueError("give --releases, or --from with --to, not both")
        order = [v.strip() for v in given.split(",") if v.strip()]
        bad = [v for v in order if not _is_release(v)]
        if bad:
            raise ValueError(f"--releases: {bad[0]!r} is not a release such as 0.25.1")
        if len(set(order)) != len(order):
            raise ValueError("--releases names a release twice")
        return order
    if not first:
        raise ValueError("give --from V1 (with --to V2 or alone), or --releases a,b,c")
    for v in (first, last):
        if v is not None and not _is_release(v):
            raise ValueError(f"{v!r} is not a release such as 0.25.1")
    known = finals(listed())
    low, high = version_key(first), version_key(last) if last else None
    if high is not None and high < low:
        raise ValueError(f"--to {last} is older than --from {first}")
    return [v for v in known if version_key(v) >= low and (high is None
                                                            or version_key(v) <= high)]


def release_dates(package: str, index: str) -> dict[str, str]:
    """Each release's date (its first file's upload day) from the index's project page;
    none where the index cannot say (a folder of wheels, an index that does not answer:
    the table then shows no date rather than the day it was measured)."""
    if "://" not in index or index.startswith("file://"):
        return {}
    import httpx

    from triagebot.workers.watch_feed import FeedState, poll

    with httpx.Client(timeout=30) as client:
        polled = poll(f"{index.rstrip('/')}/{package}/", FeedState(), client)
    return {r.version: r.date for r in polled.state.releases}


def _is_release(version: str) -> bool:
    return re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){1,3}", version) is not None
