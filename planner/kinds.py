"""The kinds planner writes, as one table that render, diff and graph share.

Each row says where a kind lives in the API (group, version, plural, scope) and which of its fields
cannot be changed in place. That knowledge decides whether a change is an update or a replace
(docs/design.md §4), so it belongs in one place rather than in `if kind == ...` branches across stages.

Field paths are dotted (`spec.template`); `[*]` stands for every item of a list
(`spec.containers[*].image`). A path covers everything beneath it. `immutable_fields` force a replace
when they change, except where `mutable_fields` carve out a path beneath them, with the kind of change
the API server allows there. `create_only_fields` are sent on create and never compared afterwards.
This module holds data only; the diff interprets it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

AllowedChange = Literal["any", "increase", "additions"]


@dataclass(frozen=True, kw_only=True)
class MutableField:
    """A path inside an immutable field that may still change, and how: freely (`any`), only upward
    (`increase`, e.g. a PVC's storage request), or only by adding list items (`additions`)."""

    path: str
    change: AllowedChange = "any"


@dataclass(frozen=True, kw_only=True)
class KindInfo:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    immutable_fields: tuple[str, ...] = ()
    mutable_fields: tuple[MutableField, ...] = ()
    create_only_fields: tuple[str, ...] = ()
    sensitive: bool = False  # values never printed (Secret)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        """The ApplySet spelling: `Deployment.apps`, and just `Secret` for the core group."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


NAMESPACE = KindInfo(kind="Namespace", group="", version="v1", plural="namespaces", namespaced=False)
CONFIG_MAP = KindInfo(kind="ConfigMap", group="", version="v1", plural="configmaps", namespaced=True)
SECRET = KindInfo(kind="Secret", group="", version="v1", plural="secrets", namespaced=True, sensitive=True)
SERVICE = KindInfo(
    kind="Service",
    group="",
    version="v1",
    plural="services",
    namespaced=True,
    immutable_fields=("spec.clusterIP", "spec.clusterIPs"),
)
PERSISTENT_VOLUME_CLAIM = KindInfo(
    kind="PersistentVolumeClaim",
    group="",
    version="v1",
    plural="persistentvolumeclaims",
    namespaced=True,
    immutable_fields=("spec",),
    mutable_fields=(MutableField(path="spec.resources.requests.storage", change="increase"),),
    create_only_fields=("spec.dataSource", "spec.dataSourceRef"),
)
POD = KindInfo(
    kind="Pod",
    group="",
    version="v1",
    plural="pods",
    namespaced=True,
    immutable_fields=("spec",),
    mutable_fields=(
        MutableField(path="spec.containers[*].image"),
        MutableField(path="spec.initContainers[*].image"),
        MutableField(path="spec.activeDeadlineSeconds"),
        MutableField(path="spec.tolerations", change="additions"),
    ),
)
DEPLOYMENT = KindInfo(
    kind="Deployment",
    group="apps",
    version="v1",
    plural="deployments",
    namespaced=True,
    immutable_fields=("spec.selector",),
)
JOB = KindInfo(
    kind="Job",
    group="batch",
    version="v1",
    plural="jobs",
    namespaced=True,
    immutable_fields=("spec.template", "spec.selector", "spec.completions", "spec.completionMode"),
)
CRON_JOB = KindInfo(kind="CronJob", group="batch", version="v1", plural="cronjobs", namespaced=True)
INGRESS = KindInfo(
    kind="Ingress", group="networking.k8s.io", version="v1", plural="ingresses", namespaced=True
)

STATEFUL_SET = KindInfo(
    kind="StatefulSet",
    group="apps",
    version="v1",
    plural="statefulsets",
    namespaced=True,
    immutable_fields=(
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
        "spec.podManagementPolicy",
    ),
)
HORIZONTAL_POD_AUTOSCALER = KindInfo(
    kind="HorizontalPodAutoscaler",
    group="autoscaling",
    version="v2",
    plural="horizontalpodautoscalers",
    namespaced=True,
)

DAEMON_SET = KindInfo(
    kind="DaemonSet",
    group="apps",
    version="v1",
    plural="daemonsets",
    namespaced=True,
    immutable_fields=("spec.selector",),
)

KINDS: tuple[KindInfo, ...] = (
    NAMESPACE,
    CONFIG_MAP,
    SECRET,
    SERVICE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    DEPLOYMENT,
    JOB,
    CRON_JOB,
    INGRESS,
    STATEFUL_SET,
    DAEMON_SET,
    HORIZONTAL_POD_AUTOSCALER,
)

# The Events that explain why a wait is not over yet (`planner.wait.evidence`, read) and those the controller
# records on a plan's ApplySet parent (written).
EVENT = KindInfo(kind="Event", group="", version="v1", plural="events", namespaced=True)

# planner's own bookkeeping, never a plan's member: the run lock (planner.state.runlock) and the controller's
# leader election.
LEASE = KindInfo(kind="Lease", group="coordination.k8s.io", version="v1", plural="leases", namespaced=True)
# The Plan custom resource (`planner crd`): read and reported on by the controller, never rendered.
PLAN = KindInfo(kind="Plan", group="planner.dev", version="v1", plural="plans", namespaced=True)

_BY_KIND = {info.kind: info for info in KINDS}
_BY_GROUP_KIND = {info.group_kind: info for info in KINDS}


def _builtin(kind: str, api_version: str, plural: str, *, namespaced: bool = True) -> KindInfo:
    group, _, version = api_version.rpartition("/")
    return KindInfo(kind=kind, group=group, version=version, plural=plural, namespaced=namespaced)


SERVICE_ACCOUNT = _builtin("ServiceAccount", "v1", "serviceaccounts")
CUSTOM_RESOURCE_DEFINITION = _builtin(
    "CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False
)

# Built-in kinds a plan's raw manifests (`manifests:`) commonly hold and planner does not render itself:
# known here so that render can place them (namespaced or not) and the graph order them without asking
# the cluster. Any other kind is found through discovery (`planner.kube.discovery`).
BUILTIN_KINDS: tuple[KindInfo, ...] = (
    CUSTOM_RESOURCE_DEFINITION,
    SERVICE_ACCOUNT,
    _builtin("PersistentVolume", "v1", "persistentvolumes", namespaced=False),
    _builtin("ResourceQuota", "v1", "resourcequotas"),
    _builtin("LimitRange", "v1", "limitranges"),
    _builtin("Endpoints", "v1", "endpoints"),
    _builtin("ReplicaSet", "apps/v1", "replicasets"),
    _builtin("Role", "rbac.authorization.k8s.io/v1", "roles"),
    _builtin("RoleBinding", "rbac.authorization.k8s.io/v1", "rolebindings"),
    _builtin("ClusterRole", "rbac.authorization.k8s.io/v1", "clusterroles", namespaced=False),
    _builtin("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "clusterrolebindings", namespaced=False),
    _builtin("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets"),
    _builtin("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies"),
    _builtin("IngressClass", "networking.k8s.io/v1", "ingressclasses", namespaced=False),
    _builtin("StorageClass", "storage.k8s.io/v1", "storageclasses", namespaced=False),
    _builtin("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", namespaced=False),
    _builtin("RuntimeClass", "node.k8s.io/v1", "runtimeclasses", namespaced=False),
    _builtin(
        "ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        namespaced=False,
    ),
    _builtin(
        "MutatingWebhookConfiguration",
        "admissionregistration.k8s.io/v1",
        "mutatingwebhookconfigurations",
        namespaced=False,
    ),
    _builtin("APIService", "apiregistration.k8s.io/v1", "apiservices", namespaced=False),
)
_KNOWN = {(info.group, info.kind): info for info in (*BUILTIN_KINDS, *KINDS)}


def renders(group_kind: str) -> bool:
    """Whether planner renders objects of this kind itself (a raw manifest may hold any other)."""
    return group_kind in _BY_GROUP_KIND


def known(group: str, kind: str) -> KindInfo | None:
    """The row of a kind planner knows without asking the cluster (its own, or a common built-in)."""
    return _KNOWN.get((group, kind))


def group_of(api_version: str) -> str:
    """`apps` of `apps/v1`, "" of `v1`."""
    return api_version.rpartition("/")[0]


def declared_kinds(manifests: Iterable[Mapping[str, Any]]) -> list[KindInfo]:
    """The kinds the CustomResourceDefinitions among `manifests` declare."""
    crds = (m for m in manifests if m.get("kind") == CUSTOM_RESOURCE_DEFINITION.kind)
    return [info for crd in crds if (info := served_by(crd)) is not None]


def served_by(crd: Mapping[str, Any]) -> KindInfo | None:
    """The kind a CustomResourceDefinition manifest declares, at its storage version (else its first
    served one); None for a CRD too malformed to say (the API server then refuses it)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, Mapping) and v.get("name")]
    chosen = next((v for v in versions if v.get("storage")), versions[0] if versions else None)
    if not (isinstance(spec.get("group"), str) and names.get("kind") and names.get("plural") and chosen):
        return None
    return KindInfo(
        kind=str(names["kind"]),
        group=spec["group"],
        version=str(chosen["name"]),
        plural=str(names["plural"]),
        namespaced=spec.get("scope", "Namespaced") != "Cluster",
    )


def by_kind(kind: str) -> KindInfo:
    """The row for a kind name (`Deployment`); KeyError naming the known kinds otherwise."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise KeyError(f"unknown kind {kind!r}; planner writes {', '.join(sorted(_BY_KIND))}") from None


def by_group_kind(group_kind: str) -> KindInfo:
    """The row for an ApplySet group-kind (`Deployment.apps`, `Secret`); KeyError otherwise."""
    try:
        return _BY_GROUP_KIND[group_kind]
    except KeyError:
        known = ", ".join(sorted(_BY_GROUP_KIND))
        raise KeyError(f"unknown group-kind {group_kind!r}; planner writes {known}") from None


def for_manifest(manifest: Mapping[str, Any]) -> KindInfo:
    """The row for a manifest of a kind planner renders, by its `kind` (planner's kinds have unique
    names across groups); any other kind is resolved by `planner.kube.discovery.Kinds`."""
    return by_kind(str(manifest.get("kind", "")))
