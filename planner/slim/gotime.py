"""Go's `time.Parse` for the two layouts Kubernetes timestamps use, with Go's own error messages.

A `metav1.Time` is read with layout RFC 3339 and a `metav1.MicroTime` with RFC 3339 and six fractional
digits; a value that does not fit fails the whole request with the parse error Go writes (`parsing time
"2024-01-01T00:00:10Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"`), so the
embedded server reproduces that walk: the layout's literal text and its elements in order, the
remaining value reported at the element that failed, range checks and trailing text last.
"""

from __future__ import annotations

import calendar
import functools
from collections.abc import Callable

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"


class _Bad(Exception):
    """The element could not be read (Go's errBad)."""


class _OutOfRange(Exception):
    """The element was read but its value is out of range ("month", "day", …)."""


# (literal prefix, layout element, reader): a reader consumes the element's text from the value and
# returns what is left; `fields` collects the numbers the final day check needs.
Reader = Callable[[str, dict[str, int]], str]


def _digits(value: str, width: int, *, fixed: bool = True) -> tuple[int, str]:
    taken = 0
    while taken < width and taken < len(value) and value[taken].isdigit():
        taken += 1
    if taken == 0 or (fixed and taken < width):
        raise _Bad
    return int(value[:taken]), value[taken:]


def _year(value: str, fields: dict[str, int]) -> str:
    if len(value) < 4 or not value[:4].isdigit():
        raise _Bad
    fields["year"] = int(value[:4])
    return value[4:]


def _number(name: str, width: int, low: int, high: int, *, fixed: bool = True) -> Reader:
    def read(value: str, fields: dict[str, int]) -> str:
        number, rest = _digits(value, width, fixed=fixed)
        fields[name] = number
        if not low <= number <= high:
            raise _OutOfRange(name)
        return rest

    return read


def _seconds(value: str, fields: dict[str, int]) -> str:
    rest = _number("second", 2, 0, 59)(value, fields)
    if len(rest) > 1 and rest[0] in ".," and rest[1].isdigit():  # a fraction the layout does not ask for
        rest = rest[1:]
        while rest and rest[0].isdigit():
            rest = rest[1:]
    return rest


def _micros(value: str, fields: dict[str, int]) -> str:
    if len(value) < 7 or value[0] not in ".," or not value[1:7].isdigit():
        raise _Bad
    return value[7:]


def _zone(value: str, fields: dict[str, int]) -> str:
    if value.startswith("Z"):
        return value[1:]
    if len(value) < 6 or value[3] != ":" or value[0] not in "+-":
        raise _Bad
    if not (value[1:3].isdigit() and value[4:6].isdigit()):
        raise _Bad
    return value[6:]


def _layout(with_micros: bool) -> tuple[tuple[str, str, Reader], ...]:
    seconds: list[tuple[str, str, Reader]] = [(":", "05", _seconds)]
    if with_micros:
        seconds = [(":", "05", _number("second", 2, 0, 59)), ("", ".000000", _micros)]
    return (
        ("", "2006", _year),
        ("-", "01", _number("month", 2, 1, 12)),
        ("-", "02", _number("day", 2, 1, 31)),
        ("T", "15", _number("hour", 2, 0, 23, fixed=False)),
        (":", "04", _number("minute", 2, 0, 59)),
        *seconds,
        ("", "Z07:00", _zone),
    )


LAYOUTS = {RFC3339: _layout(False), RFC3339_MICRO: _layout(True)}


@functools.lru_cache(maxsize=4096)
def parse_error(layout: str, value: str) -> str | None:
    """Go's error for `time.Parse(layout, value)`, or None when the value parses (remembered: the same
    timestamps come back in every write of an object, and writes in the same second share theirs)."""
    rest = value
    fields: dict[str, int] = {}
    for prefix, element, reader in LAYOUTS[layout]:
        if not rest.startswith(prefix):
            return _cannot_parse(layout, value, rest, prefix)
        rest = rest[len(prefix) :]
        try:
            rest = reader(rest, fields)
        except _Bad:
            return _cannot_parse(layout, value, rest, element)
        except _OutOfRange as exc:
            return f"parsing time {_quote(value)}: {exc.args[0]} out of range"
    if rest:
        return f"parsing time {_quote(value)}: extra text: {_quote(rest)}"
    if fields["day"] > calendar.monthrange(fields["year"], fields["month"])[1]:
        return f"parsing time {_quote(value)}: day out of range"
    return None


def _cannot_parse(layout: str, value: str, rest: str, element: str) -> str:
    return (
        f"parsing time {_quote(value)} as {_quote(layout)}: cannot parse {_quote(rest)} as {_quote(element)}"
    )


def _quote(text: str) -> str:
    escaped = "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 else ("\\" + c if c in '"\\' else c) for c in text)
    return f'"{escaped}"'
