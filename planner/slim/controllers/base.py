"""What every controller needs from the API core: typed shortcuts, tolerant writes, owner references.

Controllers write through `Api` with their own field manager, exactly as HTTP clients do. A write
that loses a race (409) or whose object vanished (404) is dropped: the next pass sees the new state
and decides again. Events are recorded once per (object, reason, message) with a count, as the
kubelet's and controllers' event recorders aggregate them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from planner.slim import status_errors
from planner.slim.api import Api, DeleteOptions, WriteOptions
from planner.slim.meta import now_rfc3339
from planner.slim.patch import APPLY_PATCH
from planner.slim.reconcilers import CONTROLLERS, Key, Scale
from planner.slim.resources import ResourceType, by_kind
from planner.slim.store import Store, WatchEvent
from planner.slim.verbhelpers import resource_key

log = logging.getLogger(__name__)
Obj = dict[str, Any]
CONTROLLER_MANAGER = "kube-controller-manager"
TOLERATED = (404, 409)
REPEAT_SECONDS = 10.0
# Pods a controller creates or deletes for one object in one sync, as kube-controller-manager's
# `burstReplicas`: a set of a billion replicas makes 500 a sync rather than holding the server.
BURST_PODS = 500
MAX_REMEMBERED_EVENTS = 20_000


Kind = str | ResourceType  # a built-in kind's name, or the type itself (a custom kind)


def rt(kind: Kind) -> ResourceType:
    return kind if isinstance(kind, ResourceType) else by_kind(kind)


def key(kind: str) -> str:
    return resource_key(by_kind(kind))


def ns_of(obj: Obj) -> str:
    return str(obj["metadata"].get("namespace", ""))


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def uid_of(obj: Obj) -> str:
    return str(obj["metadata"].get("uid", ""))


def deleting(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def controller_of(obj: Obj) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def controller_keys(event: WatchEvent, kind: str) -> list[Key]:
    """The keys of the `kind` objects controlling the event's object, before and after the change
    (a pod moving from one owner to another dirties both)."""
    found: list[Key] = []
    for obj in event_states(event):
        for ref in obj["metadata"].get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == kind:
                owner = Key(key(kind), event.namespace, str(ref.get("name")))
                if owner not in found:
                    found.append(owner)
    return found


def owner_keys(event: WatchEvent, kind: str) -> list[Key]:
    """A `kind` object's event dirties that object; any other event the `kind` objects controlling the
    event's object (a Pod event → its ReplicaSet)."""
    if event.resource == key(kind):
        return [own_key(event)]
    return controller_keys(event, kind)


def typed(kind: str, obj: Obj) -> Obj:
    """`obj` with its kind and (stored) apiVersion, as an Event's involved object names them."""
    return {"kind": kind, "apiVersion": by_kind(kind).group_version, **obj}


def event_states(event: WatchEvent) -> list[Obj]:
    """The object after the change and, for updates and deletes, before it."""
    return [event.obj] if event.old is None else [event.obj, event.old]


def own_key(event: WatchEvent) -> Key:
    return Key(event.resource, event.namespace, event.name)


def keys_of(store: Store, resource: str) -> list[Key]:
    return [Key(resource, ns_of(obj), name_of(obj)) for obj in store.list(resource, None)]


class Index:
    """Keys of stored objects grouped by values derived from each object (its controller's uid, its
    labels…), kept current from watch events, so one sync reads a handful of objects instead of
    listing the store. Readers re-check what they fetch: the index may trail the store within a pass
    (the pass's own writes are observed after it), never across passes."""

    def __init__(self, values: Callable[[Obj], Iterable[str]]) -> None:
        self._values = values
        self._keys: dict[str, set[Key]] = {}

    def rebuild(self, store: Store, resources: Iterable[str]) -> None:
        self._keys = {}
        for resource in resources:
            for obj in store.list(resource, None):
                self._add(Key(resource, ns_of(obj), name_of(obj)), obj)

    def observe(self, event: WatchEvent) -> None:
        key_ = own_key(event)
        if event.old is not None:
            self._remove(key_, event.old)
        if event.type == "DELETED":
            self._remove(key_, event.obj)
        else:
            self._add(key_, event.obj)

    def keys(self, value: str) -> list[Key]:
        return sorted(self._keys.get(value, ()))

    def size(self, value: str) -> int:
        return len(self._keys.get(value, ()))

    def _add(self, key_: Key, obj: Obj) -> None:
        for value in self._values(obj):
            self._keys.setdefault(value, set()).add(key_)

    def _remove(self, key_: Key, obj: Obj) -> None:
        for value in self._values(obj):
            keys = self._keys.get(value)
            if keys is not None:
                keys.discard(key_)
                if not keys:
                    del self._keys[value]


def controller_values(obj: Obj) -> list[str]:
    """For an Index by controlling owner."""
    owner = controller_of(obj)
    return [owner] if owner else []


def owned(store: Store, index: Index, owner: Obj) -> list[Obj]:
    """The stored objects `owner` controls, in the store's order, from an Index by controller."""
    uid = uid_of(owner)
    found = (store.get(*k) for k in index.keys(uid))
    return [obj for obj in found if obj is not None and controller_of(obj) == uid]


class Controlled:
    """The objects of some kinds that each owner controls, indexed by controller uid from watch events."""

    def __init__(self, store: Store, kinds: Iterable[str]) -> None:
        self.store = store
        self._indexes = {key(kind): Index(controller_values) for kind in kinds}

    def observe(self, event: WatchEvent) -> None:
        index = self._indexes.get(event.resource)
        if index is not None:
            index.observe(event)

    def rebuild(self) -> None:
        for resource, index in self._indexes.items():
            index.rebuild(self.store, [resource])

    def of(self, kind: str, owner: Obj) -> list[Obj]:
        """The `kind` objects `owner` controls, in the store's order."""
        return owned(self.store, self._indexes[key(kind)], owner)


class KindController:
    """The shape kube-controller-manager's workload controllers share: it syncs the objects of `kind`,
    each controlling objects of the kinds in `controls` (found through `controlled`); an event of one
    of its own objects dirties that object, an event of a controlled one its controller. Subclasses
    write `reconcile`; a deleting object is synced only where `syncs_deleting` says so."""

    component: str = CONTROLLERS
    min_interval: float = 0.0
    kind: ClassVar[str]
    controls: ClassVar[tuple[str, ...]]
    syncs_deleting: ClassVar[bool] = False
    recorder: ClassVar[str]  # the source component of its Events (`deployment-controller`)

    def __init__(self, api: Api, scale: Scale) -> None:
        self.api = api
        self.scale = scale
        self.writer = Writer(api, CONTROLLER_MANAGER)
        self.controlled = Controlled(api.store, self.controls)
        self.watches: tuple[str, ...] = (key(self.kind), *(key(kind) for kind in self.controls))

    def observe(self, event: WatchEvent) -> list[Key]:
        self.controlled.observe(event)
        return owner_keys(event, self.kind)

    def resync(self) -> list[Key]:
        self.controlled.rebuild()
        return keys_of(self.api.store, key(self.kind))

    def sync(self, object_key: Key, now: float) -> float | None:
        obj = self.api.store.get(*object_key)
        if obj is None or (deleting(obj) and not self.syncs_deleting):
            return None
        return self.reconcile(obj, now)

    def reconcile(self, obj: Obj, now: float) -> float | None:
        """Bring one stored object's controlled objects and status in line; when to look again."""
        raise NotImplementedError

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        """An Event about one of its objects, from its recorder."""
        self.writer.event(typed(self.kind, obj), event_type, reason, message, component=self.recorder)

    def create_pod(self, owner: Obj, pod: Obj) -> str | None:
        """Create a pod for `owner`, recording `Created pod: <name>`, or `Error creating: <why>` when the
        API refuses it; the API's message then (None when created)."""
        try:
            created = self.api.create(rt("Pod"), ns_of(owner), pod, self.writer.options)
        except status_errors.StatusError as exc:
            message = str(exc.body.get("message", ""))
            self.event(owner, "Warning", "FailedCreate", f"Error creating: {message}")
            return message
        self.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {name_of(created)}")
        return None


def from_template(owner: Obj, owner_kind: str, template: Obj, kind: str, **metadata: Any) -> Obj:
    """An object of `kind` made from a pod or job template, as the controllers make them: a copy of the
    template's metadata without its creationTimestamp, `metadata` merged in, then `owner` (of
    `owner_kind`) as its controller; its spec is the template's."""
    copied = copy.deepcopy(template)
    meta = copied.get("metadata") or {}
    meta.pop("creationTimestamp", None)
    meta |= metadata
    meta["ownerReferences"] = [owner_reference(owner, owner_kind, by_kind(owner_kind).group_version)]
    return {
        "apiVersion": by_kind(kind).group_version,
        "kind": kind,
        "metadata": meta,
        "spec": copied.get("spec") or {},
    }


def owner_reference(owner: Obj, kind: str, api_version: str) -> Obj:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name_of(owner),
        "uid": uid_of(owner),
        "controller": True,
        "blockOwnerDeletion": True,
    }


class Writer:
    """Writes for one component, with its field manager; races are logged and left to the next pass."""

    def __init__(self, api: Api, manager: str) -> None:
        self.api = api
        self.options = WriteOptions(field_manager=manager)
        self.manager = manager
        self._events: dict[tuple[str, str, str], str] = {}
        self._last_emitted: dict[tuple[str, str, str], float] = {}

    def create(self, kind: Kind, namespace: str, body: Obj) -> Obj | None:
        return self._tolerant(lambda: self.api.create(rt(kind), namespace, body, self.options))

    def update(self, kind: Kind, obj: Obj) -> Obj | None:
        return self._tolerant(lambda: self.api.update(rt(kind), ns_of(obj), name_of(obj), obj, self.options))

    def apply(self, kind: str, namespace: str, name: str, body: Obj) -> Obj | None:
        """Server-side apply of `body` (forced: a controller owns what it applies)."""
        options = WriteOptions(field_manager=self.manager, force=True)
        raw = json.dumps(body).encode()  # JSON is YAML
        return self._tolerant(
            lambda: self.api.patch_or_create(rt(kind), namespace, name, raw, APPLY_PATCH, options)[0]
        )

    def write_status(
        self, kind: str, obj: Obj, status: Obj, *, annotations: dict[str, str] | None = None
    ) -> Obj | None:
        """Write `status` (and, for kinds whose /status takes them, `annotations`) when they differ."""
        current = obj["metadata"].get("annotations") or {}
        merged = {**current, **(annotations or {})}
        if obj.get("status") == status and merged == current:
            return obj
        # Only what /status reads: the rest of the object (and managedFields, which an Update's status
        # write takes from the stored object) would be decoded for nothing.
        body: Obj = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
        metadata = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        body |= {"metadata": metadata | {"annotations": merged}, "status": status}
        return self._tolerant(
            lambda: self.api.update(
                rt(kind), ns_of(obj), name_of(obj), body, self.options, subresource="status"
            )
        )

    def delete(self, kind: Kind, obj: Obj, *, policy: str | None = None, grace: int | None = None) -> None:
        options = DeleteOptions(
            propagation_policy=policy, grace_period_seconds=grace, precondition_uid=uid_of(obj) or None
        )
        self._tolerant(lambda: self.api.delete(rt(kind), ns_of(obj), name_of(obj), options))

    def remove_finalizer(self, kind: Kind, obj: Obj, finalizer: str) -> Obj | None:
        finalizers = list(obj["metadata"].get("finalizers") or [])
        if finalizer not in finalizers:
            return obj
        updated = copy.deepcopy(obj)
        updated["metadata"]["finalizers"] = [f for f in finalizers if f != finalizer]
        return self.update(kind, updated)

    def finalize_namespace(self, name: str) -> Obj | None:
        return self._tolerant(lambda: self.api.finalize_namespace(name, self.options))

    def _tolerant(self, call: Any) -> Obj | None:
        """Run one write; a rejected write is logged and dropped so one object never stalls the pass."""
        try:
            result: Obj = call()
            return result
        except status_errors.StatusError as exc:
            level = logging.DEBUG if exc.code in TOLERATED else logging.WARNING
            log.log(level, "%s: write dropped (%s): %s", self.manager, exc.code, exc.body.get("message"))
            return None

    def _forget_oldest(self) -> None:
        """Bound the aggregation memory: the oldest keys go first (a repeat then starts a new Event)."""
        while len(self._events) > MAX_REMEMBERED_EVENTS:
            oldest = next(iter(self._events))
            del self._events[oldest]
            self._last_emitted.pop(oldest, None)

    def _repeat(self, namespace: str, name: str) -> None:
        stored = self.api.store.get(key("Event"), namespace, name)
        if stored is None:
            return
        repeated = copy.deepcopy(stored)
        repeated["count"] = int(repeated.get("count") or 1) + 1
        repeated["lastTimestamp"] = now_rfc3339()
        self.update("Event", repeated)

    def event(
        self,
        involved: Obj,
        event_type: str,
        reason: str,
        message: str,
        *,
        component: str = "",
        repeat_after: float = REPEAT_SECONDS,
    ) -> None:
        """An Event for `involved`; calling again with the same reason and message raises its count
        and lastTimestamp (as the recorders' aggregation does) at most once per `repeat_after`
        seconds, so a condition re-checked on every pass counts up slowly, like a kubelet sync."""
        namespace = ns_of(involved) or "default"
        dedupe = (uid_of(involved), reason, message)
        if dedupe in self._events:
            if time.monotonic() - self._last_emitted.get(dedupe, 0.0) >= repeat_after:
                self._last_emitted[dedupe] = time.monotonic()
                self._repeat(namespace, self._events[dedupe])
            return
        self._last_emitted[dedupe] = time.monotonic()
        digest = hashlib.sha256("/".join(dedupe).encode()).hexdigest()[:16]
        name = f"{name_of(involved)}.{digest}"
        self._events[dedupe] = name
        self._forget_oldest()
        stamp = now_rfc3339()
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "kind": involved.get("kind"),
                "namespace": ns_of(involved) or None,
                "name": name_of(involved),
                "uid": uid_of(involved),
                "apiVersion": involved.get("apiVersion"),
                "resourceVersion": involved["metadata"].get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "source": {"component": component or self.manager},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": event_type,
            "eventTime": None,
            "reportingComponent": component or self.manager,
            "reportingInstance": "",
        }
        try:
            self.api.create(rt("Event"), namespace, body, self.options)
        except status_errors.StatusError as exc:
            log.debug("event %s not recorded: %s", reason, exc.code)
