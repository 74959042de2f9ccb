"""Storage: objects in SQLite, one global resourceVersion counter, a ring buffer of watch events.

Like k3s's embedded datastore, every object is a JSON row keyed by (resource, namespace, name) and
every write takes the next revision of one global counter, persisted in the same transaction. Reads
never touch SQLite: all objects are also held parsed in memory, indexed by resource then namespace,
so a GET is a dict lookup and a 1,000-object LIST parses nothing. Without a path (`--memory`) there
are no rows at all: nothing would ever read them back. Watches read the in-memory ring
buffer of recent events (its oldest evicted revision is the compaction point: older resourceVersions
get 410 Expired) and then follow live events through one asyncio queue per watcher.

Objects handed out by the store are shared: callers must copy before mutating (the API core does).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Obj = dict[str, Any]

DEFAULT_EVENT_CAPACITY = 10_000
EVERY_RESOURCE = "*"  # subscribe to it for the events of every resource, custom ones included
ObjList = list[Obj]


@dataclass(frozen=True)
class WatchEvent:
    """One committed change. `old` is the previous state (None for ADDED) for selector enter/leave."""

    type: str
    resource: str
    namespace: str
    name: str
    rv: int
    obj: Obj
    old: Obj | None


EventList = list[WatchEvent]


@dataclass(eq=False)
class Subscription:
    resource: str
    queue: asyncio.Queue[WatchEvent] = field(default_factory=asyncio.Queue)


class TooOld(Exception):
    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Conflict(Exception):
    """The row exists (create) or does not exist (update/delete)."""


def _open(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS objects"
        " (resource TEXT, namespace TEXT, name TEXT, rv INTEGER, body TEXT,"
        " PRIMARY KEY (resource, namespace, name))"
    )
    db.execute("CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER)")
    return db


class Store:
    def __init__(self, path: Path | None, *, event_capacity: int = DEFAULT_EVENT_CAPACITY) -> None:
        self._db = None if path is None else _open(path)
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._rv = 0
        self._events: deque[WatchEvent] = deque()
        self._capacity = event_capacity
        self._subscribers: dict[str, set[Subscription]] = {}
        if self._db is not None:
            self._load(self._db)
        self._compacted = self._rv

    def _load(self, db: sqlite3.Connection) -> None:
        row = db.execute("SELECT value FROM counters WHERE key = 'rv'").fetchone()
        self._rv = int(row[0]) if row else 0
        for resource, namespace, name, body in db.execute(
            "SELECT resource, namespace, name, body FROM objects"
        ):
            self._objects.setdefault(resource, {}).setdefault(namespace, {})[name] = json.loads(body)

    # --- reads ---------------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._rv

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        return self._objects.get(resource, {}).get(namespace, {}).get(name)

    def list(self, resource: str, namespace: str | None) -> ObjList:
        """Objects sorted by namespace then name (the order the apiserver lists in)."""
        by_namespace = self._objects.get(resource, {})
        if namespace is not None:
            names = by_namespace.get(namespace, {})
            return [names[n] for n in sorted(names)]
        return [by_namespace[ns][n] for ns in sorted(by_namespace) for n in sorted(by_namespace[ns])]

    def count(self, resource: str) -> int:
        return sum(len(names) for names in self._objects.get(resource, {}).values())

    # --- writes --------------------------------------------------------------------------------------

    def create(self, resource: str, namespace: str, name: str, obj: Obj) -> Obj:
        if self.get(resource, namespace, name) is not None:
            raise Conflict(name)
        return self._write("ADDED", resource, namespace, name, obj, None)

    def update(self, resource: str, namespace: str, name: str, obj: Obj) -> Obj:
        old = self.get(resource, namespace, name)
        if old is None:
            raise Conflict(name)
        return self._write("MODIFIED", resource, namespace, name, obj, old)

    def delete(self, resource: str, namespace: str, name: str, final: Obj | None = None) -> Obj:
        """Remove the row; the DELETED event carries `final` (or the last state) at the deletion revision."""
        old = self.get(resource, namespace, name)
        if old is None:
            raise Conflict(name)
        return self._write("DELETED", resource, namespace, name, final if final is not None else old, old)

    def _write(self, kind: str, resource: str, namespace: str, name: str, obj: Obj, old: Obj | None) -> Obj:
        rv = self._rv + 1
        stored = dict(obj)
        stored["metadata"] = {**obj.get("metadata", {}), "resourceVersion": str(rv)}
        self._persist(kind, resource, namespace, name, rv, stored)
        self._rv = rv
        names = self._objects.setdefault(resource, {}).setdefault(namespace, {})
        if kind == "DELETED":
            names.pop(name, None)
        else:
            names[name] = stored
        self._publish(WatchEvent(kind, resource, namespace, name, rv, stored, old))
        return stored

    def _persist(self, kind: str, resource: str, namespace: str, name: str, rv: int, obj: Obj) -> None:
        db = self._db
        if db is None:
            return
        with db:
            db.execute("BEGIN")
            if kind == "DELETED":
                db.execute(
                    "DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?",
                    (resource, namespace, name),
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?, ?)",
                    (resource, namespace, name, rv, json.dumps(obj, separators=(",", ":"))),
                )
            db.execute("INSERT OR REPLACE INTO counters VALUES ('rv', ?)", (rv,))

    # --- watch ---------------------------------------------------------------------------------------

    def _publish(self, event: WatchEvent) -> None:
        self._events.append(event)
        while len(self._events) > self._capacity:
            self._compacted = self._events.popleft().rv
        for subscription in (
            *self._subscribers.get(event.resource, ()),
            *self._subscribers.get(EVERY_RESOURCE, ()),
        ):
            subscription.queue.put_nowait(event)

    def events_since(self, resource: str, rv: int) -> EventList:
        """Buffered events of `resource` after `rv`; TooOld when the buffer no longer reaches back to it."""
        if rv < self._compacted:
            raise TooOld(rv, self._compacted + 1)
        return [e for e in self._events if e.rv > rv and e.resource == resource]

    def subscribe(self, resource: str) -> Subscription:
        subscription = Subscription(resource)
        self._subscribers.setdefault(resource, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscribers.get(subscription.resource, set()).discard(subscription)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def mark_compacted(self) -> None:
        """Forget buffered events: watches may only resume from revisions written after this point."""
        self._events.clear()
        self._compacted = self._rv
