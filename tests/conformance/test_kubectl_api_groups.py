"""Real kubectl (1.27 and 1.33) with the API groups beyond the workloads: `apply --prune -l` with
kubectl's default prune list (which asks for ReplicationControllers, DaemonSets, StatefulSets,
CronJobs and Ingresses), and HorizontalPodAutoscalers made by `kubectl autoscale` (1.33 sends
protobuf), listed and described."""

from __future__ import annotations

from planner.slim.cluster import ClusterHandle
from planner.testing.slimadmin import SlimAdmin
from tests.slimcluster import Kubectl, http

CONFIG = """apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}, labels: {{app: x}}}}
data: {{a: b}}
"""


def test_apply_prune_by_label_removes_what_left_the_set(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str
) -> None:
    both = CONFIG.format(name="one") + "---\n" + CONFIG.format(name="two")
    first = kubectl("apply", "--prune", "-l", "app=x", "-n", namespace, "-f", "-", stdin=both)
    assert first.stdout.splitlines() == ["configmap/one created", "configmap/two created"]
    second = kubectl(
        "apply", "--prune", "-l", "app=x", "-n", namespace, "-f", "-", stdin=CONFIG.format(name="one")
    )
    assert second.stdout.splitlines() == ["configmap/one unchanged", "configmap/two pruned"]
    assert http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/two").status == 404


def test_autoscale_then_get_and_describe(kubectl: Kubectl, cluster: ClusterHandle, namespace: str) -> None:
    kubectl("create", "deployment", "web", "-n", namespace, "--image=nginx:1.25")
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()
    kubectl("autoscale", "deployment", "web", "-n", namespace, "--min=2", "--max=5", "--cpu-percent=60")
    [created] = [e for e in admin.requests() if e["verb"] == "create"]
    version = created["path"].split("/")[3]
    stored = http(
        cluster, "GET", f"/apis/autoscaling/{version}/namespaces/{namespace}/horizontalpodautoscalers/web"
    )
    assert stored.status == 200
    table = [line.split() for line in kubectl("get", "hpa", "-n", namespace).stdout.splitlines()]
    assert table[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert table[1][:6] == ["web", "Deployment/web", "<unknown>/60%", "2", "5", "0"]
    described = kubectl("describe", "hpa", "web", "-n", namespace).stdout
    lines = {
        line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
        for line in described.splitlines()
        if ":" in line
    }
    assert (lines["Reference"], lines["Min replicas"], lines["Max replicas"]) == ("Deployment/web", "2", "5")
    assert lines["resource cpu on pods  (as a percentage of request)"] == "<unknown> / 60%"
