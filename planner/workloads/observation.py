"""Lifecycle facts from one look at a live object: the types every kind's `observe` returns, and the
readings of status they share.

A look says whether the workload has started (and which object's uid the Started event names) and
whether it has ended (Exited, Failed or Deleted, with gobrave's messages). It never says what to emit:
`planner.monitor.state` turns facts into transitions, so the same look may be taken any number of times.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from planner.objects import Manifest, metadata_of

EndType = Literal["ContainerExited", "ContainerFailed", "ContainerDeleted"]

EXIT_SUCCESS = "0"
RUN_FAILED = "job failed"


@dataclass(frozen=True, kw_only=True)
class End:
    """The workload ended. `uid` names the object the event is about; None lets the state machine use
    the last uid it saw (an object that is gone has none to read)."""

    type: EndType
    message: str
    uid: str | None = None
    exit_code: int | None = None  # a failed Job's container's
    at: float | None = None  # when, by the object's own timestamps (a replayed end keeps its time)


@dataclass(frozen=True, kw_only=True)
class Observation:
    """What one look at a workload proves. `uid` is the workload's own object (Deployment, Job, the
    sandbox's workspace PVC) when it exists; `started_uid` is set once the workload is known to run."""

    uid: str | None = None
    started_uid: str | None = None
    started_message: str = ""
    started_at: float | None = None  # when, by the object's own timestamps
    end: End | None = None


NOTHING = Observation()


def uid_of(obj: Manifest) -> str:
    return str(metadata_of(obj).get("uid") or "")


def status_of(obj: Manifest) -> Mapping[str, Any]:
    return obj.get("status") or {}


def count(obj: Manifest, field: str) -> int:
    return int(status_of(obj).get(field) or 0)


def condition(obj: Manifest, kind: str) -> Mapping[str, Any] | None:
    for found in status_of(obj).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return None


def is_true(found: Mapping[str, Any] | None) -> bool:
    return found is not None and found.get("status") == "True"


def reason_text(found: Mapping[str, Any], fallback: str) -> str:
    return str(found.get("message") or found.get("reason") or fallback)


def seconds(stamp: object) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp the API server wrote; None when there is none."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def gone(what: str) -> Observation:
    return Observation(end=End(type="ContainerDeleted", message=f"{what} is gone"))
