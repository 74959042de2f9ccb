"""Seed 000, row by row: how a workload becomes a Deployment or Job, its pod and its Service."""

from __future__ import annotations

from typing import Any

import pytest

from planner.plan.model import Scheduling, Volume
from planner.render import render
from planner.workloads.deployment import DeploymentSpec, RolloutStrategy
from planner.workloads.job import JobSpec
from tests.unit.render_support import (
    IMAGE,
    SHOP_APPLYSET,
    main_container,
    plan,
    pod_spec,
    rendered,
    rendered_object,
    sha256_of_canonical,
    without_hash,
    workload,
)

SEED_LABELS = {"app": "web", "gobrave-workload": "web"}

CONTAINER_ROWS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "an image alone gives one container named after the workload with only that image",
        {},
        {"name": "web", "image": IMAGE},
    ),
    (
        "entrypoint becomes the container's command",
        {"entrypoint": ("/app/server", "--serve")},
        {"name": "web", "image": IMAGE, "command": ["/app/server", "--serve"]},
    ),
    (
        "command becomes the container's args",
        {"command": ("--port", "8080")},
        {"name": "web", "image": IMAGE, "args": ["--port", "8080"]},
    ),
    (
        "entrypoint and command together become command and args",
        {"entrypoint": ("/bin/sh",), "command": ("-c", "echo hi")},
        {"name": "web", "image": IMAGE, "command": ["/bin/sh"], "args": ["-c", "echo hi"]},
    ),
    (
        "workdir becomes workingDir",
        {"workdir": "/srv"},
        {"name": "web", "image": IMAGE, "workingDir": "/srv"},
    ),
    (
        "env is injected as name/value pairs sorted by key",
        {"env": {"ZONE": "eu", "APP_MODE": "prod", "LOG": ""}},
        {
            "name": "web",
            "image": IMAGE,
            "env": [
                {"name": "APP_MODE", "value": "prod"},
                {"name": "LOG", "value": ""},
                {"name": "ZONE", "value": "eu"},
            ],
        },
    ),
    (
        "cpu and memory become limits, written as strings as the plan wrote them",
        {"cpu": "0.5", "memory": "256Mi"},
        {"name": "web", "image": IMAGE, "resources": {"limits": {"cpu": "0.5", "memory": "256Mi"}}},
    ),
    (
        "memory alone is a memory limit only",
        {"memory": "1Gi"},
        {"name": "web", "image": IMAGE, "resources": {"limits": {"memory": "1Gi"}}},
    ),
    (
        "a numeric user becomes runAsUser",
        {"user": "1000"},
        {"name": "web", "image": IMAGE, "securityContext": {"runAsUser": 1000}},
    ),
    (
        "a uid:gid user becomes runAsUser and runAsGroup",
        {"user": "1000:2000"},
        {"name": "web", "image": IMAGE, "securityContext": {"runAsUser": 1000, "runAsGroup": 2000}},
    ),
    ("a user name is not parsable and is not mapped", {"user": "nobody"}, {"name": "web", "image": IMAGE}),
    ("a uid with a group name is not mapped", {"user": "1000:staff"}, {"name": "web", "image": IMAGE}),
    ("a uid with an empty group is not mapped", {"user": "1000:"}, {"name": "web", "image": IMAGE}),
    (
        "a port adds a containerPort",
        {"port": 8080},
        {"name": "web", "image": IMAGE, "ports": [{"containerPort": 8080}]},
    ),
    (
        "pullPolicy becomes imagePullPolicy",
        {"pull_policy": "Always"},
        {"name": "web", "image": IMAGE, "imagePullPolicy": "Always"},
    ),
    (
        "a hostPath volume is mounted at its mountPath",
        {"volumes": (Volume(name="logs", source="hostPath", ref="/var/log", mount_path="/logs"),)},
        {"name": "web", "image": IMAGE, "volumeMounts": [{"name": "logs", "mountPath": "/logs"}]},
    ),
    (
        "a mount's subPath and readOnly are carried over",
        {
            "volumes": (
                Volume(
                    name="cfg",
                    source="configMap",
                    ref="web-config",
                    mount_path="/etc/web/app.yaml",
                    sub_path="app.yaml",
                    read_only=True,
                ),
            )
        },
        {
            "name": "web",
            "image": IMAGE,
            "volumeMounts": [
                {"name": "cfg", "mountPath": "/etc/web/app.yaml", "subPath": "app.yaml", "readOnly": True}
            ],
        },
    ),
]


@pytest.mark.parametrize(
    ("fields", "expected"), [r[1:] for r in CONTAINER_ROWS], ids=[r[0] for r in CONTAINER_ROWS]
)
def test_main_container(fields: dict[str, Any], expected: dict[str, Any]) -> None:
    deployment = rendered_object(plan(workloads=(workload(**fields),)), "Deployment", "web")
    assert main_container(deployment) == expected


VOLUME_ROWS = [
    (
        "a hostPath volume names its path",
        Volume(name="logs", source="hostPath", ref="/var/log", mount_path="/logs"),
        {"name": "logs", "hostPath": {"path": "/var/log"}},
    ),
    (
        "an emptyDir volume is an empty map",
        Volume(name="scratch", source="emptyDir", ref="", mount_path="/tmp/scratch"),
        {"name": "scratch", "emptyDir": {}},
    ),
    (
        "a configMap volume names its ConfigMap",
        Volume(name="cfg", source="configMap", ref="web-config", mount_path="/etc/web"),
        {"name": "cfg", "configMap": {"name": "web-config"}},
    ),
    (
        "a secret volume names its Secret as secretName",
        Volume(name="creds", source="secret", ref="db-credentials", mount_path="/etc/db", read_only=True),
        {"name": "creds", "secret": {"secretName": "db-credentials"}},
    ),
]


@pytest.mark.parametrize(
    ("volume", "expected"), [r[1:] for r in VOLUME_ROWS], ids=[r[0] for r in VOLUME_ROWS]
)
def test_pod_volume(volume: Volume, expected: dict[str, Any]) -> None:
    deployment = rendered_object(plan(workloads=(workload(volumes=(volume,)),)), "Deployment", "web")
    assert pod_spec(deployment)["volumes"] == [expected]


def _required_terms(expressions: list[dict[str, Any]]) -> dict[str, Any]:
    term = {"matchExpressions": expressions}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


SCHEDULING_ROWS = [
    (
        "In keeps its values",
        (Scheduling(type="node", key="disktype", operator="In", values=("ssd", "nvme")),),
        [{"key": "disktype", "operator": "In", "values": ["ssd", "nvme"]}],
    ),
    (
        "NotIn keeps its values",
        (Scheduling(type="node", key="zone", operator="NotIn", values=("eu-1",)),),
        [{"key": "zone", "operator": "NotIn", "values": ["eu-1"]}],
    ),
    (
        "Exists has no values",
        (Scheduling(type="node", key="gpu", operator="Exists"),),
        [{"key": "gpu", "operator": "Exists"}],
    ),
    (
        "DoesNotExist has no values",
        (Scheduling(type="node", key="spot", operator="DoesNotExist"),),
        [{"key": "spot", "operator": "DoesNotExist"}],
    ),
    (
        "several constraints are ANDed in one term, in plan order",
        (
            Scheduling(type="node", key="kubernetes.io/os", operator="In", values=("linux",)),
            Scheduling(type="node", key="spot", operator="DoesNotExist"),
        ),
        [
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            {"key": "spot", "operator": "DoesNotExist"},
        ],
    ),
]


@pytest.mark.parametrize(
    ("scheduling", "expressions"), [r[1:] for r in SCHEDULING_ROWS], ids=[r[0] for r in SCHEDULING_ROWS]
)
def test_scheduling_becomes_required_node_affinity(
    scheduling: tuple[Scheduling, ...], expressions: list[dict[str, Any]]
) -> None:
    deployment = rendered_object(plan(workloads=(workload(scheduling=scheduling),)), "Deployment", "web")
    assert pod_spec(deployment)["affinity"] == _required_terms(expressions)


def test_no_scheduling_renders_no_affinity() -> None:
    deployment = rendered_object(plan(workloads=(workload(),)), "Deployment", "web")
    assert "affinity" not in pod_spec(deployment)


@pytest.mark.parametrize(
    ("kind", "object_kind", "restart_policy"),
    [("deployment", "Deployment", "Always"), ("job", "Job", "Never")],
    ids=["a deployment's pods restart Always", "a job's pods restart Never"],
)
def test_restart_policy(kind: str, object_kind: str, restart_policy: str) -> None:
    manifest = rendered_object(plan(workloads=(workload(kind=kind),)), object_kind, "web")
    assert pod_spec(manifest)["restartPolicy"] == restart_policy


@pytest.mark.parametrize(
    ("runtime_namespace", "plan_namespace", "expected"),
    [("batch", "shop", "batch"), (None, "shop", "shop"), (None, None, "team-a")],
    ids=[
        "runtimeNamespace wins over the plan's namespace",
        "the plan's namespace is used when the workload names none",
        "the default namespace is used when neither names one",
    ],
)
def test_namespace_priority(runtime_namespace: str | None, plan_namespace: str | None, expected: str) -> None:
    the_plan = plan(
        namespace=plan_namespace,
        workloads=(workload(runtime_namespace=runtime_namespace, port=80, expose=True),),
    )
    manifests = rendered(the_plan, default_namespace="team-a")
    assert {m["metadata"]["namespace"] for m in manifests} == {expected}
    assert (
        manifests[0]["metadata"]["annotations"]["planner.dev/runtime-id"] == f"k8s-{expected}|deployment|web"
    )


def test_minimal_deployment_whole_manifest() -> None:
    deployment = rendered_object(plan(workloads=(workload(),)), "Deployment", "web")
    assert without_hash(deployment) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": {**SEED_LABELS, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {"planner.dev/plan": "shop", "planner.dev/runtime-id": "k8s-shop|deployment|web"},
        },
        "spec": {
            "selector": {"matchLabels": SEED_LABELS},
            "template": {
                "metadata": {"labels": SEED_LABELS},
                "spec": {"containers": [{"name": "web", "image": IMAGE}], "restartPolicy": "Always"},
            },
        },
    }


def test_deployment_with_declared_fields_whole_manifest() -> None:
    the_workload = workload(
        replicas=3,
        spec=DeploymentSpec(progress_deadline_seconds=120),
        labels={"team": "storefront", "app": "not-the-seed-label"},
        annotations={"owner": "alice"},
        pod_annotations={"prometheus.io/scrape": "true"},
    )
    deployment = rendered_object(plan(runtime="k3s", workloads=(the_workload,)), "Deployment", "web")
    assert without_hash(deployment) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": {"team": "storefront", **SEED_LABELS, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {
                "owner": "alice",
                "planner.dev/plan": "shop",
                "planner.dev/runtime-id": "k3s-shop|deployment|web",
            },
        },
        "spec": {
            "replicas": 3,
            "progressDeadlineSeconds": 120,
            "selector": {"matchLabels": SEED_LABELS},
            "template": {
                "metadata": {"labels": SEED_LABELS, "annotations": {"prometheus.io/scrape": "true"}},
                "spec": {"containers": [{"name": "web", "image": IMAGE}], "restartPolicy": "Always"},
            },
        },
    }


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (RolloutStrategy(type="Recreate"), {"type": "Recreate"}),
        (RolloutStrategy(), {"type": "RollingUpdate"}),
        (
            RolloutStrategy(max_surge=0, max_unavailable="50%"),
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "50%"}},
        ),
    ],
)
def test_rollout_strategy(strategy: RolloutStrategy, expected: dict[str, Any]) -> None:
    deployment = rendered_object(
        plan(workloads=(workload(spec=DeploymentSpec(strategy=strategy)),)), "Deployment", "web"
    )
    assert deployment["spec"]["strategy"] == expected


def test_replicas_zero_is_declared_and_kept() -> None:
    deployment = rendered_object(plan(workloads=(workload(replicas=0),)), "Deployment", "web")
    assert deployment["spec"]["replicas"] == 0


def test_job_whole_manifest() -> None:
    migrate = workload(
        "migrate",
        kind="job",
        entrypoint=("/app/migrate",),
        spec=JobSpec(backoff_limit=2, active_deadline_seconds=600, ttl_seconds_after_finished=3600),
        labels={"team": "storefront"},
    )
    job = rendered_object(plan(workloads=(migrate,)), "Job", "migrate")
    labels = {"app": "migrate", "gobrave-workload": "migrate"}
    template = {
        "metadata": {"labels": labels},
        "spec": {
            "containers": [{"name": "migrate", "image": IMAGE, "command": ["/app/migrate"]}],
            "restartPolicy": "Never",
        },
    }
    run_key = sha256_of_canonical({"template": template, "completions": None, "parallelism": None})
    assert without_hash(job) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "migrate",
            "namespace": "shop",
            "labels": {"team": "storefront", **labels, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {
                "planner.dev/plan": "shop",
                "planner.dev/runtime-id": "k8s-shop|job|migrate",
                "planner.dev/run-key": run_key,
            },
        },
        "spec": {
            "template": template,
            "backoffLimit": 2,
            "activeDeadlineSeconds": 600,
            "ttlSecondsAfterFinished": 3600,
        },
    }


def test_exposed_deployment_gets_a_cluster_ip_service() -> None:
    manifests = rendered(plan(workloads=(workload(port=8080, expose=True),)))
    assert [m["kind"] for m in manifests] == ["Deployment", "Service"]
    assert without_hash(manifests[1]) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "web-svc",
            "namespace": "shop",
            "labels": {**SEED_LABELS, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {"planner.dev/plan": "shop", "planner.dev/runtime-id": "k8s-shop|deployment|web"},
        },
        "spec": {"type": "ClusterIP", "selector": SEED_LABELS, "ports": [{"port": 8080, "targetPort": 8080}]},
    }


@pytest.mark.parametrize(
    "fields",
    [{"port": 8080}, {"expose": True}, {"kind": "job", "port": 8080, "expose": True}],
    ids=[
        "a port without expose renders no Service",
        "expose without a port renders no Service",
        "a job renders no Service even when exposed",
    ],
)
def test_no_service(fields: dict[str, Any]) -> None:
    manifests = render(plan(workloads=(workload(**fields),)), "default")
    assert [m["kind"] for m in manifests] == ["Job" if fields.get("kind") == "job" else "Deployment"]


def test_job_has_no_selector_and_no_deployment_fields() -> None:
    job = rendered_object(plan(workloads=(workload(kind="job", replicas=2),)), "Job", "web")
    assert set(job["spec"]) == {"template"}
