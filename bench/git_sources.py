"""Plan objects with a Git source at scale: PLANS Plans on one repository served by `git daemon`.

    .venv/bin/python bench/git_sources.py [--plans 1000] [--interval 30s] [--idle 90] [--pushes 3]

A fresh simulated in-memory cluster gets the Plan CRD, one namespace per Plan and PLANS Plans, each
`source.git` on the same repository and branch, with its own plan file (`plans/pNNNN.yaml`: one
ConfigMap), `interval` INTERVAL; then one `planner controller --concurrent 8 --interval 1h --hooks-secret
hooks` starts. The git daemon (tests/gitservers.py) logs each fetch (one upload-pack connection), so the
counts are the server's, not the controller's own. Printed:

1. first convergence: seconds until every Plan is Ready at the first commit, and the fetches it took;
2. idle, over `--idle` seconds: fetches per interval (want 1, however many Plans);
3. PUSHES pushes, each changing every plan file, told by a signed GitHub webhook: p50/p99/max over the
   Plans of the seconds from the webhook to the Plan Ready at the new commit, and the fetches each took;
4. the controller's resident memory (VmRSS, and its peak VmHWM).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import re
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.controller import (
    SIMULATION_RESYNC,
    install_crd,
    percentile,
    send,
    start_controllers,
    wait_for,
)
from planner.plan.durations import parse_duration
from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import urlopen
from tests.gitservers import Served, git_daemon, new_repository, upload_packs

TOKEN = "bench-hook-token"


def plan_file(revision: int) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: from-git}\n"
        f"configMaps:\n  - name: settings\n    data: {{revision: '{revision}'}}\n"
    )


def plan_object(index: int, url: str, interval: str) -> dict[str, Any]:
    name = f"p{index:04d}"
    git = {"url": url, "ref": {"branch": "main"}, "path": f"plans/{name}.yaml", "interval": interval}
    return {
        "apiVersion": "planner.dev/v1",
        "kind": "Plan",
        "metadata": {"name": name, "namespace": name},
        "source": {"git": git},
    }


class Applied:
    """Per Plan, when its status first said Ready at a given commit (one watch of every Plan)."""

    def __init__(self, cluster: ClusterHandle) -> None:
        self.seen: dict[str, dict[str, float]] = {}  # commit → Plan → monotonic seconds
        self.lock = threading.Lock()
        self.stream = urlopen(cluster, "/apis/planner.dev/v1/plans?watch=1&timeoutSeconds=7200", timeout=7200)
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        for line in self.stream:
            plan = json.loads(line)["object"]
            status = plan.get("status") or {}
            ready = [c for c in status.get("conditions") or () if c.get("type") == "Ready"]
            revision = str(status.get("lastAppliedRevision", ""))
            if ready and ready[0].get("status") == "True" and revision in str(ready[0].get("message")):
                with self.lock:
                    self.seen.setdefault(revision, {}).setdefault(plan["metadata"]["name"], time.monotonic())

    def count(self, revision: str) -> int:
        with self.lock:
            return len(self.seen.get(revision, {}))

    def times(self, revision: str) -> list[float]:
        with self.lock:
            return list(self.seen.get(revision, {}).values())


def memory(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    found = {key: int(value) for key, value in re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.M)}
    return f"resident {found['VmRSS'] / 1024:.0f} MiB (peak {found['VmHWM'] / 1024:.0f} MiB)"


def metrics_address(log: Path) -> str:
    found = re.search(r"/metrics on (\S+)", log.read_text())
    return found.group(1) if found else ""


def hook(address: str, url: str) -> None:
    body = json.dumps({"ref": "refs/heads/main", "repository": {"clone_url": url}}).encode()
    signature = "sha256=" + hmac.new(TOKEN.encode(), body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "push", "X-Hub-Signature-256": signature}
    request = urllib.request.Request(
        f"http://{address}/hooks/deploy", data=body, headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status == 202, reply.status


def run(args: argparse.Namespace, cluster: ClusterHandle, served: Served, workdir: Path) -> None:
    work = new_repository(served.base, "deploy", workdir / "work")
    names = [f"p{index:04d}" for index in range(args.plans)]
    commit = work.commit({f"plans/{name}.yaml": plan_file(0) for name in names}, "revision 0")
    install_crd(cluster)
    for name in names:
        send(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}}, "application/json")
    secret = {"metadata": {"name": "hooks"}, "stringData": {"deploy": TOKEN}}
    send(cluster, "POST", "/api/v1/namespaces/default/secrets", secret, "application/json")
    for index, name in enumerate(names):
        body = plan_object(index, served.url("deploy"), args.interval)
        send(cluster, "POST", f"/apis/planner.dev/v1/namespaces/{name}/plans", body, "application/json")
    applied = Applied(cluster)
    before = upload_packs(served)
    (controller,) = start_controllers(
        cluster, workdir, [["--concurrent", "8", "--hooks-secret", "hooks"]], interval="1h"
    )
    try:
        revision = f"main@sha1:{commit}"
        took = wait_for(lambda: applied.count(revision) >= args.plans, 3600, "every Plan Ready")
        print(
            f"first convergence: {took:.1f}s for {args.plans} Plans; fetches: {upload_packs(served) - before}"
        )

        interval = parse_duration(args.interval)
        before = upload_packs(served)
        time.sleep(args.idle)
        fetched = upload_packs(served) - before
        per = fetched / (args.idle / interval)
        print(f"idle {args.idle:.0f}s at interval {args.interval}: {fetched} fetches, {per:.2f} per interval")

        address = metrics_address(workdir / "controller-0.log")
        for push in range(1, args.pushes + 1):
            commit = work.commit(
                {f"plans/{name}.yaml": plan_file(push) for name in names}, f"revision {push}"
            )
            revision = f"main@sha1:{commit}"
            before, started = upload_packs(served), time.monotonic()
            hook(address, served.url("deploy"))
            wait_for(
                lambda revision=revision: applied.count(revision) >= args.plans, 3600, "the push applied"
            )
            latencies = [at - started for at in applied.times(revision)]
            print(
                f"push {push} -> Ready (webhook): p50 {percentile(latencies, 50):.1f}s, "
                f"p99 {percentile(latencies, 99):.1f}s, max {max(latencies):.1f}s over {len(latencies)} Plans; "
                f"fetches: {upload_packs(served) - before}"
            )
        print(f"controller memory: {memory(controller.pid)}")
    finally:
        controller.terminate()
        controller.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--plans", type=int, default=1000)
    parser.add_argument("--interval", default="30s")
    parser.add_argument("--idle", type=float, default=90.0)
    parser.add_argument("--pushes", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-git-") as temporary:
        workdir = Path(temporary)
        with (
            running_cluster(simulate=True, resync_seconds=SIMULATION_RESYNC) as cluster,
            git_daemon(workdir / "git") as served,
        ):
            run(args, cluster, served, workdir)


if __name__ == "__main__":
    main()
