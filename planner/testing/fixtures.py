"""A pytest plugin that gives your plans' tests a cluster (docs/testing.md). Enable it in your top-level
conftest.py:

    pytest_plugins = ["planner.testing.fixtures"]

- `real_kubeconfig` (session): the admin kubeconfig of a real control plane with two simulated nodes
  (`planner.testing.real_cluster`), started at first use and stopped when the session ends, from the
  binaries in `$PLANNER_K8S_BIN`; the test is skipped, saying why, when they or etcd are missing. With
  `$PLANNER_TEST_KUBECONFIG` set, that kubeconfig's cluster serves instead and nothing is started (as
  envtest's USE_EXISTING_CLUSTER): a kind cluster in CI, or one control plane shared by many runs.
- `embedded_kubeconfig` (session): the embedded cluster's, with its simulation
  (`planner.testing.embedded_cluster`); it needs nothing beyond planner.

Under pytest-xdist each worker starts its own cluster.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.testing import embedded_cluster, real_cluster
from planner.testing.controlplane import ControlPlaneUnavailable

EXISTING_ENV = "PLANNER_TEST_KUBECONFIG"


@pytest.fixture(scope="session")
def real_kubeconfig() -> Iterator[Path]:
    """A real API server's admin kubeconfig: `$PLANNER_TEST_KUBECONFIG`'s, else a control plane's."""
    existing = os.environ.get(EXISTING_ENV)
    if existing:
        yield Path(existing)
        return
    with contextlib.ExitStack() as stack:
        try:
            kubeconfig = stack.enter_context(real_cluster())
        except ControlPlaneUnavailable as exc:
            pytest.skip(f"no real control plane: {exc}")
        yield kubeconfig


@pytest.fixture(scope="session")
def embedded_kubeconfig() -> Iterator[Path]:
    """The embedded cluster's admin kubeconfig, its controllers and simulated nodes running."""
    with embedded_cluster() as kubeconfig:
        yield kubeconfig
