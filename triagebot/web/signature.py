"""The delivery's signature: an HMAC of the raw body, checked before anything reads it.

GitHub signs with SHA-256 (`X-Hub-Signature-256`) and, beside it, SHA-1 (`X-Hub-Signature`);
older GitHub Enterprise Server releases send the SHA-1 one only. SHA-256 is what counts
whenever it is sent (a wrong or malformed one is refused, whatever the SHA-1 one says);
the SHA-1 header is read only when it comes alone. Any of several secrets may match, so
a secret can be rotated without dropping deliveries.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import SecretStr

PREFIX = "sha256="
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True)
class Claim:
    """The digest a delivery claims, and the hash it was made with."""

    algorithm: str  # "sha256" or "sha1", as hashlib names them
    digest: bytes


def _key(secret: SecretStr | str | bytes) -> bytes:
    if isinstance(secret, SecretStr):
        secret = secret.get_secret_value()
    return secret.encode() if isinstance(secret, str) else secret


def sign(secret: SecretStr | str | bytes, body: bytes) -> str:
    """The header value GitHub sends for `body` signed with `secret`."""
    return PREFIX + hmac.new(_key(secret), body, hashlib.sha256).hexdigest()


def _parse(header: str, algorithm: str) -> Claim | None:
    prefix = f"{algorithm}="
    if not header.startswith(prefix):
        return None
    given = header[len(prefix):]
    if len(given) != 2 * hashlib.new(algorithm).digest_size \
            or not _HEX_DIGITS.issuperset(given):
        return None
    return Claim(algorithm, bytes.fromhex(given))


def claimed(sha256_header: str | None, sha1_header: str | None = None) -> Claim | None:
    """The digest the headers claim, or None (then no body needs reading)."""
    if sha256_header is not None:
        return _parse(sha256_header, "sha256")
    if sha1_header:
        return _parse(sha1_header, "sha1")
    return None


class Verifier:
    """Checks a body against a claimed digest chunk by chunk, as it arrives."""

    def __init__(self, claim: Claim, secrets: Iterable[SecretStr | str | bytes]) -> None:
        self.expected = claim.digest
        self.macs = [hmac.new(_key(secret), digestmod=claim.algorithm) for secret in secrets]

    def update(self, chunk: bytes) -> None:
        for mac in self.macs:
            mac.update(chunk)

    def matched(self) -> bool:
        matched = False
        # Every secret is tried, so the time taken does not tell which one (if any) matched.
        for mac in self.macs:
            matched |= hmac.compare_digest(mac.digest(), self.expected)
        return matched


def verify(body: bytes, header: str | None, secrets: Iterable[SecretStr | str | bytes], *,
           sha1_header: str | None = None) -> bool:
    """True when the headers hold a well-formed signature of `body` under one of `secrets`:
    `header` (SHA-256) when given, else `sha1_header`."""
    claim = claimed(header, sha1_header)
    if claim is None:
        return False
    verifier = Verifier(claim, secrets)
    verifier.update(body)
    return verifier.matched()
