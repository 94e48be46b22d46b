"""A release feed on 127.0.0.1: a PEP 691 JSON simple index whose releases a test
publishes one at a time, answering conditional requests as PyPI does (ETag, 304); or,
with `html`, a static PEP 503 index such as a nightly one (wheels.vllm.ai/nightly)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote


class ReleaseFeed:
    def __init__(self, html: bool = False) -> None:
        self.html = html
        self.broken = False  # answer a page that is no index at all
        self.lock = threading.Lock()
        self.files: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.url = ""

    def publish(self, package: str, version: str, date: str = "2026-01-01",
                local: str = "") -> None:
        """A wheel of `version` (`local`: its local label, as in "+g1a2b3c.cu129")."""
        name = package.replace("-", "_")
        with self.lock:
            self.files.setdefault(package, []).append({
                "filename": f"{name}-{version}{local}-py3-none-any.whl",
                "url": f"https://files.example/{name}-{version}-py3-none-any.whl",
                "hashes": {}, "upload-time": f"{date}T12:00:00Z", "yanked": False})

    def page(self, package: str) -> bytes:
        with self.lock:
            files = list(self.files.get(package, []))
        if self.broken:
            return b"an error page of a proxy, not an index"
        if self.html:  # PEP 503: links only, the `+` of a local label quoted in the href
            links = "".join(f'<a href="../../files/{quote(f["filename"])}#sha256=00">'
                            f'{f["filename"]}</a><br/>' for f in files)
            return f"<!DOCTYPE html><html><body>{links}</body></html>".encode()
        return json.dumps({"meta": {"api-version": "1.1"}, "name": package,
                           "files": files}).encode()


def _handler(feed: ReleaseFeed) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = [p for p in self.path.split("/") if p]
            feed.requests.append((self.path, dict(self.headers)))
            if len(parts) != 2 or parts[0] != "simple":
                self.send_response(404)
                self.end_headers()
                return
            body = feed.page(parts[1])
            etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if feed.html or feed.broken
                             else "application/vnd.pypi.simple.v1+json")
            self.send_header("ETag", etag)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serve_feed(html: bool = False) -> Iterator[ReleaseFeed]:
    """The feed; its index URL (for TRIAGEBOT_WATCH_INDEX) is `feed.url`."""
    feed = ReleaseFeed(html)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(feed))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    feed.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    try:
        yield feed
    finally:
        server.shutdown()
        server.server_close()
