"""Real kubectl 1.27 and 1.33 (fresh --cache-dir each) against the embedded cluster for what its
kubectl fidelity serves: client-side apply (strategic merge) reporting `unchanged`, server-side apply, `diff` with
server-side dry run, `patch` in all three types, `label`, `annotate`, `scale`, `edit`, and the
server-side Tables `get` prints (hand-built objects in each pod state, written through /status)."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from planner.slim.cluster import ClusterHandle
from tests.slimcluster import Kubectl, http

# Canonical manifests: what the server stores equals what they say (quantities as the server prints
# them, Secret `data` rather than `stringData`), so a second client-side apply has nothing to send —
# against a real apiserver too.
MANIFESTS = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: nginx, image: "nginx:1.25", ports: [{containerPort: 80}], resources: {limits: {cpu: 500m, memory: 1Gi}}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
data: {password: aHVudGVyMg==}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], storageClassName: standard, resources: {requests: {storage: 1Gi}}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec: {containers: [{name: c, image: nginx}]}
"""
OBJECTS = (
    "deployment.apps/web",
    "service/web",
    "configmap/settings",
    "secret/creds",
    "persistentvolumeclaim/data",
    "job.batch/once",
    "pod/solo",
)


def write_manifests(tmp_path: Path, text: str = MANIFESTS) -> Path:
    path = tmp_path / "all.yaml"
    path.write_text(text)
    return path


def resource_version(cluster: ClusterHandle, path: str) -> str:
    return str(http(cluster, "GET", path).body["metadata"]["resourceVersion"])


# --- apply, diff --------------------------------------------------------------------------------------


def test_client_side_apply_twice_reports_every_object_unchanged(
    kubectl: Kubectl, namespace: str, tmp_path: Path
) -> None:
    manifest = write_manifests(tmp_path)
    first = kubectl("apply", "-n", namespace, "-f", str(manifest)).stdout
    second = kubectl("apply", "-n", namespace, "-f", str(manifest)).stdout
    assert sorted(first.splitlines()) == sorted(f"{name} created" for name in OBJECTS)
    assert sorted(second.splitlines()) == sorted(f"{name} unchanged" for name in OBJECTS)


def test_client_side_apply_of_a_change_configures_only_that_object(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    manifest = write_manifests(tmp_path)
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    write_manifests(tmp_path, MANIFESTS.replace("mode: fast", "mode: slow"))
    output = kubectl("apply", "-n", namespace, "-f", str(manifest)).stdout
    assert "configmap/settings configured" in output and "deployment.apps/web unchanged" in output
    settings = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings").body
    assert settings["data"] == {"mode": "slow"}


def test_server_side_apply_twice_keeps_the_resource_version(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    manifest = write_manifests(tmp_path)
    first = kubectl("apply", "--server-side", "-n", namespace, "-f", str(manifest)).stdout
    deployment = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    before = resource_version(cluster, deployment)
    second = kubectl("apply", "--server-side", "-n", namespace, "-f", str(manifest)).stdout
    assert sorted(first.splitlines()) == sorted(f"{name} serverside-applied" for name in OBJECTS)
    assert sorted(second.splitlines()) == sorted(f"{name} serverside-applied" for name in OBJECTS)
    assert resource_version(cluster, deployment) == before
    managers = [e["manager"] for e in http(cluster, "GET", deployment).body["metadata"]["managedFields"]]
    assert managers == ["kubectl"]


def test_diff_exits_0_when_equal_and_1_when_changed(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    manifest = write_manifests(tmp_path)
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    equal = kubectl("diff", "-n", namespace, "-f", str(manifest), check=False)
    assert (equal.returncode, equal.stdout) == (0, "")
    write_manifests(tmp_path, MANIFESTS.replace("mode: fast", "mode: slow"))
    changed = kubectl("diff", "-n", namespace, "-f", str(manifest), check=False)
    assert changed.returncode == 1
    assert "-  mode: fast" in changed.stdout and "+  mode: slow" in changed.stdout


def test_server_side_diff_is_a_dry_run_apply(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    manifest = write_manifests(tmp_path)
    kubectl("apply", "--server-side", "-n", namespace, "-f", str(manifest))
    equal = kubectl("diff", "--server-side", "-n", namespace, "-f", str(manifest), check=False)
    assert (equal.returncode, equal.stdout) == (0, "")
    write_manifests(tmp_path, MANIFESTS.replace("mode: fast", "mode: slow"))
    changed = kubectl("diff", "--server-side", "-n", namespace, "-f", str(manifest), check=False)
    assert changed.returncode == 1 and "+  mode: slow" in changed.stdout
    settings = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings").body
    assert settings["data"] == {"mode": "fast"}


def test_diff_of_a_changed_job_template_fails_with_the_servers_422(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    manifest = write_manifests(tmp_path)
    kubectl("apply", "-n", namespace, "-f", str(manifest))
    before = resource_version(cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs/once")
    write_manifests(tmp_path, MANIFESTS.replace("image: busybox", "image: busybox:1.36"))
    result = kubectl("diff", "-n", namespace, "-f", str(manifest), check=False)
    assert result.returncode > 1
    # kubectl rewords the server's Invalid Status as "The <Kind> "<name>" is invalid: <causes>".
    assert result.stderr.startswith('The Job "once" is invalid: spec.template: Invalid value: ')
    assert result.stderr.rstrip().endswith("field is immutable")
    assert resource_version(cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs/once") == before


def test_diff_of_a_new_object_creates_nothing(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    manifest = write_manifests(tmp_path)
    result = kubectl("diff", "-n", namespace, "-f", str(manifest), check=False)
    assert result.returncode == 1 and "+  name: web" in result.stdout
    listing = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments").body
    assert listing["items"] == []


# --- patch, label, annotate, scale, edit ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch_type", "document", "image"),
    [
        (
            "strategic",
            '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.26"}]}}}}',
            "nginx:1.26",
        ),
        (
            "merge",
            '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}',
            "nginx:1.27",
        ),
        (
            "json",
            '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.28"}]',
            "nginx:1.28",
        ),
    ],
    ids=[
        "a strategic patch merges the container by name",
        "a merge patch replaces the container list",
        "a JSON patch replaces one value",
    ],
)
def test_patch_in_each_type(
    kubectl: Kubectl,
    cluster: ClusterHandle,
    namespace: str,
    tmp_path: Path,
    patch_type: str,
    document: str,
    image: str,
) -> None:
    kubectl("apply", "-n", namespace, "-f", str(write_manifests(tmp_path)))
    output = kubectl(
        "patch", "-n", namespace, "deployment", "web", "--type", patch_type, "-p", document
    ).stdout
    assert output.strip() == "deployment.apps/web patched"
    container = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web").body["spec"][
        "template"
    ]["spec"]["containers"][0]
    assert container["image"] == image
    kept_ports = [{"containerPort": 80, "protocol": "TCP"}]
    assert container.get("ports") == (kept_ports if patch_type != "merge" else None)


def test_label_annotate_and_scale(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    kubectl("apply", "-n", namespace, "-f", str(write_manifests(tmp_path)))
    assert "labeled" in kubectl("label", "-n", namespace, "deployment", "web", "tier=front").stdout
    assert "annotate" in kubectl("annotate", "-n", namespace, "deployment", "web", "note=hi").stdout
    assert "scaled" in kubectl("scale", "-n", namespace, "deployment", "web", "--replicas=3").stdout
    kubectl("label", "-n", namespace, "deployment", "web", "app-")
    deployment = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web").body
    assert deployment["metadata"]["labels"] == {"tier": "front"}
    assert deployment["metadata"]["annotations"]["note"] == "hi"
    assert deployment["spec"]["replicas"] == 3
    entries = {
        (e["manager"], e.get("subresource")): e["fieldsV1"] for e in deployment["metadata"]["managedFields"]
    }
    assert entries[("kubectl-label", None)] == {"f:metadata": {"f:labels": {"f:tier": {}}}}
    assert entries[("kubectl-annotate", None)] == {"f:metadata": {"f:annotations": {"f:note": {}}}}
    # kubectl scale names no fieldManager: the entry is named after the binary (kubectl.1.27 here)
    ((manager, scale),) = [(m, f) for (m, sub), f in entries.items() if sub == "scale"]
    assert manager.startswith("kubectl") and scale == {"f:spec": {"f:replicas": {}}}


EDITOR = """\
import sys
path = sys.argv[-1]
text = open(path).read()
open(path, "w").write(text.replace("mode: fast", "mode: edited"))
"""


def test_edit_through_an_editor_script(
    kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubectl("apply", "-n", namespace, "-f", str(write_manifests(tmp_path)))
    script = tmp_path / "editor.py"
    script.write_text(EDITOR)
    monkeypatch.setenv("KUBE_EDITOR", f"{sys.executable} {script}")
    output = kubectl("edit", "-n", namespace, "configmap", "settings").stdout
    assert output.strip() == "configmap/settings edited"
    settings = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps/settings").body
    assert settings["data"] == {"mode": "edited"}


# --- get: server-side tables ------------------------------------------------------------------------------


def parse_table(output: str) -> tuple[list[str], dict[str, list[str]]]:
    """kubectl's aligned table as headers and rows by first cell; cells are cut at the headers' columns."""
    lines = [line for line in output.splitlines() if line.strip()]
    spans = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    starts = [start for start, _ in spans] + [10_000]
    rows = {}
    for line in lines[1:]:
        cells = [line[starts[i] : starts[i + 1]].strip() for i in range(len(spans))]
        rows[cells[0]] = cells
    return [name for _, name in spans], rows


def ago(seconds: int) -> str:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def running(name: str, *, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "image": "nginx",
        "imageID": "",
        "ready": ready,
        "restartCount": restarts,
        "started": True,
        "state": {"running": {"startedAt": ago(60)}},
    }


def waiting(
    name: str, reason: str, *, restarts: int = 0, last: dict[str, Any] | None = None
) -> dict[str, Any]:
    status = {
        "name": name,
        "image": "nginx",
        "imageID": "",
        "ready": False,
        "restartCount": restarts,
        "state": {"waiting": {"reason": reason}},
    }
    if last:
        status["lastState"] = last
    return status


def terminated(name: str, reason: str, code: int) -> dict[str, Any]:
    finished = {"exitCode": code, "reason": reason, "startedAt": ago(90), "finishedAt": ago(80)}
    return {
        "name": name,
        "image": "busybox",
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": finished},
    }


C = {"name": "c", "image": "nginx"}
PodState = tuple[str, dict[str, Any], dict[str, Any], tuple[str, str, str]]


def pod_states() -> list[PodState]:
    """Pods in every state kubectl prints, with times relative to now: built when the test runs, not
    when the module is imported (under load that can be minutes earlier)."""
    return [
        (
            "running",
            {"containers": [C]},
            {
                "phase": "Running",
                "podIP": "10.244.0.5",
                "podIPs": [{"ip": "10.244.0.5"}],
                "containerStatuses": [running("c")],
            },
            ("1/1", "Running", "0"),
        ),
        (
            "sidecar",
            {
                "initContainers": [{"name": "side", "image": "envoy", "restartPolicy": "Always"}],
                "containers": [C],
            },
            {
                "phase": "Running",
                "podIP": "10.244.0.6",
                "podIPs": [{"ip": "10.244.0.6"}],
                "initContainerStatuses": [running("side")],
                "containerStatuses": [running("c")],
            },
            ("2/2", "Running", "0"),
        ),
        (
            "initializing",
            {
                "initContainers": [{"name": "i1", "image": "busybox"}, {"name": "i2", "image": "busybox"}],
                "containers": [C],
            },
            {
                "phase": "Pending",
                "initContainerStatuses": [terminated("i1", "Completed", 0), running("i2", ready=False)],
                "containerStatuses": [waiting("c", "PodInitializing")],
            },
            ("0/1", "Init:1/2", "0"),
        ),
        (
            "podinit",
            {"initContainers": [{"name": "i1", "image": "busybox"}], "containers": [C]},
            {
                "phase": "Pending",
                "initContainerStatuses": [terminated("i1", "Completed", 0)],
                "containerStatuses": [waiting("c", "PodInitializing")],
            },
            ("0/1", "PodInitializing", "0"),
        ),
        (
            "creating",
            {"containers": [C]},
            {"phase": "Pending", "containerStatuses": [waiting("c", "ContainerCreating")]},
            ("0/1", "ContainerCreating", "0"),
        ),
        (
            "crashing",
            {"containers": [C]},
            {
                "phase": "Running",
                "podIP": "10.244.0.7",
                "podIPs": [{"ip": "10.244.0.7"}],
                "containerStatuses": [
                    waiting(
                        "c",
                        "CrashLoopBackOff",
                        restarts=3,
                        last={"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(125)}},
                    )
                ],
            },
            ("0/1", "CrashLoopBackOff", "3 (2m5s ago)"),
        ),
        (
            "completed",
            {"containers": [C], "restartPolicy": "Never"},
            {"phase": "Succeeded", "containerStatuses": [terminated("c", "Completed", 0)]},
            ("0/1", "Completed", "0"),
        ),
        (
            "failed",
            {"containers": [C], "restartPolicy": "Never"},
            {"phase": "Failed", "containerStatuses": [terminated("c", "Error", 1)]},
            ("0/1", "Error", "0"),
        ),
    ]


def build_pod(
    cluster: ClusterHandle, namespace: str, name: str, spec: dict[str, Any], status: dict[str, Any]
) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    assert http(cluster, "POST", pods, {"metadata": {"name": name}, "spec": spec}).status == 201, name
    reply = http(
        cluster,
        "PATCH",
        f"{pods}/{name}/status",
        {"status": status},
        content_type="application/merge-patch+json",
    )
    assert reply.status == 200, reply.body


@pytest.fixture
def pods_in_every_state(cluster: ClusterHandle, namespace: str) -> str:
    for name, spec, status, _ in pod_states():
        build_pod(cluster, namespace, name, spec, status)
    build_pod(
        cluster,
        namespace,
        "leaving",
        {"containers": [C], "nodeName": "node-1"},
        {
            "phase": "Running",
            "podIP": "10.244.0.9",
            "podIPs": [{"ip": "10.244.0.9"}],
            "containerStatuses": [running("c")],
        },
    )
    assert http(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/pods/leaving").status == 200
    return namespace


def test_get_pods_shows_ready_status_and_restarts_for_each_state(
    kubectl: Kubectl, pods_in_every_state: str
) -> None:
    headers, rows = parse_table(kubectl("get", "pods", "-n", pods_in_every_state).stdout)
    assert headers == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    for name, _, _, (ready, status, restarts) in pod_states():
        shown = rows[name][1:4]
        if name == "crashing":  # the exact seconds depend on when kubectl ran
            assert shown[:2] == [ready, status] and re.fullmatch(r"3 \(2m(\d+s)? ago\)", shown[2]), shown
        else:
            assert shown == [ready, status, restarts], name
    assert rows["leaving"][1:4] == ["1/1", "Terminating", "0"]


def test_get_pods_wide_adds_ip_node_nominated_node_and_readiness_gates(
    kubectl: Kubectl, pods_in_every_state: str
) -> None:
    headers, rows = parse_table(kubectl("get", "pods", "-n", pods_in_every_state, "-o", "wide").stdout)
    assert headers == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED NODE",
        "READINESS GATES",
    ]
    assert rows["running"][5:] == ["10.244.0.5", "<none>", "<none>", "<none>"]
    assert rows["leaving"][5:] == ["10.244.0.9", "node-1", "<none>", "<none>"]


def write_status(cluster: ClusterHandle, path: str, status: dict[str, Any]) -> None:
    reply = http(
        cluster, "PATCH", f"{path}/status", {"status": status}, content_type="application/merge-patch+json"
    )
    assert reply.status == 200, reply.body


@pytest.fixture
def workloads(kubectl: Kubectl, cluster: ClusterHandle, namespace: str, tmp_path: Path) -> str:
    kubectl("apply", "-n", namespace, "-f", str(write_manifests(tmp_path)))
    apps = f"/apis/apps/v1/namespaces/{namespace}"
    http(
        cluster,
        "PATCH",
        f"{apps}/deployments/web",
        {"spec": {"replicas": 3}},
        content_type="application/merge-patch+json",
    )
    write_status(
        cluster,
        f"{apps}/deployments/web",
        {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2},
    )
    replicaset = {
        "metadata": {"name": "web-5d9c", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": MANIFEST_TEMPLATE},
    }
    assert http(cluster, "POST", f"{apps}/replicasets", replicaset).status == 201
    write_status(cluster, f"{apps}/replicasets/web-5d9c", {"replicas": 3, "readyReplicas": 2})
    write_status(
        cluster,
        f"/apis/batch/v1/namespaces/{namespace}/jobs/once",
        {
            "startTime": ago(75),
            "completionTime": ago(63),
            "succeeded": 1,
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    )
    return namespace


MANIFEST_TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
}


@pytest.mark.parametrize(
    ("resource", "name", "headers", "cells"),
    [
        (
            "deployments",
            "web",
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
            ["2/3", "3", "2"],
        ),
        (
            "replicasets",
            "web-5d9c",
            ["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
            ["3", "3", "2"],
        ),
        (
            "jobs",
            "once",
            ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"],
            ["Complete", "1/1", "12s"],
        ),
        (
            "pvc",
            "data",
            [
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE",
            ],
            ["Pending", "", "", "", "standard", "<unset>"],
        ),
    ],
    ids=[
        "deployments show ready/desired, up-to-date and available",
        "replicasets show desired, current and ready",
        "jobs show status, completions and duration",
        "a pending claim shows its class and no volume",
    ],
)
def test_get_workload_tables(
    kubectl: Kubectl, workloads: str, resource: str, name: str, headers: list[str], cells: list[str]
) -> None:
    shown_headers, rows = parse_table(kubectl("get", resource, "-n", workloads).stdout)
    assert shown_headers == headers
    age = headers.index("AGE")
    assert rows[name][1:age] == cells


def test_get_service_shows_type_cluster_ip_and_ports(
    kubectl: Kubectl, cluster: ClusterHandle, workloads: str
) -> None:
    headers, rows = parse_table(kubectl("get", "services", "-n", workloads, "-o", "wide").stdout)
    assert headers == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    ip = http(cluster, "GET", f"/api/v1/namespaces/{workloads}/services/web").body["spec"]["clusterIP"]
    assert rows["web"][1:5] == ["ClusterIP", ip, "<none>", "80/TCP"]
    assert rows["web"][6] == "app=web"


def test_get_deployments_wide_adds_containers_images_and_selector(kubectl: Kubectl, workloads: str) -> None:
    headers, rows = parse_table(kubectl("get", "deployments", "-n", workloads, "-o", "wide").stdout)
    assert headers[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows["web"][5:] == ["nginx", "nginx:1.25", "app=web"]


CLUSTER_OBJECTS: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = [
    (
        "/api/v1/persistentvolumes",
        {
            "metadata": {"name": "pv-fidelity"},
            "spec": {
                "capacity": {"storage": "5Gi"},
                "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "standard",
                "hostPath": {"path": "/tmp/pv"},
            },
        },
        {"phase": "Available"},
    ),
    (
        "/api/v1/nodes",
        {"metadata": {"name": "node-fidelity", "labels": {"node-role.kubernetes.io/worker": ""}}},
        {
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeInfo": {"kubeletVersion": "v1.28.7"},
            "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
        },
    ),
]


@pytest.fixture(scope="module")
def cluster_objects(cluster: ClusterHandle) -> None:
    for path, body, status in CLUSTER_OBJECTS:
        created = http(cluster, "POST", path, body)
        assert created.status in (201, 409), created.body
        if status:
            write_status(cluster, f"{path}/{body['metadata']['name']}", status)


@pytest.mark.parametrize(
    ("args", "name", "headers", "cells"),
    [
        (
            ("pv",),
            "pv-fidelity",
            [
                "NAME",
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON",
                "AGE",
            ],
            ["5Gi", "RWO,ROX", "Retain", "Available", "", "standard", "<unset>", ""],
        ),
        (
            ("nodes",),
            "node-fidelity",
            ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            ["Ready", "worker"],
        ),
        (("namespaces",), "default", ["NAME", "STATUS", "AGE"], ["Active"]),
    ],
    ids=[
        "persistent volumes show capacity, access modes, policy and phase",
        "nodes show readiness and roles",
        "namespaces show their phase",
    ],
)
def test_get_cluster_scoped_tables(
    kubectl: Kubectl,
    cluster_objects: None,
    args: tuple[str, ...],
    name: str,
    headers: list[str],
    cells: list[str],
) -> None:
    shown_headers, rows = parse_table(kubectl("get", *args).stdout)
    assert shown_headers == headers
    assert rows[name][1 : 1 + len(cells)] == cells


def test_get_events_and_leases(kubectl: Kubectl, cluster: ClusterHandle, namespace: str) -> None:
    event = {
        "metadata": {"name": "solo.1"},
        "involvedObject": {"kind": "Pod", "name": "solo", "namespace": namespace},
        "reason": "Pulled",
        "message": "Container image pulled",
        "type": "Normal",
        "firstTimestamp": ago(30),
        "lastTimestamp": ago(30),
        "count": 1,
        "source": {"component": "kubelet"},
    }
    assert http(cluster, "POST", f"/api/v1/namespaces/{namespace}/events", event).status == 201
    lease = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "planner-1"}}
    assert (
        http(cluster, "POST", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", lease).status
        == 201
    )
    headers, rows = parse_table(kubectl("get", "events", "-n", namespace).stdout)
    assert headers == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    (row,) = rows.values()
    assert row[1:] == ["Normal", "Pulled", "pod/solo", "Container image pulled"]
    headers, rows = parse_table(kubectl("get", "leases", "-n", namespace).stdout)
    assert headers == ["NAME", "HOLDER", "AGE"]
    assert rows["leader"][1] == "planner-1"


def test_get_a_single_object_and_yaml_round_trip(kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    kubectl("apply", "-n", namespace, "-f", str(write_manifests(tmp_path)))
    headers, rows = parse_table(kubectl("get", "-n", namespace, "configmap", "settings").stdout)
    assert headers == ["NAME", "DATA", "AGE"] and rows["settings"][1] == "1"
    shown = YAML(typ="safe").load(
        kubectl("get", "-n", namespace, "configmap", "settings", "-o", "yaml").stdout
    )
    assert shown["data"] == {"mode": "fast"}
