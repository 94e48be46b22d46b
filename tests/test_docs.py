"""The docs site builds, and what users read stays true to a clone of the repository.

`mkdocs build --strict` fails on a broken link, a missing anchor or a page left out of the
nav (mkdocs.yml's `validation`); the README stays a short tour whose two commands come
first; and no user-facing page names an issue number or a path outside the repository,
which a reader of a clone could not follow."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The pages users read: the README, the docs (docs/bench is a link to bench/, read once
# below), the bench pages and the deployment guide.
USER_PAGES = sorted(
    [ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "deploy" / "README.md",
     *(p for p in (ROOT / "docs").rglob("*.md")
       if "bench" not in p.relative_to(ROOT / "docs").parts),
     *(ROOT / "bench" / "results").glob("*.md")])

# What a clone cannot follow: an issue or PR number of ours or anyone's ("issue 28",
# "#473"), and the corpus folder beside the checkout.
UNFOLLOWABLE = {
    "an issue or PR number": re.compile(
        r"(?i)\b(?:issue|pr|pull request)s?\s+#?\d+|(?<![\w&/`])#\d+\b"),
    "a path outside the repository": re.compile(r"\.\./shared|/work/|(?<![\w.])\.\./\.\./"),
}


def test_docs_build_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    # The results the docs link are pages of the site, not dead ends.
    assert (tmp_path / "site" / "bench" / "results").is_dir()


def test_readme_is_a_short_tour_with_its_two_commands_first() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").split("\n")
    assert len(lines) <= 250
    after_opening = lines[lines.index("", 2):]
    first_block = next(i for i, line in enumerate(after_opening) if line.strip())
    assert after_opening[first_block] == "```bash"
    commands = [line.split()[0:2] for line in after_opening[first_block + 1:first_block + 3]]
    assert commands == [["./dev", "demo"], ["./dev", "test"]]


@pytest.mark.parametrize("page", USER_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_pages_name_nothing_a_clone_cannot_follow(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [f"{what}: {m.group(0)!r} on line {text.count(chr(10), 0, m.start()) + 1}"
             for what, pattern in UNFOLLOWABLE.items() for m in pattern.finditer(text)]
    assert not found, found


RESULTS = sorted((ROOT / "bench" / "results").glob("*.md"))


@pytest.mark.parametrize("result", RESULTS, ids=lambda p: p.name)
def test_each_result_is_dated_complete_and_linked_from_the_docs(result: Path) -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", result.name)
    text = result.read_text(encoding="utf-8")
    for part in ("**Commit", "**Machine:**", "**Command", "**Conclusion.**"):
        assert part in text, part
    assert "\n|---" in text, "a table"
    pages = [p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md")
             if "bench" not in p.relative_to(ROOT / "docs").parts]
    assert any(f"bench/results/{result.name}" in page for page in pages)
    assert f"results/{result.name}" in (ROOT / "bench" / "README.md").read_text()


def test_the_check_catches_what_it_is_for() -> None:
    for bad in ["see issue 28", "vllm-mlx #473", "issues #12", "../shared/seeds/000.txt"]:
        assert any(p.search(bad) for p in UNFOLLOWABLE.values()), bad
    for fine in ["an issue or PR URL", "`issues/N`", "&#123;", "[x](#where-it-starts)",
                 "../bench/results/x.md", "GPU 0"]:
        assert not any(p.search(fine) for p in UNFOLLOWABLE.values()), fine
