"""`triagebot bisect`: the command lives with the bisect package; it is added here."""

from __future__ import annotations

from triagebot.bisect.cli import BISECT_HELP, bisect_command
from triagebot.cli.base import app

app.command(name="bisect", help=BISECT_HELP)(bisect_command)
