"""The kinds table: API coordinates, ApplySet spelling, and the immutable and create-only fields of
DESIGN §4 that decide update versus replace."""

from __future__ import annotations

import pytest

from planner import kinds
from planner.kinds import MutableField, by_group_kind, by_kind

COORDINATES = [
    ("Namespace", "v1", "Namespace", "namespaces", False),
    ("ConfigMap", "v1", "ConfigMap", "configmaps", True),
    ("Secret", "v1", "Secret", "secrets", True),
    ("Service", "v1", "Service", "services", True),
    ("PersistentVolumeClaim", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    ("Pod", "v1", "Pod", "pods", True),
    ("Deployment", "apps/v1", "Deployment.apps", "deployments", True),
    ("Job", "batch/v1", "Job.batch", "jobs", True),
]


@pytest.mark.parametrize(
    ("kind", "api_version", "group_kind", "plural", "namespaced"),
    COORDINATES,
    ids=[f"{row[0]} is {row[1]}, {row[2]} in an ApplySet" for row in COORDINATES],
)
def test_coordinates(kind: str, api_version: str, group_kind: str, plural: str, namespaced: bool) -> None:
    info = by_kind(kind)
    assert (info.api_version, info.group_kind, info.plural, info.namespaced) == (
        api_version,
        group_kind,
        plural,
        namespaced,
    )
    assert by_group_kind(group_kind) is info


IMMUTABILITY = [
    ("Job", ("spec.template", "spec.selector", "spec.completions", "spec.completionMode"), ()),
    ("Deployment", ("spec.selector",), ()),
    ("Service", ("spec.clusterIP", "spec.clusterIPs"), ()),
    (
        "PersistentVolumeClaim",
        ("spec",),
        (MutableField(path="spec.resources.requests.storage", change="increase"),),
    ),
    (
        "Pod",
        ("spec",),
        (
            MutableField(path="spec.containers[*].image"),
            MutableField(path="spec.initContainers[*].image"),
            MutableField(path="spec.activeDeadlineSeconds"),
            MutableField(path="spec.tolerations", change="additions"),
        ),
    ),
    ("ConfigMap", (), ()),
    ("Secret", (), ()),
    ("Namespace", (), ()),
]


@pytest.mark.parametrize(
    ("kind", "immutable", "mutable"),
    IMMUTABILITY,
    ids=[
        "a Job's template, selector, completions and completion mode force a replace",
        "a Deployment's selector forces a replace",
        "a Service's cluster IP forces a replace",
        "a PVC's spec forces a replace, except a larger storage request",
        "a Pod's spec forces a replace, except images, the deadline and added tolerations",
        "a ConfigMap is updated in place",
        "a Secret is updated in place",
        "a Namespace is updated in place",
    ],
)
def test_immutable_fields(kind: str, immutable: tuple[str, ...], mutable: tuple[MutableField, ...]) -> None:
    info = by_kind(kind)
    assert info.immutable_fields == immutable
    assert info.mutable_fields == mutable


def test_only_a_pvc_data_source_is_create_only() -> None:
    create_only = {info.kind: info.create_only_fields for info in kinds.KINDS if info.create_only_fields}
    assert create_only == {"PersistentVolumeClaim": ("spec.dataSource", "spec.dataSourceRef")}


def test_only_secrets_are_sensitive() -> None:
    assert [info.kind for info in kinds.KINDS if info.sensitive] == ["Secret"]


def test_a_manifest_finds_its_row_by_kind() -> None:
    assert kinds.for_manifest({"apiVersion": "batch/v1", "kind": "Job"}) is kinds.JOB


@pytest.mark.parametrize(
    ("lookup", "key", "message"),
    [
        (
            by_kind,
            "ReplicaSet",
            "unknown kind 'ReplicaSet'; planner writes ConfigMap, CronJob, DaemonSet, Deployment, Horizontal",
        ),
        (
            by_group_kind,
            "Deployment",
            "unknown group-kind 'Deployment'; planner writes ConfigMap, CronJob.batch, DaemonSet.apps, Deployment.apps",
        ),
    ],
    ids=["an unknown kind names the known ones", "a group-kind without its group is unknown"],
)
def test_unknown_lookups_raise_key_error(lookup: object, key: str, message: str) -> None:
    with pytest.raises(KeyError) as caught:
        lookup(key)  # type: ignore[operator]
    assert message in str(caught.value)


def test_kinds_and_group_kinds_are_unique() -> None:
    assert len({info.kind for info in kinds.KINDS}) == len({info.group_kind for info in kinds.KINDS}) == 13
