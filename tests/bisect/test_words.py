"""`bisect` words: the same grammar in a comment and on the command line."""

from __future__ import annotations

import pytest

from triagebot.commands import Command, CommandError, parse_comment
from triagebot.commands.bisect import BisectWordsError, parse_words


def test_good_bad_direction_and_overrides() -> None:
    args = parse_words(["good=0.16.0", "bad=v0.17.1", "regress=success", "gpu=cpu"])
    assert (args.good, args.bad, args.direction) == ("0.16.0", "0.17.1", "success")
    assert args.options.gpu == "cpu"
    assert args.as_args()[:3] == ["good=0.16.0", "bad=0.17.1", "regress=success"]


@pytest.mark.parametrize(("words", "says"), [
    (["good=latest"], "not a release"),
    (["good=1.0", "good=1.1"], "twice"),
    (["bad="], "needs a value"),
    (["regress=maybe"], "use error or success"),
    (["version=0.17.1"], "every step picks its own"),
    (["colour=red"], "unknown key"),
    (["good=1.0;rm"], "not a release"),
])
def test_bad_words_are_clear_errors(words: list[str], says: str) -> None:
    with pytest.raises(BisectWordsError, match=says):
        parse_words(words)


def test_comment_command_normalises_and_points_at_the_bad_word() -> None:
    [cmd] = parse_comment("@triagebot bisect bad=0.17.1  good=0.16.0 gpu=cpu")
    assert isinstance(cmd, Command) and cmd.name == "bisect"
    assert cmd.text == "bisect good=0.16.0 bad=0.17.1 gpu=cpu"
    [err] = parse_comment("@triagebot bisect good=0.16.0 bad=tip")
    assert isinstance(err, CommandError) and err.name == "bisect"
    assert "bad='tip'" in err.message and err.position.column == 31
