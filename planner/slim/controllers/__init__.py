"""The in-process controllers (kube-controller-manager's part of the simulation).

Each controller is a `runtime.Reconciler`: a level-based pass over the store, woken by watch events
of the resources it reads, by its own timers and by the one-second resync, writing through the API
core under the field manager `kube-controller-manager` (the garbage collector under
`generic-garbage-collector`).
"""

from __future__ import annotations

from planner.slim.api import Api
from planner.slim.controllers.endpoints import EndpointsController
from planner.slim.controllers.gc import GarbageCollector
from planner.slim.controllers.jobs import JobController
from planner.slim.controllers.namespaces import NamespaceController
from planner.slim.controllers.volumes import VolumeController
from planner.slim.controllers.workloads import DeploymentController, ReplicaSetController
from planner.slim.runtime import Reconciler, Scale

__all__ = ["controllers"]


def controllers(api: Api, scale: Scale) -> list[Reconciler]:
    return [
        NamespaceController(api),
        GarbageCollector(api),
        DeploymentController(api, scale),
        ReplicaSetController(api, scale),
        JobController(api, scale),
        VolumeController(api),
        EndpointsController(api),
    ]
