"""`planner cluster up --time-scale | --resync-seconds`: the simulation runs as asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: slow}
spec:
  template:
    metadata:
      annotations: {sim.planner.dev/run-seconds: "40"}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox:1.36}]
"""


def test_a_forty_second_job_completes_in_seconds_at_time_scale_one_twentieth(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    planner = [sys.executable, "-m", "planner", "cluster"]
    data = ["--data", str(tmp_path / "cluster")]
    up = subprocess.run(
        [*planner, "up", *data, "--memory", "--time-scale", "0.05"], capture_output=True, text=True, env=env
    )
    assert up.returncode == 0, up.stderr
    kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
    kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}"]
    try:
        created = subprocess.run([*kubectl, "apply", "-f", "-"], input=JOB, capture_output=True, text=True)
        assert created.returncode == 0, created.stderr
        waited = subprocess.run(
            [*kubectl, "wait", "--for=condition=complete", "job/slow", "--timeout=20s"],
            capture_output=True,
            text=True,
        )
        assert waited.returncode == 0, waited.stderr
    finally:
        subprocess.run([*planner, "down", *data], capture_output=True, env=env)


def test_resync_seconds_reaches_the_simulation(tmp_path: Path) -> None:
    """With a one-minute period the controllers' only full resync in the first seconds is the one at
    start (the default period would have run two or three by then)."""
    env = {**os.environ, "HOME": str(tmp_path)}
    planner = [sys.executable, "-m", "planner", "cluster"]
    data = ["--data", str(tmp_path / "cluster")]
    up = subprocess.run(
        [*planner, "up", *data, "--memory", "--resync-seconds", "60"], capture_output=True, text=True, env=env
    )
    assert up.returncode == 0, up.stderr
    try:
        url = up.stderr.split("running at ", 1)[1].split()[0]
        time.sleep(2.5)
        with urllib.request.urlopen(f"{url}/slim/stats", timeout=10) as reply:
            stats = json.loads(reply.read())
        assert stats["DeploymentController"]["full_resyncs"] == 1
    finally:
        subprocess.run([*planner, "down", *data], capture_output=True, env=env)
