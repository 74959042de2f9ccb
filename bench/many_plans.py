"""`planner apply DIR` over many small plans (one ConfigMap each, one namespace) on the embedded cluster:
the process's peak thread count (sampled from /proc/<pid>/status every 50 ms), seconds to its first
line of output, wall time, and the run-lock Leases left afterwards (with `--stop-after S`, after a
Ctrl-C S seconds in).

    .venv/bin/python bench/many_plans.py --plans 500 5000
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import urlopen

REPO = Path(__file__).resolve().parent.parent


def write_plans(directory: Path, count: int, namespace: str) -> None:
    for index in range(count):
        (directory / f"p{index:05d}.yaml").write_text(
            "apiVersion: planner.dev/v1\nkind: Plan\n"
            f"metadata: {{name: p{index:05d}, namespace: {namespace}}}\n"
            f"configMaps:\n  - {{name: c{index:05d}, data: {{a: '1'}}}}\n"
        )


def threads_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def measure(cluster: ClusterHandle, count: int, source: Path, stop_after: float) -> dict[str, float]:
    namespace = f"bench-{count}-{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="many-plans-") as folder:
        write_plans(Path(folder), count, namespace)
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "planner", "apply", folder, "--no-wait"],
            cwd=source,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None and process.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        selector.register(process.stderr, selectors.EVENT_READ)
        first_output, peak, open_streams, errors = 0.0, 0, 2, b""
        interrupted = False
        while open_streams:
            if stop_after and not interrupted and time.monotonic() - started > stop_after:
                process.send_signal(signal.SIGINT)  # as Ctrl-C: every Lease taken must be released
                interrupted = True
            peak = max(peak, threads_of(process.pid))
            for key, _ in selector.select(timeout=0.05):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_streams -= 1
                else:
                    first_output = first_output or time.monotonic() - started
                    if key.fileobj is process.stderr:
                        errors = (errors + chunk)[-2000:]
        code = process.wait()
        wall = time.monotonic() - started
        if code and not interrupted:
            print(errors.decode(errors="replace"), file=sys.stderr)
    with urlopen(cluster, f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", timeout=60) as reply:
        leases = reply.read().count(b'"planner-lock-')
    return {"exit": code, "threads": peak, "first_output_s": first_output, "wall_s": wall, "leases": leases}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--plans", type=int, nargs="+", default=[500, 5000])
    parser.add_argument(
        "--stop-after", type=float, default=0.0, help="send Ctrl-C after this many seconds (0: never)"
    )
    parser.add_argument(
        "--source", type=Path, default=REPO, help="a checkout whose planner to run (to compare with another)"
    )
    arguments = parser.parse_args()
    with running_cluster() as handle:
        for count in arguments.plans:
            result = measure(handle, count, arguments.source, arguments.stop_after)
            print(
                f"{count} plans: " + ", ".join(f"{key} {value:.1f}" for key, value in result.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
