"""`python -m triagebot.cli`: the same as the `triagebot` console script."""

from triagebot.cli import app

app()
