"""The monitor: turns the informer caches' changes into lifecycle events (ContainerStarted, …), per
runtime ID.

One subscription per kind serves every runtime ID (never a connection per workload): the monitor keeps
its own index from `kind|namespace|name` to the runtime IDs that object matters to, and on each change
re-reads those workloads from the local cache and shows them to their state machines. Registration
(`mark_if_not_monitoring`) is idempotent and is followed at once by a snapshot check against the synced
cache, so a transition that happened before registering is still reported. A terminal event removes the
runtime ID's subscription and unmarks it, as gobrave's monitor does; start and resume register again.

Delivery is at-least-once with stable ids: a monitor started afresh re-reports, from its snapshot, the
transitions each workload has reached, with the same `event_id`s. The monitor only reads: it writes
nothing to any object.

Events go to an `EventSink` from the informers' threads, one at a time (under the monitor's lock), so each
runtime ID's events arrive in order.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

from planner import workloads
from planner.errors import PlannerError
from planner.events import (
    Clock,
    ContainerDeleted,
    ContainerExited,
    ContainerFailed,
    ContainerStarted,
    EventSink,
    MonitorEvent,
)
from planner.kinds import PERSISTENT_VOLUME_CLAIM, POD, KindInfo
from planner.monitor.mapping import (
    SandboxObjects,
    managed_runtime_id,
    recorded_pod,
    rootfs_claim,
    sandbox_observation,
    workload_observation,
)
from planner.monitor.state import CREATED, EventType, Phase, Transition, WorkloadState, advance
from planner.objects import Manifest, metadata_of
from planner.plan.names import workspace_pvc_name
from planner.render.identity import RuntimeID
from planner.state.applyset import RunRecord
from planner.wait.reasons import pods_of as selected_pods
from planner.workloads.kind import Runs
from planner.workloads.observation import Observation

Callback = Callable[[str, Manifest], None]
T = TypeVar("T")

_EVENT_CLASSES: dict[EventType, type[MonitorEvent]] = {
    "ContainerStarted": ContainerStarted,
    "ContainerExited": ContainerExited,
    "ContainerFailed": ContainerFailed,
    "ContainerDeleted": ContainerDeleted,
}
_SANDBOX_KINDS = (POD, PERSISTENT_VOLUME_CLAIM)
MANAGED_KINDS = (*(kind.api for kind in workloads.KINDS), PERSISTENT_VOLUME_CLAIM)
_WITH_RUNS = tuple(kind for kind in workloads.KINDS if kind.runs is not None)


def _watched_kinds(runtime_kind: str) -> tuple[KindInfo, ...]:
    if runtime_kind == workloads.SANDBOX:
        return _SANDBOX_KINDS
    return workloads.named(runtime_kind).watched


def _also_read(runtime_kind: str) -> tuple[KindInfo, ...]:
    """Read but not subscribed to: a failed run's pods give its exit code, and change nothing about it."""
    return () if runtime_kind == workloads.SANDBOX else workloads.named(runtime_kind).also_read


class KindCache(Protocol):
    """One kind's informer cache as the monitor uses it (`planner.kube.informer.Informer` is one)."""

    def get(self, namespace: str | None, name: str) -> Manifest | None: ...

    def items(self) -> list[Manifest]: ...

    def subscribe(self, subscriber: Callback) -> Callable[[], None]: ...

    def wait_until_synced(self, timeout: float | None) -> None: ...


class Caches(Protocol):
    """One informer per kind per process (`planner.kube.informer.Informers` is one)."""

    def informer(self, kind: KindInfo, *, namespaces: frozenset[str] | None = None) -> KindCache: ...


def subscription_key(kind: KindInfo, namespace: str, name: str) -> str:
    """`Kind|namespace|name`, the subscription key."""
    return f"{kind.kind}|{namespace}|{name}"


def _object_key(kind: KindInfo, obj: Manifest) -> str:
    metadata = metadata_of(obj)
    return subscription_key(kind, str(metadata.get("namespace") or ""), str(metadata.get("name", "")))


def steady(kind: str, phase: Phase) -> bool:
    """Whether a workload has settled for `--until-done` and `apply --watch`, as its kind says
    (`WorkloadKind.settles`); a sandbox once Started (or ended)."""
    if kind == workloads.SANDBOX:
        return phase != "created"
    return workloads.named(kind).steady(phase)


@dataclass
class _Watched:
    runtime_id: RuntimeID
    state: WorkloadState = CREATED
    keys: set[str] = field(default_factory=set)
    rootfs: str | None = None  # the sandbox's rootfs PVC, remembered once seen
    runs: dict[str, WorkloadState] = field(
        default_factory=dict
    )  # a cronjob's runs, by Job name, oldest first


class Monitor:
    """Follows runtime IDs through the shared informer caches and reports their transitions to `sink`.

    `namespaces` is the scope the informers are created with (None: all namespaces); `follow` makes the
    monitor also attach managed workloads that appear or come back (a resumed sandbox, a started
    Deployment) after `attach_all`. `recorded` maps the runtime IDs of the Jobs a plan ran to their run
    records (from the ApplySet parents): a Job gone before this monitor saw it is then reported with
    the ids an uninterrupted monitor gave it — Started and Exited or Failed when the record holds how it
    ended, else Deleted — and `attach_all` finds it although no labelled object is left."""

    def __init__(
        self,
        caches: Caches,
        sink: EventSink,
        *,
        clock: Clock,
        namespaces: frozenset[str] | None = None,
        sync_timeout: float = 60.0,
        recorded: Mapping[RuntimeID, RunRecord] | None = None,
    ) -> None:
        self.caches, self.sink, self.clock = caches, sink, clock
        self.namespaces, self.sync_timeout = namespaces, sync_timeout
        self.recorded = dict(recorded or {})
        self.changed = threading.Condition(threading.RLock())
        self._watched: dict[str, _Watched] = {}
        self._by_key: dict[str, set[str]] = {}
        self._subscribed: dict[str, Callable[[], None]] = {}
        # runtime ID -> (kind, last phase), kept after the end for `failed()` and `all_steady()`
        self._reached: dict[str, tuple[str, Phase]] = {}
        self._follow = False

    # --- registration -----------------------------------------------------------------------------

    def mark_if_not_monitoring(self, runtime_id: RuntimeID) -> bool:
        """Start following `runtime_id` unless it is followed already; True when newly registered. The
        snapshot check runs before this returns, so what already happened is reported now."""
        key = str(runtime_id)
        kinds = _watched_kinds(runtime_id.kind)
        for kind in kinds:
            self._cache(kind).wait_until_synced(self.sync_timeout)
        for kind in _also_read(runtime_id.kind):
            self._best_effort(functools.partial(self._cache(kind).wait_until_synced, self.sync_timeout))
        with self.changed:
            if key in self._watched:
                return False
            record = self.recorded.get(runtime_id)
            watched = _Watched(
                runtime_id=runtime_id, state=replace(CREATED, uid=record.uid if record else "")
            )
            self._watched[key] = watched
            self._reached[key] = (runtime_id.kind, "created")
            for kind in kinds:
                self._ensure_subscribed(kind)
            self._index(watched, self._primary_keys(runtime_id))
            self._evaluate(key)
        return True

    def monitoring(self) -> frozenset[str]:
        with self.changed:
            return frozenset(self._watched)

    def subscriptions(self) -> frozenset[str]:
        """The kinds subscribed to (one informer subscription each, whatever the number of IDs)."""
        with self.changed:
            return frozenset(self._subscribed)

    def attach_all(
        self, namespaces: frozenset[str] | None = None, *, follow: bool = False
    ) -> list[RuntimeID]:
        """Restart recovery: follow every managed workload (label `gobrave-workload`) and every recorded
        one (`recorded`) in `namespaces` (None: the monitor's scope). Each snapshot re-reports what
        the workload reached, with stable ids; a workload that has already ended is reported and let go
        at once. With `follow`, workloads that appear or come back later are attached too."""
        with self.changed:  # subscribed before the scan, so nothing created meanwhile is missed
            self._follow = follow
            for kind in MANAGED_KINDS:
                self._ensure_subscribed(kind)
        found = {rid for rid in self.recorded if namespaces is None or rid.namespace in namespaces}
        for kind in MANAGED_KINDS:
            cache = self._cache(kind)
            cache.wait_until_synced(self.sync_timeout)
            found |= {
                rid for rid in _managed(cache.items()) if namespaces is None or rid.namespace in namespaces
            }
        return [rid for rid in sorted(found, key=str) if self.mark_if_not_monitoring(rid)]

    # --- progress ---------------------------------------------------------------------------------

    def phase(self, runtime_id: RuntimeID) -> Phase | None:
        with self.changed:
            reached = self._reached.get(str(runtime_id))
            return reached[1] if reached else None

    def failed(self) -> list[str]:
        with self.changed:
            return sorted(rid for rid, (_, phase) in self._reached.items() if phase == "failed")

    def all_steady(self) -> bool:
        with self.changed:
            return all(steady(kind, phase) for kind, phase in self._reached.values())

    def wait_until_steady(self, timeout: float | None, *, resync: float = 5.0) -> bool:
        """Block until every runtime ID registered so far is steady, or `timeout` seconds pass (None:
        forever); False on timeout. Every `resync` seconds each followed ID is looked at again (a
        level-based resync, which also raises the error of an informer that has failed since)."""
        deadline = None if timeout is None else self.clock.now() + timeout
        with self.changed:
            while not self.all_steady():
                left = None if deadline is None else deadline - self.clock.now()
                if left is not None and left <= 0:
                    return False
                self.changed.wait(resync if left is None else min(resync, left))
                self.resync()
        return True

    def follow_for(self, timeout: float | None, *, resync: float = 5.0) -> None:
        """Keep reporting for `timeout` seconds (None: until interrupted), resyncing as above."""
        deadline = None if timeout is None else self.clock.now() + timeout
        with self.changed:
            while deadline is None or self.clock.now() < deadline:
                left = None if deadline is None else deadline - self.clock.now()
                self.changed.wait(resync if left is None else max(0.0, min(resync, left)))
                self.resync()

    def resync(self) -> None:
        """Look at every followed runtime ID again."""
        with self.changed:
            for key in list(self._watched):
                self._evaluate(key)

    def stop(self) -> None:
        """Drop every subscription (the informers themselves belong to their owner)."""
        with self.changed:
            for unsubscribe in self._subscribed.values():
                unsubscribe()
            self._subscribed.clear()

    # --- internals --------------------------------------------------------------------------------

    def _cache(self, kind: KindInfo) -> KindCache:
        return self.caches.informer(kind, namespaces=self.namespaces)

    def _ensure_subscribed(self, kind: KindInfo) -> None:
        if kind.kind not in self._subscribed:
            self._subscribed[kind.kind] = self._cache(kind).subscribe(self._callback(kind))

    def _callback(self, kind: KindInfo) -> Callback:
        def on_change(_event_type: str, obj: Manifest) -> None:
            keys = {_object_key(kind, obj)}
            keys |= _starter_keys(kind, obj)
            with self.changed:
                for runtime_id in sorted({rid for key in keys for rid in self._by_key.get(key, ())}):
                    self._evaluate(runtime_id)
                follow = self._follow and kind in MANAGED_KINDS and _event_type != "DELETED"
            if follow:
                self._maybe_follow(obj)

        return on_change

    def _maybe_follow(self, obj: Manifest) -> None:
        runtime_id = managed_runtime_id(obj)
        if runtime_id is None or str(runtime_id) in self.monitoring():
            return
        if self.namespaces is not None and runtime_id.namespace not in self.namespaces:
            return
        if self._observe(runtime_id).end is None:
            self.mark_if_not_monitoring(runtime_id)

    def _primary_keys(self, runtime_id: RuntimeID) -> set[str]:
        ns, name = runtime_id.namespace, runtime_id.name
        if runtime_id.kind != workloads.SANDBOX:
            return {subscription_key(workloads.named(runtime_id.kind).api, ns, name)}
        return {
            subscription_key(POD, ns, name),
            subscription_key(PERSISTENT_VOLUME_CLAIM, ns, workspace_pvc_name(name)),
        }

    def _index(self, watched: _Watched, keys: Iterable[str]) -> None:
        rid = str(watched.runtime_id)
        for key in keys:
            watched.keys.add(key)
            self._by_key.setdefault(key, set()).add(rid)

    def _forget(self, key: str) -> None:
        watched = self._watched.pop(key)
        for subscription in watched.keys:
            followers = self._by_key.get(subscription, set())
            followers.discard(key)
            if not followers:
                self._by_key.pop(subscription, None)

    def _evaluate(self, key: str) -> None:
        watched = self._watched.get(key)
        if watched is None:
            return
        runs = _runs(watched.runtime_id)
        if runs is not None:
            self._advance_runs(watched, runs)
        seen = self._observe(watched.runtime_id, watched)
        watched.state, transitions = advance(watched.state, seen)
        for transition in transitions:
            self.sink.emit(self._event(watched.runtime_id, transition))
        self._reached[key] = (watched.runtime_id.kind, _phase(watched))
        if watched.state.terminal and not (runs is not None and not runs.leads and watched.runs):
            self._forget(key)  # a workload's own runs (a DaemonSet's pods) are followed until they go
        self.changed.notify_all()

    def _observe(self, runtime_id: RuntimeID, watched: _Watched | None = None) -> Observation:
        def lookup(kind: KindInfo, namespace: str, name: str) -> Manifest | None:
            return self._cache(kind).get(namespace, name)

        record = self.recorded.get(runtime_id)
        if record is not None and watched is not None and watched.state.uid not in ("", record.uid):
            record = None  # the record is of another Job than the one this monitor saw

        def pods_of(workload: Manifest) -> list[Manifest]:
            pods = self._best_effort(lambda: self._cache(POD).items())
            return selected_pods(workload, pods or [])

        hint = watched.rootfs if watched else None
        seen, rootfs = observe(runtime_id, lookup, rootfs_hint=hint, recorded=record, pods_of=pods_of)
        if watched is not None and rootfs is not None and rootfs != watched.rootfs:
            watched.rootfs = rootfs
            key = subscription_key(PERSISTENT_VOLUME_CLAIM, runtime_id.namespace, rootfs)
            self._index(watched, {key})
        return seen

    def _advance_runs(self, watched: _Watched, runs: Runs) -> None:
        """Each run of a scheduling workload (a Job its CronJob owns) through its own state machine,
        reported under the workload's runtime ID with the run's object; a run that is gone is let go."""
        rid = watched.runtime_id
        present = {
            str(metadata_of(job).get("name")): job
            for job in runs.of(rid.name, rid.namespace, self._cache(runs.api).items())
        }
        for name in [*watched.runs, *(name for name in present if name not in watched.runs)]:
            job = present.get(name)

            def pods(job: Manifest | None = job) -> list[Manifest]:
                found = self._best_effort(lambda: self._cache(POD).items())
                return selected_pods(job, found or []) if job is not None else []

            describe = f"{runs.word} {rid.namespace}/{name}"
            seen = workload_observation(runs.observe, job, describe=describe, pods=pods)
            state, transitions = advance(watched.runs.get(name, CREATED), seen)
            for transition in transitions:
                self.sink.emit(self._event(rid, transition, run=name))
            if job is None:
                watched.runs.pop(name, None)
            else:
                watched.runs[name] = state

    @staticmethod
    def _best_effort(read: Callable[[], T]) -> T | None:
        """A read that only adds detail (a failed Job's pods): without permission to list pods, the
        events come without the exit code rather than not at all."""
        try:
            return read()
        except PlannerError:
            return None

    def _event(
        self, runtime_id: RuntimeID, transition: Transition, *, run: str | None = None
    ) -> MonitorEvent:
        """The event of a transition; of a cronjob's `run`, the object is that run's Job."""
        kind = POD.kind.lower() if runtime_id.kind == workloads.SANDBOX else runtime_id.kind
        runs = _runs(runtime_id)
        name = runtime_id.name if run is None else run
        kind = kind if run is None or runs is None else runs.word
        failure = {"exit_code": transition.exit_code} if transition.type == "ContainerFailed" else {}
        return _EVENT_CLASSES[transition.type](
            time=transition.at if transition.at is not None else self.clock.now(),
            message=transition.message,
            object=f"{kind}/{runtime_id.namespace}/{name}",
            runtime_id=str(runtime_id),
            event_id=transition.event_id(str(runtime_id)),
            **failure,
        )


def _phase(watched: _Watched) -> Phase:
    """Where a runtime ID stands; a cronjob that still exists stands where its latest run does."""
    runs = _runs(watched.runtime_id)
    if runs is None or not runs.leads or watched.state.terminal:
        return watched.state.phase
    return list(watched.runs.values())[-1].phase if watched.runs else "created"


def _runs(runtime_id: RuntimeID) -> Runs | None:
    return None if runtime_id.kind == workloads.SANDBOX else workloads.named(runtime_id.kind).runs


def _starter_keys(kind: KindInfo, obj: Manifest) -> set[str]:
    """The subscription keys of the workloads whose run `obj` is (a Job's CronJob)."""
    namespace = str(metadata_of(obj).get("namespace") or "")
    return {
        subscription_key(starter.api, namespace, owner)
        for starter in _WITH_RUNS
        if starter.runs is not None
        and starter.runs.api == kind
        and (owner := starter.runs.owner(obj)) is not None
    }


def _managed(objects: Iterable[Manifest]) -> set[RuntimeID]:
    return {rid for obj in objects if (rid := managed_runtime_id(obj)) is not None}


Lookup = Callable[[KindInfo, str, str], Manifest | None]


def observe(
    runtime_id: RuntimeID,
    lookup: Lookup,
    *,
    rootfs_hint: str | None = None,
    recorded: RunRecord | None = None,
    pods_of: Callable[[Manifest], list[Manifest]] | None = None,
) -> tuple[Observation, str | None]:
    """What the workload's live objects (read through `lookup(kind, namespace, name)`) prove now, and,
    for a sandbox, the name of its rootfs PVC (from its Pod, else the Pod its workspace records, else
    `rootfs_hint`, the name seen before). A Job that is gone is judged by its run record, `recorded`;
    one that failed by its pods too (`pods_of(job)`), for its exit code."""
    ns, name = runtime_id.namespace, runtime_id.name
    if runtime_id.kind != workloads.SANDBOX:
        kind = workloads.named(runtime_id.kind)
        own = lookup(kind.api, ns, name)

        def pods() -> list[Manifest]:
            return pods_of(own) if pods_of is not None and own is not None else []

        describe = f"{kind.name} {ns}/{name}"
        seen = workload_observation(kind.observe, own, describe=describe, recorded=recorded, pods=pods)
        return seen, None
    pod = lookup(POD, ns, name)
    workspace = lookup(PERSISTENT_VOLUME_CLAIM, ns, workspace_pvc_name(name))
    rootfs_name = rootfs_claim(pod) or rootfs_claim(recorded_pod(workspace)) or rootfs_hint
    rootfs = lookup(PERSISTENT_VOLUME_CLAIM, ns, rootfs_name) if rootfs_name else None
    objects = SandboxObjects(pod=pod, workspace=workspace, rootfs=rootfs)
    return sandbox_observation(objects, describe=f"sandbox {ns}/{name}"), rootfs_name
