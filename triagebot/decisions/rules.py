"""Rules every command shares: which commands an event carries, whether auto-triage runs,
who may start GPU work, which models a repository allows.

The triage worker (`triagebot.workers.triage`) gathers the facts these need (the repo
config, a permission) and carries out what they decide.
"""

from __future__ import annotations

from collections.abc import Iterable

from triagebot.commands import Command, CommandError, new_commands, parse_comment
from triagebot.github.events import Actor, ThreadEvent
from triagebot.plan_model import Plan
from triagebot.repo_config import RepoConfig

# Collaborator permissions that may start GPU work (maintain reports as write in
# `permission` and as maintain in `role_name`; both count).
RUN_PERMISSIONS = frozenset({"admin", "maintain", "write"})
# Those whose `help`, `status` and command errors get a full answer; anyone else is a
# stranger here, answered briefly and seldom (`decisions.strangers`).
TALK_PERMISSIONS = RUN_PERMISSIONS | {"triage"}


def is_self_or_bot(actor: Actor, bot_login: str) -> bool:
    return actor.is_bot or actor.login.lower() == bot_login.lower()


def commands_for(event: ThreadEvent, bot_login: str,
                 command_name: str) -> list[Command | CommandError]:
    """The commands a comment event asks for: all of them when created, new ones when edited.

    Comments by bots, including our own reports that quote a command, never count.
    """
    comment = event.comment
    if event.event != "issue_comment" or comment is None:
        return []
    if is_self_or_bot(comment.author, bot_login) or is_self_or_bot(event.sender, bot_login):
        return []
    if event.action == "created":
        return parse_comment(comment.body, command_name)
    if event.action == "edited":
        if comment.previous_body is None or comment.previous_body == comment.body:
            return []
        return new_commands(comment.body, comment.previous_body, command_name)
    return []


def wants_triage(event: ThreadEvent, config: RepoConfig) -> bool:
    """Whether an issue or PR event gets a parse summary under this repo's config."""
    if event.event == "pull_request":
        return config.triage.pull_requests and event.action in ("opened", "edited")
    if event.event != "issues":
        return False
    if event.action == "labeled":
        return event.label is not None and config.triage_label([event.label]) is not None
    if event.action in ("opened", "edited"):
        return config.triage_label(event.labels) is not None
    return False


def triage_may_run(event: ThreadEvent, config: RepoConfig) -> bool:
    """Auto-runs start on a new thread or a new label, never on an edit."""
    return config.triage.run and event.action in ("opened", "labeled")


def may_start_gpu_work(permission: str, login: str, config: RepoConfig,
                       in_listed_team: bool = False) -> bool:
    return permission in RUN_PERMISSIONS or config.user_listed(login) or in_listed_team


def may_talk(permission: str, may_run: bool) -> bool:
    """Whether the bot answers this person in full (a role of triage or more)."""
    return may_run or permission in TALK_PERMISSIONS


def models_not_allowed(plan: Plan, config: RepoConfig) -> list[str]:
    """Models (targets and drafts) of the plan that the repo's allowlist does not name.

    The transformers engine builds its tiny models from configs and downloads nothing, so
    its cells are not held to the list.
    """
    models: set[str] = set()
    for cell in plan.cells:
        if cell.engine == "transformers":
            continue
        models.add(cell.model)
        if cell.spec is not None and cell.spec.draft_model:
            models.add(cell.spec.draft_model)
    return sorted(m for m in models if not config.model_allowed(m))


def teams(config: RepoConfig) -> Iterable[tuple[str, str]]:
    for entry in config.access.teams:
        org, _, slug = entry.partition("/")
        yield org, slug
