"""Shared helpers for the simulation's tests: a fast simulated cluster and polling.

Test modules define `cluster = simulated_cluster_fixture()` so slimcluster's namespace, client and
kubectl fixtures run against a server with controllers and the node agent, at a time scale that
turns the kubelet's 10 s back-offs and probe periods into half-seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster

SCALE = 0.05
T = TypeVar("T")


def simulated_cluster_fixture(**options: Any) -> Any:
    @pytest.fixture(scope="module")
    def cluster() -> Iterator[ClusterHandle]:
        with running_cluster(simulate=True, time_scale=options.pop("time_scale", SCALE), **options) as handle:
            yield handle

    return cluster


def eventually(probe: Callable[[], T | None], *, timeout: float = 15.0, interval: float = 0.05) -> T:
    """Poll until `probe` returns something truthy; fail with the last value."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not reached within {timeout}s; last value: {last!r}")
