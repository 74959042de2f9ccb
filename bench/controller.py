"""`planner controller` at scale: PLANS plans of WORKLOADS Deployments each, plus a warm pool of POOL.

    .venv/bin/python bench/controller.py [--plans 100] [--workloads 10] [--pool 50] [--idle 60]

Starts a simulated in-memory cluster (`running_cluster(simulate=True, resync_seconds=10)`), writes the
plan files, starts one controller as a subprocess (`--interval 5m --resync 30s --poll 2s`) and prints:

1. the seconds until every plan is applied and the pool has POOL ready members (the first start);
2. at idle, over `--idle` seconds: the controller's CPU seconds (utime + stime from /proc) as a
   percentage of one CPU, and its API requests per minute (the server's request log, cleared first;
   the controller is the only client meanwhile);
3. reconcile latency, three times: one plan file's image changed → that plan's reconcile applied and
   converged (the controller's `applied … converged` line for it; the apply waits for the rollout).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.slim.admin import SlimAdmin, urlopen
from planner.slim.cluster import ClusterHandle, running_cluster

REPO = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--plans", type=int, default=100)
    parser.add_argument("--workloads", type=int, default=10)
    parser.add_argument("--pool", type=int, default=50)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args()
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
            admin = SlimAdmin.of(cluster)
            admin.clear_requests()
            before = cpu_seconds(process.pid)
            time.sleep(args.idle)
            cpu = cpu_seconds(process.pid) - before
            requests = admin.requests()
            verbs: dict[str, int] = {}
            for request in requests:
                verbs[request["verb"]] = verbs.get(request["verb"], 0) + 1
            print(
                f"idle {args.idle:.0f}s: controller CPU {cpu:.2f}s ({100 * cpu / args.idle:.1f}% of a CPU), "
                f"{len(requests) * 60 / args.idle:.1f} API requests/min ({json.dumps(verbs, sort_keys=True)})"
            )
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
