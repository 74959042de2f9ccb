"""List options and continue tokens.

A continue token is what the apiserver sends: unpadded base64url of
`{"v":"meta.k8s.io/v1","rv":N,"start":"<namespace>/<name>\\u0000"}`. It records where the page ended;
the next page lists the current objects after that key (there is no snapshot history, see
docs/embedded-cluster.md).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from planner.slim import errors

Obj = dict[str, Any]


@dataclass(frozen=True)
class ListOptions:
    label_selector: str | None = None
    field_selector: str | None = None
    limit: int = 0
    continue_token: str | None = None
    resource_version: str | None = None
    resource_version_match: str | None = None


def sort_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def encode_continue(rv: int, last_key: str) -> str:
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": last_key + "\x00"}, separators=(",", ":"))
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except ValueError as exc:
        raise errors.bad_request(f"invalid continue token: {exc}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
        return int(data["rv"]), str(data["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        first = raw[:1]
        shown = first.decode() if first and 32 <= first[0] < 127 else f"\\x{first[0]:02x}" if first else ""
        raise errors.bad_request(
            "invalid continue token: continue key is not valid: "
            f"invalid character '{shown}' looking for beginning of value"
        ) from exc
