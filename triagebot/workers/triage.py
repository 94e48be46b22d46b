"""The triage side, the executor: the only worker that talks to GitHub.

For a comment it gathers the facts its commands need (repo config, permission, the
thread, its jobs), lets `triagebot.decisions` decide, and applies the actions
idempotently. It also turns a finished (or progressing) job into edits of the job's one
comment. GPU workers never hold GitHub credentials; they leave results in Redis and ask
for a `publish` here.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import redis
from celery import Celery

from triagebot import decisions, links
from triagebot.commands import Command
from triagebot.decisions import replies as words
from triagebot.decisions import rules
from triagebot.decisions.actions import Action, CancelJobs, React, Refuse, Reply, StartJob
from triagebot.decisions.facts import Facts
from triagebot.decisions.repro import CONFIG_PATH
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.github.models import Thread
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore, text_of, utc_day
from triagebot.overrides import ReproOptions
from triagebot.parse import parse_report
from triagebot.repo_config import RepoConfig, RepoConfigError, parse_repo_config
from triagebot.settings import Settings
from triagebot.web.events import Actor, ThreadEvent
from triagebot.workers import task_queues

log = logging.getLogger(__name__)

_ABSENT = "\x00absent"


# Failures that may pass: the task retries them (with backoff) instead of answering.
TRANSIENT = (GitHubError, redis.ConnectionError, redis.TimeoutError)


class CommentBusy(Exception):
    """Another task is editing this job's comment; try again in a moment."""


GitHubFactory = Callable[[int | None], GitHubClient]


class Triage:
    """One event or one job's comment, handled with the facts gathered from GitHub."""

    def __init__(self, settings: Settings, store: JobStore, celery: Celery,
                 github: GitHubFactory) -> None:
        self.settings = settings
        self.store = store
        self.celery = celery
        self.github = github

    # --- events ------------------------------------------------------------------------
    def handle(self, event: ThreadEvent) -> None:
        if event.event == "issue_comment":
            self._comment(event)
        elif rules.is_self_or_bot(event.sender, self.settings.bot_login):
            return
        else:
            self._thread_event(event)

    def _comment(self, event: ThreadEvent) -> None:
        """Gather the facts the comment's commands need, decide, then apply."""
        items = rules.commands_for(event, self.settings.bot_login,
                                      self.settings.command_name)
        if not items or event.comment is None:
            return
        gh = self.github(event.installation_id)
        config, problems = self._config(gh, event.repo)
        if problems:
            self._apply(gh, event, [Reply(words.config_error(problems)), React("confused")])
            return
        try:
            facts = self._facts(gh, event, config, {i.name for i in items
                                                    if isinstance(i, Command)})
        except TRANSIENT:
            raise
        except Exception as exc:
            log.exception("%s#%d: gathering facts failed", event.repo, event.number)
            self._apply(gh, event, [Reply(words.internal_error(type(exc).__name__)),
                                    React("confused")])
            return
        self._apply(gh, event, decisions.decide(items, facts))

    def _facts(self, gh: GitHubClient, event: ThreadEvent, config: RepoConfig,
               names_: set[str], thread: Thread | None = None) -> Facts:
        """Only what the named commands read: no GitHub call a comment does not need."""
        may_run = bool(names_ & {"repro", "cancel"}) and self._allowed(
            gh, event.repo, event.sender.login, config)
        jobs = (tuple(self.store.thread_jobs(event.repo, event.number))
                if names_ & {"status", "cancel"} else ())
        repro = may_run and "repro" in names_
        if repro and thread is None:
            thread = gh.read_thread(event.repo, event.number)
        return Facts(
            event=event, command_name=self.settings.command_name, config=config,
            may_run=may_run, jobs=jobs, job_urls={j.id: self.job_url(j) for j in jobs},
            thread=thread, gpu_kinds=tuple(self.settings.gpu_kinds),
            gpu_seconds_used=self.store.gpu_seconds_today(event.repo) if repro else 0.0,
            id_key=self.settings.link_key)

    def _apply(self, gh: GitHubClient, event: ThreadEvent, actions: list[Action]) -> None:
        """Carry out a comment's actions; each is safe to repeat (a retried task, copies of
        one delivery), and the comment gets at most one reply."""
        assert event.comment is not None
        sections: list[str] = []
        reactions: list[str] = []
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
            self._reply(gh, event, sections)

    def _act(self, gh: GitHubClient, event: ThreadEvent, action: Action,
             reactions: list[str]) -> str | None:
        """Apply one action; returns its section of the reply, if it has one."""
        if isinstance(action, Reply):
            return action.text
        if isinstance(action, React):
            reactions.append(action.content)
            return None
        if isinstance(action, Refuse):
            first = self._first_refusal(event.repo, event.number, event.sender.login)
            return action.text if first else None
        if isinstance(action, CancelJobs):
            self._cancel(action.ids, event.sender.login)
            return None
        busy = self._start(gh, action)
        if busy is None:
            reactions.append("+1")
        return busy

    def report_failure(self, event: ThreadEvent, reason: str) -> None:
        """Last word on a comment the task gave up on after its retries."""
        if event.comment is None:
            return
        gh = self.github(event.installation_id)
        self._apply(gh, event, [Reply(words.gave_up(reason)), React("confused")])

    def _reply(self, gh: GitHubClient, event: ThreadEvent, sections: list[str]) -> None:
        """One answer per comment, however many copies of its delivery arrive at once."""
        assert event.comment is not None
        body = words.reply(event.sender.login, sections)
        where = f"{event.repo.lower()}#{event.number}"
        digest = hashlib.sha256(body.encode()).hexdigest()[:24]
        posted = self.settings.key("replied", where, str(event.comment.id))
        with self.store.claimed("reply", where, str(event.comment.id)) as ours:
            if not ours or text_of(self.store.redis.get(posted) or b"") == digest:
                return
            gh.upsert_comment(event.repo, event.number, f"reply={event.comment.id}", body)
            self.store.redis.set(posted, digest, ex=2 * 24 * 3600)

    def _thread_event(self, event: ThreadEvent) -> None:
        gh = self.github(event.installation_id)
        config, problems = self._config(gh, event.repo)
        if problems:
            # Nobody invoked us: a broken config stays silent on auto-triage.
            log.warning("invalid %s in %s: %s", CONFIG_PATH, event.repo, "; ".join(problems))
            return
        if not rules.wants_triage(event, config):
            return
        thread = gh.read_thread(event.repo, event.number)
        request = parse_report(thread.body.encode(), title=thread.title, repo=event.repo)
        will_run = False
        notes: list[str] = []
        if request.in_scope and rules.triage_may_run(event, config):
            facts = self._facts(gh, event, config, {"repro"}, thread)
            trigger = f"{event.event}-{event.action}-{event.label or ''}"
            actions = (decisions.repro.start(facts, trigger, "repro", ReproOptions())
                       if facts.may_run else [])
            for action in actions:
                if isinstance(action, StartJob):
                    busy = self._start(gh, action)
                    will_run = busy is None
                    notes += [busy] if busy else []
                elif isinstance(action, Reply):
                    notes.append(action.text)
        summary = words.triage_summary(request, command_name=self.settings.command_name,
                                       will_run=will_run, is_pr=thread.is_pr,
                                       head_sha=thread.head_sha)
        body = "\n\n".join([summary, *notes])
        gh.upsert_comment(event.repo, event.number, f"triage={event.number}", body)

    # --- jobs ----------------------------------------------------------------------------
    def _start(self, gh: GitHubClient, action: StartJob) -> str | None:
        """Create the job and acknowledge it; a reply when another job is live, else None."""
        created = self.store.create(action.record, action.plan, action.request)
        if created.status == "busy":
            return words.busy(created.job, self.job_url(created.job))
        self._acknowledge_and_enqueue(gh, created.job, list(action.notes))
        return None

    def _acknowledge_and_enqueue(self, gh: GitHubClient, job: JobRecord,
                                 notes: list[str]) -> None:
        """Post the job's comment and queue it, once.

        Concurrent deliveries of one comment (GitHub redelivers, edits re-fire) all reach
        here with the same job: the claim lets one of them post and enqueue, and the others
        add nothing. A holder that crashed midway leaves the claim to expire and the job
        not `enqueued`, so a redelivery finishes the step.
        """
        if job.state != "queued" or job.enqueued:
            return
        with self.store.claimed("acknowledge", job.id) as ours:
            if not ours:
                return
            job = self.store.require(job.id)
            if job.state != "queued" or job.enqueued:
                return
            plan = self.store.plan(job.id)
            ahead, wait_s = self.store.queue_position(job)
            body = words.acknowledgement(job, plan, ahead, wait_s, self.job_url(job), notes,
                                         runner_live=self._runner_live(job.gpu_kind))
            comment_id = gh.upsert_comment(job.repo, job.number, f"job={job.id}", body,
                                           job.comment_id)
            self.store.set(job.id, comment_id=comment_id)
            self.celery.send_task(task_queues.RUN_JOB, args=[job.id],
                                  queue=self.settings.queue_for(job.gpu_kind),
                                  task_id=f"job-{job.id}-{uuid.uuid4().hex[:8]}",
                                  ignore_result=True)
            self.store.set(job.id, enqueued=True)

    def _runner_live(self, gpu_kind: str) -> bool:
        return gpu_kind in self.store.live_runner_kinds(self.settings.worker_heartbeat_max_age_s)

    def _cancel(self, ids: tuple[str, ...], actor: str) -> None:
        for id_ in ids:
            record = self.store.request_cancel(id_, actor)
            if record.state == "cancelled":
                # Queued: no worker will pick it up, so say so on its comment now.
                self.celery.send_task(task_queues.PUBLISH, args=[id_],
                                      queue=task_queues.TRIAGE_QUEUE, ignore_result=True)

    # --- facts from GitHub, cached --------------------------------------------------------
    def _cached(self, key: str, ttl_s: int, fetch: Callable[[], str | None]) -> str | None:
        """`fetch()`, remembered in Redis for `ttl_s` (0: not at all); None is remembered too."""
        cached = self.store.redis.get(key)
        if cached is not None:
            text = text_of(cached)
            return None if text == _ABSENT else text
        value = fetch()
        if ttl_s:
            self.store.redis.set(key, _ABSENT if value is None else value, ex=ttl_s)
        return value

    def _config(self, gh: GitHubClient, repo: str) -> tuple[RepoConfig, list[str]]:
        text = self._cached(self.settings.key("repo-config", repo.lower()),
                            self.settings.repo_config_ttl_s,
                            lambda: gh.file_text(repo, CONFIG_PATH))
        if text is None:
            return RepoConfig.default(), []
        try:
            return parse_repo_config(text), []
        except RepoConfigError as exc:
            return RepoConfig.default(), exc.problems

    def _allowed(self, gh: GitHubClient, repo: str, login: str, config: RepoConfig) -> bool:
        if rules.is_self_or_bot(Actor(login=login), self.settings.bot_login):
            return False
        if config.user_listed(login):
            return True
        permission = self._cached(self.settings.key("permission", repo.lower(), login.lower()),
                                  self.settings.permission_ttl_s,
                                  lambda: gh.permission(repo, login)) or "none"
        in_team = (permission not in rules.RUN_PERMISSIONS
                   and any(gh.in_team(org, slug, login) for org, slug in rules.teams(config)))
        return rules.may_start_gpu_work(permission, login, config, in_team)

    def _first_refusal(self, repo: str, number: int, login: str) -> bool:
        """At most one refusal per user, thread and day: a refused user cannot make us spam."""
        key = self.settings.key("refused", f"{repo.lower()}#{number}", login.lower(),
                                utc_day())
        return bool(self.store.redis.set(key, "1", nx=True, ex=2 * 24 * 3600))

    # --- the job's comment ----------------------------------------------------------------
    def job_url(self, job: JobRecord) -> str:
        return links.job_url(self.settings, job)

    @contextmanager
    def _comment_lock(self, id_: str) -> Iterator[None]:
        key = self.settings.key("comment-lock", id_)
        token = uuid.uuid4().hex
        if not self.store.redis.set(key, token, nx=True, ex=120):
            raise CommentBusy(id_)
        try:
            yield
        finally:
            if self.store.redis.get(key) == token.encode():
                self.store.redis.delete(key)

    def progress(self, id_: str) -> None:
        """Edit the job's comment with where it stands, at most once per interval."""
        job = self.store.get(id_)
        if job is None or job.terminal or not self._progress_due(job):
            return
        with self._comment_lock(id_):
            job = self.store.get(id_)
            if job is None or job.terminal or not self._progress_due(job):
                return
            gh = self.github(job.installation_id)
            comment_id = gh.upsert_comment(job.repo, job.number, f"job={job.id}",
                                           words.progress(job, self.job_url(job)),
                                           job.comment_id)
            self.store.set(id_, comment_id=comment_id, progress_posted_at=time.time())

    def _progress_due(self, job: JobRecord) -> bool:
        last = job.progress_posted_at
        return last is None or time.time() - last >= self.settings.progress_interval_s

    def publish(self, id_: str) -> None:
        """The job ended: its comment becomes the report (or says why there is none)."""
        job = self.store.get(id_)
        if job is None or not job.terminal or job.published:
            return
        with self._comment_lock(id_):
            job = self.store.get(id_)
            if job is None or job.published:
                return
            gh = self.github(job.installation_id)
            body = words.final(job, self.store.report(id_), self.job_url(job))
            comment_id = gh.upsert_comment(job.repo, job.number, f"job={job.id}", body,
                                           job.comment_id)
            self.store.set(id_, comment_id=comment_id)
            # Labels and reactions are idempotent: a retried publish may repeat them.
            self._outcome_marks(gh, job)
            self.store.set(id_, published=True)

    def _outcome_marks(self, gh: GitHubClient, job: JobRecord) -> None:
        config, problems = self._config(gh, job.repo)
        label = None if problems or job.outcome is None else config.outcome_label(job.outcome)
        if job.state == "failed" and not problems:
            label = config.outcome_label("error")
        if label:
            gh.add_labels(job.repo, job.number, [label])
        if job.trigger.startswith("comment-"):
            # A job that ran but whose outcome is `error` (every run failed) is no success.
            state = "failed" if job.outcome == "error" else job.state
            reaction = {"done": "rocket", "failed": "confused"}.get(state)
            if reaction:
                gh.react(job.repo, int(job.trigger.removeprefix("comment-")), reaction)

