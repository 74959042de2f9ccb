"""What the stages report as they run: small frozen event types, the sink they go to, and the clock.

Stages never print. The executor and the monitor emit events through an `EventSink`; the
printers in `output/` turn them into a rich TTY view or docs/design.md §5's JSON lines. Each event type is its
own frozen dataclass — a union of small types rather than one struct with many optional parts — so a
printer matches on the type and finds exactly the fields that type has.

Events hold plain strings, not `ObjectRef`s: `object` is already the wire spelling
`<kind>/<namespace>/<name>` that printers show and JSON lines carry. Times are seconds
since the epoch, taken from a `Clock` so tests can drive time; `to_json_dict` turns them into RFC 3339.

The monitor's `ContainerStarted`, `ContainerExited`, `ContainerFailed` and `ContainerDeleted` join the
`Event` union as further dataclasses with the same common fields plus `event_id`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol


@dataclass(frozen=True, kw_only=True)
class _Common:
    time: float
    message: str
    object: str | None = None  # `<kind>/<namespace>/<name>`
    runtime_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Planned(_Common):
    """One task of the execution plan, announced before anything runs."""

    task: str
    action: str
    predecessors: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Applying(_Common):
    """A write started (create, server-side apply, namespace, parent, run record)."""

    task: str
    action: str


@dataclass(frozen=True, kw_only=True)
class Applied(_Common):
    task: str
    action: str


@dataclass(frozen=True, kw_only=True)
class Waiting(_Common):
    """A wait started: until the object is ready, or until it is gone. While it is pending it is
    reported again, with `reason`, whenever what holds it up changes (at most every 10 s)."""

    task: str
    until: str
    timeout: float | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Ready(_Common):
    task: str


@dataclass(frozen=True, kw_only=True)
class Deleted(_Common):
    """A delete was accepted (`task` is the delete), or the object is gone (`task` is the wait-gone)."""

    task: str


@dataclass(frozen=True, kw_only=True)
class Skipped(_Common):
    """A task that did not run; `because` names the failed task it depended on (or says why)."""

    task: str
    because: str


@dataclass(frozen=True, kw_only=True)
class Failed(_Common):
    """A task failed; a wait that did carries the last `reason` it was held up by, when one was known."""

    task: str
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class Summary(_Common):
    """The end of a run: task ids by outcome, and the reason of each failure or skip."""

    done: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    reasons: tuple[tuple[str, str], ...] = ()  # (task id, why it failed or was skipped)
    interrupted: bool = False


ExecutorEvent = Planned | Applying | Applied | Waiting | Ready | Deleted | Skipped | Failed | Summary


@dataclass(frozen=True, kw_only=True)
class _ContainerEvent(_Common):
    """A monitor event (gobrave's names): `event_id` is the same every time the same transition of the
    same object is reported, so consumers of the at-least-once stream can deduplicate."""

    event_id: str


@dataclass(frozen=True, kw_only=True)
class ContainerStarted(_ContainerEvent):
    """The workload runs: a Job started, a Deployment has a ready replica, a sandbox Pod is Ready."""


@dataclass(frozen=True, kw_only=True)
class ContainerExited(_ContainerEvent):
    """The workload ended on purpose: `message` is `0` (Job succeeded, Deployment scaled to 0) or
    `paused` (sandbox)."""


@dataclass(frozen=True, kw_only=True)
class ContainerFailed(_ContainerEvent):
    """The workload failed: `message` is the failure condition's message; for a Job, `exit_code` is its
    failed container's, when its pods (or its run record) show one."""

    exit_code: int | None = None


@dataclass(frozen=True, kw_only=True)
class ContainerDeleted(_ContainerEvent):
    """The workload is gone (a DELETED event, or NotFound on lookup)."""


MonitorEvent = ContainerStarted | ContainerExited | ContainerFailed | ContainerDeleted
Event = ExecutorEvent | MonitorEvent


class EventSink(Protocol):
    """Where events go. Called from one thread at a time by the executor; must not block for long."""

    def emit(self, event: Event) -> None: ...


class Clock(Protocol):
    """Wall time and sleeping, passed in so tests run on a fake clock."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def rfc3339(seconds: float) -> str:
    """`2026-11-29T10:30:42.125Z`: UTC, millisecond precision (of the time `datetime.fromtimestamp`
    rounds to the microsecond)."""
    fraction, whole = math.modf(seconds)
    micros = round(fraction * 1_000_000)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    elif micros < 0:
        whole, micros = whole - 1, micros + 1_000_000
    return f"{_utc_second(int(whole))}{micros // 1000:03d}Z"


@functools.lru_cache(maxsize=4)
def _utc_second(whole: int) -> str:
    """`2026-11-29T10:30:42.`: an event stream's events share a second in their thousands."""
    return datetime.fromtimestamp(whole, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.")


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_json_value(item) for item in value]
    return value


def to_json_dict(event: Event) -> dict[str, Any]:
    """docs/design.md §5's JSON object: `time` as RFC 3339, `type` the event's class name, absent fields left out."""
    out: dict[str, Any] = {"time": rfc3339(event.time), "type": type(event).__name__}
    for name in _field_names(type(event)):
        value = getattr(event, name)
        if value is not None:
            out[name] = dict(value) if name == "reasons" else _json_value(value)
    return out


_FIELD_NAMES: dict[type[_Common], tuple[str, ...]] = {}


def _field_names(event_type: type[_Common]) -> tuple[str, ...]:
    """The fields a JSON line carries besides `time`, in declaration order, looked up once per type."""
    names = _FIELD_NAMES.get(event_type)
    if names is None:
        names = _FIELD_NAMES[event_type] = tuple(
            field.name for field in dataclasses.fields(event_type) if field.name != "time"
        )
    return names
