"""Endpoints and EndpointSlices for Services, as the endpoints and endpointslice controllers write them.

Every Service with a selector gets an Endpoints object of the same name: the pods it selects that
have an IP, ready ones under `addresses` and the others under `notReadyAddresses`, with the
Service's ports resolved against each pod's named container ports. Pods without an IP yet (the
node agent has not started them) are left out, so a Service over Pending pods has no subsets. It
also gets one EndpointSlice (`<service>-<5 chars>`, labelled `kubernetes.io/service-name`, owned by
the Service) listing the same pods with their ready/serving/terminating conditions — what kubectl
1.29+ reads for `describe service`.

Keys are Services. A Service or Endpoints event dirties the Service of that name, an EndpointSlice
event the Service its label names; a Pod event dirties the Services in the pod's namespace whose
selector matches the pod's labels before or after the change. Both directions go through label
indexes: Services by the `key=value` pairs of their selector, Pods by their labels, each scoped to a
namespace.
"""

from __future__ import annotations

import copy
from typing import Any

from planner.slim.api import Api
from planner.slim.controllers.base import (
    CONTROLLER_MANAGER,
    Index,
    Writer,
    deleting,
    event_states,
    key,
    keys_of,
    name_of,
    ns_of,
    owner_reference,
    uid_of,
)
from planner.slim.controllers.deployments import pod_ready
from planner.slim.meta import now_rfc3339
from planner.slim.reconcilers import CONTROLLERS, Key
from planner.slim.store import WatchEvent

Obj = dict[str, Any]
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"


def selects(selector: dict[str, str], pod: Obj) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def selector_of(service: Obj) -> dict[str, str]:
    return dict((service.get("spec") or {}).get("selector") or {})


def _label_value(namespace: str, label: str, value: str) -> str:
    return f"{namespace}/{label}={value}"


def pod_label_values(pod: Obj) -> list[str]:
    """For an Index of pods by label (namespaced)."""
    labels = pod["metadata"].get("labels") or {}
    return [_label_value(ns_of(pod), k, str(v)) for k, v in labels.items()]


def service_selector_values(service: Obj) -> list[str]:
    """For an Index of Services by the label pairs of their selector (namespaced)."""
    return [_label_value(ns_of(service), k, str(v)) for k, v in selector_of(service).items()]


def slice_service_values(endpoint_slice: Obj) -> list[str]:
    """For an Index of the EndpointSlices this controller manages by their Service (namespaced)."""
    labels = endpoint_slice["metadata"].get("labels") or {}
    if labels.get(MANAGED_BY) != SLICE_CONTROLLER or SERVICE_NAME not in labels:
        return []
    return [_label_value(ns_of(endpoint_slice), SERVICE_NAME, str(labels[SERVICE_NAME]))]


def _address(pod: Obj) -> Obj:
    return {
        "ip": pod["status"]["podIP"],
        "nodeName": (pod.get("spec") or {}).get("nodeName"),
        "targetRef": {"kind": "Pod", "namespace": ns_of(pod), "name": name_of(pod), "uid": uid_of(pod)},
    }


def _target_port(port: Obj, pods: list[Obj]) -> int:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            for declared in container.get("ports") or []:
                if declared.get("name") == target:
                    return int(declared["containerPort"])
    return int(port.get("port", 0))


def subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    with_ip = [p for p in pods if (p.get("status") or {}).get("podIP") and not deleting(p)]
    if not with_ip:
        return []
    ready = [_address(p) for p in with_ip if pod_ready(p)]
    not_ready = [_address(p) for p in with_ip if not pod_ready(p)]
    ports = []
    for port in (service.get("spec") or {}).get("ports") or []:
        entry = {"port": _target_port(port, with_ip), "protocol": port.get("protocol", "TCP")}
        if port.get("name"):
            entry["name"] = port["name"]
        ports.append(entry)
    subset: Obj = {"ports": ports}
    if ready:
        subset["addresses"] = ready
    if not_ready:
        subset["notReadyAddresses"] = not_ready
    return [subset]


def slice_content(service: Obj, pods: list[Obj]) -> Obj:
    """An EndpointSlice's addressType, endpoints and ports for the pods a Service selects."""
    with_ip = [p for p in pods if (p.get("status") or {}).get("podIP")]
    endpoints = []
    for pod in with_ip:
        ready = pod_ready(pod) and not deleting(pod)
        endpoint: Obj = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {"ready": ready, "serving": pod_ready(pod), "terminating": deleting(pod)},
            "targetRef": {"kind": "Pod", "namespace": ns_of(pod), "name": name_of(pod), "uid": uid_of(pod)},
        }
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            endpoint["nodeName"] = node
        endpoints.append(endpoint)
    ports = [
        {
            "name": port.get("name", ""),
            "port": _target_port(port, with_ip),
            "protocol": port.get("protocol", "TCP"),
        }
        for port in (service.get("spec") or {}).get("ports") or []
    ]
    return {"addressType": "IPv4", "endpoints": endpoints, "ports": ports if endpoints else []}


class EndpointsController:
    component: str = CONTROLLERS
    watches: tuple[str, ...] = (key("Service"), key("Pod"), key("Endpoints"), key("EndpointSlice"))
    min_interval: float = 0.1

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writer = Writer(api, CONTROLLER_MANAGER)
        self.pods = Index(pod_label_values)
        self.services = Index(service_selector_values)
        self.slices = Index(slice_service_values)

    def observe(self, event: WatchEvent) -> list[Key]:
        if event.resource == key("Service"):
            self.services.observe(event)
        if event.resource == key("EndpointSlice"):
            self.slices.observe(event)
            labels = [obj["metadata"].get("labels") or {} for obj in event_states(event)]
            names = sorted({str(found[SERVICE_NAME]) for found in labels if SERVICE_NAME in found})
            return [Key(key("Service"), event.namespace, name) for name in names]
        if event.resource != key("Pod"):
            return [Key(key("Service"), event.namespace, event.name)]
        self.pods.observe(event)
        return self.services_selecting(event_states(event))

    def resync(self) -> list[Key]:
        self.pods.rebuild(self.api.store, [key("Pod")])
        self.services.rebuild(self.api.store, [key("Service")])
        self.slices.rebuild(self.api.store, [key("EndpointSlice")])
        return keys_of(self.api.store, key("Service"))

    def sync(self, service_key: Key, now: float) -> float | None:
        service = self.api.store.get(*service_key)
        if service is not None and selector_of(service) and not deleting(service):
            self._sync(service, self.selected_pods(ns_of(service), selector_of(service)))
        return None

    def services_selecting(self, pods: list[Obj]) -> list[Key]:
        """The Services whose selector matches any of `pods` (one pod before and after a change)."""
        found: set[Key] = set()
        for pod in pods:
            candidates = {k for value in pod_label_values(pod) for k in self.services.keys(value)}
            for candidate in candidates:
                service = self.api.store.get(*candidate)
                if service is not None and selector_of(service) and selects(selector_of(service), pod):
                    found.add(candidate)
        return sorted(found)

    def selected_pods(self, namespace: str, selector: dict[str, str]) -> list[Obj]:
        """The pods `selector` selects in `namespace`, in the store's order; the candidates are the
        pods carrying the selector's least common label pair."""
        values = [_label_value(namespace, k, str(v)) for k, v in selector.items()]
        rarest = min(values, key=self.pods.size)
        found = (self.api.store.get(*k) for k in self.pods.keys(rarest))
        return [pod for pod in found if pod is not None and selects(selector, pod)]

    def _sync(self, service: Obj, pods: list[Obj]) -> None:
        self._sync_endpoints(service, pods)
        self._sync_slice(service, pods)

    def _sync_slice(self, service: Obj, pods: list[Obj]) -> None:
        namespace, name = ns_of(service), name_of(service)
        wanted = slice_content(service, pods)
        value = _label_value(namespace, SERVICE_NAME, name)
        found = (self.api.store.get(*k) for k in self.slices.keys(value))
        slices = [s for s in found if s is not None and value in slice_service_values(s)]
        if not slices:
            labels = {
                **(service["metadata"].get("labels") or {}),
                MANAGED_BY: SLICE_CONTROLLER,
                SERVICE_NAME: name,
            }
            body: Obj = {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "generateName": f"{name}-",
                    "labels": labels,
                    "annotations": {TRIGGER: now_rfc3339()},
                    "ownerReferences": [owner_reference(service, "Service", "v1")],
                },
                **wanted,
            }
            self.writer.create("EndpointSlice", namespace, body)
            return
        current = slices[0]
        if {k: current.get(k) or [] for k in ("endpoints", "ports")} != {
            k: wanted[k] for k in ("endpoints", "ports")
        }:
            updated = {**copy.deepcopy(current), **wanted}
            updated["metadata"].setdefault("annotations", {})[TRIGGER] = now_rfc3339()
            self.writer.update("EndpointSlice", updated)
        for extra in slices[1:]:
            self.writer.delete("EndpointSlice", extra)

    def _sync_endpoints(self, service: Obj, pods: list[Obj]) -> None:
        namespace, name = ns_of(service), name_of(service)
        wanted = subsets(service, pods)
        current = self.api.store.get(key("Endpoints"), namespace, name)
        if current is None:
            body: Obj = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "annotations": {TRIGGER: now_rfc3339()}},
                "subsets": wanted,
            }
            labels = service["metadata"].get("labels")
            if labels:
                body["metadata"]["labels"] = dict(labels)
            self.writer.create("Endpoints", namespace, body)
        elif (current.get("subsets") or []) != wanted:
            updated = copy.deepcopy(current)
            updated["subsets"] = wanted
            updated["metadata"].setdefault("annotations", {})[TRIGGER] = now_rfc3339()
            self.writer.update("Endpoints", updated)
