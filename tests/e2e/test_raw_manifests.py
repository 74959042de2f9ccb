"""Raw manifests end to end: a plan's own CRD and a custom resource of it, a PodDisruptionBudget, a
NetworkPolicy and a Secret, written as plain objects (inline and in a manifest file), applied in order,
masked, and pruned when removed; then a custom resource of a cluster-scoped CRD installed outside the
plan, placed by the cluster's discovery (`check_served_scope`, which the real tier runs too). Everything
is checked through kubectl and raw HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, http, write_plan

PASSWORD = "hunter2-raw"
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
CRD_FILE = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{kind: {kind}, plural: {plural}, singular: {singular}, listKind: {kind}List}}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {{type: integer}}
---
apiVersion: example.com/v1
kind: {kind}
metadata:
  name: first
spec:
  size: 3
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def plan_text(namespace: str, *, crd: bool, custom: bool, extras: bool) -> str:
    text = (
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: raw, namespace: {namespace}}}\n"
        "workloads:\n  - {name: web, image: 'nginx:1.27'}\n"
    )
    if crd:
        text += "allowClusterScoped: true\n"
    files = [f"crds/{name}" for name, wanted in (("crd.yaml", crd), ("widget.yaml", custom)) if wanted]
    if files:
        text += f"manifestFiles: {json.dumps(files)}\n"
    if extras:
        text += f"""\
manifests:
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {{name: web}}
    spec: {{minAvailable: 1, selector: {{matchLabels: {{app: web}}}}}}
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {{name: web-ingress}}
    spec:
      podSelector: {{matchLabels: {{app: web}}}}
      policyTypes: [Ingress]
      ingress: [{{ports: [{{port: 8080}}]}}]
  - apiVersion: v1
    kind: Secret
    metadata: {{name: creds}}
    stringData: {{password: {PASSWORD}}}
"""
    return text


def write_files(directory: Path, kind: str) -> None:
    plural = f"{kind.lower()}s"
    crd, widget = CRD_FILE.format(kind=kind, plural=plural, singular=kind.lower()).split("---\n")
    (directory / "crds").mkdir(exist_ok=True)
    (directory / "crds" / "crd.yaml").write_text(crd)
    (directory / "crds" / "widget.yaml").write_text(widget)


def get_json(kubectl: Runner, *args: str) -> dict[str, object]:
    result = kubectl("get", *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_a_crd_and_its_custom_resource_apply_in_order_and_prune_with_the_other_raw_objects(
    cluster: ClusterHandle, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    kind = f"Gadget{namespace.replace('-', '').capitalize()}"  # one CRD per test: CRDs are cluster-wide
    plural = f"{kind.lower()}s"
    write_files(tmp_path, kind)
    plan = write_plan(tmp_path, plan_text(namespace, crd=True, custom=True, extras=True))

    graph = planner("plan", str(plan), "--graph")
    assert graph.returncode == 0, graph.stdout + graph.stderr
    assert "+ create secret/" in graph.stdout and PASSWORD not in graph.stdout + graph.stderr

    applied = planner("apply", str(plan), "--no-wait", "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert PASSWORD not in applied.stdout + applied.stderr

    crd = get_json(kubectl, "crd", f"{plural}.example.com")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}  # type: ignore[index]
    assert conditions["Established"] == "True"
    widget = get_json(kubectl, plural, "first", "-n", namespace)
    assert widget["spec"] == {"size": 3}
    pdb = get_json(kubectl, "poddisruptionbudget", "web", "-n", namespace)
    assert pdb["spec"]["minAvailable"] == 1  # type: ignore[index]
    policy = get_json(kubectl, "networkpolicy", "web-ingress", "-n", namespace)
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # type: ignore[index]
    secret = get_json(kubectl, "secret", "creds", "-n", namespace)
    assert secret["type"] == "Opaque"
    # The ApplySet parent lists every new kind, so a later apply finds them to prune.
    status, parent = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/raw")
    assert status == 200, parent
    listed = set(parent["metadata"]["annotations"][GROUP_KINDS].split(","))
    assert {
        "CustomResourceDefinition.apiextensions.k8s.io",
        f"{kind}.example.com",
        "PodDisruptionBudget.policy",
        "NetworkPolicy.networking.k8s.io",
        "Secret",
    } <= listed
    # The custom resource is written only once its CRD is Established.
    tasks = [line.split(" <- ")[0].split(" [")[0] for line in graph.stdout.splitlines()]
    assert tasks.index(f"wait-ready customresourcedefinition/{plural}.example.com") < tasks.index(
        f"create {kind.lower()}/{namespace}/first"
    )

    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    # Removed from the plan: pruned; the CRD stays while the plan does not allow cluster-scoped objects.
    write_plan(tmp_path, plan_text(namespace, crd=False, custom=False, extras=False))
    pruned = planner("apply", str(plan), "--no-wait", "--timeout", "60s")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    for args in ((plural, "first"), ("pdb", "web"), ("networkpolicy", "web-ingress"), ("secret", "creds")):
        gone = kubectl("get", *args, "-n", namespace)
        assert gone.returncode != 0 and "NotFound" in gone.stderr, args
    assert kubectl("get", "crd", f"{plural}.example.com").returncode == 0


def scoped_plan(namespace: str, kind: str, *, allowed: bool, unserved: bool) -> str:
    text = f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: scoped, namespace: {namespace}}}\n"
    text += "allowClusterScoped: true\n" if allowed else ""
    text += "manifests:\n"
    text += f"  - {{apiVersion: example.com/v1, kind: {kind}, metadata: {{name: gold}}, spec: {{size: 5}}}}\n"
    if unserved:
        text += "  - {apiVersion: example.com/v1, kind: Unserved, metadata: {name: nothing}}\n"
    return text


def check_served_scope(planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path, kind: str) -> None:
    """A custom resource whose CRD the plan does not declare takes the scope the cluster serves it with:
    a cluster-scoped one is refused without `allowClusterScoped`, beside a kind the cluster does not serve,
    at their file positions, with nothing written; allowed, it is applied without a namespace."""
    plural = f"{kind.lower()}s"
    namespaced = CRD_FILE.format(kind=kind, plural=plural, singular=kind.lower()).split("---\n")[0]
    crd = namespaced.replace("scope: Namespaced", "scope: Cluster")
    installed = kubectl("apply", "-f", "-", stdin=crd)
    assert installed.returncode == 0, installed.stderr
    established = kubectl("wait", "--for=condition=Established", f"crd/{plural}.example.com", "--timeout=60s")
    assert established.returncode == 0, established.stderr

    plan = write_plan(tmp_path, scoped_plan(namespace, kind, allowed=False, unserved=True))
    refused = planner("apply", str(plan), "--no-wait")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[-2:] == [
        f"{plan}:5:5: manifests[0].kind: {kind} is cluster-scoped: set `allowClusterScoped: true` on the plan "
        "to manage cluster-scoped objects (apply then also prunes them)",
        f"{plan}:6:5: manifests[1].kind: the cluster serves no kind Unserved in example.com/v1: install its "
        "CustomResourceDefinition first, or declare it in the plan",
    ]
    assert kubectl("get", "secret", "scoped", "-n", namespace).returncode != 0  # not even the parent

    write_plan(tmp_path, scoped_plan(namespace, kind, allowed=True, unserved=False))
    applied = planner("apply", str(plan), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    made = kubectl("get", plural, "gold", "-o", "json")
    assert made.returncode == 0, made.stderr
    gold = json.loads(made.stdout)
    assert ("namespace" in gold["metadata"], gold["spec"]) == (False, {"size": 5})
    again = planner("plan", "--detailed-exitcode", str(plan))
    assert again.returncode == 0, again.stdout + again.stderr
    assert kubectl("delete", "crd", f"{plural}.example.com").returncode == 0  # CRDs are cluster-wide


def test_a_custom_resource_of_a_crd_outside_the_plan_takes_the_scope_the_cluster_serves(
    cluster: ClusterHandle, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    check_served_scope(
        planner, kubectl, namespace, tmp_path, f"Tier{namespace.replace('-', '').capitalize()}"
    )
