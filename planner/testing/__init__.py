"""Test your plans against a real Kubernetes API server, as controller-runtime's envtest lets you test a
controller (docs/testing.md): a cluster started for the test, and the path of its admin's kubeconfig.

    from planner.testing import embedded_cluster, real_cluster

    with real_cluster() as kubeconfig:        # etcd, kube-apiserver, kube-controller-manager and
        ...                                   # kube-scheduler on loopback, two simulated nodes
    with embedded_cluster() as kubeconfig:    # the server `planner cluster up` runs, in memory
        ...

With pytest, enable the plugin in your top-level conftest.py, `pytest_plugins =
["planner.testing.fixtures"]`, for the session fixtures `real_kubeconfig` and `embedded_kubeconfig`.

The modules behind them, for more than a kubeconfig:
- `controlplane`: the real control plane (`running_control_plane`, `ControlPlane` with its CA, audit
  log and ServiceAccount-token kubeconfigs; `ControlPlaneUnavailable` when binaries or etcd are missing);
- `simnodes`: simulated nodes for any API server, as KWOK's: Ready Nodes whose pods run the embedded
  cluster's kubelet timeline, and a provisioner for its StorageClasses (`running_node_agent`);
- `slimadmin`: a client for the embedded cluster's admin endpoints (faults, pauses, `/metrics`, the
  request log) and raw HTTP to it as its admin;
- `fixtures`: the pytest plugin.

Nothing else in planner imports this package (import-linter checks it): `planner cluster up` and the
rest ship without it. Imports here stay inside the functions, so importing a submodule stays cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

DEFAULT_NODES = 2


@contextlib.contextmanager
def real_cluster(
    binaries: Path | str | None = None, *, nodes: int = DEFAULT_NODES, directory: Path | None = None
) -> Iterator[Path]:
    """A real control plane with `nodes` simulated nodes, from the binaries in `binaries` (else
    `$PLANNER_K8S_BIN`); yields its admin kubeconfig once it is ready, stops everything on the way out.
    Raises `controlplane.ControlPlaneUnavailable` when the binaries or etcd are missing."""
    from kubernetes import config

    from planner.testing.controlplane import binaries_directory, running_control_plane
    from planner.testing.simnodes import running_node_agent

    with running_control_plane(binaries_directory(binaries), directory=directory) as plane:
        if nodes <= 0:
            yield plane.kubeconfig
            return
        api = config.new_client_from_config(str(plane.kubeconfig))
        with running_node_agent(api, nodes=nodes):
            yield plane.kubeconfig


@contextlib.contextmanager
def embedded_cluster(*, simulate: bool = True, rbac: bool = False, time_scale: float = 1.0) -> Iterator[Path]:
    """The embedded cluster in memory, in a subprocess on a free port: with `simulate` its controllers
    and node agent run (pods start, Deployments get ready), `time_scale` below 1 makes its timeline
    faster, `rbac` authorizes by RBAC. Yields its admin kubeconfig (a token, over HTTPS)."""
    from planner.slim.cluster import running_cluster

    with running_cluster(simulate=simulate, rbac=rbac, time_scale=time_scale) as handle:
        yield handle.kubeconfig
