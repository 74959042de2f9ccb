"""Admission: the steps of a write that read other objects or reserve something, per kind.

The real apiserver's admission plugins (ServiceAccount, DefaultTolerationSeconds, LimitRanger,
Priority, RuntimeClass, DefaultStorageClass, DefaultIngressClass) and the Service IP allocator run
here, after per-kind defaulting and before validation: a new Pod gets `serviceAccountName`, a
`kube-api-access-<5 chars>` projected token volume mounted in every container (init containers
too), two NoExecute tolerations, its namespace's LimitRange defaults (`limitranges.py`),
`priority`/`preemptionPolicy` from its PriorityClass (or the global default), and its
`runtimeClassName` must name an existing RuntimeClass; a new claim that names no StorageClass gets
the default one, a new Ingress the default IngressClass; a Service gets a cluster IP from
10.96.0.0/12 (about a million addresses, plenty for 10,000 services) and node ports, released when
it is removed or not stored after all (dry run, 409, 422).

The resource table names the `admit_…`/`release_…` functions below as kinds' `admitter`/`releaser`
hooks; they see the cluster through `Admission`, which the API core builds over its store.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from planner.slim import limitranges
from planner.slim.defaults import TEMPLATE_GENERATION, qos_class
from planner.slim.meta import random_suffix
from planner.slim.status_errors import Cause, StatusError, Target, status_body
from planner.slim.validators import invalid_value

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
DEFAULT_INGRESS_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")
NODE_PORT_RANGE = range(30000, 32768)

Obj = dict[str, Any]


@dataclass
class Admission:
    """What admission may read and reserve: stored objects by kind, and the Service IP allocator
    (rebuilt from the stored Services)."""

    find: Callable[[str, str, str], Obj | None]  # (kind, namespace, name)
    find_all: Callable[[str], list[Obj]]  # kind, every namespace
    list_in: Callable[[str, str], list[Obj]] = lambda key, namespace: []  # (store key `group/plural`, ns)
    service_ips: IPAllocator = field(init=False)

    def __post_init__(self) -> None:
        self.service_ips = IPAllocator(self.find_all("Service"))


def forbidden(target: Target, detail: str) -> StatusError:
    message = f'{target.qualified_plural} "{target.name}" is forbidden: {detail}'
    details: dict[str, Any] = {"name": target.name}
    if target.group:
        details["group"] = target.group
    details["kind"] = target.plural
    return StatusError(403, status_body(403, "Forbidden", message, details))


# --- pods ---------------------------------------------------------------------------------------------


def admit_pod(cluster: Admission, pod: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """ServiceAccount, DefaultTolerationSeconds, Priority and RuntimeClass admission of a new Pod."""
    if old is not None:
        return []
    spec = pod.setdefault("spec", {})
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec.get("serviceAccount") or "default"
    spec["serviceAccount"] = spec["serviceAccountName"]
    namespace = pod["metadata"]["namespace"]
    if cluster.find("ServiceAccount", namespace, spec["serviceAccountName"]) is None:
        raise forbidden(
            target,
            f"error looking up service account {namespace}/{spec['serviceAccountName']}: "
            f'serviceaccount "{spec["serviceAccountName"]}" not found',
        )
    if spec.get("automountServiceAccountToken") is not False:
        _mount_token(spec)
    _default_tolerations(spec)
    _apply_limit_ranges(cluster, pod, target)
    apply_priority(cluster, spec, target)
    if spec.get("runtimeClassName"):
        runtime_class = cluster.find("RuntimeClass", "", spec["runtimeClassName"])
        _apply_runtime_class(spec, runtime_class, target)
    return []


def _apply_limit_ranges(cluster: Admission, pod: Obj, target: Target) -> None:
    items = limitranges.container_items(cluster.list_in("/limitranges", pod["metadata"]["namespace"]))
    if not items:
        return
    spec = pod["spec"]
    notes = limitranges.apply_defaults(spec, items)
    if notes:
        annotations = pod["metadata"].setdefault("annotations", {})
        annotations[limitranges.ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
        pod.setdefault("status", {})["qosClass"] = qos_class(spec)
    problems = limitranges.violations(spec, items)
    if problems:
        raise forbidden(target, problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]")


def apply_priority(cluster: Admission, spec: Obj, target: Target) -> None:
    """Priority admission: `priority` and `preemptionPolicy` from the pod's PriorityClass, else from
    the global default class, else 0."""
    name = spec.get("priorityClassName")
    if name:
        found = cluster.find("PriorityClass", "", name)
        if found is None:
            raise forbidden(target, f"no PriorityClass with name {name} was found")
    else:
        found = global_default_priority_class(cluster)
        if found is not None:
            spec["priorityClassName"] = found["metadata"]["name"]
    spec["priority"] = int(found.get("value", 0)) if found else int(spec.get("priority") or 0)
    policy = (found or {}).get("preemptionPolicy") or "PreemptLowerPriority"
    spec.setdefault("preemptionPolicy", policy)


def global_default_priority_class(cluster: Admission) -> Obj | None:
    """The global default class (the lowest value, should there be several)."""
    defaults = [c for c in cluster.find_all("PriorityClass") if c.get("globalDefault")]
    return min(defaults, key=lambda c: int(c.get("value", 0))) if defaults else None


def admit_priority_class(cluster: Admission, obj: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """Only one PriorityClass may be the global default."""
    if not obj.get("globalDefault"):
        return []
    for other in cluster.find_all("PriorityClass"):
        if other.get("globalDefault") and other["metadata"]["name"] != obj["metadata"]["name"]:
            detail = f"PriorityClass {other['metadata']['name']} is already marked as default. Only one default can exist"
            raise forbidden(target, detail)
    return []


def admit_ingress(cluster: Admission, ingress: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """DefaultIngressClass: a new Ingress without a class (field or annotation) gets the default one."""
    spec = ingress.setdefault("spec", {})
    annotations = (ingress.get("metadata") or {}).get("annotations") or {}
    if old is not None or spec.get("ingressClassName") or "kubernetes.io/ingress.class" in annotations:
        return []
    defaults = [
        c
        for c in cluster.find_all("IngressClass")
        if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_INGRESS_CLASS_ANNOTATION)
        == "true"
    ]
    if len(defaults) > 1:
        raise forbidden(target, f"{len(defaults)} default IngressClasses were found, only 1 allowed")
    if defaults:
        spec["ingressClassName"] = defaults[0]["metadata"]["name"]
    return []


def admit_daemonset(cluster: Admission, daemonset: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """The DaemonSet strategy's templateGeneration: kept by an update, raised by one when it changes
    the template (a client cannot set it)."""
    if old is not None:
        kept = int(((old.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION, "1"))
        changed = (daemonset.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template")
        annotations = daemonset.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[TEMPLATE_GENERATION] = str(kept + 1 if changed else kept)
    return []


def _mount_token(spec: dict[str, Any]) -> None:
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    if any(m.get("mountPath") == TOKEN_MOUNT_PATH for c in containers for m in c.get("volumeMounts") or []):
        return
    name = f"kube-api-access-{random_suffix()}"
    spec.setdefault("volumes", []).append(
        {
            "name": name,
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                    {
                        "downwardAPI": {
                            "items": [
                                {
                                    "path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                }
                            ]
                        }
                    },
                ],
                "defaultMode": 420,
            },
        }
    )
    for container in containers:
        container.setdefault("volumeMounts", []).append(
            {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
        )


def _default_tolerations(spec: dict[str, Any]) -> None:
    tolerations = spec.setdefault("tolerations", [])
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == key and t.get("effect") in (None, "", "NoExecute") for t in tolerations):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )


def _apply_runtime_class(spec: dict[str, Any], runtime_class: dict[str, Any] | None, target: Target) -> None:
    if runtime_class is None:
        raise forbidden(target, f'pod rejected: RuntimeClass "{spec["runtimeClassName"]}" not found')
    overhead = (runtime_class.get("overhead") or {}).get("podFixed")
    if overhead and not spec.get("overhead"):
        spec["overhead"] = dict(overhead)


# --- claims -----


def admit_claim(cluster: Admission, claim: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """DefaultStorageClass: a new claim that names no class gets the (newest) default one, if any."""
    if old is not None:
        return []
    spec = claim.setdefault("spec", {})
    if spec.get("storageClassName") is not None:
        return []
    defaults = [
        c
        for c in cluster.find_all("StorageClass")
        if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
    ]
    if defaults:
        newest = max(defaults, key=lambda c: str(c["metadata"].get("creationTimestamp", "")))
        spec["storageClassName"] = newest["metadata"]["name"]
    return []


# --- services -----------------------------------------------------------------------------------------


def admit_service(cluster: Admission, service: Obj, old: Obj | None, target: Target) -> list[Cause]:
    return cluster.service_ips.allocate(service, old, target)


def release_service(cluster: Admission, service: Obj) -> None:
    cluster.service_ips.release(service)


class IPAllocator:
    """Cluster IPs and node ports in use, rebuilt from stored Services at start."""

    def __init__(self, services: Iterable[dict[str, Any]] = ()) -> None:
        self._ips: set[str] = set()
        self._ports: set[int] = set()
        for service in services:
            self.reserve(service)

    def reserve(self, service: dict[str, Any]) -> None:
        spec = service.get("spec") or {}
        self._ips.update(ip for ip in spec.get("clusterIPs") or [] if ip != "None")
        self._ports.update(int(p["nodePort"]) for p in spec.get("ports") or [] if p.get("nodePort"))

    def release(self, service: dict[str, Any]) -> None:
        spec = service.get("spec") or {}
        self._ips.difference_update(spec.get("clusterIPs") or [])
        self._ports.difference_update(
            int(p["nodePort"]) for p in spec.get("ports") or [] if p.get("nodePort")
        )

    def allocate(self, service: dict[str, Any], previous: dict[str, Any] | None, target: Target) -> list[Any]:
        """Fill clusterIP(s), ipFamilies and node ports; returns causes when a requested IP is unusable."""
        spec = service.setdefault("spec", {})
        if spec.get("type") == "ExternalName":
            return []
        old_spec = (previous or {}).get("spec") or {}
        if previous is not None and not spec.get("clusterIP") and not spec.get("clusterIPs"):
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if key in old_spec:
                    spec[key] = old_spec[key]
        causes = self._assign_ip(spec, keep=old_spec.get("clusterIPs") or [])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            self._assign_node_ports(spec, old_spec)
        return causes

    def _assign_ip(self, spec: dict[str, Any], keep: list[str]) -> list[Any]:
        requested = spec.get("clusterIP") or (spec.get("clusterIPs") or [None])[0]
        if requested == "None":
            spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
            return []
        if requested and requested in keep:
            spec["clusterIP"], spec["clusterIPs"] = requested, [requested]
            return []
        if requested and keep:
            return []  # a changed IP on update: validation reports it as immutable
        if requested:
            problem = self._unusable(requested)
            if problem:
                return [
                    invalid_value(
                        "spec.clusterIPs", [requested], f"failed to allocate IP {requested}: {problem}"
                    )
                ]
            ip = requested
        else:
            ip = self._free_ip()
        self._ips.add(ip)
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        return []

    def _unusable(self, requested: str) -> str:
        try:
            address = ipaddress.ip_address(requested)
        except ValueError:
            return "must be a valid IP address"
        if address not in SERVICE_CIDR:
            return (
                f"the provided IP ({requested}) is not in the valid range. "
                f"The range of valid IPs is {SERVICE_CIDR}"
            )
        return "provided IP is already allocated" if requested in self._ips else ""

    def _free_ip(self) -> str:
        size = SERVICE_CIDR.num_addresses
        while True:
            candidate = str(SERVICE_CIDR.network_address + random.randrange(2, size - 1))
            if candidate not in self._ips:
                return candidate

    def _assign_node_ports(self, spec: dict[str, Any], old_spec: dict[str, Any]) -> None:
        old_ports = {p.get("port"): p.get("nodePort") for p in old_spec.get("ports") or []}
        for port in spec.get("ports") or []:
            if not port.get("nodePort"):
                port["nodePort"] = old_ports.get(port.get("port")) or self._free_port()
            self._ports.add(int(port["nodePort"]))

    def _free_port(self) -> int:
        while True:
            candidate = random.choice(NODE_PORT_RANGE)
            if candidate not in self._ports:
                return candidate
