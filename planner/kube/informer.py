"""A local, watch-fed cache of one kind: what `apply` waits on and the monitor subscribes to.

Reading a cluster object by object while waiting costs a request per object per poll; an informer costs
one LIST and then one long WATCH per kind, whatever the number of objects. The loop is kopf's (and
client-go's reflector's):

The rest of the rules, and why: docs/architecture.md ("Module notes", kube/informer.py).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import urllib3

from planner import jsonwire
from planner.errors import ApiError, CacheSyncError, GoneError, PlannerError, UnreachableError, api_error
from planner.kinds import KindInfo
from planner.kube.client import KubeClient, exponential_backoff, resource_path
from planner.objects import Manifest, metadata_of

log = logging.getLogger(__name__)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Subscriber = Callable[[EventType, Manifest], None]
Key = tuple[str, str]  # (namespace, or "" for a cluster-scoped object; name)

PAGE_SIZE = 500
HEALING_STATUS = frozenset({408, 410, 429})


@dataclass(frozen=True, kw_only=True)
class InformerOptions:
    """`watch_timeout` is the server-side `timeoutSeconds` of each watch request; a stream silent for
    `read_slack` seconds longer than that is given up and resumed. `backoff(attempt)` is the pause
    before relisting after the attempt-th consecutive failure. `on_failure` hears, once, why an informer
    failed for good (a controller logs it)."""

    backoff: Callable[[int], float] = exponential_backoff
    watch_timeout: float = 300.0
    read_slack: float = 30.0
    page_size: int = PAGE_SIZE
    on_failure: Callable[[str], None] | None = None  # told once, when the informer fails for good


class _Expired(Exception):
    """The watch's resourceVersion is too old: relist."""


def _key(obj: Mapping[str, Any]) -> Key:
    metadata = metadata_of(obj)
    return (str(metadata.get("namespace") or ""), str(metadata.get("name", "")))


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str(metadata_of(obj).get("resourceVersion") or "")


def _permanent(error: ApiError) -> bool:
    return error.http_status < 500 and error.http_status not in HEALING_STATUS


class Informer:
    """The cache of one kind in a set of namespaces (None: all), fed by one LIST+WATCH loop."""

    def __init__(
        self,
        client: KubeClient,
        kind: KindInfo,
        *,
        namespaces: frozenset[str] | None = None,
        label_selector: str = "",
        field_selector: str = "",
        options: InformerOptions | None = None,
    ) -> None:
        self.client, self.kind = client, kind
        self.namespaces = namespaces if kind.namespaced else None
        self.label_selector, self.field_selector = label_selector, field_selector
        self.options = options or InformerOptions()
        self.changed = threading.Condition(threading.RLock())
        self._objects: dict[str, dict[str, Manifest]] = {}  # by namespace ("" if none), then name
        self._subscribers: list[Subscriber] = []
        self._raw_subscribers: list[Subscriber] = []  # theirs keep the managedFields (watch events only)
        self._on_sync: list[Callable[[], None]] = []
        self._synced = False
        self._failure: PlannerError | None = None
        self._last_error: Exception | None = None
        self._resource_version = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> Informer:
        if self._thread is None:
            name = f"informer-{self.kind.plural}"
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._thread.start()
        return self

    def stop(self, join: float = 0.5) -> None:
        self._stop.set()
        with self.changed:
            self.changed.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(join)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def wait_until_synced(self, timeout: float | None) -> None:
        """Block until the first LIST is in the cache; raise the informer's failure (403, 404, …), or
        CacheSyncError naming the last error when `timeout` seconds pass first."""
        limit = None if timeout is None or math.isinf(timeout) else max(0.0, timeout)
        with self.changed:
            self.changed.wait_for(lambda: self._synced or self._failure is not None or self.stopped, limit)
            failure = self.sync_failure(waited=math.inf if timeout is None else timeout)
        if failure is not None:
            raise failure

    def sync_failure(self, *, waited: float) -> PlannerError | None:
        """Why the cache cannot answer after `waited` seconds: its failure (403, 404, …), or that it
        has not synced yet, naming the last error; None once synced."""
        with self.changed:
            if self._failure is not None:
                return self._failure
            if self._synced:
                return None
            detail = f": {self._last_error}" if self._last_error else ""
            return CacheSyncError(f"{self.describe()} did not sync within {waited:g}s{detail}")

    def when_synced(self, callback: Callable[[], None]) -> None:
        """Call `callback` once the first LIST is in the cache or the informer has failed (reads then
        raise the failure): at once, on this thread, when that has happened already; otherwise later,
        on the informer's thread."""
        with self.changed:
            if not (self._synced or self._failure is not None):
                self._on_sync.append(callback)
                return
        callback()

    def describe(self) -> str:
        scope = "all namespaces" if self.namespaces is None else ", ".join(sorted(self.namespaces))
        if self.field_selector:
            scope += f"; {self.field_selector}"
        return (
            f"the {self.kind.plural} cache ({scope})"
            if self.kind.namespaced
            else f"the {self.kind.plural} cache"
        )

    # --- reads ---

    def get(self, namespace: str | None, name: str) -> Manifest | None:
        """The cached object, or None; raises the informer's failure rather than answer from nothing."""
        with self.changed:
            self._raise_failure()
            return self._objects.get(namespace or "", {}).get(name)

    def items(self, namespaces: Iterable[str] | None = None) -> list[Manifest]:
        """The cached objects; with `namespaces`, only theirs (without a scan of the others: a
        controller's cache holds every namespace's, a run asks for its own)."""
        with self.changed:
            self._raise_failure()
            spaces = self._objects.values() if namespaces is None else map(self._objects.get, namespaces)
            return [obj for space in spaces if space for obj in space.values()]

    @property
    def synced(self) -> bool:
        return self._synced

    @property
    def failed(self) -> bool:
        return self._failure is not None

    @property
    def failure(self) -> str | None:
        """Why the informer failed for good: the cache and the server's answer (None: it has not)."""
        return None if self._failure is None else str(self._failure)

    @property
    def resource_version(self) -> str:
        return self._resource_version

    def subscribe(
        self, subscriber: Subscriber, *, replay: bool = False, managed_fields: bool = False
    ) -> Callable[[], None]:
        """Call `subscriber(event type, object)` for every change from now on (from the informer's
        thread); returns the function that unsubscribes. With `replay`, as client-go's handlers, it
        first hears an ADDED for each object already cached (a cache that has not listed yet will
        announce its first list so): each object once, before any later change of it. With
        `managed_fields`, a watch event's object comes with its managedFields, which the cache drops
        (the controller's drift watch names who wrote a field); a list's objects come without."""
        with self.changed:
            if managed_fields:
                self._raw_subscribers.append(subscriber)
            else:
                self._subscribers.append(subscriber)
            if replay and self._synced and self._failure is None:
                for space in self._objects.values():
                    for obj in space.values():
                        subscriber("ADDED", obj)

        def unsubscribe() -> None:
            with self.changed:
                for subscribers in (self._subscribers, self._raw_subscribers):
                    if subscriber in subscribers:
                        subscribers.remove(subscriber)

        return unsubscribe

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    # --- the loop ---

    def _run(self) -> None:
        failures = 0
        must_list = True
        while not self.stopped:
            try:
                if must_list:
                    self._relist()
                    must_list, failures = False, 0
                self._watch()
            except _Expired:
                must_list = True
            except ApiError as error:
                if _permanent(error):
                    self._fail(error)
                    return
                must_list, failures = True, self._back_off(error, failures)
            except UnreachableError as error:
                if not self._synced:  # the client already retried: the server is not there
                    self._fail(error)
                    return
                must_list, failures = True, self._back_off(error, failures)
            except (PlannerError, urllib3.exceptions.HTTPError, OSError, ValueError) as error:
                must_list, failures = True, self._back_off(error, failures)

    def _back_off(self, error: Exception, failures: int) -> int:
        log.debug("%s: %s; relisting after a pause", self.describe(), error)
        self._last_error = error
        self._stop.wait(self.options.backoff(failures))
        return failures + 1

    def _fail(self, error: PlannerError) -> None:
        failure = CacheSyncError(f"{self.describe()}: {self._failure_reason(error)}")
        failure.__cause__ = error
        with self.changed:
            self._failure = failure
            self.changed.notify_all()
        if self.options.on_failure is not None:
            self.options.on_failure(f"{failure}: it is not retried")
        self._synced_now()

    def _failure_reason(self, error: PlannerError) -> str:
        """The server's answer with its status (`403 Forbidden: plans.planner.dev is forbidden: User …`);
        for a 404, that the kind is not served (a CRD not installed)."""
        if not isinstance(error, ApiError):
            return str(error)
        said = f"{error.http_status} {error.reason}".rstrip()
        if error.http_status == 404:
            served = f"{self.kind.plural}.{self.kind.group}" if self.kind.group else self.kind.plural
            return f"{said}: {error}: the API server does not serve {served}/{self.kind.version} (is its CRD installed?)"
        return f"{said}: {error}"

    def _path(self) -> str:
        single = (
            next(iter(self.namespaces)) if self.namespaces is not None and len(self.namespaces) == 1 else None
        )
        return resource_path(self.kind, single)

    def _in_scope(self, obj: Mapping[str, Any]) -> bool:
        return self.namespaces is None or _key(obj)[0] in self.namespaces

    def _complete(self, obj: Manifest) -> Manifest:
        """The object as cached: kind and apiVersion restored (lists omit them) and managedFields dropped,
        as client-go's transform does; nothing that reads the cache (waits, the monitor, status) uses
        them, and they are about half of a typical object's size."""
        metadata = {k: v for k, v in metadata_of(obj).items() if k != "managedFields"}
        return {"apiVersion": self.kind.api_version, "kind": self.kind.kind, **obj, "metadata": metadata}

    def _selector(self) -> dict[str, str]:
        selectors = {"labelSelector": self.label_selector, "fieldSelector": self.field_selector}
        return {name: value for name, value in selectors.items() if value}

    def _relist(self) -> None:
        items: list[Manifest] = []
        query = {"limit": str(self.options.page_size)} | self._selector()
        while True:
            try:
                page = self.client.request("GET", self._path(), query=query, verb="list")
            except GoneError:  # a continue token expired mid-list: start over
                items, query = [], {"limit": str(self.options.page_size)} | self._selector()
                continue
            items += [self._complete(item) for item in page.get("items", []) if self._in_scope(item)]
            token = metadata_of(page).get("continue")
            if not token:
                break
            query = query | {"continue": token}
        self._replace(items, _resource_version(page))

    def _replace(self, items: Iterable[Manifest], resource_version: str) -> None:
        fresh: dict[str, dict[str, Manifest]] = {}
        for item in items:
            namespace, name = _key(item)
            fresh.setdefault(namespace, {})[name] = item
        events: list[tuple[EventType, Manifest]] = []
        with self.changed:
            for namespace, objects in self._objects.items():
                kept = fresh.get(namespace, {})
                events += [("DELETED", gone) for name, gone in objects.items() if name not in kept]
            for namespace, objects in fresh.items():
                known = self._objects.get(namespace, {})
                for name, new in objects.items():
                    old = known.get(name)
                    if old is None:
                        events.append(("ADDED", new))
                    elif _resource_version(old) != _resource_version(new):
                        events.append(("MODIFIED", new))
            self._objects = fresh
            self._resource_version = resource_version
            self._synced = True
            self.changed.notify_all()
        self._publish(events)
        self._synced_now()

    def _synced_now(self) -> None:
        with self.changed:
            callbacks, self._on_sync = self._on_sync, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # like a subscriber: one broken callback must not stop the cache
                log.exception("%s: a sync callback failed", self.describe())

    def _watch(self) -> None:
        query = {
            "watch": "true",
            "resourceVersion": self._resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(int(self.options.watch_timeout)),
        } | self._selector()
        timeout = self.options.watch_timeout + self.options.read_slack
        try:
            for line in self.client.stream_lines(self._path(), query=query, timeout=timeout):
                if self.stopped:
                    return
                self._handle(jsonwire.loads(line))
        except GoneError as expired:
            raise _Expired() from expired
        except urllib3.exceptions.ReadTimeoutError:
            return  # a silent stream: resume from the last resourceVersion

    def _handle(self, event: Mapping[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "BOOKMARK":
            self._resource_version = _resource_version(obj) or self._resource_version
        elif kind == "ERROR":
            if obj.get("code") == 410:
                raise _Expired()
            raise api_error(int(obj.get("code") or 500), obj)
        elif kind in ("ADDED", "MODIFIED", "DELETED"):
            self._apply_event(kind, self._complete(obj), metadata_of(obj).get("managedFields"))
        else:
            log.warning("%s: ignoring a watch event of unknown type %r", self.describe(), kind)

    def _apply_event(self, kind: EventType, obj: Manifest, managed: object = None) -> None:
        self._resource_version = _resource_version(obj) or self._resource_version
        if not self._in_scope(obj):
            return
        namespace, name = _key(obj)
        with self.changed:
            if kind == "DELETED":
                space = self._objects.get(namespace, {})
                space.pop(name, None)
                if not space:
                    self._objects.pop(namespace, None)
            else:
                self._objects.setdefault(namespace, {})[name] = obj
            self.changed.notify_all()
        self._publish([(kind, obj)], managed)

    def _publish(self, events: list[tuple[EventType, Manifest]], managed: object = None) -> None:
        with self.changed:
            subscribers, raw = list(self._subscribers), list(self._raw_subscribers)
        for kind, obj in events:
            self._tell(subscribers, kind, obj)
            if raw:
                with_managed = {**obj, "metadata": {**metadata_of(obj), "managedFields": managed}}
                self._tell(raw, kind, with_managed if managed else obj)

    def _tell(self, subscribers: list[Subscriber], kind: EventType, obj: Manifest) -> None:
        for subscriber in subscribers:
            try:
                subscriber(kind, obj)
            except Exception:  # one broken subscriber must not stop the cache
                log.exception("%s: a subscriber failed on %s", self.describe(), kind)


@dataclass(frozen=True)
class Scope:
    """The namespaces (None: all) every informer of a long-lived set watches."""

    namespaces: frozenset[str] | None


class Informers:
    """One informer per kind (and field selector) per process: the first caller's scope decides, later
    callers share it.
    With `shared_scope` (a controller's: its namespace, or all) every informer covers that scope
    whatever its first caller asked, so runs in any of those namespaces share one watch per kind; an
    informer that failed for good (a CRD not installed yet) is then started afresh when asked for again."""

    def __init__(
        self,
        client: KubeClient,
        *,
        options: InformerOptions | None = None,
        shared_scope: Scope | None = None,
    ) -> None:
        self.client, self.options = client, options
        self.shared_scope = shared_scope
        self._by_kind: dict[tuple[str, str], Informer] = {}  # by (group kind, field selector)
        self._lock = threading.Lock()

    def informer(
        self,
        kind: KindInfo,
        *,
        namespaces: frozenset[str] | None = None,
        label_selector: str = "",
        field_selector: str = "",
    ) -> Informer:
        """The started informer of `kind` and `field_selector` (each its own cache); created for
        `namespaces` (None: all) and `label_selector` on first use. A later request for a namespace
        outside its scope, or for another label selector, is a programming error (ValueError)."""
        if self.shared_scope is not None:
            namespaces = self.shared_scope.namespaces
        with self._lock:
            key = (kind.group_kind, field_selector)
            existing = self._by_kind.get(key)
            if existing is not None and existing.failed and self.shared_scope is not None:
                existing.stop(join=0)
                existing = None
            if existing is None:
                existing = Informer(
                    self.client,
                    kind,
                    namespaces=namespaces,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    options=self.options,
                ).start()
                self._by_kind[key] = existing
            elif not _covers(existing.namespaces, namespaces):
                raise ValueError(f"{existing.describe()} does not cover {sorted(namespaces or ['all'])}")
            elif existing.label_selector != label_selector:
                raise ValueError(f"{existing.describe()} selects {existing.label_selector!r}")
            return existing

    def get(self, kind: KindInfo) -> Informer | None:
        """The informer of all of `kind` (no field selector), if started."""
        with self._lock:
            return self._by_kind.get((kind.group_kind, ""))

    def stop(self) -> None:
        with self._lock:
            informers = list(self._by_kind.values())
        for informer in informers:
            informer.stop(join=0)


def _covers(scope: frozenset[str] | None, wanted: frozenset[str] | None) -> bool:
    return scope is None or (wanted is not None and wanted <= scope)


__all__ = ["EventType", "Informer", "InformerOptions", "Informers", "Scope", "Subscriber"]
