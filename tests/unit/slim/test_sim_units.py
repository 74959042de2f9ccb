"""Pure pieces of the simulation: node affinity matching, what blocks a pod's start, request
classification for /metrics, rolling-update arithmetic and the pod-template hash."""

from __future__ import annotations

from typing import Any

import pytest

from planner.slim import scheduling
from planner.slim.controllers.deployments import resolve_fraction, surge_and_unavailable, template_hash
from planner.slim.requestinfo import request_info

NODE = {"metadata": {"name": "n1", "labels": {"disk": "ssd", "zone": "a", "cores": "8"}}}


def affinity(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields:
        term["matchFields"] = fields
    required = {"nodeSelectorTerms": [term]}
    return {
        "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}
    }


@pytest.mark.parametrize(
    ("pod", "fits"),
    [
        ({"spec": {}}, True),
        ({"spec": {"nodeSelector": {"disk": "ssd"}}}, True),
        ({"spec": {"nodeSelector": {"disk": "hdd"}}}, False),
        (affinity({"key": "zone", "operator": "In", "values": ["a", "b"]}), True),
        (affinity({"key": "zone", "operator": "NotIn", "values": ["a"]}), False),
        (affinity({"key": "gpu", "operator": "DoesNotExist"}), True),
        (affinity({"key": "gpu", "operator": "Exists"}), False),
        (affinity({"key": "cores", "operator": "Gt", "values": ["4"]}), True),
        (affinity({"key": "cores", "operator": "Lt", "values": ["4"]}), False),
        (affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["n2"]}]), False),
    ],
    ids=[
        "no constraints fit",
        "a matching node selector fits",
        "a node selector with another value does not",
        "In with the node's value fits",
        "NotIn with the node's value does not",
        "DoesNotExist on an absent label fits",
        "Exists on an absent label does not",
        "Gt compares as integers",
        "Lt compares as integers",
        "matchFields on another node's name does not fit",
    ],
)
def test_node_fit(pod: dict[str, Any], fits: bool) -> None:
    assert scheduling.node_fits(pod, NODE) is fits


def test_unschedulable_message_names_the_affinity() -> None:
    pod = affinity({"key": "zone", "operator": "In", "values": ["z"]})
    message = scheduling.unschedulable_reason(pod, [NODE], lambda kind, name: None, lambda claim: False)
    assert message == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


@pytest.mark.parametrize(
    ("volume", "present", "expected"),
    [
        (
            {"name": "v", "configMap": {"name": "cm"}},
            set(),
            ("FailedMount", 'MountVolume.SetUp failed for volume "v" : configmap "cm" not found'),
        ),
        ({"name": "v", "configMap": {"name": "cm", "optional": True}}, set(), None),
        (
            {"name": "v", "secret": {"secretName": "s"}},
            set(),
            ("FailedMount", 'MountVolume.SetUp failed for volume "v" : secret "s" not found'),
        ),
        ({"name": "v", "secret": {"secretName": "s"}}, {("Secret", "s")}, None),
        (
            {"name": "v", "projected": {"sources": [{"configMap": {"name": "ca"}}]}},
            set(),
            ("FailedMount", 'MountVolume.SetUp failed for volume "v" : configmap "ca" not found'),
        ),
    ],
    ids=[
        "a missing ConfigMap blocks the mount",
        "an optional ConfigMap does not",
        "a missing Secret blocks the mount",
        "a present Secret does not",
        "a projected source counts too",
    ],
)
def test_missing_dependency(
    volume: dict[str, Any], present: set[tuple[str, str]], expected: tuple[str, str] | None
) -> None:
    pod = {"spec": {"volumes": [volume], "containers": [{"name": "app"}]}}
    blocked = scheduling.missing_dependency(pod, lambda kind, name: {} if (kind, name) in present else None)
    if expected is None:
        assert blocked is None
    else:
        assert blocked is not None
        assert (blocked.event_reason, blocked.message) == expected


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "pods")),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}, ("watch", "pods")),
        ("GET", "/api/v1/namespaces/ns/pods/p/log", {}, ("get", "pods/log")),
        ("GET", "/api/v1/namespaces/ns", {}, ("get", "namespaces")),
        ("GET", "/api/v1/namespaces", {}, ("list", "namespaces")),
        ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", {}, ("patch", "deployments/scale")),
        ("DELETE", "/api/v1/namespaces/ns/configmaps", {}, ("deletecollection", "configmaps")),
        ("PUT", "/api/v1/nodes/n1/status", {}, ("update", "nodes/status")),
        ("POST", "/apis/batch/v1/namespaces/ns/jobs", {}, ("create", "jobs")),
        ("GET", "/apis", {}, ("get", "")),
        ("GET", "/version", {}, ("get", "")),
    ],
    ids=[
        "a collection GET is a list",
        "with watch=true it is a watch",
        "a subresource is named after a slash",
        "a namespace is an object of namespaces",
        "the namespaces collection is a list",
        "a group resource's subresource",
        "DELETE on a collection is deletecollection",
        "a cluster-scoped status write",
        "POST is create",
        "discovery has no resource",
        "version has no resource",
    ],
)
def test_requests_are_classified_as_the_apiserver_names_them(
    method: str, path: str, query: dict[str, str], expected: tuple[str, str]
) -> None:
    info = request_info(method, path, query)
    assert (info.verb, info.qualified_resource) == expected


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [("25%", 3, True, 1), ("25%", 3, False, 0), ("50%", 5, True, 3), (2, 10, False, 2), ("0%", 4, True, 0)],
    ids=[
        "25% of 3 rounds up to 1 for surge",
        "and down to 0 for unavailable",
        "50% of 5 rounds up to 3",
        "a number is taken as is",
        "0% is none",
    ],
)
def test_percentages_resolve_as_the_deployment_controller_rounds(
    value: Any, total: int, round_up: bool, expected: int
) -> None:
    assert resolve_fraction(value, total, round_up=round_up) == expected


def test_zero_surge_and_zero_unavailable_become_one_unavailable() -> None:
    deployment = {
        "spec": {"replicas": 4, "strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}
    }
    assert surge_and_unavailable(deployment) == (0, 1)


def test_recreate_allows_everything_unavailable_and_no_surge() -> None:
    assert surge_and_unavailable({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}}) == (0, 3)


def test_the_template_hash_is_stable_safe_and_changes_with_the_template_or_collisions() -> None:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    first = template_hash(template)
    assert first == template_hash(dict(template))
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert template_hash(template, 1) != first
    changed = {**template, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    assert template_hash(changed) != first
