"""Drift or pending: every change says whether the cluster moved away from what was applied (drift) or the
plan changed since the last apply (pending), from live hashes and the parent's applied closure."""

from __future__ import annotations

from typing import Any

import pytest

from planner.diff import ChangeSet, diff
from planner.state.applyset import AppliedClosure
from tests.unit.diff_support import (
    NAMESPACE,
    PLAN,
    Manifest,
    config_map,
    entry,
    find,
    live_state,
    planner_apply,
    rendered,
    served,
    workload,
)


def settings(**data: str) -> Manifest:
    return find(rendered(config_maps=(config_map(**data),)), "ConfigMap", "settings")


def parent_recording(*applied: Manifest) -> Manifest:
    closure = AppliedClosure.of(applied)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": PLAN, "namespace": NAMESPACE},
        "data": {"planner.applied-closure": closure.encoded()},
    }


def causes(changeset: ChangeSet) -> list[tuple[str, str, str | None, str]]:
    return [(c.action, str(c.ref), c.cause, c.reason) for c in changeset.changes]


def run(
    desired: list[Manifest], *live: Manifest, parent: Manifest | None = None, **options: Any
) -> ChangeSet:
    return diff(desired, live_state(*live, parent=parent), plan=PLAN, namespace=NAMESPACE, **options)


EDITED = "changed outside the plan by kubectl-edit"


def edited(manifest: Manifest) -> Manifest:
    live = served(manifest, managed=[entry("kubectl-edit", {"f:data": {"f:mode": {}}})])
    live["data"] = {"mode": "slow"}
    return live


CASES = [
    pytest.param(
        [settings()],
        [edited(settings())],
        parent_recording(settings()),
        [("update", "configmap/shop/settings", "drift", EDITED)],
        id="a field edited outside the plan is drift",
    ),
    pytest.param(
        [settings(mode="faster")],
        [served(settings())],
        parent_recording(settings()),
        [("update", "configmap/shop/settings", "pending", "plan changed")],
        id="a field the plan changed is pending",
    ),
    pytest.param(
        [settings()],
        [],
        parent_recording(settings()),
        [("create", "configmap/shop/settings", "drift", "deleted outside the plan")],
        id="an applied object deleted outside the plan is drift",
    ),
    pytest.param(
        [settings(mode="faster")],
        [],
        parent_recording(settings()),
        [("create", "configmap/shop/settings", "pending", "")],
        id="a deleted object the plan has changed since is pending: applying it is the plan's change",
    ),
    pytest.param(
        [settings()],
        [],
        parent_recording(),
        [("create", "configmap/shop/settings", "pending", "")],
        id="an object new in the plan is pending",
    ),
    pytest.param(
        [settings()],
        [],
        None,
        [("create", "configmap/shop/settings", "pending", "")],
        id="without a recorded closure a missing object is pending",
    ),
    pytest.param(
        [],
        [served(settings())],
        parent_recording(settings()),
        [("delete", "configmap/shop/settings", "pending", "no longer in the plan")],
        id="an object the plan dropped is pending",
    ),
    pytest.param(
        [],
        [served(settings())],
        parent_recording(),
        [
            (
                "delete",
                "configmap/shop/settings",
                "drift",
                "not in the plan: it joined the plan's ApplySet outside the plan",
            )
        ],
        id="a member the last apply never applied is drift",
    ),
    pytest.param(
        [],
        [served(settings())],
        None,
        [("delete", "configmap/shop/settings", "pending", "no longer in the plan")],
        id="without a recorded closure a member the plan does not declare is pending",
    ),
    pytest.param(
        [settings()],
        [served(settings())],
        parent_recording(settings()),
        [("noop", "configmap/shop/settings", None, "")],
        id="an unchanged object has no cause",
    ),
]


@pytest.mark.parametrize(("desired", "live", "parent", "expected"), CASES)
def test_each_change_is_drift_or_pending(
    desired: list[Manifest],
    live: list[Manifest],
    parent: Manifest | None,
    expected: list[tuple[str, str, str | None, str]],
) -> None:
    assert causes(run(desired, *live, parent=parent)) == expected


def test_a_changeset_lists_its_changes_by_cause() -> None:
    web = find(rendered(workloads=(workload(),)), "Deployment", "web")
    changeset = run([settings(), web], edited(settings()), parent=parent_recording(settings()))

    assert [str(c.ref) for c in changeset.caused_by("drift")] == ["configmap/shop/settings"]
    assert [str(c.ref) for c in changeset.caused_by("pending")] == ["deployment/shop/web"]


def test_a_change_that_drifted_and_is_pending_counts_as_both_and_names_the_writer() -> None:
    """The plan changed `level`, and `kubectl set` changed `mode`, a field the plan declares: the update is
    pending, and drift too, with the foreign field, its value and its writer."""
    applied = settings(mode="fast", level="info")
    live = served(
        applied,
        managed=[
            planner_apply({"f:data": {"f:level": {}}}),
            entry("kubectl-set", {"f:data": {"f:mode": {}}}),
        ],
    )
    live["data"]["mode"] = "attacker"
    changeset = run([settings(mode="fast", level="debug")], live, parent=parent_recording(applied))
    (change,) = changeset.changes
    assert (change.action, change.cause, change.causes) == ("update", "pending", ("drift", "pending"))
    assert change.reason == "changed outside the plan by kubectl-set"
    assert [(f.path, f.before, f.after, f.manager) for f in change.fields] == [
        (".data.level", "info", "debug", None),
        (".data.mode", "attacker", "fast", "kubectl-set"),
    ]
    assert (len(changeset.caused_by("drift")), len(changeset.caused_by("pending"))) == (1, 1)
