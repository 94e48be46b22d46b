"""The help states the rules issue 41 asked to be decided: strangers, two commands in one
comment, edits, deletions and invisible characters."""

from __future__ import annotations

from triagebot.commands import help_text


def test_the_help_states_how_comments_are_read() -> None:
    text = help_text()
    for words in ("one short answer per thread and day", "`[access] strangers`",
                  "except `cancel`, which acts first", "replaces the job that comment started",
                  "Deleting a comment withdraws its commands",
                  "Invisible characters", "direction control"):
        assert words in text, words
