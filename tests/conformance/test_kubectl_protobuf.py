"""kubectl's imperative creates against the embedded cluster: from 1.32 on they send protobuf bodies and
ask for protobuf answers first (never falling back to JSON), before that JSON; both must store the
same objects, and kubectl must read back exactly what the server holds."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle
from planner.slim.resources import RESOURCES
from tests.slimcluster import Kubectl, http

SERVED_KINDS = {resource.kind for resource in RESOURCES}


@dataclass(frozen=True)
class Create:
    label: str
    args: tuple[str, ...]  # `{ns}` is the test's namespace, `{blob}` a file of three bytes
    created: str
    path: str
    check: Callable[[dict[str, Any]], object]
    needs: str = ""  # a kind that must be served for the command to work


def container(obj: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers[0]


CREATES = [
    Create(
        "namespace",
        ("create", "namespace", "{ns}-made"),
        "namespace/{ns}-made created",
        "/api/v1/namespaces/{ns}-made",
        lambda o: o["metadata"]["labels"] == {"kubernetes.io/metadata.name": o["metadata"]["name"]},
    ),
    Create(
        "configmap",
        ("create", "configmap", "cm", "-n", "{ns}", "--from-literal=a=b", "--from-file=blob={blob}"),
        "configmap/cm created",
        "/api/v1/namespaces/{ns}/configmaps/cm",
        lambda o: (o["data"], o["binaryData"]) == ({"a": "b"}, {"blob": "AAH/"}),
    ),
    Create(
        "secret",
        ("create", "secret", "generic", "s", "-n", "{ns}", "--from-literal=password=hunter2"),
        "secret/s created",
        "/api/v1/namespaces/{ns}/secrets/s",
        lambda o: (o["type"], o["data"]) == ("Opaque", {"password": "aHVudGVyMg=="}),
    ),
    Create(
        "deployment",
        ("create", "deployment", "web", "-n", "{ns}", "--image=nginx:1.25", "--replicas=0", "--port=80"),
        "deployment.apps/web created",
        "/apis/apps/v1/namespaces/{ns}/deployments/web",
        lambda o: (
            (o["spec"]["replicas"], container(o)["ports"], container(o)["terminationMessagePath"])
            == (0, [{"containerPort": 80, "protocol": "TCP"}], "/dev/termination-log")
        ),
    ),
    Create(
        "job",
        ("create", "job", "j", "-n", "{ns}", "--image=busybox", "--", "echo", "hi"),
        "job.batch/j created",
        "/apis/batch/v1/namespaces/{ns}/jobs/j",
        lambda o: (
            (container(o)["command"], o["spec"]["template"]["spec"]["restartPolicy"])
            == (["echo", "hi"], "Never")
        ),
    ),
    Create(
        "service",
        ("create", "service", "clusterip", "svc", "-n", "{ns}", "--tcp=80:8080", "--tcp=443:https"),
        "service/svc created",
        "/api/v1/namespaces/{ns}/services/svc",
        lambda o: (
            o["spec"]["ports"]
            == [
                {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                {"name": "443-https", "protocol": "TCP", "port": 443, "targetPort": "https"},
            ]
        ),
    ),
    Create(
        "serviceaccount",
        ("create", "serviceaccount", "sa", "-n", "{ns}"),
        "serviceaccount/sa created",
        "/api/v1/namespaces/{ns}/serviceaccounts/sa",
        lambda o: o["metadata"]["name"] == "sa",
    ),
    Create(
        "role",
        ("create", "role", "r", "-n", "{ns}", "--verb=get,list", "--resource=pods"),
        "role.rbac.authorization.k8s.io/r created",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles/r",
        lambda o: o["rules"] == [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}],
        needs="Role",
    ),
    Create(
        "rolebinding",
        ("create", "rolebinding", "rb", "-n", "{ns}", "--role=r", "--user=alice"),
        "rolebinding.rbac.authorization.k8s.io/rb created",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings/rb",
        lambda o: o["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        needs="RoleBinding",
    ),
]


def needs(kind: str) -> None:
    if kind not in SERVED_KINDS:
        pytest.skip(f"{kind} is not served by the embedded cluster")


def fill(text: str, namespace: str, blob: Path) -> str:
    return text.replace("{ns}", namespace).replace("{blob}", str(blob))


@pytest.mark.parametrize("create", CREATES, ids=[f"create {c.label}" for c in CREATES])
def test_imperative_create_stores_the_object(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path, create: Create
) -> None:
    if create.needs:
        needs(create.needs)
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\x01\xff")
    result = kubectl(*(fill(arg, namespace, blob) for arg in create.args))
    assert result.stdout.strip() == fill(create.created, namespace, blob)
    stored = http(cluster, "GET", fill(create.path, namespace, blob))
    assert stored.status == 200, stored.body
    assert create.check(stored.body), stored.body


READ_BACK = [
    ("deployment", "web", "--image=nginx:1.25", "--port=80"),
    ("service", "clusterip", "svc", "--tcp=80:http"),
    ("secret", "generic", "s", "--from-literal=a=b"),
]


@pytest.mark.parametrize("args", READ_BACK, ids=[f"create {a[0]}" for a in READ_BACK])
def test_kubectl_reads_the_created_object_exactly_as_the_server_holds_it(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, args: tuple[str, ...]
) -> None:
    """`-o json` prints the create response as kubectl decoded it (protobuf from 1.32 on): managedFields,
    times, IntOrStrings and bytes included, it must equal the stored object read as JSON."""
    printed = json.loads(
        kubectl("create", *args, "-n", namespace, "-o", "json", "--show-managed-fields").stdout
    )
    kind = printed["kind"].lower()
    root = "/api/v1" if printed["apiVersion"] == "v1" else f"/apis/{printed['apiVersion']}"
    stored = http(cluster, "GET", f"{root}/namespaces/{namespace}/{kind}s/{printed['metadata']['name']}")
    assert printed == stored.body


def test_autoscale(kubectl: Kubectl, cluster: ClusterHandle, namespace: str) -> None:
    needs("HorizontalPodAutoscaler")
    kubectl("create", "deployment", "web", "-n", namespace, "--image=nginx:1.25")
    result = kubectl(
        "autoscale", "deployment", "web", "-n", namespace, "--min=1", "--max=3", "--cpu-percent=80"
    )
    assert result.stdout.strip() == "horizontalpodautoscaler.autoscaling/web autoscaled"
    hpa = http(
        cluster, "GET", f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/web"
    ).body
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def test_auth_can_i(kubectl: Kubectl, namespace: str) -> None:
    needs("SelfSubjectAccessReview")
    assert kubectl("auth", "can-i", "create", "deployments", "-n", namespace).stdout.strip() == "yes"
