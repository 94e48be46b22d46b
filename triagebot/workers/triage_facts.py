"""What the triage executor knows before it decides: its settings and clients, each
repository's config and each user's permission (cached a while in Redis), the job links,
and the facts a decision is given."""

from __future__ import annotations

from collections.abc import Callable

from celery import Celery

from triagebot import links
from triagebot.decisions import rules
from triagebot.decisions.facts import Facts
from triagebot.decisions.repro import CONFIG_PATH
from triagebot.github.client import GitHubClient
from triagebot.github.models import Thread
from triagebot.jobs.record import JobRecord
from triagebot.jobs.store import JobStore, text_of, utc_day
from triagebot.repo_config import RepoConfig, RepoConfigError, parse_repo_config
from triagebot.settings import Settings
from triagebot.web.events import Actor, ThreadEvent

_ABSENT = "\x00absent"


GitHubFactory = Callable[[int | None], GitHubClient]


class _TriageBase:
    """Settings, clients, cached repo config and permissions, and the facts for a decision."""

    def __init__(self, settings: Settings, store: JobStore, celery: Celery,
                 github: GitHubFactory) -> None:
        self.settings = settings
        self.store = store
        self.celery = celery
        self.github = github

    # --- the job's comment ----------------------------------------------------------------
    def job_url(self, job: JobRecord) -> str:
        return links.job_url(self.settings, job)

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

    def _runner_live(self, gpu_kind: str) -> bool:
        return gpu_kind in self.store.live_runner_kinds(self.settings.worker_heartbeat_max_age_s)

    def _facts(self, gh: GitHubClient, event: ThreadEvent, config: RepoConfig,
               names_: set[str], thread: Thread | None = None) -> Facts:
        """Only what the named commands read: no GitHub call a comment does not need."""
        may_run = bool(names_ & {"repro", "bisect", "cancel"}) and self._allowed(
            gh, event.repo, event.sender.login, config)
        jobs = (tuple(self.store.thread_jobs(event.repo, event.number))
                if names_ & {"status", "cancel"} else ())
        repro = may_run and bool(names_ & {"repro", "bisect"})
        if repro and thread is None:
            thread = gh.read_thread(event.repo, event.number)
        return Facts(
            event=event, command_name=self.settings.command_name, config=config,
            may_run=may_run, jobs=jobs, job_urls={j.id: self.job_url(j) for j in jobs},
            thread=thread, gpu_kinds=tuple(self.settings.gpu_kinds),
            gpu_seconds_used=self.store.gpu_seconds_today(event.repo) if repro else 0.0,
            id_key=self.settings.link_key, default_gpu=self.settings.default_gpu)
