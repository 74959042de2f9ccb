"""StatusError: every failure the API core reports, carrying the exact `kind: Status` body.

The core raises these; the HTTP layer only copies `status` and `body` onto the wire, and in-process
callers (the controllers and the node agent) catch them by `code`/`reason`. The helpers below build the shapes
the real apiserver sends (golden `error_*.json`): NotFound, AlreadyExists
and Conflict name the plural resource in `details.kind`, Invalid names the Kind and lists causes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cause:
    """One `details.causes[]` entry of a 422: which field, what is wrong with it."""

    reason: str
    message: str
    field: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}

    def summary(self) -> str:
        return f"{self.field}: {self.message}"


class StatusError(Exception):
    """An API failure with its HTTP code and the Status body to send."""

    def __init__(self, code: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", ""))
        self.code = code
        self.body = body

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))


@dataclass(frozen=True)
class Target:
    """What an error is about: group, plural resource, Kind and name."""

    group: str
    plural: str
    kind: str
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def qualified_plural(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = details
    body["code"] = code
    return body


def _details(target: Target, kind: str, **extra: Any) -> dict[str, Any]:
    """`details` as Go writes StatusDetails: empty name, group and kind left out."""
    details: dict[str, Any] = {"name": target.name} if target.name else {}
    if target.group:
        details["group"] = target.group
    if kind:
        details["kind"] = kind
    details.update(extra)
    return details


def not_found(target: Target) -> StatusError:
    message = f'{target.qualified_plural} "{target.name}" not found'
    return StatusError(404, status_body(404, "NotFound", message, _details(target, target.plural)))


def namespace_terminating(target: Target, namespace: str) -> StatusError:
    """The NamespaceLifecycle admission plugin's answer to a create in a namespace being deleted (as
    kube-apiserver v1.28.7 answers it: 403, the cause NamespaceTerminating)."""
    message = (
        f'{target.qualified_plural} "{target.name}" is forbidden: unable to create new content in '
        f"namespace {namespace} because it is being terminated"
    )
    cause = {
        "reason": "NamespaceTerminating",
        "message": f"namespace {namespace} is being terminated",
        "field": "metadata.namespace",
    }
    details = _details(target, target.plural, causes=[cause])
    return StatusError(403, status_body(403, "Forbidden", message, details))


def already_exists(target: Target) -> StatusError:
    message = f'{target.qualified_plural} "{target.name}" already exists'
    return StatusError(409, status_body(409, "AlreadyExists", message, _details(target, target.plural)))


def conflict(target: Target, detail: str, *, by_kind: bool = False) -> StatusError:
    """409 Conflict; preconditions name the Kind (as the golden file shows), stale writes the plural."""
    who = target.qualified_kind if by_kind else target.qualified_plural
    message = f'Operation cannot be fulfilled on {who} "{target.name}": {detail}'
    details = _details(target, target.kind if by_kind else target.plural)
    return StatusError(409, status_body(409, "Conflict", message, details))


def stale(target: Target) -> StatusError:
    return conflict(
        target, "the object has been modified; please apply your changes to the latest version and try again"
    )


def invalid(target: Target, causes: list[Cause]) -> StatusError:
    summaries = [c.summary() for c in causes]
    joined = summaries[0] if len(summaries) == 1 else "[" + ", ".join(summaries) + "]"
    message = f'{target.qualified_kind} "{target.name}" is invalid: {joined}'
    details = _details(target, target.kind, causes=[c.as_dict() for c in causes])
    return StatusError(422, status_body(422, "Invalid", message, details))


def request_entity_too_large(limit: int) -> StatusError:
    return StatusError(
        413, status_body(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, status_body(400, "BadRequest", message))


def expired(message: str) -> StatusError:
    return StatusError(410, status_body(410, "Expired", message))


def method_not_allowed() -> StatusError:
    return StatusError(
        405,
        status_body(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
        ),
    )


def unsupported_media_type(accepted: Iterable[str]) -> StatusError:
    """A body in a media type the endpoint does not read (v1.28's wording)."""
    message = "the body of the request was in an unknown format - accepted media types include: " + ", ".join(
        accepted
    )
    return StatusError(415, status_body(415, "UnsupportedMediaType", message))


def unknown_path() -> StatusError:
    return StatusError(404, status_body(404, "NotFound", "the server could not find the requested resource"))


def unclassified(message: str) -> StatusError:
    """A plain Go error that reached the response writer: 500 with no reason (the apiserver's
    `ErrorToAPIStatus` default), as server-side apply's schema errors are."""
    body = status_body(500, "", message)
    del body["reason"]
    return StatusError(500, body)


def internal(message: str) -> StatusError:
    return StatusError(500, status_body(500, "InternalError", message))


def unauthorized() -> StatusError:
    return StatusError(401, status_body(401, "Unauthorized", "Unauthorized"))
