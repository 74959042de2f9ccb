"""Cron schedules: parsing and the next/previous run times, against hand-computed times."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from planner import cron


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.mark.parametrize(
    ("schedule", "after", "expected"),
    [
        ("*/15 * * * *", "2024-03-10T10:07:00+00:00", "2024-03-10T10:15:00+00:00"),
        ("*/15 * * * *", "2024-03-10T10:15:00+00:00", "2024-03-10T10:30:00+00:00"),
        ("@hourly", "2024-03-10T10:07:00+00:00", "2024-03-10T11:00:00+00:00"),
        ("@daily", "2024-03-10T10:07:00+00:00", "2024-03-11T00:00:00+00:00"),
        ("@weekly", "2024-03-10T10:07:00+00:00", "2024-03-17T00:00:00+00:00"),  # 10 March 2024: Sunday
        ("@monthly", "2024-03-10T10:07:00+00:00", "2024-04-01T00:00:00+00:00"),
        ("@yearly", "2024-03-10T10:07:00+00:00", "2025-01-01T00:00:00+00:00"),
        ("30 9-17/4 * * mon-fri", "2024-03-08T17:31:00+00:00", "2024-03-11T09:30:00+00:00"),
        ("0 0 29 feb *", "2024-03-01T00:00:00+00:00", "2028-02-29T00:00:00+00:00"),
        ("5,10 3 * JAN,jul *", "2024-03-10T10:07:00+00:00", "2024-07-01T03:05:00+00:00"),
        ("0 12 1 * 1", "2024-03-02T00:00:00+00:00", "2024-03-04T12:00:00+00:00"),  # day 1 OR Monday
        ("0 12 */10 * *", "2024-03-02T00:00:00+00:00", "2024-03-11T12:00:00+00:00"),  # 1, 11, 21, 31
        ("10/20 * * * ?", "2024-03-10T10:31:00+00:00", "2024-03-10T10:50:00+00:00"),
    ],
)
def test_next_run(schedule: str, after: str, expected: str) -> None:
    assert cron.parse(schedule).next_after(at(after)) == at(expected)


def test_a_time_zone_moves_the_runs_to_its_wall_clock() -> None:
    schedule = cron.parse("0 9 * * *", "Europe/Berlin")
    assert schedule.next_after(at("2024-01-15T00:00:00+00:00")) == at("2024-01-15T08:00:00+00:00")
    assert schedule.next_after(at("2024-07-15T00:00:00+00:00")) == at("2024-07-15T07:00:00+00:00")


def test_the_latest_run_at_or_before_a_moment() -> None:
    schedule = cron.parse("*/5 * * * *")
    assert schedule.latest_at_or_before(at("2024-03-10T10:07:30+00:00")) == at("2024-03-10T10:05:00+00:00")
    assert schedule.latest_at_or_before(at("2024-03-10T10:05:00+00:00")) == at("2024-03-10T10:05:00+00:00")
    assert cron.parse("0 0 1 1 *").latest_at_or_before(at("2024-03-10T10:07:00+00:00")) == at(
        "2024-01-01T00:00:00+00:00"
    )


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("@every-day", "unrecognized descriptor: @every-day"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ],
)
def test_bad_schedules_say_why(schedule: str, message: str) -> None:
    with pytest.raises(cron.CronError, match="^" + re.escape(message)):
        cron.parse(schedule)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(cron.CronError, match="unknown time zone Mars/Olympus"):
        cron.parse("* * * * *", "Mars/Olympus")
