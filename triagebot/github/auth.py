"""PyGithub clients aimed at `settings.github_api_url`: as an App installation, or with a token.

Installation tokens come from PyGithub's `AppInstallationAuth`, which mints one from the
App's JWT on first use and again 20 s before it expires. A token GitHub refuses earlier
(revoked, clock skew) is handled by `Calls`, which asks `connect()` for a fresh client.
PyGithub's retry is off here (`retry=None`); `Calls` owns retries.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import jwt
from github import Auth, Github, GithubIntegration
from jwt.algorithms import RSAAlgorithm

from triagebot.github.calls import RetryPolicy
from triagebot.settings import Settings, SettingsError

# The least the App needs: read threads and files, comment, react, label, read team
# membership. Asked for explicitly so a token never carries more than this.
TOKEN_PERMISSIONS = {"issues": "write", "pull_requests": "write", "contents": "read",
                     "metadata": "read", "members": "read"}
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


class InstallationConnector:
    """Clients acting as one installation of the App."""

    refreshable = True

    def __init__(self, settings: Settings, installation_id: int, policy: RetryPolicy) -> None:
        settings.require_app()  # a SettingsError naming what is missing
        key = _signing_key(settings.private_key_pem)
        app_auth = Auth.AppAuth(cast(int, settings.app_id),
                                sign_func=lambda claims: jwt.encode(claims, key, "RS256"))
        self._integration = GithubIntegration(auth=app_auth, **_client_kwargs(settings, policy))
        self._installation_id = installation_id

    def connect(self) -> Github:
        return self._integration.get_github_for_installation(self._installation_id,
                                                             dict(TOKEN_PERMISSIONS))

    def close(self) -> None:
        self._integration.close()


class TokenConnector:
    """Clients with a personal access token, or anonymous (public repositories only)."""

    refreshable = False

    def __init__(self, settings: Settings, token: str | None, policy: RetryPolicy) -> None:
        self._auth = Auth.Token(token) if token else None
        self._kwargs = _client_kwargs(settings, policy)

    def connect(self) -> Github:
        return Github(auth=self._auth, **self._kwargs)

    def close(self) -> None:
        pass
