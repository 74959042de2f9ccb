"""Builders shared by the diff's tests (no tests of its own).

Desired manifests come from the real renderer, so the diff is tested against the shapes it will really
see. Live objects are those manifests as a kube-apiserver returns them (`served`): the defaults,
admission additions and server-set metadata the golden recordings in tests/golden/k8s show, written
out by hand here. managedFields are written by hand in FieldsV1, the format of
tests/golden/k8s/ssa_get.json.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from planner.diff import Change, ChangeSet
from planner.live import LiveState
from planner.objects import ref_of
from planner.plan.model import Claim, ConfigMap, Plan, Rootfs, Sandbox, Secret, Workload
from planner.render import render

Manifest = dict[str, Any]
PLAN = "shop"
NAMESPACE = "shop"
IMAGE = "ghcr.io/acme/web:1.4.2"
DEVBOX = "ghcr.io/acme/devbox:2026.11"
TOKEN = "kube-api-access-7x2kq"
CANONICAL_SPELLING = {"0.5": "500m", "1024Mi": "1Gi", "2000m": "2"}


def workload(name: str = "web", **fields: Any) -> Workload:
    fields.setdefault("kind", "deployment")
    fields.setdefault("image", IMAGE)
    return Workload(name=name, **fields)


def sandbox(name: str = "alice", **fields: Any) -> Sandbox:
    fields.setdefault("image", DEVBOX)
    fields.setdefault("rootfs", Rootfs(size="10Gi"))
    fields.setdefault("workspace", Claim(size="20Gi"))
    return Sandbox(name=name, **fields)


def config_map(name: str = "settings", **data: str) -> ConfigMap:
    return ConfigMap(name=name, data=data or {"mode": "fast"})


def secret(name: str = "creds", **data: str) -> Secret:
    return Secret(name=name, data=data)


def rendered(**entries: Any) -> list[Manifest]:
    """The manifests of plan `shop` in namespace `shop` with these workloads, sandboxes, ..."""
    return render(Plan(name=PLAN, namespace=NAMESPACE, runtime="k8s", **entries), "default")


def find(manifests: Iterable[Manifest], kind: str, name: str) -> Manifest:
    (match,) = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    return match


def entry(
    manager: str, fields_v1: Mapping[str, Any], *, operation: str = "Update", subresource: str = ""
) -> Manifest:
    """One managedFields entry."""
    result: Manifest = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": "2026-11-29T10:30:52Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": dict(fields_v1),
    }
    return result | ({"subresource": subresource} if subresource else {})


def planner_apply(fields_v1: Mapping[str, Any]) -> Manifest:
    return entry("planner", fields_v1, operation="Apply")


def _container_defaults(container: Manifest) -> None:
    container.setdefault("resources", {})
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("imagePullPolicy", "IfNotPresent")
    for port in container.get("ports", []):
        port.setdefault("protocol", "TCP")
    limits = container["resources"].get("limits")
    if limits:  # the server re-spells quantities canonically and copies limits into absent requests
        limits.update({key: CANONICAL_SPELLING.get(value, value) for key, value in limits.items()})
        container["resources"]["requests"] = dict(limits)


def _pod_spec_defaults(spec: Manifest) -> None:
    for container in spec.get("initContainers", []) + spec["containers"]:
        _container_defaults(container)
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")


def _admitted_pod(spec: Manifest) -> None:
    """What the ServiceAccount and DefaultTolerationSeconds admission plugins add to a Pod."""
    spec.setdefault("volumes", []).append({"name": TOKEN, "projected": {"defaultMode": 420, "sources": []}})
    for container in spec["containers"]:
        container.setdefault("volumeMounts", []).append(
            {"name": TOKEN, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
        )
    spec |= {"serviceAccountName": "default", "serviceAccount": "default", "priority": 0}
    spec["enableServiceLinks"] = True
    spec["tolerations"] = [
        {
            "key": f"node.kubernetes.io/{t}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
        for t in ("not-ready", "unreachable")
    ]


def _kind_defaults(obj: Manifest, uid: str) -> None:
    kind, spec = obj["kind"], obj.get("spec", {})
    if kind in ("Deployment", "Job", "StatefulSet"):
        spec["template"].setdefault("metadata", {})["creationTimestamp"] = None
        _pod_spec_defaults(spec["template"]["spec"])
    if kind == "Deployment":
        spec.setdefault("replicas", 1)
        spec |= {
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": spec.get("progressDeadlineSeconds", 600),
        }
        spec["strategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        }
    if kind == "Job":
        job_labels = {
            "batch.kubernetes.io/controller-uid": uid,
            "controller-uid": uid,
            "job-name": obj["metadata"]["name"],
        }
        spec["template"]["metadata"].setdefault("labels", {}).update(job_labels)
        spec |= {"parallelism": 1, "completions": 1, "completionMode": "NonIndexed", "suspend": False}
        spec.setdefault("backoffLimit", 6)
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    if kind == "Pod":
        _pod_spec_defaults(spec)
        _admitted_pod(spec)
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    if kind == "Service":
        for port in spec["ports"]:
            port.setdefault("protocol", "TCP")
        address = spec.get("clusterIP", "10.0.0.198")  # a headless Service keeps "None"
        spec |= {"clusterIP": address, "clusterIPs": [address], "sessionAffinity": "None"}
    if kind == "PersistentVolumeClaim":
        obj["metadata"]["finalizers"] = ["kubernetes.io/pvc-protection"]
        obj["status"] = {"phase": "Bound"}


def served(manifest: Manifest, *, managed: list[Manifest] | None = None, uid: str = "uid-1") -> Manifest:
    """`manifest` as a kube-apiserver stores and returns it."""
    obj = copy.deepcopy(manifest)
    obj["metadata"] |= {"uid": uid, "resourceVersion": "442", "creationTimestamp": "2026-11-29T10:30:52Z"}
    if managed is not None:
        obj["metadata"]["managedFields"] = managed
    if obj["kind"] == "Secret":
        obj.setdefault("type", "Opaque")
    _kind_defaults(obj, uid)
    return obj


def live_state(
    *members: Manifest,
    parent: Manifest | None = None,
    foreign: Iterable[Manifest] = (),
    namespaces: Iterable[str] | None = None,
) -> LiveState:
    return LiveState(
        members={ref_of(m): m for m in members},
        parent=parent,
        foreign={ref_of(m): m for m in foreign},
        namespaces=frozenset(namespaces) if namespaces is not None else None,
    )


def outline(changeset: ChangeSet) -> list[tuple[str, str, str | None, str]]:
    """Each change as (action, object, transition, reason), in the ChangeSet's order."""
    return [(c.action, str(c.ref), c.transition, c.reason) for c in changeset.changes]


def only(changeset: ChangeSet, ref: str) -> Change:
    (change,) = [c for c in changeset.changes if str(c.ref) == ref]
    return change


def fields_of(change: Change) -> list[tuple[str, Any, Any, str | None]]:
    return [(f.path, f.before, f.after, f.manager) for f in change.fields]
