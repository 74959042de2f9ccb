"""Endpoints for Services, as the endpoints controller writes them.

Every Service with a selector gets an Endpoints object of the same name: the pods it selects that
have an IP, ready ones under `addresses` and the others under `notReadyAddresses`, with the
Service's ports resolved against each pod's named container ports. Pods without an IP yet (the
node agent has not started them) are left out, so a Service over Pending pods has no subsets.
"""

from __future__ import annotations

import copy
from typing import Any

from planner.slim.api import Api
from planner.slim.controllers.base import CONTROLLER_MANAGER, Writer, deleting, key, name_of, ns_of, uid_of
from planner.slim.controllers.workloads import pod_ready
from planner.slim.meta import now_rfc3339
from planner.slim.runtime import CONTROLLERS

Obj = dict[str, Any]
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"


def selects(selector: dict[str, str], pod: Obj) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


class PodIndex:
    """A namespace's pods by label, built once per pass, so matching S services against P pods costs
    about P + S rather than P × S (the pass runs on every pod event)."""

    def __init__(self, pods: list[Obj]) -> None:
        self._by_label: dict[tuple[str, str], list[Obj]] = {}
        for pod in pods:
            for label in (pod["metadata"].get("labels") or {}).items():
                self._by_label.setdefault(label, []).append(pod)

    def selected(self, selector: dict[str, str]) -> list[Obj]:
        """The pods `selector` selects, in the store's order."""
        candidates = min((self._by_label.get(item, []) for item in selector.items()), key=len)
        return [pod for pod in candidates if selects(selector, pod)]


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


class EndpointsController:
    component: str = CONTROLLERS
    watches: tuple[str, ...] = (key("Service"), key("Pod"), key("Endpoints"))
    min_interval: float = 0.1

    def __init__(self, api: Api) -> None:
        self.api = api
        self.writer = Writer(api, CONTROLLER_MANAGER)

    def reconcile(self, now: float) -> float | None:
        indexes: dict[str, PodIndex] = {}
        for service in list(self.api.store.list(key("Service"), None)):
            selector = (service.get("spec") or {}).get("selector")
            if selector and not deleting(service):
                namespace = ns_of(service)
                if namespace not in indexes:
                    indexes[namespace] = PodIndex(self.api.store.list(key("Pod"), namespace))
                self._sync(service, indexes[namespace].selected(selector))
        return None

    def _sync(self, service: Obj, pods: list[Obj]) -> None:
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
