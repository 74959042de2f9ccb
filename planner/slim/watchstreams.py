"""Watch streams: initial events, buffered events, live events, selector enter/leave and bookmarks.

`open_watch` does everything that can fail before the HTTP 200 goes out (selector parsing happens in
the caller, subscription and the starting point here), then hands back an async iterator. A resource
version older than the store's buffer yields one ERROR event with a 410 Expired Status, as the
apiserver does; `timeoutSeconds` ends the stream cleanly, with a bookmark first when asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from planner.slim import status_errors
from planner.slim.resources import ResourceType
from planner.slim.store import Store, Subscription, TooOld, WatchEvent
from planner.slim.verbhelpers import Filter, parse_rv, resource_key, with_type

Obj = dict[str, Any]
BOOKMARK_INTERVAL = 60.0


@dataclass(frozen=True)
class WatchOptions:
    label_selector: str | None = None
    field_selector: str | None = None
    resource_version: str | None = None
    timeout_seconds: float | None = None
    allow_bookmarks: bool = False


def open_watch(store: Store, rt: ResourceType, flt: Filter, options: WatchOptions) -> AsyncIterator[Obj]:
    """Subscribe and compute the starting events now (so nothing is missed and failures come early),
    then return the stream: initial events, live events, bookmarks, ending at the timeout."""
    key = resource_key(rt)
    subscription = store.subscribe(key)
    try:
        last_rv, initial = _start(store, rt, key, flt, options.resource_version)
    except BaseException:
        store.unsubscribe(subscription)
        raise
    return _stream(store, rt, subscription, flt, last_rv, initial, options)


def _start(
    store: Store, rt: ResourceType, key: str, flt: Filter, rv_text: str | None
) -> tuple[int, list[Obj]]:
    """The last revision already covered and the events to send first (-1: the stream ends after them)."""
    if rv_text in (None, "", "0"):
        objects = [o for o in store.list(key, flt.namespace) if flt.matches(o)]
        return store.revision, [{"type": "ADDED", "object": with_type(rt, o)} for o in objects]
    requested = parse_rv(rv_text)
    try:
        buffered = store.events_since(key, requested)
    except TooOld as exc:
        status = status_errors.expired(str(exc)).body
        status.pop("details", None)
        return -1, [{"type": "ERROR", "object": status}]
    events = [e for e in (event_for(rt, ev, flt) for ev in buffered) if e is not None]
    return max([requested, *(ev.rv for ev in buffered)]), events


async def _stream(
    store: Store,
    rt: ResourceType,
    subscription: Subscription,
    flt: Filter,
    last_rv: int,
    initial: list[Obj],
    options: WatchOptions,
) -> AsyncIterator[Obj]:
    try:
        for event in initial:
            yield event
        if last_rv < 0:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + options.timeout_seconds if options.timeout_seconds else None
        async for event in _live(store, rt, subscription, flt, last_rv, deadline, options.allow_bookmarks):
            yield event
    finally:
        store.unsubscribe(subscription)


async def _live(
    store: Store,
    rt: ResourceType,
    subscription: Subscription,
    flt: Filter,
    last_rv: int,
    deadline: float | None,
    bookmarks: bool,
) -> AsyncIterator[Obj]:
    loop = asyncio.get_running_loop()
    while True:
        wait = BOOKMARK_INTERVAL if deadline is None else min(BOOKMARK_INTERVAL, deadline - loop.time())
        if wait <= 0:
            if bookmarks:
                # A bookmark says every event up to its revision was sent: with events still queued
                # (a burst at the timeout), only up to the last one sent — the resumed watch gets the rest.
                yield bookmark(rt, store.revision if subscription.queue.empty() else last_rv)
            return
        try:
            # Drain what is queued without suspending: waiting for each event would let a burst of
            # writes run ahead of every watcher by a loop turn per event.
            if subscription.queue.empty():
                event = await asyncio.wait_for(subscription.queue.get(), timeout=wait)
            else:
                event = subscription.queue.get_nowait()
        except TimeoutError:
            if bookmarks and (deadline is None or loop.time() < deadline):
                yield bookmark(rt, store.revision)
            continue
        if event.rv <= last_rv:
            continue
        last_rv = event.rv
        shown = event_for(rt, event, flt)
        if shown is not None:
            yield shown


def event_for(rt: ResourceType, event: WatchEvent, flt: Filter) -> Obj | None:
    """The event a filtered watcher sees: selector leave → DELETED, enter → ADDED."""
    now_matches = event.type != "DELETED" and flt.matches(event.obj)
    was_matching = flt.matches(event.old) if event.old is not None else False
    obj = with_type(rt, event.obj)
    if event.type == "DELETED":
        return {"type": "DELETED", "object": obj} if was_matching or flt.matches(event.obj) else None
    if now_matches and (was_matching or event.type == "ADDED"):
        return {"type": event.type, "object": obj}
    if now_matches:
        return {"type": "ADDED", "object": obj}
    if was_matching:
        return {"type": "DELETED", "object": obj}
    return None


def bookmark(rt: ResourceType, rv: int) -> Obj:
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": rt.kind,
            "apiVersion": rt.group_version,
            "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
        },
    }
