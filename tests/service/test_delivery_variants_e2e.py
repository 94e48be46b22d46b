"""The deliveries GitHub may send besides JSON signed with SHA-256, handled end to end
(issue 27, item 11): a form-encoded body and a SHA-1-only signature each reach the triage
worker and get their reply on the fake GitHub."""

from __future__ import annotations

import hashlib
import hmac
import urllib.parse
import uuid
from pathlib import Path

import httpx

from tests.fakes.github_server import FakeGitHub
from tests.fakes.services import wait_for
from tests.service.threads import bot_comments
from tests.service.triage_only import SECRET, triage_service
from triagebot.web.signature import sign


def test_form_encoded_and_sha1_only_deliveries_are_answered(
        fake_github: FakeGitHub, namespace: str, tmp_path: Path) -> None:
    with triage_service(fake_github, namespace, tmp_path) as svc:
        svc.start_worker()
        form_comment, raw = svc.comment_delivery("@triagebot help")
        form = urllib.parse.urlencode({"payload": raw.decode()}).encode()
        sent = httpx.post(f"{svc.web.url}/webhook", content=form, timeout=10, headers={
            "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(SECRET, form),
            "Content-Type": "application/x-www-form-urlencoded"})
        assert sent.json()["queued"] is True, sent.text
        sha1_comment, raw = svc.comment_delivery("@triagebot status")
        digest = hmac.new(SECRET.encode(), raw, hashlib.sha1).hexdigest()
        sent = httpx.post(f"{svc.web.url}/webhook", content=raw, timeout=10, headers={
            "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature": f"sha1={digest}", "Content-Type": "application/json"})
        assert sent.json()["queued"] is True, sent.text

        def replies() -> dict[int, str]:
            found = {}
            for comment in bot_comments(fake_github):
                for asked in (form_comment, sha1_comment):
                    if comment.body.startswith(f"<!-- triagebot:v1 reply={asked} -->"):
                        found[asked] = comment.body
            return found if len(found) == 2 else {}

        answers = wait_for(replies, 90, "both replies", svc.logs)
    assert "commands" in answers[form_comment]
    assert "No reproduction has been requested" in answers[sha1_comment]
