"""Protobuf and YAML over HTTP: bodies in, objects, lists, watch streams and errors out.

Request bodies are kubectl 1.33's own recorded protobuf (`tests/golden/protobuf/`), moved into the
test's namespace; responses are read with `tests/protobuf_reader.py`, which parses the wire format
with the plain protobuf API rather than the server's codec.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle
from planner.slim.resources import RESOURCES
from planner.testing.slimadmin import urlopen
from tests.paths import GOLDEN_PROTOBUF
from tests.protobuf_reader import PROTOBUF, build, envelope, raw_http, read_frames, read_object
from tests.slimcluster import http

KUBECTL_ACCEPT = f"{PROTOBUF},application/json"
SERVED_KINDS = {resource.kind for resource in RESOURCES}


def recorded(kind: str, namespace: str) -> tuple[dict[str, Any], bytes]:
    """kubectl's protobuf body for `kubectl create <kind>`, moved into `namespace`, and its JSON twin
    (a Namespace is named after `namespace` instead)."""
    stem = GOLDEN_PROTOBUF / f"create_{kind.lower()}"
    twin = json.loads(stem.with_suffix(".json").read_text())
    decoded = read_object(stem.with_suffix(".pb").read_bytes())
    if twin["kind"] == "Namespace":
        decoded.message.metadata.name = twin["metadata"]["name"] = f"{namespace}-pb"
    else:
        decoded.message.metadata.namespace = twin["metadata"]["namespace"] = namespace
    return twin, envelope(decoded.message, decoded.api_version, decoded.kind)


def collection(obj: dict[str, Any]) -> str:
    api_version, plural = obj["apiVersion"], f"{obj['kind'].lower()}s"
    root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    namespace = obj["metadata"].get("namespace")
    return f"{root}/namespaces/{namespace}/{plural}" if namespace else f"{root}/{plural}"


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """An object without what differs between two creates of one manifest in two namespaces: uid,
    namespace (or a Namespace's name), resourceVersion, timestamps and allocated cluster IPs."""
    meta = obj["metadata"]
    text = json.dumps(obj).replace(f'"{meta["uid"]}"', '"UID"')
    text = text.replace(f'"{meta.get("namespace") or meta["name"]}"', '"NAMESPACE"')
    obj = json.loads(text)
    for key in ("resourceVersion", "creationTimestamp", "managedFields"):
        obj["metadata"].pop(key, None)
    for key in ("clusterIP", "clusterIPs"):
        obj.get("spec", {}).pop(key, None)
    return obj


KINDS = [
    "Namespace",
    "ConfigMap",
    "Secret",
    "Deployment",
    "Job",
    "Service",
    "ServiceAccount",
    "Role",
    "RoleBinding",
]


@pytest.mark.parametrize("kind", KINDS, ids=[f"kubectl create {k.lower()}" for k in KINDS])
def test_kubectl_protobuf_body_creates_what_its_json_creates(
    cluster: ClusterHandle, namespace: str, kind: str
) -> None:
    if kind not in SERVED_KINDS:
        pytest.skip(f"{kind} is not served by the embedded cluster")
    twin, body = recorded(kind, namespace)
    path = collection(twin)
    created = raw_http(
        cluster,
        "POST",
        f"{path}?fieldManager=kubectl-create",
        body,
        Content_Type=PROTOBUF,
        Accept="application/json",
    )
    assert created.status == 201, created.body
    other = f"{namespace}-json"
    if twin["kind"] == "Namespace":
        twin["metadata"]["name"] = other
    else:
        assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": other}}).status == 201
        twin["metadata"]["namespace"] = other
    from_json = http(cluster, "POST", f"{collection(twin)}?fieldManager=kubectl-create", twin)
    assert from_json.status == 201, from_json.body
    assert comparable(json.loads(created.body)) == comparable(from_json.body)


def test_go_zero_values_leave_room_for_defaults(cluster: ClusterHandle, namespace: str) -> None:
    """kubectl writes every non-pointer field, so `terminationMessagePath: ""` and `hostPort: 0` are on
    the wire; they mean unset and get the server's defaults, while `replicas: 0` (a pointer) stays."""
    twin, body = recorded("Deployment", namespace)
    created = raw_http(
        cluster, "POST", collection(twin), body, Content_Type=PROTOBUF, Accept="application/json"
    )
    assert created.status == 201, created.body
    stored = http(cluster, "GET", f"{collection(twin)}/web").body
    assert stored["spec"]["replicas"] == 0
    assert stored["spec"]["template"]["spec"]["containers"] == [
        {
            "name": "nginx",
            "image": "nginx:1.25",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }
    ]


def test_create_answers_in_protobuf_when_asked_first(cluster: ClusterHandle, namespace: str) -> None:
    twin, body = recorded("Deployment", namespace)
    created = raw_http(cluster, "POST", collection(twin), body, Content_Type=PROTOBUF, Accept=KUBECTL_ACCEPT)
    assert (created.status, created.content_type) == (201, PROTOBUF)
    decoded = read_object(created.body)
    assert (decoded.api_version, decoded.kind) == ("apps/v1", "Deployment")
    deployment = decoded.message
    assert deployment.metadata.uid and deployment.metadata.creationTimestamp.seconds > 0
    assert deployment.spec.HasField("replicas") and deployment.spec.replicas == 0
    container = deployment.spec.template.spec.containers[0]
    assert container.terminationMessagePath == "/dev/termination-log"
    assert container.ports[0].containerPort == 80 and not container.ports[0].HasField("hostPort")
    assert deployment.spec.strategy.rollingUpdate.maxSurge.strVal == "25%"


def test_get_answers_in_the_format_asked_for_first(cluster: ClusterHandle, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert http(cluster, "POST", path, {"metadata": {"name": "c"}, "binaryData": {"b": "AAE="}}).status == 201
    as_protobuf = raw_http(cluster, "GET", f"{path}/c", Accept=KUBECTL_ACCEPT)
    assert as_protobuf.content_type == PROTOBUF
    assert dict(read_object(as_protobuf.body).message.binaryData) == {"b": b"\x00\x01"}
    as_json = raw_http(cluster, "GET", f"{path}/c", Accept=f"application/json,{PROTOBUF}")
    assert as_json.content_type == "application/json"
    assert json.loads(as_json.body)["binaryData"] == {"b": "AAE="}


def test_update_with_a_protobuf_body(cluster: ClusterHandle, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert http(cluster, "POST", path, {"metadata": {"name": "c"}, "data": {"a": "1"}}).status == 201
    current = read_object(raw_http(cluster, "GET", f"{path}/c", Accept=PROTOBUF).body)
    current.message.data["a"] = "2"
    body = envelope(current.message, "v1", "ConfigMap")
    updated = raw_http(cluster, "PUT", f"{path}/c", body, Content_Type=PROTOBUF, Accept="application/json")
    assert updated.status == 200, updated.body
    assert http(cluster, "GET", f"{path}/c").body["data"] == {"a": "2"}


def test_list_in_protobuf(cluster: ClusterHandle, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        assert http(cluster, "POST", path, {"metadata": {"name": name}}).status == 201
    listing = raw_http(cluster, "GET", path, Accept=KUBECTL_ACCEPT)
    decoded = read_object(listing.body)
    assert (decoded.api_version, decoded.kind) == ("v1", "ConfigMapList")
    assert [item.metadata.name for item in decoded.message.items] == ["a", "b", "kube-root-ca.crt"]
    assert decoded.message.metadata.resourceVersion.isdigit()


def test_watch_in_protobuf(cluster: ClusterHandle, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    rv = http(cluster, "GET", path).body["metadata"]["resourceVersion"]
    with urlopen(
        cluster,
        f"{path}?watch=1&resourceVersion={rv}&timeoutSeconds=3",
        headers={"Accept": f"{PROTOBUF};stream=watch,application/json"},
    ) as stream:
        assert stream.headers["Content-Type"] == f"{PROTOBUF};stream=watch"
        assert http(cluster, "POST", path, {"metadata": {"name": "w"}}).status == 201
        patch = {"data": {"k": "v"}}
        assert (
            http(cluster, "PATCH", f"{path}/w", patch, content_type="application/merge-patch+json").status
            == 200
        )
        assert http(cluster, "DELETE", f"{path}/w").status == 200
        frames = read_frames(stream.read())
    assert [(kind, obj.kind, obj.message.metadata.name) for kind, obj in frames] == [
        ("ADDED", "ConfigMap", "w"),
        ("MODIFIED", "ConfigMap", "w"),
        ("DELETED", "ConfigMap", "w"),
    ]
    assert dict(frames[1][1].message.data) == {"k": "v"}


def test_errors_and_delete_statuses_in_protobuf(cluster: ClusterHandle, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    missing = raw_http(cluster, "GET", f"{path}/nope", Accept=KUBECTL_ACCEPT)
    status = read_object(missing.body)
    assert (missing.status, status.kind) == (404, "Status")
    assert (status.message.code, status.message.reason, status.message.details.kind) == (
        404,
        "NotFound",
        "configmaps",
    )
    assert http(cluster, "POST", path, {"metadata": {"name": "gone"}}).status == 201
    deleted = read_object(raw_http(cluster, "DELETE", f"{path}/gone", Accept=KUBECTL_ACCEPT).body)
    assert (deleted.kind, deleted.message.status, deleted.message.details.name) == (
        "Status",
        "Success",
        "gone",
    )


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.mark.parametrize(
    "accept",
    [f"{TABLE},application/json", f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io,{TABLE},{PROTOBUF}"],
    ids=["kubectl get's Accept", "a protobuf Table falls through to the JSON one"],
)
def test_tables_stay_json(cluster: ClusterHandle, namespace: str, accept: str) -> None:
    table = raw_http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps", Accept=accept)
    assert table.content_type == "application/json"
    assert json.loads(table.body)["kind"] == "Table"


def test_yaml_body_creates(cluster: ClusterHandle, namespace: str) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  when: 2024-01-02\n  n: '1'\n"
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    created = raw_http(
        cluster, "POST", path, body, Content_Type="application/yaml", Accept="application/json"
    )
    assert created.status == 201, created.body
    assert http(cluster, "GET", f"{path}/y").body["data"] == {"when": "2024-01-02", "n": "1"}


REFUSED = [
    (
        "text/plain",
        b"name: x",
        415,
        "accepted media types include: application/json, application/yaml, " + PROTOBUF,
    ),
    (
        PROTOBUF,
        b'{"kind": "ConfigMap"}',
        400,
        "the object provided is unrecognized (must be of type ConfigMap)",
    ),
]


@pytest.mark.parametrize(
    ("content_type", "body", "code", "message"),
    REFUSED,
    ids=["an unknown media type", "JSON sent as protobuf"],
)
def test_unreadable_bodies_are_refused_and_nothing_is_stored(
    cluster: ClusterHandle, namespace: str, content_type: str, body: bytes, code: int, message: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    refused = raw_http(cluster, "POST", path, body, Content_Type=content_type, Accept="application/json")
    assert refused.status == code and message in json.loads(refused.body)["message"]
    assert [item["metadata"]["name"] for item in http(cluster, "GET", path).body["items"]] == [
        "kube-root-ca.crt"
    ]


def test_a_protobuf_body_of_another_kind_is_refused(cluster: ClusterHandle, namespace: str) -> None:
    config_map = build("v1", "ConfigMap")
    config_map.metadata.name = "c"
    body = envelope(config_map, "v1", "ConfigMap")
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    refused = raw_http(cluster, "POST", path, body, Content_Type=PROTOBUF, Accept="application/json")
    assert refused.status == 400 and "ConfigMap" in json.loads(refused.body)["message"]


def test_an_object_protobuf_cannot_hold_is_answered_in_json(cluster: ClusterHandle, namespace: str) -> None:
    """A ConfigMap value that is not a string has no protobuf form; where the server stores one, a
    protobuf client still gets it (as JSON), and a protobuf watch says so with an ERROR event."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    rv = http(cluster, "GET", path).body["metadata"]["resourceVersion"]
    stored = http(cluster, "POST", path, {"metadata": {"name": "odd"}, "data": {"enabled": True}})
    if stored.status != 201:
        pytest.skip("the server refuses a non-string ConfigMap value, so there is nothing to fall back from")
    got = raw_http(cluster, "GET", f"{path}/odd", Accept=KUBECTL_ACCEPT)
    assert got.content_type == "application/json"
    assert json.loads(got.body)["data"] == {"enabled": True}
    watched = f"{path}?watch=1&resourceVersion={rv}&timeoutSeconds=1"
    with urlopen(cluster, watched, headers={"Accept": PROTOBUF}) as stream:
        frames = read_frames(stream.read())
    assert [(kind, obj.kind, obj.message.code) for kind, obj in frames] == [("ERROR", "Status", 500)]
