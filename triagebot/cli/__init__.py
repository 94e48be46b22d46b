"""The `triagebot` command line: the same core the GitHub App runs, on one machine.

`base` holds the Typer app and what every command shares; each other module adds its
commands to it when imported, in the order `triagebot --help` lists them. `views` draws
the Rich tables and progress the commands print.

Only Typer, Rich and the standard library load at start-up: each command imports what it
runs on (pydantic models, jinja2, numpy, scipy, torch, the GitHub and Redis clients)
inside its own body, so `triagebot --version` and `--help` answer at once.
tests/test_startup.py holds this.
"""

from triagebot.cli import bisecting, engines, planning, running, sentinel, service, watching
from triagebot.cli.base import (
    EXIT_CANNOT_ANSWER,
    EXIT_INCONCLUSIVE,
    EXIT_NOT_REPRODUCED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_REPRODUCED,
    EXIT_RUN_ERROR,
    EXIT_USAGE,
    app,
)
from triagebot.cli.planning import PARSE_HELP

# The modules above register their commands on `app` as they are imported.
COMMAND_MODULES = (planning, running, bisecting, watching, sentinel, service, engines)

__all__ = ["COMMAND_MODULES", "EXIT_CANNOT_ANSWER", "EXIT_INCONCLUSIVE", "EXIT_NOT_REPRODUCED",
           "EXIT_OK", "EXIT_REFUSED", "EXIT_REPRODUCED", "EXIT_RUN_ERROR", "EXIT_USAGE",
           "PARSE_HELP", "app"]
