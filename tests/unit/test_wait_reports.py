"""waiting.report_due: when a pending wait's reason is news — at most once per 10 s per wait, a
problem at once the first time, a step under way only once the wait has lasted 10 s."""

from __future__ import annotations

import pytest

from planner.wait.reasons import Reason
from planner.waiting import REPORT_INTERVAL, report_due

PULL = Reason(text="ImagePullBackOff: not found", problem=True)
CRASH = Reason(text="CrashLoopBackOff (2 restarts): container web exited with code 1", problem=True)
CREATING = Reason(text="0/1 pods ready: ContainerCreating", problem=False)


@pytest.mark.parametrize(
    ("reason", "reported", "reported_at", "now", "expected"),
    [
        pytest.param(PULL, None, None, 0.5, True, id="a problem is reported at once the first time"),
        pytest.param(CREATING, None, None, 9.0, False, id="a step under way is not news in the first 10 s"),
        pytest.param(CREATING, None, None, 10.0, True, id="a step under way that lasted 10 s is"),
        pytest.param(PULL, PULL.text, 1.0, 30.0, False, id="the same reason again is never reported"),
        pytest.param(CRASH, PULL.text, 1.0, 5.0, False, id="a change within 10 s of the last report waits"),
        pytest.param(CRASH, PULL.text, 1.0, 11.0, True, id="and is reported once the 10 s have passed"),
        pytest.param(None, PULL.text, 1.0, 30.0, False, id="a reason that cleared is not reported"),
    ],
)
def test_when_a_reason_is_news(
    reason: Reason | None, reported: str | None, reported_at: float | None, now: float, expected: bool
) -> None:
    due = report_due(
        reason, reported=reported, reported_at=reported_at, started=0.0, now=now, interval=REPORT_INTERVAL
    )
    assert due is expected
