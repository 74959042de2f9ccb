"""The API groups real clients use, over HTTP on a cluster without RBAC: HorizontalPodAutoscaler in
autoscaling/v2 and v1 (one object, two views), the kinds kubectl's default prune list asks for,
discovery of a group with two versions, the request log, and everyone allowed as before."""

from __future__ import annotations

import json
from typing import Any

from planner.slim.cluster import ClusterHandle
from planner.testing.slimadmin import SlimAdmin, urlopen
from tests.slimcluster import http

V1 = "/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
CPU_70 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
}


def test_an_autoscaler_written_in_v1_reads_in_v2_and_back(cluster: ClusterHandle, namespace: str) -> None:
    body = {
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": TARGET, "maxReplicas": 4, "targetCPUUtilizationPercentage": 70},
    }
    created = http(cluster, "POST", V1.format(ns=namespace), body)
    assert created.status == 201, created.body
    as_v2 = http(cluster, "GET", V2.format(ns=namespace) + "/web").body
    assert (as_v2["apiVersion"], as_v2["spec"]) == (
        "autoscaling/v2",
        {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 4, "metrics": [CPU_70]},
    )
    patched = http(
        cluster,
        "PATCH",
        V2.format(ns=namespace) + "/web",
        {"spec": {"maxReplicas": 6}},
        content_type="application/merge-patch+json",
    )
    assert patched.status == 200, patched.body
    listed = http(cluster, "GET", V1.format(ns=namespace)).body
    assert (listed["kind"], listed["apiVersion"]) == ("HorizontalPodAutoscalerList", "autoscaling/v1")
    assert [item["spec"] for item in listed["items"]] == [
        {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 6, "targetCPUUtilizationPercentage": 70}
    ]


def test_a_v1_watch_sends_v1_objects(cluster: ClusterHandle, namespace: str) -> None:
    body = {
        "metadata": {"name": "w"},
        "spec": {"scaleTargetRef": TARGET, "maxReplicas": 2, "metrics": [CPU_70]},
    }
    assert http(cluster, "POST", V2.format(ns=namespace), body).status == 201
    with urlopen(cluster, V1.format(ns=namespace) + "?watch=1&timeoutSeconds=1", timeout=10) as stream:
        events = [json.loads(line) for line in stream.read().splitlines() if line.strip()]
    assert [
        (e["type"], e["object"]["apiVersion"], e["object"]["spec"].get("targetCPUUtilizationPercentage"))
        for e in events
    ] == [("ADDED", "autoscaling/v1", 70)]


def test_discovery_prefers_autoscaling_v2_and_lists_both(cluster: ClusterHandle) -> None:
    group = http(cluster, "GET", "/apis/autoscaling").body
    assert group["versions"] == [
        {"groupVersion": "autoscaling/v2", "version": "v2"},
        {"groupVersion": "autoscaling/v1", "version": "v1"},
    ]
    assert group["preferredVersion"] == {"groupVersion": "autoscaling/v2", "version": "v2"}
    core = {r["name"]: r for r in http(cluster, "GET", "/api/v1").body["resources"]}
    assert core["serviceaccounts/token"] == {
        "name": "serviceaccounts/token",
        "singularName": "",
        "namespaced": True,
        "group": "authentication.k8s.io",
        "version": "v1",
        "kind": "TokenRequest",
        "verbs": ["create"],
    }


PRUNE_LIST = [
    "/api/v1/namespaces/{ns}/replicationcontrollers",
    "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "/apis/batch/v1/namespaces/{ns}/cronjobs",
    "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
]


def test_the_kinds_kubectls_prune_list_asks_for_are_listed(cluster: ClusterHandle, namespace: str) -> None:
    kinds = [
        http(cluster, "GET", path.format(ns=namespace) + "?labelSelector=app%3Dx").body for path in PRUNE_LIST
    ]
    assert [(k["kind"], k["items"]) for k in kinds] == [
        ("ReplicationControllerList", []),
        ("DaemonSetList", []),
        ("StatefulSetList", []),
        ("CronJobList", []),
        ("IngressList", []),
    ]


def test_a_stored_replication_controller_is_defaulted(cluster: ClusterHandle, namespace: str) -> None:
    template: dict[str, Any] = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    created = http(
        cluster,
        "POST",
        PRUNE_LIST[0].format(ns=namespace),
        {"metadata": {"name": "rc"}, "spec": {"template": template}},
    )
    assert created.status == 201, created.body
    assert (
        created.body["spec"]["replicas"],
        created.body["spec"]["selector"],
        created.body["metadata"]["labels"],
    ) == (
        1,
        {"app": "x"},
        {"app": "x"},
    )


def test_without_rbac_every_token_may_and_the_log_names_who(cluster: ClusterHandle, namespace: str) -> None:
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()
    http(cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": "bot"}})
    token = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/bot/token", {}).body[
        "status"
    ]["token"]
    assert (
        http(
            cluster, "DELETE", f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt", token=token
        ).status
        == 200
    )
    assert [(e["user"], e["verb"], e["resource"], e["subresource"], e["code"]) for e in admin.requests()] == [
        ("kubernetes-admin", "create", "serviceaccounts", "", 201),
        ("kubernetes-admin", "create", "serviceaccounts", "token", 201),
        (f"system:serviceaccount:{namespace}:bot", "delete", "configmaps", "", 200),
    ]
