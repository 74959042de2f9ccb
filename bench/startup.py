"""Start-up of `planner --help`, `planner version`, `planner validate plans/` and `planner plan`: wall time,
the import time `python -X importtime` reports (its `self` column summed), and the modules imported —
how many, and which of the heavy libraries (kubernetes, networkx, rich, jsonschema, ruamel) among them.

    .venv/bin/python bench/startup.py [--repeat 3]

`python -c pass` is the floor. `plan` runs against an embedded cluster this script starts (the plan
of `plans/web-stack.yaml`, into a namespace that does not exist: nothing is written). The module
counts are deterministic; the times depend on the machine's load, so the best of `--repeat` runs is
printed. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("kubernetes", "networkx", "rich", "jsonschema", "ruamel")


def measured(args: Sequence[str], env: dict[str, str]) -> tuple[float, float, list[str]]:
    """Wall seconds, summed self import seconds and the top-level names of the modules imported."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, cwd=REPO, env=env
    )
    wall = time.perf_counter() - started
    rows = [line.split("|") for line in result.stderr.splitlines() if line.startswith("import time:")]
    modules = [row[2].strip() for row in rows[1:]]  # the first row is the header
    self_us = sum(int(row[0].removeprefix("import time:").strip()) for row in rows[1:])
    return wall, self_us / 1e6, modules


def report(name: str, args: Sequence[str], env: dict[str, str], repeat: int) -> None:
    runs = [measured(args, env) for _ in range(repeat)]
    wall = min(run[0] for run in runs)
    imports = min(run[1] for run in runs)
    modules = runs[0][2]
    heavy = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})
    print(
        f"| {name} | {len(modules)} | {', '.join(heavy) or '-'} | {imports * 1000:,.0f} ms | {wall * 1000:,.0f} ms |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    from planner.slim.cluster import running_cluster

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print("| command | modules imported | heavy libraries | import time (self, summed) | wall |")
    print("| --- | --- | --- | --- | --- |")
    report("`python -c pass`", ["-c", "pass"], env, repeat)
    report("`planner --help`", ["-m", "planner", "--help"], env, repeat)
    report("`planner version`", ["-m", "planner", "version"], env, repeat)
    report("`planner validate plans/`", ["-m", "planner", "validate", "plans/"], env, repeat)
    with running_cluster() as cluster:
        env["KUBECONFIG"] = str(cluster.kubeconfig)
        plan = ["-m", "planner", "plan", "plans/web-stack.yaml", "-n", "bench-startup"]
        report("`planner plan plans/web-stack.yaml`", plan, env, repeat)


if __name__ == "__main__":
    main()
