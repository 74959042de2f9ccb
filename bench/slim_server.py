"""How fast the embedded cluster serves, so later benchmarks know whether the server is the bottleneck.

    .venv/bin/python bench/slim_server.py [--objects 1000] [--watchers 100]

Starts an in-memory server (`running_cluster`, a subprocess on a free port) and measures, with a fixed
number of requests each so runs compare across machines:

- GET of one ConfigMap (requests/s),
- LIST of a namespace holding `--objects` ConfigMaps (requests/s and objects/s),
- server-side apply PATCH, each one a real write (requests/s),
- watch fan-out: `--watchers` watches on one namespace; for each of a fixed number of writes, the time
  from sending the write to each watcher receiving its event (p50, p99, max);
- the write path, verb by verb, on a Deployment shaped like the ones `planner apply` writes: POST,
  the JSON patch planner sends after it (tests and a replace of the POST's managedFields entry),
  server-side apply creating and changing, a strategic merge patch and a merge patch changing, and GET;
  each with the server process's CPU time per request (from /proc, Linux only), the figure that says
  what the server itself spends whatever the client and the machine's load cost.

The client runs in this process on the same machine, so the requests/s are the pair's, not the
server's alone. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import client_session

CONCURRENCY = 8
GETS = 5000
LISTS = 100
APPLIES = 1000
FANOUT_WRITES = 50
WRITES = 500
APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


@dataclass(frozen=True)
class Result:
    what: str
    requests: int
    seconds: float
    note: str = ""

    @property
    def per_second(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


async def timed(count: int, request: Callable[[int], Awaitable[None]]) -> float:
    """Run `request(0..count-1)` with CONCURRENCY in flight; the wall time."""
    queue = iter(range(count))

    async def worker() -> None:
        for index in queue:
            await request(index)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return time.perf_counter() - started


async def create_namespace(session: aiohttp.ClientSession, url: str, name: str) -> None:
    async with session.post(f"{url}/api/v1/namespaces", json={"metadata": {"name": name}}) as reply:
        assert reply.status == 201, await reply.text()


async def fill(session: aiohttp.ClientSession, url: str, namespace: str, objects: int) -> None:
    async def create(index: int) -> None:
        body = {"metadata": {"name": f"cm-{index:05d}"}, "data": {"index": str(index)}}
        async with session.post(f"{url}/api/v1/namespaces/{namespace}/configmaps", json=body) as reply:
            assert reply.status == 201, await reply.text()

    await timed(objects, create)


async def bench_get(session: aiohttp.ClientSession, url: str, namespace: str) -> Result:
    path = f"{url}/api/v1/namespaces/{namespace}/configmaps/cm-00000"

    async def get(_: int) -> None:
        async with session.get(path) as reply:
            await reply.read()
            assert reply.status == 200

    return Result("GET one object", GETS, await timed(GETS, get))


async def bench_list(session: aiohttp.ClientSession, url: str, namespace: str, objects: int) -> Result:
    path = f"{url}/api/v1/namespaces/{namespace}/configmaps"

    async def list_all(_: int) -> None:
        async with session.get(path) as reply:
            items = (await reply.json())["items"]
            assert len(items) == objects + 1  # and the namespace's kube-root-ca.crt

    seconds = await timed(LISTS, list_all)
    return Result(f"LIST {objects} objects", LISTS, seconds, f"{LISTS * objects / seconds:,.0f} objects/s")


async def bench_apply(session: aiohttp.ClientSession, url: str, namespace: str) -> Result:
    async def apply(index: int) -> None:
        name = f"cm-{index % 100:05d}"
        body = json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": str(index)}}
        )
        path = f"{url}/api/v1/namespaces/{namespace}/configmaps/{name}?fieldManager=bench&force=true"
        async with session.patch(path, data=body, headers={"Content-Type": APPLY}) as reply:
            assert reply.status in (200, 201), await reply.text()

    return Result("SSA PATCH (each a write)", APPLIES, await timed(APPLIES, apply))


async def bench_fanout(session: aiohttp.ClientSession, url: str, watchers: int) -> tuple[Result, list[float]]:
    """Writes one at a time; the next goes once every watcher has received the last."""
    namespace = "bench-fanout"
    await create_namespace(session, url, namespace)
    collection = f"{url}/api/v1/namespaces/{namespace}/configmaps"
    async with session.get(collection) as reply:
        revision = (await reply.json())["metadata"]["resourceVersion"]
    sent: dict[str, float] = {}
    latencies: list[float] = []
    connected = asyncio.Semaphore(0)

    async def watch() -> None:
        params = {"watch": "1", "resourceVersion": revision, "timeoutSeconds": "120"}
        async with session.get(collection, params=params, timeout=aiohttp.ClientTimeout(total=150)) as reply:
            connected.release()  # the server subscribes before it answers 200
            async for line in reply.content:
                received = time.perf_counter()
                latencies.append(received - sent[json.loads(line)["object"]["metadata"]["name"]])

    tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
    for _ in range(watchers):
        await connected.acquire()
    started = time.perf_counter()
    for index in range(FANOUT_WRITES):
        name = f"fan-{index:03d}"
        sent[name] = time.perf_counter()
        async with session.post(collection, json={"metadata": {"name": name}}) as reply:
            assert reply.status == 201, await reply.text()
        while len(latencies) < watchers * (index + 1):
            await asyncio.sleep(0.0005)
    seconds = time.perf_counter() - started
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    note = f"{FANOUT_WRITES} writes, one at a time"
    return Result(f"watch events to {watchers}", len(latencies), seconds, note), latencies


def deployment(name: str) -> dict[str, Any]:
    """A Deployment as `planner render` writes one (labels, annotations, a mounted ConfigMap, a port)."""
    labels = {"app": name, "planner.dev/workload": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "labels": {**labels, "applyset.kubernetes.io/part-of": "applyset-bench-v1"},
            "annotations": {"planner.dev/plan": "bench", "planner.dev/hash": "0" * 64},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": name,
                            "image": "nginx:1.27",
                            "ports": [{"containerPort": 8080}],
                            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
                        }
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": f"{name}-config"}}],
                },
            },
        },
    }


class ServerClock:
    """The server process's CPU seconds (user + system), read from /proc; None off Linux."""

    def __init__(self, pid: int) -> None:
        self.stat = Path(f"/proc/{pid}/stat")

    def seconds(self) -> float | None:
        try:
            fields = self.stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class VerbResult:
    what: str
    requests: int
    seconds: float
    server_cpu: float | None

    @property
    def cpu_us(self) -> str:
        return "n/a" if self.server_cpu is None else f"{1e6 * self.server_cpu / self.requests:,.0f}"


class WriteBench:
    """The write path verb by verb, each request a real write of one of `WRITES` Deployments."""

    def __init__(self, session: aiohttp.ClientSession, url: str, clock: ServerClock) -> None:
        self.session, self.clock = session, clock
        self.collection = f"{url}/apis/apps/v1/namespaces/bench-writes/deployments"
        self.created: dict[str, dict[str, Any]] = {}

    async def measure(self, what: str, request: Callable[[int], Awaitable[None]]) -> VerbResult:
        before = self.clock.seconds()
        seconds = await timed(WRITES, request)
        after = self.clock.seconds()
        cpu = None if before is None or after is None else after - before
        return VerbResult(what, WRITES, seconds, cpu)

    async def send(self, method: str, path: str, body: Any, content_type: str, ok: int) -> dict[str, Any]:
        headers = {"Content-Type": content_type}
        async with self.session.request(method, path, data=json.dumps(body), headers=headers) as reply:
            assert reply.status == ok, await reply.text()
            answer: dict[str, Any] = await reply.json()
            return answer

    async def post(self, index: int) -> None:
        name = f"post-{index:04d}"
        path = f"{self.collection}?fieldManager=planner&fieldValidation=Strict"
        self.created[name] = await self.send("POST", path, deployment(name), "application/json", 201)

    async def create_entry_patch(self, index: int) -> None:
        """planner's second request of a create: its POST's Update entry becomes its Apply entry."""
        name = f"post-{index:04d}"
        entry = self.created[name]["metadata"]["managedFields"][0]
        where = "/metadata/managedFields/0"
        operations = [
            {"op": "test", "path": f"{where}/manager", "value": "planner"},
            {"op": "test", "path": f"{where}/operation", "value": "Update"},
            {"op": "test", "path": f"{where}/fieldsV1", "value": entry["fieldsV1"]},
            {"op": "replace", "path": where, "value": {**entry, "operation": "Apply"}},
        ]
        await self.send("PATCH", f"{self.collection}/{name}", operations, JSON_PATCH, 200)

    async def apply(self, index: int, prefix: str, ok: int) -> None:
        name = f"{prefix}-{index:04d}"
        body = deployment(name)
        body["metadata"]["annotations"]["bench/round"] = prefix
        path = f"{self.collection}/{name}?fieldManager=bench&fieldValidation=Strict"
        await self.send("PATCH", path, body, APPLY, ok)

    async def change(self, index: int, content_type: str, value: str) -> None:
        body = {"metadata": {"annotations": {"bench/changed": value}}}
        await self.send("PATCH", f"{self.collection}/post-{index:04d}", body, content_type, 200)

    async def get(self, index: int) -> None:
        async with self.session.get(f"{self.collection}/post-{index:04d}") as reply:
            await reply.read()
            assert reply.status == 200

    async def run(self) -> list[VerbResult]:
        return [
            await self.measure("POST (create)", self.post),
            await self.measure("JSON PATCH (create's entry)", self.create_entry_patch),
            await self.measure("SSA PATCH (create)", lambda i: self.apply(i, "ssa", 201)),
            await self.measure("SSA PATCH (change)", lambda i: self.apply(i, "post", 200)),
            await self.measure("strategic merge PATCH", lambda i: self.change(i, STRATEGIC, "smp")),
            await self.measure("merge PATCH", lambda i: self.change(i, MERGE_PATCH, "merge")),
            await self.measure("GET", self.get),
        ]


def print_writes(results: list[VerbResult]) -> None:
    print(f"\nwrite path: {WRITES} requests each on Deployments, {CONCURRENCY} in flight")
    print(f"{'verb':<28} {'seconds':>8} {'per second':>11} {'server CPU µs/request':>22}")
    for r in results:
        print(f"{r.what:<28} {r.seconds:>8.2f} {r.requests / r.seconds:>11,.0f} {r.cpu_us:>22}")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def print_table(results: list[Result], latencies: list[float]) -> None:
    print(f"{'measurement':<28} {'requests':>9} {'seconds':>8} {'per second':>11}  note")
    for r in results:
        print(f"{r.what:<28} {r.requests:>9} {r.seconds:>8.2f} {r.per_second:>11,.0f}  {r.note}")
    ms = [1000 * v for v in latencies]
    print(
        f"\nwatch fan-out latency, write sent → event received ({len(ms)} deliveries): "
        f"p50 {percentile(ms, 0.5):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms, max {max(ms):.1f} ms, "
        f"mean {statistics.fmean(ms):.1f} ms"
    )


async def run(cluster: ClusterHandle, objects: int, watchers: int) -> None:
    url, pid = cluster.url, cluster.pid
    async with client_session(cluster, limit=watchers + 2 * CONCURRENCY) as session:
        await create_namespace(session, url, "bench-writes")
        writes = await WriteBench(session, url, ServerClock(pid)).run()
        await create_namespace(session, url, "bench")
        await fill(session, url, "bench", objects)
        results = [
            await bench_get(session, url, "bench"),
            await bench_list(session, url, "bench", objects),
            await bench_apply(session, url, "bench"),
        ]
        fanout, latencies = await bench_fanout(session, url, watchers)
        print_table([*results, fanout], latencies)
        print_writes(writes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=100)
    args = parser.parse_args()
    started = time.perf_counter()
    with running_cluster() as cluster:
        asyncio.run(run(cluster, args.objects, args.watchers))
    print(f"\ntotal {time.perf_counter() - started:.1f} s (server start and setup included)")


if __name__ == "__main__":
    main()
