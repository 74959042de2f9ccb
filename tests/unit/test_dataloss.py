"""Which changes destroy data, which of them need --allow-data-loss, and the one refusal."""

from __future__ import annotations

import pytest

from planner.changeset import Action, Change, ChangeSet, Transition
from planner.dataloss import (
    deletes_claims,
    destroys_data,
    needs_consent,
    refuse_data_loss,
    resized_template_note,
    unresized_claims,
)
from planner.errors import DataLossError
from planner.objects import Manifest, ObjectRef


def change(kind: str, action: Action, transition: Transition | None = None, name: str = "data") -> Change:
    namespace = None if kind == "Namespace" else "shop"
    return Change(
        ref=ObjectRef(group="", kind=kind, namespace=namespace, name=name),
        action=action,
        desired=None,
        live=None,
        transition=transition,
        reason="no longer in the plan" if action == "delete" else "forced by spec.storageClassName",
    )


@pytest.mark.parametrize(
    ("given", "destroys", "needs"),
    [
        (change("PersistentVolumeClaim", "replace"), True, True),
        (change("PersistentVolumeClaim", "delete"), True, True),
        (change("Namespace", "delete"), True, True),
        (change("PersistentVolumeClaim", "delete", "rebase"), True, False),
        (change("PersistentVolumeClaim", "create", "rebase"), False, False),
        (change("PersistentVolumeClaim", "update"), False, False),
        (change("ConfigMap", "delete"), False, False),
        (change("Pod", "replace", "rebase"), False, False),
    ],
    ids=[
        "a replaced claim destroys data and needs the flag",
        "a deleted claim destroys data and needs the flag",
        "a deleted namespace destroys data and needs the flag",
        "a rebase's old rootfs destroys data, declared by the generation bump",
        "a rebase's new rootfs destroys nothing",
        "a claim resized in place destroys nothing",
        "a deleted configmap is no data loss",
        "a rebased pod is no data loss",
    ],
)
def test_what_destroys_data_and_what_needs_allow_data_loss(
    given: Change, destroys: bool, needs: bool
) -> None:
    assert (destroys_data(given), needs_consent(given)) == (destroys, needs)


def plan_of(*changes: Change, name: str = "shop", allow: bool = False) -> ChangeSet:
    return ChangeSet(plan=name, namespace="shop", changes=changes, allow_data_loss=allow)


def test_the_refusal_names_every_object_of_every_plan_at_once() -> None:
    first = plan_of(change("PersistentVolumeClaim", "replace"))
    second = plan_of(change("Namespace", "delete", name="scratch"), name="tools")

    with pytest.raises(DataLossError) as raised:
        refuse_data_loss([first, second])

    assert raised.value.objects == [
        ("namespace/scratch", "would be deleted (no longer in the plan)"),
        ("persistentvolumeclaim/shop/data", "would be replaced (forced by spec.storageClassName)"),
    ]
    assert "--allow-data-loss" in str(raised.value)


def test_nothing_is_refused_with_allow_data_loss_or_for_a_rebase_alone() -> None:
    refuse_data_loss([plan_of(change("PersistentVolumeClaim", "replace"), allow=True)])
    refuse_data_loss([plan_of(change("PersistentVolumeClaim", "delete", "rebase"))])


# --- a StatefulSet's claim retention policy (issue 39, item 3) ---


def stateful_set(*, replicas: int = 3, when_deleted: str = "Retain", when_scaled: str = "Retain") -> Manifest:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {
            "replicas": replicas,
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": when_deleted, "whenScaled": when_scaled},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
        },
    }


DB = ObjectRef(group="apps", kind="StatefulSet", namespace="shop", name="db")


@pytest.mark.parametrize(
    ("action", "live", "desired", "expected"),
    [
        pytest.param(
            "delete",
            stateful_set(when_deleted="Delete"),
            None,
            "its PVCs are deleted with it (persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)",
            id="a pruned set whose policy deletes its claims",
        ),
        pytest.param(
            "replace",
            stateful_set(when_deleted="Delete"),
            stateful_set(when_deleted="Delete"),
            "its PVCs are deleted with it and made again empty "
            "(persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)",
            id="a replaced set whose policy deletes its claims",
        ),
        pytest.param(
            "update",
            stateful_set(replicas=3, when_scaled="Delete"),
            stateful_set(replicas=1, when_scaled="Delete"),
            "scaling from 3 to 1 deletes the PVCs of ordinal 1-2 "
            "(persistentVolumeClaimRetentionPolicy.whenScaled: Delete)",
            id="a scale-down whose policy deletes the removed ordinals' claims",
        ),
        pytest.param(
            "update",
            stateful_set(replicas=1, when_scaled="Delete"),
            stateful_set(replicas=3, when_scaled="Delete"),
            None,
            id="a scale-up deletes nothing",
        ),
        pytest.param("delete", stateful_set(), None, None, id="the default policy keeps the claims"),
        pytest.param(
            "update",
            stateful_set(replicas=3),
            stateful_set(replicas=1),
            None,
            id="a scale-down under the default policy keeps the claims",
        ),
    ],
)
def test_a_stateful_sets_retention_policy_decides_whether_its_change_destroys_data(
    action: Action, live: Manifest, desired: Manifest | None, expected: str | None
) -> None:
    given = Change(ref=DB, action=action, desired=desired, live=live)
    assert deletes_claims(given) == expected
    assert destroys_data(given) == (expected is not None)
    assert needs_consent(given) == (expected is not None)


def test_a_plan_object_is_told_to_set_reconcile_allow_data_loss() -> None:
    doomed = Change(ref=DB, action="delete", desired=None, live=stateful_set(when_deleted="Delete"))
    with pytest.raises(DataLossError) as refused:
        refuse_data_loss(
            [ChangeSet(plan="shop", namespace="shop", changes=(doomed,))],
            consent="set reconcile.allowDataLoss: true in the Plan",
        )
    assert str(refused.value).startswith(
        "the plan destroys data; set reconcile.allowDataLoss: true in the Plan to accept it:\n"
    )
    assert "  statefulset/shop/db: would be deleted" in str(refused.value)


def with_template_size(size: str) -> Manifest:
    stateful = stateful_set(replicas=2)
    stateful["spec"]["volumeClaimTemplates"][0]["spec"] = {"resources": {"requests": {"storage": size}}}
    return stateful


def claim(name: str, size: str) -> Manifest:
    return {
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"resources": {"requests": {"storage": size}}},
    }


def test_claims_that_differ_from_their_template_are_named_not_reported_as_matching() -> None:
    """Claim templates apply to new claims only (issue 39, item 4)."""
    claims = [claim("data-db-0", "1Gi"), claim("data-db-1", "2048Mi")]
    assert unresized_claims(with_template_size("2Gi"), claims) == (
        "PVC data-db-0 requests 1Gi, its template 2Gi: claim templates apply to new claims only; resize an "
        "existing claim itself (kubectl patch pvc, where its StorageClass allows expansion)"
    )
    assert unresized_claims(with_template_size("2Gi"), [claims[1]]) is None  # 2048Mi is 2Gi
    assert resized_template_note(with_template_size("1Gi"), with_template_size("2Gi")) == (
        "its existing PVCs keep their size (claim templates apply to new claims only)"
    )
    assert resized_template_note(with_template_size("1Gi"), with_template_size("1Gi")) == ""
