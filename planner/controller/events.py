"""The Events the controller records about a reconcile (`Reconciled`, `DriftCorrected`,
`ReconcileFailed`), on whatever stands for the plan: a Plan object, or a plan file's ApplySet parent
Secret. `kubectl describe` of that object lists them."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from planner.errors import ApiError, UnreachableError
from planner.kinds import EVENT
from planner.kube.client import KubeClient, resource_path
from planner.state.runlock import micro_time

COMPONENT = "planner-controller"


def event_reason(result: str, drift: int) -> tuple[str, str]:
    """The Event's reason and type for a reconcile's result (`failed`, `applied`, `unchanged`)."""
    if result == "failed":
        return "ReconcileFailed", "Warning"
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
