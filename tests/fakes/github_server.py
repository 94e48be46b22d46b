"""A fake GitHub REST API on 127.0.0.1, reached by PyGithub through its `base_url`.

It implements only the endpoints triagebot uses, answers with the JSON shapes PyGithub
reads, and records every call in `calls`. Any other route answers 404 and is appended to
`unexpected`; the `fake_github` fixture fails the test when that list is not empty.

Authentication is checked the way GitHub does it: the App signs an RS256 JWT with the key
generated here (`private_key_pem`) to mint installation tokens (and to read `GET /app`),
a token may ask only for permissions its installation granted (`add_installation(...,
permissions=)`, 422 otherwise; `remove_installation` uninstalls the App, 404), and
repository endpoints want `Authorization: token <unexpired token>`. Faults (`fail`), rate
limits that answer `retry-after` or `x-ratelimit-reset` and list requests that came back
too early (`rate_limit`, `too_early`), a delay for every call (`delay`), token lifetime
(`token_ttl_s`) and revocation (`expire_tokens`) drive the retry, rate-limit and
token-refresh tests. Lists are paged as GitHub pages them: comments, a comparison (at
most the newest 250 commits unpaged) and a commit's files.

Paths in `calls`, `unexpected` and `fail(path_regex=...)` are decoded and relative to
`/api/v3`, e.g. `/repos/acme/engine/issues/1/comments`.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import re
import secrets
import threading
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

API_PREFIX = "/api/v3"
JWT_LEEWAY_S = 60
JWT_MAX_LIFETIME_S = 600
# What the App was granted at installation; a token may ask for less, never more.
APP_PERMISSIONS = {"issues": "write", "pull_requests": "write", "contents": "read",
                   "metadata": "read", "members": "read"}
# GitHub's `permission` field only knows admin/write/read/none; `role_name` says more.
LEGACY_PERMISSION = {"admin": "admin", "maintain": "write", "write": "write",
                     "triage": "read", "read": "read", "none": "none"}
REACTIONS = {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}
# Files above this come back without content, as GitHub's contents API does (1 MB).
INLINE_CONTENT_LIMIT = 1024 * 1024
_LEVEL = {"read": 1, "write": 2, "admin": 3}
# An unpaged compare lists at most this many commits, the newest (GitHub's limit).
COMPARE_UNPAGED = 250
# A commit's changed files: this many a page, and at most this many in all.
COMMIT_FILES_PAGE = 300
COMMIT_FILES_MAX = 3000


@dataclass(frozen=True)
class Call:
    """One request the fake received, with the status it answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    time: float  # time.monotonic() when the request arrived
    wall: float  # time.time() when the request arrived
    status: int  # 0: the connection was dropped without an answer
    auth: str  # "none" | "jwt" | "token" | "other"


@dataclass
class FakeComment:
    id: int
    repo: str
    number: int
    body: str
    author: str
    author_type: str
    created_at: str
    updated_at: str


@dataclass
class _Issue:
    id: int
    number: int
    title: str
    body: str
    author: str
    author_type: str
    is_pr: bool
    head_sha: str | None
    head_ref: str | None
    base_ref: str
    labels: list[str]
    created_at: str
    state: str = "open"


@dataclass
class _Repo:
    full: str
    id: int
    default_branch: str
    private: bool
    issues: dict[int, _Issue] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    # login -> (permission as set, role_name)
    permissions: dict[str, tuple[str, str]] = field(default_factory=dict)
    # "base...head" -> commits oldest first, each {"sha", "message", "files": [paths]}
    compares: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    compare_meta: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class _Token:
    installation_id: int
    expires_at: float
    permissions: dict[str, str]


@dataclass
class _Limit:
    """A rate limit on matching requests until `until` (time.time())."""

    method: str
    pattern: re.Pattern[str]
    seconds: float
    status: int
    primary: bool
    until: float | None = None  # set by the first request it refuses


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    body: Any
    apply: bool


@dataclass
class _Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Who:
    kind: str  # none | jwt | installation | pat | invalid
    login: str | None = None
    user_type: str = "User"
    installation_id: int | None = None
    raw: str = ""


@functools.cache
def _app_key() -> rsa.RSAPrivateKey:
    # One key per test process: generating a 2048-bit key costs about 0.1 s per fake.
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _now_iso(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _message(text: str) -> dict[str, str]:
    return {"message": text, "documentation_url": "https://docs.github.com/rest"}


_DEFAULT_MESSAGES = {401: "Bad credentials", 403: "Forbidden", 404: "Not Found",
                     422: "Validation Failed", 429: "Too many requests"}


class FakeGitHub:
    """A fake GitHub REST API; see the module docstring."""

    def __init__(self, app_id: int = 4242, app_slug: str = "triagebot") -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self.bot_login = f"{app_slug}[bot]"
        key = _app_key()
        self.private_key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()).decode()
        self._public_key = key.public_key()
        self.token_ttl_s: float = 3600.0
        # Link headers use this base instead of our own when set (foreign-host tests).
        self.link_base: str | None = None
        # Commits of a comparison past this many are never listed (None: all are).
        self.compare_listing_limit: int | None = None
        self._lock = threading.RLock()
        self._ids = itertools.count(1001)
        self._user_ids: dict[str, int] = {}
        self._repos: dict[str, _Repo] = {}
        self._installations: dict[int, set[str]] = {}
        self._granted: dict[int, dict[str, str]] = {}
        self._tokens: dict[str, _Token] = {}
        self._pats: dict[str, str] = {}
        self._comments: dict[int, FakeComment] = {}
        self._reactions: dict[int, list[tuple[str, str]]] = {}
        self._teams: dict[tuple[str, str], dict[str, str]] = {}
        self._faults: list[_Fault] = []
        self._limits: list[_Limit] = []
        self._too_early: list[Call] = []
        self._delay_s = 0.0
        # Installation-token requests being answered now, and the most there ever were.
        self._in_flight = 0
        self._max_in_flight = 0
        self._calls: list[Call] = []
        self._unexpected: list[Call] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------
    def start(self) -> FakeGitHub:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        # A short poll keeps stop() (and so every test's teardown) quick.
        self._thread = threading.Thread(target=server.serve_forever, args=(0.02,),
                                        name="fake-github", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeGitHub is not started")
        return int(self._server.server_address[1])

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.web_url}{API_PREFIX}"

    # --- state --------------------------------------------------------------------------
    def add_repo(self, repo: str, default_branch: str = "main", private: bool = False) -> None:
        with self._lock:
            self._repos[repo] = _Repo(repo, next(self._ids), default_branch, private)

    def add_installation(self, installation_id: int, repos: Iterable[str],
                         permissions: dict[str, str] | None = None) -> None:
        """The App installed on `repos`, granted `permissions` (default APP_PERMISSIONS):
        a token that asks for more is refused with 422, as GitHub refuses it."""
        with self._lock:
            names = set(repos)
            for name in names - set(self._repos):
                self.add_repo(name)
            self._installations[installation_id] = names
            self._granted[installation_id] = dict(
                APP_PERMISSIONS if permissions is None else permissions)

    def remove_installation(self, installation_id: int) -> None:
        """The App uninstalled: minting a token for it answers 404, old tokens stop."""
        with self._lock:
            self._installations.pop(installation_id, None)
            for token in self._tokens.values():
                if token.installation_id == installation_id:
                    token.expires_at = time.time() - 1

    def add_pat(self, token: str, login: str) -> None:
        """A personal access token acting as `login` on every repository."""
        with self._lock:
            self._pats[token] = login

    def add_issue(self, repo: str, number: int, title: str, body: str, author: str = "alice",
                  author_type: str = "User", is_pr: bool = False, head_sha: str | None = None,
                  head_ref: str | None = None, base_ref: str = "main",
                  labels: Iterable[str] = ()) -> None:
        with self._lock:
            self._repo(repo).issues[number] = _Issue(
                next(self._ids), number, title, body, author, author_type, is_pr, head_sha,
                head_ref, base_ref, list(labels), _now_iso())

    def add_comment(self, repo: str, number: int, body: str, author: str,
                    author_type: str = "User", comment_id: int | None = None) -> int:
        """A comment by someone else; `comment_id` matches a webhook payload's comment."""
        with self._lock:
            self._issue(repo, number)
            if comment_id is not None and comment_id in self._comments:
                raise ValueError(f"comment {comment_id} exists already")
            return self._create_comment(repo, number, body, author, author_type,
                                        comment_id).id

    def delete_comment(self, comment_id: int) -> None:
        """What a person deleting the comment in the web UI does."""
        with self._lock:
            del self._comments[comment_id]

    def set_permission(self, repo: str, login: str, permission: str,
                       role_name: str | None = None) -> None:
        if permission not in LEGACY_PERMISSION:
            raise ValueError(f"permission must be one of {sorted(LEGACY_PERMISSION)}")
        with self._lock:
            self._repo(repo).permissions[login] = (permission, role_name or permission)

    def add_compare(self, repo: str, base: str, head: str,
                    commits: list[dict[str, Any]], *, status: str = "ahead",
                    base_sha: str = "") -> None:
        """What the compare API lists between two refs: {"sha", "message", "files"} and
        optionally "date" (ISO) and "parents" (default: the commit listed before); with
        head's `status` against base and base's full SHA."""
        with self._lock:
            self._repos[repo].compares[f"{base}...{head}"] = commits
            self._repos[repo].compare_meta[f"{base}...{head}"] = (status, base_sha)

    def set_file(self, repo: str, path: str, text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        with self._lock:
            self._repo(repo).files[path.strip("/")] = data

    def add_team_member(self, org: str, team_slug: str, login: str,
                        state: str = "active") -> None:
        with self._lock:
            self._teams.setdefault((org, team_slug), {})[login] = state

    def expire_tokens(self) -> None:
        """Every installation token issued so far stops working (expired or revoked)."""
        with self._lock:
            for token in self._tokens.values():
                token.expires_at = time.time() - 1

    # --- faults -------------------------------------------------------------------------
    def fail(self, method: str, path_regex: str, status: int, times: int = 1,
             headers: dict[str, str] | None = None, body: Any = None,
             apply: bool = False) -> None:
        """The next `times` requests matching `method` and `path_regex` (a full match of the
        decoded path below /api/v3) answer `status`. Status 0 drops the connection without
        an answer. With `apply`, the request is carried out and stored first, and the error
        is answered anyway: GitHub's ambiguous 502 after the comment was created."""
        default = _message(_DEFAULT_MESSAGES.get(status, "Server Error"))
        with self._lock:
            self._faults.append(_Fault(method.upper(), re.compile(path_regex), status, times,
                                       dict(headers or {}), default if body is None else body,
                                       apply))

    def rate_limit(self, method: str, path_regex: str, retry_after_s: float, *,
                   status: int = 403, primary: bool = False) -> None:
        """The next request matching `method` and `path_regex`, and every one after it
        for `retry_after_s`, is refused as GitHub refuses an integration over its limit:
        the secondary limit's message and `retry-after` (the seconds left), or with
        `primary` `x-ratelimit-remaining: 0` and `x-ratelimit-reset`. A request that comes
        back inside that window is listed in `too_early`: GitHub says an integration that
        keeps going while limited may be banned."""
        with self._lock:
            self._limits.append(_Limit(method.upper(), re.compile(path_regex),
                                       retry_after_s, status, primary))

    @property
    def too_early(self) -> list[Call]:
        with self._lock:
            return list(self._too_early)

    def _limited(self, method: str, rel: str, now: float) -> tuple[_Reply | None, bool]:
        """The rate-limit answer for a request, and whether it came back too early."""
        for limit in self._limits:
            if limit.method != method or not limit.pattern.fullmatch(rel) \
                    or (limit.until is not None and now >= limit.until):
                continue
            early = limit.until is not None
            if limit.until is None:
                limit.until = now + limit.seconds
            left = max(1, int(limit.until - now + 0.999))
            if limit.primary:
                headers = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                           "x-ratelimit-reset": str(int(limit.until + 0.999))}
                text = "API rate limit exceeded for installation."
            else:
                headers = {"retry-after": str(left)}
                text = "You have exceeded a secondary rate limit. Please wait a few minutes."
            return _Reply(limit.status, _message(text), headers), early
        return None, False

    def delay(self, seconds: float) -> None:
        """Every later call waits this long before it is handled."""
        with self._lock:
            self._delay_s = seconds

    # --- readers ------------------------------------------------------------------------
    @property
    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    @property
    def max_in_flight(self) -> int:
        """The most requests made with installation tokens that were answered at once."""
        with self._lock:
            return self._max_in_flight

    @property
    def unexpected(self) -> list[Call]:
        with self._lock:
            return list(self._unexpected)

    def calls_to(self, method: str, path_regex: str) -> list[Call]:
        pattern = re.compile(path_regex)
        return [c for c in self.calls if c.method == method.upper()
                and pattern.fullmatch(c.path)]

    def comments(self, repo: str, number: int) -> list[FakeComment]:
        with self._lock:
            return [replace(c) for c in self._comments.values()
                    if c.repo == repo and c.number == number]

    def reactions(self, comment_id: int) -> list[tuple[str, str]]:
        """(login, content) pairs on a comment."""
        with self._lock:
            return list(self._reactions.get(comment_id, []))

    def labels(self, repo: str, number: int) -> list[str]:
        with self._lock:
            return list(self._issue(repo, number).labels)

    # --- request handling ---------------------------------------------------------------
    def handle(self, method: str, raw_path: str, query: dict[str, list[str]], raw_body: bytes,
               authorization: str | None) -> _Reply | None:
        """Answer one request; None means drop the connection."""
        arrived, wall = time.monotonic(), time.time()
        counted = _auth_kind(authorization) == "token"
        with self._lock:
            delay = self._delay_s
            if counted:
                self._in_flight += 1
                self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            return self._handle(method, raw_path, query, raw_body, authorization, delay,
                                (arrived, wall))
        finally:
            if counted:
                with self._lock:
                    self._in_flight -= 1

    def _handle(self, method: str, raw_path: str, query: dict[str, list[str]],
                raw_body: bytes, authorization: str | None, delay: float,
                when: tuple[float, float]) -> _Reply | None:
        arrived, wall = when
        if delay:
            time.sleep(delay)
        segments = [urllib.parse.unquote(s) for s in raw_path.split("/")]
        path = "/".join(segments)
        auth_kind = _auth_kind(authorization)
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = _BAD_JSON
        with self._lock:
            limited, early = self._limited(method, path.removeprefix(API_PREFIX), wall)
            reply, known = ((limited, True) if limited is not None else
                            self._answer(method, path, query, body, authorization))
            status = reply.status if reply is not None else 0
            call = Call(method, path.removeprefix(API_PREFIX), query,
                        None if body is _BAD_JSON else body, arrived, wall, status, auth_kind)
            self._calls.append(call)
            if early:
                self._too_early.append(call)
            if not known:
                self._unexpected.append(call)
        return reply

    def _answer(self, method: str, path: str, query: dict[str, list[str]], body: Any,
                authorization: str | None) -> tuple[_Reply | None, bool]:
        if not path.startswith(API_PREFIX + "/"):
            return _Reply(404, _message("Not Found")), False
        rel = path.removeprefix(API_PREFIX)
        fault = self._take_fault(method, rel)
        if fault is not None and not fault.apply:
            return self._fault_reply(fault), True
        if body is _BAD_JSON:
            return _Reply(400, _message("Problems parsing JSON")), True
        parts = rel.strip("/").split("/")
        reply = self._route(method, parts, query, body, self._who(authorization))
        if reply is None:
            return _Reply(404, _message("Not Found")), False
        if fault is not None:
            return self._fault_reply(fault), True
        return reply, True

    def _take_fault(self, method: str, rel: str) -> _Fault | None:
        for fault in self._faults:
            if fault.times > 0 and fault.method == method and fault.pattern.fullmatch(rel):
                fault.times -= 1
                return fault
        return None

    @staticmethod
    def _fault_reply(fault: _Fault) -> _Reply | None:
        if fault.status == 0:
            return None
        return _Reply(fault.status, fault.body, dict(fault.headers))

    def _who(self, authorization: str | None) -> _Who:
        if not authorization:
            return _Who("none")
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer":
            return _Who("jwt", raw=value)
        if scheme.lower() == "token":
            token = self._tokens.get(value)
            if token is not None and token.expires_at > time.time():
                return _Who("installation", self.bot_login, "Bot", token.installation_id)
            if value in self._pats:
                return _Who("pat", self._pats[value])
        return _Who("invalid")

    # --- routes -------------------------------------------------------------------------
    def _route(self, method: str, parts: list[str], query: dict[str, list[str]], body: Any,
               who: _Who) -> _Reply | None:
        if parts == ["app"] and method == "GET":
            return self._app(who)
        if parts[:2] == ["app", "installations"] and len(parts) == 4 \
                and parts[3] == "access_tokens" and method == "POST":
            return self._mint(parts[2], body, who)
        if parts[0] == "repos" and len(parts) >= 3:
            return self._repo_route(method, f"{parts[1]}/{parts[2]}", parts[3:], query, body,
                                    who)
        if parts[0] == "orgs" and len(parts) == 6 and parts[2] == "teams" \
                and parts[4] == "memberships" and method == "GET":
            return self._membership(parts[1], parts[3], parts[5], who)
        return None

    def _app(self, who: _Who) -> _Reply:
        """`GET /app`: the App itself, for its own JWT only."""
        problem = "A JSON web token could not be decoded" if who.kind != "jwt" \
            else self._check_jwt(who.raw)
        if problem:
            return _Reply(401, _message(problem))
        return _Reply(200, {"id": self.app_id, "slug": self.app_slug, "node_id": "A_x",
                            "name": self.app_slug, "owner": self._user_json("acme",
                                                                           "Organization"),
                            "permissions": dict(APP_PERMISSIONS),
                            "events": ["issue_comment", "issues", "pull_request"],
                            "html_url": f"{self.web_url}/apps/{self.app_slug}"})

    def _mint(self, installation: str, body: Any, who: _Who) -> _Reply:
        if who.kind != "jwt":
            return _Reply(401, _message("A JSON web token could not be decoded"))
        problem = self._check_jwt(who.raw)
        if problem:
            return _Reply(401, _message(problem))
        if not installation.isdigit() or int(installation) not in self._installations:
            return _Reply(404, _message("Not Found"))
        app = self._granted.get(int(installation), APP_PERMISSIONS)
        asked = (body or {}).get("permissions") or dict(app)
        for name, level in asked.items():
            granted = app.get(name)
            if granted is None or _LEVEL.get(level, 99) > _LEVEL[granted]:
                return _Reply(422, _message("The permissions requested are not granted to "
                                            "this installation."))
        token = "ghs_" + secrets.token_hex(18)
        expires = time.time() + self.token_ttl_s
        self._tokens[token] = _Token(int(installation), expires, dict(asked))
        return _Reply(201, {"token": token, "expires_at": _now_iso(expires),
                            "permissions": dict(asked), "repository_selection": "selected"})

    def _check_jwt(self, token: str) -> str | None:
        try:
            claims = jwt.decode(token, self._public_key, algorithms=["RS256"],
                                options={"verify_exp": False, "verify_iat": False,
                                         "verify_nbf": False})
        except jwt.PyJWTError:
            return "A JSON web token could not be decoded"
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if str(claims.get("iss")) != str(self.app_id):
            return "'Issuer' claim ('iss') must be an Integer"
        if not isinstance(iat, int) or not isinstance(exp, int):
            return "'Issued at' and 'Expiration time' claims are required"
        if iat > now + JWT_LEEWAY_S:
            return "'Issued at' claim ('iat') must be an Integer representing a time in the past"
        if exp < now - JWT_LEEWAY_S:
            return "'Expiration time' claim ('exp') must be a numeric value representing the " \
                   "future time at which the assertion expires"
        if exp > now + JWT_MAX_LIFETIME_S + JWT_LEEWAY_S:
            return "'Expiration time' claim ('exp') is too far in the future"
        return None

    def _repo_route(self, method: str, full: str, rest: list[str],
                    query: dict[str, list[str]], body: Any, who: _Who) -> _Reply | None:
        route = _match_repo_route(method, rest)
        if route is None:
            return None
        if who.kind in ("invalid", "jwt"):
            return _Reply(401, _message("Bad credentials"))
        repo = self._repos.get(full)
        if who.kind == "none":
            if method != "GET" or route in ("permission",):
                return _Reply(401, _message("Requires authentication"))
            if repo is None or repo.private:
                return _Reply(404, _message("Not Found"))
        if who.kind == "installation" and full not in self._installations.get(
                who.installation_id or -1, set()):
            return _Reply(404, _message("Not Found"))
        if repo is None:
            return _Reply(404, _message("Not Found"))
        handler = getattr(self, f"_r_{route}")
        reply: _Reply = handler(repo, rest, query, body, who)
        return reply

    def _membership(self, org: str, slug: str, login: str, who: _Who) -> _Reply:
        if who.kind not in ("installation", "pat"):
            return _Reply(401, _message("Requires authentication"))
        state = self._teams.get((org, slug), {}).get(login)
        if state is None:
            return _Reply(404, _message("Not Found"))
        url = f"{self.base_url}/orgs/{org}/teams/{slug}/memberships/{login}"
        return _Reply(200, {"url": url, "role": "member", "state": state})

    # Repository routes: each takes (repo, rest, query, body, who).
    def _commit_json(self, repo: _Repo, c: dict[str, Any], files: bool,
                     parents: list[str] | None = None) -> dict[str, Any]:
        date = c.get("date", "2026-01-01T00:00:00Z")
        out: dict[str, Any] = {
            "sha": c["sha"], "html_url": f"{self.web_url}/{repo.full}/commit/{c['sha']}",
            "commit": {"message": c["message"], "committer": {"date": date},
                       "author": {"date": date}},
            "parents": [{"sha": p} for p in c.get("parents", parents or [])]}
        if files:
            out["files"] = [{"filename": f, "status": "modified"} for f in c["files"]]
        return out

    def _r_compare(self, repo: _Repo, rest: list[str], query: dict[str, list[str]],
                   *_: Any) -> _Reply:
        """As GitHub answers: unpaged, at most the newest `COMPARE_UNPAGED` commits (the
        last one listed is the newest of the whole comparison); with `per_page` or
        `page`, pages oldest first (30 a page unless asked, at most 100) with Link
        headers. `total_commits` always counts them all. Commits past
        `compare_listing_limit` are never listed, as for a comparison GitHub gives up on."""
        commits = repo.compares.get(rest[1])
        if commits is None:
            return _Reply(404, _message("Not Found"))
        status, base_sha = repo.compare_meta.get(rest[1], ("ahead", ""))
        listed = list(enumerate(commits))[:self.compare_listing_limit]
        headers: dict[str, str] = {}
        if "per_page" not in query and "page" not in query:
            shown = listed[-COMPARE_UNPAGED:]
        else:
            per_page = min(max(_int(query, "per_page", 30), 1), 100)
            page = max(_int(query, "page", 1), 1)
            shown = listed[(page - 1) * per_page: page * per_page]
            last = max(1, -(-len(listed) // per_page))
            if last > 1:
                headers["Link"] = self._link(f"/repos/{repo.full}/compare/{rest[1]}",
                                             per_page, page, last)
        return _Reply(200, {"status": status, "total_commits": len(commits),
                            "base_commit": {"sha": base_sha},
                            "commits": [self._commit_json(
                                repo, c, False, [commits[k - 1]["sha"]] if k else [])
                                for k, c in shown]}, headers)

    def _r_commit(self, repo: _Repo, rest: list[str], query: dict[str, list[str]],
                  *_: Any) -> _Reply:
        """A commit with its changed files, `COMMIT_FILES_PAGE` a page (fewer when
        `per_page` asks) and at most `COMMIT_FILES_MAX` in all, as GitHub lists them."""
        for commits in repo.compares.values():
            for c in commits:
                if c["sha"] != rest[1]:
                    continue
                files = list(c["files"])[:COMMIT_FILES_MAX]
                per_page = min(max(_int(query, "per_page", COMMIT_FILES_PAGE), 1),
                               COMMIT_FILES_PAGE)
                page = max(_int(query, "page", 1), 1)
                last = max(1, -(-len(files) // per_page))
                data = self._commit_json(
                    repo, {**c, "files": files[(page - 1) * per_page: page * per_page]},
                    True)
                headers = {"Link": self._link(f"/repos/{repo.full}/commits/{c['sha']}",
                                              per_page, page, last)} if last > 1 else {}
                return _Reply(200, data, headers)
        return _Reply(404, _message("Not Found"))

    def _r_repo(self, repo: _Repo, *_: Any) -> _Reply:
        return _Reply(200, self._repo_json(repo))

    def _r_issue(self, repo: _Repo, rest: list[str], *_: Any) -> _Reply:
        issue = repo.issues.get(int(rest[1]))
        if issue is None:
            return _Reply(404, _message("Not Found"))
        return _Reply(200, self._issue_json(repo, issue))

    def _r_list_issues(self, repo: _Repo, rest: list[str], query: dict[str, list[str]],
                       *_: Any) -> _Reply:
        """Open issues, newest first, filtered by `labels` (all of them) and `creator`;
        one page of up to 100, as the sentinel's marker search reads them."""
        wanted = [n for n in (query.get("labels") or [""])[0].split(",") if n]
        creator = (query.get("creator") or [""])[0]
        state = (query.get("state") or ["open"])[0]
        items = [i for i in sorted(repo.issues.values(), key=lambda i: -i.number)
                 if not i.is_pr and (state == "all" or i.state == state)
                 and all(n in i.labels for n in wanted)
                 and (not creator or i.author == creator)]
        return _Reply(200, [self._issue_json(repo, i) for i in items[:100]])

    def _r_create_issue(self, repo: _Repo, rest: list[str], _q: Any, body: Any,
                        who: _Who) -> _Reply:
        if not isinstance(body, dict) or not isinstance(body.get("title"), str) \
                or not body["title"]:
            return _Reply(422, _message("Validation Failed"))
        text = body.get("body") or ""
        if len(text) > 65536:
            return _Reply(422, _message("Body is too long (maximum is 65536 characters)"))
        with self._lock:
            number = max([0, *repo.issues]) + 1
            repo.issues[number] = _Issue(
                next(self._ids), number, body["title"], text, who.login or "ghost",
                who.user_type, False, None, None, repo.default_branch,
                [str(n) for n in body.get("labels") or []], _now_iso())
        return _Reply(201, self._issue_json(repo, repo.issues[number]))

    def _r_edit_issue(self, repo: _Repo, rest: list[str], _q: Any, body: Any,
                      who: _Who) -> _Reply:
        issue = repo.issues.get(int(rest[1]))
        if issue is None:
            return _Reply(404, _message("Not Found"))
        if isinstance(body, dict):
            with self._lock:
                issue.body = body.get("body", issue.body)
                issue.title = body.get("title", issue.title)
                issue.state = body.get("state", issue.state)
        return _Reply(200, self._issue_json(repo, issue))

    def issues(self, repo: str) -> list[Any]:
        """The repository's issues (not pull requests), oldest first."""
        with self._lock:
            return [i for _, i in sorted(self._repo(repo).issues.items()) if not i.is_pr]

    def _r_pull(self, repo: _Repo, rest: list[str], *_: Any) -> _Reply:
        issue = repo.issues.get(int(rest[1]))
        if issue is None or not issue.is_pr:
            return _Reply(404, _message("Not Found"))
        return _Reply(200, self._pull_json(repo, issue))

    def _r_list_comments(self, repo: _Repo, rest: list[str], query: dict[str, list[str]],
                         *_: Any) -> _Reply:
        number = int(rest[1])
        if number not in repo.issues:
            return _Reply(404, _message("Not Found"))
        items = [c for c in self._comments.values()
                 if c.repo == repo.full and c.number == number]
        per_page = min(max(_int(query, "per_page", 30), 1), 100)
        page = max(_int(query, "page", 1), 1)
        chunk = items[(page - 1) * per_page: page * per_page]
        last = max(1, -(-len(items) // per_page))
        path = f"/repos/{repo.full}/issues/{number}/comments"
        headers = {}
        if last > 1:
            headers["Link"] = self._link(path, per_page, page, last)
        return _Reply(200, [self._comment_json(c) for c in chunk], headers)

    def _r_create_comment(self, repo: _Repo, rest: list[str], _q: Any, body: Any,
                          who: _Who) -> _Reply:
        number = int(rest[1])
        if number not in repo.issues:
            return _Reply(404, _message("Not Found"))
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text:
            return _Reply(422, _message("Validation Failed"))
        if len(text) > 65536:
            return _Reply(422, _message("Body is too long (maximum is 65536 characters)"))
        author = who.login or "ghost"
        comment = self._create_comment(repo.full, number, text, author, who.user_type)
        return _Reply(201, self._comment_json(comment))

    def _r_comment(self, repo: _Repo, rest: list[str], *_: Any) -> _Reply:
        comment = self._comments.get(int(rest[2]))
        if comment is None or comment.repo != repo.full:
            return _Reply(404, _message("Not Found"))
        return _Reply(200, self._comment_json(comment))

    def _own_comment(self, repo: _Repo, rest: list[str], who: _Who) -> FakeComment | _Reply:
        """The comment `who` may change, or the answer GitHub gives when it may not."""
        comment = self._comments.get(int(rest[2]))
        if comment is None or comment.repo != repo.full:
            return _Reply(404, _message("Not Found"))
        if comment.author != who.login:
            return _Reply(403, _message("Resource not accessible by integration"))
        return comment

    def _r_edit_comment(self, repo: _Repo, rest: list[str], _q: Any, body: Any,
                        who: _Who) -> _Reply:
        comment = self._own_comment(repo, rest, who)
        if isinstance(comment, _Reply):
            return comment
        text = body.get("body") if isinstance(body, dict) else None
        if not isinstance(text, str) or not text or len(text) > 65536:
            return _Reply(422, _message("Validation Failed"))
        comment.body = text
        comment.updated_at = _now_iso()
        return _Reply(200, self._comment_json(comment))

    def _r_delete_comment(self, repo: _Repo, rest: list[str], _q: Any, _b: Any,
                          who: _Who) -> _Reply:
        comment = self._own_comment(repo, rest, who)
        if isinstance(comment, _Reply):
            return comment
        del self._comments[comment.id]
        return _Reply(204)

    def _r_react(self, repo: _Repo, rest: list[str], _q: Any, body: Any, who: _Who) -> _Reply:
        comment = self._comments.get(int(rest[2]))
        if comment is None or comment.repo != repo.full:
            return _Reply(404, _message("Not Found"))
        content = body.get("content") if isinstance(body, dict) else None
        if content not in REACTIONS:
            return _Reply(422, _message("Validation Failed"))
        login = who.login or "ghost"
        reactions = self._reactions.setdefault(comment.id, [])
        status = 200 if (login, content) in reactions else 201
        if status == 201:
            reactions.append((login, content))
        return _Reply(status, {"id": next(self._ids), "node_id": "REA_x", "content": content,
                               "user": self._user_json(login, who.user_type),
                               "created_at": _now_iso()})

    def _r_labels(self, repo: _Repo, rest: list[str], _q: Any, body: Any, _w: _Who) -> _Reply:
        issue = repo.issues.get(int(rest[1]))
        if issue is None:
            return _Reply(404, _message("Not Found"))
        names = body.get("labels") if isinstance(body, dict) else body
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            return _Reply(422, _message("Validation Failed"))
        for name in names:
            if name not in issue.labels:
                issue.labels.append(name)
        return _Reply(200, [self._label_json(repo, n) for n in issue.labels])

    def _r_permission(self, repo: _Repo, rest: list[str], *_: Any) -> _Reply:
        login = rest[1]
        default = ("read", "read") if not repo.private else ("none", "none")
        permission, role = repo.permissions.get(login, default)
        return _Reply(200, {"permission": LEGACY_PERMISSION[permission], "role_name": role,
                            "user": self._user_json(login, "User")})

    def _r_contents(self, repo: _Repo, rest: list[str], *_: Any) -> _Reply:
        path = "/".join(rest[1:]).strip("/")
        data = repo.files.get(path)
        if data is not None:
            return _Reply(200, self._content_json(repo, path, data))
        inside = sorted(p for p in repo.files if p.startswith(path + "/"))
        if path and inside:
            return _Reply(200, [self._content_json(repo, p, repo.files[p], listing=True)
                                for p in inside])
        return _Reply(404, _message("Not Found"))

    # --- JSON shapes --------------------------------------------------------------------
    def _user_json(self, login: str, user_type: str) -> dict[str, Any]:
        uid = self._user_ids.setdefault(login, next(self._ids))
        return {"login": login, "id": uid, "node_id": f"U_{uid}", "type": user_type,
                "site_admin": False, "url": f"{self.base_url}/users/{login}",
                "html_url": f"{self.web_url}/{login}"}

    def _repo_json(self, repo: _Repo) -> dict[str, Any]:
        owner, name = repo.full.split("/")
        return {"id": repo.id, "node_id": f"R_{repo.id}", "name": name, "full_name": repo.full,
                "private": repo.private, "owner": self._user_json(owner, "Organization"),
                "default_branch": repo.default_branch,
                "url": f"{self.base_url}/repos/{repo.full}",
                "html_url": f"{self.web_url}/{repo.full}"}

    def _label_json(self, repo: _Repo, name: str) -> dict[str, Any]:
        quoted = urllib.parse.quote(name, safe="")
        return {"id": abs(hash((repo.full, name))) % 10**9, "name": name, "color": "ededed",
                "default": False, "description": None,
                "url": f"{self.base_url}/repos/{repo.full}/labels/{quoted}"}

    def _issue_json(self, repo: _Repo, issue: _Issue) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full}"
        kind = "pull" if issue.is_pr else "issues"
        count = sum(1 for c in self._comments.values()
                    if c.repo == repo.full and c.number == issue.number)
        data: dict[str, Any] = {
            "id": issue.id, "node_id": f"I_{issue.id}", "number": issue.number,
            "title": issue.title, "body": issue.body, "state": issue.state, "locked": False,
            "user": self._user_json(issue.author, issue.author_type),
            "labels": [self._label_json(repo, n) for n in issue.labels],
            "assignees": [], "comments": count, "author_association": "NONE",
            "created_at": issue.created_at, "updated_at": issue.created_at, "closed_at": None,
            "url": f"{api}/issues/{issue.number}", "repository_url": api,
            "comments_url": f"{api}/issues/{issue.number}/comments",
            "labels_url": f"{api}/issues/{issue.number}/labels{{/name}}",
            "html_url": f"{self.web_url}/{repo.full}/{kind}/{issue.number}",
        }
        if issue.is_pr:
            data["pull_request"] = {
                "url": f"{api}/pulls/{issue.number}",
                "html_url": f"{self.web_url}/{repo.full}/pull/{issue.number}",
                "diff_url": f"{self.web_url}/{repo.full}/pull/{issue.number}.diff",
                "patch_url": f"{self.web_url}/{repo.full}/pull/{issue.number}.patch"}
        return data

    def _pull_json(self, repo: _Repo, issue: _Issue) -> dict[str, Any]:
        owner = repo.full.split("/")[0]
        data = self._issue_json(repo, issue)
        del data["pull_request"]
        data.update({
            "url": f"{self.base_url}/repos/{repo.full}/pulls/{issue.number}",
            "issue_url": f"{self.base_url}/repos/{repo.full}/issues/{issue.number}",
            "merged": False, "draft": False, "mergeable": None,
            "head": {"label": f"{owner}:{issue.head_ref}", "ref": issue.head_ref,
                     "sha": issue.head_sha, "user": self._user_json(owner, "Organization")},
            "base": {"label": f"{owner}:{issue.base_ref}", "ref": issue.base_ref,
                     "sha": "0" * 40, "user": self._user_json(owner, "Organization")},
        })
        return data

    def _comment_json(self, comment: FakeComment) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{comment.repo}"
        return {
            "id": comment.id, "node_id": f"IC_{comment.id}", "body": comment.body,
            "user": self._user_json(comment.author, comment.author_type),
            "created_at": comment.created_at, "updated_at": comment.updated_at,
            "author_association": "NONE",
            "url": f"{api}/issues/comments/{comment.id}",
            "issue_url": f"{api}/issues/{comment.number}",
            "html_url": f"{self.web_url}/{comment.repo}/issues/{comment.number}"
                        f"#issuecomment-{comment.id}",
        }

    def _content_json(self, repo: _Repo, path: str, data: bytes,
                      listing: bool = False) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full}"
        quoted = urllib.parse.quote(path)
        entry: dict[str, Any] = {
            "type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "size": len(data),
            "sha": format(abs(hash(data)), "040x")[:40],
            "url": f"{api}/contents/{quoted}",
            "html_url": f"{self.web_url}/{repo.full}/blob/{repo.default_branch}/{quoted}",
            "git_url": f"{api}/git/blobs/x", "download_url": None,
        }
        if not listing:
            if len(data) > INLINE_CONTENT_LIMIT:
                entry.update(encoding="none", content="")
            else:
                text = base64.encodebytes(data).decode()
                entry.update(encoding="base64", content=text)
        return entry

    def _link(self, path: str, per_page: int, page: int, last: int) -> str:
        base = (self.link_base or self.base_url) + path

        def url(n: int) -> str:
            return f"{base}?{urllib.parse.urlencode({'per_page': per_page, 'page': n})}"

        links = []
        if page < last:
            links += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
        if page > 1:
            links += [f'<{url(1)}>; rel="first"', f'<{url(page - 1)}>; rel="prev"']
        return ", ".join(links)

    # --- helpers ------------------------------------------------------------------------
    def _repo(self, repo: str) -> _Repo:
        if repo not in self._repos:
            raise KeyError(f"no repo {repo!r}; call add_repo first")
        return self._repos[repo]

    def _issue(self, repo: str, number: int) -> _Issue:
        issue = self._repo(repo).issues.get(number)
        if issue is None:
            raise KeyError(f"no issue {repo}#{number}; call add_issue first")
        return issue

    def _create_comment(self, repo: str, number: int, body: str, author: str,
                        author_type: str, comment_id: int | None = None) -> FakeComment:
        while comment_id is None or comment_id in self._comments:
            comment_id = next(self._ids)
        now = _now_iso()
        comment = FakeComment(comment_id, repo, number, body, author, author_type, now, now)
        self._comments[comment.id] = comment
        return comment


_BAD_JSON = object()

# (method, shape of the path below /repos/{o}/{r}) -> route name; "#" is a number.
_REPO_ROUTES: dict[tuple[str, tuple[str, ...]], str] = {
    ("GET", ()): "repo",
    ("GET", ("issues", "#")): "issue",
    ("GET", ("issues",)): "list_issues",
    ("POST", ("issues",)): "create_issue",
    ("PATCH", ("issues", "#")): "edit_issue",
    ("GET", ("pulls", "#")): "pull",
    ("GET", ("issues", "#", "comments")): "list_comments",
    ("POST", ("issues", "#", "comments")): "create_comment",
    ("GET", ("issues", "comments", "#")): "comment",
    ("PATCH", ("issues", "comments", "#")): "edit_comment",
    ("DELETE", ("issues", "comments", "#")): "delete_comment",
    ("POST", ("issues", "comments", "#", "reactions")): "react",
    ("POST", ("issues", "#", "labels")): "labels",
    ("GET", ("collaborators", "*", "permission")): "permission",
    ("GET", ("compare", "*")): "compare",
    ("GET", ("commits", "*")): "commit",
}


def _match_repo_route(method: str, rest: list[str]) -> str | None:
    if method == "GET" and rest[:1] == ["contents"] and len(rest) >= 2:
        return "contents"
    for (verb, shape), name in _REPO_ROUTES.items():
        if verb != method or len(shape) != len(rest):
            continue
        if all(s == "*" or (s == "#" and r.isdigit()) or s == r for s, r in zip(shape, rest,
                                                                               strict=True)):
            return name
    return None


def _int(query: dict[str, list[str]], name: str, default: int) -> int:
    values = query.get(name)
    if not values or not values[0].isdigit():
        return default
    return int(values[0])


def _auth_kind(authorization: str | None) -> str:
    if not authorization:
        return "none"
    scheme = authorization.split(" ", 1)[0].lower()
    return {"bearer": "jwt", "token": "token"}.get(scheme, "other")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, so no keep-alive socket outlives a test.
    protocol_version = "HTTP/1.0"
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parsed = urllib.parse.urlsplit(self.path)
        reply = self.server.fake.handle(self.command, parsed.path,
                                        urllib.parse.parse_qs(parsed.query), raw,
                                        self.headers.get("Authorization"))
        if reply is None:
            self.close_connection = True
            return
        if reply.body is None:
            data, kind = b"", "application/json; charset=utf-8"
        elif isinstance(reply.body, str):
            data, kind = reply.body.encode(), "text/html; charset=utf-8"
        else:
            data, kind = json.dumps(reply.body).encode(), "application/json; charset=utf-8"
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass
