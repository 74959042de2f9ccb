"""Waiting until an object is ready or gone: the executor's StatusSource for a real cluster, the
readiness rules over the informer caches, woken by watch events rather than polled.

A wait sleeps on the informer's condition variable, so it re-judges the object the moment a watch event
changes it, and at least every `recheck` seconds for the verdicts that depend on time alone (a Pod
unschedulable for 15 s). Polling the cache instead would cost each wait on the critical path up to one
interval after the object is really ready, on every link of a dependency chain. Measured on the
embedded cluster, from a write to the wait's return: 2 ms median (40 ms worst of 12) here, against
200 ms median (490 ms worst) polling the same cache every 0.5 s.

Every event on the awaited object is judged as it arrives (a subscription for the wait's duration), so
a state shorter than a wake-up still counts: a Job that completes and is deleted by a short TTL at once
ends its wait as complete rather than as "not found" until the timeout.

Two guards keep a cache from answering too early:
- the informer must have synced; a cache that failed (403, an unknown kind) fails the wait with its
  error instead of reporting "not found", which would end a wait-gone;
- the cached copy must be at least as new as planner's own last write of that object
  (`WrittenVersions`), so a wait right after an update never judges the previous generation's status.

StorageClass binding modes are read once, on the first wait that needs a context, through the client
(a PVC in a WaitForFirstConsumer class is ready while Pending, or its pod would never be created).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from planner.errors import ApiError
from planner.execute import Until, settled
from planner.kinds import by_kind
from planner.kube.client import KubeClient, resource_path
from planner.kube.informer import EventType, Informer, Informers, Subscriber
from planner.objects import Manifest, ObjectRef, annotations_of, metadata_of
from planner.readiness import Readiness, ReadinessContext, readiness
from planner.writes import WrittenVersions

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


@dataclass(frozen=True)
class _StorageClasses:
    group: str = "storage.k8s.io"
    version: str = "v1"
    plural: str = "storageclasses"
    namespaced: bool = False


def storage_classes(client: KubeClient) -> tuple[dict[str, str], str | None]:
    """Binding mode by StorageClass name, and the default class; empty when they cannot be listed."""
    try:
        listed = client.request("GET", resource_path(_StorageClasses()), verb="list").get("items", [])
    except ApiError:
        return {}, None
    modes = {str(metadata_of(c)["name"]): str(c.get("volumeBindingMode") or "Immediate") for c in listed}
    default = next(
        (
            str(metadata_of(c)["name"])
            for c in listed
            if annotations_of(c).get(DEFAULT_CLASS_ANNOTATION) == "true"
        ),
        None,
    )
    return modes, default


def _newer_or_equal(cached: str, written: str) -> bool:
    try:
        return int(cached) >= int(written)
    except ValueError:  # resourceVersions are opaque on some servers: trust the cache then
        return True


class CacheStatusSource:
    """`execute.StatusSource` over `Informers`. `scopes` maps each kind that will be waited on to its
    namespaces (None: all); `start()` starts those informers so they sync while the first writes run."""

    def __init__(
        self,
        client: KubeClient,
        informers: Informers,
        *,
        scopes: Mapping[str, frozenset[str] | None],
        written: WrittenVersions,
        recheck: float = 1.0,
    ) -> None:
        self.client, self.informers, self.written = client, informers, written
        self.scopes = scopes
        self.recheck = recheck
        self._classes: tuple[dict[str, str], str | None] | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._waited: set[Informer] = set()

    def start(self) -> CacheStatusSource:
        for kind, namespaces in self.scopes.items():
            self.informers.informer(by_kind(kind), namespaces=namespaces)
        return self

    def context(self, now: float) -> ReadinessContext:
        with self._lock:
            if self._classes is None:
                self._classes = storage_classes(self.client)
            modes, default = self._classes
        return ReadinessContext(now=now, binding_modes=modes, default_storage_class=default)

    def informer(self, ref: ObjectRef) -> Informer:
        namespaces = self.scopes.get(ref.kind, frozenset({ref.namespace}) if ref.namespace else None)
        return self.informers.informer(by_kind(ref.kind), namespaces=namespaces)

    def close(self) -> None:
        """End every wait in flight now, each returning its last verdict: the run is over (interrupted,
        or its lock lost), and the threads that waited must not outlive it until their timeouts."""
        with self._lock:
            self._closed = True
            waited = list(self._waited)
        for informer in waited:
            with informer.changed:
                informer.changed.notify_all()

    def wait(self, ref: ObjectRef, *, until: Until, timeout: float) -> Readiness:
        deadline = time.monotonic() + timeout
        informer = self.informer(ref)
        with self._lock:
            self._waited.add(informer)
        passing: list[Readiness] = []
        unsubscribe = informer.subscribe(self.watcher(informer, ref, until, passing))
        try:
            informer.wait_until_synced(timeout)
            with informer.changed:
                while True:
                    verdict = (
                        passing[0]
                        if passing
                        else self.verdict(informer, ref, informer.get(ref.namespace, ref.name))
                    )
                    remaining = deadline - time.monotonic()
                    if settled(verdict, until) or remaining <= 0 or self._closed:
                        return verdict
                    informer.changed.wait(
                        self.recheck if math.isinf(remaining) else min(self.recheck, remaining)
                    )
        finally:
            unsubscribe()

    def watcher(
        self, informer: Informer, ref: ObjectRef, until: Until, passing: list[Readiness]
    ) -> Subscriber:
        """A subscriber that keeps the first settled verdict of any event on `ref`, so a state that
        lasts less than a wake-up (a Job that completes and is removed by its TTL at once) still ends
        the wait."""
        key = (ref.namespace or "", ref.name)

        def judge(kind: EventType, obj: Manifest) -> None:
            metadata = metadata_of(obj)
            if (metadata.get("namespace") or "", metadata.get("name")) != key:
                return
            verdict = self.verdict(informer, ref, None if kind == "DELETED" else obj)
            if settled(verdict, until):
                with informer.changed:
                    passing.append(verdict)
                    informer.changed.notify_all()

        return judge

    def verdict(self, informer: Informer, ref: ObjectRef, cached: Manifest | None) -> Readiness:
        written = self.written.get(ref)
        if written is not None and cached is not None:
            version = str(metadata_of(cached).get("resourceVersion") or "")
            if not _newer_or_equal(version, written):
                return Readiness(status="InProgress", message="waiting for the cache to see planner's write")
        return readiness(cached, self.context(time.time()))


__all__ = ["CacheStatusSource", "storage_classes"]
