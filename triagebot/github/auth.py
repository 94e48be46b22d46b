"""PyGithub clients aimed at `settings.github_api_url`: as an App installation, or with a token.

An installation token is minted here from the App's JWT, asking only for the permissions
its calls need (`TOKEN_PERMISSIONS`; `TEAM_PERMISSIONS` adds `members: read` for team
checks, which only `[access] teams` needs), and minted again a minute before it expires.
A mint GitHub refuses (404: the App is not installed there, 422: a permission it was not
granted) is a `GitHubError` marked `token` that says so: a call without a token failed,
it did not find that its resource is absent. A token GitHub refuses earlier (revoked,
clock skew) is handled by `Calls`, which asks `connect()` for a fresh client. PyGithub's
retry is off here (`retry=None`); `Calls` owns retries.
"""

from __future__ import annotations

import functools
import time
from typing import Any, cast

import jwt
from github import Auth, Github, GithubIntegration
from jwt.algorithms import RSAAlgorithm

from triagebot.github.calls import RetryPolicy
from triagebot.github.errors import GitHubError, classify
from triagebot.settings import Settings, SettingsError

# What every call of the App needs: read threads and files, comment, react, label.
# Asked for explicitly so a token never carries more than this.
TOKEN_PERMISSIONS = {"issues": "write", "pull_requests": "write", "contents": "read",
                     "metadata": "read"}
# Team membership (`[access] teams`) needs organisation members too; an App installed
# without that permission serves every other call.
TEAM_PERMISSIONS = {**TOKEN_PERMISSIONS, "members": "read"}
# A token is replaced this long before it expires, so none runs out during a call (and
# PyGithub, which would mint 20 s before, never does it behind our back).
REFRESH_MARGIN_S = 60.0

USER_AGENT = "triagebot"
PER_PAGE = 100


def _client_kwargs(settings: Settings, policy: RetryPolicy) -> dict[str, Any]:
    return {
        "base_url": settings.github_api_url.rstrip("/"),
        "timeout": policy.timeout_s,
        "user_agent": USER_AGENT,
        "per_page": PER_PAGE,
        "retry": None,
        "seconds_between_requests": policy.seconds_between_requests,
        "seconds_between_writes": policy.seconds_between_writes,
        # Objects are built from URLs without a request; `complete()` fetches explicitly.
        "lazy": True,
    }


@functools.lru_cache(maxsize=4)
def _signing_key(pem: str) -> Any:
    # Parsing and checking an RSA key costs about 0.1 s; PyGithub, given the PEM text,
    # would do it again for every JWT it signs.
    try:
        return RSAAlgorithm(RSAAlgorithm.SHA256).prepare_key(pem)
    except (ValueError, TypeError, jwt.InvalidKeyError):
        raise SettingsError("the App private key is not an RSA private key in PEM form") \
            from None


def _app_auth(settings: Settings) -> Auth.AppAuth:
    """The App's JWT signer; a SettingsError naming what is missing or unusable."""
    settings.require_app()
    key = _signing_key(settings.private_key_pem)
    return Auth.AppAuth(cast(int, settings.app_id),
                        sign_func=lambda claims: jwt.encode(claims, key, "RS256"))


def app_problem(settings: Settings, policy: RetryPolicy | None = None) -> str | None:
    """None when GitHub accepts the App's id and private key (`GET /app` with its JWT);
    otherwise what is wrong, in words that hold no secret. A worker that cannot act as the
    App is not ready, and says why."""
    policy = policy or RetryPolicy()
    try:
        integration = GithubIntegration(auth=_app_auth(settings),
                                        **_client_kwargs(settings, policy))
    except SettingsError as exc:
        return str(exc)
    try:
        integration.get_app()
    except Exception as exc:
        err = classify(exc, f"GitHub App {settings.app_id} at {settings.github_api_url}",
                       time.time())
        if err is None:
            return f"cannot ask GitHub about the App ({type(exc).__name__})"
        if err.status == 401:
            return (f"{err}: GitHub refused the App's JWT (TRIAGEBOT_APP_ID or the private "
                    "key is not this App's, or the clock is off)")
        return str(err)
    finally:
        integration.close()
    return None


class InstallationConnector:
    """Clients acting as one installation of the App, with tokens for `permissions`."""

    refreshable = True

    def __init__(self, settings: Settings, installation_id: int, policy: RetryPolicy,
                 permissions: dict[str, str] | None = None) -> None:
        self._kwargs = _client_kwargs(settings, policy)
        self._integration = GithubIntegration(auth=_app_auth(settings), **self._kwargs)
        self._installation_id = installation_id
        self._permissions = dict(permissions or TOKEN_PERMISSIONS)
        self._reset_margin_s = policy.reset_margin_s
        self._expires_at = 0.0

    def connect(self) -> Github:
        try:
            granted = self._integration.get_access_token(self._installation_id,
                                                         dict(self._permissions))
        except Exception as exc:
            raise self._mint_error(exc) from exc
        expires = granted.expires_at
        self._expires_at = expires.timestamp() if expires else time.time() + 3600
        return Github(auth=Auth.Token(granted.token), **self._kwargs)

    def stale(self) -> bool:
        return time.time() >= self._expires_at - REFRESH_MARGIN_S

    def close(self) -> None:
        self._integration.close()

    def _mint_error(self, exc: Exception) -> Exception:
        what = f"installation token for installation {self._installation_id}"
        err = classify(exc, what, time.time(), self._reset_margin_s)
        if err is None:
            return exc
        why = {
            401: "GitHub refused the App's JWT: TRIAGEBOT_APP_ID or the private key is "
                 "not this App's, or the clock is off by more than a minute",
            403: "the installation is suspended, or the App may not act there",
            404: "the App is not installed there (uninstalled, or TRIAGEBOT_APP_ID names "
                 "another App)",
            422: f"the installation does not grant every permission asked "
                 f"({_listed(self._permissions)}); grant it in the App's settings and "
                 "accept it on the installation"
                 + ("; members: read is only for [access] teams in "
                    ".github/triagebot.toml" if "members" in self._permissions else ""),
        }.get(err.status or 0)
        if why is None or err.transient:
            return GitHubError(str(err), status=err.status, transient=err.transient,
                               retry_after_s=err.retry_after_s,
                               rate_limited=err.rate_limited, token=True)
        return GitHubError(f"{err}: {why}", status=err.status, token=True)


def _listed(permissions: dict[str, str]) -> str:
    return ", ".join(f"{name}: {level}" for name, level in permissions.items())


class TokenConnector:
    """Clients with a personal access token, or anonymous (public repositories only)."""

    refreshable = False

    def __init__(self, settings: Settings, token: str | None, policy: RetryPolicy) -> None:
        self._auth = Auth.Token(token) if token else None
        self._kwargs = _client_kwargs(settings, policy)

    def connect(self) -> Github:
        return Github(auth=self._auth, **self._kwargs)

    def stale(self) -> bool:
        return False

    def close(self) -> None:
        pass
