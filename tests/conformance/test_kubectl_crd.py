"""Real kubectl (1.27, 1.31 and 1.33) with a CustomResourceDefinition: `apply -f crd.yaml`, `wait --for
condition=Established`, `get` with the CRD's printer columns, `apply` of a custom resource and of a
changed one, `apply --server-side`, kubectl's server-side validation refusing an unknown field,
`explain`, and `delete` of the resource and of the CRD (which takes its resources along)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle
from tests.slimcluster import Kubectl, KubectlRunner, http, kubectl_binary

VERSIONS = ("1.27", "1.31", "1.33")
_groups = itertools.count()

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget, shortNames: [wdg]}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    additionalPrinterColumns:
    - {{name: Size, type: integer, jsonPath: .spec.size}}
    - {{name: Color, type: string, jsonPath: .spec.color}}
    - {{name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {{type: integer, default: 1, description: How big the widget is.}}
              color: {{type: string}}
          status:
            type: object
            properties:
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {{type: string}}
                    status: {{type: string}}
"""

WIDGET = """apiVersion: {group}/v1
kind: Widget
metadata: {{name: w1}}
spec: {{color: {color}}}
"""


@pytest.fixture(params=VERSIONS, ids=[f"kubectl {v}" for v in VERSIONS])
def kubectl(request: pytest.FixtureRequest, cluster: ClusterHandle, tmp_path: Path) -> Kubectl:
    binary = kubectl_binary(request.param)
    if binary is None:
        pytest.skip(f"kubectl.{request.param} is not installed beside kubectl")
    return KubectlRunner(binary, cluster.kubeconfig, tmp_path / "kube-cache")


@pytest.fixture
def group() -> str:
    return f"k{os.getpid()}x{next(_groups)}.example.com"


def test_a_crd_and_its_resources_through_kubectl(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, group: str
) -> None:
    created = kubectl("apply", "-f", "-", stdin=CRD.format(group=group))
    assert created.stdout.strip() == f"customresourcedefinition.apiextensions.k8s.io/widgets.{group} created"
    waited = kubectl("wait", "--for", "condition=Established", f"crd/widgets.{group}", "--timeout=20s")
    assert (
        waited.stdout.strip()
        == f"customresourcedefinition.apiextensions.k8s.io/widgets.{group} condition met"
    )
    crds = [line.split() for line in kubectl("get", "crd", f"widgets.{group}").stdout.splitlines()]
    assert crds[0] == ["NAME", "CREATED", "AT"]
    assert crds[1][0] == f"widgets.{group}" and crds[1][1].endswith("Z")

    applied = kubectl("apply", "-n", namespace, "-f", "-", stdin=WIDGET.format(group=group, color="red"))
    assert applied.stdout.strip() == f"widget.{group}/w1 created"
    status = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    path = f"/apis/{group}/v1/namespaces/{namespace}/widgets/w1/status"
    assert http(cluster, "PATCH", path, status, content_type="application/merge-patch+json").status == 200
    table = [line.split() for line in kubectl("get", "widgets", "-n", namespace).stdout.splitlines()]
    assert table[0] == ["NAME", "SIZE", "COLOR", "READY"]
    assert table[1] == ["w1", "1", "red", "True"]

    changed = kubectl("apply", "-n", namespace, "-f", "-", stdin=WIDGET.format(group=group, color="blue"))
    assert changed.stdout.strip() == f"widget.{group}/w1 configured"
    again = kubectl("apply", "-n", namespace, "-f", "-", stdin=WIDGET.format(group=group, color="blue"))
    assert again.stdout.strip() == f"widget.{group}/w1 unchanged"
    stored = http(cluster, "GET", f"/apis/{group}/v1/namespaces/{namespace}/widgets/w1").body
    assert stored["spec"] == {"color": "blue", "size": 1}
    assert stored["metadata"]["generation"] == 2
    by_short_name = kubectl("get", "wdg", "w1", "-n", namespace, "-o", "jsonpath={.spec.color}")
    assert by_short_name.stdout == "blue"

    unknown = WIDGET.format(group=group, color="green").replace("spec: {", "spec: {bogus: 1, ")
    refused = kubectl("apply", "-n", namespace, "-f", "-", stdin=unknown, check=False)
    assert refused.returncode == 1
    assert 'unknown field "spec.bogus"' in refused.stderr

    second = WIDGET.format(group=group, color="red").replace("name: w1", "name: w2")
    ssa = kubectl("apply", "--server-side", "-n", namespace, "-f", "-", stdin=second)
    assert ssa.stdout.strip() == f"widget.{group}/w2 serverside-applied"
    kubectl("apply", "--server-side", "-n", namespace, "-f", "-", stdin=second.replace("red", "green"))
    applied_twice = http(cluster, "GET", f"/apis/{group}/v1/namespaces/{namespace}/widgets/w2").body
    assert applied_twice["spec"] == {"color": "green", "size": 1}
    managers = [(e["manager"], e["operation"]) for e in applied_twice["metadata"]["managedFields"]]
    assert managers == [("kubectl", "Apply")]

    explained = kubectl("explain", f"widgets.{group}.spec.size").stdout
    assert "How big the widget is." in explained

    deleted = kubectl("delete", "widget", "w1", "-n", namespace)
    assert deleted.stdout.strip() == f'widget.{group} "w1" deleted'
    kubectl("apply", "-n", namespace, "-f", "-", stdin=WIDGET.format(group=group, color="red"))
    gone = kubectl("delete", "-f", "-", stdin=CRD.format(group=group))
    assert gone.stdout.strip() == f'customresourcedefinition.apiextensions.k8s.io "widgets.{group}" deleted'
    assert http(cluster, "GET", f"/apis/{group}/v1/namespaces/{namespace}/widgets/w1").status == 404
    missing = kubectl("get", f"widgets.{group}", "-n", namespace, check=False)
    assert missing.returncode == 1
    assert 'the server doesn\'t have a resource type "widgets"' in missing.stderr
