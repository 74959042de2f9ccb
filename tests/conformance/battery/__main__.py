"""`python -m tests.conformance.battery --kubectl 1.33`: the battery against a fresh simulated cluster."""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from planner.slim.cluster import running_cluster
from tests.conformance.battery import kubectl_path, run, steps
from tests.simulated import SCALE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Run the kubectl battery against a fresh simulated cluster.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--kubectl", default="1.33", help="kubectl version beside kubectl (default %(default)s)"
    )
    args = parser.parse_args(argv)
    binary = kubectl_path(args.kubectl)
    if binary is None:
        print(f"kubectl.{args.kubectl} is not installed beside kubectl", file=sys.stderr)
        return 2
    failed = 0
    with tempfile.TemporaryDirectory() as tmp, running_cluster(simulate=True, time_scale=SCALE) as cluster:
        started = time.monotonic()
        for result in run(binary, cluster.kubeconfig, Path(tmp)):
            status = "skip" if result.skipped else ("FAIL" if result.problems else "ok")
            failed += bool(result.problems)
            print(f"{status:4} {result.seconds:5.2f}s kubectl {' '.join(result.step.args)}")
            for problem in result.problems or ([result.skipped] if result.skipped else []):
                print(textwrap.indent(problem, "       "))
        print(f"{len(steps())} steps, {failed} failed, {time.monotonic() - started:.1f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
