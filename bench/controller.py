"""`planner controller` at scale, from Plan objects (the default) or from plan files (`--files`).

    .venv/bin/python bench/controller.py [--plans 100] [--workloads 10] [--changes 20] [--drifts 20]
        [--idle 60] [--scenarios c1,c8,shards]
    .venv/bin/python bench/controller.py --files [--plans 100] [--workloads 10] [--pool 50] [--idle 60]

**Plan objects.** For each scenario, a fresh simulated in-memory cluster
(`running_cluster(simulate=True, resync_seconds=60)`) gets the Plan CRD and PLANS Plans of WORKLOADS
Deployments each (one namespace per Plan), then the controller(s) start as subprocesses (`--interval
1h`, so that its periodic pass over every Plan does not fall into the idle window; no `--qps`). Scenarios: `c1` one controller with `--concurrent 1`, `c8` with `--concurrent 8`,
`shards` two controllers `--shard a`/`--shard b` with `--concurrent 4` each, the Plans labelled half
and half. Printed per scenario:

1. first convergence: seconds from the controllers' start until every Plan is Ready at generation 1;
2. idle, over `--idle` seconds: the controllers' CPU (utime + stime from /proc) as a percentage of one
   CPU, and their API requests per minute by verb and resource (the server's request log, cleared
   first; the controllers are the only clients meanwhile);
3. CHANGES changes, one after another, each a new image for one Plan's workloads: p50 and p99 of the
   seconds from the change's write to that Plan's status Ready at the new `observedGeneration` (the
   apply waits for the rollout, so Ready means the new Pods are ready);
4. DRIFTS drifts, one after another, each a foreign write (a JSON patch, field manager `bench-drift`)
   of the image of one Plan's first Deployment: p50 and p99 of the seconds from the write until the
   Deployment holds the Plan's image again (the controller's watch corrects it; `--interval 1h`).

**Plan files** (`--files`): one controller (`--interval 5m --resync 30s --poll 2s --qps 200`) on PLANS
plan files plus a warm pool of POOL; the first start (plans applied, pool Ready), idle CPU and requests,
and the reconcile latency of three plan file changes (its `applied … converged` line).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin, urlopen

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


def idle_line(cluster: ClusterHandle, pids: list[int], seconds: float) -> str:
    """The controllers' CPU and API requests over `seconds` of idling, as one line."""
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()
    before = sum(cpu_seconds(pid) for pid in pids)
    time.sleep(seconds)
    cpu = sum(cpu_seconds(pid) for pid in pids) - before
    requests = admin.requests()
    kinds = Counter(f"{r['verb']} {r['resource'] or r['path']}" for r in requests)
    return (
        f"idle {seconds:.0f}s: controller CPU {cpu:.2f}s ({100 * cpu / seconds:.1f}% of a CPU), "
        f"{len(requests) * 60 / seconds:.1f} API requests/min ({json.dumps(dict(sorted(kinds.items())))})"
    )


# --- Plan objects ----------------------------------------------------------------------------------


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


def send(cluster: ClusterHandle, method: str, path: str, body: Any, content_type: str) -> Any:
    try:
        with urlopen(
            cluster,
            path,
            method=method,
            data=json.dumps(body).encode(),
            headers={"Content-Type": content_type},
            timeout=60,
        ) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as error:
        raise SystemExit(f"{method} {path}: {error.code} {error.read().decode(errors='replace')}") from None


def install_crd(cluster: ClusterHandle) -> None:
    crd = json.loads(
        subprocess.run(
            [sys.executable, "-m", "planner", "crd", "-o", "json"], cwd=REPO, check=True, capture_output=True
        ).stdout
    )
    for item in crd["items"]:  # a List, as `planner crd -o json` prints it
        send(
            cluster,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            item,
            "application/json",
        )
    wait_for(lambda: plans_listed(cluster) is not None, 60, "the Plan CRD to be served")


def plans_listed(cluster: ClusterHandle) -> list[dict[str, Any]] | None:
    try:
        items: list[dict[str, Any]] = get(cluster, "/apis/planner.dev/v1/plans")["items"]
    except urllib.error.HTTPError:
        return None
    return items


def ready_at(plan: dict[str, Any], generation: int) -> bool:
    status = plan.get("status") or {}
    return status.get("observedGeneration") == generation and any(
        c.get("type") == "Ready" and c.get("status") == "True" and c.get("observedGeneration") == generation
        for c in status.get("conditions") or ()
    )


class ReadyPlans:
    """Counts the Plans Ready at generation 1 from one watch (a LIST of every Plan each quarter second
    would load the server more than the controllers do at 1,000 Plans)."""

    def __init__(self, cluster: ClusterHandle, plans: int) -> None:
        self.wanted = plans
        self.ready: set[str] = set()
        self.done = threading.Event()
        self.stream = urlopen(cluster, "/apis/planner.dev/v1/plans?watch=1&timeoutSeconds=7200", timeout=7200)
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

    def wait(self, timeout: float) -> None:
        if not self.done.wait(timeout):
            raise SystemExit(
                f"timed out after {timeout:.0f}s: {len(self.ready)} of {self.wanted} Plans Ready"
            )


def start_controllers(
    cluster: ClusterHandle, workdir: Path, runs: list[list[str]], interval: str
) -> list[subprocess.Popen[bytes]]:
    environment = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "HOME": str(workdir)}
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


SCENARIOS = {
    "c1": [["--concurrent", "1"]],
    "c8": [["--concurrent", "8"]],
    "shards": [["--concurrent", "4", "--shard", "a"], ["--concurrent", "4", "--shard", "b"]],
}


def objects_scenario(args: argparse.Namespace, scenario: str) -> None:
    runs = SCENARIOS[scenario]
    sharded = scenario == "shards"
    workdir = Path(tempfile.mkdtemp(prefix=f"planner-bench-controller-{scenario}-"))
    with running_cluster(simulate=True, resync_seconds=SIMULATION_RESYNC) as cluster:
        install_crd(cluster)
        for index in range(args.plans):
            shard = ("a", "b")[index % 2] if sharded else None
            plan = plan_object(index, args.workloads, "nginx:1.27", shard)
            name = plan["metadata"]["name"]
            send(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}}, "application/json")
            send(cluster, "POST", f"/apis/planner.dev/v1/namespaces/{name}/plans", plan, "application/json")
        admin = SlimAdmin.of(cluster)
        admin.clear_requests()
        server_before = cpu_seconds(cluster.pid)
        processes = start_controllers(cluster, workdir, runs, args.interval)
        try:
            started = time.monotonic()
            ReadyPlans(cluster, args.plans).wait(3600)
            seconds = time.monotonic() - started
            controllers = sum(cpu_seconds(p.pid) for p in processes)
            server = cpu_seconds(cluster.pid) - server_before
            by_plan = Counter(f"{r['verb']} {r['resource'] or r['path']}" for r in admin.requests())
            workers = " + ".join(" ".join(run) for run in runs)
            print(
                f"[{scenario}: {workers}] {args.plans} Plans x {args.workloads} Deployments: "
                f"first convergence {seconds:.1f}s; CPU: controllers {controllers:.1f}s, "
                f"server and simulated nodes {server:.1f}s; the controllers' requests per Plan: "
                + json.dumps({k: round(v / args.plans, 2) for k, v in sorted(by_plan.items())}),
                flush=True,
            )
            time.sleep(5)  # the last rollouts' status updates
            print(f"[{scenario}] " + idle_line(cluster, [p.pid for p in processes], args.idle), flush=True)
            latencies = [change_to_ready(cluster, args, round_) for round_ in range(args.changes)]
            if latencies:
                print(
                    f"[{scenario}] {len(latencies)} changes, change -> Ready at the new observedGeneration: "
                    f"p50 {percentile(latencies, 50):.2f}s, p99 {percentile(latencies, 99):.2f}s, "
                    f"max {max(latencies):.2f}s",
                    flush=True,
                )
            drifts = [drift_to_corrected(cluster, args, round_) for round_ in range(args.drifts)]
            if drifts:
                print(
                    f"[{scenario}] {len(drifts)} drifts, foreign write -> corrected: "
                    f"p50 {percentile(drifts, 50):.2f}s, p99 {percentile(drifts, 99):.2f}s, "
                    f"max {max(drifts):.2f}s",
                    flush=True,
                )
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=120)


def change_to_ready(cluster: ClusterHandle, args: argparse.Namespace, round_: int) -> float:
    """Seconds from a new image written into one Plan to its status Ready at the new generation."""
    index = (round_ * 37) % args.plans
    name = f"p{index:04d}"
    workloads = [{"name": f"w{w:02d}", "image": f"nginx:1.{28 + round_}"} for w in range(args.workloads)]
    path = f"/apis/planner.dev/v1/namespaces/{name}/plans/{name}"
    started = time.monotonic()
    changed = send(cluster, "PATCH", path, {"workloads": workloads}, "application/merge-patch+json")
    generation = changed["metadata"]["generation"]
    while not ready_at(get(cluster, path), generation):
        if time.monotonic() - started > 600:
            raise SystemExit(f"plan {name} not Ready at generation {generation} after 600s")
        time.sleep(0.02)
    return time.monotonic() - started


def drift_to_corrected(cluster: ClusterHandle, args: argparse.Namespace, round_: int) -> float:
    """Seconds from a foreign write of one Deployment's image to the controller writing the Plan's back."""
    name = f"p{(round_ * 53 + 11) % args.plans:04d}"
    path = f"/apis/apps/v1/namespaces/{name}/deployments/w00"

    def image() -> str:
        return str(get(cluster, path)["spec"]["template"]["spec"]["containers"][0]["image"])

    planned = image()
    patch = [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": f"drift:{round_}"}]
    started = time.monotonic()
    send(cluster, "PATCH", f"{path}?fieldManager=bench-drift", patch, "application/json-patch+json")
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
    parser.add_argument("--scenarios", default="c1,c8,shards", help=f"of {', '.join(SCENARIOS)}")
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
            print(idle_line(cluster, [process.pid], args.idle))
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
