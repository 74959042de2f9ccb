"""The requests of a no-op run, counted by the embedded cluster's /metrics: `planner plan` and `planner
apply` (which waits) of a plan whose objects are all ready, and `planner apply` of the same plan with one
Deployment that can never become ready (which it waits for, then fails with the reason).

A run ends 0 only when every object of the plan is ready; whether an unchanged object is judged from the
copy the plan already read, so a no-op apply of a ready plan must cost the plan's reads and the run lock
and nothing more. `--planner DIR` runs another checkout's planner (an older commit's) for the before.

    python bench/noop_requests.py --workloads 100 [--planner ../old-checkout]

`--reads` counts only a plan's reads, by verb and resource, at sizes where waiting for readiness would
take long (10,000 workloads): on a cluster whose controllers are paused, a first `plan`, then `apply
--no-wait`, then `plan` again; a plan's reads do not depend on readiness.

    python bench/noop_requests.py --reads --workloads 10000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin

REPO = Path(__file__).resolve().parent.parent


def plan_text(workloads: int, namespace: str, *, stuck: bool) -> str:
    lines = ["apiVersion: planner.dev/v1", "kind: Plan", f"metadata: {{name: noop, namespace: {namespace}}}"]
    lines.append("workloads:")
    lines += [f"  - {{name: w{index:04d}, image: 'nginx:1.27'}}" for index in range(workloads)]
    if stuck:  # no node has this label: it is never scheduled
        lines.append(
            "  - name: stuck\n    image: nginx:1.27\n    scheduling: [{type: node, key: disk, operator: In, values: [ssd]}]"
        )
    return "\n".join(lines) + "\n"


def requests(admin: SlimAdmin, *, by_resource: bool = False) -> Counter[str]:
    counts: Counter[str] = Counter()
    for (verb, resource, _code), count in admin.request_counts().items():
        counts[f"{verb} {resource}" if by_resource else verb] += int(count)
    return counts


def planner(checkout: Path, handle: ClusterHandle, *args: str) -> int:
    environment = {"KUBECONFIG": str(handle.kubeconfig), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-m", "planner", *args]
    return subprocess.run(command, cwd=checkout, env=environment, capture_output=True, check=False).returncode


def counted(
    checkout: Path, handle: ClusterHandle, *args: str, by_resource: bool = False
) -> tuple[int, Counter[str]]:
    admin = SlimAdmin.of(handle)
    before = requests(admin, by_resource=by_resource)
    code = planner(checkout, handle, *args)
    return code, requests(admin, by_resource=by_resource) - before


def reads(checkout: Path, workloads: int) -> list[tuple[str, tuple[int, Counter[str]]]]:
    """A first plan's and a no-op plan's requests by verb and resource (see the module's docstring)."""
    paused = ("controllers", "nodeagent")
    with tempfile.TemporaryDirectory() as scratch, running_cluster(simulate=True, paused=paused) as handle:
        plan = Path(scratch) / "plan.yaml"
        plan.write_text(plan_text(workloads, "reads", stuck=False))
        first = counted(checkout, handle, "plan", str(plan), by_resource=True)
        print(f"plan (first): exit {first[0]}, {sorted(first[1].items())}", flush=True)
        started = time.perf_counter()
        assert planner(checkout, handle, "apply", str(plan), "--no-wait") == 0
        print(f"apply --no-wait of {workloads} workloads: {time.perf_counter() - started:.1f} s")
        return [
            ("plan (first)", first),
            ("plan (applied)", counted(checkout, handle, "plan", str(plan), by_resource=True)),
        ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--planner", type=Path, default=REPO, help="the checkout whose planner runs")
    parser.add_argument("--reads", action="store_true", help="only a plan's reads, controllers paused")
    args = parser.parse_args()
    if args.reads:
        report(args, reads(args.planner, args.workloads))
        return
    with tempfile.TemporaryDirectory() as scratch, running_cluster(simulate=True, time_scale=0.2) as handle:
        ready, stuck = Path(scratch) / "ready.yaml", Path(scratch) / "stuck.yaml"
        ready.write_text(plan_text(args.workloads, "noop", stuck=False))
        stuck.write_text(plan_text(args.workloads, "stuck", stuck=True))
        assert planner(args.planner, handle, "apply", str(ready), "--timeout", "300s") == 0
        planner(
            args.planner, handle, "apply", str(stuck), "--timeout", "5s"
        )  # fails: `stuck` never schedules
        rows = [
            ("plan (ready)", counted(args.planner, handle, "plan", str(ready))),
            ("apply (ready)", counted(args.planner, handle, "apply", str(ready))),
            ("apply (1 never ready)", counted(args.planner, handle, "apply", str(stuck), "--timeout", "5s")),
        ]
    report(args, rows)


def report(args: argparse.Namespace, rows: list[tuple[str, tuple[int, Counter[str]]]]) -> None:
    print(f"{args.workloads} workloads, planner from {args.planner}")
    print(f"{'no-op run':<24}{'exit':>5}{'requests':>10}  by verb")
    for name, (code, verbs) in rows:
        by_verb = ", ".join(f"{verb} {count}" for verb, count in sorted(verbs.items()))
        print(f"{name:<24}{code:>5}{sum(verbs.values()):>10}  {by_verb}")


if __name__ == "__main__":
    main()
