"""planner.state.lock's pure parts: the Lease it writes, reading a holder from one, judging expiry on a given
clock, and the sentences a person reads. The protocol itself runs against the embedded cluster in
tests/e2e/test_lock.py."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from planner.state.lock import (
    Holder,
    LockOptions,
    held_message,
    lease_body,
    lease_name,
    micro_time,
    run_identity,
    took_over_message,
)

NOW = datetime(2026, 5, 1, 10, 0, 0, 250_000, tzinfo=UTC)


def lease(holder: str = "alice@ci-7/4711/9f3a0c1e", *, renewed: str | None = None, seconds: int = 30) -> dict:  # type: ignore[type-arg]
    spec = {
        "holderIdentity": holder,
        "leaseDurationSeconds": seconds,
        "acquireTime": "2026-05-01T09:59:00.000000Z",
        "renewTime": renewed or "2026-05-01T09:59:50.000000Z",
        "leaseTransitions": 2,
    }
    return {"metadata": {"name": "planner-lock-shop", "namespace": "shop"}, "spec": spec}


def test_the_lease_is_named_after_the_plan_and_its_times_are_micro_times() -> None:
    body = lease_body(lease_name("shop"), "prod", identity="me@host/1/ab", seconds=30, now=NOW, transitions=3)

    assert lease_name("shop") == "planner-lock-shop"
    assert body == {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "planner-lock-shop", "namespace": "prod"},
        "spec": {
            "holderIdentity": "me@host/1/ab",
            "leaseDurationSeconds": 30,
            "acquireTime": "2026-05-01T10:00:00.250000Z",
            "renewTime": "2026-05-01T10:00:00.250000Z",
            "leaseTransitions": 3,
        },
    }


def test_a_micro_time_always_has_six_fractional_digits_in_utc() -> None:
    moment = datetime(2026, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert micro_time(moment) == "2026-05-01T12:00:00.000000Z"


def test_the_run_identity_is_user_at_host_pid_and_a_random_part_fixed_for_the_process() -> None:
    identity = run_identity()
    assert re.fullmatch(rf"[^@]+@[^/]+/{os.getpid()}/[0-9a-f]{{8}}", identity), identity
    assert run_identity() == identity


def test_a_holder_is_read_from_its_lease() -> None:
    holder = Holder.of(lease())
    assert holder == Holder(
        identity="alice@ci-7/4711/9f3a0c1e",
        acquired=datetime(2026, 5, 1, 9, 59, tzinfo=UTC),
        renewed=datetime(2026, 5, 1, 9, 59, 50, tzinfo=UTC),
        seconds=30,
        transitions=2,
    )


@pytest.mark.parametrize(
    ("renewed", "seconds", "expired_for"),
    [
        ("2026-05-01T09:59:50.000000Z", 30, None),
        ("2026-05-01T09:59:30.500000Z", 30, None),
        ("2026-05-01T09:59:30.000000Z", 30, 0.25),
        ("2026-05-01T09:58:48.000000Z", 30, 42.25),
        ("2026-05-01T09:59:56.000000Z", 3, 1.25),
    ],
    ids=[
        "renewed 10s ago of 30: valid",
        "renewed 29.75s ago of 30: still valid",
        "renewed 30.25s ago of 30: expired a quarter second ago",
        "renewed 72.25s ago of 30: expired 42.25s ago",
        "a short lease: renewed 4.25s ago of 3",
    ],
)
def test_a_lease_expires_duration_seconds_after_its_last_renewal_on_the_given_clock(
    renewed: str, seconds: int, expired_for: float | None
) -> None:
    assert Holder.of(lease(renewed=renewed, seconds=seconds)).expired_for(NOW) == expired_for


def test_a_released_lease_is_free_at_once() -> None:
    assert Holder.of(lease(holder="")).expired_for(NOW) == 0.0


def test_held_says_who_since_when_and_how_to_wait_or_break_it() -> None:
    message = held_message("shop", "prod", Holder.of(lease()), NOW, waited=0)
    assert message == (
        "plan shop (namespace prod) is locked by alice@ci-7/4711/9f3a0c1e since 2026-05-01T09:59:00Z "
        "(renewed 10s ago): another run is writing it. Retry later or wait with --lock-timeout; a dead "
        "run's lock expires 30s after its last renewal; to break it now: planner unlock shop -n prod "
        "--force"
    )
    assert "after waiting 60s" in held_message("shop", "prod", Holder.of(lease()), NOW, waited=60.2)


def test_a_takeover_names_the_previous_holder_and_how_long_ago_its_lock_expired() -> None:
    holder = Holder.of(lease())
    assert took_over_message("shop", holder, 42.4) == (
        "took over the lock of plan shop from alice@ci-7/4711/9f3a0c1e, expired 42s ago"
    )
    assert (
        took_over_message("shop", Holder.of(lease(holder="")), 0)
        == "took over the released lock of plan shop"
    )


def test_the_lease_duration_is_whole_seconds_and_at_least_three() -> None:
    assert (
        LockOptions(duration=30).seconds,
        LockOptions(duration=2.6).seconds,
        LockOptions(duration=1).seconds,
    ) == (
        30,
        3,
        3,
    )
