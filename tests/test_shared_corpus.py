"""The one rule for tests that read the corpus beside the checkout: skip naming the folder
that is absent, fail under CI=true, and otherwise hand back the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import conftest


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(conftest, "SHARED", tmp_path / "shared")
    monkeypatch.delenv("CI", raising=False)
    return tmp_path / "shared"


def test_an_absent_corpus_skips_naming_it(corpus: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match=r"^\.\./shared is absent"):
        conftest.shared_path("parse-dev")


def test_an_absent_folder_of_a_present_corpus_is_the_one_named(corpus: Path) -> None:
    (corpus / "seeds").mkdir(parents=True)
    with pytest.raises(pytest.skip.Exception, match=r"^\.\./shared/parse-dev is absent"):
        conftest.shared_path("parse-dev/x.json")


def test_a_file_missing_from_a_present_folder_fails_everywhere(corpus: Path) -> None:
    (corpus / "parse-dev").mkdir(parents=True)
    with pytest.raises(pytest.fail.Exception, match=r"parse-dev/x\.json is missing"):
        conftest.shared_path("parse-dev/x.json")


def test_under_ci_an_absent_corpus_fails(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="which CI must have"):
        conftest.shared_path("seeds")


def test_a_present_path_is_handed_back(corpus: Path) -> None:
    (corpus / "seeds").mkdir(parents=True)
    (corpus / "seeds" / "000_x.txt").write_text("report")
    assert conftest.seed_path("000") == corpus / "seeds" / "000_x.txt"


def test_an_absent_folder_still_counts_its_parametrized_test(corpus: Path) -> None:
    [param] = conftest.shared_files("parse-dev", "*.json")
    assert [m.name for m in param.marks] == ["shared"] and param.id == "parse-dev-absent"
