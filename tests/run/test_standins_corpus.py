"""The stand-ins' synthetic language: what keeps greedy output from looping and leaves
draft models something to disagree on."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

from triagebot.engines.standins import Corpus
from triagebot.run.standins import corpus_lines


def _successors(corpus: Corpus) -> dict[str, Counter[str]]:
    follows: dict[str, Counter[str]] = defaultdict(Counter)
    for line in corpus_lines(corpus):
        words = line.split()
        for a, b in itertools.pairwise(words):
            follows[a][b] += 1
    return follows


def test_the_language_is_seeded_and_has_the_asked_shape() -> None:
    corpus = Corpus(lines=200)
    lines = corpus_lines(corpus)
    assert lines == corpus_lines(corpus)
    assert lines != corpus_lines(Corpus(lines=200, seed=1))
    assert len(lines) == 200 and all(len(x.split()) == corpus.line_words for x in lines)
    assert len({w for x in lines for w in x.split()}) == corpus.words


def test_the_greedy_path_goes_round_the_ring_without_looping_early() -> None:
    corpus = Corpus()
    follows = _successors(corpus)
    word = next(iter(follows))
    seen = [word]
    for _ in range(corpus.words // 2):
        word = follows[word].most_common(1)[0][0]
        seen.append(word)
    assert len(set(seen)) == len(seen), seen


def test_the_two_likeliest_successors_are_near_tied_and_move_with_lead() -> None:
    def runner_up_share(lead: float) -> float:
        ratios = []
        for counts in _successors(Corpus(lead=lead, lines=1500)).values():
            (_, first), (_, second) = counts.most_common(2)
            ratios.append(second / first)
        return sum(ratios) / len(ratios)

    # A near tie is what a separately trained draft breaks differently from the target.
    assert runner_up_share(0.5) > 0.8
    assert runner_up_share(0.8) < 0.4
