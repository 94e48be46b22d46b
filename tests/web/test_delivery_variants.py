"""Deliveries GitHub may send besides a JSON body signed with SHA-256 (issue 27, item 11):
a form-encoded body (`payload=`, a content type the App's hook config allows) and a
SHA-1-only signature (`X-Hub-Signature`, older GitHub Enterprise Server). Both are
checked over the raw bytes; SHA-256 is preferred whenever it is sent."""

from __future__ import annotations

import hashlib
import hmac
import urllib.parse

import httpx
import redis

from tests.web.support import SECRET, encode, fixture, namespace_keys, queued, signed
from triagebot.settings import Settings
from triagebot.web.signature import sign, verify


def _sha1(secret: str, body: bytes) -> str:
    return "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()


def test_a_form_encoded_delivery_is_queued_as_its_payload(
        url: str, http: httpx.Client, redis_client: redis.Redis, settings: Settings) -> None:
    payload = fixture("issue_comment.created")
    form = urllib.parse.urlencode({"payload": encode(payload).decode()}).encode()
    headers = signed(form, "issue_comment")
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    response = http.post(f"{url}/webhook", content=form, headers=headers)
    assert response.status_code == 202, response.text
    assert response.json()["queued"] is True
    [task] = queued(redis_client, settings)
    assert task["args"][0]["comment"]["body"] == payload["comment"]["body"]
    # The signature covers the form bytes as sent, not the JSON inside them.
    headers = signed(encode(payload), "issue_comment")
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    assert http.post(f"{url}/webhook", content=form, headers=headers).status_code == 401


def test_a_form_without_a_payload_field_is_a_clear_400(url: str, http: httpx.Client) -> None:
    form = b"other=1"
    headers = signed(form, "issue_comment")
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    response = http.post(f"{url}/webhook", content=form, headers=headers)
    assert response.status_code == 400 and "payload" in response.json()["error"]


def test_a_sha1_only_delivery_is_checked_and_queued(
        url: str, http: httpx.Client, redis_client: redis.Redis, settings: Settings,
        namespace: str) -> None:
    body = encode(fixture("issue_comment.created"))
    headers = signed(body, "issue_comment")
    del headers["X-Hub-Signature-256"]
    headers["X-Hub-Signature"] = "sha1=" + "0" * 40
    assert http.post(f"{url}/webhook", content=body, headers=headers).status_code == 401
    assert namespace_keys(redis_client, namespace) == []
    headers["X-Hub-Signature"] = _sha1(SECRET, body)
    response = http.post(f"{url}/webhook", content=body, headers=headers)
    assert response.status_code == 202, response.text
    assert len(queued(redis_client, settings)) == 1


def test_sha256_wins_when_both_are_sent(url: str, http: httpx.Client,
                                        redis_client: redis.Redis, namespace: str) -> None:
    body = encode(fixture("issue_comment.created"))
    headers = signed(body, "issue_comment")
    headers["X-Hub-Signature-256"] = sign("another-secret-xyz", body)
    headers["X-Hub-Signature"] = _sha1(SECRET, body)  # right, but SHA-256 is what counts
    assert http.post(f"{url}/webhook", content=body, headers=headers).status_code == 401
    assert namespace_keys(redis_client, namespace) == []


def test_verify_takes_either_header() -> None:
    body = b"Hello, World!"
    assert verify(body, None, [SECRET], sha1_header=_sha1(SECRET, body))
    assert not verify(body, None, ["nope-nope-nope"], sha1_header=_sha1(SECRET, body))
    assert not verify(body, sign("nope-nope-nope", body), [SECRET],
                      sha1_header=_sha1(SECRET, body))
