"""kubectl's short durations (`duration.HumanDuration`), the AGE, LAST SCHEDULE and DURATION columns:
one spelling for the embedded cluster's Tables and for `planner status`. A leaf: it imports nothing
from planner.
"""

from __future__ import annotations


def human_age(seconds: float) -> str:
    """`45s`, `119s`, `5m3s`, `25m`, `5h2m`, `30h`, `3d4h`, `90d`, `2y30d`, `9y`; `0s` for a moment in
    the future by less than two seconds (clock skew), `<invalid>` beyond."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes, hours = whole // 60, whole // 3600
    if minutes < 10:
        return _two_units(minutes, "m", whole % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return _two_units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _two_units(hours // 24, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return _two_units(hours // (24 * 365), "y", (hours // 24) % 365, "d")
    return f"{hours // (24 * 365)}y"


def _two_units(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}" if minor == 0 else f"{major}{major_unit}{minor}{minor_unit}"
