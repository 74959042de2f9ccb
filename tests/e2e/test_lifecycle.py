"""Lifecycle commands end to end: `planner start|stop|pause|resume|delete|logs|inspect RUNTIME_ID` as a
subprocess against the embedded cluster, asserted through raw HTTP (never planner's own reader).

Workloads are hand-built and created over raw HTTP, so these tests do not depend on `apply`.
"""

from __future__ import annotations

import json
import time
import urllib.error
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import urlopen
from tests.e2e.conftest import Runner, http

LABELS = "gobrave-workload"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    """Ten times faster than real time: pods start, log and finish quickly."""
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def wait_for(check: Callable[[], Any], *, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def labels(name: str) -> dict[str, str]:
    return {"app": name, LABELS: name}


def container(**extra: Any) -> dict[str, Any]:
    return {"name": "main", "image": "ghcr.io/acme/app:1", **extra}


def deployment(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(name)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels(name)},
            "template": {"metadata": {"labels": labels(name)}, "spec": {"containers": [container()]}},
        },
    }


def service(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-svc", "namespace": namespace, "labels": labels(name)},
        "spec": {"selector": labels(name), "ports": [{"port": 80, "targetPort": 8080}]},
    }


def job(name: str, namespace: str) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [container()]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(name)},
        "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels(name)}, "spec": pod}},
    }


def claim(name: str, namespace: str, owner: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels(owner),
            "annotations": annotations or {},
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def sandbox_pod(name: str, namespace: str) -> dict[str, Any]:
    claims = {"rootfs": f"{name}-rootfs-g2", "workspace": f"{name}-workspace"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels(name),
            "annotations": {"planner.dev/runtime-id": f"k8s-{namespace}|sandbox|{name}"},
        },
        "spec": {
            "containers": [container()],
            "volumes": [{"name": v, "persistentVolumeClaim": {"claimName": c}} for v, c in claims.items()],
            "restartPolicy": "Always",
        },
    }


def create(cluster: ClusterHandle, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, created = http(cluster, "POST", path, body)
    assert status == 201, created
    return dict(created)


def make_sandbox(cluster: ClusterHandle, namespace: str, name: str = "box") -> None:
    pod = sandbox_pod(name, namespace)
    state = {"planner.dev/sandbox-state": "running", "planner.dev/pod-spec": json.dumps(pod, sort_keys=True)}
    base = f"/api/v1/namespaces/{namespace}"
    create(cluster, f"{base}/persistentvolumeclaims", claim(f"{name}-rootfs-g2", namespace, name))
    create(cluster, f"{base}/persistentvolumeclaims", claim(f"{name}-workspace", namespace, name, state))
    create(cluster, f"{base}/pods", pod)


def get(cluster: ClusterHandle, path: str) -> dict[str, Any] | None:
    status, body = http(cluster, "GET", path)
    if status == 404:
        return None
    assert status == 200, body
    return dict(body)


def pods_of(cluster: ClusterHandle, namespace: str, name: str) -> list[dict[str, Any]]:
    _, pods = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods?labelSelector={LABELS}%3D{name}")
    return list(pods["items"])


def pods_started(cluster: ClusterHandle, namespace: str, name: str) -> None:
    """Wait until the embedded cluster's controllers created the Deployment's pods."""
    wait_for(lambda: pods_of(cluster, namespace, name), what=f"pods of deployment {name}")


def gone_or_terminating(cluster: ClusterHandle, path: str) -> bool:
    found = get(cluster, path)
    return found is None or bool(found["metadata"].get("deletionTimestamp"))


COMMANDS = ["start", "stop", "pause", "resume", "delete", "logs", "inspect"]


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c} rejects a malformed runtime ID" for c in COMMANDS])
def test_a_malformed_runtime_id_exits_1(planner: Runner, command: str) -> None:
    result = planner(command, "shop/web")
    assert result.returncode == 1, result.stderr
    assert "malformed runtime ID 'shop/web'" in result.stderr
    assert "<runtime>-<namespace>|<kind>|<name>" in result.stderr


def test_an_unknown_runtime_prefix_exits_1(planner: Runner) -> None:
    result = planner("stop", "docker-shop|deployment|web")
    assert result.returncode == 1
    assert "unknown runtime prefix 'docker'" in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c} of a missing workload exits 4" for c in COMMANDS])
@pytest.mark.parametrize("kind", ["deployment", "job", "sandbox"])
def test_a_missing_workload_exits_4(planner: Runner, namespace: str, command: str, kind: str) -> None:
    result = planner(command, f"k8s-{namespace}|{kind}|nothing")
    assert result.returncode == 4, result.stderr
    assert f"{kind} {namespace}/nothing (k8s-{namespace}|{kind}|nothing) not found" in result.stderr


def test_with_output_json_a_missing_workload_is_also_a_json_error_line_carrying_exit_code_4(
    planner: Runner, namespace: str
) -> None:
    result = planner("inspect", f"k8s-{namespace}|deployment|nothing", "-o", "json")
    assert (result.returncode, result.stdout) == (4, "")
    text, line = result.stderr.splitlines()
    error = json.loads(line)
    assert text == f"error: {error['message']}"
    assert (error["type"], error["exit_code"]) == ("Error", 4)
    assert (
        f"deployment {namespace}/nothing (k8s-{namespace}|deployment|nothing) not found" in error["message"]
    )


def test_a_deleted_job_is_not_restartable(planner: Runner, namespace: str) -> None:
    result = planner("start", f"k8s-{namespace}|job|gone")
    assert result.returncode == 4
    assert "a deleted Job is not restartable" in result.stderr


def test_stop_and_start_scale_a_deployment_through_scale_as_planner_lifecycle(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    stopped = planner("stop", f"k8s-{namespace}|deployment|web")
    assert stopped.returncode == 0, stopped.stderr
    assert (
        stopped.stdout == f"k8s-{namespace}|deployment|web: stopped: scaled deployment {namespace}/web to 0\n"
    )
    live = get(cluster, path)
    assert live is not None and live["spec"]["replicas"] == 0
    started = planner("start", f"k8s-{namespace}|deployment|web", "-o", "json")
    assert started.returncode == 0, started.stderr
    record = json.loads(started.stdout)
    assert (record["type"], record["action"], record["runtime_id"]) == (
        "Lifecycle",
        "started",
        f"k8s-{namespace}|deployment|web",
    )
    live = get(cluster, path)
    assert live is not None and live["spec"]["replicas"] == 1


def test_a_scale_is_recorded_as_planner_lifecycle_on_the_scale_subresource(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    assert planner("stop", f"k8s-{namespace}|deployment|web").returncode == 0
    live = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert live is not None
    managers = {(m["manager"], m.get("subresource", "")) for m in live["metadata"].get("managedFields", [])}
    assert ("planner-lifecycle", "scale") in managers


def test_pause_is_stop_for_a_deployment(cluster: ClusterHandle, planner: Runner, namespace: str) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    assert planner("pause", f"k8s-{namespace}|deployment|web").returncode == 0
    live = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert live is not None and live["spec"]["replicas"] == 0
    assert planner("resume", f"k8s-{namespace}|deployment|web").returncode == 0
    live = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert live is not None and live["spec"]["replicas"] == 1


def test_delete_removes_the_service_then_the_deployment(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    create(cluster, f"/api/v1/namespaces/{namespace}/services", service("web", namespace))
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("api", namespace))
    assert planner("delete", f"k8s-{namespace}|deployment|web").returncode == 0
    assert get(cluster, f"/api/v1/namespaces/{namespace}/services/web-svc") is None
    assert gone_or_terminating(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    without_service = planner("delete", f"k8s-{namespace}|deployment|api")
    assert without_service.returncode == 0, without_service.stderr


def test_stop_deletes_a_job_with_foreground_propagation(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    path = f"/apis/batch/v1/namespaces/{namespace}/jobs/etl"
    created = create(cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs", job("etl", namespace))
    assert planner("start", f"k8s-{namespace}|job|etl").returncode == 0
    unchanged = get(cluster, path)
    assert unchanged is not None  # start only checks that the Job exists: nothing written
    assert unchanged["metadata"]["generation"] == created["metadata"]["generation"]
    assert unchanged["spec"] == created["spec"]
    result = planner("stop", f"k8s-{namespace}|job|etl")
    assert result.returncode == 0, result.stderr
    live = get(cluster, path)
    assert live is None or "foregroundDeletion" in live["metadata"].get("finalizers", [])


def test_pause_keeps_the_pvcs_and_marks_only_the_state(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    make_sandbox(cluster, namespace)
    claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"

    def bound() -> dict[str, Any] | None:
        claim = get(cluster, f"{claims}/box-workspace")
        return claim if claim and claim.get("status", {}).get("phase") == "Bound" else None

    before = wait_for(bound, what="the workspace PVC to bind")  # the binder's own writes come first
    result = planner("pause", f"k8s-{namespace}|sandbox|box")
    assert result.returncode == 0, result.stderr
    wait_for(lambda: get(cluster, f"/api/v1/namespaces/{namespace}/pods/box") is None, what="the pod to go")
    after = get(cluster, f"{claims}/box-workspace")
    assert after is not None and get(cluster, f"{claims}/box-rootfs-g2") is not None
    expected = before["metadata"]["annotations"] | {"planner.dev/sandbox-state": "paused"}
    annotations = dict(after["metadata"]["annotations"])
    stamped = datetime.fromisoformat(annotations.pop("planner.dev/last-activity").replace("Z", "+00:00"))
    assert stamped >= datetime.fromisoformat(before["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    assert annotations == expected
    assert after["spec"] == before["spec"]


def test_resume_recreates_the_pod_from_the_workspace_record(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    make_sandbox(cluster, namespace)
    assert planner("pause", f"k8s-{namespace}|sandbox|box").returncode == 0
    pod_path = f"/api/v1/namespaces/{namespace}/pods/box"
    wait_for(lambda: get(cluster, pod_path) is None, what="the pod to go")
    result = planner("resume", f"k8s-{namespace}|sandbox|box")
    assert result.returncode == 0, result.stderr
    pod = get(cluster, pod_path)
    assert pod is not None
    assert pod["metadata"]["labels"] == labels("box")
    assert [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ] == [
        "box-rootfs-g2",
        "box-workspace",
    ]
    workspace = get(cluster, f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/box-workspace")
    assert (
        workspace is not None
        and workspace["metadata"]["annotations"]["planner.dev/sandbox-state"] == "running"
    )


@pytest.mark.parametrize(
    ("flags", "claims_left"),
    [((), ["box-rootfs-g2", "box-workspace"]), (("--allow-data-loss",), [])],
    ids=["delete keeps a sandbox's PVCs by default", "delete --allow-data-loss removes them"],
)
def test_delete_a_sandbox(
    cluster: ClusterHandle, planner: Runner, namespace: str, flags: tuple[str, ...], claims_left: list[str]
) -> None:
    make_sandbox(cluster, namespace)
    result = planner("delete", f"k8s-{namespace}|sandbox|box", *flags)
    assert result.returncode == 0, result.stderr
    assert gone_or_terminating(cluster, f"/api/v1/namespaces/{namespace}/pods/box")
    status, listed = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
    assert status == 200
    left = sorted(
        c["metadata"]["name"] for c in listed["items"] if not c["metadata"].get("deletionTimestamp")
    )
    assert left == claims_left


def test_inspect_a_deployment_names_its_service_dns(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    service = {"metadata": {"name": "web-svc"}, "spec": {"selector": labels("web"), "ports": [{"port": 80}]}}
    create(cluster, f"/api/v1/namespaces/{namespace}/services", service)
    result = planner("inspect", f"k8s-{namespace}|deployment|web", "-o", "json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["ip_address"] == f"web-svc.{namespace}.svc.cluster.local"
    assert (found["kind"], found["namespace"], found["name"]) == ("deployment", namespace, "web")
    text = planner("inspect", f"k8s-{namespace}|deployment|web")
    assert f"IPAddress: web-svc.{namespace}.svc.cluster.local\n" in text.stdout


def test_inspect_a_deployment_without_a_service_names_its_pods_ip_not_a_service_that_is_not_there(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))

    def pod_ip() -> str | None:
        return next(
            (p["status"]["podIP"] for p in pods_of(cluster, namespace, "web") if p["status"].get("podIP")),
            None,
        )

    address = wait_for(pod_ip, what="a pod of the deployment with an IP")
    found = json.loads(planner("inspect", f"k8s-{namespace}|deployment|web", "-o", "json").stdout)
    assert found["ip_address"] == address


def test_inspect_a_deployment_names_its_latest_pods_node(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    pods_started(cluster, namespace, "web")

    def scheduled_pod() -> dict[str, Any] | None:
        return next((p for p in pods_of(cluster, namespace, "web") if p["spec"].get("nodeName")), None)

    pod = wait_for(scheduled_pod, what="a scheduled pod of the deployment")
    found = json.loads(planner("inspect", f"k8s-{namespace}|deployment|web", "-o", "json").stdout)
    assert found["node_name"] == pod["spec"]["nodeName"]


def test_inspect_a_sandbox(cluster: ClusterHandle, planner: Runner, namespace: str) -> None:
    make_sandbox(cluster, namespace)

    # Ready and its IP settled first: inspect and the read below must see the same, final pod state
    # (a pod with an IP may not be Ready yet, and inspect would say `starting`).
    def settled() -> bool:
        status = (get(cluster, f"/api/v1/namespaces/{namespace}/pods/box") or {}).get("status", {})
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", [])
        )
        return ready and bool(status.get("podIP"))

    wait_for(settled, timeout=60.0, what="the sandbox pod Ready, with its IP")
    result = planner("inspect", f"k8s-{namespace}|sandbox|box", "-o", "json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    pod = get(cluster, f"/api/v1/namespaces/{namespace}/pods/box")
    assert pod is not None
    assert found["pvcs"] == ["box-rootfs-g2", "box-workspace"]
    assert (found["generation"], found["state"], found["pod"]) == (2, "running", "box")
    assert found["ip_address"] == pod.get("status", {}).get("podIP", "")


def test_logs_default_to_the_last_200_lines_of_the_latest_pod(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    pods_started(cluster, namespace, "web")

    def running_pod_with_many_lines() -> str | None:
        for pod in pods_of(cluster, namespace, "web"):
            name = pod["metadata"]["name"]
            text = _raw_log(cluster, f"/api/v1/namespaces/{namespace}/pods/{name}/log")
            if text.count("\n") > 230:
                return name
        return None

    wait_for(running_pod_with_many_lines, timeout=60.0, what="a pod with more than 230 log lines")
    result = planner("logs", f"k8s-{namespace}|deployment|web")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 200
    short = planner("logs", f"k8s-{namespace}|deployment|web", "--tail", "5")
    assert len(short.stdout.splitlines()) == 5


def _raw_log(cluster: ClusterHandle, path: str) -> str:
    """The log, or "" while the container has not started (400, as on a real server)."""
    try:
        with urlopen(cluster, path) as reply:
            return str(reply.read().decode())
    except urllib.error.HTTPError as error:
        if error.code != 400:
            raise
        return ""


def test_start_watch_follows_the_deployment_until_it_has_started(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    rid = f"k8s-{namespace}|deployment|web"
    assert planner("stop", rid).returncode == 0
    result = planner("start", rid, "--watch", "--timeout", "60s", "-o", "json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["type"], line["message"]) for line in lines] == [
        ("Lifecycle", f"scaled deployment {namespace}/web to 1"),
        ("ContainerStarted", "ready 1/1"),
    ]


def test_resume_watch_follows_the_sandbox_until_its_pod_is_ready(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    make_sandbox(cluster, namespace)
    rid = f"k8s-{namespace}|sandbox|box"
    assert planner("pause", rid).returncode == 0
    wait_for(lambda: get(cluster, f"/api/v1/namespaces/{namespace}/pods/box") is None, what="the pod to go")
    result = planner("resume", rid, "--watch", "--timeout", "60s")
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith(f"{rid}: resumed: recreated pod {namespace}/box")
    assert second.split()[1:3] == ["ContainerStarted", rid]
