"""Composed plans (#42): merging and validating 50 environments over one 200-workload base, against
validating the same 50 environments already flattened (what `planner build` prints for each).

    .venv/bin/python bench/env_merge.py [--environments 50] [--workloads 200] [--repeat 3]

Each environment imports `base/app.yaml` and sets its namespace, every tenth workload's image and
replicas, and a ConfigMap value; the flattened files are `planner build` of each environment, written
once before the timing. Both sides are timed in this process (`planner.app.rendering.validate`, the
whole of `planner validate` but printing), CPU seconds, best of `--repeat`; the ratio composed /
flattened is what the issue bounds (at most 2). Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ruamel.yaml import YAML

from planner.app.building import build
from planner.app.rendering import validate


def base(workloads: int) -> str:
    lines = ["configMaps:\n  - name: app-config\n    data: {LOG_LEVEL: info, REGION: eu}\n", "workloads:\n"]
    for index in range(workloads):
        lines.append(
            f"  - name: app-{index}\n"
            f"    image: ghcr.io/acme/app-{index}:1.0.0\n"
            "    port: 8080\n    expose: true\n"
            "    cpu: '0.25'\n    memory: 128Mi\n"
            f"    env: {{PORT: '8080', INDEX: '{index}'}}\n"
            "    volumes:\n      - {configMap: app-config, mountPath: /etc/app, readOnly: true}\n"
            "    readinessProbe: {httpGet: {path: /healthz, port: 8080}}\n"
        )
    return "".join(lines)


def environment(number: int, workloads: int) -> str:
    overrides = "".join(
        f"  - {{name: app-{index}, image: 'ghcr.io/acme/app-{index}:1.{number}.0', replicas: {number % 5 + 1}}}\n"
        for index in range(0, workloads, 10)
    )
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: env-{number}, namespace: env-{number}}}\n"
        "imports: [base/app.yaml]\n"
        f"configMaps:\n  - name: app-config\n    data: {{LOG_LEVEL: debug, ENV: env-{number}}}\n"
        f"workloads:\n{overrides}"
    )


def best_cpu(files: list[Path], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        validate(files)
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--environments", type=int, default=50)
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / ".git").mkdir()
        (root / "composed" / "base").mkdir(parents=True)
        (root / "flat").mkdir()
        (root / "composed" / "base" / "app.yaml").write_text(base(args.workloads))
        composed, flat = [], []
        yaml = YAML()
        for number in range(args.environments):
            env = root / "composed" / f"env-{number}.yaml"
            env.write_text(environment(number, args.workloads))
            composed.append(env)
            flat.append(root / "flat" / f"env-{number}.yaml")
            with flat[-1].open("w") as out:
                yaml.dump(build(env)[1], out)
        composed_cpu = best_cpu(composed, args.repeat)
        flat_cpu = best_cpu(flat, args.repeat)
    print(
        f"{args.environments} environments over a {args.workloads}-workload base (CPU s, best of {args.repeat})"
    )
    print(f"  merge + validate, composed: {composed_cpu:.2f} s")
    print(f"  validate, flattened:        {flat_cpu:.2f} s")
    print(f"  composed / flattened:       {composed_cpu / flat_cpu:.2f}x (the issue bounds it at 2x)")


if __name__ == "__main__":
    main()
