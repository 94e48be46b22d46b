"""The sentinel on the App, end to end: a repo's `[sentinel]` config, Celery beat (two of
them) polling a release feed on 127.0.0.1, a runner worker of the kind `fake` that
installs each release of the fake vLLM (tests/bisect/tiny_engine.py: no real engine; its
speculation fast at 0.20.1, slow from 0.21.0 on) and measures the case against the
previous release, a triage worker talking to the fake GitHub.

0.20.1 is the baseline (the newest release when the repo was enrolled: nothing runs).
0.21.0 flags the case (speculation stopped paying, and its speed-up fell against 0.20.1):
one tracking issue per flag kind, with the verdict table, the acceptance figures, the
reproduce block and the bisect between the two releases queued and linked. The runner is
killed in the middle of that run and restarted: the run resumes, and nothing is lost or
doubled. 0.22.0 is fast again (no flag); 0.22.1 (slow) flags "stopped paying" again: a
comment on that issue, no new issue. `@triagebot not-a-regression` on it is counted
once per flagged release, however often it is said, and /metrics and the run's job page
show the rate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.app_service import app_service, logs, restart_runner
from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.services import wait_for
from tests.service.test_end_to_end import deliver
from triagebot.jobs.record import JobRecord
from triagebot.jobs.sentinels import SentinelStore
from triagebot.jobs.store import JobStore
from triagebot.report.sentinel import LABEL

# The runner kind of this test: its worker runs the fake vLLM, never a real engine.
FAKE_RUNNER = "fake"
SLOW = {"0.20.1": False, "0.21.0": True, "0.22.0": False, "0.22.1": True}
CONFIG = f"""[sentinel]
auto = true
runners = ["{FAKE_RUNNER}"]

[[sentinel.cases]]
method = "ngram"
k = 3
modes = ["eager"]
model = "meta-llama/Llama-3.1-8B-Instruct"
runner = "{FAKE_RUNNER}"
"""
CASE = f"vllm-ngram-k3-llama-3.1-8b-instruct-{FAKE_RUNNER}"


@pytest.fixture
def service(fake_github: FakeGitHub, namespace: str,
            tmp_path: Path) -> Iterator[dict[str, Any]]:
    fake_github.add_issue(REPO, 42, "a question", "Which releases does the sentinel follow?")
    with app_service(fake_github, namespace, tmp_path, gpu_kind=FAKE_RUNNER, slow=SLOW,
                     config=CONFIG, sentinel_options=["runs=4", "max_tokens=32",
                                                      "prompts=1", "warmups=0"]) as service:
        service["sentinels"] = SentinelStore(service["store"].redis, namespace)
        yield service


def runs(service: dict[str, Any]) -> list[JobRecord]:
    store: JobStore = service["store"]
    return [j for j in store.thread_jobs(REPO, 0) if j.sentinel is not None]


def tracking(service: dict[str, Any]) -> list[Any]:
    return [i for i in service["fake"].issues(REPO) if LABEL in i.labels]


def issue(service: dict[str, Any], number: int) -> Any:
    return next(i for i in service["fake"].issues(REPO) if i.number == number)


def published(service: dict[str, Any], release: str) -> JobRecord:
    def done() -> JobRecord | None:
        return next((j for j in runs(service) if f"sentinel-vllm-{release}-" in j.trigger
                     and j.published), None)

    job = wait_for(done, 600, f"the {release} run, published", lambda: logs(service))
    assert isinstance(job, JobRecord)
    return job


def test_a_flagged_case_is_tracked_once(service: dict[str, Any]) -> None:
    sentinels: SentinelStore = service["sentinels"]
    fake: FakeGitHub = service["fake"]
    # Any command enrols the repo (its config is read then); 0.20.1 is the baseline.
    service["feed"].publish("vllm", "0.20.1", "2026-01-02")
    _, answer = deliver(service, "@triagebot help")
    assert answer.status_code == 202
    wait_for(lambda: REPO in sentinels.repos(), 60, "the enrolment", lambda: logs(service))
    wait_for(lambda: sentinels.last(REPO, "vllm", FAKE_RUNNER) == "0.20.1", 60,
             "the baseline", lambda: logs(service))
    assert runs(service) == []

    # 0.21.0: the run is killed on its runner once it is measuring, and resumes.
    service["feed"].publish("vllm", "0.21.0", "2026-02-01")
    wait_for(lambda: next((j for j in runs(service) if j.state == "running"
                           and ("cells into" in j.current
                                or j.current.startswith("0.21.0: "))), None), 300,
             "the 0.21.0 run to be measuring", lambda: logs(service))
    restart_runner(service)
    job = published(service, "0.21.0")
    assert job.state == "done" and job.attempts >= 2, job
    issues = wait_for(lambda: tracking(service), 60, "the tracking issue", lambda: logs(service))
    kinds = sorted(re.sub(r".*: ", "", i.title) for i in issues)
    assert "speculation stopped paying" in kinds, kinds
    assert len(kinds) == len(set(kinds)), kinds  # one issue per flag kind
    paying = next(i for i in issues if i.title.endswith("speculation stopped paying"))
    body = paying.body
    assert f"**{CASE}**" in body and "**0.21.0** against **0.20.1**" in body
    assert "### Verdicts" in body and "| eager |" in body and "### Acceptance" in body
    assert f"--releases 0.20.1,0.21.0 --cases {CASE}" in body
    link = wait_for(lambda: re.search(r"\[bisect 0\.20\.1\.\.0\.21\.0\]\(([^)]+)\)",
                                      issue(service, paying.number).body), 60,
                    "the bisect link")
    bisects = [j for i in issues for j in service["store"].thread_jobs(REPO, i.number)
               if j.bisect is not None]
    assert len(bisects) == 1 and bisects[0].id in link.group(1), (bisects, link.group(1))
    assert "names no per-commit wheels" in issue(service, paying.number).body

    # 0.22.0 is fast again: nothing is flagged, nothing is posted. 0.22.1 is slow again:
    # speculation stopped paying once more, so that issue hears of it once, in a
    # comment, and its body gains the release; no new issue.
    service["feed"].publish("vllm", "0.22.0", "2026-03-01")
    published(service, "0.22.0")
    assert len(tracking(service)) == len(issues)
    service["feed"].publish("vllm", "0.22.1", "2026-04-01")
    published(service, "0.22.1")
    again = wait_for(lambda: [c for c in fake.comments(REPO, paying.number)
                              if "again at **0.22.1**" in c.body], 60, "the comment",
                     lambda: logs(service))
    assert len(again) == 1
    assert len(tracking(service)) == len(issues)
    assert "| 0.22.1 |" in issue(service, paying.number).body
    assert not [c for c in fake.comments(REPO, paying.number) if "0.22.0**" in c.body]

    # not-a-regression: both flagged releases of the issue are counted, once.
    flags, marked = sentinels.counts()
    assert marked == 0 and flags >= 2
    for _ in range(2):
        _, answer = deliver(service, "@triagebot not-a-regression", number=paying.number)
        assert answer.status_code == 202
    replies = wait_for(lambda: [c for c in fake.comments(REPO, paying.number)
                                if "false-positive rate" in c.body and c.author.endswith(
                                    "[bot]") and "Marked" in c.body], 60, "the replies",
                       lambda: logs(service))
    wait_for(lambda: len(replies) >= 1, 1, "a reply")
    wait_for(lambda: sentinels.counts()[1] == 2, 60, "the count")
    wait_for(lambda: len([c for c in fake.comments(REPO, paying.number)
                          if "Marked" in c.body]) == 2, 60, "both replies")
    assert sentinels.counts() == (flags, 2)
    metrics = httpx.get(f"{service['web'].url}/metrics", timeout=10).text
    assert f"triagebot_sentinel_flags_total {float(flags)}" in metrics, metrics
    assert "triagebot_sentinel_not_a_regression_total 2.0" in metrics
    assert f"triagebot_sentinel_false_positive_rate {2 / flags}" in metrics
    page = httpx.get(f"{service['web'].url}/jobs/{job.id}", timeout=10).text
    assert f"2 of {flags} flags marked not-a-regression" in page, page
    assert f"{REPO}#0" not in page  # a run of the repository, not of a thread

    # Two beats ticked all along: one run per release, one issue per flag kind.
    triggers = sorted(j.trigger for j in runs(service))
    assert triggers == [f"sentinel-vllm-{r}-{FAKE_RUNNER}" for r in ("0.21.0", "0.22.0",
                                                                     "0.22.1")], triggers
    titles = [i.title for i in tracking(service)]
    assert len(titles) == len(set(titles))
