"""`planner controller` at scale, from Plan objects (the default) or from plan files (`--files`).

    .venv/bin/python bench/controller.py [--plans 100] [--workloads 10] [--changes 20] [--drifts 20]
        [--idle 60] [--scenarios c1,c8,shards,1x8,4x8] [--create-threads 16] [--real [--nodes 4]]
    .venv/bin/python bench/controller.py --files [--plans 100] [--workloads 10] [--pool 50] [--idle 60]

**Plan objects.** For each scenario, a fresh simulated in-memory cluster
(`running_cluster(simulate=True, resync_seconds=60)`), or with `--real` a real v1.28.7 control plane
(`planner.testing.controlplane`, the binaries in ../shared/k8s-bin) with `--nodes` simulated nodes, gets
the Plan CRD and PLANS Plans of WORKLOADS Deployments each (one namespace per Plan; `--create-threads`
creates at once, over keep-alive connections), then the controller(s) start as subprocesses (`--interval
1h`, so that its periodic pass over every Plan does not fall into the idle window; no `--qps`).
Scenarios: `c1` one controller with `--concurrent 1`, `c8` with `--concurrent 8`, `shards` two
controllers `--shard a`/`--shard b` with `--concurrent 4` each; `SxW` (`1x8`, `4x8`) S shards of W
workers each (one unlabelled controller for S = 1; else `--shard s0` … and the Plans labelled round
robin). Printed per scenario:

1. first convergence: seconds from the controllers' start until every Plan is Ready at generation 1;
2. idle, over `--idle` seconds: the controllers' CPU (utime + stime from /proc) as a percentage of one
   CPU, and their API requests per minute by verb and resource (the server's request log, cleared
   first; the controllers are the only clients meanwhile);
3. CHANGES changes, one after another, each a new image for one Plan's workloads: p50 and p99 of the
   seconds from the change's write to that Plan's status Ready at the new `observedGeneration` (the
   apply waits for the rollout, so Ready means the new Pods are ready);
4. DRIFTS drifts, one after another, each a foreign write (a JSON patch, field manager `bench-drift`)
   of the image of one Plan's first Deployment: p50 and p99 of the seconds from the write until the
   Deployment holds the Plan's image again (the controller's watch corrects it; `--interval 1h`);
5. after the first convergence and at the end, each controller's resident memory (VmRSS, and its peak
   VmHWM, from /proc/PID/status) and that divided by its shard's Plans, and the embedded server's.

On the real control plane the requests are not counted (n/a), nor the server's CPU.

**Plan files** (`--files`): one controller (`--interval 5m --resync 30s --poll 2s --qps 200`) on PLANS
plan files plus a warm pool of POOL; the first start (plans applied, pool Ready), idle CPU and requests,
and the reconcile latency of three plan file changes (its `applied … converged` line).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import http.client
import json
import math
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.slim.certs import tls_context
from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin, authorization, urlopen

REPO = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# The simulated cluster's controllers go over every object this often besides following events, a safety
# net that costs O(objects): at 1,000 Plans (30,000 objects) every 10 s was a third of its CPU, taken from
# the controller under test on the same two CPUs. A real kube-controller-manager resyncs every 12-24 h.
SIMULATION_RESYNC = 60.0


def plan_text(index: int, workloads: int, image: str) -> str:
    lines = [
        "apiVersion: planner.dev/v1",
        "kind: Plan",
        f"metadata: {{name: p{index:03d}, namespace: p{index:03d}}}",
        "workloads:",
    ]
    lines += [f"  - {{name: w{w:02d}, image: {image}}}" for w in range(workloads)]
    return "\n".join(lines) + "\n"


def pool_text(size: int) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: pool, namespace: pool}\n"
        f"warmPools:\n  - name: dev\n    size: {size}\n"
        "    template: {image: ghcr.io/acme/devbox:1, rootfs: {size: 1Gi}, workspace: {size: 1Gi}}\n"
    )


def get(cluster: ClusterHandle, path: str) -> Any:
    with urlopen(cluster, path) as reply:
        return json.loads(reply.read())


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def wait_for(probe: Any, timeout: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if probe():
            return time.monotonic() - started
        time.sleep(0.25)
    raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")


def ready_pool_members(cluster: ClusterHandle) -> int:
    pods = get(cluster, "/api/v1/namespaces/pool/pods?labelSelector=planner.dev/claimed%3Dfalse")["items"]
    return sum(
        1
        for p in pods
        if any(
            c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", [])
        )
    )


def applied_count(log: Path, index: int) -> int:
    return len(re.findall(rf": plan p{index:03d}: applied", log.read_text()))


def change_latency(target: Path, index: int, image: str, workloads: int, log: Path) -> float:
    """Seconds from writing a new image into plan `index` to its reconcile's `applied … converged`
    (the apply waits for the rollout, so converged means the new pods are ready)."""
    seen = applied_count(log, index)
    target.write_text(plan_text(index, workloads, image))
    return wait_for(lambda: applied_count(log, index) > seen, 600, "the changed plan's reconcile")


# --- Plan objects ----------------------------------------------------------------------------------


class ApiFailure(Exception):
    def __init__(self, method: str, path: str, status: int, text: str) -> None:
        super().__init__(f"{method} {path}: {status} {text}")
        self.status = status


class Api:
    """The cluster's API as the bench talks to it: one keep-alive HTTPS connection per thread (20,000
    creates over a new TLS handshake each cost the embedded server more than the creates), as the
    embedded cluster's admin (its token) or the real control plane's (a client certificate)."""

    def __init__(
        self,
        url: str,
        context: ssl.SSLContext,
        headers: dict[str, str],
        kubeconfig: Path,
        *,
        embedded: ClusterHandle | None = None,
    ) -> None:
        self.url, self.context, self.headers, self.kubeconfig = url, context, headers, kubeconfig
        self.embedded = embedded  # its pid (CPU, memory) and request log; None on the real control plane
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 443
        self._local = threading.local()

    @classmethod
    def of_embedded(cls, cluster: ClusterHandle) -> Api:
        return cls(
            cluster.url,
            tls_context(cluster.ca) or ssl.create_default_context(),
            authorization(cluster.token),
            cluster.kubeconfig,
            embedded=cluster,
        )

    @classmethod
    def of_kubeconfig(cls, kubeconfig: Path) -> Api:
        """A real control plane's admin kubeconfig (`planner.testing.controlplane`): CA and client certificate files."""
        config = json.loads(kubeconfig.read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        context = ssl.create_default_context(cafile=cluster["certificate-authority"])
        context.load_cert_chain(user["client-certificate"], user["client-key"])
        return cls(cluster["server"], context, {}, kubeconfig)

    def _connection(self, fresh: bool = False) -> http.client.HTTPSConnection:
        connection: http.client.HTTPSConnection | None = getattr(self._local, "connection", None)
        if connection is None or fresh:
            if connection is not None:
                connection.close()
            connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=120)
            self._local.connection = connection
        return connection

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(3):
            try:
                connection = self._connection(fresh=attempt > 0)
                connection.request(method, path, body=data, headers=headers)
                reply = connection.getresponse()
                text = reply.read()
                break
            except (http.client.HTTPException, OSError):  # a keep-alive connection the server closed
                if attempt == 2:
                    raise
        if reply.status >= 400:
            raise ApiFailure(method, path, reply.status, text.decode(errors="replace"))
        return json.loads(text)

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def stream(self, path: str) -> http.client.HTTPResponse:
        """A long request (a watch) on a connection of its own."""
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=7200)
        connection.request("GET", path, headers={**self.headers, "Accept": "application/json"})
        return connection.getresponse()


def install_crd(api: Api) -> None:
    crd = json.loads(
        subprocess.run(
            [sys.executable, "-m", "planner", "crd", "-o", "json"], cwd=REPO, check=True, capture_output=True
        ).stdout
    )
    for item in crd["items"]:  # a List, as `planner crd -o json` prints it
        api.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", item)
    wait_for(lambda: plans_served(api), 60, "the Plan CRD to be served")


def plans_served(api: Api) -> bool:
    try:
        api.get("/apis/planner.dev/v1/plans?limit=1")
    except ApiFailure:
        return False
    return True


def plan_object(index: int, workloads: int, image: str, shard: str | None) -> dict[str, Any]:
    name = f"p{index:04d}"
    metadata: dict[str, Any] = {"name": name, "namespace": name}
    if shard is not None:
        metadata["labels"] = {"planner.dev/shard": shard}
    return {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": metadata,
        "workloads": [{"name": f"w{w:02d}", "image": image} for w in range(workloads)],
    }


def create_plans(api: Api, args: argparse.Namespace, shards: list[str | None]) -> None:
    """Each Plan's namespace and the Plan, `--create-threads` at once."""

    def create(index: int) -> None:
        plan = plan_object(index, args.workloads, "nginx:1.27", shards[index % len(shards)])
        name = plan["metadata"]["name"]
        api.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        api.request("POST", f"/apis/planner.dev/v1/namespaces/{name}/plans", plan)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.create_threads) as pool:
        for _ in pool.map(create, range(args.plans)):
            pass
    seconds = time.monotonic() - started
    print(
        f"created {args.plans} namespaces and Plans in {seconds:.1f}s ({2 * args.plans / seconds:.0f} creates/s, "
        f"{args.create_threads} threads)",
        flush=True,
    )


def ready_at(plan: dict[str, Any], generation: int) -> bool:
    status = plan.get("status") or {}
    return status.get("observedGeneration") == generation and any(
        c.get("type") == "Ready" and c.get("status") == "True" and c.get("observedGeneration") == generation
        for c in status.get("conditions") or ()
    )


class ReadyPlans:
    """Counts the Plans Ready at generation 1 from one watch (a LIST of every Plan each quarter second
    would load the server more than the controllers do at 1,000 Plans)."""

    def __init__(self, api: Api, plans: int) -> None:
        self.wanted = plans
        self.ready: set[str] = set()
        self.done = threading.Event()
        self.stream = api.stream("/apis/planner.dev/v1/plans?watch=1&timeoutSeconds=7200")
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        for line in self.stream:
            plan = json.loads(line)["object"]
            name = f"{plan['metadata']['namespace']}/{plan['metadata']['name']}"
            if ready_at(plan, 1):
                self.ready.add(name)
            if len(self.ready) >= self.wanted:
                self.done.set()
                self.stream.close()
                return

    def wait(self, timeout: float, progress: Any) -> None:
        started = time.monotonic()
        while not self.done.wait(60):
            progress(len(self.ready))
            if time.monotonic() - started > timeout:
                raise SystemExit(
                    f"timed out after {timeout:.0f}s: {len(self.ready)} of {self.wanted} Plans Ready"
                )


def start_controllers(
    api: Api, workdir: Path, runs: list[list[str]], interval: str
) -> list[subprocess.Popen[bytes]]:
    environment = {**os.environ, "KUBECONFIG": str(api.kubeconfig), "HOME": str(workdir)}
    started = []
    for number, extra in enumerate(runs):
        command = [
            sys.executable,
            "-m",
            "planner",
            "controller",
            "--listen",
            "127.0.0.1:0",
            "--interval",
            interval,
        ]
        with (workdir / f"controller-{number}.log").open("wb") as stream:
            started.append(
                subprocess.Popen(
                    [*command, *extra], cwd=REPO, env=environment, stdout=stream, stderr=subprocess.STDOUT
                )
            )
    return started


LEGACY_SCENARIOS: dict[str, list[tuple[str | None, int]]] = {
    "c1": [(None, 1)],
    "c8": [(None, 8)],
    "shards": [("a", 4), ("b", 4)],
}
SHARDS_BY_WORKERS = re.compile(r"(\d+)x(\d+)")  # "4x8": four shards of 8 workers each


def scenario_runs(scenario: str) -> list[tuple[str | None, int]]:
    """The controllers of a scenario, each (its `--shard` key, None for the unlabelled; its workers)."""
    if scenario in LEGACY_SCENARIOS:
        return LEGACY_SCENARIOS[scenario]
    matched = SHARDS_BY_WORKERS.fullmatch(scenario)
    if matched is None:
        raise SystemExit(
            f"unknown scenario {scenario!r}: one of {', '.join(LEGACY_SCENARIOS)} or SHARDSxWORKERS"
        )
    shards, workers = int(matched[1]), int(matched[2])
    if shards == 1:
        return [(None, workers)]
    return [(f"s{number}", workers) for number in range(shards)]


def controller_argv(shard: str | None, workers: int) -> list[str]:
    return ["--concurrent", str(workers)] + (["--shard", shard] if shard is not None else [])


def memory_of(pid: int) -> tuple[int, int]:
    """The process's resident memory now and at its peak (VmRSS, VmHWM), in bytes."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return tuple(int(fields[name].split()[0]) * 1024 for name in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def memory_lines(
    scenario: str,
    when: str,
    processes: list[subprocess.Popen[bytes]],
    runs: list[tuple[str | None, int]],
    plans: int,
    api: Api,
) -> None:
    for process, (shard, _) in zip(processes, runs, strict=True):
        rss, peak = memory_of(process.pid)
        share = plans // len(runs)
        print(
            f"[{scenario}] {when}: controller {shard or '(unsharded)'} ({share} Plans): VmRSS {rss / 2**20:.0f} MiB, "
            f"VmHWM {peak / 2**20:.0f} MiB; {rss / share:,.0f} bytes/Plan resident, {peak / share:,.0f} at peak",
            flush=True,
        )
    if api.embedded is not None:
        rss, peak = memory_of(api.embedded.pid)
        print(
            f"[{scenario}] {when}: embedded server: VmRSS {rss / 2**20:.0f} MiB, VmHWM {peak / 2**20:.0f} MiB",
            flush=True,
        )


def request_totals(admin: SlimAdmin | None) -> Counter[str]:
    """The embedded server's requests so far by verb and resource, from its counters (its request log
    keeps the last 100,000: a first convergence of 10,000 Plans makes more); the bench's own watch of
    the Plans is one of them."""
    totals: Counter[str] = Counter()
    for (verb, resource, _), value in (admin.request_counts() if admin is not None else {}).items():
        totals[f"{verb} {resource}"] += int(value)
    return totals


def idle_line(api: Api, pids: list[int], seconds: float) -> str:
    """The controllers' CPU and API requests over `seconds` of idling, as one line."""
    admin = SlimAdmin.of(api.embedded) if api.embedded is not None else None
    if admin is not None:
        admin.clear_requests()
    before = sum(cpu_seconds(pid) for pid in pids)
    time.sleep(seconds)
    cpu = sum(cpu_seconds(pid) for pid in pids) - before
    line = f"idle {seconds:.0f}s: controller CPU {cpu:.2f}s ({100 * cpu / seconds:.1f}% of a CPU), "
    if admin is None:
        return line + "API requests/min n/a (the real control plane)"
    requests = admin.requests()
    kinds = Counter(f"{r['verb']} {r['resource'] or r['path']}" for r in requests)
    return line + (
        f"{len(requests) * 60 / seconds:.1f} API requests/min ({json.dumps(dict(sorted(kinds.items())))})"
    )


@contextlib.contextmanager
def objects_cluster(args: argparse.Namespace) -> Iterator[Api]:
    """A fresh simulated embedded cluster, or with `--real` a real control plane with simulated nodes."""
    if not args.real:
        with running_cluster(simulate=True, resync_seconds=SIMULATION_RESYNC) as cluster:
            yield Api.of_embedded(cluster)
        return
    from kubernetes import config

    from planner.testing.controlplane import running_control_plane
    from planner.testing.simnodes import running_node_agent

    pods = args.plans * args.workloads + (args.changes + 1) * args.workloads + 110
    with running_control_plane(REPO.parent / "shared" / "k8s-bin") as plane:
        client = config.new_client_from_config(str(plane.kubeconfig))
        with running_node_agent(client, nodes=args.nodes, pods_per_node=-(-pods // args.nodes)):
            print(f"real control plane ready in {plane.startup_seconds:.1f}s", flush=True)
            yield Api.of_kubeconfig(plane.kubeconfig)


def objects_scenario(args: argparse.Namespace, scenario: str) -> None:
    runs = scenario_runs(scenario)
    shards = [shard for shard, _ in runs]
    workdir = Path(tempfile.mkdtemp(prefix=f"planner-bench-controller-{scenario}-"))
    print(f"[{scenario}] load average {os.getloadavg()[0]:.1f}; logs in {workdir}", flush=True)
    with objects_cluster(args) as api:
        install_crd(api)
        create_plans(api, args, shards)
        admin = SlimAdmin.of(api.embedded) if api.embedded is not None else None
        requests_before = request_totals(admin)
        server_before = cpu_seconds(api.embedded.pid) if api.embedded is not None else 0.0
        processes = start_controllers(api, workdir, [controller_argv(*run) for run in runs], args.interval)
        try:
            started = time.monotonic()
            ReadyPlans(api, args.plans).wait(
                args.timeout,
                lambda ready: print(
                    f"[{scenario}] {time.monotonic() - started:.0f}s: {ready} Plans Ready "
                    f"(load {os.getloadavg()[0]:.1f})",
                    flush=True,
                ),
            )
            seconds = time.monotonic() - started
            controllers = sum(cpu_seconds(p.pid) for p in processes)
            server = (
                f"server and simulated nodes {cpu_seconds(api.embedded.pid) - server_before:.1f}s"
                if api.embedded is not None
                else "the real control plane n/a"
            )
            workers = " + ".join(" ".join(controller_argv(*run)) for run in runs)
            line = (
                f"[{scenario}: {workers}] {args.plans} Plans x {args.workloads} Deployments: "
                f"first convergence {seconds:.1f}s (load {os.getloadavg()[0]:.1f}); "
                f"CPU: controllers {controllers:.1f}s, {server}"
            )
            if admin is not None:
                by_plan = request_totals(admin) - requests_before
                line += "; the controllers' requests per Plan: " + json.dumps(
                    {k: round(v / args.plans, 2) for k, v in sorted(by_plan.items())}
                )
            print(line, flush=True)
            memory_lines(scenario, "converged", processes, runs, args.plans, api)
            time.sleep(5)  # the last rollouts' status updates
            print(f"[{scenario}] " + idle_line(api, [p.pid for p in processes], args.idle), flush=True)
            latencies = [change_to_ready(api, args, round_) for round_ in range(args.changes)]
            if latencies:
                print(
                    f"[{scenario}] {len(latencies)} changes, change -> Ready at the new observedGeneration: "
                    f"p50 {percentile(latencies, 50):.2f}s, p99 {percentile(latencies, 99):.2f}s, "
                    f"max {max(latencies):.2f}s",
                    flush=True,
                )
            drifts = [drift_to_corrected(api, args, round_) for round_ in range(args.drifts)]
            if drifts:
                print(
                    f"[{scenario}] {len(drifts)} drifts, foreign write -> corrected: "
                    f"p50 {percentile(drifts, 50):.2f}s, p99 {percentile(drifts, 99):.2f}s, "
                    f"max {max(drifts):.2f}s",
                    flush=True,
                )
            memory_lines(scenario, "at the end", processes, runs, args.plans, api)
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=120)


def change_to_ready(api: Api, args: argparse.Namespace, round_: int) -> float:
    """Seconds from a new image written into one Plan to its status Ready at the new generation."""
    index = (round_ * 37) % args.plans
    name = f"p{index:04d}"
    workloads = [{"name": f"w{w:02d}", "image": f"nginx:1.{28 + round_}"} for w in range(args.workloads)]
    path = f"/apis/planner.dev/v1/namespaces/{name}/plans/{name}"
    started = time.monotonic()
    changed = api.request("PATCH", path, {"workloads": workloads}, "application/merge-patch+json")
    generation = changed["metadata"]["generation"]
    while not ready_at(api.get(path), generation):
        if time.monotonic() - started > 600:
            raise SystemExit(f"plan {name} not Ready at generation {generation} after 600s")
        time.sleep(0.02)
    return time.monotonic() - started


def drift_to_corrected(api: Api, args: argparse.Namespace, round_: int) -> float:
    """Seconds from a foreign write of one Deployment's image to the controller writing the Plan's back."""
    name = f"p{(round_ * 53 + 11) % args.plans:04d}"
    path = f"/apis/apps/v1/namespaces/{name}/deployments/w00"

    def image() -> str:
        return str(api.get(path)["spec"]["template"]["spec"]["containers"][0]["image"])

    planned = image()
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": f"drift:{round_}"}]
    started = time.monotonic()
    api.request("PATCH", f"{path}?fieldManager=bench-drift", patch, "application/json-patch+json")
    while image() != planned:
        if time.monotonic() - started > 600:
            raise SystemExit(f"{name}/w00's drift not corrected after 600s")
        time.sleep(0.02)
    return time.monotonic() - started


def percentile(values: list[float], nth: int) -> float:
    """The nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(nth / 100 * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", action="store_true", help="plan files and a warm pool, not Plan objects")
    parser.add_argument("--plans", type=int, default=100)
    parser.add_argument("--workloads", type=int, default=10)
    parser.add_argument("--pool", type=int, default=50, help="--files: the warm pool's size")
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--changes", type=int, default=20, help="Plan objects: changes timed to Ready")
    parser.add_argument("--drifts", type=int, default=20, help="Plan objects: drifts timed to corrected")
    parser.add_argument(
        "--interval",
        default="1h",
        help="Plan objects: the controllers' --interval (its periodic pass is not idle)",
    )
    parser.add_argument(
        "--scenarios",
        default="c1,c8,shards",
        help=f"of {', '.join(LEGACY_SCENARIOS)}, or SHARDSxWORKERS (1x8: one controller of 8 workers; 4x8: four shards)",
    )
    parser.add_argument("--create-threads", type=int, default=16, help="Plan objects: creates in flight")
    parser.add_argument("--timeout", type=float, default=3600, help="Plan objects: for the first convergence")
    parser.add_argument(
        "--real", action="store_true", help="Plan objects: a real control plane, simulated nodes"
    )
    parser.add_argument("--nodes", type=int, default=4, help="--real: simulated nodes")
    args = parser.parse_args()
    if args.files:
        files_bench(args)
        return
    for scenario in args.scenarios.split(","):
        objects_scenario(args, scenario)


def files_bench(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="planner-bench-controller-"))
    plans = workdir / "plans"
    plans.mkdir()
    for index in range(args.plans):
        (plans / f"p{index:03d}.yaml").write_text(plan_text(index, args.workloads, "nginx:1.27"))
    (plans / "pool.yaml").write_text(pool_text(args.pool))
    with running_cluster(simulate=True, resync_seconds=10) as cluster:
        log = workdir / "controller.log"
        environment = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HOME": str(workdir)}
        command = [
            sys.executable,
            "-m",
            "planner",
            "controller",
            "--plans",
            str(plans),
            "--listen",
            "127.0.0.1:0",
            "--interval",
            "5m",
            "--resync",
            "30s",
            "--poll",
            "2s",
            "--qps",
            "200",
        ]
        with log.open("wb") as stream:
            process = subprocess.Popen(
                command, cwd=REPO, env=environment, stdout=stream, stderr=subprocess.STDOUT
            )
        try:
            started = time.monotonic()
            wait_for(
                lambda: (
                    len(re.findall(r": plan p\d+: applied", log.read_text())) >= args.plans
                    and ready_pool_members(cluster) >= args.pool
                ),
                1800,
                "the first convergence",
            )
            print(
                f"{args.plans} plans x {args.workloads} workloads + a pool of {args.pool}: "
                f"converged from start in {time.monotonic() - started:.1f}s"
            )
            time.sleep(5)  # let the last pool events settle
            print(idle_line(Api.of_embedded(cluster), [process.pid], args.idle))
            for round_, image in enumerate(["nginx:1.28", "nginx:1.29", "nginx:1.30"], start=1):
                seconds = change_latency(plans / f"p{round_:03d}.yaml", round_, image, args.workloads, log)
                print(
                    f"change {round_}: plan file changed -> its reconcile applied and converged in {seconds:.1f}s"
                )
        finally:
            process.terminate()
            process.wait(timeout=120)


if __name__ == "__main__":
    main()
