"""The Events the controller records about a reconcile (`Reconciled`, `DriftCorrected`,
`ReconcileFailed`, `DriftConflict`), on whatever stands for the plan: a Plan object, or a plan file's
ApplySet parent Secret. `kubectl describe` of that object lists them. An Event is never worth a retry: one that cannot
be created is said, and the reconcile goes on."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from planner.app.reconciling import PlanOutcome
from planner.errors import ApiError, UnreachableError
from planner.kinds import EVENT, PLAN, SECRET
from planner.kube.client import KubeClient, resource_path
from planner.objects import Manifest, metadata_of
from planner.state.runlock import micro_time

COMPONENT = "planner-controller"
FAILED_EVENT = ("ReconcileFailed", "Warning")  # reason and type
CONFLICT_EVENT = ("DriftConflict", "Warning")  # another writer writes back what drift correction undid
POOL_FAILED_EVENT = ("WarmPoolFailed", "Warning")  # a warm pool could not be kept at its size


def event_reason(result: str, drift: int) -> tuple[str, str]:
    """The Event's reason and type for a reconcile's result (`failed`, `applied`, `unchanged`)."""
    if result == "failed":
        return FAILED_EVENT
    if result == "applied" and drift:
        return "DriftCorrected", "Normal"
    return "Reconciled", "Normal"


def event_body(
    involved: Mapping[str, Any], *, reason: str, kind: str, message: str, identity: str
) -> dict[str, Any]:
    """An Event about `involved` (apiVersion, kind, name, namespace, and uid when known)."""
    stamp = micro_time(datetime.now(UTC))
    seconds = stamp.split(".")[0] + "Z"
    return {
        "apiVersion": EVENT.api_version,
        "kind": EVENT.kind,
        "metadata": {
            "name": f"{involved['name']}.{secrets.token_hex(8)}",
            "namespace": involved["namespace"],
        },
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": identity,
        "firstTimestamp": seconds,
        "lastTimestamp": seconds,
        "eventTime": stamp,
        "action": "Reconcile",
        "count": 1,
    }


def record_event(
    client: KubeClient, involved: Mapping[str, Any], *, reason: str, kind: str, message: str, identity: str
) -> str | None:
    """Create the Event; what went wrong when it could not be (an Event is never worth a retry)."""
    body = event_body(involved, reason=reason, kind=kind, message=message, identity=identity)
    try:
        client.request("POST", resource_path(EVENT, str(involved["namespace"])), body=body, verb="create")
    except (ApiError, UnreachableError) as failure:
        return f"could not record event {reason} for {involved['kind']} {involved['name']}: {failure}"
    return None


class EventRecorder:
    """Records the controller's Events as `identity`, saying each one that could not be recorded."""

    def __init__(self, client: KubeClient, *, identity: str, notice: Callable[[str], None]) -> None:
        self.client, self.identity, self.notice = client, identity, notice

    def on_plan(self, plan: Manifest, reason: tuple[str, str], message: str) -> None:
        """An Event on a Plan object; `reason` is the Event's reason and type."""
        metadata = metadata_of(plan)
        involved = {
            "apiVersion": PLAN.api_version,
            "kind": PLAN.kind,
            "name": metadata.get("name"),
            "namespace": metadata.get("namespace"),
            "uid": metadata.get("uid"),
        }
        self._record(involved, reason, message)

    def on_applyset(self, outcome: PlanOutcome) -> None:
        """An Event on a plan file's ApplySet parent Secret saying how its reconcile went."""
        involved = {
            "apiVersion": SECRET.api_version,
            "kind": SECRET.kind,
            "name": outcome.plan,
            "namespace": outcome.namespace,
        }
        self._record(involved, event_reason(outcome.result, outcome.drift), outcome.message)

    def _record(self, involved: Mapping[str, Any], reason: tuple[str, str], message: str) -> None:
        problem = record_event(
            self.client, involved, reason=reason[0], kind=reason[1], message=message, identity=self.identity
        )
        if problem:
            self.notice(problem)
