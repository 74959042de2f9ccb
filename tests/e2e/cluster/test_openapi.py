"""OpenAPI v3 over HTTP: the discovery document's URLs fetch the group-version documents clients parse."""

from __future__ import annotations

from planner.slim.cluster import ClusterHandle
from tests.slimcluster import http


def test_each_listed_document_is_served_at_its_url(cluster: ClusterHandle) -> None:
    listing = http(cluster, "GET", "/openapi/v3")
    assert listing.status == 200 and listing.headers["Content-Type"] == "application/json"
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1"} <= set(listing.body["paths"])
    url = listing.body["paths"]["apis/batch/v1"]["serverRelativeURL"]
    document = http(cluster, "GET", url)
    assert document.status == 200 and document.body["openapi"] == "3.0.0"
    job = document.body["components"]["schemas"]["io.k8s.api.batch.v1.Job"]
    assert job["x-kubernetes-group-version-kind"] == [{"group": "batch", "kind": "Job", "version": "v1"}]


def test_a_group_version_not_served_is_not_found(cluster: ClusterHandle) -> None:
    assert http(cluster, "GET", "/openapi/v3/apis/example.com/v1").status == 404
