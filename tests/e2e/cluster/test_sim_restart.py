"""The simulation across a server restart: a running pod carries on where it was (same IP, same
container, no restart), and new pods get IPs that do not clash with the kept ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.slim import cluster
from planner.testing.slimadmin import Endpoint, urlopen
from tests.simulated import eventually


def get(endpoint: Endpoint, path: str) -> Any:
    with urlopen(endpoint, path, timeout=10) as reply:
        return json.loads(reply.read())


def post(endpoint: Endpoint, path: str, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    urlopen(endpoint, path, data=data, method="POST", headers=headers, timeout=10).read()


def running(endpoint: Endpoint, name: str) -> Any:
    pod = get(endpoint, f"/api/v1/namespaces/default/pods/{name}")
    return pod if (pod.get("status") or {}).get("phase") == "Running" else None


def test_a_running_pod_carries_on_after_a_restart(tmp_path: Path) -> None:
    pod = {"metadata": {"name": "steady"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    first = cluster.up(data_dir=tmp_path, port=None, memory=False, time_scale=0.05)
    try:
        post(first, "/api/v1/namespaces/default/pods", pod)
        before = eventually(lambda: running(first, "steady"))
    finally:
        cluster.down(data_dir=tmp_path)
    second = cluster.up(data_dir=tmp_path, port=None, memory=False, time_scale=0.05)
    try:
        post(second, "/api/v1/namespaces/default/pods", {**pod, "metadata": {"name": "newcomer"}})
        newcomer = eventually(lambda: running(second, "newcomer"))
        after = get(second, "/api/v1/namespaces/default/pods/steady")
        [old_status], [new_status] = (
            before["status"]["containerStatuses"],
            after["status"]["containerStatuses"],
        )
        assert after["status"]["podIP"] == before["status"]["podIP"]
        assert new_status["containerID"] == old_status["containerID"]
        assert new_status["restartCount"] == 0
        assert newcomer["status"]["podIP"] != before["status"]["podIP"]
    finally:
        cluster.reset(data_dir=tmp_path)
