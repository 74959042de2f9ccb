"""The simulated node agent (in the manner of KWOK): a Ready node with a lease, a scheduler and a kubelet.

One node, `planner-node-0`, is registered at start and its Lease in `kube-node-lease` renewed every
10 s. The scheduler binds each unscheduled pod to it through `pods/binding`, unless the pod's node
selector or required node affinity rules it out or one of its PVCs is missing or unbound (an
immediate-binding claim), in which case the pod gets `PodScheduled=False, Unschedulable` and a
FailedScheduling Event. The kubelet then waits for everything the pod's volumes and environment
name (ConfigMaps, Secrets, bound PVCs), showing ContainerCreating and FailedMount Events meanwhile;
from the moment all exist, the pod's status is the `podsim` timeline at `now`, written through
`/status` only when it changed. A deleted pod's containers stop and the pod is removed once its
(simulated, short) shutdown is over. Pod IPs come from 10.244.0.0/16, one per pod for its lifetime.

Keys are pods plus the node itself (registration and the lease timer). A Pod event dirties that
pod; each pod asks to be synced again at its timeline's next change. A pod that cannot be scheduled
or started yet is remembered as waiting: a ConfigMap, Secret or PVC event dirties the waiting pods
of its namespace, a Node event every waiting pod, and each retries every `RETRY_SECONDS` as well
(the kubelet's and scheduler's own retries).
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Any

from planner.slim import podsim, podstatus, scheduling
from planner.slim.api import Api
from planner.slim.controllers.base import (
    Writer,
    deleting,
    key,
    keys_of,
    name_of,
    ns_of,
    own_key,
    typed,
    uid_of,
)
from planner.slim.discovery_documents import VERSION_INFO
from planner.slim.meta import epoch_of, now_micro, rfc3339
from planner.slim.reconcilers import NODE_AGENT, RETRY_SECONDS, Key, Scale
from planner.slim.store import WatchEvent

Obj = dict[str, Any]
NODE_NAME = "planner-node-0"
NODE_IP = "10.0.0.10"
POD_CIDR = ipaddress.ip_network("10.244.0.0/16")
LEASE_RENEW_SECONDS = 10.0
LEASE_NAMESPACE = "kube-node-lease"
SHUTDOWN_SECONDS = 0.2
SCHEDULER = "default-scheduler"
NODE_KEY = Key(key("Node"), "", NODE_NAME)


def node_object() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "labels": {
                "kubernetes.io/hostname": NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "type": "planner-simulated",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": str(POD_CIDR), "podCIDRs": [str(POD_CIDR)]},
        "status": node_status(),
    }


def node_status() -> Obj:
    capacity = {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}
    stamp = "2026-01-01T00:00:00Z"

    def condition(kind: str, status: str, reason: str, message: str) -> Obj:
        return {
            "type": kind,
            "status": status,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
            "reason": reason,
            "message": message,
        }

    return {
        "capacity": capacity,
        "allocatable": capacity,
        "phase": "Running",
        "conditions": [
            condition(
                "MemoryPressure",
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition(
                "PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"
            ),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": NODE_NAME}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": "planner",
            "systemUUID": "planner",
            "bootID": "planner",
            "kernelVersion": "6.1.0",
            "osImage": "planner simulated node",
            "containerRuntimeVersion": "containerd://1.7.0",
            "kubeletVersion": VERSION_INFO["gitVersion"],
            "kubeProxyVersion": VERSION_INFO["gitVersion"],
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


@dataclass
class PodTrack:
    """What the kubelet remembers about a pod: when its containers could start, and when to look again."""

    t0: float | None = None
    ip: str = ""
    due: float = 0.0
    seen_rv: str = ""
    stopping_since: float | None = None
    events: set[str] = field(default_factory=set)


class NodeAgent:
    component: str = NODE_AGENT
    watches: tuple[str, ...] = (
        key("Pod"),
        key("ConfigMap"),
        key("Secret"),
        key("PersistentVolumeClaim"),
        key("Node"),
    )
    min_interval: float = 0.0

    def __init__(self, api: Api, scale: Scale) -> None:
        self.api = api
        self.scale = scale
        self.kubelet = Writer(api, "kubelet")
        self.scheduler = Writer(api, SCHEDULER)
        self.pods: dict[str, PodTrack] = {}
        self.waiting: dict[str, set[Key]] = {}  # namespace → pods not yet scheduled or started
        self._next_ip = 2
        self._used_ips: set[str] = set()
        self._lease_renewed = 0.0

    # --- keys ----------------------------------------------------------------------------------------

    def observe(self, event: WatchEvent) -> list[Key]:
        if event.resource == key("Pod"):
            if event.type == "DELETED":
                self.pods.pop(uid_of(event.obj), None)
            return [own_key(event)]
        if event.resource == key("Node"):
            return [NODE_KEY, *self.waiting_pods(None)]
        return self.waiting_pods(event.namespace)

    def waiting_pods(self, namespace: str | None) -> list[Key]:
        """The pods waiting to be scheduled or started, in `namespace` (None: everywhere)."""
        if namespace is not None:
            return sorted(self.waiting.get(namespace, ()))
        return sorted(k for keys in self.waiting.values() for k in keys)

    def resync(self) -> list[Key]:
        pods = self.api.store.list(key("Pod"), None)
        self._used_ips = {ip for p in pods if (ip := (p.get("status") or {}).get("podIP"))}
        live = {uid_of(p) for p in pods}
        self.pods = {uid: track for uid, track in self.pods.items() if uid in live}
        return [NODE_KEY, *keys_of(self.api.store, key("Pod"))]

    # --- the pass ------------------------------------------------------------------------------------

    def sync(self, object_key: Key, now: float) -> float | None:
        if object_key == NODE_KEY:
            self._register(now)
            return self._lease_renewed + LEASE_RENEW_SECONDS
        self._set_waiting(object_key, False)
        pod = self.api.store.get(*object_key)
        if pod is None:
            return None
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return self._schedule(object_key, pod, now)
        if node == NODE_NAME:
            return self._run(object_key, pod, now)
        return None

    def _set_waiting(self, pod_key: Key, waiting: bool) -> None:
        if waiting:
            self.waiting.setdefault(pod_key.namespace, set()).add(pod_key)
            return
        keys = self.waiting.get(pod_key.namespace)
        if keys is not None:
            keys.discard(pod_key)
            if not keys:
                del self.waiting[pod_key.namespace]

    def _register(self, now: float) -> None:
        if self.api.store.get(key("Node"), "", NODE_NAME) is None:
            self.kubelet.create("Node", "", node_object())
        if now - self._lease_renewed < LEASE_RENEW_SECONDS:
            return
        self._lease_renewed = now
        lease = self.api.store.get(key("Lease"), LEASE_NAMESPACE, NODE_NAME)
        spec = {"holderIdentity": NODE_NAME, "leaseDurationSeconds": 40, "renewTime": now_micro()}
        if lease is None:
            self.kubelet.create(
                "Lease",
                LEASE_NAMESPACE,
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": NODE_NAME},
                    "spec": spec,
                },
            )
        else:
            self.kubelet.update("Lease", {**lease, "spec": spec})

    # --- scheduling ----------------------------------------------------------------------------------

    def _schedule(self, pod_key: Key, pod: Obj, now: float) -> float | None:
        """Bind the pod to the node, or say why not; a retry time while it cannot be placed."""
        spec = pod.get("spec") or {}
        nodes = self.api.store.list(key("Node"), None)
        if deleting(pod) or spec.get("schedulerName", SCHEDULER) != SCHEDULER:
            return None
        if not nodes:
            self._set_waiting(pod_key, True)
            return now + RETRY_SECONDS
        reason = scheduling.unschedulable_reason(pod, nodes, self._lookup(pod), self._waits_for_consumer)
        if reason is not None:
            self._unschedulable(pod, reason)
            self._set_waiting(pod_key, True)
            return now + RETRY_SECONDS
        try:
            self.api.bind(
                ns_of(pod),
                name_of(pod),
                {"target": {"kind": "Node", "name": NODE_NAME}},
                self.scheduler.options,
            )
        except Exception:
            return now + RETRY_SECONDS
        self.scheduler.event(
            typed("Pod", pod),
            "Normal",
            "Scheduled",
            f"Successfully assigned {ns_of(pod)}/{name_of(pod)} to {NODE_NAME}",
        )
        return None

    def _unschedulable(self, pod: Obj, message: str) -> None:
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        old = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": old.get("lastTransitionTime") if old else rfc3339(time.time()),
            "reason": "Unschedulable",
            "message": message,
        }
        status["conditions"] = [*conditions, condition]
        self.scheduler.write_status("Pod", pod, status)
        self.scheduler.event(typed("Pod", pod), "Warning", "FailedScheduling", message)

    def _waits_for_consumer(self, claim: Obj) -> bool:
        class_name = (claim.get("spec") or {}).get("storageClassName")
        found = self.api.store.get(key("StorageClass"), "", str(class_name)) if class_name else None
        return bool(found and found.get("volumeBindingMode") == "WaitForFirstConsumer")

    def _lookup(self, pod: Obj) -> scheduling.Lookup:
        namespace = ns_of(pod)

        def lookup(kind: str, name: str) -> Obj | None:
            return self.api.store.get(key(kind), namespace, name)

        return lookup

    # --- the kubelet ---------------------------------------------------------------------------------

    def _run(self, pod_key: Key, pod: Obj, now: float) -> float | None:
        track = self.pods.setdefault(uid_of(pod), PodTrack())
        if deleting(pod):
            return self._stop(pod, track, now)
        phase = (pod.get("status") or {}).get("phase")
        rv = str(pod["metadata"].get("resourceVersion", ""))
        if track.seen_rv == rv and now < track.due:
            return track.due
        if track.t0 is None and phase in ("Succeeded", "Failed"):
            return None
        if not track.ip:
            track.ip = (pod.get("status") or {}).get("podIP") or self._allocate_ip()
        if track.t0 is None:
            track.t0 = resumed_start(pod)  # after a server restart the timeline carries on
        if track.t0 is None:
            blocked = scheduling.missing_dependency(pod, self._lookup(pod))
            if blocked is not None:
                self._blocked(pod, track, blocked, now)
                self._set_waiting(pod_key, True)
                return now + RETRY_SECONDS
            track.t0 = now
        view = podsim.pod_view(pod, t0=track.t0, now=now, scale=self.scale.factor)
        status = podstatus.pod_status(pod, view, t0=track.t0, now=now, host_ip=NODE_IP, pod_ip=track.ip)
        written = self.kubelet.write_status("Pod", pod, status)
        self._lifecycle_events(pod, view, track, now)
        track.seen_rv = str((written or pod)["metadata"].get("resourceVersion", ""))
        track.due = view.next_change if view.next_change is not None else float("inf")
        return view.next_change

    def _blocked(self, pod: Obj, track: PodTrack, blocked: scheduling.Blocked, now: float) -> None:
        self.kubelet.write_status("Pod", pod, blocked_status(pod, blocked, now, host_ip=NODE_IP))
        kind = "Warning"
        self.kubelet.event(
            typed("Pod", pod), kind, blocked.event_reason, blocked.message, component="kubelet"
        )

    def _stop(self, pod: Obj, track: PodTrack, now: float) -> float | None:
        if track.stopping_since is None:
            track.stopping_since = now
            self.kubelet.event(
                typed("Pod", pod), "Normal", "Killing", "Stopping container " + _first_container(pod)
            )
        done_at = track.stopping_since + self.scale(SHUTDOWN_SECONDS)
        if now < done_at:
            return done_at
        self.kubelet.delete("Pod", pod, grace=0)
        return None

    def _allocate_ip(self) -> str:
        """The next free pod IP (pods kept from before a restart keep theirs: the used set is read
        from the store at each full resync)."""
        while True:
            address = str(POD_CIDR.network_address + self._next_ip)
            self._next_ip += 1
            if address not in self._used_ips:
                self._used_ips.add(address)
                return address

    def _lifecycle_events(self, pod: Obj, view: podsim.PodView, track: PodTrack, now: float) -> None:
        for token, kind, reason, message in lifecycle_events(pod, view, now):
            self._once(pod, track, token, kind, reason, message)

    def _once(self, pod: Obj, track: PodTrack, token: str, kind: str, reason: str, message: str) -> None:
        if token in track.events:
            return
        track.events.add(token)
        self.kubelet.event(typed("Pod", pod), kind, reason, message, component="kubelet", repeat_after=0.0)

    # --- for pods/log --------------------------------------------------------------------------------

    def started_at(self, pod_uid: str) -> float | None:
        track = self.pods.get(pod_uid)
        return track.t0 if track else None


def blocked_status(pod: Obj, blocked: scheduling.Blocked, now: float, *, host_ip: str) -> Obj:
    """A Pending pod's status while something its volumes or environment name is missing."""
    spec = pod.get("spec") or {}
    waiting = tuple(
        podsim.ContainerView(
            str(c.get("name")),
            (),
            blocked.reason,
            None if blocked.reason == "ContainerCreating" else blocked.message.removeprefix("Error: "),
            False,
        )
        for c in spec.get("containers") or []
    )
    init = tuple(
        podsim.ContainerView(str(c.get("name")), (), "PodInitializing", None, False)
        for c in spec.get("initContainers") or []
    )
    view = podsim.PodView(init, waiting, None if init else now, False, None)
    status = podstatus.pod_status(pod, view, t0=now, now=now, host_ip=host_ip, pod_ip="")
    status["phase"] = "Pending"
    for dropped in ("podIP", "podIPs"):
        status.pop(dropped, None)
    old_start = (pod.get("status") or {}).get("startTime")
    if old_start:
        status["startTime"] = old_start
    return status


def lifecycle_events(pod: Obj, view: podsim.PodView, now: float) -> list[tuple[str, str, str, str]]:
    """The kubelet's Events for the pod's containers so far, each (token, type, reason, message): a
    token names one occurrence, so a caller that remembers the tokens it sent sends each once."""
    spec = pod.get("spec") or {}
    images = {
        c.get("name"): c.get("image")
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    }
    found: list[tuple[str, str, str, str]] = []
    for container in (*view.init, *view.main):
        name = container.name
        runs = len(container.runs)  # each restart repeats the kubelet's events (their count rises)
        if container.runs:
            pulled = f'Container image "{images.get(name)}" already present on machine'
            found.append((f"Pulled/{name}/{runs}", "Normal", "Pulled", pulled))
            found.append((f"Created/{name}/{runs}", "Normal", "Created", f"Created container {name}"))
            found.append((f"Started/{name}/{runs}", "Normal", "Started", f"Started container {name}"))
        if container.waiting_reason == "CrashLoopBackOff":
            message = f"Back-off restarting failed container {name} in pod {name_of(pod)}_{ns_of(pod)}({uid_of(pod)})"
            found.append((f"BackOff/{name}/{runs}", "Warning", "BackOff", message))
        if container.waiting_reason in ("ErrImagePull", "ImagePullBackOff"):
            found.append((f"Failed/{name}", "Warning", "Failed", container.waiting_message or ""))
        killed = [
            r
            for r in container.runs
            if r.exit_code == podsim.LIVENESS_EXIT_CODE and r.end is not None and r.end <= now
        ]
        if killed:
            message = "Liveness probe failed: simulated failure"
            found.append((f"Unhealthy/{name}/{len(killed)}", "Warning", "Unhealthy", message))
    return found


def resumed_start(pod: Obj) -> float | None:
    """startTime of a pod whose containers this agent had already started (before a restart)."""
    status = pod.get("status") or {}
    started = any(
        s.get("containerID")
        for s in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]
    )
    if not started or not status.get("startTime"):
        return None
    return epoch_of(status["startTime"])


def _first_container(pod: Obj) -> str:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return str(containers[0].get("name", ""))
