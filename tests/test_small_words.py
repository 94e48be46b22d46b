"""Small wrong words and values (issue 41, item 12), each pinned where it is made."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from tests.service.support import record, small_plan
from triagebot.decisions import replies as words
from triagebot.settings import Settings


def test_a_progress_line_without_an_estimate_says_so() -> None:
    job = record(small_plan()).model_copy(update={"state": "running", "runs_done": 2,
                                                  "runs_planned": 9,
                                                  "eta_s": None})
    line = words.progress(job, "http://x").split("\n")[0]
    assert "unknown" not in line
    assert line == "🏃 **Running**: 2/9 runs; the time left is not known yet."


def test_the_link_secret_error_names_the_link_secret() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(link_secret=SecretStr("short"))
    assert "the link secret must be at least 8 characters" in str(caught.value)
    assert "webhook secret" not in str(caught.value)


def test_an_empty_bisect_find_links_is_none() -> None:
    # Compose passes an unset variable on as "", which must not mean the current folder.
    assert Settings(bisect_find_links="").bisect_find_links is None
