"""planner.ages, the one spelling of kubectl's short durations that `planner status` and the embedded
cluster's Tables share: each boundary of `duration.HumanDuration` from both sides, and fractions."""

from __future__ import annotations

import pytest

from planner.ages import human_age

CASES = [
    (-2.0, "<invalid>", "two seconds ahead is invalid"),
    (-1.9, "0s", "a fraction is cut toward zero: -1 is clock skew"),
    (0.0, "0s", "now"),
    (119.99, "119s", "the last second shown in seconds"),
    (120, "2m", "two minutes drop the seconds"),
    (121, "2m1s", "minutes and seconds"),
    (599, "9m59s", "the last minutes-and-seconds"),
    (600, "10m", "ten minutes"),
    (3 * 3600 - 1, "179m", "the last whole minutes"),
    (3 * 3600, "3h", "three hours"),
    (8 * 3600 - 60, "7h59m", "the last hours-and-minutes"),
    (8 * 3600, "8h", "eight hours"),
    (48 * 3600 - 1, "47h", "the last whole hours"),
    (48 * 3600, "2d", "two days"),
    (8 * 86400 - 3600, "7d23h", "the last days-and-hours"),
    (8 * 86400, "8d", "eight days"),
    (2 * 365 * 86400 - 86400, "729d", "the last whole days"),
    (2 * 365 * 86400 + 86400, "2y1d", "years and days"),
    (8 * 365 * 86400 - 86400, "7y364d", "the last years-and-days"),
    (8 * 365 * 86400, "8y", "eight years"),
]


@pytest.mark.parametrize(("seconds", "shown"), [c[:2] for c in CASES], ids=[c[2] for c in CASES])
def test_kubectls_short_duration(seconds: float, shown: str) -> None:
    assert human_age(seconds) == shown
