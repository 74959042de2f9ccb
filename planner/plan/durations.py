"""Go-style durations (`90s`, `5m`, `1h30m`, `1.5h`, `500ms`), the form kubectl and Go tools use for
timeouts. Only the units a plan needs are accepted: h, m, s, ms; no sign, and no bare number but `0`,
which Go's time.ParseDuration reads as zero too."""

from __future__ import annotations

import re

_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|h|m|s))+")

DURATION_HINT = "expected a Go duration like 90s, 5m, 1h30m"


def parse_duration(text: str) -> float:
    """Seconds in `text`; ValueError when it is not a duration."""
    if text == "0":
        return 0.0
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"bad duration {text!r}: {DURATION_HINT}")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _PART.findall(text))


def format_duration(seconds: float) -> str:
    """The Go spelling of a duration, as a plan or `--timeout` would give it: `5m`, `1m30s`, `2h`,
    `1.5s`, `500ms`."""
    if 0 < seconds < 1:
        return f"{seconds * 1000:g}ms"
    hours, rest = divmod(seconds, 3600.0)
    minutes, rest = divmod(rest, 60.0)
    parts = [f"{int(hours)}h" if hours else "", f"{int(minutes)}m" if minutes else ""]
    parts.append(f"{round(rest, 3):g}s" if rest or not (hours or minutes) else "")
    return "".join(parts)
