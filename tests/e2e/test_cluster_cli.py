"""`planner cluster up --time-scale | --resync-seconds`: the simulation runs as asked; `--rbac` (up and
serve): an HTTPS server whose kubeconfig is the admin's, and anonymous requests refused."""

from __future__ import annotations

import json
import os
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

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


def _kubectl(kubeconfig: str, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def test_cluster_up_with_rbac_writes_an_admin_kubeconfig_over_tls(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    planner = [sys.executable, "-m", "planner", "cluster"]
    data = ["--data", str(tmp_path / "cluster")]
    up = subprocess.run(
        [*planner, "up", *data, "--memory", "--rbac"], capture_output=True, text=True, env=env
    )
    assert up.returncode == 0, up.stderr
    kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
    cache = tmp_path / "cache"
    try:
        assert up.stderr.startswith("embedded cluster running at https://127.0.0.1:")
        whoami = _kubectl(kubeconfig, cache, "auth", "whoami", "-o", "jsonpath={.status.userInfo}")
        assert json.loads(whoami.stdout) == {
            "username": "kubernetes-admin",
            "groups": ["system:masters", "system:authenticated"],
        }
        url = up.stderr.split("running at ", 1)[1].split()[0]
        context = ssl.create_default_context(cafile=str(tmp_path / "cluster" / "ca.crt"))
        with pytest.raises(urllib.error.HTTPError) as anonymous:
            urllib.request.urlopen(f"{url}/api", timeout=10, context=context)
        refusal = json.loads(anonymous.value.read())["message"]
        assert refusal == 'forbidden: User "system:anonymous" cannot get path "/api"'
        status = subprocess.run([*planner, "status", *data], capture_output=True, text=True, env=env)
        assert status.stdout.startswith("running at https://127.0.0.1:")
    finally:
        subprocess.run([*planner, "down", *data], capture_output=True, env=env)


def test_cluster_serve_with_rbac_announces_its_kubeconfig(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    command = [sys.executable, "-m", "planner", "cluster", "serve", "--rbac", "--memory", "--port", "0"]
    server = subprocess.Popen(
        [*command, "--data", str(tmp_path / "cluster")], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert server.stdout is not None
        kubeconfig = server.stdout.readline().strip().removeprefix("export KUBECONFIG=")
        assert kubeconfig == str(tmp_path / "cluster" / "kubeconfig")
        deadline = time.monotonic() + 20
        listed = _kubectl(kubeconfig, tmp_path / "cache", "get", "clusterrole", "cluster-admin", "-o", "name")
        while listed.returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
            listed = _kubectl(
                kubeconfig, tmp_path / "cache", "get", "clusterrole", "cluster-admin", "-o", "name"
            )
        assert listed.stdout.strip() == "clusterrole.rbac.authorization.k8s.io/cluster-admin"
    finally:
        server.terminate()
        server.wait(10)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_directory_and_state_db_are_private_to_their_owner(tmp_path: Path) -> None:
    """state.db holds every Secret: a new data directory is 0700 and the database 0600 whatever the
    umask; a database an older planner left 0644 is tightened at the next start."""
    env = {**os.environ, "HOME": str(tmp_path)}
    planner = [sys.executable, "-m", "planner", "cluster"]
    fresh, older = tmp_path / "fresh" / "cluster", tmp_path / "older"
    older.mkdir()
    (older / "state.db").touch(mode=0o644)
    (older / "state.db").chmod(0o644)
    for root in (fresh, older):
        up = subprocess.run([*planner, "up", "--data", str(root)], capture_output=True, text=True, env=env)
        try:
            assert up.returncode == 0, up.stderr
            kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
            kubectl = ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}"]
            created = subprocess.run(
                [*kubectl, "create", "secret", "generic", "pin", "--from-literal=pin=1234"],
                capture_output=True,
                text=True,
            )
            assert created.returncode == 0, created.stderr
            modes = {path.name: _mode(path) for path in root.glob("state.db*")}  # with SQLite's -wal, -shm
            assert "state.db" in modes
            assert modes == dict.fromkeys(modes, 0o600)
        finally:
            subprocess.run([*planner, "down", "--data", str(root)], capture_output=True, env=env)
    assert _mode(fresh) == 0o700
