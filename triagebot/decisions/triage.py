"""Auto-triage: what an issue or pull request gets when it is opened, edited or labelled.

Decided like a comment command: the triage worker gathers the facts, these functions
decide, and the worker carries out the actions. The facts come in two steps, so the
decision does too: the event and the repo config say whether the thread is read at all
(`reads_thread`); the report read from it says whether the facts a run needs are gathered
(`may_run`); `decide` then turns everything into actions: a run or the reply that says
why not, then the one summary comment.
"""

from __future__ import annotations

from triagebot.decisions import repro, rules
from triagebot.decisions.actions import PostSummary, Reply, StartJob, TriageAction
from triagebot.decisions.facts import Facts
from triagebot.github.events import ThreadEvent
from triagebot.github.models import Thread
from triagebot.overrides import ReproOptions
from triagebot.repo_config import RepoConfig
from triagebot.request_model import ReproRequest


def reads_thread(event: ThreadEvent, config: RepoConfig) -> bool:
    """Whether the event gets a parse summary under this repo's config."""
    return rules.wants_triage(event, config)


def may_run(event: ThreadEvent, config: RepoConfig, request: ReproRequest) -> bool:
    """Whether a run may start: a report in scope, on a new thread or label of a repo whose
    config turns auto-runs on. Only then are the facts a run needs gathered."""
    return request.in_scope and rules.triage_may_run(event, config)


def decide(event: ThreadEvent, thread: Thread, request: ReproRequest, command_name: str,
           facts: Facts | None) -> list[TriageAction]:
    """A run when `facts` (gathered only where `may_run`) let the sender start one, or the
    reply that says why not; then the summary. Anyone may open an issue: one who may not
    run gets the summary alone, without a refusal."""
    actions: list[TriageAction] = []
    if facts is not None and facts.may_run:
        trigger = f"{event.event}-{event.action}-{event.label or ''}"
        actions += [action for action in repro.start(facts, trigger, "repro", ReproOptions())
                    if isinstance(action, StartJob | Reply)]
    actions.append(PostSummary(marker=f"triage={event.number}", request=request,
                               command_name=command_name, is_pr=thread.is_pr,
                               head_sha=thread.head_sha))
    return actions
