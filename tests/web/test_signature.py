"""The signature check on its own: GitHub's test vector, malformed headers, rotation."""

from __future__ import annotations

import inspect

import pytest
from pydantic import SecretStr

from triagebot.web import signature
from triagebot.web.signature import sign, verify

GITHUB_SECRET = "It's a Secret to Everybody"
GITHUB_BODY = b"Hello, World!"
GITHUB_SIGNATURE = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"


def test_github_test_vector() -> None:
    assert sign(GITHUB_SECRET, GITHUB_BODY) == GITHUB_SIGNATURE
    assert verify(GITHUB_BODY, GITHUB_SIGNATURE, [SecretStr(GITHUB_SECRET)])
    # GitHub writes the digest in lower case; upper-case hex is the same digest.
    upper = "sha256=" + GITHUB_SIGNATURE.removeprefix("sha256=").upper()
    assert verify(GITHUB_BODY, upper, [GITHUB_SECRET])


@pytest.mark.parametrize("header", [
    None,
    "",
    "sha256=",
    "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59",
    "SHA256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    "sha512=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e1",
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17a",
    "sha256=zz7107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    "sha256= 57107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e18",
])
def test_malformed_or_wrong_headers_fail(header: str | None) -> None:
    assert not verify(GITHUB_BODY, header, [GITHUB_SECRET])


def test_wrong_secret_and_changed_body_fail() -> None:
    assert not verify(GITHUB_BODY, GITHUB_SIGNATURE, ["It's a Secret to Nobody"])
    assert not verify(b"Hello, World!\n", GITHUB_SIGNATURE, [GITHUB_SECRET])
    assert not verify(b"", GITHUB_SIGNATURE, [GITHUB_SECRET])


def test_any_configured_secret_matches_and_none_means_refused() -> None:
    body = b'{"zen": "rotate"}'
    old, new = "old-secret-1234", "new-secret-5678"
    assert verify(body, sign(old, body), [new, old])
    assert verify(body, sign(new, body), [new, old])
    assert not verify(body, sign(old, body), [new])
    assert not verify(body, sign(old, body), [])


def test_the_compare_is_constant_time() -> None:
    source = inspect.getsource(signature)
    assert "hmac.compare_digest" in source
    assert "==" not in source.split("def verify", 1)[1]
