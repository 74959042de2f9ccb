"""The create-only server-side apply on kube-apiserver v1.28.7 (docs/architecture.md, "Creates"): one
request per object (two or three for a recorded Job, created by POST), the managedFields a server-side apply create records,
and an existing foreign object refused by the resourceVersion precondition, untouched."""

from __future__ import annotations

from typing import Any

import pytest

from planner.errors import OwnershipError
from planner.kinds import for_manifest
from planner.kube.client import KubeClient, resource_path
from planner.objects import ref_of
from planner.plan import load_plans
from planner.render import render
from planner.state.applyset import is_recorded_job
from planner.writes import KubeWriter
from tests.paths import REPO
from tests.real.conftest import http
from tests.realplane import RealCluster


@pytest.fixture
def client(cluster: RealCluster) -> KubeClient:
    return KubeClient.from_config(kubeconfig=str(cluster.kubeconfig), context=None)


def planners(obj: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """Planner's managedFields entries: manager, operation, fields."""
    entries = obj["metadata"]["managedFields"]
    return [(e["manager"], e["operation"], e.get("fieldsV1")) for e in entries if e["manager"] == "planner"]


@pytest.mark.parametrize("plan_file", ["web-stack.yaml", "pod-fidelity.yaml"])
def test_a_create_is_one_request_recording_what_a_server_side_apply_create_records(
    cluster: RealCluster, client: KubeClient, namespace: str, plan_file: str
) -> None:
    other = f"{namespace}-apply"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": other}})
    assert status == 201, body
    writer = KubeWriter(client)
    loaded = load_plans([REPO / "plans" / plan_file], environ={})
    manifests = [m for plan in loaded.plans for m in render(plan, namespace) if for_manifest(m).namespaced]
    assert {m["kind"] for m in manifests} >= {"Deployment", "Service"}
    for manifest in manifests:
        mine = {**manifest, "metadata": {**manifest["metadata"], "namespace": namespace}}
        theirs = {**manifest, "metadata": {**manifest["metadata"], "namespace": other}}
        before = client.log.total
        created = writer.create(mine)
        # a Job's patch again one place down when the job controller's status write of the same
        # second moved planner's entry
        expected = {2, 3} if is_recorded_job(mine) else {1}
        assert client.log.total - before in expected, ref_of(mine)
        applied = client.server_side_apply(for_manifest(theirs), theirs, field_manager="planner", force=True)
        # a controller's status entry may be there too (the job controller's, on a Job)
        assert [e[:2] for e in planners(created)] == [("planner", "Apply")], ref_of(mine)
        assert planners(created) == planners(applied), ref_of(mine)


def test_a_create_meeting_a_foreign_object_is_refused_before_anything_is_written(
    cluster: RealCluster, client: KubeClient, namespace: str
) -> None:
    foreign = {"metadata": {"name": "settings"}, "data": {"mode": "theirs"}}
    status, created = http(cluster, "POST", f"/api/v1/namespaces/{namespace}/configmaps", foreign)
    assert status == 201, created
    mine = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "namespace": namespace,
            "labels": {"applyset.kubernetes.io/part-of": "applyset-test-v1"},
            "annotations": {"planner.dev/plan": "shop"},
        },
        "data": {"mode": "ours"},
    }
    with pytest.raises(OwnershipError):
        KubeWriter(client).create(mine)
    assert client.log.by_verb == {"apply": 1, "get": 1}
    status, live = http(cluster, "GET", resource_path(for_manifest(mine), namespace, "settings"))
    assert status == 200, live
    assert live["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert live["data"] == {"mode": "theirs"}
