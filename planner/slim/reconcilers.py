"""What the simulation shares at run time: the time scale, the pause switches and the work-queue driver.

Controllers and the node agent are `Reconciler`s driven the way kube-controller-manager drives its
controllers: by a work queue of dirty keys rather than by whole-store passes.

- `observe(event)` is called for every watch event of the resources the reconciler `watches`, in
  order, as soon as the event is published; it keeps the reconciler's indexes current and returns
  the keys the event dirties (a Pod event dirties its controlling ReplicaSet, and so on).
- `sync(key, now)` reconciles one key, level-based (it reads the store, not the event, so a missed
  or coalesced event only delays the fix), and returns when that key wants to be looked at again
  (a probe period, a back-off, a deadline, a retry while it waits on something), or None.
- `resync()` rebuilds the indexes from the store and returns every key: the self-healing backstop.

`run_reconciler` drives one: each pass first applies every event published so far, then syncs the
dirty keys plus those whose timers are due, once each, in (resource, namespace, name) order. A pass
comes when events dirty keys (at most every `min_interval`), when a timer falls due, and a full
resync (every key) runs at start, after a pause ends and every `full_resync_seconds` (one second by
default; `planner cluster serve --resync-seconds` lengthens it for large simulations, where each full
pass costs CPU). A pass lets the event loop run between slices of `PASS_SLICE` keys, so a full resync of
a large cluster delays requests by a slice's work, not by the whole pass. Keys that wait on something no watch event announces (a pod whose ConfigMap is
missing, a ReplicaSet whose pod creation failed) ask for a retry `RETRY_SECONDS` later, so they do
not depend on the full resync's period.
Everything runs on the server's event loop, so a sync never races another or an HTTP handler (between
two slices of a pass others run; each sync reads the store afresh).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from planner.slim.store import Store, Subscription, WatchEvent

log = logging.getLogger(__name__)

RETRY_SECONDS = 1.0
FULL_RESYNC_SECONDS = 1.0
DEBOUNCE_SECONDS = 0.005
# A pass syncs this many keys, then lets the event loop run (HTTP handlers, the other reconcilers) before
# the next slice: a full resync of 10,000 Plans' objects held the server for seconds at a time.
PASS_SLICE = 256
CONTROLLERS = "controllers"
NODE_AGENT = "nodeagent"
COMPONENTS = (CONTROLLERS, NODE_AGENT)


class Key(NamedTuple):
    """One object a reconciler syncs: its store resource key, namespace ("" if cluster-scoped) and name."""

    resource: str
    namespace: str
    name: str


@dataclass
class Switches:
    """Which component groups are paused (fault injection and the golden tests pause them)."""

    paused: set[str] = field(default_factory=set)
    changed: asyncio.Event | None = None

    def pause(self, component: str, paused: bool = True) -> None:
        if component not in COMPONENTS:
            raise ValueError(f"unknown component {component!r}; expected one of {', '.join(COMPONENTS)}")
        if paused:
            self.paused.add(component)
        else:
            self.paused.discard(component)
            if self.changed is not None:
                self.changed.set()

    def is_paused(self, component: str) -> bool:
        return component in self.paused


@dataclass(frozen=True)
class Scale:
    """`--time-scale F`: every simulated delay, backoff and deadline is multiplied by F."""

    factor: float = 1.0

    def __call__(self, seconds: float) -> float:
        return seconds * self.factor


class Reconciler(Protocol):
    component: str
    watches: tuple[str, ...]
    # Passes woken by events come at most this often, so a burst of writes is synced in batches.
    min_interval: float

    def observe(self, event: WatchEvent) -> Iterable[Key]:
        """Update the indexes from one event; the keys it dirties."""

    def resync(self) -> Iterable[Key]:
        """Rebuild the indexes from the store; every key."""

    def sync(self, key: Key, now: float) -> float | None:
        """Reconcile one key; the absolute time (epoch seconds) it wants its next sync, if any."""


@dataclass
class PassCounts:
    """How much work a reconciler did: passes run and keys synced (served at `/slim/stats`)."""

    passes: int = 0
    synced: int = 0
    full_resyncs: int = 0


class WorkQueue:
    """Dirty keys, each synced once per pass however often it was dirtied, and per-key timers."""

    def __init__(self) -> None:
        self._dirty: set[Key] = set()
        self._timers: dict[Key, float] = {}
        self._heap: list[tuple[float, Key]] = []  # may hold outdated entries; `_timers` is the truth

    def add(self, keys: Iterable[Key]) -> None:
        self._dirty.update(keys)

    def has_dirty(self) -> bool:
        return bool(self._dirty)

    def schedule(self, key: Key, due: float | None) -> None:
        """Replace the key's timer (None: no timer)."""
        if due is None:
            self._timers.pop(key, None)
            return
        self._timers[key] = due
        heapq.heappush(self._heap, (due, key))

    def next_due(self) -> float | None:
        self._drop_outdated()
        return self._heap[0][0] if self._heap else None

    def take(self, now: float) -> list[Key]:
        """The dirty keys and those due by `now`, sorted, leaving both sets empty of them."""
        taken = self._dirty
        self._dirty = set()
        self._drop_outdated()
        while self._heap and self._heap[0][0] <= now:
            _, key = heapq.heappop(self._heap)
            taken.add(key)
            self._timers.pop(key, None)
            self._drop_outdated()
        return sorted(taken)

    def _drop_outdated(self) -> None:
        while self._heap and self._timers.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)


class Driver:
    """Feeds one reconciler's work queue from its subscriptions and runs its passes."""

    def __init__(
        self,
        reconciler: Reconciler,
        store: Store,
        switches: Switches,
        counts: PassCounts | None = None,
        *,
        full_resync_seconds: float = FULL_RESYNC_SECONDS,
    ) -> None:
        self.reconciler = reconciler
        self.full_resync_seconds = full_resync_seconds
        self.store = store
        self.switches = switches
        self.counts = counts if counts is not None else PassCounts()
        self.queue = WorkQueue()
        self.wake = asyncio.Event()
        # Subscribed before the first resync reads the store, so no write falls between the two.
        self.subscriptions = [store.subscribe(resource) for resource in reconciler.watches]
        self.full_resync_at = 0.0

    async def run(self) -> None:
        forwarders = [asyncio.create_task(self._forward(s)) for s in self.subscriptions]
        last = 0.0
        try:
            while True:
                await self._sleep_until_work()
                await asyncio.sleep(
                    max(DEBOUNCE_SECONDS, last + self.reconciler.min_interval - time.monotonic())
                )
                self.wake.clear()
                last = time.monotonic()
                if self._paused():
                    self.full_resync_at = 0.0  # whatever happened meanwhile is looked at on resume
                    continue
                await self.run_pass_in_slices(time.time())
        finally:
            for task in forwarders:
                task.cancel()
            for subscription in self.subscriptions:
                self.store.unsubscribe(subscription)

    def run_pass(self, now: float) -> None:
        """Apply the events published so far, then sync what is dirty or due (everything, when a full
        resync is due)."""
        self._sync_keys(self._pass_keys(now), now)

    async def run_pass_in_slices(self, now: float) -> None:
        """`run_pass`, letting the event loop run between slices of `PASS_SLICE` keys (each slice at its
        own time); a pause that begins meanwhile leaves the rest dirty for after it."""
        keys = self._pass_keys(now)
        for start in range(0, len(keys), PASS_SLICE):
            if start:
                await asyncio.sleep(0)
                if self._paused():
                    self.queue.add(keys[start:])
                    return
                now = time.time()
            self._sync_keys(keys[start : start + PASS_SLICE], now)

    def _pass_keys(self, now: float) -> list[Key]:
        """The events published so far applied, the keys this pass syncs: what is dirty or due
        (everything, when a full resync is due)."""
        self._drain()
        if now >= self.full_resync_at:
            self.full_resync_at = now + self.full_resync_seconds
            self.counts.full_resyncs += 1
            self.queue.add(self._guarded(self.reconciler.resync))
        self.counts.passes += 1
        return self.queue.take(now)

    def _sync_keys(self, keys: list[Key], now: float) -> None:
        for key in keys:
            self.counts.synced += 1
            self.queue.schedule(key, self._sync(key, now))

    async def _sleep_until_work(self) -> None:
        """Until an event dirties a key, a timer falls due or a full resync is due (while paused,
        at most RETRY_SECONDS, to notice the resume)."""
        if self._paused():
            wanted = time.time() + RETRY_SECONDS
        elif self.queue.has_dirty():
            return
        else:
            wanted = min(d for d in (self.queue.next_due(), self.full_resync_at) if d is not None)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), max(wanted - time.time(), 0.0))

    def _paused(self) -> bool:
        return self.switches.is_paused(self.reconciler.component)

    def _sync(self, key: Key, now: float) -> float | None:
        try:
            return self.reconciler.sync(key, now)
        except Exception:
            log.exception("%s failed on %s; retrying", type(self.reconciler).__name__, "/".join(key))
            return now + RETRY_SECONDS

    def _observe(self, event: WatchEvent) -> None:
        self.queue.add(self._guarded(lambda: self.reconciler.observe(event)))
        if self.queue.has_dirty():
            self.wake.set()

    def _guarded(self, call: Callable[[], Iterable[Key]]) -> list[Key]:
        """The keys `call` returns; a failure is logged and the next full resync repairs what it missed."""
        try:
            return list(call())
        except Exception:
            log.exception("%s could not map keys", type(self.reconciler).__name__)
            return []

    def _drain(self) -> None:
        for subscription in self.subscriptions:
            while not subscription.queue.empty():
                self._observe(subscription.queue.get_nowait())

    async def _forward(self, subscription: Subscription) -> None:
        while True:
            self._observe(await subscription.queue.get())


def start(
    reconcilers: Iterable[Reconciler],
    store: Store,
    switches: Switches,
    counts: dict[str, PassCounts],
    *,
    full_resync_seconds: float = FULL_RESYNC_SECONDS,
) -> list[asyncio.Task[None]]:
    """Subscribe every reconciler now (synchronously, before any write can slip past) and run them;
    `counts` is filled with one PassCounts per reconciler class name."""
    drivers = [
        Driver(
            r,
            store,
            switches,
            counts.setdefault(type(r).__name__, PassCounts()),
            full_resync_seconds=full_resync_seconds,
        )
        for r in reconcilers
    ]
    return [asyncio.create_task(driver.run()) for driver in drivers]
