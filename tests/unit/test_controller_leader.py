"""The controller's leader election against an in-memory Lease API that honours resourceVersion
preconditions as the API server does (a PUT with a stale resourceVersion is a 409, a second create is
a 409 AlreadyExists). The elector is the real one, running its own thread with a short retry period;
the tests wait for conditions on the Lease, never for a time."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from planner.controller.leader import ElectionTimings, LeaderElector
from planner.controller.sharding import LEASE_NAME
from planner.errors import AlreadyExistsError, ConflictError, NotFoundError
from planner.kinds import LEASE
from planner.kube.client import KubeClient, resource_path
from planner.objects import Manifest
from planner.state.runlock import micro_time
from tests.simulated import eventually

NAMESPACE = "ops"
PATH = resource_path(LEASE, NAMESPACE, LEASE_NAME)
# A short retry period keeps the tests quick; the deadlines are long so a loaded machine never makes
# a healthy leader give up between two renews.
TIMINGS = ElectionTimings(lease_duration=30.0, renew_deadline=20.0, retry_period=0.02)


class FakeLeaseApi:
    """One Lease, kept as the API server keeps it: every write bumps its resourceVersion and must carry
    the current one. `holders` is the holderIdentity after each successful write, in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lease: Manifest | None = None
        self.version = 0
        self.holders: list[str] = []
        self.requests: list[tuple[str, str]] = []  # (verb, holderIdentity sent or "")
        self.clock_offset = timedelta()  # the server's clock against this machine's

    def server_now(self) -> datetime:
        return datetime.now(UTC) + self.clock_offset

    # --- the part of KubeClient the elector uses ---

    def with_options(self, **_: Any) -> FakeLeaseApi:
        return self

    def request(self, method: str, path: str, **kwargs: Any) -> Manifest:
        return self.request_dated(method, path, **kwargs)[0]

    def request_dated(
        self,
        method: str,
        path: str,
        *,
        query: Any = None,
        body: Any = None,
        verb: str | None = None,
        **_: Any,
    ) -> tuple[Manifest, datetime]:
        with self.lock:
            sent = str(((body or {}).get("spec") or {}).get("holderIdentity") or "")
            self.requests.append((verb or method, sent))
            if method == "GET" and path == PATH:
                return self._current(), self.server_now()
            if method == "POST" and path == resource_path(LEASE, NAMESPACE):
                if self.lease is not None:
                    raise AlreadyExistsError("already exists", status=409, reason="AlreadyExists")
                return self._store(body), self.server_now()
            if method == "PUT" and path == PATH:
                self._current()
                if body["metadata"].get("resourceVersion") != str(self.version):
                    raise ConflictError("the object has been modified", status=409, reason="Conflict")
                return self._store(body), self.server_now()
        raise AssertionError(f"unexpected request {method} {path}")

    # --- what another replica (or the test) does ---

    def seed(self, *, holder: str, renewed: datetime, duration: int = 15, transitions: int = 3) -> None:
        with self.lock:
            spec = {
                "holderIdentity": holder,
                "leaseDurationSeconds": duration,
                "acquireTime": micro_time(renewed),
                "renewTime": micro_time(renewed),
                "leaseTransitions": transitions,
            }
            self._store({"metadata": {"name": LEASE_NAME, "namespace": NAMESPACE}, "spec": spec})

    def spec(self) -> dict[str, Any]:
        with self.lock:
            return dict(self._current()["spec"])

    def count(self, verb: str) -> int:
        with self.lock:
            return sum(1 for done, _ in self.requests if done == verb)

    def _current(self) -> Manifest:
        if self.lease is None:
            raise NotFoundError("not found", status=404, reason="NotFound")
        return copy.deepcopy(self.lease)

    def _store(self, body: Manifest) -> Manifest:
        self.version += 1
        stored = copy.deepcopy(body)
        stored["metadata"] = {**stored["metadata"], "resourceVersion": str(self.version)}
        self.lease = stored
        self.holders.append(str(stored["spec"].get("holderIdentity") or ""))
        return copy.deepcopy(stored)


@pytest.fixture
def api() -> FakeLeaseApi:
    return FakeLeaseApi()


@pytest.fixture
def electors(api: FakeLeaseApi) -> Iterator[list[LeaderElector]]:
    started: list[LeaderElector] = []
    yield started
    for elector in started:
        elector.release()


def start(api: FakeLeaseApi, electors: list[LeaderElector], identity: str) -> LeaderElector:
    client = cast(KubeClient, api)
    elector = LeaderElector(client, namespace=NAMESPACE, identity=identity, timings=TIMINGS).start()
    electors.append(elector)
    return elector


def test_a_candidate_creates_the_missing_lease_and_leads(
    api: FakeLeaseApi, electors: list[LeaderElector]
) -> None:
    elector = start(api, electors, "a")
    eventually(elector.leading)
    spec = api.spec()
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == ("a", 30, 0)
    assert api.count("create") == 1
    assert elector.healthy()


def test_the_leader_renews_with_the_current_resource_version(
    api: FakeLeaseApi, electors: list[LeaderElector]
) -> None:
    elector = start(api, electors, "a")
    eventually(elector.leading)
    first = api.spec()["renewTime"]
    eventually(lambda: api.count("update") >= 3)
    spec = api.spec()
    assert spec["renewTime"] > first
    assert (spec["holderIdentity"], spec["acquireTime"], spec["leaseTransitions"]) == ("a", first, 0)
    assert set(api.holders) == {"a"}
    assert elector.leading()


def test_a_candidate_waits_while_another_holds_a_fresh_lease_and_takes_it_when_released(
    api: FakeLeaseApi, electors: list[LeaderElector]
) -> None:
    api.seed(holder="other", renewed=api.server_now())
    elector = start(api, electors, "a")
    eventually(lambda: api.count("get") >= 5)
    assert not elector.leading()
    assert elector.healthy()  # a standby that reads the Lease is ready
    assert api.holders == ["other"] and api.count("update") == 0

    api.seed(holder="", renewed=api.server_now(), transitions=3)  # the other released it
    eventually(elector.leading)
    assert (api.spec()["holderIdentity"], api.spec()["leaseTransitions"]) == ("a", 4)


def test_the_leader_stops_leading_as_soon_as_a_renew_finds_another_holder(
    api: FakeLeaseApi, electors: list[LeaderElector]
) -> None:
    elector = start(api, electors, "a")
    eventually(elector.leading)
    api.seed(holder="other", renewed=api.server_now())  # taken over under it: a new resourceVersion
    eventually(lambda: not elector.leading())
    gets = api.count("get")
    eventually(lambda: api.count("get") >= gets + 5)  # back to standing by: it reads, never writes
    assert not elector.leading()
    assert api.holders[-1] == "other" and api.holders.count("a") == len(api.holders) - 1
    assert api.spec()["holderIdentity"] == "other"


def test_a_lease_its_holder_stopped_renewing_is_taken_over(
    api: FakeLeaseApi, electors: list[LeaderElector]
) -> None:
    api.seed(holder="other", renewed=api.server_now() - timedelta(seconds=16), duration=15)
    elector = start(api, electors, "a")
    eventually(elector.leading)
    spec = api.spec()
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("a", 4)
    assert spec["acquireTime"] <= spec["renewTime"]
    assert api.holders[:2] == ["other", "a"]


def test_expiry_is_judged_by_the_servers_clock_not_the_readers(
    api: FakeLeaseApi, electors: list[LeaderElector]
) -> None:
    """The holder renewed 10 s ago by the server's clock, which runs an hour behind this machine's: by
    this machine's clock the Lease looks long expired, but it is not."""
    api.clock_offset = -timedelta(hours=1)
    api.seed(holder="other", renewed=api.server_now() - timedelta(seconds=10), duration=15)
    elector = start(api, electors, "a")
    eventually(lambda: api.count("get") >= 5)
    assert not elector.leading() and api.holders == ["other"]


def test_release_on_shutdown_empties_the_holder(api: FakeLeaseApi, electors: list[LeaderElector]) -> None:
    elector = start(api, electors, "a")
    eventually(elector.leading)
    electors.remove(elector)
    elector.release()
    assert not elector.leading()
    assert api.spec()["holderIdentity"] == ""
    before = len(api.requests)
    standby = start(api, electors, "b")  # takes over at its first read, not after a lease duration
    eventually(standby.leading)
    assert api.requests[before : before + 2] == [("get", ""), ("update", "b")]


def test_a_standby_releases_nothing(api: FakeLeaseApi, electors: list[LeaderElector]) -> None:
    api.seed(holder="other", renewed=api.server_now())
    elector = start(api, electors, "a")
    eventually(lambda: api.count("get") >= 2)
    electors.remove(elector)
    elector.release()
    assert api.holders == ["other"] and api.count("update") == 0


def test_of_two_candidates_exactly_one_leads(api: FakeLeaseApi, electors: list[LeaderElector]) -> None:
    first, second = start(api, electors, "a"), start(api, electors, "b")
    eventually(lambda: first.leading() or second.leading())
    winner = api.spec()["holderIdentity"]
    eventually(lambda: api.count("get") >= 10)  # the loser keeps reading, the winner keeps renewing
    assert [first.leading(), second.leading()] == [winner == "a", winner == "b"]
    assert set(api.holders) == {winner}
