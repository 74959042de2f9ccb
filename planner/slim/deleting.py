"""Delete options and the rules of deletion every kind shares: preconditions, propagation
finalizers, graceful deletes in progress, the response.

`propagationPolicy` Foreground/Orphan become the `foregroundDeletion`/`orphan` finalizers (the default
policy is per kind: Background, or Orphan for Jobs). A kind with a `deletion_grace` hook (Pod, see
`lifecycle.py`) may wait out a grace period before whoever ends it removes the object. The response
is a `Status` except for kinds the apiserver answers with the deleted object.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from planner.slim import status_errors
from planner.slim.meta import rfc3339
from planner.slim.resources import ResourceType
from planner.slim.verbhelpers import error_target, with_type

Obj = dict[str, Any]


@dataclass(frozen=True)
class DeleteOptions:
    propagation_policy: str | None = None
    grace_period_seconds: int | None = None
    precondition_uid: str | None = None
    precondition_rv: str | None = None
    dry_run: bool = False

    @classmethod
    def from_body(cls, body: Obj | None, query: dict[str, str]) -> DeleteOptions:
        body = body or {}
        preconditions = body.get("preconditions") or {}
        policy = body.get("propagationPolicy") or query.get("propagationPolicy")
        if policy is None and (body.get("orphanDependents") is not None or "orphanDependents" in query):
            orphan = body.get("orphanDependents", query.get("orphanDependents") in ("true", "1"))
            policy = "Orphan" if orphan else "Background"
        grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        dry_run = body.get("dryRun") or ([query["dryRun"]] if "dryRun" in query else [])
        return cls(
            propagation_policy=policy,
            grace_period_seconds=int(grace) if grace is not None else None,
            precondition_uid=preconditions.get("uid"),
            precondition_rv=preconditions.get("resourceVersion"),
            dry_run="All" in dry_run,
        )


def check_preconditions(rt: ResourceType, old: Obj, options: DeleteOptions) -> None:
    meta = old["metadata"]
    preconditions = (
        ("UID", options.precondition_uid, meta.get("uid"), "deleted and then recreated"),
        ("ResourceVersion", options.precondition_rv, meta.get("resourceVersion"), "modified"),
    )
    for field, wanted, recorded, what in preconditions:
        if wanted and wanted != recorded:
            raise status_errors.conflict(
                error_target(rt, meta["name"]),
                f"the {field} in the precondition ({wanted}) does not match the {field} in record "
                f"({recorded}). The object might have been {what}",
                by_kind=True,
            )


def with_policy_finalizer(finalizers: list[str], policy: str) -> list[str]:
    if policy not in ("Background", "Foreground", "Orphan"):
        raise status_errors.bad_request(f"invalid propagationPolicy: {policy}")
    wanted = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(policy)
    others = [f for f in finalizers if f not in ("foregroundDeletion", "orphan") or f == wanted]
    if wanted and wanted not in others:
        others.append(wanted)
    return others


def waits_for_grace_period(rt: ResourceType, obj: Obj) -> bool:
    """A graceful delete in progress: whoever ends the grace period (the node agent) removes it."""
    return rt.deletion_grace is not None and bool(obj["metadata"].get("deletionGracePeriodSeconds"))


def timestamp_in(seconds: int) -> str:
    return rfc3339(time.time() + seconds)


def deleted_response(rt: ResourceType, obj: Obj) -> Obj:
    if rt.returns_deleted_object:
        return with_type(rt, obj)
    details: Obj = {"name": obj["metadata"]["name"]}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    details["uid"] = obj["metadata"].get("uid")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
