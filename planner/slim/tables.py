"""Server-side Table printing: what `kubectl get` shows, computed by the server as the real one does.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints the server's columns and
cells verbatim, so the printers here follow the apiserver's own (`pkg/printers/internalversion`):
the same column names, types, descriptions and priorities (wide columns are priority 1 and are
always sent; `-o wide` only shows them), and the same cell rules — pod STATUS/READY/RESTARTS by the
kubelet-aware algorithm (init containers, restartable sidecars, waiting and terminated reasons,
Terminating, NodeLost), deployment READY as ready/desired, job STATUS/COMPLETIONS/DURATION, service
EXTERNAL-IP per type, PVC/PV access modes as RWO/ROX/RWX/RWOP, AGE as `duration.HumanDuration`.
Kinds without a printer get the Name/Age columns the apiserver gives custom resources.

Column descriptions for pods and deployments are the v1.28.7 golden texts; for the other kinds they
are the API reference's field documentation, which may differ in wording from a given release
(kubectl never shows descriptions).

`partial_object_metadata_list` answers `Accept: ...;as=PartialObjectMetadataList`, which clients that
need only metadata (client-go's metadata client and informers) send.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

META_V1: Final = "meta.k8s.io/v1"

# Column descriptions: the apiserver's field documentation (SwaggerDoc) for each column.
DESCRIPTIONS: Final[dict[str, str]] = {
    "pod.restarts": (
        "The number of times the containers in this pod have been restarted and when the last "
        "container in this pod has restarted."
    ),
    "cm.data": (
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-',"
        " '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys "
        "stored in Data must not overlap with the keys in the BinaryData field, this is enforced "
        "during validation process."
    ),
    "deploy.availableReplicas": (
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."
    ),
    "deploy.ready": "Number of the pod with ready state",
    "deploy.selector": (
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the "
        "ones affected by this deployment."
    ),
    "deploy.updatedReplicas": (
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec."
    ),
    "ep.subsets": (
        "The set of all endpoints is the union of all subsets. Addresses are placed into subsets "
        "according to the IPs they share. A single address with multiple ports, some of which are "
        "ready and some of which are not (because they come from different containers) will result in"
        " the address being displayed in different subsets for the different ports. No address will "
        "appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and "
        "ports that comprise a service."
    ),
    "ev.count": "The number of times this event has occurred.",
    "ev.fieldPath": (
        "If referring to a piece of an object instead of an entire object, this string should contain"
        " a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For "
        "example, if the object reference is to a container within a pod, this would take on a value "
        'like: "spec.containers{name}" (where "name" refers to the name of the container that '
        'triggered the event) or if no container name is specified "spec.containers[2]" (container '
        "with index 2 in this pod). This syntax is chosen only to have some well-defined way of "
        "referencing a part of an object."
    ),
    "ev.firstTimestamp": (
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"
    ),
    "ev.involvedObject": "The object that this event is about.",
    "ev.lastTimestamp": "The time at which the most recent occurrence of this event was recorded.",
    "ev.message": "A human-readable description of the status of this operation.",
    "ev.reason": (
        "This should be a short, machine understandable string that gives the reason for the "
        "transition into the object's current status."
    ),
    "ev.source": "The component reporting this event. Should be a short machine understandable string.",
    "ev.type": "Type of this event (Normal, Warning), new types could be added in the future",
    "job.selector": (
        "A label query over pods that should match the pod count. Normally, the system sets this "
        "field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-"
        "objects/labels/#label-selectors"
    ),
    "job.succeeded": (
        "The number of pods which reached phase Succeeded. The value increases monotonically for a "
        "given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."
    ),
    "lease.holderIdentity": (
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader"
        " Election is used, the holder identity must be equal to the elected "
        "LeaseCandidate.metadata.name field."
    ),
    "meta.creationTimestamp": (
        "CreationTimestamp is a timestamp representing the server time when this object was created. "
        "It is not guaranteed to be set in happens-before order across separate operations. Clients "
        "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
        "system. Read-only. Null for lists. More info: "
        "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
    ),
    "meta.name": (
        "Name must be unique within a namespace. Is required when creating resources, although some "
        "resources may allow a client to request the generation of an appropriate name automatically."
        " Name is primarily intended for creation idempotence and configuration definition. Cannot be"
        " updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-"
        "objects/names#names"
    ),
    "node.addresses": (
        "List of addresses reachable to the node. Queried from cloud provider, if available. More "
        "info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is "
        "declared as mergeable, but the merge key is not sufficiently unique, which can cause data "
        "corruption when it is merged. Callers should instead use a full-replacement patch. See "
        "https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change "
        "during the lifetime of a Node. However, there are some exceptions where this may not be "
        "possible, such as Pods that inherit a Node's address in its own status or consumers of the "
        "downward API (status.hostIP)."
    ),
    "node.containerRuntimeVersion": (
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."
    ),
    "node.kernelVersion": "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    "node.kubeletVersion": "Kubelet Version reported by the node.",
    "node.osImage": "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    "pod.nodeName": (
        "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the "
        "scheduler simply schedules this pod onto that node, assuming that it fits resource "
        "requirements."
    ),
    "pod.nominatedNodeName": (
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot "
        "be scheduled right away as preemption victims receive their graceful termination periods. "
        "This field does not guarantee that the pod will be scheduled on this node. Scheduler may "
        "decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also"
        " decide to give the resources on this node to a higher priority pod that is created after "
        "preemption. As a result, this field may be different than PodSpec.nodeName when the pod is "
        "scheduled."
    ),
    "pod.podIP": (
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet "
        "allocated."
    ),
    "pod.readinessGates": (
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when "
        "all its containers are ready AND all conditions specified in the readiness gates have status"
        ' equal to "True" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-'
        "readiness-gates"
    ),
    "pv.accessModes": (
        "accessModes contains all ways the volume can be mounted. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"
    ),
    "pv.capacity": (
        "capacity is the description of the persistent volume's resources and capacity. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"
    ),
    "pv.claimRef": (
        "claimRef is part of a bi-directional binding between PersistentVolume and "
        "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the "
        "authoritative bind between PV and PVC. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"
    ),
    "pv.phase": (
        "phase indicates if a volume is available, bound to a claim, or released by a claim. More "
        "info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"
    ),
    "pv.reason": (
        "reason is a brief CamelCase string that describes any failure and is meant for machine "
        "parsing and tidy display in the CLI."
    ),
    "pv.reclaim": (
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from"
        " its claim. Valid options are Retain (default for manually created PersistentVolumes), "
        "Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). "
        "Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"
    ),
    "pv.volumeMode": (
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to "
        "remain in raw block state. Value of Filesystem is implied when not included in spec."
    ),
    "pvc.accessModes": (
        "accessModes contains the actual access modes the volume backing the PVC has. More info: "
        "https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"
    ),
    "pvc.capacity": "capacity represents the actual resources of the underlying volume.",
    "pvc.phase": "phase represents the current phase of PersistentVolumeClaim.",
    "pvc.volumeMode": (
        "volumeMode defines what type of volume is required by the claim. Value of Filesystem is "
        "implied when not included in claim spec."
    ),
    "pvc.volumeName": "volumeName is the binding reference to the PersistentVolume backing this claim.",
    "rs.readyReplicas": (
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."
    ),
    "rs.selector": (
        "Selector is a label query over pods that should match the replica count. If the selector is "
        "empty, it is defaulted to the labels present on the pod template. Label keys and values that"
        " must match in order to be controlled by this replica set. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"
    ),
    "rs.specReplicas": (
        "Replicas is the number of desired pods. This is a pointer to distinguish between explicit "
        "zero and unspecified. Defaults to 1. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
    ),
    "rs.statusReplicas": (
        "Replicas is the most recently observed number of non-terminating pods. More info: "
        "https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"
    ),
    "sa.secrets": (
        "Secrets is a list of the secrets in the same namespace that pods running using this "
        "ServiceAccount are allowed to use. Pods are only limited to this list if this service "
        'account has a "kubernetes.io/enforce-mountable-secrets" annotation set to "true". The '
        '"kubernetes.io/enforce-mountable-secrets" annotation is deprecated since v1.32. Prefer '
        "separate namespaces to isolate access to mounted secrets. This field should not be used to "
        "find auto-generated service account token secrets for use outside of pods. Instead, tokens "
        "can be requested directly using the TokenRequest API, or service account token secrets can "
        "be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret"
    ),
    "sc.allowVolumeExpansion": "allowVolumeExpansion shows whether the storage class allow volume expand.",
    "sc.provisioner": "provisioner indicates the type of the provisioner.",
    "sc.reclaimPolicy": (
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of "
        "this storage class. Defaults to Delete."
    ),
    "sc.volumeBindingMode": (
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  "
        "When unset, VolumeBindingImmediate is used. This field is only honored by servers that "
        "enable the VolumeScheduling feature."
    ),
    "secret.data": (
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or"
        " '.'. The serialized form of the secret data is a base64 encoded string, representing the "
        "arbitrary (possibly non-string) data value here. Described in "
        "https://tools.ietf.org/html/rfc4648#section-4"
    ),
    "secret.type": (
        "Used to facilitate programmatic handling of secret data. More info: "
        "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
    ),
    "svc.clusterIP": (
        "clusterIP is the IP address of the service and is usually assigned randomly. If an address "
        "is specified manually, is in-range (as per system configuration), and is not in use, it will"
        " be allocated to the service; otherwise creation of the service will fail. This field may "
        "not be changed through updates unless the type field is also being changed to ExternalName "
        "(which requires this field to be blank) or the type field is being changed from ExternalName"
        " (in which case this field may optionally be specified, as describe above).  Valid values "
        'are "None", empty string (""), or a valid IP address. Setting this to "None" makes a '
        '"headless service" (no virtual IP), which is useful when direct endpoint connections are '
        "preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and "
        "LoadBalancer. If this field is specified when creating a Service of type ExternalName, "
        "creation will fail. This field will be wiped when updating a Service to type ExternalName. "
        "More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-"
        "service-proxies"
    ),
    "svc.externalIPs": (
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
        "traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible"
        " for ensuring that traffic arrives at a node with this IP.  A common example is external "
        "load-balancers that are not part of the Kubernetes system."
    ),
    "svc.ports": (
        "The list of ports that are exposed by this service. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-"
        "proxies"
    ),
    "svc.selector": (
        "Route service traffic to pods with label keys and values matching this selector. If empty or"
        " not present, the service is assumed to have an external process managing its endpoints, "
        "which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and "
        "LoadBalancer. Ignored if type is ExternalName. More info: "
        "https://kubernetes.io/docs/concepts/services-networking/service/"
    ),
    "svc.type": (
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are "
        'ExternalName, ClusterIP, NodePort, and LoadBalancer. "ClusterIP" allocates a cluster-'
        "internal IP address for load-balancing to endpoints. Endpoints are determined by the "
        "selector or if that is not specified, by manual construction of an Endpoints object or "
        'EndpointSlice objects. If clusterIP is "None", no virtual IP is allocated and the endpoints '
        'are published as a set of endpoints rather than a virtual IP. "NodePort" builds on ClusterIP'
        " and allocates a port on every node which routes to the same endpoints as the clusterIP. "
        '"LoadBalancer" builds on NodePort and creates an external load-balancer (if supported in the'
        ' current cloud) which routes to the same endpoints as the clusterIP. "ExternalName" aliases '
        "this service to the specified externalName. Several other fields do not apply to "
        "ExternalName services. More info: https://kubernetes.io/docs/concepts/services-"
        "networking/service/#publishing-services-service-types"
    ),
}

Row = list[Any]
CellFn = Callable[[dict[str, Any], datetime], Row]


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def _col(name: str, description_key: str, *, wide: bool = False, type_: str = "string") -> Column:
    return Column(name, type_, DESCRIPTIONS[description_key], 1 if wide else 0)


NAME = Column("Name", "string", DESCRIPTIONS["meta.name"], format="name")
AGE = _col("Age", "meta.creationTimestamp")
CONTAINERS = Column("Containers", "string", "Names of each container in the template.", 1)
IMAGES = Column("Images", "string", "Images referenced by each container in the template.", 1)


@dataclass(frozen=True)
class Printer:
    columns: tuple[Column, ...]
    cells: CellFn


# ------------------------------------------------------------------------------------------ durations


def human_duration(delta: timedelta) -> str:
    """Kubernetes' `duration.HumanDuration`: `119s`, `5m3s`, `3h10m`, `2d5h`, `<invalid>` in the future."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return _two_units(minutes, "m", seconds % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return _two_units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return _two_units(hours // 24, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        return _two_units(hours // 24 // 365, "y", (hours // 24) % 365, "d")
    return f"{hours // 24 // 365}y"


def _two_units(major: int, major_unit: str, minor: int, minor_unit: str) -> str:
    return f"{major}{major_unit}" if minor == 0 else f"{major}{major_unit}{minor}{minor_unit}"


def parse_time(value: Any) -> datetime | None:
    """An RFC3339 (or MicroTime) timestamp, or None when missing or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def since(value: Any, now: datetime) -> str:
    """`translateTimestampSince`: the age of a timestamp, `<unknown>` when it is missing."""
    moment = parse_time(value)
    return "<unknown>" if moment is None else human_duration(now - moment)


def _age(obj: dict[str, Any], now: datetime) -> str:
    return since(_meta(obj).get("creationTimestamp"), now)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _get(obj: dict[str, Any], *path: str) -> Any:
    node: Any = obj
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


# ------------------------------------------------------------------------------------------ selectors


def format_labels(labels: dict[str, str] | None) -> str:
    """`labels.FormatLabels`: sorted `k=v` pairs, `<none>` when empty."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def selector_string(selector: dict[str, Any] | None) -> str:
    """A LabelSelector as `labels.Selector.String()`: requirements sorted by key."""
    if not selector:
        return ""
    requirements: list[tuple[str, str]] = [
        (k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()
    ]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key}.get(
            operator, f"!{key}"
        )
        requirements.append((key, text))
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def format_selector(selector: dict[str, Any] | None) -> str:
    """`metav1.FormatLabelSelector`: like `selector_string`, `<none>` when empty."""
    return selector_string(selector) or "<none>"


def _containers_and_images(pod_spec: dict[str, Any] | None) -> tuple[str, str]:
    containers = (pod_spec or {}).get("containers") or []
    return ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)


def access_modes(modes: Iterable[str] | None) -> str:
    """`GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order."""
    present = set(modes or [])
    short = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    return ",".join(abbreviation for mode, abbreviation in short if mode in present)


# ------------------------------------------------------------------------------------------ pods


def _is_restartable(container: dict[str, Any] | None) -> bool:
    return bool(container) and (container or {}).get("restartPolicy") == "Always"


def _finished_at(status: dict[str, Any]) -> datetime | None:
    return parse_time(_get(status, "lastState", "terminated", "finishedAt"))


def _later(current: datetime | None, candidate: datetime | None) -> datetime | None:
    if candidate is None:
        return current
    return candidate if current is None or candidate > current else current


@dataclass
class _PodTally:
    reason: str
    ready: int = 0
    restarts: int = 0
    last_restart: datetime | None = None
    sidecar_restarts: int = 0
    last_sidecar_restart: datetime | None = None


def pod_status_cells(pod: dict[str, Any], now: datetime) -> tuple[str, str, str]:
    """READY, STATUS and RESTARTS of a pod, as kubectl's server-side printer computes them."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    total = len(spec.get("containers") or []) + sum(1 for c in init_specs.values() if _is_restartable(c))
    tally = _PodTally(reason=_initial_reason(status))
    initializing = _tally_init_containers(status, init_specs, tally)
    if not initializing or _condition_true(status, "Initialized"):
        _tally_containers(status, tally)
    reason = _terminal_override(pod, status, tally.reason)
    restarts = str(tally.restarts)
    if tally.restarts and tally.last_restart is not None:
        restarts = f"{tally.restarts} ({human_duration(now - tally.last_restart)} ago)"
    return f"{tally.ready}/{total}", reason, restarts


def _initial_reason(status: dict[str, Any]) -> str:
    reason = status.get("reason") or status.get("phase") or ""
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    return str(reason)


def _tally_init_containers(status: dict[str, Any], specs: dict[str, Any], tally: _PodTally) -> bool:
    """Count init containers; returns True while the pod is still initializing."""
    statuses = status.get("initContainerStatuses") or []
    for index, container in enumerate(statuses):
        restartable = _is_restartable(specs.get(container.get("name")))
        tally.restarts += int(container.get("restartCount") or 0)
        tally.last_restart = _later(tally.last_restart, _finished_at(container))
        if restartable:
            tally.sidecar_restarts += int(container.get("restartCount") or 0)
            tally.last_sidecar_restart = _later(tally.last_sidecar_restart, _finished_at(container))
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and int(terminated.get("exitCode") or 0) == 0:
            continue
        if restartable and container.get("started"):
            tally.ready += 1 if container.get("ready") else 0
            continue
        tally.reason = _init_reason(terminated, waiting, index, len(specs))
        return True
    return False


def _init_reason(
    terminated: dict[str, Any] | None, waiting: dict[str, Any] | None, index: int, count: int
) -> str:
    if terminated is not None:
        if terminated.get("reason"):
            return f"Init:{terminated['reason']}"
        if terminated.get("signal"):
            return f"Init:Signal:{terminated['signal']}"
        return f"Init:ExitCode:{int(terminated.get('exitCode') or 0)}"
    if waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
        return f"Init:{waiting['reason']}"
    return f"Init:{index}/{count}"


def _tally_containers(status: dict[str, Any], tally: _PodTally) -> None:
    tally.restarts = tally.sidecar_restarts
    tally.last_restart = tally.last_sidecar_restart
    has_running = False
    for container in reversed(status.get("containerStatuses") or []):
        tally.restarts += int(container.get("restartCount") or 0)
        tally.last_restart = _later(tally.last_restart, _finished_at(container))
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting is not None and waiting.get("reason"):
            tally.reason = waiting["reason"]
        elif terminated is not None and terminated.get("reason"):
            tally.reason = terminated["reason"]
        elif terminated is not None:
            signal = terminated.get("signal")
            tally.reason = (
                f"Signal:{signal}" if signal else f"ExitCode:{int(terminated.get('exitCode') or 0)}"
            )
        elif container.get("ready") and state.get("running") is not None:
            has_running = True
            tally.ready += 1
    if tally.reason == "Completed" and has_running:
        tally.reason = "Running" if _condition_true(status, "Ready") else "NotReady"


def _condition_true(status: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or [])


def _terminal_override(pod: dict[str, Any], status: dict[str, Any], reason: str) -> str:
    if not _meta(pod).get("deletionTimestamp"):
        return reason
    if status.get("reason") == "NodeLost":
        return "Unknown"
    if status.get("phase") not in ("Succeeded", "Failed"):
        return "Terminating"
    return reason


def _pod_cells(pod: dict[str, Any], now: datetime) -> Row:
    ready, reason, restarts = pod_status_cells(pod, now)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    pod_ips = status.get("podIPs") or []
    pod_ip = (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        wanted = [g.get("conditionType") for g in gates]
        true = sum(1 for t in wanted if _first_condition_status(status, t) == "True")
        readiness = f"{true}/{len(gates)}"
    node = spec.get("nodeName") or "<none>"
    nominated = status.get("nominatedNodeName") or "<none>"
    return [
        _meta(pod).get("name", ""),
        ready,
        reason,
        restarts,
        _age(pod, now),
        pod_ip,
        node,
        nominated,
        readiness,
    ]


def _first_condition_status(status: dict[str, Any], kind: str | None) -> str | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == kind:
            return str(condition.get("status"))
    return None


def _pod_row_conditions(pod: dict[str, Any]) -> list[dict[str, str]] | None:
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return [_completed("Succeeded", "The pod has completed successfully.")]
    if phase == "Failed":
        return [_completed("Failed", "The pod failed.")]
    return None


def _completed(reason: str, message: str) -> dict[str, str]:
    return {"type": "Completed", "status": "True", "reason": reason, "message": message}


# ------------------------------------------------------------------------------------------ workloads


def _deployment_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    return [
        _meta(obj).get("name", ""),
        f"{int(status.get('readyReplicas') or 0)}/{int(spec.get('replicas') or 0)}",
        int(status.get("updatedReplicas") or 0),
        int(status.get("availableReplicas") or 0),
        _age(obj, now),
        names,
        images,
        selector_string(spec.get("selector")),
    ]


def _replicaset_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    return [
        _meta(obj).get("name", ""),
        int(spec.get("replicas") or 0),
        int(status.get("replicas") or 0),
        int(status.get("readyReplicas") or 0),
        _age(obj, now),
        names,
        images,
        format_selector(spec.get("selector")),
    ]


def job_status(job: dict[str, Any]) -> str:
    """Complete, Failed, Terminating, Suspended, FailureTarget or Running."""
    status = job.get("status") or {}
    for condition, label in (("Complete", "Complete"), ("Failed", "Failed")):
        if _first_condition_status(status, condition) == "True":
            return label
    if _meta(job).get("deletionTimestamp"):
        return "Terminating"
    for condition in ("Suspended", "FailureTarget"):
        if _first_condition_status(status, condition) == "True":
            return condition
    return "Running"


def _job_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{int(spec['completions'])}"
    elif int(spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {int(spec['parallelism'])}"
    else:
        completions = f"{succeeded}/1"
    names, images = _containers_and_images(_get(spec, "template", "spec"))
    return [
        _meta(obj).get("name", ""),
        job_status(obj),
        completions,
        _job_duration(status, now),
        _age(obj, now),
        names,
        images,
        format_selector(spec.get("selector")),
    ]


def _job_duration(status: dict[str, Any], now: datetime) -> str:
    start = parse_time(status.get("startTime"))
    if start is None:
        return ""
    end = parse_time(status.get("completionTime")) or now
    return human_duration(end - start)


# ------------------------------------------------------------------------------------------ network


def _service_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec = obj.get("spec") or {}
    cluster_ips = spec.get("clusterIPs") or []
    ports = ",".join(_port_string(p) for p in spec.get("ports") or []) or "<none>"
    return [
        _meta(obj).get("name", ""),
        spec.get("type", ""),
        cluster_ips[0] if cluster_ips else "<none>",
        _external_ip(obj),
        ports,
        _age(obj, now),
        format_labels(spec.get("selector")),
    ]


def _port_string(port: dict[str, Any]) -> str:
    protocol = port.get("protocol", "")
    if int(port.get("nodePort") or 0) > 0:
        return f"{port.get('port')}:{port['nodePort']}/{protocol}"
    return f"{port.get('port')}/{protocol}"


def _external_ip(service: dict[str, Any]) -> str:
    spec = service.get("spec") or {}
    kind, external = spec.get("type"), list(spec.get("externalIPs") or [])
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = _get(service, "status", "loadBalancer", "ingress") or []
        balancers = sorted(
            {i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")}
        )
        return ",".join(balancers + external) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _endpoints_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), _format_endpoints(obj.get("subsets") or []), _age(obj, now)]


def _format_endpoints(subsets: list[dict[str, Any]]) -> str:
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [a.get("ip", "") for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        targets = (
            [_join_host_port(ip, p.get("port")) for p in ports for ip in addresses] if ports else addresses
        )
        count += len(targets)
        shown.extend(targets[: max(0, 3 - len(shown))])
    text = ",".join(shown)
    return f"{text} + {count - 3} more..." if count > 3 else text


def _join_host_port(ip: str, port: Any) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


# ------------------------------------------------------------------------------------------ storage


def _storage_class(obj: dict[str, Any]) -> str:
    beta = (_meta(obj).get("annotations") or {}).get("volume.beta.kubernetes.io/storage-class")
    return str(beta if beta is not None else (obj.get("spec") or {}).get("storageClassName") or "")


def _phase(obj: dict[str, Any]) -> str:
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return str((obj.get("status") or {}).get("phase") or "")


def _pvc_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    bound = bool(spec.get("volumeName"))
    return [
        _meta(obj).get("name", ""),
        _phase(obj),
        spec.get("volumeName", ""),
        str((status.get("capacity") or {}).get("storage", "0")) if bound else "",
        access_modes(status.get("accessModes")) if bound else "",
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _pv_cells(obj: dict[str, Any], now: datetime) -> Row:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    claim = spec.get("claimRef")
    return [
        _meta(obj).get("name", ""),
        str((spec.get("capacity") or {}).get("storage", "0")),
        access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy", ""),
        _phase(obj),
        f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else "",
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason", ""),
        _age(obj, now),
        spec.get("volumeMode") or "<unset>",
    ]


def _storage_class_cells(obj: dict[str, Any], now: datetime) -> Row:
    annotations = _meta(obj).get("annotations") or {}
    default = "true" in (
        annotations.get("storageclass.kubernetes.io/is-default-class"),
        annotations.get("storageclass.beta.kubernetes.io/is-default-class"),
    )
    return [
        _meta(obj).get("name", "") + (" (default)" if default else ""),
        obj.get("provisioner", ""),
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        _age(obj, now),
    ]


# ------------------------------------------------------------------------------------------ cluster


def _namespace_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), (obj.get("status") or {}).get("phase", ""), _age(obj, now)]


def _node_cells(obj: dict[str, Any], now: datetime) -> Row:
    status = obj.get("status") or {}
    ready = _first_condition_status(status, "Ready")
    states = ["Unknown" if ready is None else ("Ready" if ready == "True" else "NotReady")]
    if (obj.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    info = status.get("nodeInfo") or {}
    return [
        _meta(obj).get("name", ""),
        ",".join(states),
        ",".join(_node_roles(_meta(obj).get("labels") or {})) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion", ""),
        _node_address(status, "InternalIP"),
        _node_address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _node_roles(labels: dict[str, str]) -> list[str]:
    roles = {
        k.removeprefix("node-role.kubernetes.io/") for k in labels if k.startswith("node-role.kubernetes.io/")
    }
    if labels.get("kubernetes.io/role"):
        roles.add(labels["kubernetes.io/role"])
    return sorted(r for r in roles if r)


def _node_address(status: dict[str, Any], kind: str) -> str:
    for address in status.get("addresses") or []:
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _event_cells(obj: dict[str, Any], now: datetime) -> Row:
    first = (
        since(obj.get("firstTimestamp"), now)
        if obj.get("firstTimestamp")
        else since(obj.get("eventTime"), now)
    )
    last = since(obj.get("lastTimestamp"), now) if obj.get("lastTimestamp") else first
    count = int(obj.get("count") or 0)
    series = obj.get("series")
    if series:
        last = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        _event_source(obj),
        str(obj.get("message", "")).strip(),
        first,
        count,
        _meta(obj).get("name", ""),
    ]


def _event_source(event: dict[str, Any]) -> str:
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return f"{component}, {instance}" if instance else component


def _lease_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), (obj.get("spec") or {}).get("holderIdentity") or "", _age(obj, now)]


def _configmap_cells(obj: dict[str, Any], now: datetime) -> Row:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_meta(obj).get("name", ""), count, _age(obj, now)]


def _secret_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), obj.get("type", ""), len(obj.get("data") or {}), _age(obj, now)]


def _service_account_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), len(obj.get("secrets") or []), _age(obj, now)]


def _runtime_class_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), obj.get("handler", ""), _age(obj, now)]


def _generic_cells(obj: dict[str, Any], now: datetime) -> Row:
    return [_meta(obj).get("name", ""), _age(obj, now)]


# ------------------------------------------------------------------------------------------ registry

PRINTERS: Final[dict[str, Printer]] = {
    "Pod": Printer(
        (
            NAME,
            Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
            Column("Status", "string", "The aggregate status of the containers in this pod."),
            _col("Restarts", "pod.restarts"),
            AGE,
            _col("IP", "pod.podIP", wide=True),
            _col("Node", "pod.nodeName", wide=True),
            _col("Nominated Node", "pod.nominatedNodeName", wide=True),
            _col("Readiness Gates", "pod.readinessGates", wide=True),
        ),
        _pod_cells,
    ),
    "Deployment": Printer(
        (
            NAME,
            _col("Ready", "deploy.ready"),
            _col("Up-to-date", "deploy.updatedReplicas"),
            _col("Available", "deploy.availableReplicas"),
            AGE,
            CONTAINERS,
            IMAGES,
            _col("Selector", "deploy.selector", wide=True),
        ),
        _deployment_cells,
    ),
    "ReplicaSet": Printer(
        (
            NAME,
            _col("Desired", "rs.specReplicas", type_="integer"),
            _col("Current", "rs.statusReplicas", type_="integer"),
            _col("Ready", "rs.readyReplicas", type_="integer"),
            AGE,
            CONTAINERS,
            IMAGES,
            _col("Selector", "rs.selector", wide=True),
        ),
        _replicaset_cells,
    ),
    "Job": Printer(
        (
            NAME,
            Column("Status", "string", "Status of the job."),
            _col("Completions", "job.succeeded"),
            Column("Duration", "string", "Time required to complete the job."),
            AGE,
            CONTAINERS,
            IMAGES,
            _col("Selector", "job.selector", wide=True),
        ),
        _job_cells,
    ),
    "Service": Printer(
        (
            NAME,
            _col("Type", "svc.type"),
            _col("Cluster-IP", "svc.clusterIP"),
            _col("External-IP", "svc.externalIPs"),
            _col("Port(s)", "svc.ports"),
            AGE,
            _col("Selector", "svc.selector", wide=True),
        ),
        _service_cells,
    ),
    "Endpoints": Printer((NAME, _col("Endpoints", "ep.subsets"), AGE), _endpoints_cells),
    "PersistentVolumeClaim": Printer(
        (
            NAME,
            _col("Status", "pvc.phase"),
            _col("Volume", "pvc.volumeName"),
            _col("Capacity", "pvc.capacity"),
            _col("Access Modes", "pvc.accessModes"),
            Column("StorageClass", "string", "StorageClass of the pvc"),
            Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
            AGE,
            _col("VolumeMode", "pvc.volumeMode", wide=True),
        ),
        _pvc_cells,
    ),
    "PersistentVolume": Printer(
        (
            NAME,
            _col("Capacity", "pv.capacity"),
            _col("Access Modes", "pv.accessModes"),
            _col("Reclaim Policy", "pv.reclaim"),
            _col("Status", "pv.phase"),
            _col("Claim", "pv.claimRef"),
            Column("StorageClass", "string", "StorageClass of the pv"),
            Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
            _col("Reason", "pv.reason"),
            AGE,
            _col("VolumeMode", "pv.volumeMode", wide=True),
        ),
        _pv_cells,
    ),
    "StorageClass": Printer(
        (
            NAME,
            _col("Provisioner", "sc.provisioner"),
            _col("ReclaimPolicy", "sc.reclaimPolicy"),
            _col("VolumeBindingMode", "sc.volumeBindingMode"),
            _col("AllowVolumeExpansion", "sc.allowVolumeExpansion"),
            AGE,
        ),
        _storage_class_cells,
    ),
    "Namespace": Printer(
        (NAME, Column("Status", "string", "The status of the namespace"), AGE), _namespace_cells
    ),
    "Node": Printer(
        (
            NAME,
            Column("Status", "string", "The status of the node"),
            Column("Roles", "string", "The roles of the node"),
            AGE,
            _col("Version", "node.kubeletVersion"),
            _col("Internal-IP", "node.addresses", wide=True),
            _col("External-IP", "node.addresses", wide=True),
            _col("OS-Image", "node.osImage", wide=True),
            _col("Kernel-Version", "node.kernelVersion", wide=True),
            _col("Container-Runtime", "node.containerRuntimeVersion", wide=True),
        ),
        _node_cells,
    ),
    "Event": Printer(
        (
            _col("Last Seen", "ev.lastTimestamp"),
            _col("Type", "ev.type"),
            _col("Reason", "ev.reason"),
            _col("Object", "ev.involvedObject"),
            _col("Subobject", "ev.fieldPath", wide=True),
            _col("Source", "ev.source", wide=True),
            _col("Message", "ev.message"),
            _col("First Seen", "ev.firstTimestamp", wide=True),
            _col("Count", "ev.count", wide=True),
            Column("Name", "string", DESCRIPTIONS["meta.name"], 1, "name"),
        ),
        _event_cells,
    ),
    "Lease": Printer((NAME, _col("Holder", "lease.holderIdentity"), AGE), _lease_cells),
    "ConfigMap": Printer((NAME, _col("Data", "cm.data"), AGE), _configmap_cells),
    "Secret": Printer((NAME, _col("Type", "secret.type"), _col("Data", "secret.data"), AGE), _secret_cells),
    "ServiceAccount": Printer((NAME, _col("Secrets", "sa.secrets"), AGE), _service_account_cells),
    "RuntimeClass": Printer((NAME, Column("Handler", "string", ""), AGE), _runtime_class_cells),
}

GENERIC = Printer(
    (
        NAME,
        Column(
            "Age",
            "date",
            "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp",
        ),
    ),
    _generic_cells,
)


def printer_for(kind: str) -> Printer:
    return PRINTERS.get(kind, GENERIC)


# ------------------------------------------------------------------------------------------ responses


def partial_object_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """`PartialObjectMetadata`: the object's metadata alone."""
    return {"kind": "PartialObjectMetadata", "apiVersion": META_V1, "metadata": obj.get("metadata") or {}}


def _row_object(obj: dict[str, Any], include_object: str) -> dict[str, Any] | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return partial_object_metadata(obj)


def _list_metadata(
    resource_version: str, continue_token: str | None, remaining_item_count: int | None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    return metadata


def to_table(
    kind: str,
    objects: list[dict[str, Any]],
    *,
    now: datetime,
    include_object: str = "Metadata",
    resource_version: str,
    continue_token: str | None = None,
    remaining_item_count: int | None = None,
) -> dict[str, Any]:
    """A `meta.k8s.io/v1` Table of `objects` (all of `kind`), rows in the order given.

    `include_object` is the request's `includeObject` (`None`, `Metadata` — the default — or
    `Object`); `resource_version` is the list's (or, for a single GET, the object's)."""
    printer = printer_for(kind)
    rows: list[dict[str, Any]] = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer.cells(obj, now)}
        conditions = _pod_row_conditions(obj) if kind == "Pod" else None
        if conditions:
            row["conditions"] = conditions
        row["object"] = _row_object(obj, include_object)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": META_V1,
        "metadata": _list_metadata(resource_version, continue_token, remaining_item_count),
        "columnDefinitions": [column.as_dict() for column in printer.columns],
        "rows": rows,
    }


def partial_object_metadata_list(
    objects: list[dict[str, Any]],
    *,
    resource_version: str,
    continue_token: str | None = None,
    remaining_item_count: int | None = None,
) -> dict[str, Any]:
    """The answer to `Accept: application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io`."""
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": META_V1,
        "metadata": _list_metadata(resource_version, continue_token, remaining_item_count),
        "items": [partial_object_metadata(obj) for obj in objects],
    }
