"""The pods and Events a wait's reason is read from, kept from the Pod and Event informers.

`planner.wait.reasons` explains a wait from the object's pods and the Events about them. Reading those per
wait would cost a request per object per look; instead `Evidence` subscribes to the Pod informer and
two Event informers for the namespaces the waits are in (`Informers` keeps one per kind and field
selector per process, so `apply --watch`'s monitor shares the Pod one) and keeps two small indexes
current from their events: pods by label (a Deployment's or Job's selector then reads a handful of pods,
not the namespace) and Events by the object they are about. Requests stay O(kinds × namespaces),
whatever the number of waits.

The Event informers watch only what reasons read (`EVENT_SELECTORS`): every Warning, and every Event
about a claim, whose provisioning news comes as Normal Events too. The Normal Events of each pod's start
(Scheduled, Pulling, Pulled, Created, Started) and of each rollout are most of a cluster's Events and
say nothing a reason uses; a controller watching every namespace decoded them all.

Reasons are a help, never a condition of a wait: an informer that cannot list (a 403 on Events, say)
leaves its index empty, and a warning says once what the reasons then leave out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from planner.errors import PlannerError
from planner.kinds import EVENT, POD, KindInfo
from planner.kube.informer import EventType, Informer, Informers
from planner.objects import Manifest, labels_of, metadata_of
from planner.wait.reasons import pods_of, selects_pods

log = logging.getLogger(__name__)

EVENT_SELECTORS = ("type=Warning", "involvedObject.kind=PersistentVolumeClaim")

_Key = tuple[str, str]  # (namespace, name)
_LabelKey = tuple[str, str, str]  # (namespace, label, value)
_ObjectKey = tuple[str, str, str]  # (namespace, kind, name) of the object an Event is about


def _key(obj: Manifest) -> _Key:
    metadata = metadata_of(obj)
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def _about(event: Manifest) -> _ObjectKey:
    involved = event.get("involvedObject") or {}
    namespace = involved.get("namespace") or metadata_of(event).get("namespace") or ""
    return (str(namespace), str(involved.get("kind") or ""), str(involved.get("name") or ""))


class _Index:
    """Objects by (namespace, name), and their keys under every term `terms` gives them."""

    def __init__(self, terms: Callable[[Manifest], Iterable[tuple[str, str, str]]]) -> None:
        self.terms = terms
        self.objects: dict[_Key, Manifest] = {}
        self.by_term: dict[tuple[str, str, str], set[_Key]] = {}

    def put(self, obj: Manifest) -> None:
        self.drop(obj)
        key = _key(obj)
        self.objects[key] = obj
        for term in self.terms(obj):
            self.by_term.setdefault(term, set()).add(key)

    def drop(self, obj: Manifest) -> None:
        key = _key(obj)
        old = self.objects.pop(key, None)
        for term in self.terms(old) if old is not None else ():
            keys = self.by_term.get(term, set())
            keys.discard(key)
            if not keys:
                self.by_term.pop(term, None)

    def under(self, term: tuple[str, str, str]) -> list[Manifest]:
        return [self.objects[key] for key in self.by_term.get(term, ())]


def _label_terms(pod: Manifest) -> list[_LabelKey]:
    namespace = str(metadata_of(pod).get("namespace") or "")
    return [(namespace, str(key), str(value)) for key, value in labels_of(pod).items()]


class Evidence:
    """Pods by label and Events by object, for `namespaces`, from the shared informers. Thread-safe;
    `start()` subscribes, `close()` stops listening (the informers stay the caller's)."""

    def __init__(self, informers: Informers, *, namespaces: frozenset[str]) -> None:
        self.informers, self.namespaces = informers, namespaces
        self._lock = threading.Lock()
        self._pods = _Index(_label_terms)
        self._events = _Index(lambda event: [_about(event)])
        self._unsubscribe: list[Callable[[], None]] = []
        self._unreadable: set[str] = set()  # the kinds a warning has named already

    def start(self) -> Evidence:
        sources = [(POD, self._pods, ""), *((EVENT, self._events, s) for s in EVENT_SELECTORS)]
        for kind, index, selector in sources:
            informer = self.informers.informer(kind, namespaces=self.namespaces, field_selector=selector)
            self._unsubscribe.append(informer.subscribe(self._follower(index)))
            informer.when_synced(self._seeder(informer, index, kind))
        return self

    def close(self) -> None:
        unsubscribes, self._unsubscribe = self._unsubscribe, []
        for unsubscribe in unsubscribes:
            unsubscribe()

    def _follower(self, index: _Index) -> Callable[[EventType, Manifest], None]:
        def follow(kind: EventType, obj: Manifest) -> None:
            if _key(obj)[0] not in self.namespaces:  # a controller's informers see every namespace
                return
            with self._lock:
                (index.drop if kind == "DELETED" else index.put)(obj)

        return follow

    def _seeder(self, informer: Informer, index: _Index, kind: KindInfo) -> Callable[[], None]:
        def seed() -> None:
            try:
                items = informer.items(self.namespaces)
            except PlannerError as error:
                if not self._newly_unreadable(kind):
                    return  # the other Event informer's warning said it
                log.warning(
                    "warning: cannot read %s for wait reasons: %s; reasons leave out what they say",
                    kind.plural,
                    error,
                )
                return
            with self._lock:
                for obj in items:
                    index.put(obj)

        return seed

    def _newly_unreadable(self, kind: KindInfo) -> bool:
        with self._lock:
            known = kind.plural in self._unreadable
            self._unreadable.add(kind.plural)
        return not known

    # --- reads ---

    def pods_of(self, workload: Manifest) -> list[Manifest]:
        """The pods a workload's pod template made: those its selector's first label selects, then the
        whole selector (a Deployment, StatefulSet, DaemonSet or Job; nothing for any other object)."""
        if not selects_pods(workload):
            return []
        match: dict[str, Any] = ((workload.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        if not match:
            return []
        namespace = str(metadata_of(workload).get("namespace") or "")
        label, value = next(iter(sorted(match.items())))
        with self._lock:
            candidates = self._pods.under((namespace, str(label), str(value)))
        return pods_of(workload, candidates)

    def events_about(self, objects: Iterable[Manifest]) -> list[Manifest]:
        """The Events about these objects (by kind, namespace and name; `reasons` checks uids)."""
        with self._lock:
            return [
                event
                for obj in objects
                for event in self._events.under(
                    (str(metadata_of(obj).get("namespace") or ""), str(obj.get("kind") or ""), _key(obj)[1])
                )
            ]


__all__ = ["Evidence"]
