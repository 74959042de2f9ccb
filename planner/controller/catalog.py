"""The plans the controller keeps, by work-queue key (a plan file's path, a Plan object's
`NAMESPACE/NAME`): each one's rendering as last read (or why it does not load), its last reconcile's
outcome and its last one that wrote something (both for the web view), and its lock. Safe from any
thread: the plan sources write it, the workers, the watch and the web view read it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from planner.app.reconciling import PlanOutcome
from planner.app.rendering import RenderedPlan

Report = Callable[[str, str, PlanOutcome], None]  # a plan's key, its name in messages, its outcome


@dataclass(frozen=True)
class KeptPlan:
    """A plan as last read: its rendering (None: it does not load, and `problem` says why); for a plan
    file also the digest it was read at and the other files it reads (a change to one of those is a
    change to the plan)."""

    rendered: RenderedPlan | None
    problem: str = ""
    digest: str = ""
    inputs: tuple[Path, ...] = ()


@dataclass(frozen=True)
class CatalogSnapshot:
    """The catalog at one moment: each plan, its last reconcile's outcome, its last one that applied."""

    plans: Mapping[str, KeptPlan]
    outcomes: Mapping[str, PlanOutcome]
    applied: Mapping[str, PlanOutcome]


class PlanCatalog:
    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._plans: dict[str, KeptPlan] = {}
        self._outcomes: dict[str, PlanOutcome] = {}
        self._applied: dict[str, PlanOutcome] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._pool_locks: dict[str, threading.Lock] = {}
        # The rendered plans' keys by the namespace they render into and by their name, kept with
        # `_plans`: the reaper's pass and every pool member's event asked for them by scanning every
        # plan (O(plans²) a resync at 10,000 Plans).
        self._by_namespace: dict[str, set[str]] = {}
        self._by_name: dict[str, set[str]] = {}

    def put(self, key: str, kept: KeptPlan) -> None:
        with self._mutex:
            self._unindex(key)
            self._plans[key] = kept
            if kept.rendered is not None:
                self._by_namespace.setdefault(kept.rendered.namespace, set()).add(key)
                self._by_name.setdefault(kept.rendered.plan.name, set()).add(key)

    def drop(self, key: str) -> None:
        """Forget the plan's rendering (it no longer renders), keeping its last outcomes."""
        with self._mutex:
            self._unindex(key)
            self._plans.pop(key, None)

    def forget(self, key: str) -> None:
        """Forget the plan (gone): its rendering and its outcomes."""
        with self._mutex:
            self._forget(key)

    def retain(self, keys: Collection[str]) -> dict[str, KeptPlan]:
        """Forget every plan but `keys`; the plans kept."""
        with self._mutex:
            for gone in set(self._plans) - set(keys):
                self._forget(gone)
            return dict(self._plans)

    def _forget(self, key: str) -> None:
        self._unindex(key)
        self._plans.pop(key, None)
        self._outcomes.pop(key, None)
        self._applied.pop(key, None)

    def plans(self) -> dict[str, KeptPlan]:
        with self._mutex:
            return dict(self._plans)

    def kept_keys(self) -> list[str]:
        with self._mutex:
            return list(self._plans)

    def rendered(self, key: str) -> RenderedPlan | None:
        with self._mutex:
            found = self._plans.get(key)
        return found.rendered if found else None

    def namespaces(self) -> set[str]:
        """The namespaces the plans render into."""
        with self._mutex:
            return set(self._by_namespace)

    def keys_in(self, namespace: str) -> list[str]:
        """The plans rendering into `namespace`."""
        with self._mutex:
            return sorted(self._by_namespace.get(namespace, ()))

    def keys_named(self, plan: object) -> list[str]:
        """The plans named `plan` (a warm pool member's `planner.dev/plan` annotation)."""
        with self._mutex:
            return sorted(self._by_name.get(plan, ())) if isinstance(plan, str) else []

    def _unindex(self, key: str) -> None:
        """With the mutex held: take the plan's rendering out of the indexes."""
        old = self._plans.get(key)
        if old is None or old.rendered is None:
            return
        for index, value in (
            (self._by_namespace, old.rendered.namespace),
            (self._by_name, old.rendered.plan.name),
        ):
            keys = index.get(value, set())
            keys.discard(key)
            if not keys:
                index.pop(value, None)

    def record(self, key: str, outcome: PlanOutcome) -> None:
        """The plan's last reconcile (and its last that applied, when this one did)."""
        with self._mutex:
            self._outcomes[key] = outcome
            if outcome.result == "applied":
                self._applied[key] = outcome

    def snapshot(self) -> CatalogSnapshot:
        with self._mutex:
            return CatalogSnapshot(dict(self._plans), dict(self._outcomes), dict(self._applied))

    def plan_lock(self, key: str) -> threading.Lock:
        """The plan's lock. A plan's reconcile and the reaping of its namespace never run at once (the
        reaper pausing a sandbox the apply waits for would hold the apply until its timeout). Pools need
        no such care: the reaper never pauses an unclaimed member, and pools never touch a claimed one."""
        with self._mutex:
            return self._locks.setdefault(key, threading.Lock())

    def pools_lock(self, key: str) -> threading.Lock:
        """The lock of the plan's pools: their keeping, and a deleted plan's removal of its spares,
        never run at once (a keeper beside it would make them again). Not the plan's lock, which the
        reaper needs free."""
        with self._mutex:
            return self._pool_locks.setdefault(key, threading.Lock())
