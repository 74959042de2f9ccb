"""kube.discovery.Kinds: which resource serves a kind — the table of kinds, the plan's own CRDs, then
discovery documents, asked again on a miss — over a stub cluster that answers discovery paths."""

from __future__ import annotations

from typing import Any

import pytest

from planner.errors import NotFoundError
from planner.kinds import KindInfo
from planner.kube.client import DiscoveryCache
from planner.kube.discovery import Kinds, UnknownKindError
from planner.live import read_live


class Cluster:
    """Answers GETs from `documents` (path -> body; absent: 404) and records every path asked."""

    def __init__(self, documents: dict[str, Any]) -> None:
        self.documents = documents
        self.asked: list[str] = []
        self.discovered = DiscoveryCache()

    def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.asked.append(path)
        if path not in self.documents:
            raise NotFoundError(f"{path} not found", status=404)
        found: dict[str, Any] = self.documents[path]
        return found


def widgets(*, namespaced: bool = True) -> dict[str, Any]:
    return {
        "resources": [
            {"name": "widgets", "kind": "Widget", "namespaced": namespaced},
            {"name": "widgets/status", "kind": "Widget"},
        ]
    }


def test_the_table_answers_without_a_request_and_discovery_the_rest_once() -> None:
    cluster = Cluster({"/apis/example.com/v1": widgets()})
    kinds = Kinds(cluster)  # type: ignore[arg-type]
    assert kinds.of("policy/v1", "PodDisruptionBudget").plural == "poddisruptionbudgets"
    widget = KindInfo(kind="Widget", group="example.com", version="v1", plural="widgets", namespaced=True)
    assert kinds.of("example.com/v1", "Widget") == widget
    assert kinds.of("example.com/v1", "Widget") == widget
    assert cluster.asked == ["/apis/example.com/v1"]


def test_a_kind_missing_from_the_cached_document_is_asked_for_again_then_refused() -> None:
    cluster = Cluster({"/apis/example.com/v1": {"resources": []}})
    kinds = Kinds(cluster)  # type: ignore[arg-type]
    assert kinds.find("example.com/v1", "Widget") is None
    cluster.documents["/apis/example.com/v1"] = widgets()  # its CRD became Established meanwhile
    assert kinds.of("example.com/v1", "Widget").plural == "widgets"
    assert cluster.asked == ["/apis/example.com/v1"] * 3
    with pytest.raises(UnknownKindError, match=r"serves no kind Gadget in example\.com/v1"):
        kinds.of("example.com/v1", "Gadget")


def test_declared_kinds_need_no_request_and_group_kinds_use_the_preferred_version() -> None:
    declared = KindInfo(kind="Widget", group="example.com", version="v1", plural="widgets", namespaced=False)
    cluster = Cluster(
        {
            "/apis/example.com": {"preferredVersion": {"version": "v1"}},
            "/apis/example.com/v1": widgets(namespaced=False),
        }
    )
    assert Kinds(cluster, declared=[declared]).of("example.com/v1", "Widget") == declared  # type: ignore[arg-type]
    assert cluster.asked == []
    assert Kinds(cluster).of_group_kind("Widget.example.com") == declared  # type: ignore[arg-type]
    assert Kinds(cluster).of_group_kind("Deployment.apps").plural == "deployments"  # type: ignore[arg-type, union-attr]


def test_reading_refuses_a_custom_resource_render_placed_in_a_namespace_that_the_cluster_serves_cluster_scoped() -> (
    None
):
    cluster = Cluster({"/apis/example.com/v1": widgets(namespaced=False)})
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "first", "namespace": "shop"},
    }
    with pytest.raises(UnknownKindError, match="widget shop/first: the cluster serves Widget cluster-scoped"):
        read_live(cluster, desired=[widget], plan="shop", namespace="shop")  # type: ignore[arg-type]
