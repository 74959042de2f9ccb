"""The Events the controller records about a reconcile (`Reconciled`, `DriftCorrected`,
`ReconcileFailed`, `DriftConflict`), on whatever stands for the plan: a Plan object, or a plan file's
ApplySet parent Secret. `kubectl describe` of that object lists them. An Event is never worth a retry: one that cannot
be created is said, and the reconcile goes on.

Repeats are aggregated as client-go's EventCorrelator does: an Event identical to one this recorder made
for the same object (type, reason, message, source) within `AGGREGATION_WINDOW` is not created again but
PATCHed, its `count` one more and its `lastTimestamp` now (a retried failure is one Event counting up,
not one Event per retry). The recorder remembers the last `REMEMBERED` such Events."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planner.app.reconciling import PlanOutcome
from planner.controller.planref import MERGE_PATCH
from planner.errors import ApiError, NotFoundError, UnreachableError
from planner.kinds import EVENT, PLAN, SECRET
from planner.kube.client import KubeClient, resource_path
from planner.objects import Manifest, metadata_of
from planner.state.runlock import micro_time

COMPONENT = "planner-controller"
FAILED_EVENT = ("ReconcileFailed", "Warning")  # reason and type
CONFLICT_EVENT = ("DriftConflict", "Warning")  # another writer writes back what drift correction undid
POOL_FAILED_EVENT = ("WarmPoolFailed", "Warning")  # a warm pool could not be kept at its size
AGGREGATION_WINDOW = 600.0  # seconds, as client-go's EventCorrelator
REMEMBERED = 4096  # Events kept to aggregate into, as client-go's LRU cache


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
    seconds = _to_seconds(stamp)
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


def _to_seconds(stamp: str) -> str:
    """A MicroTime cut to the second, as an Event's first and last timestamps are."""
    return stamp.split(".")[0] + "Z"


@dataclass
class Recorded:
    """An Event this recorder made: its name, how often it was said, and when last (monotonic seconds)."""

    name: str
    count: int
    said: float


class EventCorrelator:
    """Which Events were made, by what makes them identical, within `window` seconds of `clock`."""

    def __init__(
        self, *, window: float = AGGREGATION_WINDOW, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window, self.clock = window, clock
        self._recorded: OrderedDict[Hashable, Recorded] = OrderedDict()
        self._mutex = threading.Lock()

    def repeat_of(self, key: Hashable) -> Recorded | None:
        """The Event `key` would repeat (its count not yet raised), or None: a new one is to be made."""
        with self._mutex:
            found = self._recorded.get(key)
            if found is None or self.clock() - found.said > self.window:
                return None
            return Recorded(found.name, found.count, found.said)

    def made(self, key: Hashable, name: str, count: int) -> None:
        """The Event `name` now counts `count` (1: it was just created)."""
        with self._mutex:
            self._recorded[key] = Recorded(name, count, self.clock())
            self._recorded.move_to_end(key)
            while len(self._recorded) > REMEMBERED:
                self._recorded.popitem(last=False)


def aggregation_key(involved: Mapping[str, Any], *, reason: str, kind: str, message: str) -> Hashable:
    """What makes two Events identical: the object, the type, reason and message (the source is ours)."""
    target = tuple(str(involved.get(field)) for field in ("kind", "namespace", "name", "uid"))
    return (*target, kind, reason, message, COMPONENT)


def record_event(
    client: KubeClient, involved: Mapping[str, Any], *, reason: str, kind: str, message: str, identity: str
) -> tuple[str | None, str | None]:
    """Create the Event: its name, or what went wrong when it could not be (an Event is never worth a
    retry)."""
    body = event_body(involved, reason=reason, kind=kind, message=message, identity=identity)
    try:
        client.request("POST", resource_path(EVENT, str(involved["namespace"])), body=body, verb="create")
    except (ApiError, UnreachableError) as failure:
        return None, f"could not record event {reason} for {involved['kind']} {involved['name']}: {failure}"
    return str(body["metadata"]["name"]), None


def count_event(client: KubeClient, namespace: str, name: str, count: int) -> bool:
    """Raise the Event's count to `count`, seen now; False when it is gone (expired, deleted)."""
    patch = {"count": count, "lastTimestamp": _to_seconds(micro_time(datetime.now(UTC)))}
    path = resource_path(EVENT, namespace, name)
    try:
        client.request("PATCH", path, body=patch, content_type=MERGE_PATCH, verb="patch")
    except NotFoundError:
        return False
    return True


class EventRecorder:
    """Records the controller's Events as `identity`, saying each one that could not be recorded."""

    def __init__(
        self,
        client: KubeClient,
        *,
        identity: str,
        notice: Callable[[str], None],
        correlator: EventCorrelator | None = None,
    ) -> None:
        self.client, self.identity, self.notice = client, identity, notice
        self.correlator = correlator or EventCorrelator()

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
        """Count a repeat on the Event it repeats; else create one."""
        key = aggregation_key(involved, reason=reason[0], kind=reason[1], message=message)
        repeat = self.correlator.repeat_of(key)
        if repeat is not None:
            try:
                if count_event(self.client, str(involved["namespace"]), repeat.name, repeat.count + 1):
                    self.correlator.made(key, repeat.name, repeat.count + 1)
                    return
            except (ApiError, UnreachableError) as failure:
                self.notice(
                    f"could not count event {reason[0]} for {involved['kind']} {involved['name']}: {failure}"
                )
                return
        name, problem = record_event(
            self.client, involved, reason=reason[0], kind=reason[1], message=message, identity=self.identity
        )
        if name is not None:
            self.correlator.made(key, name, 1)
        if problem:
            self.notice(problem)
