"""A warm pool's arithmetic and the idle rule, with hand-written members and clocks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from planner.sandboxes.idle import Activity, format_timestamp, idle_sandboxes, parse_timestamp
from planner.sandboxes.pool_sizing import SUFFIX_ALPHABET, Member, PoolChanges, pool_changes, random_suffix


def suffixes(*values: str) -> Iterator[str]:
    yield from values


def member(name: str, created: str, *, claimed: bool = False) -> Member:
    return Member(name=name, claimed=claimed, created=created)


def test_an_empty_pool_gets_size_new_members() -> None:
    names = suffixes("aaaaa", "bbbbb")

    changes = pool_changes("dev", 2, [], suffix=lambda: next(names))

    assert changes == PoolChanges(create=("dev-aaaaa", "dev-bbbbb"))


def test_claimed_members_do_not_count_toward_the_size() -> None:
    names = suffixes("ccccc")
    found = [
        member("dev-aaaaa", "2026-12-01T08:00:00Z", claimed=True),
        member("dev-bbbbb", "2026-12-01T08:00:01Z"),
    ]

    changes = pool_changes("dev", 2, found, suffix=lambda: next(names))

    assert changes == PoolChanges(create=("dev-ccccc",))


def test_a_suffix_already_taken_is_drawn_again() -> None:
    names = suffixes("aaaaa", "bbbbb", "bbbbb", "ccccc")

    changes = pool_changes(
        "dev", 2, [member("dev-aaaaa", "2026-12-01T08:00:00Z", claimed=True)], suffix=lambda: next(names)
    )

    assert changes == PoolChanges(create=("dev-bbbbb", "dev-ccccc"))


def test_shrinking_deletes_the_newest_unclaimed_and_never_a_claimed_one() -> None:
    found = [
        member("dev-old", "2026-12-01T08:00:00Z"),
        member("dev-mid", "2026-12-01T08:00:05Z"),
        member("dev-new", "2026-12-01T08:00:09Z"),
        member("dev-mine", "2026-12-01T08:00:10Z", claimed=True),
    ]

    assert pool_changes("dev", 1, found) == PoolChanges(delete=("dev-new", "dev-mid"))
    assert pool_changes("dev", 0, found) == PoolChanges(delete=("dev-new", "dev-mid", "dev-old"))


def test_a_full_pool_changes_nothing() -> None:
    found = [member("dev-a", "2026-12-01T08:00:00Z"), member("dev-b", "2026-12-01T08:00:00Z", claimed=True)]

    assert pool_changes("dev", 1, found) == PoolChanges()


def test_suffixes_look_like_generate_name() -> None:
    suffix = random_suffix()

    assert len(suffix) == 5 and set(suffix) <= set(SUFFIX_ALPHABET)


NOW = datetime(2026, 12, 1, 8, 0, 10, tzinfo=UTC)


def activity(name: str, seconds_ago: float, *, timeout: float | None = 5, running: bool = True) -> Activity:
    return Activity(
        name=name,
        running=running,
        last_activity=NOW - timedelta(seconds=seconds_ago),
        idle_timeout=None if timeout is None else timedelta(seconds=timeout),
    )


def test_idle_means_running_and_quiet_for_longer_than_the_timeout() -> None:
    sandboxes = [
        activity("quiet", 6),
        activity("busy", 1),
        activity("exactly", 5),
        activity("paused", 60, running=False),
        activity("no-timeout", 600, timeout=None),
        activity("also-quiet", 7),
    ]

    assert idle_sandboxes(sandboxes, NOW) == ["also-quiet", "quiet"]


def test_timestamps_round_trip_to_the_microsecond() -> None:
    moment = datetime(2026, 12, 1, 8, 0, 0, 250000, tzinfo=UTC)

    assert format_timestamp(moment) == "2026-12-01T08:00:00.250000Z"
    assert parse_timestamp("2026-12-01T08:00:00.250000Z") == moment
    assert parse_timestamp("2026-12-01T08:00:00Z") == moment.replace(microsecond=0)


def test_an_unclaimed_member_whose_pod_is_gone_is_repaired_and_still_counts() -> None:
    found = [
        Member(name="dev-aaaaa", claimed=False, created="2026-01-01T00:00:00Z", has_pod=False),
        Member(name="dev-bbbbb", claimed=False, created="2026-01-01T00:00:01Z"),
        Member(name="dev-ccccc", claimed=True, created="2026-01-01T00:00:02Z", has_pod=False),
    ]
    assert pool_changes("dev", 2, found) == PoolChanges(repair=("dev-aaaaa",))


def test_a_shrinking_pool_deletes_its_surplus_and_repairs_only_what_it_keeps() -> None:
    found = [
        Member(name="dev-aaaaa", claimed=False, created="2026-01-01T00:00:00Z", has_pod=False),
        Member(name="dev-bbbbb", claimed=False, created="2026-01-01T00:00:01Z", has_pod=False),
    ]
    assert pool_changes("dev", 1, found) == PoolChanges(delete=("dev-bbbbb",), repair=("dev-aaaaa",))
