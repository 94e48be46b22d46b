"""`X-Hub-Signature-256`: an HMAC-SHA256 of the raw body, checked before anything reads it.

Any of several secrets may match, so a secret can be rotated without dropping deliveries.
Only the SHA-256 header counts; the legacy SHA-1 one is ignored.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from pydantic import SecretStr

PREFIX = "sha256="
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_DIGEST_HEX_LEN = 2 * hashlib.sha256().digest_size


def _key(secret: SecretStr | str | bytes) -> bytes:
    if isinstance(secret, SecretStr):
        secret = secret.get_secret_value()
    return secret.encode() if isinstance(secret, str) else secret


def sign(secret: SecretStr | str | bytes, body: bytes) -> str:
    """The header value GitHub sends for `body` signed with `secret`."""
    return PREFIX + hmac.new(_key(secret), body, hashlib.sha256).hexdigest()


def expected_digest(header: str | None) -> bytes | None:
    """The digest a well-formed header claims, or None (then no body needs reading)."""
    if not header or not header.startswith(PREFIX):
        return None
    given = header[len(PREFIX):]
    if len(given) != _DIGEST_HEX_LEN or not _HEX_DIGITS.issuperset(given):
        return None
    return bytes.fromhex(given)


class Verifier:
    """Checks a body against a claimed digest chunk by chunk, as it arrives."""

    def __init__(self, expected: bytes, secrets: Iterable[SecretStr | str | bytes]) -> None:
        self.expected = expected
        self.macs = [hmac.new(_key(secret), digestmod=hashlib.sha256) for secret in secrets]

    def update(self, chunk: bytes) -> None:
        for mac in self.macs:
            mac.update(chunk)

    def matched(self) -> bool:
        matched = False
        # Every secret is tried, so the time taken does not tell which one (if any) matched.
        for mac in self.macs:
            matched |= hmac.compare_digest(mac.digest(), self.expected)
        return matched


def verify(body: bytes, header: str | None, secrets: Iterable[SecretStr | str | bytes]) -> bool:
    """True when `header` is a well-formed SHA-256 signature of `body` under one of `secrets`."""
    expected = expected_digest(header)
    if expected is None:
        return False
    verifier = Verifier(expected, secrets)
    verifier.update(body)
    return verifier.matched()
