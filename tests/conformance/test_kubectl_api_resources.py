"""Real kubectl (1.27, 1.31, 1.33) sees every API group and resource a v1.28.7 server serves, and the
admission that matters to users: `api-resources` and `api-versions` print exactly what they printed
against the real server (`tests/golden/apigroups/`), `explain` reads a new kind's schema, `drain`
waits on a PodDisruptionBudget, quotas refuse, LimitRanges default, PriorityClasses fill `priority`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.paths import REPO
from tests.slimcluster import Kubectl, KubectlRunner, http, kubectl_binary

GOLDEN = REPO / "tests" / "golden" / "apigroups"
VERSIONS = ("1.27", "1.31", "1.33")


@pytest.fixture(params=VERSIONS, ids=[f"kubectl {v}" for v in VERSIONS])
def any_kubectl(request: pytest.FixtureRequest, cluster: ClusterHandle, tmp_path: Path) -> Kubectl:
    binary = kubectl_binary(request.param)
    if binary is None:
        pytest.skip(f"kubectl.{request.param} is not installed beside kubectl")
    return KubectlRunner(binary, cluster.kubeconfig, tmp_path / "kube-cache")


def _recorded(name: str) -> list[str]:
    return (GOLDEN / name).read_text().splitlines()


def test_api_resources_lists_exactly_the_real_servers_rows(any_kubectl: Kubectl) -> None:
    assert any_kubectl("api-resources").stdout.splitlines() == _recorded("api-resources.txt")
    assert any_kubectl("api-resources", "-o", "wide").stdout.splitlines() == _recorded(
        "api-resources-wide.txt"
    )


def test_api_versions_lists_exactly_the_real_servers_versions(any_kubectl: Kubectl) -> None:
    assert any_kubectl("api-versions").stdout.splitlines() == _recorded("api-versions.txt")


def test_explain_a_new_kind(kubectl: Kubectl) -> None:
    explained = kubectl("explain", "poddisruptionbudget.spec.maxUnavailable").stdout
    assert "GROUP:      policy" in explained
    assert "FIELD: maxUnavailable <IntOrString>" in explained


def test_quota_refuses_the_pod_that_exceeds_it(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str
) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "1", "requests.cpu": "1"}},
    }
    kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(quota))
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - {{name: c, image: nginx, resources: {{requests: {{cpu: {cpu}}}}}}}\n"
    kubectl("apply", "-n", namespace, "-f", "-", stdin=pod.format(name="one", cpu="600m"))
    refused = kubectl(
        "apply", "-n", namespace, "-f", "-", stdin=pod.format(name="two", cpu="500m"), check=False
    )
    assert refused.returncode == 1
    assert (
        'pods "two" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=500m, '
        "used: pods=1,requests.cpu=600m, limited: pods=1,requests.cpu=1"
    ) in refused.stderr
    row = kubectl("get", "quota", "q", "-n", namespace, "--no-headers").stdout.split(None, 2)
    assert row[2].strip() == "pods: 1/1, requests.cpu: 600m/1"


def test_limit_range_defaults_a_containers_resources(kubectl: Kubectl, namespace: str) -> None:
    limits = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults"},
        "spec": {
            "limits": [
                {"type": "Container", "default": {"memory": "256Mi"}, "defaultRequest": {"cpu": "100m"}}
            ]
        },
    }
    kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(limits))
    kubectl("run", "web", "-n", namespace, "--image=nginx")
    resources = json.loads(
        kubectl("get", "pod", "web", "-n", namespace, "-o", "jsonpath={.spec.containers[0].resources}").stdout
    )
    assert resources == {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}}


def test_priority_is_filled_in_from_the_class(kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "priorityclass", f"high-{namespace}", "--value=1000")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"priorityClassName": f"high-{namespace}", "containers": [{"name": "c", "image": "nginx"}]},
    }
    kubectl("apply", "-n", namespace, "-f", "-", stdin=json.dumps(pod))
    assert kubectl("get", "pod", "p", "-n", namespace, "-o", "jsonpath={.spec.priority}").stdout == "1000"
    assert "system-node-critical" in kubectl("get", "priorityclasses").stdout


@pytest.fixture(scope="module")
def simulated() -> Iterator[ClusterHandle]:
    with running_cluster(simulate=True, time_scale=0.05) as handle:
        yield handle


def test_drain_waits_for_the_budget_then_succeeds(simulated: ClusterHandle, tmp_path: Path) -> None:
    binary = kubectl_binary("1.33")
    if binary is None:
        pytest.skip("kubectl.1.33 is not installed beside kubectl")
    kubectl = KubectlRunner(binary, simulated.kubeconfig, tmp_path / "cache")
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    kubectl("create", "pdb", "web", "--selector=app=web", "--min-available=2")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s", timeout=70)
    node = kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout
    drain = subprocess.Popen(
        kubectl.command("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        refusal = "Cannot evict pod as it would violate the pod's disruption budget."
        assert drain.stdout is not None
        lines = []
        for line in drain.stdout:
            lines.append(line)
            if refusal in line:
                break
        assert any(refusal in line for line in lines), lines
        assert drain.poll() is None  # still waiting on the budget
        kubectl("patch", "pdb", "web", "--type=merge", "-p", '{"spec":{"minAvailable":0}}')
        output, _ = drain.communicate(timeout=120)
    finally:
        drain.kill()
    assert drain.returncode == 0, output
    assert f"node/{node} drained" in output
    budget = http(simulated, "GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web").body
    assert budget["status"]["desiredHealthy"] == 0
