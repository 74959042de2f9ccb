"""Who is idle: a running sandbox whose last activity is older than its idle timeout.

Activity is the `planner.dev/last-activity` timestamp on the sandbox's workspace PVC (set by
`planner sandbox touch`, by resume and by every lifecycle command), else the PVC's creation time. A
paused sandbox is never idle: there is nothing left to pause.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True, kw_only=True)
class Activity:
    """One sandbox as the reaper sees it."""

    name: str
    running: bool
    last_activity: datetime
    idle_timeout: timedelta | None


def is_idle(sandbox: Activity, now: datetime) -> bool:
    if not sandbox.running or sandbox.idle_timeout is None:
        return False
    return now - sandbox.last_activity > sandbox.idle_timeout


def idle_sandboxes(sandboxes: Iterable[Activity], now: datetime) -> list[str]:
    """The names of the running sandboxes idle past their timeout, in name order."""
    return sorted(s.name for s in sandboxes if is_idle(s, now))


def parse_timestamp(text: str) -> datetime:
    """An RFC 3339 timestamp as Kubernetes writes it (`2026-12-01T08:00:00Z`), timezone-aware."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def format_timestamp(moment: datetime) -> str:
    """`moment` in UTC, to the microsecond: activity stamps are compared against timeouts of seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
