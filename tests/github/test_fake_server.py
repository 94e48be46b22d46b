"""The fake GitHub itself: App JWT checks, token auth, pagination, unexpected routes."""

from __future__ import annotations

import functools
import time
from typing import Any

import jwt
import pytest
import requests
from jwt.algorithms import RSAAlgorithm

from tests.fakes.github_server import FakeGitHub
from tests.github.conftest import REPO


@functools.cache
def _key(pem: str) -> Any:
    return RSAAlgorithm(RSAAlgorithm.SHA256).prepare_key(pem)


def _jwt(fake: FakeGitHub, iat_offset: int = -60, exp_offset: int = 300,
         key: str | None = None, iss: object = None) -> str:
    now = int(time.time())
    claims = {"iat": now + iat_offset, "exp": now + exp_offset,
              "iss": str(fake.app_id) if iss is None else iss}
    return jwt.encode(claims, _key(key or fake.private_key_pem), algorithm="RS256")


def _mint(fake: FakeGitHub, token: str, installation: int = 1,
          permissions: dict[str, str] | None = None) -> requests.Response:
    body = {"permissions": permissions} if permissions is not None else {}
    return requests.post(f"{fake.base_url}/app/installations/{installation}/access_tokens",
                         json=body, headers={"Authorization": f"Bearer {token}"}, timeout=5)


def test_jwt_issued_60_s_in_the_past_is_accepted(fake_github: FakeGitHub) -> None:
    answer = _mint(fake_github, _jwt(fake_github, iat_offset=-60))
    assert answer.status_code == 201
    data = answer.json()
    assert data["token"].startswith("ghs_") and data["expires_at"].endswith("Z")
    issue = requests.get(f"{fake_github.base_url}/repos/{REPO}",
                         headers={"Authorization": f"token {data['token']}"}, timeout=5)
    assert issue.status_code == 200 and issue.json()["full_name"] == REPO


@pytest.mark.parametrize("kwargs", [
    {"iat_offset": 120},                     # issued in the future beyond the leeway
    {"iat_offset": -700, "exp_offset": -90},  # expired
    {"exp_offset": 900},                      # lives longer than 10 minutes
    {"iss": "999"},                           # another App
    {"key": "other"},                         # signed with another key
])
def test_bad_jwts_are_refused(fake_github: FakeGitHub, kwargs: dict[str, object],
                              other_key_pem: str) -> None:
    if kwargs.get("key") == "other":
        kwargs = {**kwargs, "key": other_key_pem}
    assert _mint(fake_github, _jwt(fake_github, **kwargs)).status_code == 401  # type: ignore[arg-type]


def test_token_permissions_cannot_exceed_the_installation(fake_github: FakeGitHub) -> None:
    token = _jwt(fake_github)
    assert _mint(fake_github, token, permissions={"issues": "read"}).status_code == 201
    assert _mint(fake_github, token, permissions={"contents": "write"}).status_code == 422
    assert _mint(fake_github, token, permissions={"administration": "read"}).status_code == 422
    assert _mint(fake_github, token, installation=77).status_code == 404


def test_repository_routes_need_a_live_token(fake_github: FakeGitHub) -> None:
    url = f"{fake_github.base_url}/repos/{REPO}"
    token = _mint(fake_github, _jwt(fake_github)).json()["token"]
    assert requests.get(url, headers={"Authorization": "token ghs_wrong"},
                        timeout=5).status_code == 401
    assert requests.get(url, headers={"Authorization": f"Bearer {_jwt(fake_github)}"},
                        timeout=5).status_code == 401
    assert requests.get(url, headers={"Authorization": f"token {token}"},
                        timeout=5).status_code == 200
    fake_github.expire_tokens()
    assert requests.get(url, headers={"Authorization": f"token {token}"},
                        timeout=5).status_code == 401
    # Anonymous reads work on public repositories only, and writes never.
    assert requests.get(url, timeout=5).status_code == 200
    fake_github.add_issue(REPO, 1, "t", "b")
    assert requests.post(f"{url}/issues/1/comments", json={"body": "x"},
                         timeout=5).status_code == 401
    fake_github.add_repo("acme/secret", private=True)
    assert requests.get(f"{fake_github.base_url}/repos/acme/secret",
                        timeout=5).status_code == 404
    assert [c.auth for c in fake_github.calls[:4]] == ["jwt", "token", "jwt", "token"]


def test_a_token_only_reaches_its_installation(fake_github: FakeGitHub) -> None:
    fake_github.add_repo("other/repo")
    token = _mint(fake_github, _jwt(fake_github)).json()["token"]
    answer = requests.get(f"{fake_github.base_url}/repos/other/repo",
                          headers={"Authorization": f"token {token}"}, timeout=5)
    assert answer.status_code == 404


def test_comment_pages_follow_per_page_with_absolute_links(fake_github: FakeGitHub) -> None:
    fake_github.add_issue(REPO, 3, "t", "b")
    for i in range(5):
        fake_github.add_comment(REPO, 3, f"c{i}", "bob")
    url = f"{fake_github.base_url}/repos/{REPO}/issues/3/comments"
    first = requests.get(url, params={"per_page": 2}, timeout=5)
    assert [c["body"] for c in first.json()] == ["c0", "c1"]
    assert first.links["next"]["url"] == f"{url}?per_page=2&page=2"
    assert first.links["last"]["url"] == f"{url}?per_page=2&page=3"
    last = requests.get(first.links["last"]["url"], timeout=5)
    assert [c["body"] for c in last.json()] == ["c4"] and "next" not in last.links
    assert first.json()[0]["url"].startswith(fake_github.base_url + "/repos/")


def test_unknown_routes_are_recorded(fake_github: FakeGitHub) -> None:
    answer = requests.get(f"{fake_github.base_url}/repos/{REPO}/hooks", timeout=5)
    assert answer.status_code == 404
    requests.get(f"{fake_github.web_url}/elsewhere", timeout=5)
    assert [(c.method, c.path) for c in fake_github.unexpected] == [
        ("GET", f"/repos/{REPO}/hooks"), ("GET", "/elsewhere")]
    # Keep the fixture's teardown check for the tests that mean it.
    fake_github._unexpected.clear()


def test_faults_apply_in_order_and_can_drop_the_connection(fake_github: FakeGitHub) -> None:
    url = f"{fake_github.base_url}/repos/{REPO}"
    fake_github.fail("GET", f"/repos/{REPO}", 0)
    fake_github.fail("GET", f"/repos/{REPO}", 503, times=2, headers={"Retry-After": "1"})
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)
    second = requests.get(url, timeout=5)
    assert second.status_code == 503 and second.headers["Retry-After"] == "1"
    assert requests.get(url, timeout=5).status_code == 503
    assert requests.get(url, timeout=5).status_code == 200
    assert [c.status for c in fake_github.calls] == [0, 503, 503, 200]


def test_an_applied_fault_stores_the_write(fake_github: FakeGitHub) -> None:
    fake_github.add_issue(REPO, 2, "t", "b")
    fake_github.add_pat("ghp_maintainer", "maint")
    fake_github.fail("POST", r"/repos/.*/comments", 502, apply=True)
    answer = requests.post(f"{fake_github.base_url}/repos/{REPO}/issues/2/comments",
                           json={"body": "hello"},
                           headers={"Authorization": "token ghp_maintainer"}, timeout=5)
    assert answer.status_code == 502
    assert [(c.body, c.author) for c in fake_github.comments(REPO, 2)] == [("hello", "maint")]


def test_delay_holds_every_call(fake_github: FakeGitHub) -> None:
    fake_github.delay(0.2)
    started = time.monotonic()
    requests.get(f"{fake_github.base_url}/repos/{REPO}", timeout=5)
    assert time.monotonic() - started >= 0.2
