"""The real control plane's node agent (planner.testing.simnodes) against the embedded server
with no simulation of its own: its workers bring pods bound to its node to Ready, write each pod's
kubelet Events once, and record for each pod the moment it became Ready (the benchmarks' floor)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubernetes import client

from planner.slim.cluster import ClusterHandle
from planner.testing.simnodes import running_node_agent
from tests.simulated import eventually
from tests.slimcluster import http

READY_AFTER = 1.5
PODS = 12


def bound_pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": {"sim.planner.dev/ready-after-seconds": str(READY_AFTER)}},
        "spec": {"nodeName": "planner-node-0", "containers": [{"name": "app", "image": "nginx"}]},
    }


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_several_workers_bring_every_pod_to_ready_with_its_events_once(
    cluster: ClusterHandle, api_client: client.ApiClient, namespace: str
) -> None:
    with running_node_agent(api_client, nodes=1, workers=4) as agent:
        for i in range(PODS):
            assert (
                http(cluster, "POST", f"/api/v1/namespaces/{namespace}/pods", bound_pod(f"p{i}")).status
                == 201
            )

        def ready_pods() -> list[dict[str, Any]]:
            pods = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods").body["items"]
            ready = [
                p
                for p in pods
                if {"type": "Ready", "status": "True"}.items()
                <= next((c for c in p["status"].get("conditions", []) if c["type"] == "Ready"), {}).items()
            ]
            return ready if len(ready) == PODS else []

        pods = eventually(ready_pods, timeout=60)
        recorded = sorted(agent.ready_times(namespace))

    events = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/events").body["items"]
    by_pod = {
        name: sorted(e["reason"] for e in events if e["involvedObject"]["name"] == name)
        for name in (p["metadata"]["name"] for p in pods)
    }
    assert by_pod == {f"p{i}": ["Created", "Pulled", "Started"] for i in range(PODS)}
    assert all(e["count"] == 1 and e["source"]["component"] == "kubelet" for e in events)
    # Each pod's Ready moment as recorded is at least READY_AFTER after its container started (the
    # status's startedAt is cut to the second, so never later than the real start).
    started = sorted(
        epoch(p["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]) for p in pods
    )
    assert len(recorded) == PODS
    assert all(ready - start >= READY_AFTER for ready, start in zip(recorded, started, strict=True))
