"""What the simulation shares at run time: the time scale, the pause switches and the loop runner.

Controllers and the node agent are `Reconciler`s: a synchronous `reconcile(now)` that looks at the
whole store and writes what differs (level-based, so a missed event only delays the fix), plus the
resources whose watch events should wake it. `run_reconciler` drives one: it wakes on those events,
on the reconciler's own requested deadline, and at least once per resync period. Everything runs on
the server's event loop, so reconcilers never race each other or HTTP handlers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from planner.slim.store import Store, Subscription

log = logging.getLogger(__name__)

RESYNC_SECONDS = 1.0
DEBOUNCE_SECONDS = 0.005
CONTROLLERS = "controllers"
NODE_AGENT = "nodeagent"
COMPONENTS = (CONTROLLERS, NODE_AGENT)


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
    # Passes woken by events come at most this often: whole-store scans (the garbage collector) must
    # not run once per write while a client creates thousands of objects.
    min_interval: float

    def reconcile(self, now: float) -> float | None:
        """One pass; returns the absolute time (epoch seconds) of the next wanted pass, if any."""


async def run_reconciler(reconciler: Reconciler, store: Store, switches: Switches) -> None:
    wake = asyncio.Event()
    subscriptions = [store.subscribe(resource) for resource in reconciler.watches]
    forwarders = [asyncio.create_task(_forward(s, wake)) for s in subscriptions]
    due: float | None = None
    last = 0.0
    try:
        while True:
            timeout = RESYNC_SECONDS if due is None else min(max(due - time.time(), 0.0), RESYNC_SECONDS)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout)
            await asyncio.sleep(max(DEBOUNCE_SECONDS, last + reconciler.min_interval - time.monotonic()))
            wake.clear()
            last = time.monotonic()
            if switches.is_paused(reconciler.component):
                due = None
                continue
            due = _pass(reconciler)
    finally:
        for task in forwarders:
            task.cancel()
        for subscription in subscriptions:
            store.unsubscribe(subscription)


def _pass(reconciler: Reconciler) -> float | None:
    try:
        return reconciler.reconcile(time.time())
    except Exception:
        log.exception("%s failed; retrying on the next pass", type(reconciler).__name__)
        return time.time() + RESYNC_SECONDS


async def _forward(subscription: Subscription, wake: asyncio.Event) -> None:
    while True:
        await subscription.queue.get()
        while not subscription.queue.empty():
            subscription.queue.get_nowait()
        wake.set()


def start(reconcilers: Iterable[Reconciler], store: Store, switches: Switches) -> list[asyncio.Task[None]]:
    return [asyncio.create_task(run_reconciler(r, store, switches)) for r in reconcilers]
