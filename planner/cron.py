"""Cron schedules as the CronJob controller reads them (robfig/cron's standard five-field parser).

Shared by plan validation (a `kind: cronjob` schedule and time zone) and the embedded cluster (its
API validation and CronJob controller), so both refuse exactly what the API server does.

Fields are minute, hour, day of month, month and day of week; each a `*` (or `?`), a value, a range
`a-b`, a step `*/n`, `a-b/n` or `a/n` (from a to the end), or a comma-separated list of those. Months
and weekdays take their English three-letter names (`jan`, `mon`, any case); Sunday is 0. The macros
`@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`) and `@hourly` stand for their
five fields. When both day fields are restricted a day matching either runs (when one is `*` or `?`,
both must match), as in cron. Times are evaluated in a `zoneinfo` time zone (`spec.timeZone`, UTC
when none). A bad schedule raises `CronError` with the parser's message.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6}
MONTHS |= {"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
WEEKDAYS = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
SEARCH_DAYS = 366 * 5  # a schedule with no time within five years (Feb 30) never runs


class CronError(ValueError):
    pass


@dataclass(frozen=True)
class Field:
    values: frozenset[int]
    star: bool  # `*` or `?`: the day fields then combine with AND rather than OR


@dataclass(frozen=True)
class Schedule:
    minutes: Field
    hours: Field
    days: Field
    months: Field
    weekdays: Field
    zone: ZoneInfo

    def day_matches(self, day: date) -> bool:
        if day.month not in self.months.values:
            return False
        in_month = day.day in self.days.values
        in_week = (day.isoweekday() % 7) in self.weekdays.values
        if self.days.star or self.weekdays.star:
            return in_month and in_week
        return in_month or in_week

    def next_after(self, moment: datetime) -> datetime | None:
        """The first scheduled time strictly after `moment` (aware), in UTC."""
        return next((t for t in self._times(moment, forward=True) if t > moment), None)

    def latest_at_or_before(self, moment: datetime) -> datetime | None:
        """The last scheduled time at or before `moment` (aware), in UTC."""
        return next((t for t in self._times(moment, forward=False) if t <= moment), None)

    def _times(self, moment: datetime, *, forward: bool) -> Iterator[datetime]:
        local = moment.astimezone(self.zone)
        step = timedelta(days=1 if forward else -1)
        hours = sorted(self.hours.values, reverse=not forward)
        minutes = sorted(self.minutes.values, reverse=not forward)
        day = local.date()
        end = day + step * SEARCH_DAYS
        while (day <= end) if forward else (day >= end):
            if day.month not in self.months.values:  # skip the rest of the month at once
                day = _month_edge(day, forward=forward)
                continue
            if self.day_matches(day):
                for hour in hours:
                    for minute in minutes:
                        wall = datetime(day.year, day.month, day.day, hour, minute, tzinfo=self.zone)
                        yield wall.astimezone(UTC)
            day += step


def _month_edge(day: date, *, forward: bool) -> date:
    """The first day of the next month (forward) or the last day of the previous one."""
    if not forward:
        return day.replace(day=1) - timedelta(days=1)
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def _number(text: str, names: dict[str, int], low: int, high: int, expression: str) -> int:
    value = names.get(text.lower())
    if value is None:
        if not text.isdigit():
            raise CronError(
                f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax'
            )
        value = int(text)
    if value < low:
        raise CronError(f"beginning of range ({value}) below minimum ({low}): {expression}")
    if value > high:
        raise CronError(f"end of range ({value}) above maximum ({high}): {expression}")
    return value


def _part(expression: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    range_text, slash, step_text = expression.partition("/")
    star = range_text in ("*", "?")
    if star:
        start, end = low, high
    else:
        first, dash, last = range_text.partition("-")
        start = _number(first, names, low, high, expression)
        end = _number(last, names, low, high, expression) if dash else start
        if slash and not dash:
            end = high
    step = 1
    if slash:
        if not step_text.isdigit():
            raise CronError(
                f'failed to parse int from {step_text}: strconv.Atoi: parsing "{step_text}": invalid syntax'
            )
        step = int(step_text)
        if step == 0:
            raise CronError(f"step of range should be a positive number: {expression}")
        star = star and step == 1
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    return set(range(start, end + 1, step)), star


def _field(text: str, low: int, high: int, names: dict[str, int] | None = None) -> Field:
    values: set[int] = set()
    star = False
    for expression in text.split(","):
        found, is_star = _part(expression, low, high, names or {})
        values |= found
        star = star or is_star
    return Field(frozenset(values), star)


def zone(name: str | None) -> ZoneInfo:
    """The time zone a CronJob's `timeZone` names (UTC when none); CronError when unknown."""
    if not name:
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CronError(f"unknown time zone {name}") from exc


@functools.lru_cache(maxsize=4096)
def parse(schedule: str, time_zone: str | None = None) -> Schedule:
    """The schedule (cached: controllers parse the same few schedules on every sync)."""
    text = schedule.strip()
    if text.startswith("@"):
        if text not in MACROS:
            raise CronError(f"unrecognized descriptor: {text}")
        text = MACROS[text]
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return Schedule(
        minutes=_field(fields[0], 0, 59),
        hours=_field(fields[1], 0, 23),
        days=_field(fields[2], 1, 31),
        months=_field(fields[3], 1, 12, MONTHS),
        weekdays=_field(fields[4], 0, 6, WEEKDAYS),
        zone=zone(time_zone),
    )
