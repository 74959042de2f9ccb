"""`planner validate` on plans from 1 MiB up to the largest a plan file may be (8 MiB), and on hostile files.

    .venv/bin/python bench/plan_validate.py [--sizes 1,2,4,8] [--repeat 1]

Two shapes of plan, each filled up to the size asked for (the last size is exactly the limit,
`planner.plan.input_limits.MAX_FILE_BYTES`): realistic block-style YAML (per workload a Deployment with
resources, env, labels, a ConfigMap volume and a probe, plus its ConfigMap), and dense one-line
workloads each depending on the one before (the most objects and dependency edges per byte, the worst
case for the per-object stages). Every run is a fresh `python -m planner validate` process; the script
prints its wall and CPU time, CPU seconds per MiB and its own peak RSS (from `wait4`), so linear growth
shows as a flat seconds-per-MiB column. CPU time is the figure to compare on a shared machine. Then it
times the hostile files the loader refuses (an alias bomb, 100,000 open brackets, a 55 MB file), which
must return at once. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from planner.plan.input_limits import MAX_FILE_BYTES

MIB = 1024 * 1024
HEADER = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata:\n  name: bench\n  namespace: bench\n"


def _config_map(index: int) -> str:
    return (
        f"  - name: app-{index}-config\n"
        "    data:\n"
        f"      INDEX: '{index}'\n"
        f"      settings.json: '{{\"feature\": {index}}}'\n"
    )


def _workload(index: int) -> str:
    return (
        f"  - name: app-{index}\n"
        "    image: ghcr.io/acme/app:1.2.3\n"
        "    port: 8080\n"
        "    expose: true\n"
        "    replicas: 2\n"
        "    cpu: 500m\n"
        "    memory: 256Mi\n"
        "    env:\n"
        f"      INDEX: '{index}'\n"
        "      MODE: production\n"
        "    labels:\n"
        "      team: payments\n"
        "    volumes:\n"
        f"      - configMap: app-{index}-config\n"
        "        mountPath: /etc/app\n"
        "    readinessProbe:\n"
        "      httpGet: {path: /healthz, port: 8080}\n"
    )


def _dense(index: int) -> str:
    """The smallest workload a plan can hold, each depending on the one before: the most objects (and
    dependency edges) per byte."""
    after = f", dependsOn: [app-{index - 1}]" if index else ""
    return f"  - {{name: app-{index}, image: nginx{after}}}\n"


def plan_text(size: int, *, dense: bool = False) -> tuple[str, int]:
    """A valid plan of at most `size` bytes (as many workloads as fit, then comment padding), and how
    many workloads it holds."""
    config_maps: list[str] = []
    workloads: list[str] = []
    used = len(HEADER) + len("configMaps:\nworkloads:\n")
    while True:
        index = len(workloads)
        pair = ("", _dense(index)) if dense else (_config_map(index), _workload(index))
        if used + len(pair[0]) + len(pair[1]) > size:
            break
        config_maps.append(pair[0])
        workloads.append(pair[1])
        used += len(pair[0]) + len(pair[1])
    config = "configMaps:\n" + "".join(config_maps) if not dense else ""
    text = HEADER + config + "workloads:\n" + "".join(workloads)
    padding = size - len(text)
    return text + ("#" * (padding - 1) + "\n" if padding > 0 else ""), len(workloads)


def hostile_files(directory: Path) -> dict[str, Path]:
    laughs = "".join(
        f"{chr(level)}: &{chr(level)} [{','.join(['*' + chr(level - 1)] * 9)}]\n"
        for level in range(ord("b"), ord("j"))
    )
    files = {
        "alias bomb (423 bytes)": HEADER
        + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + laughs,
        "100,000 open brackets": "a: " + "[" * 100_000,
    }
    paths = {}
    for what, text in files.items():
        paths[what] = directory / f"{len(paths)}.yaml"
        paths[what].write_text(text)
    paths["55 MB file"] = directory / "huge.yaml"
    with paths["55 MB file"].open("wb") as huge:
        huge.write(b"# " + b"x" * (55_000_000 - 3) + b"\n")
    return paths


def validate(path: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, exit code) of one `planner validate` process. CPU
    time is what to compare on a shared machine: wall time also counts waiting for other processes."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "planner", "validate", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,2,4,8", help="plan sizes in MiB; 8 is the limit")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size; the fastest is shown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="planner-bench-") as directory:
        root = Path(directory)
        print(
            f"{'plan':>20} {'workloads':>10} {'wall s':>7} {'CPU s':>6} {'CPU s/MiB':>9} {'peak RSS MiB':>12} exit"
        )
        for dense in (False, True):
            for mebibytes in (float(size) for size in args.sizes.split(",")):
                size = min(int(mebibytes * MIB), MAX_FILE_BYTES)
                path = root / f"plan-{mebibytes:g}-{dense}.yaml"
                text, workloads = plan_text(size, dense=dense)
                path.write_text(text)
                wall, cpu, peak, code = min(validate(path) for _ in range(args.repeat))
                shape = "dense" if dense else "realistic"
                print(
                    f"{shape:>9} {size / MIB:>6.2f} MiB {workloads:>10} {wall:>7.1f} {cpu:>6.1f}"
                    f" {cpu / (size / MIB):>9.2f} {peak:>12.0f} {code:>4}"
                )
        for what, path in hostile_files(root).items():
            wall, cpu, _, code = validate(path)
            print(f"{what:>24}: {wall:.2f} s wall, {cpu:.2f} s CPU, exit {code}")


if __name__ == "__main__":
    main()
