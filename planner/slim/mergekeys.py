"""List-merge metadata of the built-in kinds, shared by strategic merge patch and server-side apply.

The real apiserver reads this from Go struct tags: `patchStrategy`/`patchMergeKey` drive strategic
merge patch, `listType`/`listMapKey`/`mapType`/`structType` drive server-side apply (where a list
without `listType` but with a merge strategy becomes associative on its merge key, and every other
list is atomic). The two disagree in places — container ports merge on `containerPort` for a patch
but on `containerPort`+`protocol` for apply; Job conditions merge by `type` for a patch but are atomic
for apply; tolerations are replaced by a patch and atomic for apply — so each list records both.

This module is data only: a small schema tree per kind (`schema_for(kind)`), plus the Go zero value
of each kind (`go_zero_value(kind)`), which server-side apply needs to tell an added map (`"."` in
managedFields) from one that was always there. Fields not described here fall back to what the
apiserver does for unknown fields: maps are merged key by key, lists are replaced (atomic).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Struct:
    """An object or map merged key by key. `values` is the schema of every key not in `fields`
    (the value type of a Go map); `retain_keys` marks `patchStrategy: retainKeys` (kubectl sends a
    `$retainKeys` list for it)."""

    fields: Mapping[str, Field] = field(default_factory=dict)
    values: Field | None = None
    retain_keys: bool = False

    def child(self, name: str) -> Field | None:
        return self.fields.get(name, self.values)


@dataclass(frozen=True)
class Atomic:
    """A value owned and replaced as a whole by server-side apply (`listType=atomic`,
    `mapType=atomic`, `structType=atomic`). A strategic merge patch still merges atomic maps key by
    key and replaces atomic lists, as the real one does."""


@dataclass(frozen=True)
class KeyedList:
    """A list of objects identified by key fields.

    `patch_key` is the strategic-merge `patchMergeKey` (None: a patch replaces the list);
    `apply_keys` are the server-side apply `listMapKey`s (None: atomic for apply); `item` is each
    item's schema (`ATOMIC` for `structType=atomic` items, owned whole); `key_defaults` fill a key the
    client left out, as the schema defaults do (a port's protocol is TCP)."""

    patch_key: str | None
    apply_keys: tuple[str, ...] | None
    item: Struct | Atomic = field(default_factory=Struct)
    key_defaults: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SetList:
    """A list of scalars kept as a set: `patchStrategy: merge` and `listType=set` (finalizers)."""


Field = Struct | Atomic | KeyedList | SetList

ATOMIC = Atomic()
SET = SetList()


def _by(
    key: str, item: Struct | Atomic | None = None, *, apply_keys: tuple[str, ...] | None = None
) -> KeyedList:
    return KeyedList(patch_key=key, apply_keys=apply_keys or (key,), item=item or Struct())


def _conditions() -> KeyedList:
    return _by("type")


OBJECT_META = Struct(
    {
        "labels": Struct(),
        "annotations": Struct(),
        "finalizers": SET,
        # OwnerReference is `structType=atomic`: managedFields hold `k:{"uid":…}` and nothing below.
        "ownerReferences": _by("uid", ATOMIC),
        "managedFields": ATOMIC,
    }
)

LABEL_SELECTOR = ATOMIC
_PORT_KEYS = {"protocol": "TCP"}

CONTAINER = Struct(
    {
        "ports": KeyedList("containerPort", ("containerPort", "protocol"), Struct(), _PORT_KEYS),
        "env": _by("name"),
        "volumeMounts": _by("mountPath"),
        "volumeDevices": _by("devicePath"),
        "resources": Struct({"claims": _by("name")}),
    }
)

VOLUME = Struct(retain_keys=True)

POD_SPEC = Struct(
    {
        "containers": _by("name", CONTAINER),
        "initContainers": _by("name", CONTAINER),
        "ephemeralContainers": _by("name", CONTAINER),
        "volumes": _by("name", VOLUME),
        "imagePullSecrets": _by("name"),
        "hostAliases": _by("ip"),
        "tolerations": ATOMIC,
        "topologySpreadConstraints": _by("topologyKey", apply_keys=("topologyKey", "whenUnsatisfiable")),
        "nodeSelector": ATOMIC,
        "readinessGates": ATOMIC,
        "schedulingGates": _by("name"),
        "resourceClaims": _by("name"),
    }
)

POD_STATUS = Struct(
    {
        "conditions": _conditions(),
        "podIPs": _by("ip"),
        "hostIPs": _by("ip"),
        "containerStatuses": ATOMIC,
        "initContainerStatuses": ATOMIC,
        "ephemeralContainerStatuses": ATOMIC,
    }
)

POD_TEMPLATE_SPEC = Struct({"metadata": OBJECT_META, "spec": POD_SPEC})

# Job conditions: patchMergeKey=type for a patch, listType=atomic for apply.
_JOB_CONDITIONS = KeyedList(patch_key="type", apply_keys=None)

JOB_SPEC = Struct({"selector": LABEL_SELECTOR, "template": POD_TEMPLATE_SPEC, "podFailurePolicy": Struct()})


def _kind(spec: Struct | None = None, status: Struct | None = None, **extra: Field) -> Struct:
    fields: dict[str, Field] = {"metadata": OBJECT_META, **extra}
    if spec is not None:
        fields["spec"] = spec
    if status is not None:
        fields["status"] = status
    return Struct(fields)


_WORKLOAD_STATUS = Struct({"conditions": _conditions()})

_WEBHOOK = Struct(
    {
        "rules": ATOMIC,
        "namespaceSelector": LABEL_SELECTOR,
        "objectSelector": LABEL_SELECTOR,
        "admissionReviewVersions": ATOMIC,
        "matchConditions": _by("name"),
    }
)

SCHEMAS: Mapping[str, Struct] = {
    "Pod": _kind(POD_SPEC, POD_STATUS),
    "PodTemplate": _kind(template=POD_TEMPLATE_SPEC),
    "Deployment": _kind(
        Struct(
            {
                "selector": LABEL_SELECTOR,
                "template": POD_TEMPLATE_SPEC,
                "strategy": Struct(retain_keys=True),
            }
        ),
        _WORKLOAD_STATUS,
    ),
    "ReplicaSet": _kind(
        Struct({"selector": LABEL_SELECTOR, "template": POD_TEMPLATE_SPEC}), _WORKLOAD_STATUS
    ),
    "StatefulSet": _kind(
        Struct(
            {
                "selector": LABEL_SELECTOR,
                "template": POD_TEMPLATE_SPEC,
                "updateStrategy": Struct(retain_keys=True),
                "volumeClaimTemplates": ATOMIC,
            }
        ),
        _WORKLOAD_STATUS,
    ),
    "DaemonSet": _kind(
        Struct(
            {
                "selector": LABEL_SELECTOR,
                "template": POD_TEMPLATE_SPEC,
                "updateStrategy": Struct(retain_keys=True),
            }
        ),
        _WORKLOAD_STATUS,
    ),
    "Job": _kind(JOB_SPEC, Struct({"conditions": _JOB_CONDITIONS})),
    "HorizontalPodAutoscaler": _kind(
        Struct(
            {
                "metrics": ATOMIC,
                "behavior": Struct(
                    {"scaleUp": Struct({"policies": ATOMIC}), "scaleDown": Struct({"policies": ATOMIC})}
                ),
            }
        ),
        Struct({"conditions": _conditions(), "currentMetrics": ATOMIC}),
    ),
    "CronJob": _kind(Struct({"jobTemplate": Struct({"metadata": OBJECT_META, "spec": JOB_SPEC})})),
    "Service": _kind(
        Struct(
            {
                "ports": KeyedList("port", ("port", "protocol"), Struct(), _PORT_KEYS),
                "selector": ATOMIC,
                "clusterIPs": ATOMIC,
                "externalIPs": ATOMIC,
                "ipFamilies": ATOMIC,
                "loadBalancerSourceRanges": ATOMIC,
            }
        ),
        Struct({"conditions": _conditions(), "loadBalancer": Struct({"ingress": ATOMIC})}),
    ),
    "PersistentVolumeClaim": _kind(
        Struct({"accessModes": ATOMIC, "selector": LABEL_SELECTOR, "dataSource": ATOMIC}),
        Struct({"conditions": _conditions(), "accessModes": ATOMIC}),
    ),
    "PersistentVolume": _kind(
        Struct({"accessModes": ATOMIC, "claimRef": ATOMIC, "mountOptions": ATOMIC}),
    ),
    "ConfigMap": _kind(data=Struct(), binaryData=Struct()),
    "Secret": _kind(data=Struct(), stringData=Struct()),
    "Namespace": _kind(Struct({"finalizers": ATOMIC}), Struct({"conditions": _conditions()})),
    "Node": _kind(
        Struct({"taints": ATOMIC, "podCIDRs": SET}),
        Struct(
            {
                "conditions": _conditions(),
                "addresses": KeyedList(patch_key="type", apply_keys=None),
                "images": ATOMIC,
                "volumesAttached": ATOMIC,
                "volumesInUse": ATOMIC,
            }
        ),
    ),
    "ServiceAccount": _kind(secrets=_by("name"), imagePullSecrets=ATOMIC),
    "Endpoints": _kind(subsets=ATOMIC),
    # The kinds beyond workloads (`clusterkinds.py`).
    "LimitRange": _kind(Struct({"limits": ATOMIC})),
    "ResourceQuota": _kind(Struct({"scopeSelector": Struct({"matchExpressions": ATOMIC})})),
    "MutatingWebhookConfiguration": _kind(webhooks=_by("name", _WEBHOOK)),
    "ValidatingWebhookConfiguration": _kind(webhooks=_by("name", _WEBHOOK)),
    "APIService": _kind(Struct(), Struct({"conditions": _conditions()})),
    "ControllerRevision": _kind(data=ATOMIC),
    "CertificateSigningRequest": _kind(
        Struct({"usages": ATOMIC, "groups": ATOMIC}), Struct({"conditions": _conditions()})
    ),
    "FlowSchema": _kind(Struct({"rules": ATOMIC}), Struct({"conditions": _conditions()})),
    "PriorityLevelConfiguration": _kind(Struct(), Struct({"conditions": _conditions()})),
    "NetworkPolicy": _kind(
        Struct({"podSelector": LABEL_SELECTOR, "ingress": ATOMIC, "egress": ATOMIC, "policyTypes": ATOMIC})
    ),
    "PodDisruptionBudget": _kind(Struct({"selector": LABEL_SELECTOR}), Struct({"conditions": _conditions()})),
    "CSIDriver": _kind(Struct({"volumeLifecycleModes": SET, "tokenRequests": ATOMIC})),
    "CSINode": _kind(Struct({"drivers": _by("name", Struct({"topologyKeys": ATOMIC}))})),
}

GENERIC = _kind()


def schema_for(kind: str) -> Struct:
    """The merge schema of `kind`; unknown kinds get only the ObjectMeta rules."""
    return SCHEMAS.get(kind, GENERIC)


# Go's zero value of each kind, as its JSON encoder prints it: non-omitempty fields and struct-typed
# fields appear even when empty. Server-side apply diffs a created object against this, so a map that
# exists in the zero value (spec, strategy, template.metadata) is never reported as added.
_ZERO_TEMPLATE = {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}}
_ZERO_META = {"creationTimestamp": None}

GO_ZERO_VALUES: Mapping[str, Mapping[str, Any]] = {
    "Pod": {"metadata": _ZERO_META, "spec": {"containers": None}, "status": {}},
    "PodTemplate": {"metadata": _ZERO_META, "template": _ZERO_TEMPLATE},
    "Deployment": {
        "metadata": _ZERO_META,
        "spec": {"selector": None, "template": _ZERO_TEMPLATE, "strategy": {}},
        "status": {},
    },
    "ReplicaSet": {
        "metadata": _ZERO_META,
        "spec": {"selector": None, "template": _ZERO_TEMPLATE},
        "status": {"replicas": 0},
    },
    "Job": {"metadata": _ZERO_META, "spec": {"template": _ZERO_TEMPLATE}, "status": {}},
    "StatefulSet": {
        "metadata": _ZERO_META,
        "spec": {"selector": None, "template": _ZERO_TEMPLATE, "serviceName": "", "updateStrategy": {}},
        "status": {"replicas": 0, "availableReplicas": 0},
    },
    "DaemonSet": {
        "metadata": _ZERO_META,
        "spec": {"selector": None, "template": _ZERO_TEMPLATE, "updateStrategy": {}},
        "status": {
            "currentNumberScheduled": 0,
            "numberMisscheduled": 0,
            "desiredNumberScheduled": 0,
            "numberReady": 0,
        },
    },
    "CronJob": {
        "metadata": _ZERO_META,
        "spec": {
            "schedule": "",
            "jobTemplate": {"metadata": _ZERO_META, "spec": {"template": _ZERO_TEMPLATE}},
        },
        "status": {},
    },
    "HorizontalPodAutoscaler": {
        "metadata": _ZERO_META,
        "spec": {"scaleTargetRef": {"kind": "", "name": ""}, "maxReplicas": 0},
        "status": {"desiredReplicas": 0, "currentMetrics": None},
    },
    "Service": {"metadata": _ZERO_META, "spec": {}, "status": {"loadBalancer": {}}},
    "PersistentVolumeClaim": {"metadata": _ZERO_META, "spec": {"resources": {}}, "status": {}},
    "PersistentVolume": {"metadata": _ZERO_META, "spec": {}, "status": {}},
    "Namespace": {"metadata": _ZERO_META, "spec": {}, "status": {}},
    "Node": {
        "metadata": _ZERO_META,
        "spec": {},
        "status": {"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}}},
    },
    "Lease": {"metadata": _ZERO_META, "spec": {}},
    "Event": {
        "metadata": _ZERO_META,
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    },
    "LimitRange": {"metadata": _ZERO_META, "spec": {"limits": None}},
    "ResourceQuota": {"metadata": _ZERO_META, "spec": {}, "status": {}},
    "APIService": {
        "metadata": _ZERO_META,
        "spec": {"groupPriorityMinimum": 0, "versionPriority": 0},
        "status": {},
    },
    "ControllerRevision": {"metadata": _ZERO_META, "data": None, "revision": 0},
    "FlowSchema": {"metadata": _ZERO_META, "spec": {"priorityLevelConfiguration": {}}, "status": {}},
    "PriorityLevelConfiguration": {"metadata": _ZERO_META, "spec": {}, "status": {}},
    "IngressClass": {"metadata": _ZERO_META, "spec": {}},
    "Ingress": {"metadata": _ZERO_META, "spec": {}, "status": {"loadBalancer": {}}},
    "NetworkPolicy": {"metadata": _ZERO_META, "spec": {"podSelector": {}}},
    "PodDisruptionBudget": {
        "metadata": _ZERO_META,
        "spec": {},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
    },
    "PriorityClass": {"metadata": _ZERO_META, "value": 0},
    "CSIDriver": {"metadata": _ZERO_META, "spec": {}},
    "CSINode": {"metadata": _ZERO_META, "spec": {"drivers": None}},
    "CSIStorageCapacity": {"metadata": _ZERO_META, "storageClassName": ""},
    "VolumeAttachment": {
        "metadata": _ZERO_META,
        "spec": {"attacher": "", "source": {}, "nodeName": ""},
        "status": {"attached": False},
    },
    "CertificateSigningRequest": {
        "metadata": _ZERO_META,
        "spec": {"request": None, "signerName": ""},
        "status": {},
    },
}


def go_zero_value(kind: str) -> Mapping[str, Any]:
    """What an empty object of `kind` looks like on the wire (metadata only for unknown kinds)."""
    return GO_ZERO_VALUES.get(kind, {"metadata": _ZERO_META})
