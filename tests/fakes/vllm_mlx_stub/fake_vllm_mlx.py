"""Fake `vllm-mlx serve`: the HTTP surface the vllm-mlx template reads, nothing else.

MTP counters are reported the way 0.4.1's text continuous-batching scheduler reports
them (cumulative since start) only with --enable-mtp --continuous-batching; in simple
mode `mtp` is `{"enabled": false}` as in the real server. Each completion adds
ATTEMPTED/ACCEPTED/REJECTED and two bypass counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ATTEMPTED, ACCEPTED, REJECTED = 10, 7, 3
LOCK = threading.Lock()
STATE: dict = {"requests": 0, "completion_tokens": 0}
ARGS = argparse.Namespace()


def log(event: str, **data: object) -> None:
    path = os.environ.get("FAKE_VLLM_MLX_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"event": event, "pid": os.getpid(), **data}) + "\n")


def mtp() -> dict:
    if not (ARGS.enable_mtp and ARGS.continuous_batching):
        return {"enabled": False}
    n = STATE["requests"]
    return {
        "enabled": True, "requested_draft_tokens": ARGS.mtp_num_draft_tokens,
        "effective_draft_tokens": 1, "mode": "always_advance_verified",
        "attempted": ATTEMPTED * n, "accepted": ACCEPTED * n, "rejected": REJECTED * n,
        "errors": 0, "acceptance_rate": ACCEPTED / (ACCEPTED + REJECTED) if n else 0.0,
        "bypass_counts": {"prefill": n, "no_active_batch": 2 * n, "cache_mismatch": 0},
        "bypass_counts_semantics": "per_condition_overlapping_not_total_steps",
    }


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
        if self.path == "/health":
            self._send(200, {"status": "healthy", "model_loaded": True})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": ARGS.model}]})
        elif self.path == "/v1/status":
            with LOCK:
                self._send(200, {"status": "running", "model": ARGS.model,
                                 "total_requests_processed": STATE["requests"],
                                 "total_completion_tokens": STATE["completion_tokens"],
                                 "mtp": mtp(), "requests": []})
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path != "/v1/completions":
            self._send(404, {"detail": "Not Found"})
            return
        if req.get("model") != ARGS.model:
            self._send(404, {"detail": f"The model `{req.get('model')}` does not exist."})
            return
        n = int(req.get("max_tokens") or 16)
        with LOCK:
            STATE["requests"] += 1
            STATE["completion_tokens"] += n
        self._send(200, {"object": "text_completion", "model": ARGS.model,
                         "choices": [{"index": 0, "text": "x" * n, "finish_reason": "length"}],
                         "usage": {"prompt_tokens": len(str(req.get("prompt")).split()),
                                   "completion_tokens": n,
                                   "total_tokens": n}})


def main() -> None:
    global ARGS
    p = argparse.ArgumentParser(prog="vllm-mlx")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("model")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--continuous-batching", action="store_true")
    s.add_argument("--enable-mtp", action="store_true")
    s.add_argument("--mtp-num-draft-tokens", type=int, default=1)
    s.add_argument("--mtp-optimistic", action="store_true")
    s.add_argument("--trust-remote-code", action="store_true")
    s.add_argument("--max-request-tokens", type=int, default=32768)
    ARGS = p.parse_args()
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    log("server_start", argv=sys.argv[1:], helper_pid=helper.pid)
    ThreadingHTTPServer((ARGS.host, ARGS.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
