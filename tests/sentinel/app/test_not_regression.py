"""`@triagebot not-a-regression`: its grammar and its decision, from plain values."""

from __future__ import annotations

from tests.commands.test_decisions import commands, facts
from triagebot.commands import Command, CommandError, help_text
from triagebot.decisions import decide
from triagebot.decisions.actions import MarkNotRegression, React, Refuse, Reply
from triagebot.decisions.facts import SentinelFacts

SAY = "@triagebot not-a-regression"


def test_the_command_takes_no_arguments() -> None:
    [ok] = commands(SAY)
    assert isinstance(ok, Command) and ok.name == "not-a-regression"
    [bad] = commands(SAY + " please")
    assert isinstance(bad, CommandError) and "takes no arguments" in bad.message
    assert "not-a-regression" in help_text("triagebot")


def test_a_maintainer_on_a_tracking_issue_marks_it() -> None:
    tracked = SentinelFacts(case_id="vllm-mtp-k1-standin-cpu", kind="stopped_paying")
    f = facts(SAY, sentinel=tracked)
    assert decide(commands(SAY), f) == [
        MarkNotRegression(repo=f.event.repo, number=f.event.number, by=f.event.sender.login),
        React("+1")]


def test_others_and_other_threads_are_answered_not_counted() -> None:
    tracked = SentinelFacts(case_id="c", kind="crashed")
    assert [type(a) for a in decide(commands(SAY), facts(SAY, may_run=False,
                                                         sentinel=tracked))] == [Refuse]
    [reply] = decide(commands(SAY), facts(SAY))
    assert isinstance(reply, Reply) and "not one" in reply.text
