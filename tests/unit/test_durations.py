"""Durations printed as Go spells them, the form `--timeout` and a plan's `timeout` are written in, so a
timeout message quotes the user's own `5m`."""

from __future__ import annotations

import pytest

from planner.plan.durations import format_duration, parse_duration

SPELLED = [
    (300.0, "5m"),
    (90.0, "1m30s"),
    (2.0, "2s"),
    (1.5, "1.5s"),
    (0.5, "500ms"),
    (5400.0, "1h30m"),
    (0.0, "0s"),
]


@pytest.mark.parametrize(
    ("seconds", "text"), SPELLED, ids=[f"{seconds} seconds is {text}" for seconds, text in SPELLED]
)
def test_durations_are_spelled_as_go_spells_them_and_read_back(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


def test_a_bare_zero_is_a_duration_as_in_go_and_no_other_bare_number_is() -> None:
    assert parse_duration("0") == 0.0
    with pytest.raises(ValueError, match="bad duration '5': expected a Go duration like 90s, 5m, 1h30m"):
        parse_duration("5")
