"""Fault injection (one test per knob) and request accounting in /metrics, driven through SlimAdmin."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin, urlopen
from tests.simulated import eventually, simulated_cluster_fixture
from tests.slimcluster import http

cluster = simulated_cluster_fixture()


@pytest.fixture
def admin(cluster: ClusterHandle) -> Iterator[SlimAdmin]:
    handle = SlimAdmin.of(cluster)
    yield handle
    handle.clear_faults()
    handle.resume("controllers")
    handle.resume("nodeagent")


def watch_lines(cluster: ClusterHandle, path: str, *, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Every event of a watch until the server ends the stream."""
    with urlopen(cluster, path, headers={"Accept": "application/json"}, timeout=timeout) as reply:
        return [json.loads(line) for line in reply.read().decode().splitlines() if line]


def configmaps(cluster: ClusterHandle, namespace: str, count: int) -> None:
    for i in range(count):
        assert (
            http(
                cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": f"c{i}"}}
            ).status
            == 201
        )


# --- faults --------------------------------------------------------------------------------------------


def test_latency_delays_every_api_request(cluster: ClusterHandle, admin: SlimAdmin, namespace: str) -> None:
    admin.set_faults(latencySeconds=0.4)
    started = time.monotonic()
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps").status == 200
    assert time.monotonic() - started >= 0.4
    admin.clear_faults()
    started = time.monotonic()
    http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert time.monotonic() - started < 0.3


@pytest.mark.parametrize(
    ("code", "reason"),
    [(429, "TooManyRequests"), (500, "InternalError"), (503, "ServiceUnavailable")],
    ids=["429 with Retry-After", "500 Internal Error", "503 Service Unavailable"],
)
def test_error_rate_answers_with_the_status(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str, code: int, reason: str
) -> None:
    admin.set_faults(errorRates={str(code): 1.0}, retryAfterSeconds=2)
    reply = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert (reply.status, reply.body["kind"], reply.body["reason"], reply.body["code"]) == (
        code,
        "Status",
        reason,
        code,
    )
    if code == 429:
        assert reply.headers["Retry-After"] == "2"
        assert reply.body["details"] == {"retryAfterSeconds": 2}
    assert http(cluster, "GET", "/healthz").status == 200  # health and admin endpoints are exempt
    admin.clear_faults()
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps").status == 200


def test_a_partial_error_rate_fails_only_some_requests(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str
) -> None:
    admin.set_faults(errorRates={"503": 0.5}, seed=7)
    codes = [http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps").status for _ in range(40)]
    assert set(codes) == {200, 503}


def test_error_resources_limit_the_errors_to_those_resources(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str
) -> None:
    admin.set_faults(errorRates={"503": 1.0}, errorResources=["leases"])
    leases = http(cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases")
    configmaps = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert (leases.status, configmaps.status) == (503, 200)
    assert admin.get_faults()["errorResources"] == ["leases"]


def test_watch_streams_drop_after_n_events(cluster: ClusterHandle, admin: SlimAdmin, namespace: str) -> None:
    configmaps(cluster, namespace, 4)
    admin.set_faults(dropWatchAfterEvents=2)
    events = watch_lines(cluster, f"/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion=0")
    assert [e["type"] for e in events] == ["ADDED", "ADDED"]


def test_watch_streams_drop_at_random(cluster: ClusterHandle, admin: SlimAdmin, namespace: str) -> None:
    configmaps(cluster, namespace, 4)
    admin.set_faults(dropWatchProbability=1.0)
    events = watch_lines(cluster, f"/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion=0")
    assert len(events) == 1


def test_the_next_watch_can_be_forced_to_410(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str
) -> None:
    configmaps(cluster, namespace, 1)
    admin.set_faults(expireNextWatches=1)
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1"
    [expired] = watch_lines(cluster, path)
    assert expired["type"] == "ERROR"
    assert (expired["object"]["code"], expired["object"]["reason"]) == (410, "Expired")
    names = {e["object"]["metadata"]["name"] for e in watch_lines(cluster, path) if e["type"] == "ADDED"}
    assert names == {"c0", "kube-root-ca.crt"}  # only the next watch expired
    assert admin.get_faults()["expireNextWatches"] == 0


def test_pausing_the_node_agent_leaves_pods_unscheduled_until_resumed(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str
) -> None:
    admin.pause("nodeagent")
    assert admin.paused() == {"controllers": False, "nodeagent": True}
    pod = {"metadata": {"name": "idle"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
    http(cluster, "POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    time.sleep(0.5)
    assert "nodeName" not in http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods/idle").body["spec"]
    admin.resume("nodeagent")
    eventually(
        lambda: (
            http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods/idle").body["status"]["phase"]
            == "Running"
        )
    )


def test_pausing_the_controllers_stops_deployments_until_resumed(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str
) -> None:
    admin.pause("controllers")
    body = {
        "metadata": {"name": "held"},
        "spec": {
            "selector": {"matchLabels": {"app": "held"}},
            "template": {
                "metadata": {"labels": {"app": "held"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }
    http(cluster, "POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", body)
    time.sleep(0.5)
    assert http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/replicasets").body["items"] == []
    admin.resume("controllers")
    eventually(
        lambda: http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/replicasets").body["items"]
    )


def test_bad_admin_requests_are_rejected(cluster: ClusterHandle) -> None:
    assert http(cluster, "PATCH", "/slim/faults", {"errorRates": {"404": 1.0}}).status == 400
    assert http(cluster, "PATCH", "/slim/faults", {"nonsense": 1}).status == 400
    assert http(cluster, "POST", "/slim/pause", {"component": "scheduler"}).status == 400


def test_faults_can_be_set_when_the_server_starts() -> None:
    with running_cluster(simulate=True, faults={"errorRates": {"500": 1.0}}) as handle:
        assert http(handle, "GET", "/api/v1/namespaces").status == 500
        assert SlimAdmin.of(handle).get_faults()["errorRates"] == {"500": 1.0}


# --- metrics -------------------------------------------------------------------------------------------


def test_request_counts_match_the_requests_made(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str
) -> None:
    before = admin.request_counts()
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    configmaps(cluster, namespace, 3)
    http(cluster, "GET", base)
    http(cluster, "GET", base + "/c0")
    http(cluster, "GET", base + "/missing")
    http(cluster, "PATCH", base + "/c1", {"data": {"k": "v"}}, content_type="application/merge-patch+json")
    http(cluster, "DELETE", base + "/c2")
    after = admin.request_counts()
    delta = {
        k: after.get(k, 0) - before.get(k, 0)
        for k in after
        if k[1] == "configmaps" and after.get(k, 0) != before.get(k, 0)
    }
    assert delta == {
        ("create", "configmaps", "201"): 3,
        ("list", "configmaps", "200"): 1,
        ("get", "configmaps", "200"): 1,
        ("get", "configmaps", "404"): 1,
        ("patch", "configmaps", "200"): 1,
        ("delete", "configmaps", "200"): 1,
    }


def test_open_watches_are_counted_while_open(
    cluster: ClusterHandle, admin: SlimAdmin, namespace: str
) -> None:
    assert admin.open_watches("secrets") == 0
    path = f"/api/v1/namespaces/{namespace}/secrets?watch=true&timeoutSeconds=2"
    thread = threading.Thread(target=lambda: watch_lines(cluster, path))
    thread.start()
    eventually(lambda: admin.open_watches("secrets") == 1)
    thread.join()
    eventually(lambda: admin.open_watches("secrets") == 0)
    assert admin.request_count(verb="watch", resource="secrets", code="200") >= 1


def test_metrics_are_prometheus_text(cluster: ClusterHandle) -> None:
    try:
        with urlopen(cluster, "/metrics", timeout=5) as reply:
            text, content_type = reply.read().decode(), reply.headers["Content-Type"]
    except urllib.error.HTTPError as error:  # pragma: no cover - fails the test with the body
        raise AssertionError(error.read()) from error
    assert content_type.startswith("text/plain")
    assert "# TYPE slim_requests_total counter" in text
    assert "# TYPE slim_open_watches gauge" in text
