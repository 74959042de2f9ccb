"""The requests of a no-op run, counted by the embedded cluster's /metrics: `planner plan` and `planner
apply` (which waits) of a plan whose objects are all ready, and `planner apply` of the same plan with one
Deployment that can never become ready (which it waits for, then fails with the reason).

A run ends 0 only when every object of the plan is ready; whether an unchanged object is judged from the
copy the plan already read, so a no-op apply of a ready plan must cost the plan's reads and the run lock
and nothing more. `--planner DIR` runs another checkout's planner (an older commit's) for the before.

    python bench/noop_requests.py --workloads 100 [--planner ../old-checkout]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
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


def requests(admin: SlimAdmin) -> Counter[str]:
    counts: Counter[str] = Counter()
    for (verb, _resource, _code), count in admin.request_counts().items():
        counts[verb] += int(count)
    return counts


def planner(checkout: Path, handle: ClusterHandle, *args: str) -> int:
    environment = {"KUBECONFIG": str(handle.kubeconfig), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-m", "planner", *args]
    return subprocess.run(command, cwd=checkout, env=environment, capture_output=True, check=False).returncode


def counted(checkout: Path, handle: ClusterHandle, *args: str) -> tuple[int, Counter[str]]:
    admin = SlimAdmin.of(handle)
    before = requests(admin)
    code = planner(checkout, handle, *args)
    return code, requests(admin) - before


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=100)
    parser.add_argument("--planner", type=Path, default=REPO, help="the checkout whose planner runs")
    args = parser.parse_args()
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
    print(f"{args.workloads} workloads, planner from {args.planner}")
    print(f"{'no-op run':<24}{'exit':>5}{'requests':>10}  by verb")
    for name, (code, verbs) in rows:
        by_verb = ", ".join(f"{verb} {count}" for verb, count in sorted(verbs.items()))
        print(f"{name:<24}{code:>5}{sum(verbs.values()):>10}  {by_verb}")


if __name__ == "__main__":
    main()
