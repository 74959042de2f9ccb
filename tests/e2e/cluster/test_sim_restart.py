"""The simulation across a server restart: a running pod carries on where it was (same IP, same
container, no restart), and new pods get IPs that do not clash with the kept ones."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from planner.slim import cluster
from tests.simulated import eventually


def get(url: str, path: str) -> Any:
    with urllib.request.urlopen(url + path, timeout=10) as reply:
        return json.loads(reply.read())


def post(url: str, path: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).read()


def running(url: str, name: str) -> Any:
    pod = get(url, f"/api/v1/namespaces/default/pods/{name}")
    return pod if (pod.get("status") or {}).get("phase") == "Running" else None


def test_a_running_pod_carries_on_after_a_restart(tmp_path: Path) -> None:
    pod = {"metadata": {"name": "steady"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    first = cluster.up(data_dir=tmp_path, port=None, memory=False, time_scale=0.05)
    try:
        post(first.url, "/api/v1/namespaces/default/pods", pod)
        before = eventually(lambda: running(first.url, "steady"))
    finally:
        cluster.down(data_dir=tmp_path)
    second = cluster.up(data_dir=tmp_path, port=None, memory=False, time_scale=0.05)
    try:
        post(second.url, "/api/v1/namespaces/default/pods", {**pod, "metadata": {"name": "newcomer"}})
        newcomer = eventually(lambda: running(second.url, "newcomer"))
        after = get(second.url, "/api/v1/namespaces/default/pods/steady")
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
