"""Loading claims, StatefulSets and autoscalers: the model they become, and every rule beyond the
schema reported at its file:line:column (the body starts at line 5, after the header)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from planner.errors import PlanError
from planner.plan import load_plans
from planner.plan.model import Autoscale, DataSource, PersistentClaim, Volume, VolumeClaim
from planner.render import limit_diagnostics, render
from planner.workloads.statefulset import StatefulSetSpec, StatefulUpdate

CLAIMS = "volumeClaims:\n  - name: uploads\n    size: 1Gi\n"
DB = "workloads:\n  - name: db\n    kind: statefulset\n    image: postgres:16\n"


def test_claims_statefulsets_and_autoscale_load_into_the_model(write_plan: Callable[..., Path]) -> None:
    path = write_plan(
        "volumeClaims:\n"
        "  - {name: uploads, size: 5Gi, storageClass: fast, accessModes: [ReadWriteMany],\n"
        "     volumeMode: Filesystem, dataSource: {kind: VolumeSnapshot, name: nightly}}\n"
        + DB
        + "    replicas: 3\n"
        "    podManagementPolicy: Parallel\n"
        "    updateStrategy: {type: RollingUpdate, partition: 1}\n"
        "    autoscale: {min: 2, max: 4, memoryUtilization: 75}\n"
        "    volumes:\n"
        "      - {name: data, claim: {size: 2Gi}, mountPath: /data}\n"
        "      - {name: files, persistentVolumeClaim: uploads, mountPath: /files, readOnly: true}\n"
    )
    (plan,) = load_plans([path], environ={}).plans
    assert plan.volume_claims == (
        VolumeClaim(
            name="uploads",
            size="5Gi",
            storage_class="fast",
            access_modes=("ReadWriteMany",),
            volume_mode="Filesystem",
            data_source=DataSource(kind="VolumeSnapshot", name="nightly"),
        ),
    )
    (db,) = plan.workloads
    assert (db.kind, db.replicas) == ("statefulset", 3)
    assert db.spec == StatefulSetSpec(
        pod_management_policy="Parallel", update_strategy=StatefulUpdate(type="RollingUpdate", partition=1)
    )
    assert db.autoscale == Autoscale(min=2, max=4, memory_utilization=75)
    assert db.volumes == (
        Volume(name="data", source="claim", ref="", mount_path="/data", claim=PersistentClaim(size="2Gi")),
        Volume(
            name="files", source="persistentVolumeClaim", ref="uploads", mount_path="/files", read_only=True
        ),
    )


CASES: list[tuple[str, str, list[str]]] = [
    (
        "a claim volume naming an undeclared claim",
        CLAIMS + "workloads:\n  - name: web\n    image: nginx\n"
        "    volumes:\n      - {name: f, persistentVolumeClaim: upload, mountPath: /f}\n",
        [
            '{f}:12:42: workloads[0].volumes[0].persistentVolumeClaim: unknown claim "upload": no entry of '
            'volumeClaims has that name (did you mean "uploads"? declared: uploads)'
        ],
    ),
    (
        "a claim template outside a statefulset",
        "workloads:\n  - name: web\n    image: nginx\n"
        "    volumes:\n      - name: data\n        claim: {size: 1Gi}\n        mountPath: /d\n",
        [
            "{f}:10:9: workloads[0].volumes[0].claim: a claim template is for statefulsets only; this "
            "workload is a deployment: declare the claim in volumeClaims and mount it with persistentVolumeClaim"
        ],
    ),
    (
        "a claim template without a name",
        DB + "    volumes:\n      - claim: {size: 1Gi}\n        mountPath: /d\n",
        [
            "{f}:10:9: workloads[0].volumes[0].claim: a claim template needs a name: each pod's PVC is named "
            "<name>-<statefulset>-<ordinal>"
        ],
    ),
    (
        "replicas outside the autoscaler's bounds",
        "workloads:\n  - name: web\n    image: nginx\n    replicas: 9\n    autoscale: {min: 2, max: 5}\n",
        [
            "{f}:8:15: workloads[0].replicas: replicas 9 is outside autoscale's [2, 5]: the autoscaler owns "
            "replicas, which only say how many the workload starts with"
        ],
    ),
    (
        "an autoscaler whose max is below its min",
        "workloads:\n  - name: web\n    image: nginx\n    autoscale: {min: 4, max: 2}\n",
        ["{f}:8:30: workloads[0].autoscale.max: max (2) is below min (4)"],
    ),
    (
        "autoscale on a job",
        "workloads:\n  - name: m\n    kind: job\n    image: x\n    autoscale: {min: 1, max: 2}\n",
        [
            "{f}:9:5: workloads[0].autoscale: autoscale is for deployments and statefulsets only; this workload is a job"
        ],
    ),
    (
        "a statefulset field on a deployment",
        "workloads:\n  - name: web\n    image: nginx\n    podManagementPolicy: Parallel\n",
        [
            "{f}:8:5: workloads[0].podManagementPolicy: podManagementPolicy is for statefulsets only; this "
            "workload is a deployment"
        ],
    ),
    (
        "a partition under OnDelete",
        DB + "    updateStrategy: {type: OnDelete, partition: 1}\n",
        [
            "{f}:9:38: workloads[0].updateStrategy.partition: partition is for type RollingUpdate only: "
            "OnDelete replaces a pod only when it is deleted"
        ],
    ),
    (
        "two claims of one name",
        CLAIMS + "  - name: uploads\n    size: 2Gi\n",
        [
            '{f}:8:11: volumeClaims[1].name: claim name "uploads" is already used by volumeClaims[0] (line 6): claim names are unique'
        ],
    ),
    (
        "a claim that collides with a sandbox PVC",
        "volumeClaims:\n  - name: dev-workspace\n    size: 1Gi\n"
        "sandboxes:\n  - name: dev\n    image: x\n    rootfs: {size: 1Gi}\n    workspace: {size: 1Gi}\n",
        [
            '{f}:9:11: sandboxes[0].name: its workspace PVC "dev-workspace" collides with PersistentVolumeClaim '
            '"dev-workspace" (volumeClaims[0].name, line 6): rename one of them'
        ],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_a_rule_beyond_the_schema_is_reported_at_its_position(
    write_plan: Callable[..., Path], body: str, expected: list[str]
) -> None:
    path = write_plan(body)
    with pytest.raises(PlanError) as raised:
        load_plans([path], environ={})
    assert [str(d) for d in raised.value.diagnostics] == [line.format(f=path) for line in expected]


def test_a_statefulset_too_big_for_the_api_is_reported_at_its_entry(write_plan: Callable[..., Path]) -> None:
    path = write_plan(DB + f"    podAnnotations: {{big: {'x' * 262_142}}}\n")
    (plan,) = load_plans([path], environ={}).plans
    assert [str(d) for d in limit_diagnostics(plan, render(plan, "default"))] == [
        f'{path}:6:5: workloads[0]: the rendered StatefulSet "db" carries 262,145 bytes of annotations: the API '
        "allows at most 262,144 (256 KiB) on one object"
    ]
