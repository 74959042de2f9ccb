"""The request log: who made which request, so a test can list exactly the verbs a run used.

`/metrics` counts requests by verb and resource; this keeps each one, with its user, in the order
they arrived: `{"user", "verb", "apiGroup", "resource", "subresource", "namespace", "name", "path",
"code"}` (resource fields empty for non-resource requests such as discovery; `code` null while a
request, such as a watch, is still being answered). A test compares the verbs a controller really
used with the Role it is meant to need (`SlimAdmin.requests(user=…)`). Entries are recorded once a
request is authenticated, before it is authorized, so refused requests (403) are there too; the
admin endpoints (`/slim/…`), `/metrics` and the health checks are not. The log keeps the last
`capacity` requests.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from planner.slim.requestinfo import RequestInfo

DEFAULT_CAPACITY = 100_000
NOT_LOGGED_PREFIXES = ("/slim/", "/metrics", "/healthz", "/readyz", "/livez")


@dataclass
class Entry:
    user: str
    info: RequestInfo
    code: int | None = None

    def as_json(self) -> dict[str, Any]:
        info = self.info
        return {
            "user": self.user,
            "verb": info.verb,
            "apiGroup": info.api_group,
            "resource": info.resource,
            "subresource": info.subresource,
            "namespace": info.namespace,
            "name": info.name,
            "path": info.path,
            "code": self.code,
        }


class RequestLog:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._entries: deque[Entry] = deque(maxlen=capacity)

    @staticmethod
    def logged(path: str) -> bool:
        return not path.startswith(NOT_LOGGED_PREFIXES)

    def record(self, user: str, info: RequestInfo) -> Entry:
        entry = Entry(user, info)
        self._entries.append(entry)
        return entry

    def entries(self, user: str | None = None) -> list[dict[str, Any]]:
        return [e.as_json() for e in self._entries if user is None or e.user == user]

    def clear(self) -> None:
        self._entries.clear()
