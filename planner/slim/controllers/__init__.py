"""The in-process controllers (kube-controller-manager's part of the simulation).

Each controller is a `runtime.Reconciler` driven by a work queue of dirty keys, as in
kube-controller-manager: `observe` maps each watch event of the resources it reads to the keys it
dirties (a Pod event → the ReplicaSet or Job controlling the pod; a ReplicaSet event → its
Deployment; a Pod or Service event → the Services whose selector matches; a Pod or PVC event → the
claims involved; any event → the object and its owners for the garbage collector), keeping small
indexes (owned objects by controller uid, pods and selectors by label, dependents by owner uid)
current on the way. A pass syncs only the dirty keys and those whose timers are due, level-based
from the store; every key is resynced at start, after a pause and every
`runtime.FULL_RESYNC_SECONDS` as the self-healing backstop. Writes go through the API core under the
field manager `kube-controller-manager` (the garbage collector under `generic-garbage-collector`).
"""

from __future__ import annotations

from planner.slim.api import Api
from planner.slim.controllers.autoscaling import HorizontalPodAutoscalerController
from planner.slim.controllers.clusterroles import ClusterRoleAggregator
from planner.slim.controllers.cronjobs import CronJobController
from planner.slim.controllers.daemonsets import DaemonSetController
from planner.slim.controllers.deployments import DeploymentController, ReplicaSetController
from planner.slim.controllers.endpoints import EndpointsController
from planner.slim.controllers.gc import GarbageCollector
from planner.slim.controllers.jobs import JobController
from planner.slim.controllers.namespaces import NamespaceController
from planner.slim.controllers.statefulsets import StatefulSetController
from planner.slim.controllers.volumes import VolumeController
from planner.slim.reconcilers import Reconciler, Scale

__all__ = ["controllers"]


def controllers(api: Api, scale: Scale) -> list[Reconciler]:
    return [
        NamespaceController(api),
        GarbageCollector(api),
        DeploymentController(api, scale),
        ReplicaSetController(api, scale),
        JobController(api, scale),
        StatefulSetController(api, scale),
        CronJobController(api, scale),
        DaemonSetController(api, scale),
        HorizontalPodAutoscalerController(api, scale),
        VolumeController(api),
        EndpointsController(api),
        ClusterRoleAggregator(api),
    ]
