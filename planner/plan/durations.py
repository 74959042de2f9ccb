"""Go-style durations (`90s`, `5m`, `1h30m`, `1.5h`, `500ms`), the form kubectl and Go tools use for
timeouts. Only the units a plan needs are accepted: h, m, s, ms; no sign, no bare numbers."""

from __future__ import annotations

import re

_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_WHOLE = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|h|m|s))+")

DURATION_HINT = "expected a Go duration like 90s, 5m, 1h30m"


def parse_duration(text: str) -> float:
    """Seconds in `text`; ValueError when it is not a duration."""
    if not _WHOLE.fullmatch(text):
        raise ValueError(f"bad duration {text!r}: {DURATION_HINT}")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _PART.findall(text))
