"""Which changes destroy data, which of them need --allow-data-loss, and the one refusal."""

from __future__ import annotations

import pytest

from planner.changeset import Action, Change, ChangeSet, Transition
from planner.dataloss import destroys_data, needs_consent, refuse_data_loss
from planner.errors import DataLossError
from planner.objects import ObjectRef


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
