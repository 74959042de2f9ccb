"""Why a Git source could not give a plan: the reasons a `SourceError` carries into the `SourceReady`
condition (CamelCase words, as Flux's), and messages that never hold a credential
(`without_credentials`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

AUTHENTICATION_FAILED = "AuthenticationFailed"
HOST_KEY_REFUSED = "HostKeyRefused"
FETCH_FAILED = "GitOperationFailed"
REF_NOT_FOUND = "RefNotFound"
PATH_NOT_FOUND = "PathNotFound"
PLAN_INVALID = "PlanInvalid"
CREDENTIALS_INVALID = "CredentialsInvalid"
INVALID_SIGNATURE = "InvalidCommitSignature"  # Flux's: unsigned, not verifying, or by another key
VERIFICATION_ERROR = "VerificationError"  # Flux's: the verification Secret is missing or unreadable

_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


def without_credentials(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with any URL's user information cut out and each of `secrets` masked."""
    cut = _USERINFO.sub("", text)
    for secret in secrets:
        if secret:
            cut = cut.replace(secret, "***")
    return cut
