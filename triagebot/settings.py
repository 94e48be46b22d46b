"""The service's settings: one typed object, read from `TRIAGEBOT_*` variables or a `.env` file.

Nothing else in the package reads the environment. `load_settings()` builds the object;
the web app, the Celery app and the CLI receive it explicitly, so tests aim every part at
their own Redis database and fake GitHub by passing overrides.
"""

from __future__ import annotations

import re
import urllib.parse
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# Values people paste from examples; a service started with one of them is misconfigured.
_PLACEHOLDERS = {"changeme", "changethis", "secret", "xxx", "todo", "your-secret-here"}
_GPU_KIND = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,33}$")


class SettingsError(ValueError):
    """A setting is missing or unusable; the message names it."""


def _csv(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _real_secret(secret: SecretStr, what: str) -> SecretStr:
    """`secret`, unless it is too short or a placeholder; the error names `what` it is."""
    text = secret.get_secret_value()
    if len(text) < 8 or text.lower() in _PLACEHOLDERS or text.lower().startswith("replace-with"):
        raise ValueError(f"{what} must be at least 8 characters and not a placeholder")
    return secret


class ReleaseSettings(BaseSettings):
    """The knobs of what follows new releases (watch, sentinel); `Settings` has them."""

    watch_index: str = "https://pypi.org/simple"  # `@triagebot watch`'s PEP 691 feeds
    watch_poll_s: float = Field(default=1800.0, gt=0)  # jittered; beat looks 4x as often
    # key=value options added to every sentinel case a runner measures (`runs=8`, say).
    sentinel_options: Annotated[list[str], NoDecode] = Field(default_factory=list)

    @field_validator("sentinel_options", mode="before")
    @classmethod
    def _split_options(cls, value: Any) -> Any:
        return _csv(value)


class Settings(ReleaseSettings):
    """Every knob of the service. Environment names are `TRIAGEBOT_` + the field in capitals."""

    model_config = SettingsConfigDict(env_prefix="TRIAGEBOT_", env_file=".env",
                                      env_file_encoding="utf-8", extra="ignore")

    # --- ingress -----------------------------------------------------------------------
    # A list so a secret can be rotated: deliveries signed with any of them are accepted.
    webhook_secrets: Annotated[list[SecretStr], NoDecode] = Field(default_factory=list)
    max_body_bytes: int = Field(default=25 * 1024 * 1024 + 64 * 1024, ge=1024)
    delivery_ttl_s: int = Field(default=7 * 24 * 3600, ge=60)
    # Webhook-path Redis calls give up after this: a hung Redis answers 503 within GitHub's 10 s.
    ingress_redis_timeout_s: float = Field(default=0.5, gt=0, le=5)
    # Bytes of request bodies held at once (per process) before their signature is checked;
    # a request that finds no room within a second is answered 503.
    unverified_body_budget_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    # A secret for job ids and page links; defaults to the first webhook secret.
    link_secret: SecretStr | None = None
    # Only these OWNER/NAME repositories are served; empty means every installation.
    allowed_repos: Annotated[list[str], NoDecode] = Field(default_factory=list)
    public_url: str = "http://127.0.0.1:8000"
    docs_url: str = ""  # where the docs site is published; a report links its runner's page
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)

    # --- Redis and Celery ----------------------------------------------------------------
    redis_url: str = "redis://127.0.0.1:6379/0"
    # A key prefix, so several deployments (or test sessions) can share one Redis.
    namespace: str = Field(default="triagebot", pattern=r"^[A-Za-z0-9_.-]{1,40}$")
    # Hard limit of one GPU job; the Redis visibility timeout must stay above it.
    job_time_limit_s: int = Field(default=5 * 3600, ge=10)
    visibility_timeout_s: int = Field(default=5 * 3600 + 1800, ge=10)
    max_attempts: int = Field(default=2, ge=1, le=10)
    # A job's lock outlives its worker by this much; the reaper requeues the job after it
    # (plus at most one reap interval), so together they bound recovery from a dead worker.
    lock_ttl_s: int = Field(default=30, ge=2)
    heartbeat_s: float = Field(default=10.0, gt=0)
    reap_interval_s: float = Field(default=10.0, gt=0)
    worker_heartbeat_max_age_s: int = Field(default=30, ge=2)
    job_ttl_s: int = Field(default=30 * 24 * 3600, ge=60)

    # --- GitHub --------------------------------------------------------------------------
    github_api_url: str = "https://api.github.com"
    app_id: int | None = None
    # PEM text, or read from app_private_key_file.
    app_private_key: SecretStr | None = None
    app_private_key_file: Path | None = None
    app_slug: str = "triagebot"
    # The handle people write after `@`; usually the slug.
    command_name: str = Field(default="triagebot", pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}$")
    # A token for `triagebot repro <issue URL>` on a maintainer's machine (read-only use).
    github_token: SecretStr | None = None
    repo_config_ttl_s: int = Field(default=300, ge=0)
    permission_ttl_s: int = Field(default=600, ge=0)
    # Answers (short replies or reactions) to people without a role on the repository: at
    # most this many per thread an hour, and per person and repository a day. A person
    # gets at most one a thread and day.
    stranger_answers_per_thread_hour: int = Field(default=3, ge=0)
    stranger_answers_per_user_day: int = Field(default=3, ge=0)
    progress_interval_s: float = Field(default=60.0, ge=0)
    # Longest Retry-After / rate-limit reset a call sleeps through; past it the event is
    # put aside and tried again once GitHub said it may be (`workers.retry_policy`).
    max_rate_limit_wait_s: float = Field(default=900.0, ge=0)

    # --- runners -------------------------------------------------------------------------
    gpu_kinds: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["h100"])
    default_gpu: str = "h100"
    data_dir: Path = Path.home() / ".cache" / "triagebot" / "jobs"
    env_cache_dir: Path = Path.home() / ".cache" / "triagebot" / "envs"
    # Run cells with this interpreter instead of a virtualenv per engine version.
    run_local: bool = False
    # Where `@triagebot bisect` lists an engine's releases: a simple-API index, or a
    # folder of wheels that is also the only place releases are installed from.
    bisect_index: str = "https://pypi.org/simple"
    bisect_find_links: Path | None = None
    # How long a runner waits for the triage worker to list the commits below a bracket
    # (the compare API is read on the triage side, which holds the GitHub credentials).
    bisect_commits_wait_s: float = Field(default=300.0, gt=0)
    silence_limit_s: float = Field(default=600.0, gt=0)
    escalate: bool = True

    @field_validator("webhook_secrets", "allowed_repos", "gpu_kinds", mode="before")
    @classmethod
    def _split_lists(cls, value: Any) -> Any:
        return _csv(value)

    @field_validator("bisect_find_links", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: Any) -> Any:
        # Compose passes an unset variable on as "", which must not mean the current folder.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("link_secret")
    @classmethod
    def _real_link_secret(cls, value: SecretStr | None) -> SecretStr | None:
        return None if value is None else _real_secret(value, "the link secret")

    @field_validator("webhook_secrets")
    @classmethod
    def _real_secrets(cls, value: list[SecretStr]) -> list[SecretStr]:
        return [_real_secret(secret, "a webhook secret") for secret in value]

    @field_validator("gpu_kinds")
    @classmethod
    def _gpu_kinds(cls, value: list[str]) -> list[str]:
        for kind in value:
            if not _GPU_KIND.fullmatch(kind):
                raise ValueError(f"GPU kind {kind!r} must match {_GPU_KIND.pattern}")
        return value

    @field_validator("app_slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not _SLUG.fullmatch(value):
            raise ValueError(f"app slug {value!r} must match {_SLUG.pattern}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if self.visibility_timeout_s <= self.job_time_limit_s:
            raise ValueError("visibility_timeout_s must exceed job_time_limit_s, or Redis hands "
                             "a running job to a second worker")
        if self.default_gpu not in self.gpu_kinds:
            raise ValueError(f"default_gpu {self.default_gpu!r} is not one of gpu_kinds "
                             f"{self.gpu_kinds}")
        if self.unverified_body_budget_bytes < self.max_body_bytes:
            raise ValueError("unverified_body_budget_bytes must be at least max_body_bytes, or "
                             "the largest delivery could never be read")
        if self.heartbeat_s * 2 > self.lock_ttl_s:
            raise ValueError("heartbeat_s must be at most half of lock_ttl_s")
        return self

    # --- derived -------------------------------------------------------------------------
    @property
    def bot_login(self) -> str:
        """The login GitHub gives the App's comments."""
        return f"{self.app_slug}[bot]"

    @property
    def github_web_host(self) -> str:
        """The host of the GitHub whose API this reads, as its pages name it: github.com
        for api.github.com, HOST for GitHub Enterprise Server's https://HOST/api/v3."""
        host = urllib.parse.urlsplit(self.github_api_url).netloc.lower()
        return host.removeprefix("api.")

    def thread_url(self, repo: str, number: int, is_pr: bool = False) -> str:
        """The page of an issue or pull request on that GitHub (the one `triagebot repro
        URL` reads there)."""
        scheme = urllib.parse.urlsplit(self.github_api_url).scheme or "https"
        kind = "pull" if is_pr else "issues"
        return f"{scheme}://{self.github_web_host}/{repo}/{kind}/{number}"

    def queue_for(self, gpu_kind: str) -> str:
        return f"gpu-{gpu_kind}"

    @property
    def celery_key_prefix(self) -> str:
        """What Kombu puts before every key it writes, queue lists included, so deployments
        sharing a Redis (and test sessions) never consume each other's queues."""
        return f"{self.namespace}:celery:"

    def key(self, *parts: str) -> str:
        """A Redis key inside this deployment's namespace."""
        return ":".join((self.namespace, *parts))

    @cached_property
    def private_key_pem(self) -> str:
        if self.app_private_key is not None:
            return self.app_private_key.get_secret_value()
        if self.app_private_key_file is not None:
            try:
                return self.app_private_key_file.read_text()
            except OSError as exc:
                raise SettingsError(f"TRIAGEBOT_APP_PRIVATE_KEY_FILE: cannot read "
                                    f"{self.app_private_key_file}: {exc.strerror}") from None
        raise SettingsError("TRIAGEBOT_APP_PRIVATE_KEY or TRIAGEBOT_APP_PRIVATE_KEY_FILE is "
                            "required to act as the GitHub App")

    def require_webhook(self) -> None:
        """The ingress refuses to start without a secret: an unsigned webhook is fail-open."""
        if not self.webhook_secrets:
            raise SettingsError("TRIAGEBOT_WEBHOOK_SECRETS is required (comma-separated; two "
                                "while rotating)")

    @property
    def link_key(self) -> bytes:
        """The key of job ids and page links: `link_secret`, else the first webhook secret."""
        secret = self.link_secret or (self.webhook_secrets[0] if self.webhook_secrets else None)
        if secret is None:
            raise SettingsError("TRIAGEBOT_LINK_SECRET or TRIAGEBOT_WEBHOOK_SECRETS is required "
                                "to make job ids and page links")
        return secret.get_secret_value().encode()

    def require_app(self) -> None:
        """The triage side posts as the App: it needs the id and the private key."""
        if self.app_id is None:
            raise SettingsError("TRIAGEBOT_APP_ID is required to act as the GitHub App")
        _ = self.private_key_pem


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (and `.env`), with keyword overrides on top."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise SettingsError(describe(exc)) from None
    except ValueError as exc:
        raise SettingsError(str(exc)) from None


def describe(exc: ValidationError) -> str:
    """What is wrong, variable by variable, without the values: pydantic's own message
    quotes the input, which for a secret or a key prints it to a log."""
    lines = []
    for error in exc.errors(include_url=False, include_input=False):
        message = str(error["msg"]).removeprefix("Value error, ")
        name = next((str(part) for part in error["loc"] if isinstance(part, str)), "")
        lines.append(f"TRIAGEBOT_{name.upper()}: {message}" if name else message)
    return "; ".join(lines)
