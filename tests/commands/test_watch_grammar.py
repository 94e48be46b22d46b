"""`@triagebot watch [engine=E] [gpu=KIND]` and `unwatch`: their grammar."""

from __future__ import annotations

import pytest

from triagebot.commands.base import Malformed, Position, Word
from triagebot.commands.watch import parse_unwatch, parse_watch


def words(*texts: str) -> list[Word]:
    return [Word(t, Position(line=1, column=17 + 8 * i)) for i, t in enumerate(texts)]


def test_watch_takes_the_engine_and_the_runner_kind_in_any_order() -> None:
    a, b = parse_watch(words("gpu=cpu", "engine=vllm")), parse_watch(words("engine=vllm",
                                                                          "gpu=cpu"))
    assert a.text == b.text == "watch engine=vllm gpu=cpu"
    assert a.options is not None and a.options.gpu == "cpu"
    assert parse_watch([]).text == "watch"


@pytest.mark.parametrize(("text", "message"), [
    ("k=2", "`watch` takes only engine=, gpu=; 'k=2' is not one of them"),
    ("now", "`watch` takes only engine=, gpu=; 'now' is not one of them"),
    ("engine=nope", "`watch`: engine='nope'"),
])
def test_anything_else_is_refused_with_what_it_takes(text: str, message: str) -> None:
    with pytest.raises(Malformed) as caught:
        parse_watch(words(text))
    assert str(caught.value).startswith(message)


def test_unwatch_takes_nothing() -> None:
    assert parse_unwatch([]).text == "unwatch"
    with pytest.raises(Malformed):
        parse_unwatch(words("please"))
