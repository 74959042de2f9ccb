"""Aggregated ClusterRoles kept up to date by the aggregation controller (a cluster with RBAC and the
simulation): a ClusterRole labelled `aggregate-to-view` lends its rules to `view`, and through `view`
to `edit` and `admin`; relabelling it takes them back. Checked over HTTP with the admin token, and
with the token of a ServiceAccount bound to `view`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.simulated import SCALE, eventually
from tests.slimcluster import http

RBAC = "/apis/rbac.authorization.k8s.io/v1"
LEASES = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch"]}


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(rbac=True, simulate=True, time_scale=SCALE) as handle:
        yield handle


def rules_of(cluster: ClusterHandle, role: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = http(cluster, "GET", f"{RBAC}/clusterroles/{role}").body.get("rules") or []
    return found


def test_a_role_labelled_for_view_is_aggregated_into_view_edit_and_admin(cluster: ClusterHandle) -> None:
    ns = f"agg{os.getpid()}"
    assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}}).status == 201
    assert (
        http(
            cluster, "POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "viewer"}}
        ).status
        == 201
    )
    token = http(cluster, "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/viewer/token", {}).body["status"][
        "token"
    ]
    binding = {
        "metadata": {"name": "viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "viewer"}],
    }
    assert http(cluster, "POST", f"{RBAC}/namespaces/{ns}/rolebindings", binding).status == 201
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    assert http(cluster, "GET", leases, token=token).status == 403

    label = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}
    role = {"metadata": {"name": "lease-reader", "labels": label}, "rules": [LEASES]}
    assert http(cluster, "POST", f"{RBAC}/clusterroles", role).status == 201
    for aggregated in ("view", "edit", "admin"):
        eventually(lambda name=aggregated: LEASES in rules_of(cluster, name))  # type: ignore[misc]
    assert http(cluster, "GET", leases, token=token).status == 200
    fields = http(cluster, "GET", f"{RBAC}/clusterroles/view").body["metadata"]["managedFields"]
    owners = {f["manager"]: (f["operation"], "f:rules" in f["fieldsV1"]) for f in fields}
    assert owners == {
        "kube-apiserver": ("Update", False),
        "clusterrole-aggregation-controller": ("Apply", True),
    }

    unlabel = {"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-view": "false"}}}
    patched = http(
        cluster,
        "PATCH",
        f"{RBAC}/clusterroles/lease-reader",
        unlabel,
        content_type="application/merge-patch+json",
    )
    assert patched.status == 200
    eventually(lambda: LEASES not in rules_of(cluster, "admin"))
    assert LEASES not in rules_of(cluster, "view")
    assert http(cluster, "GET", leases, token=token).status == 403
