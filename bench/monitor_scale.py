"""The monitor at scale: N runtime IDs on one watch per kind, against a naive per-ID polling loop.

    .venv/bin/python bench/monitor_scale.py [--ids 5000] [--namespaces 4] [--batch 500]

Starts an embedded cluster with its controllers and node agent paused, so nothing but this script
writes workload status and each change happens exactly when the script makes it. Then:

1. creates `--ids` workloads (half Jobs, half Deployments, spread over `--namespaces` namespaces);
2. starts one informer per kind and registers every runtime ID with the monitor (`planner.monitor`);
3. writes status server-side in batches (a merge patch of the `/status` subresource, as a controller
   would): Jobs `active` (→ ContainerStarted) then `succeeded` (→ ContainerExited), Deployments
   `readyReplicas` (→ ContainerStarted), and measures, per event, the time from the write to the monitor
   emitting it (from the write's acknowledgement, and from its sending), split where the write's watch
   event reached the informer cache: the server's watch delivery, then the monitor's own work;
4. measures one round of a naive poller that GETs every runtime ID's object, and what polling once per
   second would cost over the window the monitor needed.

The writes, creates and polls run in a child process, so the GIL, CPU seconds (`time.process_time`) and
peak RSS of this process are the monitor's (with its informers) alone. Request counts come from the
embedded cluster's /metrics: the monitor's LIST pages and WATCHes are deterministic for a given N
(`ceil(objects / 500)` pages and one watch per kind), the poller's GETs are N per round. Timings are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import resource
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.events import Event, SystemClock
from planner.kinds import DEPLOYMENT, JOB
from planner.kube.client import KubeClient
from planner.kube.informer import Informers
from planner.monitor import Monitor
from planner.render.identity import RuntimeID
from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin, client_session

CONCURRENCY = 16
MERGE_PATCH = "application/merge-patch+json"
START_TIME = "2026-11-29T10:00:00Z"
EVENT_TIMEOUT = 60.0
POLL_INTERVAL = 1.0
WATCHED_RESOURCES = ("jobs", "deployments")
LATENCIES = (
    "write sent → event emitted",
    "write acknowledged → event emitted",
    "  write acknowledged → in the informer",
    "  in the informer → event emitted",
)


@dataclass(frozen=True)
class Workload:
    runtime_id: str
    kind: str  # "job" or "deployment"
    path: str  # the object's API path

    @property
    def resource(self) -> str:
        return "jobs" if self.kind == "job" else "deployments"


@dataclass(frozen=True)
class Write:
    """One status write and the event it should cause."""

    workload: Workload
    status: dict[str, Any]
    expect: str


@dataclass(frozen=True)
class Acknowledged:
    runtime_id: str
    expect: str
    resource: str
    resource_version: str  # of the write, to find its watch event in the informer
    sent: float  # time.monotonic(), system-wide on Linux, so comparable across the two processes
    acknowledged: float


# --- the child process: creates, status writes and polls, over aiohttp ------------------------------


def labels(name: str) -> dict[str, str]:
    return {"gobrave-workload": name}


def manifest(workload: Workload, namespace: str, name: str) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}
    metadata = {"name": name, "namespace": namespace, "labels": labels(name)}
    if workload.kind == "job":
        pod = {"restartPolicy": "Never", "containers": [container]}
        spec: dict[str, Any] = {
            "backoffLimit": 0,
            "template": {"metadata": {"labels": labels(name)}, "spec": pod},
        }
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}
    spec = {
        "replicas": 1,
        "selector": {"matchLabels": labels(name)},
        "template": {"metadata": {"labels": labels(name)}, "spec": {"containers": [container]}},
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}


async def in_parallel(count: int, request: Callable[[int], Awaitable[None]]) -> None:
    """`request(0..count-1)` with CONCURRENCY in flight."""
    indexes = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await request(index)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def _create(cluster: ClusterHandle, namespaces: Sequence[str], workloads: Sequence[Workload]) -> None:
    url = cluster.url
    async with client_session(cluster) as session:
        for namespace in namespaces:
            async with session.post(
                f"{url}/api/v1/namespaces", json={"metadata": {"name": namespace}}
            ) as reply:
                assert reply.status == 201, await reply.text()

        async def create(index: int) -> None:
            workload = workloads[index]
            rid = RuntimeID.parse(workload.runtime_id)
            collection = workload.path.rsplit("/", 1)[0]
            body = manifest(workload, rid.namespace, rid.name)
            async with session.post(url + collection, json=body) as reply:
                assert reply.status == 201, await reply.text()

        await in_parallel(len(workloads), create)


async def _write(cluster: ClusterHandle, writes: Sequence[Write]) -> list[Acknowledged]:
    acknowledged: list[Acknowledged] = []
    url = cluster.url
    async with client_session(cluster) as session:

        async def write(index: int) -> None:
            change = writes[index]
            path = f"{url}{change.workload.path}/status"
            sent = time.monotonic()
            body = {"status": change.status}
            async with session.patch(path, json=body, headers={"Content-Type": MERGE_PATCH}) as reply:
                assert reply.status == 200, await reply.text()
                answer = await reply.read()
            acked = time.monotonic()
            version = json.loads(answer)["metadata"]["resourceVersion"]
            rid, expect = change.workload.runtime_id, change.expect
            ack = Acknowledged(rid, expect, change.workload.resource, version, sent, acked)
            acknowledged.append(ack)

        await in_parallel(len(writes), write)
    return acknowledged


async def _poll(cluster: ClusterHandle, paths: Sequence[str]) -> None:
    url = cluster.url
    async with client_session(cluster) as session:

        async def get(index: int) -> None:
            async with session.get(url + paths[index]) as reply:
                assert reply.status == 200, await reply.text()
                await reply.read()

        await in_parallel(len(paths), get)


def create_workloads(
    cluster: ClusterHandle, namespaces: Sequence[str], workloads: Sequence[Workload]
) -> None:
    asyncio.run(_create(cluster, namespaces, workloads))


def write_statuses(cluster: ClusterHandle, writes: Sequence[Write]) -> list[Acknowledged]:
    return asyncio.run(_write(cluster, writes))


def poll_round(cluster: ClusterHandle, paths: Sequence[str]) -> tuple[float, float]:
    """One naive polling round, a GET per object: (wall seconds, the poller's CPU seconds)."""
    cpu, started = time.process_time(), time.perf_counter()
    asyncio.run(_poll(cluster, paths))
    return time.perf_counter() - started, time.process_time() - cpu


# --- this process: the monitor -------------------------------------------------------------------------


class Recorder:
    """The monitor's EventSink: when (time.monotonic) each runtime ID's event of each type was emitted."""

    def __init__(self) -> None:
        self.emitted: dict[tuple[str, str], float] = {}
        self.duplicates = 0
        self.changed = threading.Condition()

    def emit(self, event: Event) -> None:
        now = time.monotonic()
        key = (str(event.runtime_id), type(event).__name__)
        with self.changed:
            if key in self.emitted:
                self.duplicates += 1
            self.emitted.setdefault(key, now)
            self.changed.notify_all()

    def wait_for(self, keys: Iterable[tuple[str, str]], timeout: float) -> set[tuple[str, str]]:
        """Block until every key is emitted or `timeout` passes; the keys still missing."""
        wanted = set(keys)
        with self.changed:
            self.changed.wait_for(lambda: wanted <= self.emitted.keys(), timeout)
            return wanted - self.emitted.keys()


class Deliveries:
    """An informer subscriber registered before the monitor's: when each written resourceVersion reached
    the informer's cache, so a latency splits into the server's watch delivery and the monitor's part."""

    def __init__(self) -> None:
        self.arrived: dict[tuple[str, str], float] = {}

    def subscriber(self, resource_name: str) -> Callable[[str, dict[str, Any]], None]:
        def on_change(_event_type: str, obj: dict[str, Any]) -> None:
            version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
            self.arrived.setdefault((resource_name, version), time.monotonic())

        return on_change


def plan_workloads(ids: int, namespaces: Sequence[str]) -> list[Workload]:
    workloads = []
    for index in range(ids):
        namespace = namespaces[index % len(namespaces)]
        if index % 2 == 0:
            name, kind, path = f"job-{index:05d}", "job", f"/apis/batch/v1/namespaces/{namespace}/jobs"
        else:
            name, kind = f"web-{index:05d}", "deployment"
            path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
        workloads.append(Workload(f"k8s-{namespace}|{kind}|{name}", kind, f"{path}/{name}"))
    return workloads


def status_rounds(workloads: Sequence[Workload]) -> list[list[Write]]:
    """Round 1 starts everything; round 2 finishes the Jobs."""
    started = {"startTime": START_TIME, "active": 1}
    ready = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "updatedReplicas": 1}
    first = [Write(w, started if w.kind == "job" else ready, "ContainerStarted") for w in workloads]
    second = [
        Write(w, {"startTime": START_TIME, "active": 0, "succeeded": 1}, "ContainerExited")
        for w in workloads
        if w.kind == "job"
    ]
    return [first, second]


def rss_kib(field: str) -> int:
    """VmRSS (now) or VmHWM (peak) of this process, KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def request_counts(admin: SlimAdmin) -> dict[tuple[str, str], float]:
    """(verb, resource) → requests finished, plus the watch streams still open (counted at their end)."""
    counts: dict[tuple[str, str], float] = {}
    for (verb, resource_name, _code), value in admin.request_counts().items():
        counts[(verb, resource_name)] = counts.get((verb, resource_name), 0.0) + value
    for resource_name in WATCHED_RESOURCES:
        key = ("watch", resource_name)
        counts[key] = counts.get(key, 0.0) + admin.open_watches(resource_name)
    return counts


def delta(
    after: dict[tuple[str, str], float], before: dict[tuple[str, str], float], verbs: Iterable[str]
) -> dict[str, int]:
    wanted = set(verbs)
    return {
        f"{verb} {name}": int(value - before.get((verb, name), 0.0))
        for (verb, name), value in sorted(after.items())
        if verb in wanted and name in WATCHED_RESOURCES and value - before.get((verb, name), 0.0) > 0
    }


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def split_latencies(
    acknowledged: Sequence[Acknowledged],
    arrived: dict[tuple[str, str], float],
    emitted: dict[tuple[str, str], float],
) -> dict[str, list[float]]:
    """Per event: write sent → emitted, write acknowledged → emitted, and the latter split at the moment
    the write's watch event reached the informer cache."""
    split: dict[str, list[float]] = {name: [] for name in LATENCIES}
    for ack in acknowledged:
        event = emitted.get((ack.runtime_id, ack.expect))
        cached = arrived.get((ack.resource, ack.resource_version))
        if event is None or cached is None:
            continue
        split["write sent → event emitted"].append(event - ack.sent)
        split["write acknowledged → event emitted"].append(event - ack.acknowledged)
        split["  write acknowledged → in the informer"].append(cached - ack.acknowledged)
        split["  in the informer → event emitted"].append(event - cached)
    return split


@dataclass(frozen=True)
class MonitorRun:
    register_seconds: float
    register_cpu: float
    change_cpu: float
    window: float
    subscribed: list[str]  # the kinds the monitor subscribed to, one informer subscription each
    latencies: dict[str, list[float]]
    events: int
    missing: int
    duplicates: int
    peak_rss_kib: int
    requests: dict[str, int]


def register_all(monitor: Monitor, workloads: Sequence[Workload]) -> tuple[float, float]:
    """Every runtime ID, one at a time, as `apply` hands them over: (wall seconds, CPU seconds). The first
    registration of each kind starts its informer and waits for its LIST, so both are included."""
    cpu, started = time.process_time(), time.monotonic()
    for workload in workloads:
        monitor.mark_if_not_monitoring(RuntimeID.parse(workload.runtime_id))
    assert len(monitor.monitoring()) == len(workloads), "every runtime ID is registered"
    return time.monotonic() - started, time.process_time() - cpu


def change_in_batches(
    cluster: ClusterHandle,
    workloads: Sequence[Workload],
    batch: int,
    child: ProcessPoolExecutor,
    recorder: Recorder,
) -> tuple[list[Acknowledged], int]:
    """Each round's writes, `batch` at a time; the next batch goes once the last one's events are all
    emitted (or EVENT_TIMEOUT passed). The acknowledged writes, and how many events never came."""
    acknowledged: list[Acknowledged] = []
    missing = 0
    for writes in status_rounds(workloads):
        for first in range(0, len(writes), batch):
            chunk = writes[first : first + batch]
            acknowledged += child.submit(write_statuses, cluster, chunk).result()
            missing += len(
                recorder.wait_for([(w.workload.runtime_id, w.expect) for w in chunk], EVENT_TIMEOUT)
            )
    return acknowledged, missing


def run_monitor(
    cluster: ClusterHandle,
    workloads: Sequence[Workload],
    namespaces: Sequence[str],
    batch: int,
    child: ProcessPoolExecutor,
) -> MonitorRun:
    admin = SlimAdmin.of(cluster)
    before, baseline_rss, started = request_counts(admin), rss_kib("VmRSS"), time.monotonic()
    recorder, deliveries, scope = Recorder(), Deliveries(), frozenset(namespaces)
    informers = Informers(KubeClient.from_config(kubeconfig=str(cluster.kubeconfig), context=None))
    for kind, resource_name in ((JOB, "jobs"), (DEPLOYMENT, "deployments")):
        informers.informer(kind, namespaces=scope).subscribe(deliveries.subscriber(resource_name))
    monitor = Monitor(informers, recorder, clock=SystemClock(), namespaces=scope)
    try:
        register_seconds, register_cpu = register_all(monitor, workloads)
        subscribed = sorted(monitor.subscriptions())
        cpu = time.process_time()
        acknowledged, missing = change_in_batches(cluster, workloads, batch, child, recorder)
        window, change_cpu = time.monotonic() - started, time.process_time() - cpu
        after = request_counts(admin)
    finally:
        monitor.stop()
        informers.stop()
    return MonitorRun(
        register_seconds=register_seconds,
        register_cpu=register_cpu,
        change_cpu=change_cpu,
        window=window,
        subscribed=subscribed,
        latencies=split_latencies(acknowledged, deliveries.arrived, recorder.emitted),
        events=len(recorder.emitted),
        missing=missing,
        duplicates=recorder.duplicates,
        peak_rss_kib=rss_kib("VmHWM") - baseline_rss,
        requests=delta(after, before, ("list", "watch", "get")),
    )


def print_report(
    ids: int, batch: int, run: MonitorRun, poll: tuple[float, float], poll_requests: int
) -> None:
    per_thousand = 1000 / ids
    print(
        f"\n{ids} runtime IDs ({ids - ids // 2} Jobs, {ids // 2} Deployments), {run.events} events "
        f"({run.missing} missing, {run.duplicates} repeated); status written in batches of {batch}, "
        f"{CONCURRENCY} in flight"
    )
    print(
        f"monitor subscriptions: {len(run.subscribed)} ({', '.join(run.subscribed)}), one informer each; "
        f"registering all {ids} IDs took {run.register_seconds:.2f} s (waiting for both informers' first LIST included)"
    )
    print(f"\n{'latency per event (ms)':<42}{'p50':>8}{'p99':>8}{'max':>8}{'min':>8}{'events':>8}")
    for label, values in run.latencies.items():
        ms = [1000 * v for v in values]
        quantiles = (percentile(ms, 0.5), percentile(ms, 0.99), max(ms), min(ms))
        print(f"{label:<42}" + "".join(f"{q:>8.1f}" for q in quantiles) + f"{len(ms):>8}")
    print(
        f"CPU per 1,000 subscriptions: {run.register_cpu * per_thousand:.3f} s to register, "
        f"{run.change_cpu * per_thousand:.3f} s for their events; "
        f"peak RSS +{run.peak_rss_kib * per_thousand / 1024:.1f} MiB per 1,000 (+{run.peak_rss_kib / 1024:.1f} MiB)"
    )
    monitor_requests = sum(run.requests.values())
    round_seconds, round_cpu = poll
    rounds = math.ceil(run.window / POLL_INTERVAL)
    naive_window = rounds * ids
    back_to_back = math.ceil(run.window / round_seconds) * ids
    print(f"\n{'API requests':<46}{'requests':>10}  detail")
    rows = (
        ("monitor, whole run", monitor_requests, ", ".join(f"{k} {v}" for k, v in run.requests.items())),
        (
            "naive poller, one round (measured)",
            poll_requests,
            f"GET × {ids}, {round_seconds:.2f} s, {round_cpu:.2f} s CPU",
        ),
        (
            f"naive poller, 1/s over the monitor's {run.window:.1f} s",
            naive_window,
            f"{rounds} rounds × {ids}",
        ),
        (
            f"naive poller, back to back over {run.window:.1f} s",
            back_to_back,
            f"{math.ceil(run.window / round_seconds)} rounds × {ids}, as fast as one round goes here",
        ),
    )
    for label, count, detail in rows:
        print(f"{label:<46}{count:>10}  {detail}")
    print(
        f"ratio naive / monitor: {naive_window / monitor_requests:,.0f}x polling once per second, "
        f"{back_to_back / monitor_requests:,.0f}x polling back to back"
    )
    if round_seconds > POLL_INTERVAL:
        print(
            f"(one round takes {round_seconds:.2f} s, longer than the {POLL_INTERVAL:g} s interval: "
            f"the naive loop could not keep its schedule on this machine)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ids", type=int, default=5000)
    parser.add_argument("--namespaces", type=int, default=4)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    namespaces = [f"scale-{index}" for index in range(args.namespaces)]
    workloads = plan_workloads(args.ids, namespaces)
    started = time.perf_counter()
    spawn = multiprocessing.get_context("spawn")
    with (
        running_cluster(simulate=True, paused=("controllers", "nodeagent")) as cluster,
        ProcessPoolExecutor(1, mp_context=spawn) as child,
    ):
        made = time.perf_counter()
        child.submit(create_workloads, cluster, namespaces, workloads).result()
        print(
            f"created {args.ids} workloads in {args.namespaces} namespaces in {time.perf_counter() - made:.1f} s"
        )
        run = run_monitor(cluster, workloads, namespaces, args.batch, child)
        admin = SlimAdmin.of(cluster)
        gets = admin.request_count(verb="get")
        poll = child.submit(poll_round, cluster, [w.path for w in workloads]).result()
        poll_requests = int(admin.request_count(verb="get") - gets)
    print_report(args.ids, args.batch, run, poll, poll_requests)
    print(f"\ntotal {time.perf_counter() - started:.1f} s (server start and setup included)")


if __name__ == "__main__":
    main()
