"""The Typer app, exit codes, options and input reading every command shares."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer

from triagebot import __version__

if TYPE_CHECKING:
    from rich.console import Console

    from triagebot.analyze.outcome_models import Outcome
    from triagebot.plan_model import Plan
    from triagebot.request_model import ReproRequest

app = typer.Typer(
    name="triagebot",
    help="Turn a speculative-decoding or CUDA-graph performance report into a measured "
    "answer: parse it, plan the runs that answer it, run them, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: Typer's Rich help formatter costs more than the rest of start-up.
    rich_markup_mode=None,
)

# Exit codes shared by every command.
EXIT_OK = 0
EXIT_USAGE = 2  # unreadable input, bad overrides
EXIT_REFUSED = 3  # the input is fine but cannot be planned or rendered as asked
EXIT_REPRODUCED = 0
EXIT_NOT_REPRODUCED = 1
EXIT_INCONCLUSIVE = 4
EXIT_RUN_ERROR = 5
EXIT_CANNOT_ANSWER = 6  # the report's own comparison cannot run on this runner
OUTCOME_EXIT: dict[Outcome, int] = {
    "reproduced": EXIT_REPRODUCED, "not_reproduced": EXIT_NOT_REPRODUCED,
    "inconclusive": EXIT_INCONCLUSIVE, "cannot_answer": EXIT_CANNOT_ANSWER,
    "error": EXIT_RUN_ERROR}



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
# Only threads on that GitHub's own host are read: another host's issue 100 is not the
# issue 100 of the same name here.
_THREAD_URL = re.compile(
    r"^https?://([A-Za-z0-9.:-]+)/([A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100})/"
    r"(?:issues|pull)/([0-9]{1,9})/?(?:#.*)?$")
_URL = re.compile(r"^https?://([^/?#]*)", re.I)


def read_report(path: str, title: str | None,
                repo: str | None) -> tuple[bytes, str | None, str | None]:
    """The report's bytes, title and repo from a file, stdin or an issue/PR URL."""
    url = _URL.match(path)
    if url is None:
        return read_input(path), title, repo
    from triagebot.github.client import GitHubClient
    from triagebot.github.errors import GitHubError
    from triagebot.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise fail(EXIT_USAGE, f"cannot read {path}: {exc}") from None
    host = settings.github_web_host
    if url[1].lower() != host:
        raise fail(EXIT_USAGE, f"{path} is not a thread on {host}, the GitHub this triagebot "
                               f"reads (TRIAGEBOT_GITHUB_API_URL={settings.github_api_url}); "
                               "give an issue or pull request URL there, or a file")
    match = _THREAD_URL.match(path)
    if match is None:
        raise fail(EXIT_USAGE, f"{path} is not an issue or pull request URL: write "
                               f"https://{host}/OWNER/REPO/issues/N or .../pull/N")
    try:
        client = GitHubClient.with_token(settings, settings.github_token.get_secret_value()
                                         if settings.github_token else None)
        thread = client.read_thread(match[2], int(match[3]))
    except GitHubError as exc:
        raise fail(EXIT_USAGE, f"cannot read {path}: {exc}") from None
    return thread.body.encode(), title or thread.title, repo or match[2]


def read_input(path: str) -> bytes:
    """The report's bytes from a file or `-` (stdin); a clear error and exit 2 otherwise."""
    if path == "-":
        return sys.stdin.buffer.read()
    p = Path(path)
    try:
        if p.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        return p.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise fail(EXIT_USAGE, f"cannot read {path!r}: {reason}") from None


ReportArg = Annotated[str, typer.Argument(
    metavar="REPORT", help="Report file, - for stdin, or an issue/PR URL.")]
OverridesArg = Annotated[list[str] | None, typer.Argument(
    metavar="KEY=VALUE",
    help="key=value overrides, as in `@triagebot repro`: engine=, version=, model=, draft=, "
         "spec=mtp:1,none, k=1,2, modes=eager,graph, workload=, runs=, warmups=, gpu=, tp=, "
         "temperature=, max_tokens=, concurrency=, prompts=.")]
TitleOpt = Annotated[str | None, typer.Option(
    "--title", metavar="TEXT", help="The issue or PR title.")]
RepoOpt = Annotated[str | None, typer.Option(
    "--repo", metavar="OWNER/NAME", help="The thread's repository.")]
EngineOpt = Annotated[str | None, typer.Option(
    "--engine", metavar="ENGINE", help="Same as engine=.")]
RunsOpt = Annotated[int | None, typer.Option("--runs", metavar="N", help="Same as runs=.")]
RunnerOpt = Annotated[str | None, typer.Option(
    "--runner", metavar="KIND",
    help="Runner kind, same as gpu=: `cpu` runs vLLM's CPU build on stand-in models built "
         "locally.")]
TrustOpt = Annotated[list[str] | None, typer.Option(
    "--trust-remote-code", metavar="MODEL",
    help="Allow this model id (or id@revision) to run its own code; repeatable. Nothing "
         "else gets trust_remote_code.")]


def console(stderr: bool = False) -> Console:
    """A Rich console; Rich loads on first use, not at start-up."""
    from rich.console import Console

    return Console(stderr=stderr)


def escape(text: str) -> str:
    """`text` with Rich markup escaped, so a report's brackets print as written."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


P = ParamSpec("P")
R = TypeVar("R")


def stoppable(command: Callable[P, R]) -> Callable[P, R]:
    """A command that runs engines, made to stop them when it is told to stop.

    SIGTERM, SIGINT (Ctrl-C) and SIGHUP (the terminal closed) stop every script and engine
    the command started (`triagebot.run.shutdown`), print one line that says so instead of
    a traceback, and end the command by the same signal, as shells expect."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        from triagebot.run.shutdown import run_until_stopped

        return run_until_stopped(lambda: command(*args, **kwargs),
                                 lambda line: console(stderr=True).print(escape(line)))

    return run


def fail(code: int, message: str) -> typer.Exit:
    console(stderr=True).print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


@dataclass(frozen=True)
class PlanInputs:
    """What `plan`, `render` and `repro` build a plan from: the report and the options.

    Each of those commands lists these parameters (ReportArg, OverridesArg, ... RunnerOpt)
    in this order and gathers them here."""

    path: str
    overrides: list[str] | None = None
    title: str | None = None
    repo: str | None = None
    engine: str | None = None
    runs: int | None = None
    trust: list[str] | None = None
    runner: str | None = None

    def load(self, max_runs: int | None = None) -> tuple[ReproRequest, Plan]:
        """The report read and parsed, and the plan built from it; every refusal becomes a
        message and an exit code."""
        from triagebot.errors import PlanRejected
        from triagebot.overrides import OptionsError, parse_overrides
        from triagebot.parse import parse_report
        from triagebot.plan import build_plan
        from triagebot.plan_model import Budget, PlanPolicy

        data, title, repo = read_report(self.path, self.title, self.repo)
        words = list(self.overrides or [])
        words += [f"engine={self.engine}"] if self.engine else []
        words += [f"runs={self.runs}"] if self.runs is not None else []
        words += [f"gpu={self.runner}"] if self.runner else []
        try:
            options = parse_overrides(words)
        except OptionsError as exc:
            raise fail(EXIT_USAGE, str(exc)) from None
        request = parse_report(data, title=title, repo=repo)
        budget = Budget()
        if max_runs is not None:
            budget = budget.model_copy(update={"max_runs": max_runs})
        try:
            return request, build_plan(request, options, budget=budget,
                                       policy=PlanPolicy(trust_remote_code=self.trust or []))
        except PlanRejected as exc:
            raise fail(EXIT_REFUSED, f"cannot plan this report: {exc}") from None
