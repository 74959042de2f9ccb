"""Persistent volumes, StatefulSets and autoscalers: plan claims become PVCs, claim templates become a
StatefulSet's volumeClaimTemplates, `autoscale` an autoscaling/v2 HPA. Expected manifests are written
out by hand; `rendered` also checks each against the Kubernetes 1.28 schema, strictly."""

from __future__ import annotations

from typing import Any

from planner.output.comment import key_fields
from planner.plan.model import (
    Autoscale,
    DataSource,
    PersistentClaim,
    Volume,
    VolumeClaim,
)
from planner.workloads.statefulset import StatefulSetSpec, StatefulUpdate
from tests.unit.render_support import (
    IMAGE,
    SHOP_APPLYSET,
    kinds_and_names,
    plan,
    rendered,
    rendered_object,
    without_hash,
    workload,
)

LABELS = {"app": "db", "gobrave-workload": "db"}
DB_ID = "k8s-shop|statefulset|db"


def identity(name: str, annotations: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "shop",
        "labels": {**(labels or {}), "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
        "annotations": {**annotations, "planner.dev/plan": "shop"},
    }


def data_volume() -> Volume:
    claim = PersistentClaim(size="1Gi", storage_class="standard")
    return Volume(name="data", source="claim", ref="", mount_path="/var/lib/db", claim=claim)


def database(**fields: Any) -> Any:
    return workload(
        "db",
        kind="statefulset",
        port=5432,
        replicas=2,
        volumes=(data_volume(),),
        **fields,
    )


def test_a_plan_claim_is_a_pvc_with_the_plans_identity() -> None:
    claim = VolumeClaim(
        name="uploads",
        size="5Gi",
        storage_class="fast",
        access_modes=("ReadWriteMany",),
        volume_mode="Filesystem",
        data_source=DataSource(kind="VolumeSnapshot", name="uploads-nightly"),
    )
    pvc = rendered_object(plan(volume_claims=(claim,)), "PersistentVolumeClaim", "uploads")
    assert without_hash(pvc) == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": identity("uploads", {}),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "5Gi"}},
            "storageClassName": "fast",
            "volumeMode": "Filesystem",
            "dataSource": {
                "apiGroup": "snapshot.storage.k8s.io",
                "kind": "VolumeSnapshot",
                "name": "uploads-nightly",
            },
        },
    }


def test_a_claim_volume_mounts_the_plan_claim_by_name() -> None:
    claim = VolumeClaim(name="uploads", size="1Gi")
    volume = Volume(
        name="files", source="persistentVolumeClaim", ref="uploads", mount_path="/srv", read_only=True
    )
    web = workload(volumes=(volume,))
    deployment = rendered_object(plan(volume_claims=(claim,), workloads=(web,)), "Deployment", "web")
    spec = deployment["spec"]["template"]["spec"]
    assert spec["volumes"] == [{"name": "files", "persistentVolumeClaim": {"claimName": "uploads"}}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "files", "mountPath": "/srv", "readOnly": True}]


def test_a_statefulset_renders_its_set_then_its_headless_service() -> None:
    db = database(
        spec=StatefulSetSpec(
            pod_management_policy="Parallel",
            update_strategy=StatefulUpdate(type="RollingUpdate", partition=1),
        )
    )
    manifests = rendered(plan(workloads=(db,)))
    assert kinds_and_names(manifests) == ["StatefulSet/db", "Service/db"]
    stateful_set, service = (without_hash(m) for m in manifests)
    assert stateful_set == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": identity("db", {"planner.dev/runtime-id": DB_ID}, LABELS),
        "spec": {
            "selector": {"matchLabels": LABELS},
            "serviceName": "db",
            "replicas": 2,
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {
                    "containers": [
                        {
                            "name": "db",
                            "image": IMAGE,
                            "ports": [{"containerPort": 5432}],
                            "volumeMounts": [{"name": "data", "mountPath": "/var/lib/db"}],
                        }
                    ],
                    "restartPolicy": "Always",
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                        "storageClassName": "standard",
                    },
                }
            ],
        },
    }
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": identity("db", {"planner.dev/runtime-id": DB_ID}, LABELS),
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "None",
            "selector": LABELS,
            "ports": [{"port": 5432, "targetPort": 5432}],
        },
    }


def test_on_delete_has_no_rolling_parameters_and_no_port_means_no_service() -> None:
    db = workload(
        "db", kind="statefulset", spec=StatefulSetSpec(update_strategy=StatefulUpdate(type="OnDelete"))
    )
    manifests = rendered(plan(workloads=(db,)))
    assert kinds_and_names(manifests) == ["StatefulSet/db"]
    assert manifests[0]["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert "volumeClaimTemplates" not in manifests[0]["spec"]


def test_autoscale_renders_an_hpa_and_makes_replicas_create_only() -> None:
    scale = Autoscale(min=2, max=6, cpu_utilization=70, memory_utilization=80)
    manifests = rendered(plan(workloads=(database(autoscale=scale),)))
    assert kinds_and_names(manifests) == ["StatefulSet/db", "Service/db", "HorizontalPodAutoscaler/db"]
    annotations = manifests[0]["metadata"]["annotations"]
    assert annotations["planner.dev/create-only"] == "spec.replicas"
    assert manifests[0]["spec"]["replicas"] == 2
    assert without_hash(manifests[2]) == {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": identity("db", {"planner.dev/runtime-id": DB_ID}, LABELS),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
            "minReplicas": 2,
            "maxReplicas": 6,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
                },
                {
                    "type": "Resource",
                    "resource": {
                        "name": "memory",
                        "target": {"type": "Utilization", "averageUtilization": 80},
                    },
                },
            ],
        },
    }


def test_an_autoscaled_workload_without_replicas_leaves_them_to_the_hpa() -> None:
    web = workload(autoscale=Autoscale(min=1, max=3))
    manifests = rendered(plan(workloads=(web,)))
    assert "replicas" not in manifests[0]["spec"]
    assert manifests[0]["metadata"]["annotations"]["planner.dev/create-only"] == "spec.replicas"
    assert "metrics" not in manifests[1]["spec"]  # Kubernetes' default: 80% CPU


def test_a_review_comment_names_what_a_statefulset_and_its_autoscaler_declare() -> None:
    manifests = rendered(plan(workloads=(database(autoscale=Autoscale(min=2, max=6)),)))
    assert [key_fields(m) for m in manifests] == [
        [
            "replicas 2",
            f"db: image `{IMAGE}`, ports 5432",
            "claim template data: size 1Gi, storageClass standard",
        ],
        ["ports 5432"],
        ["minReplicas 2", "maxReplicas 6"],
    ]
