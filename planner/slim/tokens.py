"""ServiceAccount tokens: what TokenRequest (`kubectl create token`) issues and the server then accepts.

A token is a JWT with the claims the apiserver's tokens carry (`iss`, `sub`
`system:serviceaccount:<namespace>:<name>`, `aud`, `iat`, `nbf`, `exp`, and `kubernetes.io` naming the
namespace and the ServiceAccount's name and uid), signed with HMAC-SHA256 under the server's key
rather than the apiserver's RSA key: no one outside the server verifies them (there is no OIDC
discovery), so a shared secret is enough and needs no key pair. The key is kept in the data directory
(`token.key`, mode 0600), so tokens outlive a restart; an in-memory server makes a new one each start.

Verifying checks the signature, the validity window and the audience here; that the ServiceAccount
still exists with the same uid is the caller's check (it needs the store).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.slim.certs import write_private

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
DEFAULT_EXPIRATION_SECONDS = 3600
KEY_FILE = "token.key"


@dataclass(frozen=True)
class Claims:
    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    expires: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_key(data_dir: Path | None) -> bytes:
    """The signing key: kept in `data_dir` (created on first use), else a new one for this process."""
    if data_dir is None:
        return secrets.token_bytes(32)
    path = data_dir / KEY_FILE
    if not path.exists():
        write_private(path, secrets.token_bytes(32))
    return path.read_bytes()


class Tokens:
    def __init__(self, key: bytes, *, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock
        self._header = _b64(
            json.dumps({"alg": "HS256", "kid": hashlib.sha256(key).hexdigest()[:16]}).encode()
        )

    def issue(
        self, namespace: str, name: str, uid: str, audiences: Sequence[str], seconds: int
    ) -> tuple[str, int]:
        """A token for the ServiceAccount and its expiry (seconds since the epoch)."""
        now = int(self._clock())
        claims: dict[str, Any] = {
            "aud": list(audiences),
            "exp": now + seconds,
            "iat": now,
            "iss": ISSUER,
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
            "nbf": now,
            "sub": f"system:serviceaccount:{namespace}:{name}",
        }
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{self._header}.{payload}.{self._sign(payload)}", now + seconds

    def verify(self, token: str, audiences: Sequence[str] = API_AUDIENCES) -> Claims | None:
        """The claims of a token this server signed, still valid and meant for one of `audiences`."""
        header, _, rest = token.partition(".")
        payload, _, signature = rest.partition(".")
        if header != self._header or not hmac.compare_digest(signature, self._sign(payload)):
            return None
        try:
            claims = json.loads(_unb64(payload))
            account = claims["kubernetes.io"]["serviceaccount"]
            found = Claims(
                str(claims["kubernetes.io"]["namespace"]),
                str(account["name"]),
                str(account["uid"]),
                tuple(claims["aud"]),
                int(claims["exp"]),
            )
            now = self._clock()
            if not int(claims["nbf"]) <= now < found.expires:
                return None
        except (ValueError, KeyError, TypeError):
            return None
        return found if set(found.audiences) & set(audiences) else None

    def _sign(self, payload: str) -> str:
        digest = hmac.new(self._key, f"{self._header}.{payload}".encode(), hashlib.sha256).digest()
        return _b64(digest)
