"""Fake `python -m sglang.launch_server`: a tiny HTTP server with a forked helper.

The helper process stands in for SGLang's scheduler processes: it only goes away if the
caller stops the whole process group, which is what the tests check.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sglang import _fake

SPEC_K: int | None = None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _send(self, code: int, doc: object) -> None:
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path in ("/health", "/health_generate"):
            self._send(200, {})
        elif self.path in ("/server_info", "/get_server_info"):
            states = [{"avg_spec_accept_length": 2.5}] if SPEC_K else [{}]
            self._send(200, {"internal_states": states, "version": "0.5.23"})
        else:
            self._send(404, {"error": self.path})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        req = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/generate":
            self._send(404, {"error": self.path})
            return
        params = req.get("sampling_params", {})
        ids = req.get("input_ids") or [len(req.get("text", ""))]
        self._send(200, _fake.output(ids, int(params.get("max_new_tokens", 16)), SPEC_K))


def main() -> None:
    global SPEC_K
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--speculative-num-draft-tokens", type=int)
    args, _rest = parser.parse_known_args()
    if args.speculative_num_draft_tokens:
        SPEC_K = args.speculative_num_draft_tokens - 1
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    _fake.log("server_start", argv=sys.argv[1:], helper_pid=helper.pid)
    if os.environ.get("FAKE_SGLANG_FAIL") == "start":
        print("fake: CUDA error: out of memory while capturing graphs", flush=True)
        sys.exit(3)
    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
