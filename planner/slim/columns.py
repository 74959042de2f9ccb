"""The columns of server-side Tables: each kind's column definitions, and the cell formats they share.

A column is what the apiserver's printers declare (`pkg/printers/internalversion`): name, type,
description and priority (wide columns are priority 1 and are always sent; `-o wide` only shows
them). Column descriptions for pods and deployments are the v1.28.7 golden texts; for the other kinds
they are the API reference's field documentation, which may differ in wording from a given release
(kubectl never shows descriptions). Kinds without columns of their own get `GENERIC`, the Name/Age
columns the apiserver gives custom resources.

The formats are the apimachinery helpers cells are printed with: `duration.HumanDuration` (AGE and
durations), `translateTimestampSince`, `labels.FormatLabels`, label selectors as
`labels.Selector.String()`, access modes as RWO/ROX/RWX/RWOP.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import resources
from typing import Any, Final

from planner.ages import human_age

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
    "eps.addressType": (
        "addressType specifies the type of address carried by this EndpointSlice. All addresses in this "
        "slice must be the same type. This field is immutable after creation. The following address types "
        "are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. "
        "* FQDN: Represents a Fully Qualified Domain Name."
    ),
    "eps.ports": (
        "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must "
        "have a unique name. When ports is empty, it indicates that there are no defined ports. When a port "
        'is defined with a nil port value, it indicates "all ports". Each slice may include a maximum of '
        "100 ports."
    ),
    "eps.endpoints": (
        "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 "
        "endpoints."
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
    "rbac.roleRef": (
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. "
        "If the RoleRef cannot be resolved, the Authorizer must return an error."
    ),
}


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


@functools.cache
def _recorded_columns() -> dict[str, list[dict[str, Any]]]:
    text = resources.files("planner.slim").joinpath("printer_columns.json").read_text()
    loaded: dict[str, list[dict[str, Any]]] = json.loads(text)
    return loaded


def recorded(kind: str) -> tuple[Column, ...]:
    """The columns the v1.28.7 server printed for a kind (`printer_columns.json`, from its Tables)."""
    return tuple(
        Column(c["name"], c["type"], c["description"], c["priority"], c["format"])
        for c in _recorded_columns()[kind]
    )


def _col(name: str, description_key: str, *, wide: bool = False, type_: str = "string") -> Column:
    return Column(name, type_, DESCRIPTIONS[description_key], 1 if wide else 0)


NAME = Column("Name", "string", DESCRIPTIONS["meta.name"], format="name")
AGE = _col("Age", "meta.creationTimestamp")
CONTAINERS = Column("Containers", "string", "Names of each container in the template.", 1)
IMAGES = Column("Images", "string", "Images referenced by each container in the template.", 1)


# ------------------------------------------------------------------------------------------ per kind

POD: Final = (
    NAME,
    Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", "The aggregate status of the containers in this pod."),
    _col("Restarts", "pod.restarts"),
    AGE,
    _col("IP", "pod.podIP", wide=True),
    _col("Node", "pod.nodeName", wide=True),
    _col("Nominated Node", "pod.nominatedNodeName", wide=True),
    _col("Readiness Gates", "pod.readinessGates", wide=True),
)

DEPLOYMENT: Final = (
    NAME,
    _col("Ready", "deploy.ready"),
    _col("Up-to-date", "deploy.updatedReplicas"),
    _col("Available", "deploy.availableReplicas"),
    AGE,
    CONTAINERS,
    IMAGES,
    _col("Selector", "deploy.selector", wide=True),
)

REPLICA_SET: Final = (
    NAME,
    _col("Desired", "rs.specReplicas", type_="integer"),
    _col("Current", "rs.statusReplicas", type_="integer"),
    _col("Ready", "rs.readyReplicas", type_="integer"),
    AGE,
    CONTAINERS,
    IMAGES,
    _col("Selector", "rs.selector", wide=True),
)

JOB: Final = (
    NAME,
    Column("Status", "string", "Status of the job."),
    _col("Completions", "job.succeeded"),
    Column("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    _col("Selector", "job.selector", wide=True),
)

SERVICE: Final = (
    NAME,
    _col("Type", "svc.type"),
    _col("Cluster-IP", "svc.clusterIP"),
    _col("External-IP", "svc.externalIPs"),
    _col("Port(s)", "svc.ports"),
    AGE,
    _col("Selector", "svc.selector", wide=True),
)

ENDPOINTS: Final = (NAME, _col("Endpoints", "ep.subsets"), AGE)

ENDPOINT_SLICE: Final = (
    NAME,
    _col("AddressType", "eps.addressType"),
    _col("Ports", "eps.ports"),
    _col("Endpoints", "eps.endpoints"),
    AGE,
)

PERSISTENT_VOLUME_CLAIM: Final = (
    NAME,
    _col("Status", "pvc.phase"),
    _col("Volume", "pvc.volumeName"),
    _col("Capacity", "pvc.capacity"),
    _col("Access Modes", "pvc.accessModes"),
    Column("StorageClass", "string", "StorageClass of the pvc"),
    Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    AGE,
    _col("VolumeMode", "pvc.volumeMode", wide=True),
)

PERSISTENT_VOLUME: Final = (
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
)

STORAGE_CLASS: Final = (
    NAME,
    _col("Provisioner", "sc.provisioner"),
    _col("ReclaimPolicy", "sc.reclaimPolicy"),
    _col("VolumeBindingMode", "sc.volumeBindingMode"),
    _col("AllowVolumeExpansion", "sc.allowVolumeExpansion"),
    AGE,
)

NAMESPACE: Final = (NAME, Column("Status", "string", "The status of the namespace"), AGE)

NODE: Final = (
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
)

EVENT: Final = (
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
)

LEASE: Final = (NAME, _col("Holder", "lease.holderIdentity"), AGE)

CONFIG_MAP: Final = (NAME, _col("Data", "cm.data"), AGE)

SECRET: Final = (NAME, _col("Type", "secret.type"), _col("Data", "secret.data"), AGE)

SERVICE_ACCOUNT: Final = (NAME, _col("Secrets", "sa.secrets"), AGE)

RUNTIME_CLASS: Final = (NAME, Column("Handler", "string", ""), AGE)


ROLE: Final = (NAME, _col("Created At", "meta.creationTimestamp"))


def _binding_columns(kind: str) -> tuple[Column, ...]:
    return (
        NAME,
        _col("Role", "rbac.roleRef"),
        AGE,
        Column("Users", "string", f"Users in the {kind}", 1),
        Column("Groups", "string", f"Groups in the {kind}", 1),
        Column("ServiceAccounts", "string", f"ServiceAccounts in the {kind}", 1),
    )


ROLE_BINDING: Final = _binding_columns("roleBinding")
CLUSTER_ROLE_BINDING: Final = _binding_columns("clusterRoleBinding")

GENERIC: Final = (
    NAME,
    Column(
        "Age",
        "date",
        "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp",
    ),
)


# ------------------------------------------------------------------------------------------ formats


def human_duration(delta: timedelta) -> str:
    """Kubernetes' `duration.HumanDuration`: `119s`, `5m3s`, `3h10m`, `2d5h`, `<invalid>` in the future."""
    return human_age(delta.total_seconds())


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
