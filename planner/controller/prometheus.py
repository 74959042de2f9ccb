"""The controller's Prometheus metrics, in a registry of its own.

The sandbox gauges are read from the informers' caches at each scrape, so they are the cluster's
state as last watched (never a count the controller keeps by hand): `cubepod_active_sandboxes` and
`cubepod_paused_sandboxes` per namespace (sandboxes by the state on their workspace PVC),
`cubepod_warmpool_ready` (unclaimed members whose Pod is Ready) and `planner_warmpool_claimed` per
namespace and pool. The rest count what the controller did: reconciles by plan and result, their
duration, the work queue's depth and keys in flight, leadership and sandboxes reaped. A plan's series
are named by its namespace and name (team-a/web and team-b/web are two Plans).
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from planner.app.reconciling import PlanOutcome
from planner.monitor.mapping import sandbox_state
from planner.monitor.pool_members import cached_pool_counts, is_workspace
from planner.objects import Manifest, metadata_of

Snapshot = Callable[[], tuple[Iterable[Manifest], Iterable[Manifest]]]  # (PVCs, Pods)


class SandboxCollector(Collector):
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[GaugeMetricFamily]:
        claims, pods = self.snapshot()
        workspaces = [c for c in claims if is_workspace(c)]
        states: Tally[tuple[str, str]] = Tally()
        for workspace in workspaces:
            states[(str(metadata_of(workspace).get("namespace")), sandbox_state(workspace) or "")] += 1
        pools = cached_pool_counts(workspaces, pods)
        namespaces = sorted({namespace for namespace, _ in states})
        yield _family(
            "cubepod_active_sandboxes",
            "Sandboxes marked running.",
            ["namespace"],
            {(ns,): states[(ns, "running")] for ns in namespaces},
        )
        yield _family(
            "cubepod_paused_sandboxes",
            "Sandboxes marked paused.",
            ["namespace"],
            {(ns,): states[(ns, "paused")] for ns in namespaces},
        )
        yield _family(
            "cubepod_warmpool_ready",
            "Unclaimed warm-pool sandboxes whose Pod is Ready.",
            ["namespace", "pool"],
            {key: pools[key][0] for key in sorted(pools)},
        )
        yield _family(
            "planner_warmpool_claimed",
            "Claimed warm-pool sandboxes.",
            ["namespace", "pool"],
            {key: pools[key][2] for key in sorted(pools)},
        )


def _family(
    name: str, documentation: str, labels: list[str], values: dict[tuple[str, ...], int]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=labels)
    for key, value in values.items():
        family.add_metric(list(key), value)
    return family


class ControllerMetrics:
    def __init__(
        self, snapshot: Snapshot, *, depth: Callable[[], int], in_flight: Callable[[], int] = lambda: 0
    ) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(SandboxCollector(snapshot))
        self.reconciles = Counter(
            "planner_reconcile",
            "Plan reconciles by result.",
            ["namespace", "plan", "result"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "planner_reconcile_duration_seconds", "How long a plan's reconcile took.", registry=self.registry
        )
        self.depth = Gauge(
            "planner_workqueue_depth", "Keys waiting in the work queue.", registry=self.registry
        )
        self.depth.set_function(lambda: float(depth()))
        self.in_flight = Gauge(
            "planner_workqueue_in_flight",
            "Keys being processed by the workers now.",
            registry=self.registry,
        )
        self.in_flight.set_function(lambda: float(in_flight()))
        self.leader = Gauge(
            "planner_leader", "1 while this replica leads.", ["identity"], registry=self.registry
        )
        self.reaped = Counter("planner_reaped", "Sandboxes paused for idleness.", registry=self.registry)
        self.source_fetches = Counter(
            "planner_source_fetches",
            "Git source fetches by result (one per source and interval, however many Plans use it).",
            ["result"],
            registry=self.registry,
        )

    def count_fetch(self, ok: bool) -> None:
        self.source_fetches.labels(result="ok" if ok else "failed").inc()

    def count(self, outcome: PlanOutcome) -> None:
        """A plan's reconcile: its result and how long it took."""
        self.reconciles.labels(namespace=outcome.namespace, plan=outcome.plan, result=outcome.result).inc()
        self.duration.observe(outcome.duration)

    def count_unloadable(self, source: str) -> None:
        """A plan file that does not load: a failed reconcile of it, by its path (its namespace unknown)."""
        self.reconciles.labels(namespace="", plan=source, result="failed").inc()
