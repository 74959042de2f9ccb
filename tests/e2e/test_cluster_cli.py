"""`planner cluster up`: an HTTPS server only its kubeconfig's token gets into, with private files;
`--time-scale | --resync-seconds`: the simulation runs as asked; `--rbac` (up and serve): the
kubeconfig's token is the admin's, and RBAC decides for everyone else."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from planner.slim import cluster as slim
from planner.testing.slimadmin import SlimAdmin, urlopen
from tests.slimcluster import http

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


# What kube-apiserver v1.28.7 answered (recorded): a token it does not know is a 401 on every path; no
# token at all is the anonymous user, whom the bootstrap RBAC policy lets read the public paths only.
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


def forbidden(message: str, details: dict[str, str]) -> dict[str, object]:
    return {**UNAUTHORIZED, "message": message, "reason": "Forbidden", "details": details, "code": 403}


def test_cluster_up_lets_in_only_its_token_and_prints_it_nowhere(tmp_path: Path) -> None:
    """`planner cluster up` serves HTTPS and only the token its kubeconfig carries gets in: kubectl works
    through that kubeconfig; without a token the Secrets and the admin endpoints (reading or changing
    the faults) are refused as a real apiserver refuses the anonymous user, and `/version` answers; a
    wrong token is a 401 everywhere. The token is in no output and no log. And `--resync-seconds` reaches
    the simulation: with a one-minute period the only full resync in the first seconds is the first."""
    env = {**os.environ, "HOME": str(tmp_path)}
    planner = [sys.executable, "-m", "planner", "cluster"]
    root = tmp_path / "cluster"
    up = subprocess.run(
        [*planner, "up", "--data", str(root), "--memory", "--resync-seconds", "60"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert up.returncode == 0, up.stderr
    try:
        info = slim.status(data_dir=root)
        assert info is not None and info.token and info.url.startswith("https://127.0.0.1:")
        kubectl = _kubectl(str(info.kubeconfig), tmp_path / "cache", "get", "secrets", "-A", "-o", "name")
        assert kubectl.returncode == 0, kubectl.stderr
        anonymous, wrong = replace(info, token=None), replace(info, token="not-the-token")
        assert http(anonymous, "GET", "/api/v1/namespaces/default/secrets").body == forbidden(
            'secrets is forbidden: User "system:anonymous" cannot list resource "secrets" in API group "" '
            'in the namespace "default"',
            {"kind": "secrets"},
        )
        for method in ("GET", "PUT"):
            refused = http(anonymous, method, "/slim/faults", {"errorRates": {"500": 1.0}})
            verb = {"GET": "get", "PUT": "put"}[method]
            assert refused.body == forbidden(
                f'forbidden: User "system:anonymous" cannot {verb} path "/slim/faults"', {}
            )
        for path in ("/api/v1/secrets", "/slim/faults", "/version", "/healthz"):
            assert (http(wrong, "GET", path).status, http(wrong, "GET", path).body) == (401, UNAUTHORIZED)
        version = http(anonymous, "GET", "/version")
        assert version.status == 200 and version.body["gitVersion"].startswith("v1.")
        assert SlimAdmin.of(info).get_faults()["errorRates"] == {}
        time.sleep(2.5)
        with urlopen(info, "/slim/stats") as reply:
            assert json.loads(reply.read())["DeploymentController"]["full_resyncs"] == 1
        log = (root / "server.log").read_text()
        assert info.token not in up.stdout + up.stderr + log + kubectl.stdout + kubectl.stderr
    finally:
        subprocess.run([*planner, "down", "--data", str(root)], capture_output=True, env=env)


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
        info = slim.status(data_dir=tmp_path / "cluster")
        assert info is not None
        refusal = http(replace(info, token=None), "GET", "/api").body["message"]
        assert refusal == 'forbidden: User "system:anonymous" cannot get path "/api"'
        status = subprocess.run([*planner, "status", *data], capture_output=True, text=True, env=env)
        assert status.stdout.startswith("running at https://127.0.0.1:")
    finally:
        subprocess.run([*planner, "down", *data], capture_output=True, env=env)


def test_cluster_serve_announces_its_kubeconfig(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    command = [sys.executable, "-m", "planner", "cluster", "serve", "--memory", "--port", "0"]
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
    umask; a database an older planner left 0644, and a directory left 0777, are tightened at the next
    start. The kubeconfig (it holds the admin token), the keys and the server's run files and log are
    0600 too."""
    env = {**os.environ, "HOME": str(tmp_path)}
    planner = [sys.executable, "-m", "planner", "cluster"]
    fresh, older = tmp_path / "fresh" / "cluster", tmp_path / "older"
    older.mkdir()
    older.chmod(0o777)  # an existing directory anyone could read: tightened too
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
            modes |= {name: _mode(root / name) for name in ("kubeconfig", "server.key", "token.key")}
            modes |= {name: _mode(root / name) for name in ("server.log", "server.url", "server.pid")}
            assert "state.db" in modes
            assert modes == dict.fromkeys(modes, 0o600)
        finally:
            subprocess.run([*planner, "down", "--data", str(root)], capture_output=True, env=env)
    assert _mode(fresh) == _mode(older) == 0o700
