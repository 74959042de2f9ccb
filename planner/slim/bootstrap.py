"""What a fresh cluster holds: the four system namespaces, the `kata-qemu` RuntimeClass and the
StorageClasses `standard` (Immediate, the default) and `wait` (WaitForFirstConsumer), as a cluster
with Kata installed would have (docs/embedded-cluster.md), the apiserver's bootstrap RBAC policy, its system
PriorityClasses and the ComponentStatuses.

The policy (`bootstrap_policy.json`, the v1.28 rules as data) is the user-facing ClusterRoles
`cluster-admin`, `admin`, `edit` and `view` with the `system:aggregate-to-*` roles they aggregate,
and the roles every client relies on — `system:discovery`, `system:basic-user` (access reviews, "who
am I") and `system:public-info-viewer` (health, version) — bound as the apiserver binds them
(`cluster-admin` to `system:masters`, the others to `system:authenticated`, public info also to
`system:unauthenticated`). Aggregated roles are seeded with the rules the aggregation controller
would give them, so they are right even without the simulation. Seeding is idempotent, so a restart
with a data directory leaves existing objects alone.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from planner.slim.admission import DEFAULT_CLASS_ANNOTATION
from planner.slim.api import Api, WriteOptions
from planner.slim.authorizer import GROUP, aggregated_rules
from planner.slim.clusterkinds import SYSTEM_PRIORITY_CLASSES
from planner.slim.resources import by_kind
from planner.slim.status_errors import StatusError

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def seed_objects() -> list[tuple[str, dict[str, Any]]]:
    namespaces = [("Namespace", {"metadata": {"name": name}}) for name in SYSTEM_NAMESPACES]
    runtime = (
        "RuntimeClass",
        {
            "metadata": {"name": "kata-qemu"},
            "handler": "kata-qemu",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}},
        },
    )
    standard = (
        "StorageClass",
        {
            "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": "planner.dev/embedded",
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": True,
        },
    )
    wait = (
        "StorageClass",
        {
            "metadata": {"name": "wait"},
            "provisioner": "planner.dev/embedded",
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
        },
    )
    return [*namespaces, runtime, standard, wait, *policy_objects(), *system_objects()]


def system_objects() -> list[tuple[str, dict[str, Any]]]:
    """The system PriorityClasses, and the ComponentStatuses `kubectl get cs` reads (healthy: the
    scheduler, controllers and store run in this process)."""
    classes = [
        ("PriorityClass", {"metadata": {"name": name}, "value": value, "description": text})
        for name, (value, text) in SYSTEM_PRIORITY_CLASSES.items()
    ]
    components = [
        (
            "ComponentStatus",
            {
                "metadata": {"name": name},
                "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
            },
        )
        for name in ("controller-manager", "scheduler", "etcd-0")
    ]
    return classes + components


BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def _bootstrap_meta(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {**BOOTSTRAP_LABELS, **(labels or {})}, "annotations": dict(AUTOUPDATE)}


def policy_objects() -> list[tuple[str, dict[str, Any]]]:
    """The bootstrap ClusterRoles (aggregated ones with their rules) and ClusterRoleBindings."""
    policy = json.loads(resources.files("planner.slim").joinpath("bootstrap_policy.json").read_text())
    roles = aggregate_all([_cluster_role(spec) for spec in policy["clusterRoles"]])
    bindings = [_cluster_role_binding(spec) for spec in policy["clusterRoleBindings"]]
    return [("ClusterRole", r) for r in roles] + [("ClusterRoleBinding", b) for b in bindings]


def _cluster_role(spec: dict[str, Any]) -> dict[str, Any]:
    role: dict[str, Any] = {"metadata": _bootstrap_meta(spec["name"], spec.get("labels"))}
    if "aggregationRule" in spec:
        role["aggregationRule"] = spec["aggregationRule"]
    role["rules"] = spec.get("rules") or []
    return role


def _cluster_role_binding(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": _bootstrap_meta(spec["name"]),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": spec["role"]},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": group} for group in spec["groups"]],
    }


def aggregate_all(roles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fill in every aggregated role's rules until nothing changes (an aggregated role may aggregate
    another, as `admin` aggregates `edit`, which aggregates `view`): what the controller converges to."""
    changed = True
    while changed:
        changed = False
        for role in roles:
            rules = aggregated_rules(role, roles)
            if rules is not None and rules != role.get("rules"):
                role["rules"] = rules
                changed = True
    return roles


APISERVER = WriteOptions(field_manager="kube-apiserver")  # who writes them in a real cluster


def seed(api: Api) -> None:
    for kind, body in seed_objects():
        try:
            api.create(by_kind(kind), "", body, APISERVER)
        except StatusError as exc:
            if exc.code != 409:
                raise
