"""Server-side Table printing: the golden tables, every pod state of kubectl's STATUS algorithm, the
other kinds' cells, and AGE formatting."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from planner.slim.columns import human_duration, since
from planner.slim.podstatus import pod_status_cells
from planner.slim.printers import partial_object_metadata_list, to_table
from tests.paths import GOLDEN

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
RECORDED_AT = datetime(2026, 11, 29, 10, 30, 52, tzinfo=UTC)


def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())
    return data


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------------ golden


def golden_pods() -> list[dict[str, Any]]:
    """The pods of `table_pods.json`, from the recorded pod objects, with the metadata of the moment
    the table was recorded."""
    recorded = {}
    for name in ("pod_get", "pod_list_for_job", "pod_list_for_deployment"):
        body = golden(name)["response_body"]
        for item in body.get("items", [body]):
            recorded[item["metadata"]["name"]] = item
    pods = []
    for row in golden("table_pods")["response_body"]["rows"]:
        pod = copy.deepcopy(recorded[row["object"]["metadata"]["name"]])
        pod["metadata"] = row["object"]["metadata"]
        pods.append(pod)
    return pods


def golden_deployment() -> dict[str, Any]:
    deployment = copy.deepcopy(golden("deployment_get_after_controller")["response_body"])
    deployment["metadata"] = golden("table_deployments")["response_body"]["rows"][0]["object"]["metadata"]
    return deployment


def test_pods_table_equals_the_recorded_one() -> None:
    table = to_table("Pod", golden_pods(), now=RECORDED_AT, resource_version="433")
    assert table == golden("table_pods")["response_body"]


def test_pods_table_without_objects_equals_the_recorded_one() -> None:
    table = to_table("Pod", golden_pods(), now=RECORDED_AT, resource_version="433", include_object="None")
    assert table == golden("table_pods_include_object_none")["response_body"]


def test_deployments_table_equals_the_recorded_one() -> None:
    table = to_table("Deployment", [golden_deployment()], now=RECORDED_AT, resource_version="433")
    assert table == golden("table_deployments")["response_body"]


def test_single_deployment_table_carries_the_objects_resource_version() -> None:
    table = to_table("Deployment", [golden_deployment()], now=RECORDED_AT, resource_version="416")
    assert table == golden("table_deployment_single")["response_body"]


def test_partial_object_metadata_list_equals_the_recorded_one() -> None:
    listed = partial_object_metadata_list([golden_deployment()], resource_version="433")
    assert listed == golden("partial_object_metadata_list")["response_body"]


# ------------------------------------------------------------------------------------------ pod states


def container_status(
    name: str = "app", *, ready: bool = False, restarts: int = 0, **state: Any
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "image": "x",
        "imageID": "",
    }
    last = state.pop("last_finished", None)
    if "started" in state:
        status["started"] = state.pop("started")
    status["state"] = state or {"waiting": {"reason": "ContainerCreating"}}
    if last is not None:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": last}}
    return status


def pod(
    *statuses: dict[str, Any],
    phase: str = "Pending",
    init: list[dict[str, Any]] | None = None,
    init_specs: list[dict[str, Any]] | None = None,
    containers: int = 1,
    **status_fields: Any,
) -> dict[str, Any]:
    deletion = status_fields.pop("deletion", None)
    metadata: dict[str, Any] = {"name": "p", "creationTimestamp": ago(minutes=1)}
    if deletion:
        metadata["deletionTimestamp"] = deletion
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}"} for i in range(containers)]}
    if init_specs is not None:
        spec["initContainers"] = init_specs
    status: dict[str, Any] = {"phase": phase, **status_fields}
    if statuses:
        status["containerStatuses"] = list(statuses)
    if init is not None:
        status["initContainerStatuses"] = init
    return {"kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


RUNNING: dict[str, Any] = {"running": {"startedAt": ago(minutes=1)}}
TWO_INITS = [{"name": "i0"}, {"name": "i1"}]

POD_CASES = [
    ("a pending pod without statuses", pod(), ("0/1", "Pending", "0")),
    ("a container being created", pod(container_status()), ("0/1", "ContainerCreating", "0")),
    (
        "a ready running container",
        pod(container_status(ready=True, **RUNNING), phase="Running"),
        ("1/1", "Running", "0"),
    ),
    (
        "a crash-looping container shows restarts and when the last one ended",
        pod(
            container_status(
                restarts=3, waiting={"reason": "CrashLoopBackOff"}, last_finished=ago(minutes=5)
            ),
            phase="Running",
        ),
        ("0/1", "CrashLoopBackOff", "3 (5m ago)"),
    ),
    (
        "an image that cannot be pulled",
        pod(container_status(waiting={"reason": "ErrImagePull"})),
        ("0/1", "ErrImagePull", "0"),
    ),
    (
        "an image pull backing off",
        pod(container_status(waiting={"reason": "ImagePullBackOff"})),
        ("0/1", "ImagePullBackOff", "0"),
    ),
    (
        "a container that completed",
        pod(container_status(terminated={"exitCode": 0, "reason": "Completed"}), phase="Succeeded"),
        ("0/1", "Completed", "0"),
    ),
    (
        "a container that failed",
        pod(container_status(terminated={"exitCode": 1, "reason": "Error"}), phase="Failed"),
        ("0/1", "Error", "0"),
    ),
    (
        "a container killed for memory",
        pod(container_status(terminated={"exitCode": 137, "reason": "OOMKilled"}), phase="Failed"),
        ("0/1", "OOMKilled", "0"),
    ),
    (
        "a terminated container without a reason shows its exit code",
        pod(container_status(terminated={"exitCode": 3}), phase="Failed"),
        ("0/1", "ExitCode:3", "0"),
    ),
    (
        "a terminated container without a reason but with a signal shows the signal",
        pod(container_status(terminated={"exitCode": 0, "signal": 9}), phase="Failed"),
        ("0/1", "Signal:9", "0"),
    ),
    (
        "the first of two init containers running",
        pod(init=[container_status("i0", **RUNNING)], init_specs=TWO_INITS),
        ("0/1", "Init:0/2", "0"),
    ),
    (
        "the second of two init containers running",
        pod(
            init=[container_status("i0", terminated={"exitCode": 0}), container_status("i1", **RUNNING)],
            init_specs=TWO_INITS,
        ),
        ("0/1", "Init:1/2", "0"),
    ),
    (
        "an init container that failed with a reason",
        pod(
            init=[container_status("i0", terminated={"exitCode": 1, "reason": "Error"})], init_specs=TWO_INITS
        ),
        ("0/1", "Init:Error", "0"),
    ),
    (
        "an init container that failed without a reason",
        pod(init=[container_status("i0", terminated={"exitCode": 2})], init_specs=TWO_INITS),
        ("0/1", "Init:ExitCode:2", "0"),
    ),
    (
        "an init container crash-looping",
        pod(
            init=[
                container_status(
                    "i0", restarts=2, waiting={"reason": "CrashLoopBackOff"}, last_finished=ago(seconds=30)
                )
            ],
            init_specs=TWO_INITS,
        ),
        ("0/1", "Init:CrashLoopBackOff", "2 (30s ago)"),
    ),
    (
        "containers waiting while init containers finish",
        pod(
            container_status(waiting={"reason": "PodInitializing"}),
            init=[container_status("i0", terminated={"exitCode": 0, "reason": "Completed"})],
            init_specs=[{"name": "i0"}],
        ),
        ("0/1", "PodInitializing", "0"),
    ),
    (
        "a restartable init container counts as a ready sidecar",
        pod(
            container_status(ready=True, **RUNNING),
            init=[
                container_status(
                    "side", ready=True, restarts=1, last_finished=ago(minutes=2), started=True, **RUNNING
                )
            ],
            init_specs=[{"name": "side", "restartPolicy": "Always"}],
            phase="Running",
            conditions=[{"type": "Initialized", "status": "True"}],
        ),
        ("2/2", "Running", "1 (2m ago)"),
    ),
    (
        "restarts are summed and dated by the latest termination",
        pod(
            container_status("a", ready=True, restarts=1, last_finished=ago(hours=2), **RUNNING),
            container_status("b", ready=True, restarts=2, last_finished=ago(minutes=7), **RUNNING),
            containers=2,
            phase="Running",
        ),
        ("2/2", "Running", "3 (7m ago)"),
    ),
    (
        "a completed container next to a running one reads NotReady without a Ready condition",
        pod(
            container_status("a", ready=True, **RUNNING),
            container_status("b", terminated={"exitCode": 0, "reason": "Completed"}),
            containers=2,
            phase="Running",
        ),
        ("1/2", "NotReady", "0"),
    ),
    (
        "a completed container next to a running one reads Running with a Ready condition",
        pod(
            container_status("a", ready=True, **RUNNING),
            container_status("b", terminated={"exitCode": 0, "reason": "Completed"}),
            containers=2,
            phase="Running",
            conditions=[{"type": "Ready", "status": "True"}],
        ),
        ("1/2", "Running", "0"),
    ),
    (
        "a live pod being deleted is Terminating",
        pod(container_status(ready=True, **RUNNING), phase="Running", deletion=ago(seconds=5)),
        ("1/1", "Terminating", "0"),
    ),
    (
        "a pod on a lost node being deleted is Unknown",
        pod(
            container_status(ready=True, **RUNNING),
            phase="Running",
            reason="NodeLost",
            deletion=ago(seconds=5),
        ),
        ("1/1", "Unknown", "0"),
    ),
    ("an evicted pod shows the pod's reason", pod(phase="Failed", reason="Evicted"), ("0/1", "Evicted", "0")),
    (
        "a pod held by a scheduling gate",
        pod(conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]),
        ("0/1", "SchedulingGated", "0"),
    ),
]


@pytest.mark.parametrize(("obj", "expected"), [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_pod_ready_status_restarts(obj: dict[str, Any], expected: tuple[str, str, str]) -> None:
    assert pod_status_cells(obj, NOW) == expected


def test_pod_wide_cells_show_ip_node_and_readiness_gates() -> None:
    running = pod(container_status(ready=True, **RUNNING), phase="Running")
    running["spec"].update(nodeName="node-1", readinessGates=[{"conditionType": "a"}, {"conditionType": "b"}])
    running["status"].update(podIPs=[{"ip": "10.0.0.5"}], conditions=[{"type": "a", "status": "True"}])
    row = to_table("Pod", [running], now=NOW, resource_version="1")["rows"][0]
    assert row["cells"] == ["p", "1/1", "Running", "0", "60s", "10.0.0.5", "node-1", "<none>", "1/2"]


def test_finished_pods_carry_a_completed_row_condition() -> None:
    done = pod(container_status(terminated={"exitCode": 0, "reason": "Completed"}), phase="Succeeded")
    row = to_table("Pod", [done], now=NOW, resource_version="1")["rows"][0]
    assert row["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]


# ------------------------------------------------------------------------------------------ other kinds


def job(**status: Any) -> dict[str, Any]:
    spec = status.pop("spec", {"completions": 1, "parallelism": 1})
    return {
        "kind": "Job",
        "metadata": {"name": "pi", "creationTimestamp": ago(minutes=10), **status.pop("meta", {})},
        "spec": {
            **spec,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
            "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}},
        },
        "status": status,
    }


JOB_CASES = [
    ("a job not started yet", job(), ["Running", "0/1", ""]),
    (
        "a running job's duration runs until now",
        job(startTime=ago(minutes=2), active=1),
        ["Running", "0/1", "2m"],
    ),
    (
        "a complete job's duration ends at completion",
        job(
            startTime=ago(minutes=9),
            completionTime=ago(minutes=6, seconds=55),
            succeeded=1,
            conditions=[{"type": "Complete", "status": "True"}],
        ),
        ["Complete", "1/1", "2m5s"],
    ),
    (
        "a failed job",
        job(startTime=ago(minutes=3), failed=7, conditions=[{"type": "Failed", "status": "True"}]),
        ["Failed", "0/1", "3m"],
    ),
    ("a suspended job", job(conditions=[{"type": "Suspended", "status": "True"}]), ["Suspended", "0/1", ""]),
    ("a job being deleted", job(meta={"deletionTimestamp": ago(seconds=1)}), ["Terminating", "0/1", ""]),
    (
        "a parallel job without completions",
        job(spec={"parallelism": 3}, succeeded=1),
        ["Running", "1/1 of 3", ""],
    ),
]


@pytest.mark.parametrize(("obj", "cells"), [c[1:] for c in JOB_CASES], ids=[c[0] for c in JOB_CASES])
def test_job_status_completions_duration(obj: dict[str, Any], cells: list[str]) -> None:
    row = to_table("Job", [obj], now=NOW, resource_version="1")["rows"][0]
    assert row["cells"] == ["pi", *cells, "10m", "pi", "perl", "batch.kubernetes.io/controller-uid=u"]


def test_job_columns_put_status_second() -> None:
    columns = to_table("Job", [], now=NOW, resource_version="1")["columnDefinitions"]
    assert [(c["name"], c["priority"]) for c in columns] == [
        ("Name", 0),
        ("Status", 0),
        ("Completions", 0),
        ("Duration", 0),
        ("Age", 0),
        ("Containers", 1),
        ("Images", 1),
        ("Selector", 1),
    ]


def service(kind: str, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Service",
        "metadata": {"name": "web", "creationTimestamp": ago(hours=3, minutes=10)},
        "spec": {"type": kind, **spec},
        "status": spec.pop("status", {"loadBalancer": {}}),
    }


SERVICE_CASES = [
    (
        "a ClusterIP service",
        service(
            "ClusterIP",
            clusterIP="10.0.0.7",
            clusterIPs=["10.0.0.7"],
            ports=[{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
            selector={"app": "web", "tier": "a"},
        ),
        ["web", "ClusterIP", "10.0.0.7", "<none>", "80/TCP,53/UDP", "3h10m", "app=web,tier=a"],
    ),
    (
        "a NodePort service shows the node port",
        service(
            "NodePort", clusterIPs=["10.0.0.8"], ports=[{"port": 80, "nodePort": 30080, "protocol": "TCP"}]
        ),
        ["web", "NodePort", "10.0.0.8", "<none>", "80:30080/TCP", "3h10m", "<none>"],
    ),
    (
        "a LoadBalancer without an address is pending",
        service("LoadBalancer", clusterIPs=["10.0.0.9"], ports=[]),
        ["web", "LoadBalancer", "10.0.0.9", "<pending>", "<none>", "3h10m", "<none>"],
    ),
    (
        "an ExternalName service shows the name and no cluster IP",
        service("ExternalName", externalName="db.example.com"),
        ["web", "ExternalName", "<none>", "db.example.com", "<none>", "3h10m", "<none>"],
    ),
]


@pytest.mark.parametrize(("obj", "cells"), [c[1:] for c in SERVICE_CASES], ids=[c[0] for c in SERVICE_CASES])
def test_service_cells(obj: dict[str, Any], cells: list[str]) -> None:
    assert to_table("Service", [obj], now=NOW, resource_version="1")["rows"][0]["cells"] == cells


def pvc(**fields: Any) -> dict[str, Any]:
    spec = {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", **fields.pop("spec", {})}
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "creationTimestamp": ago(days=2, hours=5)},
        "spec": spec,
        "status": fields,
    }


PVC_CASES = [
    (
        "an unbound claim shows no capacity or access modes",
        pvc(phase="Pending", spec={"volumeMode": "Filesystem"}),
        ["data", "Pending", "", "", "", "standard", "<unset>", "2d5h", "Filesystem"],
    ),
    (
        "a bound claim shows the volume's capacity and abbreviated access modes",
        pvc(
            phase="Bound",
            capacity={"storage": "1Gi"},
            accessModes=["ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany"],
            spec={"volumeName": "pv-1", "volumeMode": "Block"},
        ),
        ["data", "Bound", "pv-1", "1Gi", "RWO,ROX,RWX,RWOP", "standard", "<unset>", "2d5h", "Block"],
    ),
]


@pytest.mark.parametrize(("obj", "cells"), [c[1:] for c in PVC_CASES], ids=[c[0] for c in PVC_CASES])
def test_pvc_cells(obj: dict[str, Any], cells: list[str]) -> None:
    assert (
        to_table("PersistentVolumeClaim", [obj], now=NOW, resource_version="1")["rows"][0]["cells"] == cells
    )


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "creationTimestamp": ago(minutes=5, seconds=3), **extra}


SIMPLE_CASES = [
    (
        "a namespace",
        "Namespace",
        {"metadata": meta("dev"), "status": {"phase": "Active"}},
        ["dev", "Active", "5m3s"],
    ),
    (
        "a config map counts data and binary data",
        "ConfigMap",
        {"metadata": meta("cfg"), "data": {"a": "1"}, "binaryData": {"b": "AA=="}},
        ["cfg", 2, "5m3s"],
    ),
    (
        "a secret shows its type and key count",
        "Secret",
        {"metadata": meta("s"), "type": "Opaque", "data": {"a": "MQ=="}},
        ["s", "Opaque", 1, "5m3s"],
    ),
    (
        "a service account counts secrets",
        "ServiceAccount",
        {"metadata": meta("default")},
        ["default", 0, "5m3s"],
    ),
    (
        "a lease shows its holder",
        "Lease",
        {"metadata": meta("lock"), "spec": {"holderIdentity": "host/42"}},
        ["lock", "host/42", "5m3s"],
    ),
    (
        "a runtime class shows its handler",
        "RuntimeClass",
        {"metadata": meta("kata-qemu"), "handler": "kata-qemu"},
        ["kata-qemu", "kata-qemu", "5m3s"],
    ),
    (
        "the default storage class is marked",
        "StorageClass",
        {
            "metadata": meta("standard", annotations={"storageclass.kubernetes.io/is-default-class": "true"}),
            "provisioner": "planner.dev/local",
            "volumeBindingMode": "Immediate",
        },
        ["standard (default)", "planner.dev/local", "Delete", "Immediate", False, "5m3s"],
    ),
    (
        "a ready node with a role",
        "Node",
        {
            "metadata": meta("node-1", labels={"node-role.kubernetes.io/control-plane": ""}),
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v1.28.7"},
                "addresses": [{"type": "InternalIP", "address": "192.168.0.2"}],
            },
        },
        [
            "node-1",
            "Ready",
            "control-plane",
            "5m3s",
            "v1.28.7",
            "192.168.0.2",
            "<none>",
            "<unknown>",
            "<unknown>",
            "<unknown>",
        ],
    ),
    (
        "an event names its object and source",
        "Event",
        {
            "metadata": meta("web.1"),
            "type": "Normal",
            "reason": "Scheduled",
            "message": " Successfully assigned default/web to node-1 ",
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": ""},
            "source": {"component": "default-scheduler"},
            "firstTimestamp": ago(minutes=2),
            "lastTimestamp": ago(seconds=30),
            "count": 2,
        },
        [
            "30s",
            "Normal",
            "Scheduled",
            "pod/web",
            "",
            "default-scheduler",
            "Successfully assigned default/web to node-1",
            "2m",
            2,
            "web.1",
        ],
    ),
    (
        "endpoints list addresses with ports",
        "Endpoints",
        {
            "metadata": meta("web"),
            "subsets": [{"addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}], "ports": [{"port": 8080}]}],
        },
        ["web", "10.1.0.1:8080,10.1.0.2:8080", "5m3s"],
    ),
    (
        "a replica set shows desired, current and ready counts",
        "ReplicaSet",
        {
            "metadata": meta("web-1"),
            "spec": {
                "replicas": 3,
                "selector": {
                    "matchLabels": {"app": "web"},
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
                },
                "template": {
                    "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}
                },
            },
            "status": {"replicas": 3, "readyReplicas": 2},
        },
        ["web-1", 3, 3, 2, "5m3s", "a,b", "x,y", "app=web,tier in (a,b)"],
    ),
    (
        "a kind without a printer gets name and age",
        "ResourceGroup",
        {"metadata": meta("inventory")},
        ["inventory", "5m3s"],
    ),
]


@pytest.mark.parametrize(
    ("kind", "obj", "cells"), [c[1:] for c in SIMPLE_CASES], ids=[c[0] for c in SIMPLE_CASES]
)
def test_cells_per_kind(kind: str, obj: dict[str, Any], cells: list[Any]) -> None:
    assert to_table(kind, [obj], now=NOW, resource_version="1")["rows"][0]["cells"] == cells


def test_include_object_object_returns_the_whole_object() -> None:
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta("cfg"), "data": {"a": "1"}}
    assert (
        to_table("ConfigMap", [obj], now=NOW, resource_version="1", include_object="Object")["rows"][0][
            "object"
        ]
        == obj
    )


def test_table_metadata_carries_the_continue_token() -> None:
    table = to_table(
        "ConfigMap", [], now=NOW, resource_version="9", continue_token="abc", remaining_item_count=3
    )
    assert table["metadata"] == {"resourceVersion": "9", "continue": "abc", "remainingItemCount": 3}


# ------------------------------------------------------------------------------------------ ages

AGE_CASES = [
    ("just created", timedelta(0), "0s"),
    ("a clock a second behind is still now", timedelta(seconds=-1), "0s"),
    ("well in the future is invalid", timedelta(seconds=-5), "<invalid>"),
    ("seconds up to two minutes", timedelta(seconds=119), "119s"),
    ("exactly two minutes", timedelta(seconds=120), "2m"),
    ("minutes and seconds under ten minutes", timedelta(minutes=5, seconds=3), "5m3s"),
    ("whole minutes from ten minutes", timedelta(minutes=10, seconds=59), "10m"),
    ("minutes up to three hours", timedelta(minutes=179), "179m"),
    ("hours and minutes under eight hours", timedelta(hours=3, minutes=10), "3h10m"),
    ("whole hours under eight hours", timedelta(hours=5), "5h"),
    ("hours up to two days", timedelta(hours=47, minutes=59), "47h"),
    ("days and hours under eight days", timedelta(days=2, hours=5), "2d5h"),
    ("whole days up to two years", timedelta(days=400), "400d"),
    ("years and days under eight years", timedelta(days=365 * 2 + 70), "2y70d"),
    ("whole years from eight years", timedelta(days=365 * 9), "9y"),
]


@pytest.mark.parametrize(("delta", "text"), [c[1:] for c in AGE_CASES], ids=[c[0] for c in AGE_CASES])
def test_human_duration(delta: timedelta, text: str) -> None:
    assert human_duration(delta) == text


def test_a_missing_timestamp_is_unknown() -> None:
    assert since(None, NOW) == "<unknown>"
