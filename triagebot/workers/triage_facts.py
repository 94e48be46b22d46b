"""What the triage executor knows before it decides: its settings and clients (the
`TriageContext` every step is given), each repository's config and each user's
permission (cached a while in Redis), the job links, and the facts a decision is given."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from celery import Celery

from triagebot import links
from triagebot.decisions import rules
from triagebot.decisions.facts import Facts, SentinelFacts, WatchFacts
from triagebot.decisions.watch import reproduced_job
from triagebot.github.client import GitHubClient
from triagebot.github.events import Actor, ThreadEvent
from triagebot.github.models import Thread
from triagebot.jobs.record import JobRecord
from triagebot.jobs.sentinels import SentinelStore
from triagebot.jobs.store import JobStore, text_of, utc_day
from triagebot.jobs.watches import WatchStore
from triagebot.repo_config import CONFIG_PATH, RepoConfig, RepoConfigError, parse_repo_config
from triagebot.settings import Settings

_ABSENT = "\x00absent"


GitHubFactory = Callable[[int | None], GitHubClient]


@dataclass(frozen=True)
class TriageContext:
    """The settings and clients every step of the triage executor works with: the job
    store, the Celery app it sends tasks through, and a GitHub client per installation."""

    settings: Settings
    store: JobStore
    celery: Celery
    github: GitHubFactory

    def job_url(self, job: JobRecord) -> str:
        return links.job_url(self.settings, job)


def cached(ctx: TriageContext, key: str, ttl_s: int,
           fetch: Callable[[], str | None]) -> str | None:
    """`fetch()`, remembered in Redis for `ttl_s` (0: not at all); None is remembered too."""
    found = ctx.store.redis.get(key)
    if found is not None:
        text = text_of(found)
        return None if text == _ABSENT else text
    value = fetch()
    if ttl_s:
        ctx.store.redis.set(key, _ABSENT if value is None else value, ex=ttl_s)
    return value


def repo_config(ctx: TriageContext, gh: GitHubClient,
                repo: str) -> tuple[RepoConfig, list[str]]:
    """The repo's config, or the default one with the problems that made us refuse its own."""
    text = cached(ctx, ctx.settings.key("repo-config", repo.lower()),
                  ctx.settings.repo_config_ttl_s, lambda: gh.file_text(repo, CONFIG_PATH))
    if text is None:
        return RepoConfig.default(), []
    try:
        return parse_repo_config(text), []
    except RepoConfigError as exc:
        return RepoConfig.default(), exc.problems


def standing(ctx: TriageContext, gh: GitHubClient, repo: str, login: str,
             config: RepoConfig) -> tuple[bool, bool]:
    """(may talk, may run): whether `login` gets full answers here (a role of triage or
    more), and whether they may start GPU work (write or more, or listed)."""
    settings = ctx.settings
    if rules.is_self_or_bot(Actor(login=login), settings.bot_login):
        return False, False
    if config.user_listed(login):
        return True, True
    permission = cached(ctx, settings.key("permission", repo.lower(), login.lower()),
                        settings.permission_ttl_s, lambda: gh.permission(repo, login)) or "none"
    in_team = (permission not in rules.RUN_PERMISSIONS
               and any(gh.in_team(org, slug, login) for org, slug in rules.teams(config)))
    may_run = rules.may_start_gpu_work(permission, login, config, in_team)
    return rules.may_talk(permission, may_run), may_run


def may_answer_stranger(ctx: TriageContext, repo: str, number: int, login: str) -> bool:
    """Whether a refusal or a stranger's answer may go out now: at most one per user,
    thread and day, and within the per-thread (an hour) and per-user (a day) budgets, so
    nobody can make the bot spend the installation's share of GitHub's limits."""
    settings, client = ctx.settings, ctx.store.redis
    thread, user, day = f"{repo.lower()}#{number}", login.lower(), utc_day()
    if not client.set(settings.key("refused", thread, user, day), "1", nx=True,
                      ex=2 * 24 * 3600):
        return False
    budgets = ((settings.key("stranger-answers", thread, str(int(time.time() // 3600))),
                3600, settings.stranger_answers_per_thread_hour),
               (settings.key("stranger-answers", repo.lower(), user, day), 2 * 24 * 3600,
                settings.stranger_answers_per_user_day))
    allowed = True
    for key, ttl, most in budgets:
        pipe = client.pipeline()
        pipe.incr(key)
        pipe.expire(key, ttl)
        used, _ = pipe.execute()
        allowed = allowed and int(used) <= most
    return allowed


def runner_live(ctx: TriageContext, gpu_kind: str) -> bool:
    return gpu_kind in ctx.store.counters.live_runner_kinds(ctx.settings.worker_heartbeat_max_age_s)


def facts_for(ctx: TriageContext, gh: GitHubClient, event: ThreadEvent, config: RepoConfig,
              command_names: set[str], thread: Thread | None = None) -> Facts:
    """Only what the named commands read: no GitHub call a comment does not need."""
    settings, store = ctx.settings, ctx.store
    if config.sentinel.auto:  # the sentinel follows the repo from its first command on
        SentinelStore(store.redis, settings.namespace).enrol(event.repo, event.installation_id)
    may_talk, may_run = standing(ctx, gh, event.repo, event.sender.login, config)
    # An edit's repro or bisect may replace the job the comment started.
    edit_starts = event.action == "edited" and bool(command_names & {"repro", "bisect"})
    jobs = (tuple(store.thread_jobs(event.repo, event.number))
            if command_names & {"status", "cancel", "watch"} or edit_starts else ())
    watching = bool(command_names & {"status", "watch", "unwatch"})
    repro = may_run and bool(command_names & {"repro", "bisect"})
    if repro and thread is None:
        thread = gh.read_thread(event.repo, event.number)
    return Facts(
        event=event, command_name=settings.command_name, config=config,
        may_run=may_run, jobs=jobs, job_urls={j.id: ctx.job_url(j) for j in jobs},
        thread=thread, gpu_kinds=tuple(settings.gpu_kinds),
        gpu_seconds_used=store.counters.gpu_seconds_today(event.repo) if repro else 0.0,
        id_key=settings.link_key, default_gpu=settings.default_gpu, may_talk=may_talk,
        watch=watch_facts(ctx, event.repo, event.number, jobs) if watching else WatchFacts(),
        sentinel=sentinel_facts(ctx, event.repo, event.number)
        if "not-a-regression" in command_names else SentinelFacts())


def sentinel_facts(ctx: TriageContext, repo: str, number: int) -> SentinelFacts:
    """The thread's sentinel tracking record, if it is a tracking issue."""
    rec = SentinelStore(ctx.store.redis, ctx.settings.namespace).track_of_issue(repo, number)
    return SentinelFacts(case_id=rec.case_id, kind=rec.kind) if rec else SentinelFacts()


def watch_facts(ctx: TriageContext, repo: str, number: int,
                jobs: tuple[JobRecord, ...]) -> WatchFacts:
    """What `watch`, `unwatch` and `status` decide from: this thread's watch, the repo's
    count of watched threads and runner minutes today, the reproduced report's engine."""
    watches = WatchStore(ctx.store.redis, ctx.settings.namespace)
    rec = watches.get(repo, number)
    live = rec if rec is not None and rec.status != "stopped" else None
    job = reproduced_job(jobs)
    return WatchFacts(
        status=live.status if live else "",
        lines=(*(f"{r.release}: **{r.words}** ({r.reason})" for r in live.rows),
               *((f"waiting: {live.waiting}",) if live.waiting else ())) if live else (),
        threads=watches.active_in(repo), minutes_today=watches.minutes(repo, utc_day()),
        engine=ctx.store.plan(job.id).engine if job is not None else "")
