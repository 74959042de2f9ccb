"""planner against kubectl on one N-workload plan (Deployment + ConfigMap + Service each), side by side.

    .venv/bin/python bench/plan_apply.py [--workloads 1000] [--kubeconfig PATH]

Without `--kubeconfig` it starts an embedded cluster. It creates the objects with
`kubectl apply --server-side --field-manager planner` (planner's own write path) from planner's rendered
manifests, then times a no-op `planner plan` against a no-op `kubectl diff -f` of the same manifests and
prints both times, their ratio, and the API requests each made by verb (from the embedded cluster's
/metrics; not available against other clusters). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

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
    result = subprocess.run(
        command, capture_output=True, text=True, env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"}
    )
    elapsed = time.perf_counter() - started
    if result.returncode not in ok:
        raise SystemExit(f"{' '.join(command[:4])}… exited {result.returncode}: {result.stderr[-2000:]}")
    return elapsed


def requests_by_verb(url: str | None) -> Counter[str]:
    """`slim_requests_total` summed by verb, from the embedded cluster's /metrics."""
    counts: Counter[str] = Counter()
    if url is None:
        return counts
    try:
        text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    except OSError:
        return counts
    for match in re.finditer(r"^slim_requests_total\{([^}]*)\} ([0-9.e+]+)$", text, re.MULTILINE):
        verb = re.search(r'verb="([^"]*)"', match.group(1))
        counts[verb.group(1) if verb else "?"] += int(float(match.group(2)))
    return counts


@contextlib.contextmanager
def cluster(kubeconfig: str | None) -> Iterator[tuple[Path, str | None]]:
    if kubeconfig:
        yield Path(kubeconfig), None
        return
    from planner.slim.cluster import running_cluster

    with running_cluster() as handle:
        yield Path(handle.kubeconfig), handle.url


def measured(
    command: list[str], kubeconfig: Path, url: str | None, ok: tuple[int, ...]
) -> tuple[float, Counter[str]]:
    before = requests_by_verb(url)
    elapsed = run(command, kubeconfig, ok=ok)
    return elapsed, requests_by_verb(url) - before


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--kubeconfig")
    args = parser.parse_args()
    namespace = "bench"
    with cluster(args.kubeconfig) as (kubeconfig, url), tempfile.TemporaryDirectory() as scratch:
        plan = Path(scratch) / "bench.yaml"
        plan.write_text(plan_text(args.workloads, namespace))
        manifests = Path(scratch) / "manifests.yaml"
        rendered = subprocess.run(
            [*PLANNER, "render", str(plan), "--show-secrets"], capture_output=True, text=True, check=True
        )
        manifests.write_text(rendered.stdout)
        run(["kubectl", "create", "namespace", namespace], kubeconfig, ok=(0, 1))
        create = ["kubectl", "apply", "--server-side", "--field-manager", "planner", "-f", str(manifests)]
        created_in = run(create, kubeconfig)
        planner_time, planner_requests = measured(
            [*PLANNER, "plan", str(plan), "--detailed-exitcode"], kubeconfig, url, (0,)
        )
        kubectl_time, kubectl_requests = measured(
            ["kubectl", "diff", "-f", str(manifests)], kubeconfig, url, (0,)
        )
    objects = 3 * args.workloads
    print(
        f"{args.workloads} workloads ({objects} objects); created with kubectl apply --server-side in {created_in:.1f} s"
    )
    print(f"{'no-op':<28}{'seconds':>10}{'requests':>10}  by verb")
    for name, seconds, requests in (
        ("planner plan", planner_time, planner_requests),
        ("kubectl diff -f", kubectl_time, kubectl_requests),
    ):
        verbs = ", ".join(f"{verb} {n}" for verb, n in sorted(requests.items())) or "n/a"
        print(f"{name:<28}{seconds:>10.2f}{sum(requests.values()) or 'n/a':>10}  {verbs}")
    print(f"ratio kubectl diff / planner plan: {kubectl_time / planner_time:.1f}x")


if __name__ == "__main__":
    main()
