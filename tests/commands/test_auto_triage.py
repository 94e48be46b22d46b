"""Auto-triage decided as plain values: an issue event, its thread and config in, actions
out; no Redis, no GitHub, no fake."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from tests.commands.test_decisions import FIXTURES, facts, thread
from triagebot.decisions import triage
from triagebot.decisions.actions import PostSummary, Reply, StartJob
from triagebot.github.events import ThreadEvent, normalise
from triagebot.github.models import Thread
from triagebot.parse import parse_report
from triagebot.repo_config import RepoConfig, parse_repo_config
from triagebot.request_model import ReproRequest

RUNS = parse_repo_config('[triage]\nlabels = ["perf-repro"]\nrun = true\n')
SUMMARY_ONLY = parse_repo_config('[triage]\nlabels = ["perf-repro"]\n')


def issue_event(action: str, labels: tuple[str, ...] = ("perf-repro",)) -> ThreadEvent:
    payload: dict[str, Any] = json.loads((FIXTURES / f"issues.{action}.json").read_text())
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    event = normalise("issues", payload, "d-1")
    assert event is not None
    return event


def request_of(issue: Thread) -> ReproRequest:
    return parse_report(issue.body.encode(), title=issue.title, repo=issue.repo)


def test_the_config_decides_whether_the_thread_is_read() -> None:
    assert triage.reads_thread(issue_event("labeled"), RUNS)
    assert triage.reads_thread(issue_event("opened"), SUMMARY_ONLY)
    assert not triage.reads_thread(issue_event("opened", labels=()), RUNS)
    assert not triage.reads_thread(issue_event("opened"), RepoConfig.default())


def test_a_run_is_considered_only_for_a_report_in_scope_on_a_new_thread_or_label() -> None:
    in_scope = request_of(thread())
    assert in_scope.in_scope
    assert triage.may_run(issue_event("labeled"), RUNS, in_scope)
    assert triage.may_run(issue_event("opened"), RUNS, in_scope)
    assert not triage.may_run(issue_event("edited"), RUNS, in_scope)
    assert not triage.may_run(issue_event("opened"), SUMMARY_ONLY, in_scope)
    assert not triage.may_run(issue_event("opened"), RUNS, ReproRequest())


def test_a_run_comes_before_the_summary_and_names_its_trigger() -> None:
    event, issue = issue_event("labeled"), thread()
    gathered = replace(facts(), event=event, config=RUNS)
    actions = triage.decide(event, issue, request_of(issue), "triagebot", gathered)
    assert [type(a) for a in actions] == [StartJob, PostSummary]
    start = actions[0]
    assert isinstance(start, StartJob)
    assert start.record.trigger == "issues-labeled-perf-repro"
    assert start.record.command == "repro"
    summary = actions[1]
    assert isinstance(summary, PostSummary)
    assert summary.marker == f"triage={event.number}"
    assert "has been queued" in summary.text(will_run=True)
    assert "can start a reproduction" in summary.text(will_run=False)


def test_without_the_facts_of_a_run_only_the_summary_is_posted() -> None:
    event, issue = issue_event("opened"), thread(is_pr=True)
    actions = triage.decide(event, issue, request_of(issue), "triagebot", None)
    assert len(actions) == 1
    assert isinstance(actions[0], PostSummary) and actions[0].is_pr


def test_an_opener_who_may_not_run_gets_the_summary_and_no_refusal() -> None:
    event, issue = issue_event("opened"), thread()
    gathered = replace(facts(may_run=False), event=event, config=RUNS)
    actions = triage.decide(event, issue, request_of(issue), "triagebot", gathered)
    assert [type(a) for a in actions] == [PostSummary]


def test_a_plan_that_cannot_start_is_a_note_under_the_summary() -> None:
    event, issue = issue_event("labeled"), thread()
    gathered = replace(facts(gpu_seconds_used=10**9), event=event, config=RUNS)
    actions = triage.decide(event, issue, request_of(issue), "triagebot", gathered)
    assert [type(a) for a in actions] == [Reply, PostSummary]
    assert "GPU budget" in actions[0].text  # type: ignore[union-attr]
