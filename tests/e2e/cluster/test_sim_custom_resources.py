"""Custom resources with the simulation's garbage collector: a custom resource owned by a ConfigMap goes
when its owner does, a ConfigMap owned by a custom resource goes when that does, and a foreground
delete of a custom resource finishes once its dependents are gone."""

from __future__ import annotations

from typing import Any

from planner.slim.cluster import ClusterHandle
from tests.e2e.cluster.test_custom_resources import crd_body, create_crd, new_group, widget, widgets
from tests.simulated import eventually, simulated_cluster_fixture
from tests.slimcluster import http

cluster = simulated_cluster_fixture()
Obj = dict[str, Any]


def owned_by(owner: Obj, api_version: str, kind: str) -> list[Obj]:
    meta = owner["metadata"]
    return [
        {
            "apiVersion": api_version,
            "kind": kind,
            "name": meta["name"],
            "uid": meta["uid"],
            "blockOwnerDeletion": True,
        }
    ]


def gone(cluster: ClusterHandle, path: str) -> bool:
    return http(cluster, "GET", path).status == 404


def test_custom_resources_are_collected_with_their_owners(cluster: ClusterHandle, namespace: str) -> None:
    group = new_group()
    create_crd(cluster, crd_body(group))
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = http(cluster, "POST", configmaps, {"metadata": {"name": "owner"}}).body
    dependent = {**widget("dependent"), "apiVersion": f"{group}/v1"}
    dependent["metadata"]["ownerReferences"] = owned_by(owner, "v1", "ConfigMap")
    assert http(cluster, "POST", widgets(group, namespace), dependent).status == 201
    assert http(cluster, "DELETE", f"{configmaps}/owner").status == 200
    eventually(lambda: gone(cluster, f"{widgets(group, namespace)}/dependent"))

    parent = http(
        cluster, "POST", widgets(group, namespace), {**widget("parent"), "apiVersion": f"{group}/v1"}
    ).body
    child = {"metadata": {"name": "child", "ownerReferences": owned_by(parent, f"{group}/v1", "Widget")}}
    assert http(cluster, "POST", configmaps, child).status == 201
    foreground = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}
    deleting = http(cluster, "DELETE", f"{widgets(group, namespace)}/parent", foreground)
    assert deleting.status == 200
    assert deleting.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    eventually(lambda: gone(cluster, f"{configmaps}/child"))
    eventually(lambda: gone(cluster, f"{widgets(group, namespace)}/parent"))
