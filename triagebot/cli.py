"""The `triagebot` command line: the same core the GitHub App runs, on one machine."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from triagebot import __version__

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
EXIT_USAGE = 2


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


@app.command()
def parse(
    path: Annotated[str, typer.Argument(help="Report file (markdown or a saved page), or - "
                                             "for stdin.")],
    title: Annotated[str | None, typer.Option("--title", help="The issue or PR title.")] = None,
    repo: Annotated[str | None, typer.Option(
        "--repo", help="OWNER/NAME the thread lives in: a weak hint for the engine.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object "
                                                          "(the ReproRequest).")] = False,
) -> None:
    """Read a report into a ReproRequest: every field, its value and where it came from."""
    from triagebot.parse import parse_report

    request = parse_report(read_input(path), title=title, repo=repo)
    if json_out:
        sys.stdout.write(request.model_dump_json(indent=2) + "\n")
        return
    from triagebot.views import render_request

    render_request(Console(), request)


if __name__ == "__main__":  # pragma: no cover
    app()
