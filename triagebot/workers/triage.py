"""The triage side, the executor: the only worker that talks to GitHub.

For a comment it gathers the facts its commands need (repo config, permission, the
thread, its jobs), lets `triagebot.decisions` decide, and applies the actions
idempotently; an issue or PR opened, edited or labelled goes the same way through
`decisions.triage` (auto-triage). It also turns a finished (or progressing) job into
edits of the job's one comment. GPU workers never hold GitHub credentials; they leave
results in Redis and ask for a `publish` here. Every step is given one `TriageContext`
(settings, job store, Celery, GitHub): `triage_facts` gathers what a decision is given,
`triage_jobs` does the work on jobs, and `Triage` below handles the events.
"""

from __future__ import annotations

import hashlib
import logging

import redis
from celery import Celery

from triagebot import decisions
from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions import rules
from triagebot.decisions import triage as auto_triage
from triagebot.decisions.actions import (
    Action,
    CancelJobs,
    MarkNotRegression,
    React,
    Refuse,
    Reply,
    StartJob,
    StartWatch,
    StopWatch,
    TriageAction,
)
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.github.events import ThreadEvent
from triagebot.jobs.store import JobStore, text_of
from triagebot.parse import parse_report
from triagebot.repo_config import CONFIG_PATH
from triagebot.settings import Settings
from triagebot.workers import sentinel, sentinel_issues, triage_jobs, watch
from triagebot.workers.triage_facts import (
    GitHubFactory,
    TriageContext,
    facts_for,
    may_answer_stranger,
    repo_config,
)
from triagebot.workers.triage_jobs import CommentBusy

__all__ = ["TRANSIENT", "CommentBusy", "Triage"]

log = logging.getLogger(__name__)


# Failures that may pass: the task retries them (with backoff) instead of answering.
TRANSIENT = (GitHubError, redis.ConnectionError, redis.TimeoutError)


def reply_key(event: ThreadEvent) -> str:
    """What a reply's marker names: the comment, and for an edit the edit itself (its
    text before and after), so each edit's new commands are answered on their own and a
    redelivered edit finds its own reply again."""
    assert event.comment is not None
    if event.action != "edited":
        return str(event.comment.id)
    edit = f"{event.comment.previous_body or ''}\x00{event.comment.body}"
    return f"{event.comment.id}.{hashlib.sha256(edit.encode()).hexdigest()[:12]}"


def follow_releases(ctx: TriageContext, event: ThreadEvent,
                    action: StartWatch | StopWatch | MarkNotRegression) -> str | None:
    """The actions that follow a thread across releases: its watch, and a sentinel
    tracking issue's answer; returns the action's section of the reply, if any."""
    if isinstance(action, StartWatch):
        return watch.start(ctx, action, event.author.login, event.sender.login)
    if isinstance(action, StopWatch):
        watch.stop(ctx, action.repo, action.number)
        return None
    return sentinel_issues.mark_not_regression(ctx, action.repo, action.number, action.by)


class Triage:
    """Handles one event: decides its commands and applies the actions idempotently; and
    passes the GPU side's requests about a job on to `triage_jobs`."""

    def __init__(self, settings: Settings, store: JobStore, celery: Celery,
                 github: GitHubFactory) -> None:
        self.ctx = TriageContext(settings, store, celery, github)

    # --- a job's comment, asked for by the GPU side -------------------------------------
    def progress(self, id_: str) -> None:
        triage_jobs.progress(self.ctx, id_)

    def publish(self, id_: str) -> None:
        triage_jobs.publish(self.ctx, id_)

    def bisect_commits(self, id_: str, run_json: str) -> None:
        triage_jobs.bisect_commits(self.ctx, id_, run_json)

    # --- events ------------------------------------------------------------------------
    def handle(self, event: ThreadEvent) -> None:
        if event.event == "issue_comment":
            self._comment(event)
        elif rules.is_self_or_bot(event.sender, self.ctx.settings.bot_login):
            return
        else:
            self._thread_event(event)

    def _comment(self, event: ThreadEvent) -> None:
        """Gather the facts the comment's commands need, decide, then apply."""
        if event.comment is None:
            return
        gone = self.ctx.settings.key("deleted-comment", event.repo.lower(),
                                     str(event.comment.id))
        if event.action == "deleted":
            self._deleted(event, gone)
            return
        if self.ctx.store.redis.exists(gone):
            return  # deleted before it was handled: its commands are withdrawn
        items = rules.commands_for(event, self.ctx.settings.bot_login,
                                   self.ctx.settings.command_name)
        if not items:
            return
        gh = self.ctx.github(event.installation_id)
        config, problems = repo_config(self.ctx, gh, event.repo)
        if problems:
            self._apply(gh, event, [Reply(words.config_error(problems)), React("confused")])
            return
        try:
            facts = facts_for(self.ctx, gh, event, config,
                              {i.name for i in items if isinstance(i, Command)})
        except TRANSIENT:
            raise
        except Exception as exc:
            log.exception("%s#%d: gathering facts failed", event.repo, event.number)
            self._apply(gh, event, [Reply(words.internal_error(type(exc).__name__)),
                                    React("confused")])
            return
        self._apply(gh, event, decisions.decide(items, facts))

    def _deleted(self, event: ThreadEvent, gone: str) -> None:
        """A deleted comment withdraws its commands: one not handled yet never runs, and
        the jobs it started are cancelled, each job's comment saying why."""
        assert event.comment is not None
        if rules.is_self_or_bot(event.comment.author, self.ctx.settings.bot_login):
            return
        self.ctx.store.redis.set(gone, "1", ex=2 * 24 * 3600)
        trigger = f"comment-{event.comment.id}"
        live = tuple(job.id for job in self.ctx.store.thread_jobs(event.repo, event.number)
                     if job.trigger == trigger and not job.terminal)
        if live:
            triage_jobs.cancel(self.ctx, live, event.sender.login,
                               "the comment that asked for it was deleted")

    def _apply(self, gh: GitHubClient, event: ThreadEvent, actions: list[Action]) -> None:
        """Carry out a comment's actions; each is safe to repeat (a retried task, copies of
        one delivery), and the comment gets at most one reply."""
        assert event.comment is not None
        sections: list[str] = []
        reactions: list[str] = []
        # A reply made only of answers that are the same for whoever asks may be a repeat.
        repeatable = all(isinstance(a, Reply) and a.same_for_all
                         for a in actions if isinstance(a, Reply | Refuse))
        for action in actions:
            try:
                section = self._act(gh, event, action, reactions)
            except TRANSIENT:
                raise  # the task retries the whole comment; every step is idempotent
            except Exception as exc:
                # A bug must not turn into silence: the requester hears that it failed.
                log.exception("%s#%d: %s failed", event.repo, event.number,
                              type(action).__name__)
                section = words.internal_error(type(exc).__name__)
                reactions.append("confused")
            if section:
                sections.append(section)
        for content in dict.fromkeys(reactions):
            gh.react(event.repo, event.comment.id, content)
        if sections:
            self._reply(gh, event, sections, repeatable)

    def _act(self, gh: GitHubClient, event: ThreadEvent, action: Action,
             reactions: list[str]) -> str | None:
        """Apply one action; returns its section of the reply, if it has one."""
        if isinstance(action, Reply):
            return action.text
        if isinstance(action, React):
            reactions.append(action.content)
            return None
        if isinstance(action, Refuse):
            if not may_answer_stranger(self.ctx, event.repo, event.number,
                                       event.sender.login):
                return None
            if action.react_only:
                reactions.append("eyes")
                return None
            return action.text
        if isinstance(action, CancelJobs):
            triage_jobs.cancel(self.ctx, action.ids, event.sender.login, action.reason)
            return None
        if isinstance(action, StartWatch | StopWatch | MarkNotRegression):
            return follow_releases(self.ctx, event, action)
        busy = triage_jobs.start(self.ctx, gh, action)
        if busy is None:
            reactions.append("+1")
        return busy

    def report_failure(self, event: ThreadEvent, reason: str) -> None:
        """Last word on a comment the task gave up on after its retries."""
        if event.comment is None:
            return
        gh = self.ctx.github(event.installation_id)
        self._apply(gh, event, [Reply(words.gave_up(reason)), React("confused")])

    def _reply(self, gh: GitHubClient, event: ThreadEvent, sections: list[str],
               repeatable: bool = False) -> None:
        """One answer per comment and per edit that adds commands, however many copies of
        its delivery arrive at once: an edit's new commands get a reply of their own, so
        the earlier commands keep theirs."""
        assert event.comment is not None
        body = words.reply(event.sender.login, sections)
        where = f"{event.repo.lower()}#{event.number}"
        digest = hashlib.sha256(body.encode()).hexdigest()[:24]
        key = reply_key(event)
        posted = self.ctx.settings.key("replied", where, key)
        said = self.ctx.settings.key("said", where, hashlib.sha256(
            "\n\n".join(sections).encode()).hexdigest()[:24])
        client = self.ctx.store.redis
        with self.ctx.store.runs.claimed("reply", where, key) as ours:
            if not ours or text_of(client.get(posted) or b"") == digest:
                return
            if repeatable:
                client.set(said, key, nx=True, ex=24 * 3600)
            if repeatable and text_of(client.get(said) or b"") != key:
                # The same answer is already on this thread, a day old at most: a
                # repeat gets a reaction, not the same words again.
                gh.react(event.repo, event.comment.id, "eyes")
            else:
                gh.upsert_comment(event.repo, event.number, f"reply={key}", body)
            client.set(posted, digest, ex=2 * 24 * 3600)

    def _thread_event(self, event: ThreadEvent) -> None:
        if event.event == "issues" and event.action in ("closed", "reopened"):
            watch.thread_closed(self.ctx, event)  # never closes or reopens anything itself
            return
        gh = self.ctx.github(event.installation_id)
        config, problems = repo_config(self.ctx, gh, event.repo)
        if problems:
            # Nobody invoked us: a broken config stays silent on auto-triage.
            log.warning("invalid %s in %s: %s", CONFIG_PATH, event.repo, "; ".join(problems))
            return
        sentinel.enrol(self.ctx, event.repo, event.installation_id, config)
        if not auto_triage.reads_thread(event, config):
            return
        thread = gh.read_thread(event.repo, event.number)
        request = parse_report(thread.body.encode(), title=thread.title, repo=event.repo)
        facts = (facts_for(self.ctx, gh, event, config, {"repro"}, thread)
                 if auto_triage.may_run(event, config, request) else None)
        self._apply_triage(gh, event, auto_triage.decide(
            event, thread, request, self.ctx.settings.command_name, facts))

    def _apply_triage(self, gh: GitHubClient, event: ThreadEvent,
                      actions: list[TriageAction]) -> None:
        """Carry out auto-triage's actions: the run, once, then the one summary comment,
        which says whether the run was queued and carries the run's notes."""
        started = False
        notes: list[str] = []
        for action in actions:
            if isinstance(action, StartJob):
                busy = triage_jobs.start(self.ctx, gh, action)
                started = busy is None
                notes += [busy] if busy else []
            elif isinstance(action, Reply):
                notes.append(action.text)
            else:
                body = "\n\n".join([action.text(will_run=started), *notes])
                gh.upsert_comment(event.repo, event.number, action.marker, body)
