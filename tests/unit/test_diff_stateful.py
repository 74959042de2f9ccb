"""Diff of claims, StatefulSets and autoscaled workloads: an HPA's scale is never drift, a claim's
destructive changes need `--allow-data-loss`, a removed StatefulSet's PVCs stay unless it is given, and
then go after it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from planner.dataloss import losses, refuse_data_loss
from planner.diff import ChangeSet, diff
from planner.errors import DataLossError
from planner.graph import solve
from planner.objects import ref_of, stateful_claims, with_create_only_of
from planner.output.comment import to_markdown
from planner.output.plan import planned_records, to_text
from planner.plan.model import Autoscale, PersistentClaim, Volume, VolumeClaim
from tests.unit.diff_support import (
    NAMESPACE,
    PLAN,
    Manifest,
    entry,
    find,
    live_state,
    only,
    outline,
    planner_apply,
    rendered,
    served,
    workload,
)

CLAIM = "persistentvolumeclaim/shop/uploads"


def run(desired: list[Manifest], *live: Manifest, **options: Any) -> ChangeSet:
    return diff(desired, live_state(*live), plan=PLAN, namespace=NAMESPACE, **options)


def autoscaled(replicas: int | None = 2) -> Manifest:
    web = workload(replicas=replicas, autoscale=Autoscale(min=2, max=8, cpu_utilization=60))
    return find(rendered(workloads=(web,)), "Deployment", "web")


def hpa_scaled(desired: Manifest, replicas: int) -> Manifest:
    """The live Deployment after its HPA scaled it: the autoscaler's write owns replicas now."""
    planner = planner_apply({"f:spec": {"f:template": {}}})
    hpa = entry("kube-controller-manager", {"f:spec": {"f:replicas": {}}}, subresource="scale")
    live = served(desired, managed=[planner, hpa])
    live["spec"]["replicas"] = replicas
    return live


def test_an_hpa_scale_of_an_autoscaled_workload_is_not_drift() -> None:
    desired = autoscaled()
    assert outline(run([desired], hpa_scaled(desired, 7))) == [("noop", "deployment/shop/web", None, "")]


def test_a_plan_change_of_an_autoscaled_workload_writes_the_live_replicas() -> None:
    before = hpa_scaled(autoscaled(), 7)
    after = find(
        rendered(
            workloads=(workload(replicas=2, image="ghcr.io/acme/web:2", autoscale=Autoscale(min=2, max=8)),)
        ),
        "Deployment",
        "web",
    )
    change = only(run([after], before), "deployment/shop/web")
    assert change.action == "update"
    assert [f.path for f in change.fields] == [".spec.template.spec.containers[name=web].image"]
    assert with_create_only_of(after, before)["spec"]["replicas"] == 7  # never reset to the plan's 2


def test_autoscaling_a_workload_planner_scaled_never_drops_its_replicas() -> None:
    before = find(rendered(workloads=(workload(replicas=4),)), "Deployment", "web")
    live = served(before, managed=[planner_apply({"f:spec": {"f:replicas": {}}})])
    after = autoscaled(replicas=None)
    change = only(run([after], live), "deployment/shop/web")
    assert [f.path for f in change.fields if "replicas" in f.path] == []
    assert with_create_only_of(after, live)["spec"]["replicas"] == 4  # kept, not removed to a default


def claim(**fields: Any) -> Manifest:
    fields.setdefault("size", "5Gi")
    return find(
        rendered(volume_claims=(VolumeClaim(name="uploads", **fields),)), "PersistentVolumeClaim", "uploads"
    )


@pytest.mark.parametrize(
    ("after", "why"),
    [
        (claim(size="1Gi"), "would be replaced (forced by spec.resources.requests.storage)"),
        (claim(storage_class="fast"), "would be replaced (forced by spec.storageClassName)"),
        (None, "would be deleted (no longer in the plan)"),
    ],
    ids=["shrunk", "another storage class", "removed from the plan"],
)
def test_a_claims_destructive_change_is_refused_without_allow_data_loss(
    after: Manifest | None, why: str
) -> None:
    live = served(claim())
    with pytest.raises(DataLossError) as raised:
        refuse_data_loss([run([after] if after else [], live)])
    assert raised.value.objects == [(CLAIM, why)]
    refuse_data_loss([run([after] if after else [], live, allow_data_loss=True)])


def test_a_growing_claim_is_an_update() -> None:
    change = only(run([claim(size="8Gi")], served(claim())), CLAIM)
    assert (change.action, [(f.before, f.after) for f in change.fields]) == ("update", [("5Gi", "8Gi")])


def stateful_set() -> list[Manifest]:
    template = PersistentClaim(size="1Gi")
    data = Volume(name="data", source="claim", ref="", mount_path="/data", claim=template)
    return rendered(workloads=(workload("db", kind="statefulset", port=5432, replicas=2, volumes=(data,)),))


def template_claim(name: str, namespace: str = NAMESPACE) -> Manifest:
    """A PVC as the StatefulSet controller makes it from the template `data` of set `db`."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {"app": "db", "gobrave-workload": "db"},
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound"},
    }


def removed_stateful_set(**options: Any) -> ChangeSet:
    """Plan `shop` emptied of its StatefulSet `db`, whose templates made data-db-0 and data-db-1."""
    live = [served(m) for m in stateful_set()]
    claims = (template_claim("data-db-0"), template_claim("data-db-1"))
    state = dataclasses.replace(live_state(*live), claims={ref_of(live[0]): claims})
    return diff([], state, plan=PLAN, namespace=NAMESPACE, **options)


def test_a_removed_statefulset_keeps_its_pvcs_without_allow_data_loss_and_says_so() -> None:
    changeset = removed_stateful_set()
    assert outline(changeset) == [
        ("delete", "service/shop/db", None, "no longer in the plan"),
        (
            "delete",
            "statefulset/shop/db",
            None,
            "no longer in the plan; its PVCs data-db-0, data-db-1 are kept (Kubernetes keeps a "
            "StatefulSet's claims; --allow-data-loss deletes them)",
        ),
    ]
    refuse_data_loss([changeset])  # nothing planner deletes holds data


def test_with_allow_data_loss_a_removed_statefulsets_pvcs_are_deleted_after_it_as_data_loss() -> None:
    changeset = removed_stateful_set(allow_data_loss=True)
    made = "claim of statefulset shop/db, deleted after it"
    assert outline(changeset) == [
        ("delete", "persistentvolumeclaim/shop/data-db-0", None, made),
        ("delete", "persistentvolumeclaim/shop/data-db-1", None, made),
        ("delete", "service/shop/db", None, "no longer in the plan"),
        (
            "delete",
            "statefulset/shop/db",
            None,
            "no longer in the plan; its PVCs data-db-0, data-db-1 are deleted after it (--allow-data-loss)",
        ),
    ]
    assert [str(c.ref) for c in losses(changeset)] == [
        "persistentvolumeclaim/shop/data-db-0",
        "persistentvolumeclaim/shop/data-db-1",
    ]
    assert solve(changeset).as_text() == (
        "parent secret/shop/shop\n"
        "delete service/shop/db <- parent secret/shop/shop\n"
        "wait-gone service/shop/db <- delete service/shop/db\n"
        "delete statefulset/shop/db <- parent secret/shop/shop\n"
        "wait-gone statefulset/shop/db <- delete statefulset/shop/db\n"
        "delete persistentvolumeclaim/shop/data-db-0 <- wait-gone statefulset/shop/db\n"
        "wait-gone persistentvolumeclaim/shop/data-db-0 <- delete persistentvolumeclaim/shop/data-db-0\n"
        "delete persistentvolumeclaim/shop/data-db-1 <- wait-gone statefulset/shop/db\n"
        "wait-gone persistentvolumeclaim/shop/data-db-1 <- delete persistentvolumeclaim/shop/data-db-1\n"
    )


def test_every_plan_format_shows_a_pruned_statefulsets_pvcs_first_as_data_loss() -> None:
    changeset = removed_stateful_set(allow_data_loss=True)
    text = to_text(changeset).splitlines()
    assert text[1:4] == [
        "  ! this plan destroys data (2 objects marked destroys data below); --allow-data-loss was given: "
        "apply deletes it for good",
        "  - delete persistentvolumeclaim/shop/data-db-0 (claim of statefulset shop/db, deleted after it; "
        "destroys data)",
        "  - delete persistentvolumeclaim/shop/data-db-1 (claim of statefulset shop/db, deleted after it; "
        "destroys data)",
    ]
    records = planned_records(changeset)
    assert [
        (r["object"], r["destroys_data"]) for r in records if r["type"] == "Planned" and r["destroys_data"]
    ] == [
        ("persistentvolumeclaim/shop/data-db-0", True),
        ("persistentvolumeclaim/shop/data-db-1", True),
    ]
    caution = to_markdown([changeset]).split("\n\n")[0]
    assert "data-db-0" in caution and "data-db-1" in caution


def test_a_replaced_statefulset_keeps_its_pvcs_for_its_new_pods_even_with_allow_data_loss() -> None:
    before = served(stateful_set()[0])
    before["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "2Gi"
    change = only(run(stateful_set(), before, allow_data_loss=True), "statefulset/shop/db")
    assert (change.action, change.reason) == (
        "replace",
        "forced by spec.volumeClaimTemplates; its PVCs data-db-* are kept (its new pods mount them again); "
        "its existing PVCs keep their size (claim templates apply to new claims only)",
    )


@pytest.mark.parametrize(
    ("claim", "made"),
    [
        (template_claim("data-db-0"), True),
        (template_claim("data-db-12"), True),
        (template_claim("data-db-01"), False),
        (template_claim("data-db"), False),
        (template_claim("data-dbx-0"), False),
        (template_claim("logs-db-0"), False),
        (template_claim("data-db-0", namespace="other"), False),
    ],
    ids=[
        "ordinal 0",
        "ordinal 12",
        "a leading zero",
        "no ordinal",
        "another set",
        "another template",
        "elsewhere",
    ],
)
def test_a_statefulsets_pvcs_are_those_kubernetes_names_after_its_templates(
    claim: Manifest, made: bool
) -> None:
    assert stateful_claims(stateful_set()[0], [claim]) == ([claim] if made else [])


def test_a_new_claim_is_ready_before_the_workloads_that_mount_it_are_written() -> None:
    uploads = Volume(name="files", source="persistentVolumeClaim", ref="uploads", mount_path="/srv")
    manifests = rendered(
        volume_claims=(VolumeClaim(name="uploads", size="1Gi"),),
        workloads=(workload(volumes=(uploads,)), workload("db", kind="statefulset", volumes=(uploads,))),
    )
    assert solve(run(manifests)).as_text() == (
        "parent secret/shop/shop\n"
        "create persistentvolumeclaim/shop/uploads <- parent secret/shop/shop\n"
        "wait-ready persistentvolumeclaim/shop/uploads <- create persistentvolumeclaim/shop/uploads\n"
        "create deployment/shop/web <- wait-ready persistentvolumeclaim/shop/uploads\n"
        "wait-ready deployment/shop/web <- create deployment/shop/web\n"
        "create statefulset/shop/db <- wait-ready persistentvolumeclaim/shop/uploads\n"
        "wait-ready statefulset/shop/db <- create statefulset/shop/db\n"
    )


def test_a_workload_mounting_an_existing_claim_does_not_wait_for_it() -> None:
    uploads = Volume(name="files", source="persistentVolumeClaim", ref="uploads", mount_path="/srv")
    claim = find(
        rendered(volume_claims=(VolumeClaim(name="uploads", size="1Gi"),)), "PersistentVolumeClaim", "uploads"
    )
    web = find(rendered(workloads=(workload(volumes=(uploads,)),)), "Deployment", "web")
    assert solve(run([claim, web], served(claim))).as_text() == (
        "parent secret/shop/shop\n"
        "create deployment/shop/web <- parent secret/shop/shop\n"
        "wait-ready deployment/shop/web <- create deployment/shop/web\n"
    )
