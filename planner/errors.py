"""One exception tree for all of planner, and the exit code each error maps to.

    PlannerError                    exit 1 unless a subclass says otherwise
    ├── UsageError                  bad flags or arguments
    ├── PlanError                   a plan failed to load; carries every Diagnostic at once
    ├── RuntimeIDError              a malformed runtime ID or unknown runtime prefix
    ├── NoClusterError              no kubeconfig and no in-cluster config
    ├── KubeconfigError             a named kubeconfig or context is missing or broken
    ├── UnreachableError            the API server could not be reached (refused, unresolvable, timed out, TLS)
    ├── LockHeldError               exit 3: another run holds the plan's lock
    ├── WrongClusterError           a saved plan was made against another cluster
    ├── WorkloadNotFoundError       exit 4: the runtime ID's workload does not exist
    ├── DataLossError               a PVC or Namespace would be replaced or deleted without --allow-data-loss
    ├── OwnershipError              an object to create exists and belongs to no plan or another one
    ├── EmptyPlanError              a plan declares nothing but its ApplySet has members, without --allow-empty
    ├── PlanFilesChangedError       a saved plan's files render differently now
    │   └── SecretValuesChangedError    only because a Secret's value resolves differently now
    ├── PlanFilesMissingError       a saved plan's files are neither where apply runs nor where plan ran
    ├── StalePlanError              a saved plan's objects moved since it was made
    ├── CacheSyncError              an informer cache could not list or watch its kind
    ├── SourceError                 a Plan's Git source could not give its plan (`reason` says why)
    └── ApiError                    the API server answered with an error status
        ├── BadRequestError 400, UnauthorizedError 401, ForbiddenError 403, NotFoundError 404,
        ├── ConflictError 409 (AlreadyExistsError when reason is AlreadyExists), GoneError 410,
        ├── InvalidError 422, TooManyRequestsError 429, ServerError 5xx
        └── api_error(status, body) picks the class: the one place HTTP status maps to a type.

Messages are for people: short, naming the object, with payloads cut short.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar, Literal


class ExitCode(IntEnum):
    """The exit codes, a contract (docs/design.md §5): the one place they are defined."""

    OK = 0
    FAILED = 1  # any error, usage errors included; a failed or timed-out task
    CHANGES = 2  # `plan --detailed-exitcode`, `reconcile --check`: there is work
    LOCKED = 3  # another run holds a plan's lock
    NOT_FOUND = 4  # a runtime ID's workload does not exist


class PlannerError(Exception):
    exit_code: ClassVar[int] = ExitCode.FAILED


class UsageError(PlannerError):
    pass


class SourceError(PlannerError):
    """A Plan's Git source could not give its plan: `reason` is the `SourceReady` condition's reason
    (planner.sources.failures), the message never holds a credential."""

    def __init__(self, reason: str, message: str, *, revision: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.revision = revision  # the commit whose plan failed (""; the fetch failed)


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem in a plan file, printed as `file:LINE:COL: path: message` (1-based)."""

    file: str
    line: int
    column: int
    path: str
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        prefix = "warning: " if self.severity == "warning" else ""
        return (
            f"{where}: {self.path}: {prefix}{self.message}"
            if self.path
            else f"{where}: {prefix}{self.message}"
        )


class PlanError(PlannerError):
    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = sorted(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class RuntimeIDError(PlannerError):
    pass


class NoClusterError(PlannerError):
    def __init__(self) -> None:
        super().__init__(
            "no cluster configured: no kubeconfig found (KUBECONFIG, --kubeconfig, ~/.kube/config) and not "
            "running in a cluster; `planner cluster up` starts a local embedded cluster"
        )


class KubeconfigError(PlannerError):
    """A kubeconfig the user named (`--kubeconfig`, `KUBECONFIG`, `--context`) cannot be used: it is never
    replaced by another source, so the message says exactly what is wrong."""


class UnreachableError(PlannerError):
    """No answer from the API server at the transport level, after the client's bounded retries:
    "cannot reach https://127.0.0.1:6443: connection refused"."""


class LockHeldError(PlannerError):
    """Another run holds the plan's lock; `holder` says who and since when, in a few words."""

    exit_code = ExitCode.LOCKED

    def __init__(self, message: str, *, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class WrongClusterError(PlannerError):
    """`apply FILE`: the saved plan was made against another cluster (or does not say which)."""


class WorkloadNotFoundError(PlannerError):
    exit_code = ExitCode.NOT_FOUND


class ApiError(PlannerError):
    status: ClassVar[int] = 0

    def __init__(
        self, message: str, *, status: int, reason: str = "", body: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.http_status = status
        self.reason = reason
        self.body = body or {}


class BadRequestError(ApiError):
    status = 400


class UnauthorizedError(ApiError):
    status = 401


class ForbiddenError(ApiError):
    status = 403


class NotFoundError(ApiError):
    status = 404


def namespace_terminating(error: ApiError) -> bool:
    """Whether the server refused a create because its namespace is being deleted (the
    NamespaceLifecycle admission plugin's 403, cause NamespaceTerminating)."""
    causes = (error.body.get("details") or {}).get("causes") or ()
    return error.http_status == 403 and any(c.get("reason") == "NamespaceTerminating" for c in causes)


class ConflictError(ApiError):
    status = 409


class AlreadyExistsError(ConflictError):
    pass


class GoneError(ApiError):
    status = 410


class InvalidError(ApiError):
    status = 422


class TooManyRequestsError(ApiError):
    status = 429


class ServerError(ApiError):
    status = 500


_BY_STATUS: dict[int, type[ApiError]] = {
    cls.status: cls
    for cls in (
        BadRequestError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        ConflictError,
        GoneError,
        InvalidError,
        TooManyRequestsError,
    )
}

_MAX_MESSAGE = 400


def api_error(status: int, body: bytes | str | dict[str, Any] | None) -> ApiError:
    """The exception for an API error response: a Kubernetes Status body when there is one."""
    parsed: dict[str, Any] = {}
    if isinstance(body, dict):
        parsed = body
    elif body:
        try:
            loaded = json.loads(body)
            parsed = loaded if isinstance(loaded, dict) else {}
        except ValueError:
            parsed = {}
    reason = str(parsed.get("reason", ""))
    message = str(parsed.get("message") or (body if isinstance(body, str) else "") or f"HTTP {status}")
    if len(message) > _MAX_MESSAGE:
        message = message[:_MAX_MESSAGE] + "…"
    if status == 409 and reason == "AlreadyExists":
        cls: type[ApiError] = AlreadyExistsError
    elif status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(message, status=status, reason=reason, body=parsed)


class DataLossError(PlannerError):
    """The plan would replace or delete a PVC or Namespace and `--allow-data-loss` was not given.

    `objects` pairs each such object (`persistentvolumeclaim/shop/data`) with why it would go; `consent`
    says how to accept it (a Plan object sets `reconcile.allowDataLoss` rather than a flag)."""

    def __init__(
        self, objects: list[tuple[str, str]], *, consent: str = "re-run with --allow-data-loss"
    ) -> None:
        self.objects = sorted(objects)
        lines = [f"  {name}: {why}" for name, why in self.objects]
        super().__init__(f"the plan destroys data; {consent} to accept it:\n" + "\n".join(lines))


class OwnershipError(PlannerError):
    """A create met a same-named object without this plan's part-of label:
    "deployment shop/api exists and is not managed by plan shop: `planner apply --adopt` of this plan takes it over"."""


class EmptyPlanError(PlannerError):
    """The plan renders nothing while its ApplySet parent still lists members: applying it would prune
    them all (an emptied or mis-pointed plan file is the classic prune accident). `--allow-empty` accepts it."""


class PlanFilesChangedError(PlannerError):
    """`apply FILE`: the plan files no longer render the closure the saved plan was made from."""


class SecretValuesChangedError(PlanFilesChangedError):
    """`apply FILE`: the plan files render the same closure but for Secret values, resolved again from
    the environment or files beside the plan: each changed Secret is named, never its value."""


class PlanFilesMissingError(PlannerError):
    """`apply FILE`: the saved plan's files are neither where apply runs nor under the recorded root."""


class StalePlanError(PlannerError):
    """`apply FILE`: objects moved since the saved plan was made; `moved` pairs each with what happened
    (`deployment/shop/api: changed`), so the message names every one."""

    def __init__(self, moved: list[tuple[str, str]]) -> None:
        self.moved = sorted(moved)
        lines = [f"  {name}: {what}" for name, what in self.moved]
        super().__init__(
            "plan is stale: objects moved since the plan was made; plan again:\n" + "\n".join(lines)
        )


class CacheSyncError(PlannerError):
    """An informer cache did not sync (403 Forbidden, 404 for an unknown kind, an unreachable server in
    time): its readers get this instead of an empty cache that would look like "nothing exists"."""
