"""planner against kubectl on one N-workload plan (Deployment + ConfigMap + Service each), side by side.

    .venv/bin/python bench/plan_apply.py [--workloads 1000] [--kubeconfig PATH]

Without `--kubeconfig` (or `KUBECONFIG`) it starts an embedded cluster with the simulation on (for
/metrics) and its controllers and node agent paused (nothing here waits for readiness, and the
controllers are slow at this size). Each tool works in its own fresh namespace:

1. create: `planner apply --no-wait` of the plan vs `kubectl apply -f` of the same plan's rendered
   manifests (`planner render`, for the other namespace);
2. no-op: `planner plan` vs `kubectl diff -f` of those manifests, each after its own create.

It prints both times, their ratio, and the API requests each made by verb (from the embedded cluster's
/metrics; "n/a" against other clusters). Then what the run lock costs: the Lease requests of the
create (one renewal per third of the lease duration while it runs) and of a no-op `planner apply`,
whose requests are a no-op `planner plan`'s plus the lock's. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from planner.kube.client import ClientOptions

REPO = Path(__file__).resolve().parents[1]
PLANNER = [sys.executable, "-m", "planner"]


def plan_text(workloads: int, namespace: str) -> str:
    lines = ["apiVersion: planner.dev/v1", "kind: Plan", f"metadata: {{name: bench, namespace: {namespace}}}"]
    lines.append("configMaps:")
    lines += [f"  - {{name: app-{i}-config, data: {{INDEX: '{i}'}}}}" for i in range(workloads)]
    lines.append("workloads:")
    lines += [
        f"  - {{name: app-{i}, image: 'nginx:1.27', port: 8080, expose: true, replicas: 1,"
        f" volumes: [{{configMap: app-{i}-config, mountPath: /etc/app}}]}}"
        for i in range(workloads)
    ]
    return "\n".join(lines) + "\n"


def run(command: list[str], kubeconfig: Path, *, ok: tuple[int, ...] = (0,)) -> float:
    started = time.perf_counter()
    env = {"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if result.returncode not in ok:
        raise SystemExit(f"{' '.join(command[:4])}… exited {result.returncode}: {result.stderr[-2000:]}")
    return elapsed


def requests_by_verb(url: str | None, resource: str | None = None) -> Counter[str]:
    """`slim_requests_total` summed by verb (of one resource, when given), from the embedded cluster's
    /metrics."""
    counts: Counter[str] = Counter()
    if url is None:
        return counts
    try:
        text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    except OSError:
        return counts
    for match in re.finditer(r"^slim_requests_total\{([^}]*)\} ([0-9.e+]+)$", text, re.MULTILINE):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        if resource is None or labels.get("resource") == resource:
            counts[labels.get("verb", "?")] += int(float(match.group(2)))
    return counts


@contextlib.contextmanager
def cluster(kubeconfig: str | None) -> Iterator[tuple[Path, str | None]]:
    if kubeconfig:
        yield Path(kubeconfig), None
        return
    from planner.slim.cluster import running_cluster

    with running_cluster(simulate=True, paused=("controllers", "nodeagent")) as handle:
        yield Path(handle.kubeconfig), handle.url


def measured(
    command: list[str], kubeconfig: Path, url: str | None, ok: tuple[int, ...]
) -> tuple[float, Counter[str], Counter[str]]:
    """Seconds, all requests by verb, and the run lock's (Lease) requests by verb."""
    before, leases = requests_by_verb(url), requests_by_verb(url, "leases")
    elapsed = run(command, kubeconfig, ok=ok)
    return elapsed, requests_by_verb(url) - before, requests_by_verb(url, "leases") - leases


Row = tuple[str, float, Counter[str], Counter[str]]


def render(plan: Path, into: Path) -> None:
    rendered = subprocess.run(
        [*PLANNER, "render", str(plan), "--show-secrets"], capture_output=True, text=True, check=True
    )
    into.write_text(rendered.stdout)


def fresh_namespace(kubeconfig: Path, tag: str) -> str:
    name = f"bench-{tag}-{int(time.time())}"
    run(["kubectl", "create", "namespace", name], kubeconfig)
    return name


def compare(
    workloads: int, kubeconfig: Path, url: str | None, scratch: Path
) -> tuple[list[Row], list[Row], list[Row]]:
    """(create rows, no-op rows, lock rows): planner in one fresh namespace, kubectl in another."""
    mine, theirs = fresh_namespace(kubeconfig, "planner"), fresh_namespace(kubeconfig, "kubectl")
    plan, other = scratch / "planner.yaml", scratch / "kubectl.yaml"
    plan.write_text(plan_text(workloads, mine))
    other.write_text(plan_text(workloads, theirs))
    manifests = scratch / "manifests.yaml"
    render(other, manifests)
    creates = [
        (
            "planner apply --no-wait",
            *measured([*PLANNER, "apply", str(plan), "--no-wait"], kubeconfig, url, (0,)),
        ),
        ("kubectl apply -f", *measured(["kubectl", "apply", "-f", str(manifests)], kubeconfig, url, (0,))),
    ]
    noops = [
        (
            "planner plan",
            *measured([*PLANNER, "plan", str(plan), "--detailed-exitcode"], kubeconfig, url, (0,)),
        ),
        ("kubectl diff -f", *measured(["kubectl", "diff", "-f", str(manifests)], kubeconfig, url, (0,))),
    ]
    locked = [
        creates[0],
        (
            "planner apply (no-op)",
            *measured([*PLANNER, "apply", str(plan), "--no-wait"], kubeconfig, url, (0,)),
        ),
        noops[0],
    ]
    return creates, noops, locked


def by_verb(requests: Counter[str]) -> str:
    return ", ".join(f"{verb} {n}" for verb, n in sorted(requests.items()) if n) or "n/a"


def print_rows(title: str, rows: list[Row]) -> None:
    print(f"{title:<28}{'seconds':>10}{'requests':>10}  by verb")
    for name, seconds, requests, _ in rows:
        print(f"{name:<28}{seconds:>10.2f}{sum(requests.values()) or 'n/a':>10}  {by_verb(requests)}")
    (mine, mine_time, _, _), (theirs, theirs_time, _, _) = rows
    print(f"ratio {theirs} / {mine}: {theirs_time / mine_time:.1f}x\n")


def print_lock(rows: list[Row]) -> None:
    """The run lock's requests: taking and releasing it, and a renewal per 10 s of a 30 s lease."""
    (create, create_time, _, create_leases), (noop, _, noop_all, _), (plan, _, plan_all, _) = rows
    renewals = create_leases["update"]
    print(f"run lock (Lease requests){'':<4}{'seconds':>10}{'requests':>10}  by verb")
    for name, seconds, _, leases in rows[:2]:
        print(f"{name:<28}{seconds:>10.2f}{sum(leases.values()) or 'n/a':>10}  {by_verb(leases)}")
    print(f"{create}: {renewals} renewals in {create_time:.1f}s (one per 10s of the default 30s lease)")
    extra = noop_all - plan_all
    print(
        f"{noop} makes {sum(noop_all.values())} requests, {plan} {sum(plan_all.values())}: {by_verb(extra)} more"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    args = parser.parse_args()
    with cluster(args.kubeconfig) as (kubeconfig, url), tempfile.TemporaryDirectory() as scratch:
        creates, noops, locked = compare(args.workloads, kubeconfig, url, Path(scratch))
    print(
        f"{args.workloads} workloads ({3 * args.workloads} objects: Deployment + ConfigMap + Service each)\n"
    )
    print_rows("create", creates)
    print_rows("no-op", noops)
    print_lock(locked)
    limit = ClientOptions()
    print(
        f"planner's client limits itself to {limit.qps:g} requests/s (burst {limit.burst}); kubectl does not."
    )


if __name__ == "__main__":
    main()
