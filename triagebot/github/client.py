"""GitHubClient: the calls triagebot makes to GitHub, each with retries and rate limits.

One client per task (it is not thread-safe). Names that reach a URL are checked against
GitHub's own rules first, so text from an issue cannot steer a request elsewhere.
"""

from __future__ import annotations

import logging
import re
import time
import urllib.parse
from collections.abc import Callable
from types import TracebackType
from typing import Any

from github.ContentFile import ContentFile
from pydantic import BaseModel, ConfigDict

from triagebot.github import comments, issues, thread
from triagebot.github.auth import TEAM_PERMISSIONS, InstallationConnector, TokenConnector
from triagebot.github.calls import Calls, Connector, RetryPolicy, WriteTurns
from triagebot.github.compare import commit_files as read_commit_files
from triagebot.github.compare import compare as read_compare
from triagebot.github.errors import GitHubError
from triagebot.github.models import Thread
from triagebot.settings import Settings

LEVELS = ("admin", "maintain", "write", "triage", "read", "none")
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
_REPO = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}", re.ASCII)
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?", re.ASCII)
_SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", re.ASCII)
_PATH_PART = re.compile(r"[A-Za-z0-9._-]{1,255}", re.ASCII)
_LABEL_CHARS = 50
_log = logging.getLogger(__name__)


class _Permission(BaseModel):
    model_config = ConfigDict(extra="ignore")

    permission: str
    role_name: str | None = None


class _Membership(BaseModel):
    model_config = ConfigDict(extra="ignore")

    state: str


class GitHubClient:
    def __init__(self, settings: Settings, connector: Connector, *,
                 sleep: Callable[[float], None] = time.sleep,
                 policy: RetryPolicy | None = None,
                 team_connector: Connector | None = None,
                 turns: WriteTurns | None = None) -> None:
        self._settings = settings
        self._policy = policy or RetryPolicy()
        self._sleep = sleep
        self._turns = turns
        self._calls = self._calls_for(connector)
        # Team checks need a token with members: read; asked for only when one is made.
        self._team_connector = team_connector
        self._team_calls: Calls | None = None

    def _calls_for(self, connector: Connector) -> Calls:
        return Calls(connector, policy=self._policy,
                     max_wait_s=self._settings.max_rate_limit_wait_s, sleep=self._sleep,
                     turns=self._turns)

    @classmethod
    def for_installation(cls, settings: Settings, installation_id: int,
                         sleep: Callable[[float], None] = time.sleep, *,
                         policy: RetryPolicy | None = None,
                         turns: WriteTurns | None = None) -> GitHubClient:
        """Acting as the App's installation; the token is minted and refreshed as needed,
        with `members: read` only for team checks. With `turns`, every write waits for
        the installation's turn (the service shares them across processes)."""
        policy = policy or RetryPolicy()
        return cls(settings, InstallationConnector(settings, installation_id, policy),
                   sleep=sleep, policy=policy,
                   team_connector=InstallationConnector(settings, installation_id, policy,
                                                        TEAM_PERMISSIONS), turns=turns)

    @classmethod
    def with_token(cls, settings: Settings, token: str | None,
                   sleep: Callable[[float], None] = time.sleep, *,
                   policy: RetryPolicy | None = None) -> GitHubClient:
        """With a personal access token, or anonymously when `token` is None (the CLI)."""
        policy = policy or RetryPolicy()
        return cls(settings, TokenConnector(settings, token, policy), sleep=sleep,
                   policy=policy)

    def close(self) -> None:
        self._calls.close()
        if self._team_calls is not None:
            self._team_calls.close()
        elif self._team_connector is not None:
            self._team_connector.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- reading ------------------------------------------------------------------------
    def read_thread(self, repo: str, number: int, max_comments: int = 300) -> Thread:
        """The issue or pull request with its first `max_comments` comments."""
        return thread.read_thread(self._calls, _repo(repo), _number(number), max_comments)

    def permission(self, repo: str, login: str) -> str:
        """admin, maintain, write, triage, read or none. The role name wins when it is one
        of these (it tells maintain from write); a custom role falls back to `permission`."""
        path = (f"/repos/{_repo(repo)}/collaborators/"
                f"{urllib.parse.quote(_login(login), safe='')}/permission")
        data = self._calls.get_json(f"permission of {login} on {repo}", path)
        if data is None:
            return "none"
        answer = _Permission.model_validate(data)
        if answer.role_name in LEVELS:
            return answer.role_name
        return answer.permission if answer.permission in LEVELS else "none"

    def in_team(self, org: str, team: str, login: str) -> bool:
        """Whether `login` is an active member of the team `org/team`."""
        path = (f"/orgs/{_slug(org)}/teams/{_slug(team)}/memberships/"
                f"{urllib.parse.quote(_login(login), safe='')}")
        if self._team_calls is None and self._team_connector is not None:
            self._team_calls = self._calls_for(self._team_connector)
        calls = self._team_calls or self._calls
        data = calls.get_json(f"membership of {login} in {org}/{team}", path)
        return data is not None and _Membership.model_validate(data).state == "active"

    def file_text(self, repo: str, path: str, max_bytes: int = 65536) -> str | None:
        """A UTF-8 file from the default branch; None when it does not exist."""
        what = f"read {path} in {repo}"
        name, where = _repo(repo), _path(path)
        try:
            found = self._calls.retried(
                what, lambda gh: gh.get_repo(name).get_contents(where))
        except GitHubError as err:
            if err.not_found:
                return None
            raise
        if not isinstance(found, ContentFile) or found.type != "file":
            raise GitHubError(f"{what}: not a file")
        if found.size > max_bytes:
            raise GitHubError(f"{what}: {found.size} bytes, more than the {max_bytes} "
                              "accepted")
        if found.encoding != "base64":
            # The contents API inlines files up to 1 MB; above that the content is empty.
            raise GitHubError(f"{what}: {found.size} bytes, too big for the contents API")
        try:
            return found.decoded_content.decode("utf-8")
        except ValueError:
            raise GitHubError(f"{what}: not UTF-8 text") from None

    def compare_commits(self, repo: str, base: str, head: str, *,
                        with_files: int = 40) -> list[dict[str, Any]] | None:
        """The commits between two refs, oldest first, as {"sha", "title", "url", "date",
        "parents", "files"} (date: when it was committed to the branch); the changed
        paths of the newest `with_files` (one call each: the
        compare answer carries only the sum). None when a ref does not exist."""
        found = self.compare(repo, base, head, with_files=with_files)
        return None if found is None else found[2]

    def compare(self, repo: str, base: str, head: str, *, with_files: int = 40
                ) -> tuple[str, str, list[dict[str, Any]]] | None:
        """`compare_commits` with GitHub's status of head against base ("ahead",
        "behind", "identical", "diverged") and base's full SHA. Read whole or refused:
        see `triagebot.github.compare`."""
        return read_compare(self._calls, _repo(repo), base, head, with_files=with_files)

    def commit_files(self, repo: str, sha: str) -> list[str]:
        """The paths a commit changed, from every page of its file list (GitHub lists at
        most 3,000); empty where the commit is unknown."""
        return read_commit_files(self._calls, _repo(repo), sha)

    def find_marked(self, repo: str, number: int, key: str) -> int | None:
        """The id of our comment carrying marker(key); others' comments never count."""
        found = comments.find_marked(self._calls, _repo(repo), _number(number), key,
                                     self._settings.bot_login)
        return found.id if found is not None else None

    # --- writing ------------------------------------------------------------------------
    def upsert_comment(self, repo: str, number: int, key: str, body: str,
                       comment_id: int | None = None) -> int:
        """Create or edit the one comment for `key`; its first line is marker(key).

        With `comment_id`, that comment is edited; if it was deleted, the marker is looked
        up and, failing that, the comment is created again (once). A create is never
        repeated blindly. Returns the comment id."""
        return comments.upsert_comment(self._calls, _repo(repo), _number(number), key, body,
                                       self._settings.bot_login, comment_id)

    def open_issue(self, repo: str, title: str, key: str, body: str, label: str) -> int:
        """Open an issue whose body opens with marker(key), labelled `label`; a POST
        that may have landed is looked for before another. Returns its number."""
        return issues.open_issue(self._calls, _repo(repo), title[:256], key, body, label,
                                 self._settings.bot_login)

    def find_issue(self, repo: str, label: str, key: str) -> int | None:
        """Our open issue labelled `label` whose body carries marker(key), if any."""
        return issues.find_issue(self._calls, _repo(repo), label, key,
                                 self._settings.bot_login)

    def edit_issue_body(self, repo: str, number: int, key: str, body: str) -> None:
        """Rewrite the body of an issue the App opened (its marker stays first)."""
        issues.edit_body(self._calls, _repo(repo), _number(number), key, body)

    def react(self, repo: str, comment_id: int, content: str) -> None:
        """Add a reaction to an issue comment; adding the same one twice is harmless, and
        so is reacting to a comment that was deleted meanwhile."""
        if content not in REACTIONS:
            raise ValueError(f"reaction {content!r} is not one of {sorted(REACTIONS)}")
        path = f"/repos/{_repo(repo)}/issues/comments/{_number(comment_id)}/reactions"
        try:
            self._calls.retried(f"react {content} to comment {comment_id} in {repo}",
                                lambda gh: gh.requester.requestJsonAndCheck(
                                    "POST", path, input={"content": content}), write=True)
        except GitHubError as err:
            if not err.not_found or err.token:
                raise
            # The comment was deleted: there is nothing left to mark, and nothing failed.
            _log.info("react %s: comment %d in %s is gone", content, comment_id, repo)

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        """Add labels (created by GitHub if the repo lacks them); existing ones stay."""
        for label in labels:
            if not label or len(label) > _LABEL_CHARS or "," in label:
                raise ValueError(f"label {label!r} must be 1-{_LABEL_CHARS} characters "
                                 "without commas")
        if not labels:
            return
        name, issue = _repo(repo), _number(number)
        self._calls.retried(f"label {repo}#{number}",
                            lambda gh: gh.get_repo(name).get_issue(issue)
                            .add_to_labels(*labels), write=True)

    # --- helpers ------------------------------------------------------------------------


def _repo(repo: str) -> str:
    if not _REPO.fullmatch(repo) or repo.split("/")[1] in (".", ".."):
        raise ValueError(f"repository {repo!r} is not OWNER/NAME")
    return repo


def _login(login: str) -> str:
    if not _LOGIN.fullmatch(login):
        raise ValueError(f"{login!r} is not a GitHub login")
    return login


def _slug(name: str) -> str:
    if not _SLUG.fullmatch(name):
        raise ValueError(f"{name!r} is not an organisation or team name")
    return name


def _number(number: int) -> int:
    if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
        raise ValueError(f"{number!r} is not an issue, pull request or comment number")
    return number


def _path(path: str) -> str:
    parts = path.split("/")
    if not all(_PATH_PART.fullmatch(p) and p not in (".", "..") for p in parts):
        raise ValueError(f"{path!r} is not a relative file path")
    return path
