"""Lists through the Python client: every label- and field-selector form, pagination, and optimistic
concurrency on updates."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

LABELS = {
    "a": {"app": "web", "tier": "front", "size": "3"},
    "b": {"app": "web", "tier": "back", "size": "10"},
    "c": {"app": "db", "tier": "back"},
    "d": {"team": "x"},
}


@pytest.fixture
def labelled(core_v1: client.CoreV1Api, namespace: str) -> str:
    for name, labels in LABELS.items():
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": name, "labels": labels}})
    return namespace


SELECTORS = [
    ("app=web", ["a", "b"]),
    ("app==web", ["a", "b"]),
    ("app!=web", ["c", "d"]),
    ("tier in (front,back)", ["a", "b", "c"]),
    ("tier notin (front)", ["b", "c", "d"]),
    ("team", ["d"]),
    ("!team", ["a", "b", "c"]),
    ("size>5", ["b"]),
    ("size<5", ["a"]),
    ("app=web,tier=back", ["b"]),
    ("app in (web,db),!team,tier!=front", ["b", "c"]),
]


@pytest.mark.parametrize(
    ("selector", "expected"),
    SELECTORS,
    ids=[f"label selector {s!r} picks {', '.join(e)}" for s, e in SELECTORS],
)
def test_label_selectors(
    core_v1: client.CoreV1Api, labelled: str, selector: str, expected: list[str]
) -> None:
    found = core_v1.list_namespaced_config_map(labelled, label_selector=selector).items
    assert sorted(i.metadata.name for i in found if i.metadata.name in LABELS) == expected


FIELD_SELECTORS = [
    ("metadata.name=a", ["a"]),
    ("metadata.name==b", ["b"]),
    ("metadata.name!=a", ["b", "c", "d"]),
]


@pytest.mark.parametrize(
    ("selector", "expected"),
    FIELD_SELECTORS,
    ids=[f"field selector {s!r} picks {', '.join(e)}" for s, e in FIELD_SELECTORS],
)
def test_field_selectors(
    core_v1: client.CoreV1Api, labelled: str, selector: str, expected: list[str]
) -> None:
    found = core_v1.list_namespaced_config_map(labelled, field_selector=selector).items
    assert sorted(i.metadata.name for i in found if i.metadata.name in LABELS) == expected


def test_field_selector_on_namespace_across_all_namespaces(core_v1: client.CoreV1Api, labelled: str) -> None:
    found = core_v1.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={labelled}").items
    assert {i.metadata.namespace for i in found} == {labelled}


def test_pod_field_selectors(core_v1: client.CoreV1Api, namespace: str) -> None:
    for name in ("p1", "p2"):
        core_v1.create_namespaced_pod(
            namespace, {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
        )
    binding = {"metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "node-a"}}
    core_v1.create_namespaced_pod_binding("p1", namespace, binding, _preload_content=False)
    on_node = core_v1.list_namespaced_pod(namespace, field_selector="spec.nodeName=node-a").items
    unscheduled = core_v1.list_namespaced_pod(namespace, field_selector="spec.nodeName=").items
    pending = core_v1.list_namespaced_pod(namespace, field_selector="status.phase=Pending").items
    assert [p.metadata.name for p in on_node] == ["p1"]
    assert [p.metadata.name for p in unscheduled] == ["p2"]
    assert [p.metadata.name for p in pending] == ["p1", "p2"]


def test_event_field_selectors_as_kubectl_describe_sends_them(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    for name, pod, reason, kind in (
        ("e1", "web", "Started", "Normal"),
        ("e2", "web", "BackOff", "Warning"),
        ("e3", "db", "Started", "Normal"),
    ):
        core_v1.create_namespaced_event(
            namespace,
            {
                "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": pod, "namespace": namespace},
                "reason": reason,
                "type": kind,
                "message": "m",
            },
        )
    selector = f"involvedObject.name=web,involvedObject.namespace={namespace},involvedObject.kind=Pod"
    assert [
        e.metadata.name for e in core_v1.list_namespaced_event(namespace, field_selector=selector).items
    ] == ["e1", "e2"]
    warnings = core_v1.list_namespaced_event(namespace, field_selector="type=Warning").items
    assert [e.metadata.name for e in warnings] == ["e2"]
    started = core_v1.list_namespaced_event(namespace, field_selector="reason=Started").items
    assert [e.metadata.name for e in started] == ["e1", "e3"]


def test_unsupported_field_selector_is_a_400(core_v1: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as failure:
        core_v1.list_namespaced_config_map(namespace, field_selector="data.a=1")
    assert failure.value.status == 400
    assert "field label not supported: data.a" in failure.value.body


def test_pagination_walks_every_item_once(core_v1: client.CoreV1Api, namespace: str) -> None:
    for i in range(7):
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": f"page-{i}"}})
    first = core_v1.list_namespaced_config_map(namespace, limit=3)
    assert len(first.items) == 3 and first.metadata._continue
    assert first.metadata.remaining_item_count == 5  # 8 objects: 7 pages plus kube-root-ca.crt
    seen = [i.metadata.name for i in first.items]
    token = first.metadata._continue
    while token:
        page = core_v1.list_namespaced_config_map(namespace, limit=3, _continue=token)
        seen += [i.metadata.name for i in page.items]
        token = page.metadata._continue
    assert seen == sorted([f"page-{i}" for i in range(7)] + ["kube-root-ca.crt"])


def test_garbage_continue_token_is_a_400(core_v1: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as failure:
        core_v1.list_namespaced_config_map(namespace, limit=1, _continue="garbage")
    assert failure.value.status == 400


def test_update_with_stale_resource_version_conflicts(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "occ"}, "data": {"v": "0"}})
    first, second = (core_v1.read_namespaced_config_map("occ", namespace) for _ in range(2))
    first.data = {"v": "1"}
    core_v1.replace_namespaced_config_map("occ", namespace, first)
    second.data = {"v": "2"}
    with pytest.raises(ApiException) as conflict:
        core_v1.replace_namespaced_config_map("occ", namespace, second)
    assert conflict.value.status == 409
    assert "the object has been modified" in conflict.value.body
    second.metadata.resource_version = None
    assert core_v1.replace_namespaced_config_map("occ", namespace, second).data == {"v": "2"}


def test_identical_update_keeps_the_resource_version(core_v1: client.CoreV1Api, namespace: str) -> None:
    created = core_v1.create_namespaced_config_map(
        namespace, {"metadata": {"name": "same"}, "data": {"v": "0"}}
    )
    again = core_v1.replace_namespaced_config_map("same", namespace, created)
    assert again.metadata.resource_version == created.metadata.resource_version


def test_list_resource_version_is_the_current_revision(core_v1: client.CoreV1Api, namespace: str) -> None:
    created = core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "rv"}})
    listed = core_v1.list_namespaced_config_map(namespace)
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)
