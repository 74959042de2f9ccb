"""planner.state.runlock's pure parts: the Lease it writes, reading a holder from one, judging expiry on a given
clock, and the sentences a person reads. The protocol itself runs against the embedded cluster in
tests/e2e/test_lock.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest

from planner.state.runlock import (
    ANNOTATION_HOLDER_PROCESS,
    Holder,
    HolderProcess,
    LockOptions,
    for_many,
    held_message,
    lease_body,
    lease_name,
    micro_time,
    process_started,
    run_identity,
    this_process,
    took_over_message,
)
from tests.simulated import eventually

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


def test_a_forked_child_is_another_holder_with_its_own_identity_and_process() -> None:
    parent = (run_identity(), this_process())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it is, then leave without running pytest's exit handlers
        os.close(read)
        child = this_process()
        os.write(write, f"{run_identity()} {child.pid if child else 0}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as reply:
        identity, child_pid = reply.read().split()
    os.waitpid(pid, 0)
    assert identity.split("/")[1] == str(pid) != parent[0].split("/")[1]
    assert int(child_pid) == pid
    assert parent == (run_identity(), this_process())


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
        "run's lock is taken over at once on its host, elsewhere 30s after its last renewal; to break it "
        "now: planner unlock shop -n prod --force"
    )
    assert "after waiting 60s" in held_message("shop", "prod", Holder.of(lease()), NOW, waited=60.2)


def test_a_takeover_names_the_previous_holder_and_how_long_ago_its_lock_expired() -> None:
    holder = Holder.of(lease())
    assert took_over_message("shop", holder, 42.4) == (
        "took over the lock of plan shop from alice@ci-7/4711/9f3a0c1e, expired 42s ago"
    )
    annotated = lease()
    annotated["metadata"]["annotations"] = {ANNOTATION_HOLDER_PROCESS: HERE.encoded()}
    assert took_over_message("shop", Holder.of(annotated), None) == (
        "took over the lock of plan shop from alice@ci-7/4711/9f3a0c1e: its process 4711 on this host is gone"
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


HERE = HolderProcess(boot_id="b7e1-boot", pid_namespace="pid:[4026531836]", pid=4711, started=90210)


def started_as(table: dict[int, int | None]):  # type: ignore[no-untyped-def]
    return lambda pid: table.get(pid)


@pytest.mark.parametrize(
    ("holder", "live", "gone"),
    [
        (HERE, {}, True),
        (HERE, {4711: 90210}, False),
        (HERE, {4711: 123456}, True),
        (HERE, {4711: 0}, False),
        (
            HolderProcess(boot_id="other-boot", pid_namespace=HERE.pid_namespace, pid=4711, started=1),
            {},
            False,
        ),
        (
            HolderProcess(boot_id=HERE.boot_id, pid_namespace="pid:[4026532999]", pid=4711, started=1),
            {},
            False,
        ),
        (HolderProcess(boot_id="", pid_namespace="", pid=4711, started=1), {}, False),
    ],
    ids=[
        "same boot and pid namespace, no such pid: gone",
        "same boot, the pid alive with the holder's start time: alive",
        "same boot, the pid reused by a younger process: gone",
        "same boot, the pid alive but its start unreadable: alive",
        "another boot (another host, or this one rebooted): not judged, the expiry rule applies",
        "another pid namespace (another container): not judged",
        "no boot id recorded: not judged",
    ],
)
def test_a_holder_is_gone_only_when_seen_from_its_own_boot_and_pid_namespace(
    holder: HolderProcess, live: dict[int, int | None], gone: bool
) -> None:
    seen_from = HolderProcess(boot_id="b7e1-boot", pid_namespace="pid:[4026531836]", pid=1, started=5)
    assert holder.gone(seen_from=seen_from, started_of=started_as(live)) is gone
    assert holder.gone(seen_from=None, started_of=started_as(live)) is False


def test_the_holder_process_is_read_from_the_leases_annotation_and_garbage_is_none() -> None:
    annotated = lease()
    annotated["metadata"]["annotations"] = {ANNOTATION_HOLDER_PROCESS: HERE.encoded()}
    assert Holder.of(annotated).process == HERE
    assert HERE.encoded() == (
        '{"bootId":"b7e1-boot","pid":4711,"pidNamespace":"pid:[4026531836]","started":90210}'
    )
    assert Holder.of(lease()).process is None
    for garbage in ("", "not json", "[]", '{"bootId": "x"}', '{"bootId":"x","pidNamespace":"y","pid":"z"}'):
        assert HolderProcess.decoded(garbage) is None, garbage


def test_the_lease_carries_annotations_when_given() -> None:
    body = lease_body(
        "l", "ns", identity="me", seconds=3, now=NOW, annotations={ANNOTATION_HOLDER_PROCESS: "x"}
    )
    assert body["metadata"] == {
        "name": "l",
        "namespace": "ns",
        "annotations": {ANNOTATION_HOLDER_PROCESS: "x"},
    }


def state_of(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_this_process_is_read_from_the_kernel_and_a_finished_or_zombie_child_is_gone() -> None:
    here = this_process()
    assert here is not None  # Linux: /proc says
    with open("/proc/sys/kernel/random/boot_id", encoding="utf-8") as boot:
        assert here.boot_id == boot.read().strip()
    assert (here.pid, here.pid_namespace) == (os.getpid(), os.readlink("/proc/self/ns/pid"))
    assert here.started > 0 and process_started(os.getpid()) == here.started
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    eventually(lambda: state_of(zombie.pid) == "Z", timeout=30)  # exited; not reaped, as it is not waited for
    assert process_started(zombie.pid) is None  # exited, not yet reaped
    zombie.wait()
    assert process_started(zombie.pid) is None  # reaped
    as_child = HolderProcess(
        boot_id=here.boot_id, pid_namespace=here.pid_namespace, pid=zombie.pid, started=1
    )
    assert as_child.gone(seen_from=here, started_of=process_started)
    assert not here.gone(seen_from=here, started_of=process_started)


def test_a_run_of_many_plans_holds_longer_leases_so_its_renewals_stay_few() -> None:
    """5,000 locks renewed every 10 s would be 500 renewals a second, which lost a run its own locks
    (issue 39, item 13): the leases grow until renewing them all stays within 50 a second."""
    heard: list[str] = []
    assert for_many(LockOptions(), 240, heard.append) == LockOptions()
    assert heard == []
    many = for_many(LockOptions(), 5000, heard.append)
    assert (many.seconds, many.timeout) == (300, LockOptions().timeout)
    assert heard == [
        "holding 5000 run locks: each lease lasts 300s (renewed every 100s), not 30s, so their renewals "
        "stay under 50 a second"
    ]
