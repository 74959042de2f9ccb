"""Event-driven drift correction (docs/controller.md, "Drift correction"): the controller's watches of
the kinds Plans own tell it when someone changes a field a Plan declares, and the Plan is queued for a
reconcile at once instead of at its next interval.

Each Plan whose `reconcile.driftCorrection` is `immediate` is tracked with its rendered objects. A watch
event of one of them is judged by `driftfields` (which declared fields drifted, and who wrote them); a
drift not yet answered is kept for the Plan's next reconcile, which takes it (its Event and status say
what drifted and who wrote it), and the Plan is queued after the delay `driftpolicy` gives (debounce,
rate limit, and the back-off of a field in conflict). The deletion of a tracked object is drift too
(its path `(deleted)`), unless the Plan's own reconcile is under way (a replace, a prune).

The same tracking serves a Plan's periodic reconcile from the caches (`unserved`): while nothing of it
has drifted, every object is in its watch cache as applied and ready, and its last full reconcile is
more recent than `full_resync`, the periodic pass makes no request.

The kinds watched are those planner renders and the controller's role watches anyway for readiness
(ConfigMaps, Secrets, Services, Deployments, StatefulSets, HorizontalPodAutoscalers, Jobs, CronJobs,
Ingresses), and any other kind whose informer a reconcile's wait has started. Sandboxes' Pods and PVCs
are left to the reconcile: the reaper and the lifecycle commands change them on purpose.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence

from planner import workloads
from planner.controller.driftfields import (
    DELETED_PATH,
    UNKNOWN_WRITER,
    DeclaredObject,
    DriftedField,
    declared_object,
    drifted_fields,
    unlike_applied,
)
from planner.controller.driftpolicy import Conflict, DriftPolicy, DriftTimings, FieldKey
from planner.controller.planref import source_name
from planner.kinds import (
    CONFIG_MAP,
    HORIZONTAL_POD_AUTOSCALER,
    INGRESS,
    SECRET,
    SERVICE,
    KindInfo,
    known,
)
from planner.kube.informer import EventType, Informers
from planner.objects import Manifest, ObjectRef, ref_of
from planner.unready import awaited
from planner.wait.readiness import ReadinessContext, readiness

# The kinds the controller's role may watch (deploy/rbac.yaml): every workload kind's and the objects
# rendered beside them.
WATCHED = frozenset(
    kind.group_kind
    for kind in (
        CONFIG_MAP,
        SECRET,
        SERVICE,
        HORIZONTAL_POD_AUTOSCALER,
        INGRESS,
        *(workload.api for workload in workloads.KINDS),
    )
)

Queue = Callable[[str, float], None]  # a Plan's key, and after how many seconds to reconcile it


class DriftWatch:
    def __init__(
        self,
        informers: Informers,
        *,
        queue: Queue,
        notice: Callable[[str], None],
        timings: DriftTimings | None = None,
        full_resync: float = 3600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.informers, self.queue, self.notice, self.clock = informers, queue, notice, clock
        self.policy = DriftPolicy(timings)
        self.full_resync = full_resync
        self._full: dict[str, float] = {}  # when each Plan's last full reconcile started
        self._lock = threading.Lock()
        self._declared: dict[ObjectRef, tuple[str, DeclaredObject]] = {}
        self._refs: dict[str, set[ObjectRef]] = {}  # by Plan key
        self._pending: dict[str, dict[FieldKey, DriftedField]] = {}
        self._in_flight: set[str] = set()
        self._partial: set[str] = set()  # Plans with objects of kinds not watched
        self._subscribed: set[str] = set()  # group kinds

    def track(self, key: str, manifests: Sequence[Manifest]) -> None:
        """Watch the Plan's objects as it rendered them now (before its reconcile applies them)."""
        declared: dict[ObjectRef, DeclaredObject] = {}
        kinds: dict[str, KindInfo] = {}
        for manifest in manifests:
            ref = ref_of(manifest)
            kind = known(ref.group, ref.kind)
            if kind is None or not kind.namespaced or not self._watchable(kind):
                continue
            declared[ref] = declared_object(manifest)
            kinds[kind.group_kind] = kind
        with self._lock:
            self._drop_refs(key)
            self._refs[key] = set(declared)
            if len(declared) < len(manifests):
                self._partial.add(key)
            else:
                self._partial.discard(key)
            for ref, each in declared.items():
                self._declared[ref] = (key, each)
        for kind in kinds.values():
            self._subscribe(kind)

    def untrack(self, key: str) -> None:
        """Stop watching the Plan's objects (it is gone, suspended, deleted, or corrects drift only at
        its interval) and forget its drift and conflicts."""
        with self._lock:
            self._drop_refs(key)
            self._refs.pop(key, None)
            self._pending.pop(key, None)
            self._in_flight.discard(key)
            self._partial.discard(key)
            self._full.pop(key, None)
            self.policy.forget(key)

    def take(self, key: str) -> tuple[DriftedField, ...]:
        """The drift seen since the Plan's last reconcile, for the one starting now to answer."""
        with self._lock:
            self._in_flight.add(key)
            self._full[key] = self.clock()
            self.policy.started(key, self.clock())
            return tuple(sorted(self._pending.pop(key, {}).values()))

    def corrected(self, key: str, fields: Iterable[DriftedField]) -> list[Conflict]:
        """The Plan's reconcile has ended, having corrected `fields`; the fields now in conflict."""
        with self._lock:
            self._in_flight.discard(key)
            return self.policy.corrected(key, fields, self.clock())

    def conflicts(self, key: str) -> list[Conflict]:
        with self._lock:
            return self.policy.conflicts(key, self.clock())

    def unserved(self, key: str) -> str | None:
        """Why the Plan's periodic reconcile cannot be served from the watch caches (None: it can): it is
        not tracked, drifted, is due its full reconcile, or one of its objects is not in its cache as
        applied and ready."""
        with self._lock:
            if key not in self._refs:
                return "its objects are not watched"
            if self._pending.get(key) or key in self._in_flight:
                return "drift seen"
            if self.clock() - self._full.get(key, -float("inf")) >= self.full_resync:
                return "its full reconcile is due (--full-resync)"
            if key in self._partial:
                return "some of its objects are of kinds not watched"
            objects = [
                found[1] for ref in self._refs[key] if (found := self._declared.get(ref)) and found[0] == key
            ]
        now = time.time()
        for declared in objects:
            kind = known(declared.ref.group, declared.ref.kind)
            informer = self.informers.get(kind) if kind is not None else None
            if informer is None or not informer.synced or informer.failed:
                return f"{declared.ref}: no synced watch cache"
            cached = informer.get(declared.ref.namespace, declared.ref.name)
            why = unlike_applied(declared, cached)
            if why is None and awaited(declared.ref):
                verdict = readiness(cached, ReadinessContext(now=now))
                why = None if verdict.status == "Current" else f"{declared.ref} is not ready"
            if why is not None:
                return why
        return None

    def _watchable(self, kind: KindInfo) -> bool:
        return kind.group_kind in WATCHED or self.informers.get(kind) is not None

    def _drop_refs(self, key: str) -> None:
        for ref in self._refs.get(key, ()):
            if self._declared.get(ref, ("",))[0] == key:
                del self._declared[ref]

    def _subscribe(self, kind: KindInfo) -> None:
        with self._lock:
            if kind.group_kind in self._subscribed:
                return
            self._subscribed.add(kind.group_kind)
        informer = self.informers.get(kind) or self.informers.informer(kind)
        informer.subscribe(self._on_event, managed_fields=True)

    def _on_event(self, event: EventType, obj: Manifest) -> None:
        ref = ref_of(obj)
        with self._lock:
            found = self._declared.get(ref)
        if found is None:
            return
        key, declared = found
        if event == "DELETED":
            drifted: tuple[DriftedField, ...] = (DriftedField(str(ref), DELETED_PATH, UNKNOWN_WRITER),)
        else:
            drifted = drifted_fields(declared, obj)
        if drifted:
            self._found(key, drifted, deleted=event == "DELETED")

    def _found(self, key: str, drifted: tuple[DriftedField, ...], *, deleted: bool) -> None:
        with self._lock:
            if key not in self._refs or (deleted and key in self._in_flight):
                return
            pending = self._pending.setdefault(key, {})
            new = [each for each in drifted if (each.object, each.path) not in pending]
            for each in new:
                pending[(each.object, each.path)] = each
            if not new:
                return
            delay = self.policy.delay(key, new, self.clock())
        said = ", ".join(each.describe() for each in new)
        self.notice(f"{source_name(key)}: drift: {said}; reconciling in {delay:.1f}s")
        self.queue(key, delay)
