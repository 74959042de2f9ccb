"""The resource table: one `ResourceType` per served kind drives discovery, routing and every write.

Adding a kind is one entry in `RESOURCES`: its names and scope (discovery, URLs), its verbs and
subresources, its flags, and the hooks through which it differs from the generic paths of
`api.Api`. The hooks are plain functions from `defaults` (decoders, defaulters), `admission`
(admitters, releasers), `validation` (validators) and `lifecycle` (what creating and deleting does);
a new per-kind step is a new optional field here, called at one place in `api.Api`. Nothing else in
the server switches on kind names: the API core sees only these fields.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planner.slim import (
    admission,
    budgets,
    clusterkinds,
    conversion,
    crds,
    defaults,
    kind_hooks,
    quota,
    reviews,
    validators,
)
from planner.slim.mergekeys import Struct, schema_for
from planner.slim.printers import Printer, printer_for
from planner.slim.selectors import FieldGetter, field_getter
from planner.slim.status_errors import Cause, Target

Obj = dict[str, Any]
Mutator = Callable[[Obj], None]
Admitter = Callable[[admission.Admission, Obj, Obj | None, Target], list[Cause]]
Releaser = Callable[[admission.Admission, Obj], None]
Companions = Callable[[Obj], list[tuple[str, str, Obj]]]
GracePeriod = Callable[[Obj, int | None], int]
Contents = Callable[[Obj], tuple[str, ...]]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)
NAMESPACE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")


@dataclass(frozen=True)
class ResourceType:
    """One served kind. Flags:

    - `has_status`: `/status` exists; main-endpoint writes keep the stored status, `/status` writes
      change only it (and `metadata.annotations` where `status_takes_annotations`);
      `keeps_status_on_create`: a create keeps the status it is sent (a Node registering);
    - `tracks_generation`: `metadata.generation` counts spec changes;
    - `default_propagation`: the deletion propagation policy when the request names none;
    - `returns_deleted_object`: DELETE answers with the object instead of a Status.

    Hooks, in the order a write runs them (None or empty: the kind has no such step):

    - `defaulter(obj)`: defaults and canonical forms, on create and on every main-endpoint update;
    - `spec_finalizers`: what the server keeps in `spec.finalizers` (a Namespace's `kubernetes`),
      set on every main-endpoint write when the API adds server finalizers, else cleared; the object
      is removed only once they are gone;
    - `server_finalizers`: `metadata.finalizers` added on create when the API adds server finalizers
      (only the simulation's controllers remove them);
    - `drop_generated(obj)`: removes, from a copy of a new object, what the kind's strategy generated
      and its creator therefore does not own in managedFields (a Job's selector and labels);
    - `admitter(admission, obj, old, target)`: admission that reads other objects or reserves
      something; returns causes for the 422 (or raises);
    - `releaser(admission, obj)`: gives back what the admitter reserved, when a new object is not
      stored after all (dry run, 409, 422) or an object is removed;
    - `validator(obj)`, `update_validator(obj, old)`: causes for the 422;
    - `created_with(obj)`: (kind, namespace, body) of objects created along with a new one;
    - `deletion_grace(obj, requested)`: seconds a delete waits, with `deletionTimestamp` set, before
      whoever ends the grace period removes the object (the node agent, for a Pod);
    - `on_delete(obj)`: what a pending delete changes besides `deletionTimestamp` (a Namespace's phase);
    - `is_namespace`: objects of this kind are namespaces: removing one removes everything in it;
    - `records_requester(obj, user_info)`: the new object with its creator recorded (a CSR's
      `spec.username`, `uid`, `groups`, `extra`), applied by the HTTP layer, which knows the user;
    - `deprecation`: the apiserver's deprecation warning, sent with every answer (`Warning: 299`);
    - `stored_in`: the store key (`group/plural`) when it is another kind's (events.k8s.io Events are
      stored as core Events);
    - `removes_with(obj)`: the store keys (`group/plural`) whose objects all go when `obj` is removed
      (a CRD's custom resources).

    Custom kinds (`customresources.py`) are not Go structs (`structured` False): their objects keep
    empty values as sent, are never protobuf, refuse strategic merge patches (415), and bring their
    own `schema` (the CRD version's `openAPIV3Schema`, for OpenAPI), `merge_schema` (server-side
    apply; built-in kinds' is `mergekeys.schema_for(kind)`), `printer` (Table columns) and
    `generation_of` (what a change of bumps `metadata.generation`; built-in kinds': `spec`).

    Versions: a kind served in several versions has one entry per version, the stored one first (it is
    what `by_kind` returns); the others convert with `to_storage(obj)` when a body is decoded and
    `from_storage(obj)` whenever an object is served (`objects.decode`, `objects.with_type`).

    `answer(review, namespace, body)`: the kind is answered, not stored (access and token reviews);
    its only verb is create.
    """

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    has_status: bool = False
    keeps_status_on_create: bool = False
    status_takes_annotations: bool = False
    tracks_generation: bool = False
    name_rule: str = "subdomain"
    storage_version_hash: str = ""
    default_propagation: str = "Background"
    returns_deleted_object: bool = False
    defaulter: Mutator | None = None
    spec_finalizers: tuple[str, ...] = ()
    server_finalizers: tuple[str, ...] = ()
    drop_generated: Mutator | None = None
    admitter: Admitter | None = None
    releaser: Releaser | None = None
    validator: validators.Validator | None = None
    update_validator: validators.UpdateValidator | None = None
    created_with: Companions | None = None
    deletion_grace: GracePeriod | None = None
    on_delete: Mutator | None = None
    is_namespace: bool = False
    to_storage: conversion.Converter | None = None
    from_storage: conversion.Converter | None = None
    answer: reviews.Answer | None = None
    extra_field_selectors: Mapping[str, FieldGetter] = field(default_factory=dict)
    removes_with: Contents | None = None
    structured: bool = True
    schema: Mapping[str, Any] | None = None
    custom_merge_schema: Struct | None = None
    custom_printer: Printer | None = None
    generation_of: Callable[[Obj], Any] | None = None
    stored_in: str = ""
    deprecation: str = ""
    records_requester: Callable[[Obj, Obj], Obj] | None = None

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def merge_schema(self) -> Struct:
        return self.custom_merge_schema or schema_for(self.kind)

    @property
    def printer(self) -> Printer:
        return self.custom_printer or printer_for(self.kind)

    def generation_source(self, obj: Obj) -> Any:
        """What `metadata.generation` counts changes of."""
        return self.generation_of(obj) if self.generation_of else obj.get("spec")

    @property
    def field_selectors(self) -> dict[str, FieldGetter]:
        getters = {"metadata.name": field_getter("metadata.name")}
        if self.namespaced:
            getters["metadata.namespace"] = field_getter("metadata.namespace")
        getters.update(self.extra_field_selectors)
        return getters


def _selectors(*paths: str) -> dict[str, FieldGetter]:
    return {path: field_getter(path) for path in paths}


_EVENT_FIELDS = _selectors(
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_EVENT_FIELDS["source"] = lambda obj: str((obj.get("source") or {}).get("component") or "")

# Stored in autoscaling/v2 and served in v1 too (`conversion.py`).
HPA_V2 = ResourceType(
    "autoscaling",
    "v2",
    "HorizontalPodAutoscaler",
    "horizontalpodautoscalers",
    "horizontalpodautoscaler",
    short_names=("hpa",),
    categories=("all",),
    subresources=("status",),
    has_status=True,
    storage_version_hash="qwQve8ut294=",
    defaulter=defaults.default_hpa,
    validator=validators.validate_hpa,
)

# Served because a v1.28 server serves them (`kubectl api-resources`); what they do is in docs/embedded-cluster.md.
EVENTS_V1 = ResourceType(
    "events.k8s.io",
    "v1",
    "Event",
    "events",
    "event",
    short_names=("ev",),
    storage_version_hash="r2yiGXH7wu8=",
    validator=validators.validate_event,
    to_storage=clusterkinds.events_to_core,
    from_storage=clusterkinds.events_from_core,
    stored_in="/events",
)
FLOW_SCHEMA = ResourceType(
    "flowcontrol.apiserver.k8s.io",
    "v1beta3",
    "FlowSchema",
    "flowschemas",
    "flowschema",
    namespaced=False,
    subresources=("status",),
    has_status=True,
    tracks_generation=True,
    storage_version_hash="9NnFrw7ZEmA=",
    defaulter=clusterkinds.default_flow_schema,
)
PRIORITY_LEVEL = ResourceType(
    "flowcontrol.apiserver.k8s.io",
    "v1beta3",
    "PriorityLevelConfiguration",
    "prioritylevelconfigurations",
    "prioritylevelconfiguration",
    namespaced=False,
    subresources=("status",),
    has_status=True,
    tracks_generation=True,
    storage_version_hash="+CwSrEWTDhc=",
    defaulter=clusterkinds.default_priority_level,
    validator=clusterkinds.validate_priority_level,
)
CLUSTER_KINDS: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "ComponentStatus",
        "componentstatuses",
        "componentstatus",
        namespaced=False,
        short_names=("cs",),
        verbs=("get", "list"),
        deprecation="v1 ComponentStatus is deprecated in v1.19+",
    ),
    ResourceType(
        "",
        "v1",
        "LimitRange",
        "limitranges",
        "limitrange",
        short_names=("limits",),
        storage_version_hash="EBKMFVe6cwo=",
        defaulter=clusterkinds.default_limit_range,
    ),
    ResourceType(
        "",
        "v1",
        "PodTemplate",
        "podtemplates",
        "podtemplate",
        tracks_generation=True,
        storage_version_hash="LIXB2x4IFpk=",
        defaulter=clusterkinds.default_pod_template,
        generation_of=lambda obj: obj.get("template"),
    ),
    ResourceType(
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        "resourcequota",
        short_names=("quota",),
        subresources=("status",),
        has_status=True,
        storage_version_hash="8uhSgffRX6w=",
        defaulter=clusterkinds.default_resource_quota,
        admitter=quota.admit_quota,
    ),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        namespaced=False,
        categories=("api-extensions",),
        tracks_generation=True,
        storage_version_hash="Sqi0GUgDaX0=",
        defaulter=clusterkinds.default_mutating_webhooks,
        validator=clusterkinds.validate_webhooks,
        generation_of=lambda obj: obj.get("webhooks"),
    ),
    ResourceType(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        namespaced=False,
        categories=("api-extensions",),
        tracks_generation=True,
        storage_version_hash="B0wHjQmsGNk=",
        defaulter=clusterkinds.default_validating_webhooks,
        validator=clusterkinds.validate_webhooks,
        generation_of=lambda obj: obj.get("webhooks"),
    ),
    ResourceType(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        "apiservice",
        namespaced=False,
        categories=("api-extensions",),
        subresources=("status",),
        has_status=True,
        storage_version_hash="InPBPD7+PqM=",
        defaulter=clusterkinds.default_api_service,
    ),
    ResourceType(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        "controllerrevision",
        storage_version_hash="85nkx63pcBU=",
    ),
    ResourceType(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        "certificatesigningrequest",
        namespaced=False,
        short_names=("csr",),
        subresources=("approval", "status"),
        has_status=True,
        storage_version_hash="95fRKMXA+00=",
        drop_generated=clusterkinds.drop_requester,
        validator=clusterkinds.validate_csr,
        records_requester=clusterkinds.with_requester,
    ),
    EVENTS_V1,
    FLOW_SCHEMA,
    PRIORITY_LEVEL,
    replace(
        FLOW_SCHEMA,
        version="v1beta2",
        deprecation=(
            "flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema is deprecated in v1.26+, unavailable in v1.29+; "
            "use flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"
        ),
        to_storage=clusterkinds.flow_schema_as("v1beta3"),
        from_storage=clusterkinds.flow_schema_as("v1beta2"),
    ),
    replace(
        PRIORITY_LEVEL,
        version="v1beta2",
        deprecation=(
            "flowcontrol.apiserver.k8s.io/v1beta2 PriorityLevelConfiguration is deprecated in v1.26+, "
            "unavailable in v1.29+; use flowcontrol.apiserver.k8s.io/v1beta3 PriorityLevelConfiguration"
        ),
        to_storage=clusterkinds.priority_level_from_v1beta2,
        from_storage=clusterkinds.priority_level_to_v1beta2,
    ),
    ResourceType(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        "ingressclass",
        namespaced=False,
        tracks_generation=True,
        storage_version_hash="l/iqIbDgFyQ=",
    ),
    ResourceType(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        "networkpolicy",
        short_names=("netpol",),
        tracks_generation=True,
        storage_version_hash="YpfwF18m1G8=",
        defaulter=clusterkinds.default_network_policy,
    ),
    ResourceType(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        short_names=("pdb",),
        subresources=("status",),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="EVWiDmWqyJw=",
        admitter=budgets.admit_budget,
        validator=clusterkinds.validate_pdb,
    ),
    ResourceType(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        "priorityclass",
        namespaced=False,
        short_names=("pc",),
        tracks_generation=True,
        storage_version_hash="1QwjyaZjj3Y=",
        defaulter=clusterkinds.default_priority_class,
        admitter=admission.admit_priority_class,
        validator=clusterkinds.validate_priority_class,
        update_validator=clusterkinds.update_priority_class,
        generation_of=lambda obj: obj.get("value"),
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        "csidriver",
        namespaced=False,
        storage_version_hash="hL6j/rwBV5w=",
        defaulter=clusterkinds.default_csi_driver,
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "CSINode",
        "csinodes",
        "csinode",
        namespaced=False,
        storage_version_hash="Pe62DkZtjuo=",
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        "csistoragecapacity",
        storage_version_hash="xeVl+2Ly1kE=",
        defaulter=clusterkinds.default_storage_capacity,
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        "volumeattachment",
        namespaced=False,
        subresources=("status",),
        has_status=True,
        storage_version_hash="tJx/ezt6UDU=",
        defaulter=clusterkinds.default_volume_attachment,
    ),
)

RESOURCES: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "Namespace",
        "namespaces",
        "namespace",
        namespaced=False,
        short_names=("ns",),
        verbs=NAMESPACE_VERBS,
        subresources=("status",),
        has_status=True,
        name_rule="label",
        storage_version_hash="Q3oi5N2YM8M=",
        defaulter=defaults.default_namespace,
        spec_finalizers=("kubernetes",),
        created_with=kind_hooks.created_with_namespace,
        on_delete=kind_hooks.mark_terminating,
        is_namespace=True,
        extra_field_selectors=_selectors("status.phase"),
    ),
    ResourceType(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        "configmap",
        short_names=("cm",),
        storage_version_hash="qFsyl6wFWjQ=",
        validator=validators.validate_configmap,
        update_validator=validators.update_immutable_data,
    ),
    ResourceType(
        "",
        "v1",
        "Secret",
        "secrets",
        "secret",
        storage_version_hash="S6u1pOWzb84=",
        defaulter=defaults.default_secret,
        validator=validators.validate_secret,
        update_validator=validators.update_secret,
        extra_field_selectors=_selectors("type"),
    ),
    ResourceType(
        "",
        "v1",
        "Endpoints",
        "endpoints",
        "endpoints",
        short_names=("ep",),
        storage_version_hash="fWeeMqaN/OA=",
    ),
    ResourceType(
        "",
        "v1",
        "Service",
        "services",
        "service",
        short_names=("svc",),
        categories=("all",),
        subresources=("status",),
        has_status=True,
        name_rule="dns1035",
        storage_version_hash="0/CO1lhkEBI=",
        defaulter=defaults.default_service,
        admitter=admission.admit_service,
        releaser=admission.release_service,
        validator=validators.validate_service,
        update_validator=validators.update_service,
        returns_deleted_object=True,
    ),
    ResourceType(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        short_names=("pvc",),
        subresources=("status",),
        has_status=True,
        storage_version_hash="QWTyNDq0dC4=",
        defaulter=defaults.default_pvc,
        server_finalizers=("kubernetes.io/pvc-protection",),
        admitter=admission.admit_claim,
        validator=validators.validate_pvc,
        update_validator=validators.update_pvc,
        returns_deleted_object=True,
    ),
    ResourceType(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        "persistentvolume",
        namespaced=False,
        short_names=("pv",),
        subresources=("status",),
        has_status=True,
        storage_version_hash="HN/zwEC+JgM=",
        defaulter=defaults.default_pv,
        validator=validators.validate_pv,
        returns_deleted_object=True,
    ),
    ResourceType(
        "",
        "v1",
        "Pod",
        "pods",
        "pod",
        short_names=("po",),
        categories=("all",),
        subresources=("binding", "eviction", "log", "status"),
        has_status=True,
        storage_version_hash="xPOwRZ+Yhw8=",
        defaulter=defaults.default_pod,
        admitter=admission.admit_pod,
        deletion_grace=kind_hooks.pod_grace_period,
        validator=validators.validate_pod,
        update_validator=validators.update_pod,
        extra_field_selectors=_selectors(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
        returns_deleted_object=True,
    ),
    ResourceType(
        "",
        "v1",
        "Node",
        "nodes",
        "node",
        namespaced=False,
        short_names=("no",),
        subresources=("status",),
        has_status=True,
        storage_version_hash="XwShjMxG9Fs=",
        keeps_status_on_create=True,
        defaulter=defaults.default_node,
        extra_field_selectors=_selectors("spec.unschedulable"),
    ),
    ResourceType(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        "serviceaccount",
        short_names=("sa",),
        subresources=("token",),
        storage_version_hash="pbx9ZvyFpBE=",
        returns_deleted_object=True,
    ),
    ResourceType(
        "",
        "v1",
        "Event",
        "events",
        "event",
        short_names=("ev",),
        storage_version_hash="r2yiGXH7wu8=",
        validator=validators.validate_event,
        extra_field_selectors=_EVENT_FIELDS,
    ),
    ResourceType(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        "deployment",
        short_names=("deploy",),
        categories=("all",),
        subresources=("scale", "status"),
        has_status=True,
        status_takes_annotations=True,
        tracks_generation=True,
        storage_version_hash="8aSe+NMegvE=",
        defaulter=defaults.default_deployment,
        validator=validators.validate_deployment,
        update_validator=validators.update_deployment,
    ),
    ResourceType(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        "replicaset",
        short_names=("rs",),
        categories=("all",),
        subresources=("scale", "status"),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="P1RzHs8/mWQ=",
        defaulter=defaults.default_replicaset,
        validator=validators.validate_replicaset,
        update_validator=validators.update_replicaset,
    ),
    ResourceType(
        "batch",
        "v1",
        "Job",
        "jobs",
        "job",
        categories=("all",),
        subresources=("status",),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="mudhfqk/qZY=",
        default_propagation="Orphan",
        defaulter=defaults.default_job,
        drop_generated=defaults.drop_generated_job_selector,
        validator=validators.validate_job,
        update_validator=validators.update_job,
        extra_field_selectors=_selectors("status.successful"),
    ),
    ResourceType(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        "endpointslice",
    ),
    ResourceType(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        "lease",
        storage_version_hash="gqkMMb/YqFM=",
        validator=validators.validate_lease,
    ),
    ResourceType(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        "storageclass",
        namespaced=False,
        short_names=("sc",),
        storage_version_hash="K+m6uJwbjGY=",
        defaulter=defaults.default_storageclass,
        validator=validators.validate_storageclass,
        update_validator=validators.update_storageclass,
        returns_deleted_object=True,
    ),
    ResourceType(
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        "runtimeclasses",
        "runtimeclass",
        namespaced=False,
        storage_version_hash="WQTu1GL3T2Q=",
        validator=validators.validate_runtimeclass,
        update_validator=validators.update_runtimeclass,
    ),
    # Served so that kubectl's default prune list resolves; stored only, no controller runs them.
    ResourceType(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        "replicationcontroller",
        short_names=("rc",),
        categories=("all",),
        subresources=("scale", "status"),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="Jond2If31h0=",
        defaulter=defaults.default_replicationcontroller,
    ),
    ResourceType(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        "daemonset",
        short_names=("ds",),
        categories=("all",),
        subresources=("status",),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="dd7pWHUlMKQ=",
        defaulter=defaults.default_daemonset,
        admitter=admission.admit_daemonset,
        validator=validators.validate_daemonset,
        update_validator=validators.update_deployment,
    ),
    ResourceType(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        "statefulset",
        short_names=("sts",),
        categories=("all",),
        subresources=("scale", "status"),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="H+vl74LkKdo=",
        defaulter=defaults.default_statefulset,
        validator=validators.validate_statefulset,
        update_validator=validators.update_deployment,
    ),
    ResourceType(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        "cronjob",
        short_names=("cj",),
        categories=("all",),
        subresources=("status",),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="sd5LIXh4Fjs=",
        defaulter=defaults.default_cronjob,
        validator=validators.validate_cronjob,
    ),
    ResourceType(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        "ingress",
        short_names=("ing",),
        subresources=("status",),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="39NQlfNR+bo=",
        admitter=admission.admit_ingress,
    ),
    HPA_V2,
    replace(HPA_V2, version="v1", to_storage=conversion.hpa_from_v1, from_storage=conversion.hpa_to_v1),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        "role",
        name_rule="path",
        storage_version_hash="7FuwZcIIItM=",
        validator=validators.validate_role,
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        "clusterrole",
        namespaced=False,
        name_rule="path",
        storage_version_hash="bYE5ZWDrJ44=",
        validator=validators.validate_cluster_role,
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        "rolebinding",
        name_rule="path",
        storage_version_hash="eGsCzGH6b1g=",
        defaulter=defaults.default_role_binding,
        validator=validators.validate_role_binding,
        update_validator=validators.update_role_binding,
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "clusterrolebinding",
        namespaced=False,
        name_rule="path",
        storage_version_hash="48tpQ8gZHFc=",
        defaulter=defaults.default_role_binding,
        validator=validators.validate_cluster_role_binding,
        update_validator=validators.update_role_binding,
    ),
    ResourceType(
        "apiextensions.k8s.io",
        "v1",
        crds.KIND,
        "customresourcedefinitions",
        "customresourcedefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources=("status",),
        has_status=True,
        tracks_generation=True,
        storage_version_hash="jfWCUB31mvA=",
        defaulter=crds.default_crd,
        admitter=crds.admit_crd,
        validator=crds.validate_crd,
        update_validator=crds.update_crd,
        removes_with=crds.contents,
    ),
    # Answered, not stored.
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        namespaced=False,
        verbs=CREATE_ONLY,
        answer=reviews.self_subject_access_review,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        namespaced=False,
        verbs=CREATE_ONLY,
        answer=reviews.self_subject_rules_review,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        "subjectaccessreview",
        namespaced=False,
        verbs=CREATE_ONLY,
        answer=reviews.subject_access_review,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        "localsubjectaccessreview",
        verbs=CREATE_ONLY,
        answer=reviews.local_subject_access_review,
    ),
    ResourceType(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        "selfsubjectreview",
        namespaced=False,
        verbs=CREATE_ONLY,
        answer=reviews.self_subject_review,
    ),
    ResourceType(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        "tokenreview",
        namespaced=False,
        verbs=CREATE_ONLY,
        answer=reviews.token_review,
    ),
    *CLUSTER_KINDS,
)

BY_PATH: dict[tuple[str, str, str], ResourceType] = {(r.group, r.version, r.plural): r for r in RESOURCES}
STORED: tuple[ResourceType, ...] = tuple(r for r in RESOURCES if r.from_storage is None and r.answer is None)
BY_KIND: dict[str, ResourceType] = {r.kind: r for r in RESOURCES if r.from_storage is None}
NAMESPACES: ResourceType = next(r for r in RESOURCES if r.is_namespace)


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    return BY_PATH.get((group, version, plural))


def by_kind(kind: str) -> ResourceType:
    """The kind's stored version."""
    return BY_KIND[kind]


# The order in which the apiserver lists its groups (golden discovery_apis.json).
GROUP_ORDER = (
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
)


def groups(served: Sequence[ResourceType] = RESOURCES) -> list[str]:
    """API groups served, in the order the apiserver lists them (core excluded; groups of custom
    kinds after the built-in ones, by name)."""
    names = {r.group for r in served if r.group}
    return [g for g in GROUP_ORDER if g in names] + sorted(names - set(GROUP_ORDER))


def versions(group: str, served: Sequence[ResourceType] = RESOURCES) -> list[str]:
    """The versions a group serves, preferred first: a built-in group's stored one, a custom group's
    by Kubernetes' version priority (v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others by name)."""
    members = [r for r in served if r.group == group]
    if any(r.structured for r in members):
        ordered = sorted(members, key=lambda r: r.from_storage is not None)
        return list(dict.fromkeys(r.version for r in ordered))
    return sorted({r.version for r in members}, key=version_priority)


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key of Kubernetes' kube-aware version order (`CompareKubeAwareVersionStrings`)."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0, version)
    stability = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    return (stability, -int(match.group(1)), -int(match.group(3) or 0), version)
