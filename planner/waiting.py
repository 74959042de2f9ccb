"""Waiting until an object is ready or gone: the executor's StatusSource for a real cluster, the
readiness rules over the informer caches, driven by watch events rather than polled.

A wait is a subscription, not a thread: `watch` files it under its object and returns at once. One
subscriber per informer hands each watch event to the waits on that object, so a wait is judged the
moment the event that makes its object ready (or gone) arrives, and `done` is called from the
informer's thread. Every event is judged as it arrives, so a state shorter than a wake-up still counts:
a Job that completes and is deleted by a short TTL at once ends its wait as complete rather than as
"not found" until the timeout. Measured on the embedded cluster when waits blocked on the informer's
condition instead of polling: 2 ms median from a write to the wait's end (40 ms worst of 12), against
200 ms median polling the same cache every 0.5 s; subscriptions keep that, without a thread per wait.

The rest, and why: docs/architecture.md ("Module notes", waiting.py).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from planner.errors import ApiError, PlannerError
from planner.execute import Answer, Cancel, Progress, Until, settled
from planner.kinds import PERSISTENT_VOLUME_CLAIM, KindInfo, by_kind
from planner.kube.client import KubeClient, resource_path
from planner.kube.discovery import Kinds, UnknownKindError
from planner.kube.informer import EventType, Informer, Informers, Subscriber
from planner.objects import Manifest, ObjectRef, annotations_of, metadata_of
from planner.wait.evidence import Evidence
from planner.wait.readiness import Readiness, ReadinessContext, readiness
from planner.wait.reasons import Reason, why_not_gone, why_not_ready
from planner.writes import WrittenVersions

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
UNREAD_CLASSES_EFFECT = (
    "a PersistentVolumeClaim waiting for its first consumer cannot be told from one that is not "
    "binding, so waits for such claims last until they are Bound or time out"
)
REPORT_INTERVAL = 10.0
CACHE_BEHIND = "waiting for the cache to see planner's write"
log = logging.getLogger(__name__)

_Key = tuple[Informer, str, str]  # the informer, the namespace ("" when cluster-scoped), the name


@dataclass(frozen=True)
class _StorageClasses:
    group: str = "storage.k8s.io"
    version: str = "v1"
    plural: str = "storageclasses"
    namespaced: bool = False


@dataclass(frozen=True, kw_only=True)
class StorageClasses:
    """Binding mode by StorageClass name and the default class; `unread` says why they could not be
    listed (then both are empty, and no claim is known to wait for its first consumer)."""

    modes: Mapping[str, str]
    default: str | None = None
    unread: str | None = None


def storage_classes(client: KubeClient) -> StorageClasses:
    """The cluster's StorageClasses, or why they could not be listed (a 403 without the permission)."""
    try:
        listed = client.request("GET", resource_path(_StorageClasses()), verb="list").get("items", [])
    except ApiError as error:
        return StorageClasses(modes={}, unread=f"cannot list storageclasses: {error}")
    modes = {str(metadata_of(c)["name"]): str(c.get("volumeBindingMode") or "Immediate") for c in listed}
    default = next(
        (
            str(metadata_of(c)["name"])
            for c in listed
            if annotations_of(c).get(DEFAULT_CLASS_ANNOTATION) == "true"
        ),
        None,
    )
    return StorageClasses(modes=modes, default=default)


def report_due(
    reason: Reason | None,
    *,
    reported: str | None,
    reported_at: float | None,
    started: float,
    now: float,
    interval: float,
) -> bool:
    """Whether a pending wait's reason is news to report now: it differs from the last one reported,
    no report was made in the last `interval` seconds, and it is a problem or the wait has lasted
    `interval` (a step under way is not news before that)."""
    if reason is None or reason.text == reported:
        return False
    if not reason.problem and now - started < interval:
        return False
    return reported_at is None or now - reported_at >= interval


def _newer_or_equal(cached: str, written: str) -> bool:
    try:
        return int(cached) >= int(written)
    except ValueError:  # resourceVersions are opaque on some servers: trust the cache then
        return True


@dataclass(eq=False, kw_only=True)
class _Wait:
    ref: ObjectRef
    until: Until
    timeout: float
    deadline: float  # time.monotonic(); math.inf for none
    done: Callable[[Answer], None]
    progress: Progress | None
    informer: Informer
    started: float  # time.monotonic()
    ended: bool = field(default=False)
    reported: str | None = None  # the last reason `progress` heard, and when
    reported_at: float | None = None

    @property
    def key(self) -> _Key:
        return (self.informer, self.ref.namespace or "", self.ref.name)


def _known_kind(kind: str) -> KindInfo | None:
    try:
        return by_kind(kind)
    except KeyError:
        return None


class CacheStatusSource:
    """`execute.StatusSource` over `Informers`. `scopes` maps each kind that will be waited on to its
    namespaces (None: all); `start()` starts those informers so they sync while the first writes run;
    `close()` ends every pending wait without an answer and stops listening to the informers.
    `evidence` (the pods and Events of the waits' namespaces) explains verdicts; without it a reason
    comes from the object alone."""

    def __init__(
        self,
        client: KubeClient,
        informers: Informers,
        *,
        scopes: Mapping[str, frozenset[str] | None],
        written: WrittenVersions,
        evidence: Evidence | None = None,
        recheck: float = 1.0,
        report_interval: float = REPORT_INTERVAL,
    ) -> None:
        self.client, self.informers, self.written = client, informers, written
        self.kinds = Kinds(client)
        self.scopes = scopes
        self.evidence = evidence
        self.recheck = recheck
        self.report_interval = report_interval
        self._classes: StorageClasses | None = None
        self._classes_lock = threading.Lock()
        self._lock = threading.Lock()  # guards the waits, the subscriptions and the ticker
        self._tick = threading.Condition(self._lock)
        self._waits: dict[_Key, list[_Wait]] = {}
        self._unsubscribe: dict[Informer, Callable[[], None]] = {}
        self._ticker: threading.Thread | None = None
        self._next_tick = 0.0

    def start(self) -> CacheStatusSource:
        for kind, namespaces in self.scopes.items():
            if (info := _known_kind(kind)) is not None:  # another kind's informer starts at its first wait
                self.informers.informer(info, namespaces=namespaces)
        return self

    def close(self) -> None:
        with self._lock:
            pending = [wait for waits in self._waits.values() for wait in waits]
        for wait in pending:
            self._end(wait, None)
        with self._lock:
            unsubscribes, self._unsubscribe = list(self._unsubscribe.values()), {}
        for unsubscribe in unsubscribes:
            unsubscribe()

    def context(self, now: float, *, claim: bool) -> ReadinessContext:
        """What verdicts depend on besides the object; the StorageClasses (listed at the first wait on a
        claim, once) only when it is for a `claim`, the only kind whose verdict reads them."""
        if not claim:
            return ReadinessContext(now=now)
        with self._classes_lock:
            if self._classes is None:
                self._classes = storage_classes(self.client)
                if self._classes.unread:
                    log.warning("warning: %s; %s", self._classes.unread, UNREAD_CLASSES_EFFECT)
            classes = self._classes
        return ReadinessContext(
            now=now,
            binding_modes=classes.modes,
            default_storage_class=classes.default,
            storage_classes_unread=classes.unread,
        )

    def informer(self, ref: ObjectRef) -> Informer:
        namespaces = self.scopes.get(ref.kind, frozenset({ref.namespace}) if ref.namespace else None)
        kind = self.kinds.of_group_kind(ref.group_kind)
        if kind is None:
            raise UnknownKindError(f"{ref.described}: the cluster serves no kind {ref.group_kind} to wait on")
        return self.informers.informer(kind, namespaces=namespaces)

    # --- waits ---

    def watch(
        self,
        ref: ObjectRef,
        *,
        until: Until,
        timeout: float,
        done: Callable[[Answer], None],
        progress: Progress | None = None,
    ) -> Cancel:
        informer = self.informer(ref)
        now = time.monotonic()
        wait = _Wait(
            ref=ref,
            until=until,
            timeout=timeout,
            deadline=now + timeout,
            done=done,
            progress=progress,
            informer=informer,
            started=now,
        )
        with self._lock:
            if informer not in self._unsubscribe:
                self._unsubscribe[informer] = informer.subscribe(self._dispatcher(informer))
            self._waits.setdefault(wait.key, []).append(wait)
            self._tick_by(wait.deadline)
        informer.when_synced(lambda: self._judge_cached(wait, due=False))
        return lambda: self._end(wait, None)

    def _dispatcher(self, informer: Informer) -> Subscriber:
        def dispatch(kind: EventType, obj: Manifest) -> None:
            metadata = metadata_of(obj)
            key = (informer, str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
            with self._lock:
                waits = list(self._waits.get(key, ()))
            for wait in waits:
                verdict, reason = self.judged(wait.ref, None if kind == "DELETED" else obj, until=wait.until)
                if settled(verdict, wait.until):
                    self._end(wait, verdict)
                else:
                    self._report(wait, verdict, reason)

        return dispatch

    def _judge_cached(self, wait: _Wait, *, due: bool) -> None:
        """Judge the cached copy; end the wait when that settles it, or when it is `due` anyway."""
        informer = wait.informer
        try:
            failure = informer.sync_failure(waited=wait.timeout)
            if failure is not None:
                if due or informer.failed:
                    self._end(wait, failure)
                return
            cached = informer.get(wait.ref.namespace, wait.ref.name)
            verdict, reason = self.judged(wait.ref, cached, until=wait.until)
        except PlannerError as error:
            self._end(wait, error)
            return
        if due or settled(verdict, wait.until):
            self._end(wait, verdict)
        else:
            self._report(wait, verdict, reason)

    def _report(self, wait: _Wait, verdict: Readiness, reason: Reason | None) -> None:
        """Tell the wait's `progress` a reason that is news (`report_due`), once."""
        now = time.monotonic()
        with self._lock:
            if wait.ended or wait.progress is None or reason is None:
                return
            due = report_due(
                reason,
                reported=wait.reported,
                reported_at=wait.reported_at,
                started=wait.started,
                now=now,
                interval=self.report_interval,
            )
            if not due:
                return
            wait.reported, wait.reported_at = reason.text, now
        wait.progress(verdict)

    def _end(self, wait: _Wait, answer: Answer | None) -> None:
        """Take the wait off the books and answer it (None: cancelled), once."""
        with self._lock:
            if wait.ended:
                return
            wait.ended = True
            waits = self._waits[wait.key]
            waits.remove(wait)
            if not waits:
                del self._waits[wait.key]
            if not self._waits:
                self._tick.notify()  # the ticker ends now rather than at its next tick
        if answer is not None:
            wait.done(answer)

    def verdict(self, ref: ObjectRef, cached: Manifest | None) -> Readiness:
        written = self.written.get(ref)
        if written is not None and cached is not None:
            version = str(metadata_of(cached).get("resourceVersion") or "")
            if not _newer_or_equal(version, written):
                return Readiness(status="InProgress", message=CACHE_BEHIND)
        return readiness(cached, self.context(time.time(), claim=ref.kind == PERSISTENT_VOLUME_CLAIM.kind))

    def judged(
        self, ref: ObjectRef, cached: Manifest | None, *, until: Until
    ) -> tuple[Readiness, Reason | None]:
        """The verdict, with why the object is not ready (or not gone) yet when that is known."""
        verdict = self.verdict(ref, cached)
        finished = "NotFound" if until == "gone" else "Current"
        if cached is None or verdict.status == finished or verdict.message == CACHE_BEHIND:
            return verdict, None
        reason = self.explain(cached, until=until)
        return (verdict if reason is None else dataclasses.replace(verdict, reason=reason.text)), reason

    def explain(self, obj: Manifest, *, until: Until) -> Reason | None:
        if until == "gone":
            return why_not_gone(obj)
        if self.evidence is None:
            return why_not_ready(obj)
        pods = self.evidence.pods_of(obj)
        return why_not_ready(obj, pods=pods, events=self.evidence.events_about([obj, *pods]))

    # --- the ticker: timeouts and time-dependent verdicts ---

    def _tick_by(self, deadline: float) -> None:
        """With the lock held: make sure the ticker runs, and wakes no later than `deadline`."""
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick_loop, name="planner-waits", daemon=True)
            self._next_tick = time.monotonic() + self.recheck
            self._ticker.start()
        elif deadline < self._next_tick:
            self._tick.notify()

    def _tick_loop(self) -> None:
        recheck_at = time.monotonic() + self.recheck
        while True:
            with self._lock:
                pending = [wait for waits in self._waits.values() for wait in waits]
                if not pending:
                    self._ticker = None
                    return
                now = time.monotonic()
                self._next_tick = min(recheck_at, *(wait.deadline for wait in pending))
                if now < self._next_tick:
                    self._tick.wait(self._next_tick - now)
                    continue
            rechecking = now >= recheck_at
            if rechecking:
                recheck_at = now + self.recheck
            for wait in pending:
                if rechecking or wait.deadline <= now:
                    self._judge_cached(wait, due=wait.deadline <= now)


__all__ = ["REPORT_INTERVAL", "CacheStatusSource", "StorageClasses", "report_due", "storage_classes"]
