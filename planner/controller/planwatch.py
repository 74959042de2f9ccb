"""The controller's one watch of Plan objects: those of all namespaces (or `-n`'s) in its shard
(`sharding`: a label selector). It queues each Plan that asks for a reconcile (`planstatus.wants_reconcile`,
or being deleted) and, once a Plan is Ready, the Plans of its namespace waiting for it (`dependsOn`);
it answers from its cache which Plans there are, whether a Plan's dependencies are Ready, and whether
its `dependsOn` leads back to it (`dependency_cycle`): such a Plan would wait for ever.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from planner.controller import planstatus
from planner.controller.finalizer import being_deleted
from planner.controller.planref import namespace_of, object_key
from planner.controller.sharding import plan_selector
from planner.errors import NotFoundError
from planner.kinds import PLAN
from planner.kube.client import KubeClient, resource_path
from planner.kube.informer import EventType, Informer, Informers
from planner.objects import Manifest, metadata_of
from planner.plan.reconcile_section import ReconcileSection, reconcile_section


class PlanWatch:
    def __init__(
        self, client: KubeClient, informers: Informers, *, namespace: str | None, shard: str | None = None
    ) -> None:
        self.client = client
        self.informer: Informer = informers.informer(
            PLAN,
            namespaces=frozenset({namespace}) if namespace else None,
            label_selector=plan_selector(shard),
        )

    def follow(self, queue: Callable[[str], None], forget: Callable[[str], None]) -> None:
        """Queue every Plan once, then each that asks for a reconcile as the watch sees it, and `forget`
        the ones deleted."""

        def on_event(kind: EventType, plan: Manifest) -> None:
            if kind == "DELETED":
                forget(object_key(plan))
                return
            # ADDED: new to this controller (created, or moved into its shard), so looked at once.
            if kind == "ADDED" or planstatus.wants_reconcile(plan) or being_deleted(plan):
                queue(object_key(plan))
            for dependent in self.dependents(plan):
                queue(dependent)

        # Every Plan is ADDED once, from the cache or its first list: queueing them all again at the
        # sync would reconcile twice each Plan a worker had already taken.
        self.informer.subscribe(on_event, replay=True)

    def keys(self, *, periodic: bool = False) -> list[str]:
        """Every Plan's key; `periodic`: those the controller's --interval reconciles (not those with
        their own `reconcile.interval`)."""
        if not self.informer.synced or self.informer.failed:
            return []
        return [
            object_key(plan)
            for plan in self.informer.items()
            if not (periodic and reconcile_section(plan).interval is not None)
        ]

    def get(self, key: str) -> Manifest | None:
        namespace, _, name = key.partition("/")
        return self.informer.get(namespace, name)

    def plans(self) -> list[Manifest]:
        return self.informer.items()

    def dependents(self, plan: Manifest) -> list[str]:
        """The keys of the Plans of its namespace waiting for `plan` (`dependsOn`), once it is Ready."""
        if not planstatus.is_ready(plan):
            return []
        # Only its namespace's Plans: every Plan's Ready event scanning every Plan was half the
        # controller's CPU at 10,000 Plans (O(Plans²) over a first convergence).
        name = metadata_of(plan).get("name")
        return [
            object_key(other)
            for other in self.informer.items([namespace_of(plan)])
            if name in reconcile_section(other).depends_on and not planstatus.is_ready(other)
        ]

    def unready_dependencies(self, plan: Manifest, section: ReconcileSection) -> list[str]:
        namespace = namespace_of(plan)
        unready = []
        for name in section.depends_on:
            other = self.informer.get(namespace, name) or self._read(namespace, name)
            if other is None or not planstatus.is_ready(other):
                unready.append(name if other is not None else f"{name} (not found)")
        return unready

    def dependency_cycle(self, plan: Manifest, section: ReconcileSection) -> list[str] | None:
        """The names of the shortest `dependsOn` cycle through the Plan, among the Plans of its namespace
        in the cache (`[ca, cb, ca]`; `[self, self]` for a Plan depending on itself); None: there is none."""
        namespace, name = namespace_of(plan), str(metadata_of(plan).get("name", ""))

        def depends_on(other: str) -> Sequence[str]:
            if other == name:
                return section.depends_on
            found = self.informer.get(namespace, other)
            return reconcile_section(found).depends_on if found is not None else ()

        return dependency_cycle(name, depends_on)

    def _read(self, namespace: str, name: str) -> Manifest | None:
        """A Plan outside this controller's watch (another shard's): read once, while it is waited for."""
        try:
            return self.client.request("GET", resource_path(PLAN, namespace, name), verb="get")
        except NotFoundError:
            return None


def dependency_cycle(start: str, depends_on: Callable[[str], Sequence[str]]) -> list[str] | None:
    """The shortest path from `start` back to itself along `depends_on` (breadth first, in dependsOn
    order), `[start, …, start]`; None when no dependency leads back to it."""
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for name in frontier:
            for dependency in depends_on(name):
                if dependency == start:
                    back = [name]
                    while back[-1] != start:
                        back.append(parents[back[-1]])
                    return [*reversed(back), start]
                if dependency not in parents:
                    parents[dependency] = name
                    following.append(dependency)
        frontier = following
    return None
