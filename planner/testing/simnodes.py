"""Simulated nodes for any API server (in the manner of KWOK), through its public API only.

It registers `nodes` Ready Nodes (`planner-node-<i>`) and renews their Leases in `kube-node-lease`;
the cluster's own scheduler binds pods to them (`pods/binding`). Each pod bound to one of them runs
the embedded cluster's kubelet timeline (`planner.slim.podsim`, knobs in `sim.planner.dev/*`
annotations): its status is written through `pods/status` whenever the timeline changes, with the
kubelet's Events; a deleted pod is written stopped (not Ready) and removed once its short shutdown
is over. It is also the external provisioner of the embedded cluster's StorageClasses (`standard`,
Immediate; `wait`, WaitForFirstConsumer), which it creates with the `kata-qemu` RuntimeClass: a claim
the controller-manager hands to it (and, when the binding waits, the scheduler gave a node) gets a
PersistentVolume pre-bound to it, which the controller-manager's binder then binds; a Released one
is deleted.

Watch-driven: informers (list, then watch from its resourceVersion; a new list on 410 Gone) feed a
keyed work queue (`planner.workqueue`) and a few workers, as a kubelet syncs its pods side by side:
the queue never hands an object to two workers at once, so each pod's timeline is written in order.
A pod runs again when its timeline's next change is due, and the pods waiting for a ConfigMap, Secret
or claim whenever one in their namespace changes (and every few seconds).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import ipaddress
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from planner.slim import nodeagent, podsim, podstatus, scheduling
from planner.slim.bootstrap import seed_objects
from planner.slim.meta import now_micro, rfc3339
from planner.workqueue import WorkQueue

Obj = dict[str, Any]
Ref = tuple[str, str, str]  # (kind, namespace, name)

NODE_PREFIX = "planner-node-"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_RENEW_SECONDS = 10.0
RETRY_SECONDS = 2.0
SHUTDOWN_SECONDS = 0.2
WATCH_SECONDS = 300
SELECTED_NODE = "volume.kubernetes.io/selected-node"
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
WATCHED = ("Pod", "PersistentVolumeClaim", "PersistentVolume", "ConfigMap", "Secret")
# One worker writes a pod's status and Events one request after another: at a few hundred pods
# starting at once, that alone lags their Ready by seconds. A handful side by side keeps up with the
# controller-manager on a small machine.
WORKERS = 4


@dataclass
class PodTrack:
    namespace: str = ""
    ready: float | None = None  # when the pod first became Ready
    t0: float | None = None
    ip: str = ""
    stopping_since: float | None = None
    events: set[str] = field(default_factory=set)


def _ref(kind: str, obj: Obj) -> Ref:
    meta = obj.get("metadata") or {}
    return (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


class NodeAgent:
    """Start with `start()` (or as a context manager); `stop()` ends its threads."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        nodes: int = 1,
        pods_per_node: int = 110,
        time_scale: float = 1.0,
        workers: int = WORKERS,
    ) -> None:
        self.api = _own_client(api, connections=len(WATCHED) + workers + 1)
        self.workers = workers
        self.core = client.CoreV1Api(api)
        self.nodes = [f"{NODE_PREFIX}{i}" for i in range(nodes)]
        self.pods_per_node = pods_per_node
        self.scale = time_scale
        self.cache: dict[Ref, Obj] = {}
        self.tracks: dict[str, PodTrack] = {}
        self.waiting: dict[str, set[Ref]] = {}  # namespace → pods whose volumes or environment are missing
        self.provisioners: set[str] = set()
        self.delayed_classes: set[str] = set()  # WaitForFirstConsumer: provisioned once a node is chosen
        self.version = ""  # the server's: a kubelet is never newer than its API server
        self._lock = threading.Lock()
        self._queue: WorkQueue[Ref] = WorkQueue()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._synced: set[str] = set()
        self._ips = (str(ip) for ip in ipaddress.ip_network("10.244.0.0/16").hosts())

    # --- life ----------------------------------------------------------------------------------------

    def __enter__(self) -> NodeAgent:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 30.0) -> None:
        self.version = str(client.VersionApi(self.api).get_code().git_version)
        self._ensure_classes()
        for name in self.nodes:
            self._register(name)
        for kind in WATCHED:  # not joined on stop: a watch ends at its next event or its timeout
            self._spawn(functools.partial(self._inform, kind), f"inform-{kind}", joined=False)
        for index in range(self.workers):
            self._spawn(self._work, f"worker-{index}")
        self._spawn(self._heartbeat, "leases")
        deadline = time.monotonic() + timeout
        while len(self._synced) < len(WATCHED) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self._stopping.set()
        self._queue.shut_down()
        for thread in self._threads:
            thread.join(timeout=2)
        self.api.close()

    def _spawn(self, target: Callable[[], None], name: str, *, joined: bool = True) -> None:
        thread = threading.Thread(target=target, name=f"nodeagent-{name}", daemon=True)
        thread.start()
        if joined:
            self._threads.append(thread)

    # --- informers -----------------------------------------------------------------------------------

    def _request(self, kind: str, timeout: float, **query: Any) -> Any:
        """The raw answer of a list (or, with `watch=True`, a watch) of every `kind` in the cluster."""
        lists = {
            "Pod": self.core.list_pod_for_all_namespaces,
            "PersistentVolumeClaim": self.core.list_persistent_volume_claim_for_all_namespaces,
            "PersistentVolume": self.core.list_persistent_volume,
            "ConfigMap": self.core.list_config_map_for_all_namespaces,
            "Secret": self.core.list_secret_for_all_namespaces,
        }
        return lists[kind](_preload_content=False, _request_timeout=timeout, **query)

    def _inform(self, kind: str) -> None:
        while not self._stopping.is_set():
            try:
                version = self._list(kind)
                self._synced.add(kind)
                self._watch(kind, version)
            except Exception:  # a dropped connection, a restart: list again
                if self._stopping.wait(1.0):
                    return

    def _list(self, kind: str) -> str:
        response = self._request(kind, 60)
        body = json.loads(response.data)
        fresh = {_ref(kind, item): item for item in body.get("items") or []}
        with self._lock:
            stale = [r for r in self.cache if r[0] == kind and r not in fresh]
            for ref in stale:
                del self.cache[ref]
            self.cache.update(fresh)
        for ref in [*stale, *fresh]:
            self._observe(ref)
        return str(body["metadata"]["resourceVersion"])

    def _watch(self, kind: str, version: str) -> None:
        while not self._stopping.is_set():
            response = self._request(
                kind,
                WATCH_SECONDS + 10,
                watch=True,
                resource_version=version,
                allow_watch_bookmarks=True,
                timeout_seconds=WATCH_SECONDS,
            )
            try:
                for line in iter_resp_lines(response):
                    if self._stopping.is_set():
                        return
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        return  # 410 Gone: list again
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    if event.get("type") == "BOOKMARK":
                        continue
                    ref = _ref(kind, obj)
                    with self._lock:
                        if event.get("type") == "DELETED":
                            self.cache.pop(ref, None)
                        else:
                            self.cache[ref] = obj
                    self._observe(ref)
            finally:
                response.release_conn()

    def _observe(self, ref: Ref) -> None:
        kind, namespace, _ = ref
        if kind in ("Pod", "PersistentVolumeClaim", "PersistentVolume"):
            self._queue.add(ref)
        if kind in ("ConfigMap", "Secret", "PersistentVolumeClaim"):
            with self._lock:
                waiting = list(self.waiting.get(namespace, ()))
            for pod in waiting:
                self._queue.add(pod)

    def _get(self, ref: Ref) -> Obj | None:
        with self._lock:
            return self.cache.get(ref)

    # --- the workers ---------------------------------------------------------------------------------

    def _work(self) -> None:
        while not self._stopping.is_set():
            ref = self._queue.get(timeout=1.0)
            if ref is None:
                continue
            try:
                due = self._sync(ref, time.time())
            except Exception:
                due = time.time() + RETRY_SECONDS
            if due is not None:
                self._queue.add_after(ref, max(0.0, due - time.time()))
            self._queue.done(ref)

    def _sync(self, ref: Ref, now: float) -> float | None:
        obj = self._get(ref)
        if obj is None:
            return None
        if ref[0] == "Pod":
            return self._pod(ref, obj, now)
        if ref[0] == "PersistentVolumeClaim":
            self._provision(obj)
        else:
            self._reclaim(obj)
        return None

    # --- nodes ---------------------------------------------------------------------------------------

    def _node(self, index: int, name: str) -> Obj:
        node = copy.deepcopy(nodeagent.node_object())
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        status = node["status"]
        status["capacity"] = {**status["capacity"], "pods": str(self.pods_per_node)}
        status["allocatable"] = status["capacity"]
        status["addresses"] = [
            {"type": "InternalIP", "address": self._host_ip(name)},
            {"type": "Hostname", "address": name},
        ]
        status["nodeInfo"] |= {"kubeletVersion": self.version, "kubeProxyVersion": self.version}
        stamp = rfc3339(time.time())
        for condition in status["conditions"]:
            condition["lastHeartbeatTime"] = condition["lastTransitionTime"] = stamp
        node["spec"] = {}
        return node

    def _host_ip(self, node: str) -> str:
        return f"10.0.0.{10 + self.nodes.index(node)}"

    def _register(self, name: str) -> None:
        node = self._node(self.nodes.index(name), name)
        try:
            created = self.core.create_node(node, _preload_content=False)
            uid = json.loads(created.data)["metadata"]["uid"]
        except ApiException as exc:
            if exc.status != 409:
                raise
            uid = self.core.read_node(name).metadata.uid
        self.core.patch_node_status(name, {"status": node["status"]})
        self._renew(name, uid)

    def _renew(self, name: str, uid: str) -> None:
        leases = client.CoordinationV1Api(self.api)
        spec = {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now_micro()}
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": name,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}],
            },
            "spec": spec,
        }
        try:
            leases.patch_namespaced_lease(name, LEASE_NAMESPACE, {"spec": spec})
        except ApiException as exc:
            if exc.status != 404:
                raise
            leases.create_namespaced_lease(LEASE_NAMESPACE, body)

    def _heartbeat(self) -> None:
        while not self._stopping.wait(LEASE_RENEW_SECONDS):
            for name in self.nodes:
                with contextlib.suppress(Exception):
                    self._renew(name, self.core.read_node(name).metadata.uid)

    def _ensure_classes(self) -> None:
        for kind, body in seed_objects():
            if kind == "StorageClass":
                self.provisioners.add(body["provisioner"])
                if body.get("volumeBindingMode") == "WaitForFirstConsumer":
                    self.delayed_classes.add(body["metadata"]["name"])
                create = client.StorageV1Api(self.api).create_storage_class
            elif kind == "RuntimeClass":
                create = client.NodeV1Api(self.api).create_runtime_class
            else:
                continue
            with contextlib.suppress(ApiException):
                create(body)

    # --- pods ----------------------------------------------------------------------------------------

    def _lookup(self, namespace: str) -> scheduling.Lookup:
        def lookup(kind: str, name: str) -> Obj | None:
            return self._get((kind, namespace, name))

        return lookup

    def _set_waiting(self, ref: Ref, waiting: bool) -> None:
        with self._lock:
            keys = self.waiting.setdefault(ref[1], set())
            if waiting:
                keys.add(ref)
            else:
                keys.discard(ref)

    def _pod(self, ref: Ref, pod: Obj, now: float) -> float | None:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in self.nodes:
            return None
        uid = str(pod["metadata"].get("uid"))
        track = self.tracks.setdefault(uid, PodTrack(namespace=ref[1]))
        if pod["metadata"].get("deletionTimestamp"):
            return self._stop_pod(pod, track, now)
        phase = (pod.get("status") or {}).get("phase")
        if track.t0 is None and phase in ("Succeeded", "Failed"):
            return None
        if not track.ip:
            track.ip = (pod.get("status") or {}).get("podIP") or self._next_ip()
        if track.t0 is None:
            track.t0 = nodeagent.resumed_start(pod)
        host_ip = self._host_ip(str(node))
        if track.t0 is None:
            blocked = scheduling.missing_dependency(pod, self._lookup(ref[1]))
            if blocked is not None:
                self._set_waiting(ref, True)
                self._write_status(pod, nodeagent.blocked_status(pod, blocked, now, host_ip=host_ip))
                self._event(
                    pod, track, f"blocked/{blocked.message}", "Warning", blocked.event_reason, blocked.message
                )
                return now + RETRY_SECONDS
            self._set_waiting(ref, False)
            track.t0 = now
        view = podsim.pod_view(pod, t0=track.t0, now=now, scale=self.scale)
        status = podstatus.pod_status(pod, view, t0=track.t0, now=now, host_ip=host_ip, pod_ip=track.ip)
        if track.ready is None and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        ):
            track.ready = now
        self._write_status(pod, status)
        for token, kind, reason, message in nodeagent.lifecycle_events(pod, view, now):
            self._event(pod, track, token, kind, reason, message)
        return view.next_change

    def _next_ip(self) -> str:
        with self._lock:  # a generator is not safe from two threads at once
            return next(self._ips)

    def _write_status(self, pod: Obj, status: Obj) -> None:
        if _same_status(pod.get("status") or {}, status):
            return
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": pod["metadata"], "status": status}
        meta = pod["metadata"]
        with contextlib.suppress(ApiException):  # a conflict or a deleted pod: its watch event follows
            response = self.core.replace_namespaced_pod_status(
                meta["name"], meta["namespace"], body, _preload_content=False
            )
            written = json.loads(response.data)
            with self._lock:
                ref = _ref("Pod", written)
                if ref in self.cache:
                    self.cache[ref] = written

    def _stop_pod(self, pod: Obj, track: PodTrack, now: float) -> float | None:
        if track.stopping_since is None:
            track.stopping_since = now
            first = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name", "")
            self._event(pod, track, "Killing", "Normal", "Killing", f"Stopping container {first}")
            self._write_status(pod, stopped_status(pod.get("status") or {}, now))
        done_at = track.stopping_since + SHUTDOWN_SECONDS * self.scale
        if now < done_at:
            return done_at
        meta = pod["metadata"]
        with contextlib.suppress(ApiException):
            self.core.delete_namespaced_pod(
                meta["name"],
                meta["namespace"],
                body=client.V1DeleteOptions(
                    grace_period_seconds=0, preconditions=client.V1Preconditions(uid=meta["uid"])
                ),
            )
        self.tracks.pop(str(meta["uid"]), None)
        return None

    def _event(self, pod: Obj, track: PodTrack, token: str, kind: str, reason: str, message: str) -> None:
        if token in track.events:
            return
        track.events.add(token)
        meta = pod["metadata"]
        stamp = rfc3339(time.time())
        digest = hashlib.sha256(f"{meta['uid']}/{token}".encode()).hexdigest()[:16]
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{digest}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta["uid"],
            },
            "type": kind,
            "reason": reason,
            "message": message,
            "source": {"component": "kubelet", "host": (pod.get("spec") or {}).get("nodeName", "")},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": "kubelet",
        }
        with contextlib.suppress(ApiException):
            self.core.create_namespaced_event(meta["namespace"], event, _preload_content=False)

    # --- volumes -------------------------------------------------------------------------------------

    def _provision(self, claim: Obj) -> None:
        meta = claim["metadata"]
        annotations = meta.get("annotations") or {}
        spec = claim.get("spec") or {}
        if spec.get("volumeName") or meta.get("deletionTimestamp"):
            return
        if annotations.get(STORAGE_PROVISIONER) not in self.provisioners:
            return
        class_name = spec.get("storageClassName")
        selected = annotations.get(SELECTED_NODE)
        if class_name in self.delayed_classes and not selected:
            return  # WaitForFirstConsumer: the scheduler names the node once a pod needs the claim
        volume: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": f"pvc-{meta['uid']}",
                "annotations": {PROVISIONED_BY: annotations[STORAGE_PROVISIONER]},
            },
            "spec": {
                "capacity": {
                    "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
                },
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "volumeMode": spec.get("volumeMode", "Filesystem"),
                "storageClassName": class_name,
                "persistentVolumeReclaimPolicy": "Delete",
                "hostPath": {"path": f"/var/lib/planner/volumes/pvc-{meta['uid']}", "type": ""},
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "namespace": meta["namespace"],
                    "name": meta["name"],
                    "uid": meta["uid"],
                },
            },
        }
        if selected:
            volume["spec"]["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": [selected]}
                            ]
                        }
                    ]
                }
            }
        with contextlib.suppress(ApiException):  # 409: made already
            self.core.create_persistent_volume(volume)

    def _reclaim(self, volume: Obj) -> None:
        provisioner = (volume["metadata"].get("annotations") or {}).get(PROVISIONED_BY)
        released = (volume.get("status") or {}).get("phase") == "Released"
        if provisioner in self.provisioners and released and not volume["metadata"].get("deletionTimestamp"):
            with contextlib.suppress(ApiException):
                self.core.delete_persistent_volume(volume["metadata"]["name"])

    # --- for benchmarks ------------------------------------------------------------------------------

    def ready_times(self, namespace: str) -> list[float]:
        """When each pod of `namespace` this agent ran first became Ready (epoch seconds): with the
        moment its objects were written, an apply-and-wait's time with no tool in it."""
        tracks = list(self.tracks.values())  # one C call: the worker may be adding to it
        return [t.ready for t in tracks if t.namespace == namespace and t.ready is not None]


def stopped_status(status: Obj, now: float) -> Obj:
    """A deleted pod's status once its containers are stopped, as a kubelet writes it before the pod
    goes: every running container terminated (exit 0) and not ready, so the pod is no longer Ready
    while it waits out its shutdown."""
    stopped = copy.deepcopy(status)
    stamp = rfc3339(now)
    names = []
    for container in stopped.get("containerStatuses") or []:
        names.append(str(container.get("name", "")))
        running = (container.get("state") or {}).get("running")
        container["ready"], container["started"] = False, False
        if running is not None:
            finished = {"exitCode": 0, "reason": "Completed", "finishedAt": stamp}
            container["state"] = {
                "terminated": {
                    **finished,
                    "startedAt": running.get("startedAt"),
                    "containerID": container.get("containerID"),
                }
            }
    for condition in stopped.get("conditions") or []:
        if condition.get("type") in ("Ready", "ContainersReady") and condition.get("status") == "True":
            condition.update(
                status="False",
                lastTransitionTime=stamp,
                reason="ContainersNotReady",
                message=f"containers with unready status: [{' '.join(names)}]",
            )
    return stopped


def _same_status(old: Obj, new: Obj) -> bool:
    """Whether writing `new` would change nothing (the server drops empty and null fields)."""
    same: bool = _pruned(old) == _pruned(new)
    return same


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _own_client(api: client.ApiClient, *, connections: int) -> client.ApiClient:
    """A client of the same server and credentials with a connection for each thread: a watch holds
    its connection, and a request finding the pool used up opens (and then drops) a new TLS one."""
    configuration = copy.deepcopy(api.configuration)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize, connections)
    return client.ApiClient(configuration)


@contextlib.contextmanager
def running_node_agent(api: client.ApiClient, **options: Any) -> Iterator[NodeAgent]:
    agent = NodeAgent(api, **options)
    agent.start()
    try:
        yield agent
    finally:
        agent.stop()
