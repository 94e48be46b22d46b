"""Strangers flooding one thread while a maintainer asks for reproductions.

Run from the repository root: `.venv/bin/python bench/stranger_load.py`. Everything is
real but GitHub, and all of it listens on 127.0.0.1 only: the webhook ingress (uvicorn),
a triage worker as a deployment runs it (`triagebot worker --queues triage`, two
processes), the local Redis (a fresh namespace, deleted at the end) and the project's
fake GitHub. No runner serves the queue, so each maintainer's job stays queued.

Over `--seconds` (60) it delivers `--strangers` (200) signed `issue_comment.created`
events to one thread, evenly spaced, from people without a role on the repository
(`help`, `status` and unknown commands, from `--people` (25) logins), and, among them,
a maintainer's `repro` at each of `--maintainer-at` (10, 30, 50 s). It measures:

- each maintainer acknowledgement's latency: from the moment its delivery was answered
  202 to the moment the fake GitHub received the job comment's POST (the goal: 10 s);
- the App's requests to GitHub with the installation's token, against GitHub's documented
  secondary limits (docs.github.com, "Rate limits for the REST API"): at most 100
  concurrent requests, 900 points a minute (a GET 1 point, a POST, PATCH, PUT or DELETE
  5), 80 content-creating requests a minute and 500 an hour.

It waits (at most `--drain-s`) for the triage queue to empty, prints a markdown table and
each goal as met or NOT met, and with `--out FILE` writes them there as well.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.github_server import Call, FakeGitHub  # noqa: E402
from tests.fakes.redis_fixture import REDIS_URL, clean_namespace, make_settings  # noqa: E402
from tests.fakes.services import Uvicorn, Worker, settings_env, wait_for  # noqa: E402
from triagebot.jobs.store import JobStore  # noqa: E402
from triagebot.settings import Settings  # noqa: E402
from triagebot.web.app import create_app  # noqa: E402
from triagebot.web.signature import sign  # noqa: E402
from triagebot.workers import task_queues  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "webhooks" / "issue_comment.created.json"
SECRET = "stranger-load-secret"
REPO = "acme/engine"
NUMBER = 42
INSTALLATION_ID = 1
MAINTAINER = "maint"
REPORT = (
    "vLLM 0.17.1 on one H100: MTP k=1 is slower than no speculation under CUDA graphs.\n\n"
    "```bash\nvllm serve zai-org/GLM-4.5-Air --speculative-config "
    "'{\"method\": \"mtp\", \"num_speculative_tokens\": 1}'\n```\n")
# GitHub's documented secondary limits (docs.github.com, "Rate limits for the REST API").
MAX_CONCURRENT = 100
MAX_POINTS_PER_MINUTE = 900
MAX_CREATES_PER_MINUTE = 80
MAX_CREATES_PER_HOUR = 500
ACK_GOAL_S = 10.0
WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})


@dataclass
class Sent:
    at: float  # monotonic, when the ingress answered
    status: int
    login: str
    body: str


@dataclass
class Run:
    sent: list[Sent] = field(default_factory=list)
    acks: dict[str, float | None] = field(default_factory=dict)  # command -> latency (s)


def _payload(comment_id: int, body: str, login: str) -> bytes:
    payload = json.loads(FIXTURE.read_text())
    payload["comment"].update(id=comment_id, body=body)
    payload["comment"]["user"]["login"] = login
    payload["sender"]["login"] = login
    payload["issue"]["number"] = NUMBER
    payload["repository"]["full_name"] = REPO
    payload["installation"] = {"id": INSTALLATION_ID}
    return json.dumps(payload).encode()


def _deliver(client: httpx.Client, url: str, fake: FakeGitHub, body: str, login: str) -> Sent:
    comment_id = fake.add_comment(REPO, NUMBER, body, login)
    raw = _payload(comment_id, body, login)
    response = client.post(f"{url}/webhook", content=raw, headers={
        "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(SECRET, raw), "Content-Type": "application/json"})
    return Sent(time.monotonic(), response.status_code, login, body)


def schedule(strangers: int, seconds: float, people: int,
             maintainer_at: Sequence[float]) -> list[tuple[float, str, str]]:
    """(offset s, login, body) of every delivery, in order."""
    kinds = ("@triagebot help", "@triagebot status", "@triagebot fix-it-{n}")
    plan = [(n * seconds / strangers, f"passer{n % people:02d}",
             kinds[n % len(kinds)].format(n=n)) for n in range(strangers)]
    plan += [(at, MAINTAINER, f"@triagebot repro runs={2 + k}")
             for k, at in enumerate(maintainer_at)]
    return sorted(plan)


@contextlib.contextmanager
def service(tmp: Path) -> Iterator[tuple[Settings, FakeGitHub, str, Worker]]:
    namespace = f"bench-strangers-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS_URL)
    with FakeGitHub() as fake:
        fake.add_repo(REPO)
        fake.add_installation(INSTALLATION_ID, [REPO])
        fake.add_issue(REPO, NUMBER, "MTP slower under CUDA graphs", REPORT, author="reporter")
        fake.set_permission(REPO, MAINTAINER, "write")
        settings = make_settings(
            namespace, github_api_url=fake.base_url, app_id=fake.app_id,
            app_private_key=fake.private_key_pem, webhook_secrets=[SECRET],
            gpu_kinds=["h100"], default_gpu="h100", data_dir=tmp / "jobs",
            public_url="http://triagebot.test")
        worker = Worker(task_queues.TRIAGE_QUEUE, settings_env(settings, github=True),
                        tmp / "triage.log", f"triage-{namespace}@bench")
        try:
            with Uvicorn(create_app(settings)) as web:
                store = JobStore(settings)
                wait_for(lambda: task_queues.TRIAGE_QUEUE in store.counters.live_queues(30),
                         60, "the triage worker", worker.tail)
                yield settings, fake, web.url, worker
        finally:
            worker.stop()
            clean_namespace(client, namespace)
            client.close()


def drive(fake: FakeGitHub, url: str, plan: list[tuple[float, str, str]]) -> Run:
    """Deliver `plan` open-loop: each delivery at its offset, late ones at once."""
    run = Run()
    with httpx.Client(timeout=10) as client:
        start = time.monotonic()
        for offset, login, body in plan:
            wait = start + offset - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            run.sent.append(_deliver(client, url, fake, body, login))
    return run


def drained(settings: Settings, fake: FakeGitHub, quiet_s: float = 5.0) -> bool:
    client = redis.Redis.from_url(settings.redis_url)
    try:
        waiting = client.llen(settings.celery_key_prefix + task_queues.TRIAGE_QUEUE)
    finally:
        client.close()
    calls = fake.calls
    last = max((c.time for c in calls), default=0.0)
    return waiting == 0 and time.monotonic() - last > quiet_s


def acknowledgements(run: Run, calls: list[Call]) -> dict[str, float | None]:
    """Each maintainer command's latency from its delivery to its job comment's POST."""
    out: dict[str, float | None] = {}
    creates = [c for c in calls if c.method == "POST"
               and c.path == f"/repos/{REPO}/issues/{NUMBER}/comments"]
    for sent in run.sent:
        if sent.login != MAINTAINER:
            continue
        command = sent.body.removeprefix("@triagebot ")
        posted = [c.time for c in creates if isinstance(c.body, dict)
                  and f"`{command}`" in str(c.body.get("body", ""))
                  and " job=" in str(c.body.get("body", "")).split("\n")[0]]
        out[command] = min(posted) - sent.at if posted else None
    return out


def _most_in_window(times: list[tuple[float, int]], window: float) -> int:
    """The largest sum of weights over any `window` seconds."""
    times = sorted(times)
    best = total = 0
    first = 0
    for t, weight in times:
        total += weight
        while times[first][0] < t - window:
            total -= times[first][1]
            first += 1
        best = max(best, total)
    return best


def github_load(calls: list[Call]) -> dict[str, Any]:
    ours = [c for c in calls if c.auth == "token"]
    writes = [c for c in ours if c.method in WRITES]
    creates = [c for c in ours if c.method == "POST"]
    span = (max(c.time for c in ours) - min(c.time for c in ours)) if ours else 0.0
    return {
        "requests": len(ours), "reads": len(ours) - len(writes), "writes": len(writes),
        "creates": len(creates), "span_s": span,
        "points_max_minute": _most_in_window(
            [(c.time, 5 if c.method in WRITES else 1) for c in ours], 60.0),
        "creates_max_minute": _most_in_window([(c.time, 1) for c in creates], 60.0),
        "comments_created": sum(1 for c in creates if c.path.endswith("/comments")),
        "reactions_created": sum(1 for c in creates if c.path.endswith("/reactions")),
    }


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "?")
    return f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}"


def commit() -> str:
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                            "triagebot", "bench"], capture_output=True, text=True,
                           check=False).stdout.strip()
    return (found.stdout.strip() or "?") + (" (with uncommitted changes)" if dirty else "")


def report(args: argparse.Namespace, run: Run, load: dict[str, Any], in_flight: int,
           stranger_answers: int, drain_s: float) -> tuple[str, bool]:
    acks = run.acks
    worst = max((v for v in acks.values() if v is not None), default=None)
    refused = sum(1 for s in run.sent if s.status != 202)
    hour = load["creates"]  # the whole run is well inside one hour
    goals = [
        ("every maintainer acknowledgement within 10 s of its delivery",
         worst is not None and None not in acks.values() and worst <= ACK_GOAL_S,
         "missing" if None in acks.values() else f"worst {worst:.2f} s"),
        (f"at most {MAX_CONCURRENT} concurrent requests", in_flight <= MAX_CONCURRENT,
         f"{in_flight}"),
        (f"at most {MAX_POINTS_PER_MINUTE} points in any minute",
         load["points_max_minute"] <= MAX_POINTS_PER_MINUTE, f"{load['points_max_minute']}"),
        (f"at most {MAX_CREATES_PER_MINUTE} content-creating requests in any minute",
         load["creates_max_minute"] <= MAX_CREATES_PER_MINUTE,
         f"{load['creates_max_minute']}"),
        (f"at most {MAX_CREATES_PER_HOUR} content-creating requests in the hour",
         hour <= MAX_CREATES_PER_HOUR, f"{hour}"),
        ("every delivery answered 202", refused == 0, f"{refused} not 202"),
    ]
    lines = [
        f"Deliveries: {len(run.sent)} ({args.strangers} from {args.people} strangers over "
        f"{args.seconds:.0f} s, {len(args.maintainer_at)} maintainer repros); the App's "
        f"last request to GitHub came {drain_s:.1f} s after the last delivery.",
        "",
        "| maintainer command | acknowledgement after delivery |",
        "|---|---|",
        *[f"| `{cmd}` | {'none' if s is None else f'{s:.2f} s'} |" for cmd, s in acks.items()],
        "",
        "| the App's requests to GitHub (installation token) | value |",
        "|---|---|",
        f"| requests (reads / writes) | {load['requests']} ({load['reads']} / "
        f"{load['writes']}) |",
        f"| content-creating (comments / reactions) | {load['creates']} "
        f"({load['comments_created']} / {load['reactions_created']}) |",
        f"| answers to strangers (comments) | {stranger_answers} |",
        f"| most content-creating in any 60 s (limit {MAX_CREATES_PER_MINUTE}) | "
        f"{load['creates_max_minute']} |",
        f"| most points in any 60 s (limit {MAX_POINTS_PER_MINUTE}) | "
        f"{load['points_max_minute']} |",
        f"| most requests at once (limit {MAX_CONCURRENT}) | {in_flight} |",
        f"| span of the App's requests | {load['span_s']:.1f} s |",
        "",
        "| goal | result | |",
        "|---|---|---|",
        *[f"| {name} | {value} | {'met' if ok else 'NOT met'} |" for name, ok, value in goals],
    ]
    return "\n".join(lines), all(ok for _, ok, _ in goals)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strangers", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--people", type=int, default=25)
    parser.add_argument("--maintainer-at", type=lambda s: [float(x) for x in s.split(",")],
                        default=[10.0, 30.0, 50.0])
    parser.add_argument("--drain-s", type=float, default=120.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if not 1 <= args.strangers <= 2000 or not 1 <= args.seconds <= 600:
        parser.error("--strangers is 1-2000 and --seconds 1-600: the bench is bounded")
    plan = schedule(args.strangers, args.seconds, args.people, args.maintainer_at)
    with tempfile.TemporaryDirectory() as tmp, service(Path(tmp)) as (settings, fake, url, w):
        run = drive(fake, url, plan)
        sent_end = time.monotonic()
        deadline = sent_end + args.drain_s
        while not drained(settings, fake) and time.monotonic() < deadline:
            time.sleep(0.5)
        drain_s = max(0.0, max((c.time for c in fake.calls), default=sent_end) - sent_end)
        calls = fake.calls
        run.acks = acknowledgements(run, calls)
        answers = sum(1 for c in fake.comments(REPO, NUMBER)
                      if c.author == fake.bot_login and "\n@passer" in c.body)
        text, ok = report(args, run, github_load(calls), fake.max_in_flight, answers,
                          drain_s)
        errors = [line for line in w.tail(400).splitlines() if "ERROR" in line]
    command = " ".join(["bench/stranger_load.py",
                        *(argv if argv is not None else sys.argv[1:])])
    header = f"Commit {commit()}; {machine()}.\n\nCommand: `.venv/bin/python {command}`\n"
    body = f"{header}\n{text}\n\nTriage worker ERROR lines: {len(errors)}\n"
    print(body)
    if args.out:
        args.out.write_text(body)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

