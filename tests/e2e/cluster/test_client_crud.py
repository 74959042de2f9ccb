"""CRUD on every kind through the official Python client (dynamic client, so discovery is exercised too),
plus the subresources: /status, /scale, pods/binding, pods/log; generateName and dry-run."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from planner.slim.cluster import ClusterHandle
from tests.slimcluster import http

CONTAINER = {"name": "main", "image": "nginx:1.25"}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [CONTAINER]}}

# (apiVersion, kind, body without metadata.name, a merge patch, a field the patch sets → expected value)
KINDS: list[tuple[str, str, dict[str, Any], dict[str, Any], tuple[str, ...], Any]] = [
    ("v1", "ConfigMap", {"data": {"a": "1"}}, {"data": {"a": "2"}}, ("data", "a"), "2"),
    ("v1", "Secret", {"stringData": {"a": "1"}}, {"data": {"a": "Mg=="}}, ("data", "a"), "Mg=="),
    (
        "v1",
        "Service",
        {"spec": {"ports": [{"port": 80}]}},
        {"spec": {"selector": {"app": "x"}}},
        ("spec", "selector", "app"),
        "x",
    ),
    (
        "v1",
        "PersistentVolumeClaim",
        {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
        {"metadata": {"labels": {"tier": "db"}}},
        ("metadata", "labels", "tier"),
        "db",
    ),
    (
        "v1",
        "PersistentVolume",
        {
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/tmp/x"},
            }
        },
        {"spec": {"storageClassName": "standard"}},
        ("spec", "storageClassName"),
        "standard",
    ),
    (
        "storage.k8s.io/v1",
        "StorageClass",
        {"provisioner": "example.com/x"},
        {"metadata": {"labels": {"a": "b"}}},
        ("metadata", "labels", "a"),
        "b",
    ),
    (
        "node.k8s.io/v1",
        "RuntimeClass",
        {"handler": "runc"},
        {"metadata": {"labels": {"a": "b"}}},
        ("metadata", "labels", "a"),
        "b",
    ),
    (
        "v1",
        "Pod",
        {"spec": {"containers": [CONTAINER]}},
        {"spec": {"activeDeadlineSeconds": 60}},
        ("spec", "activeDeadlineSeconds"),
        60,
    ),
    (
        "apps/v1",
        "ReplicaSet",
        {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}},
        {"spec": {"replicas": 2}},
        ("spec", "replicas"),
        2,
    ),
    (
        "apps/v1",
        "Deployment",
        {"spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}},
        {"spec": {"replicas": 3}},
        ("spec", "replicas"),
        3,
    ),
    (
        "batch/v1",
        "Job",
        {"spec": {"template": {"spec": {"containers": [CONTAINER], "restartPolicy": "Never"}}}},
        {"spec": {"parallelism": 2}},
        ("spec", "parallelism"),
        2,
    ),
    (
        "coordination.k8s.io/v1",
        "Lease",
        {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
        {"spec": {"holderIdentity": "b"}},
        ("spec", "holderIdentity"),
        "b",
    ),
    (
        "v1",
        "Event",
        {
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "Started",
            "type": "Normal",
            "message": "hi",
        },
        {"message": "bye"},
        ("message",),
        "bye",
    ),
    (
        "v1",
        "Node",
        {"status": {"capacity": {"cpu": "4", "memory": "8Gi"}}},
        {"spec": {"unschedulable": True}},
        ("spec", "unschedulable"),
        True,
    ),
    (
        "v1",
        "ServiceAccount",
        {},
        {"automountServiceAccountToken": False},
        ("automountServiceAccountToken",),
        False,
    ),
    ("v1", "Namespace", {}, {"metadata": {"labels": {"team": "a"}}}, ("metadata", "labels", "team"), "a"),
]


@pytest.fixture(scope="module")
def dynamic(api_client: client.ApiClient) -> DynamicClient:
    return DynamicClient(api_client)


def _dig(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        obj = obj[part]
    return obj


@pytest.mark.parametrize(
    ("api_version", "kind", "body", "patch", "path", "expected"),
    KINDS,
    ids=[f"a {k[1]} is created, read, listed, replaced, patched and deleted" for k in KINDS],
)
def test_crud_every_kind(
    dynamic: DynamicClient,
    namespace: str,
    api_version: str,
    kind: str,
    body: dict[str, Any],
    patch: dict[str, Any],
    path: tuple[Any, ...],
    expected: Any,
) -> None:
    resource = dynamic.resources.get(api_version=api_version, kind=kind)
    name = f"crud-{kind.lower()}-{namespace}"
    ns = namespace if resource.namespaced else None
    created = resource.create(
        body={"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **body}, namespace=ns
    ).to_dict()
    assert created["metadata"]["name"] == name and created["metadata"]["resourceVersion"]
    fetched = resource.get(name=name, namespace=ns).to_dict()
    assert fetched["metadata"]["uid"] == created["metadata"]["uid"]
    names = [i["metadata"]["name"] for i in resource.get(namespace=ns).to_dict()["items"]]
    assert name in names
    fetched.setdefault("metadata", {}).setdefault("annotations", {})["replaced"] = "yes"
    replaced = resource.replace(body=fetched, namespace=ns).to_dict()
    assert replaced["metadata"]["annotations"]["replaced"] == "yes"
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    patched = resource.patch(body=patch, name=name, namespace=ns, content_type="application/merge-patch+json")
    assert _dig(patched.to_dict(), path) == expected
    resource.delete(name=name, namespace=ns, body={"propagationPolicy": "Background"})
    with pytest.raises(ApiException) as missing:
        resource.get(name=name, namespace=ns)
    assert missing.value.status == 404


def test_status_writes_change_only_status(apps_v1: client.AppsV1Api, namespace: str) -> None:
    body = {
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE},
    }
    created = apps_v1.create_namespaced_deployment(namespace, body)
    status_patch = {
        "spec": {"replicas": 9},
        "metadata": {"labels": {"sneaky": "yes"}},
        "status": {"replicas": 4},
    }
    after = apps_v1.patch_namespaced_deployment_status(
        "web", namespace, status_patch, _content_type="application/merge-patch+json"
    )
    assert after.status.replicas == 4
    assert after.spec.replicas == 1 and after.metadata.labels is None
    assert after.metadata.generation == created.metadata.generation
    main_write = apps_v1.patch_namespaced_deployment(
        "web", namespace, {"status": {"replicas": 7}}, _content_type="application/merge-patch+json"
    )
    assert main_write.status.replicas == 4


def test_generation_moves_only_when_spec_changes(apps_v1: client.AppsV1Api, namespace: str) -> None:
    body = {
        "metadata": {"name": "gen"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE},
    }
    apps_v1.create_namespaced_deployment(namespace, body)
    merge = "application/merge-patch+json"
    labelled = apps_v1.patch_namespaced_deployment(
        "gen", namespace, {"metadata": {"labels": {"a": "b"}}}, _content_type=merge
    )
    assert labelled.metadata.generation == 1
    scaled = apps_v1.patch_namespaced_deployment(
        "gen", namespace, {"spec": {"replicas": 2}}, _content_type=merge
    )
    assert scaled.metadata.generation == 2


def test_scale_subresource_reads_and_writes_replicas(apps_v1: client.AppsV1Api, namespace: str) -> None:
    body = {
        "metadata": {"name": "sc"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE},
    }
    apps_v1.create_namespaced_deployment(namespace, body)
    scale = apps_v1.read_namespaced_deployment_scale("sc", namespace)
    assert (scale.spec.replicas, scale.status.selector) == (1, "app=x")
    apps_v1.patch_namespaced_deployment_scale(
        "sc", namespace, {"spec": {"replicas": 5}}, _content_type="application/merge-patch+json"
    )
    assert apps_v1.read_namespaced_deployment("sc", namespace).spec.replicas == 5


def test_binding_sets_the_node_once(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, {"metadata": {"name": "b"}, "spec": {"containers": [CONTAINER]}})
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"kind": "Node", "name": "n1"},
    }
    reply = core_v1.create_namespaced_pod_binding("b", namespace, binding, _preload_content=False)
    assert reply.status == 201
    pod = core_v1.read_namespaced_pod("b", namespace)
    assert pod.spec.node_name == "n1"
    assert [c.type for c in pod.status.conditions] == ["PodScheduled"]
    with pytest.raises(ApiException) as again:
        core_v1.create_namespaced_pod_binding("b", namespace, binding, _preload_content=False)
    assert again.value.status == 409


def test_generate_name_appends_five_characters(core_v1: client.CoreV1Api, namespace: str) -> None:
    created = core_v1.create_namespaced_config_map(namespace, {"metadata": {"generateName": "gen-"}})
    assert created.metadata.name.startswith("gen-") and len(created.metadata.name) == len("gen-") + 5


def test_dry_run_create_stores_nothing(core_v1: client.CoreV1Api, namespace: str) -> None:
    reply = core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "dry"}}, dry_run="All")
    assert reply.metadata.uid and reply.metadata.resource_version is None
    with pytest.raises(ApiException) as missing:
        core_v1.read_namespaced_config_map("dry", namespace)
    assert missing.value.status == 404


def test_pod_log_is_an_empty_stub_until_part_three(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(
        namespace, {"metadata": {"name": "logs"}, "spec": {"containers": [CONTAINER]}}
    )
    assert core_v1.read_namespaced_pod_log("logs", namespace) == ""


def test_new_namespace_gets_default_service_account(core_v1: client.CoreV1Api, namespace: str) -> None:
    accounts = [sa.metadata.name for sa in core_v1.list_namespaced_service_account(namespace).items]
    assert accounts == ["default"]


def test_service_cluster_ip_is_released_on_delete(core_v1: client.CoreV1Api, namespace: str) -> None:
    body = {"metadata": {"name": "fixed"}, "spec": {"clusterIP": "10.96.7.7", "ports": [{"port": 80}]}}
    assert core_v1.create_namespaced_service(namespace, body).spec.cluster_ip == "10.96.7.7"
    core_v1.delete_namespaced_service("fixed", namespace)
    assert core_v1.create_namespaced_service(namespace, body).spec.cluster_ips == ["10.96.7.7"]


def test_deeply_nested_bodies_are_answered_as_kube_apiserver_answers_them(cluster: ClusterHandle) -> None:
    """kube-apiserver v1.28.7 takes a body nested 500 levels deep (JSON or YAML: the unknown field is
    dropped) and refuses one past 10,000 levels with a 400 in these words (recorded on the real tier);
    never a 500 (issue 39, item 13)."""
    http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": "deep"}})
    for depth, kind, expected in (
        (500, "application/json", 201),
        (500, "application/yaml", 201),
        (20000, "application/json", 400),
        (20000, "application/yaml", 400),
    ):
        name = f"d{depth}-{kind.rsplit('/', 1)[1]}"
        head = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' + name + '"},"x":'
        body = head + "[" * depth + "1" + "]" * depth + "}"
        reply = http(cluster, "POST", "/api/v1/namespaces/deep/configmaps", body, content_type=kind)
        assert reply.status == expected, (depth, kind, reply.body)
    json_refusal = http(cluster, "POST", "/api/v1/namespaces/deep/configmaps", '{"a":' + "[" * 20000)
    assert json_refusal.body["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json "
        "parse error: invalid character '[' exceeded max depth ({\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[ ...)"
    )
