"""Sandbox transitions (seed 003) are named changes, not prunes: pause, resume, rebase and fork."""

from __future__ import annotations

from typing import Any

import pytest

from planner.dataloss import refuse_data_loss
from planner.diff import ChangeSet, diff
from planner.errors import DataLossError
from planner.graph import solve
from planner.plan.model import Claim, Rootfs
from tests.unit.diff_support import (
    NAMESPACE,
    PLAN,
    Manifest,
    entry,
    fields_of,
    find,
    live_state,
    only,
    outline,
    rendered,
    sandbox,
    served,
)

STATE = "planner.dev/sandbox-state"


def objects(*sandboxes: Any) -> list[Manifest]:
    return rendered(sandboxes=sandboxes)


def plan_against(desired: list[Manifest], live: list[Manifest]) -> ChangeSet:
    return diff(desired, live_state(*live), plan=PLAN, namespace=NAMESPACE)


def test_pausing_deletes_only_the_pod_and_marks_the_workspace() -> None:
    live = [served(m) for m in objects(sandbox())]

    changeset = plan_against(objects(sandbox(state="paused")), live)

    assert outline(changeset) == [
        ("noop", "persistentvolumeclaim/shop/alice-rootfs-g1", None, ""),
        ("update", "persistentvolumeclaim/shop/alice-workspace", "pause", "plan changed"),
        ("delete", "pod/shop/alice", "pause", "pause: the pod goes, its PVCs stay"),
    ]
    workspace_fields = {f.path: (f.before, f.after) for f in changeset.changes[1].fields}
    assert workspace_fields['.metadata.annotations["planner.dev/sandbox-state"]'] == ("running", "paused")


def test_resuming_creates_the_pod_and_marks_the_workspace() -> None:
    live = [served(m) for m in objects(sandbox(state="paused"))]

    changeset = plan_against(objects(sandbox()), live)

    assert outline(changeset) == [
        ("noop", "persistentvolumeclaim/shop/alice-rootfs-g1", None, ""),
        ("update", "persistentvolumeclaim/shop/alice-workspace", "resume", "plan changed"),
        ("create", "pod/shop/alice", "resume", "resume: the pod is recreated"),
    ]
    assert [c.drift for c in changeset.changes] == [False, False, False]


def test_a_sandbox_paused_out_of_band_while_the_plan_says_running_is_a_resume_with_drift() -> None:
    desired = objects(sandbox())
    workspace = served(
        find(desired, "PersistentVolumeClaim", "alice-workspace"),
        managed=[entry("planner-lifecycle", {"f:metadata": {"f:annotations": {f"f:{STATE}": {}}}})],
    )
    workspace["metadata"]["annotations"][STATE] = "paused"  # `planner pause` patched only the annotation
    rootfs = served(find(desired, "PersistentVolumeClaim", "alice-rootfs-g1"))

    changeset = plan_against(desired, [rootfs, workspace])

    assert outline(changeset) == [
        ("noop", "persistentvolumeclaim/shop/alice-rootfs-g1", None, ""),
        (
            "update",
            "persistentvolumeclaim/shop/alice-workspace",
            "resume",
            "changed outside the plan by planner-lifecycle",
        ),
        ("create", "pod/shop/alice", "resume", "resume: the pod is recreated; moved outside the plan"),
    ]
    assert [c.drift for c in changeset.changes] == [False, True, True]


def test_a_rootfs_generation_bump_is_a_rebase_that_keeps_the_workspace_without_the_data_loss_flag() -> None:
    live = [served(m) for m in objects(sandbox())]

    changeset = plan_against(objects(sandbox(rootfs=Rootfs(size="10Gi", generation=2))), live)

    assert outline(changeset) == [
        ("delete", "persistentvolumeclaim/shop/alice-rootfs-g1", "rebase", "rebase g1→g2"),
        ("create", "persistentvolumeclaim/shop/alice-rootfs-g2", "rebase", "rebase g1→g2"),
        ("update", "persistentvolumeclaim/shop/alice-workspace", "rebase", "rebase g1→g2"),
        ("replace", "pod/shop/alice", "rebase", "rebase g1→g2"),
    ]
    refuse_data_loss([changeset])  # the generation bump is the consent: no --allow-data-loss needed


def test_a_paused_sandbox_rebases_its_pvcs_without_a_pod() -> None:
    live = [served(m) for m in objects(sandbox(state="paused"))]

    changeset = plan_against(objects(sandbox(state="paused", rootfs=Rootfs(size="10Gi", generation=3))), live)

    assert outline(changeset) == [
        ("delete", "persistentvolumeclaim/shop/alice-rootfs-g1", "rebase", "rebase g1→g3"),
        ("create", "persistentvolumeclaim/shop/alice-rootfs-g3", "rebase", "rebase g1→g3"),
        ("update", "persistentvolumeclaim/shop/alice-workspace", "rebase", "rebase g1→g3"),
    ]


def test_a_fork_creates_pvcs_cloned_from_the_source_sandbox() -> None:
    live = [served(m) for m in objects(sandbox())]

    changeset = plan_against(objects(sandbox(), sandbox("bob", fork_from="alice")), live)

    assert [row for row in outline(changeset) if "bob" in row[1]] == [
        ("create", "persistentvolumeclaim/shop/bob-rootfs-g1", "fork", "fork of alice-rootfs-g1"),
        ("create", "persistentvolumeclaim/shop/bob-workspace", "fork", "fork of alice-workspace"),
        ("create", "pod/shop/bob", None, ""),
    ]
    assert {c.owner for c in changeset.changes if "bob" in c.ref.name} == {"bob"}


def test_a_new_sandbox_is_plain_creates() -> None:
    changeset = plan_against(objects(sandbox()), [])

    assert outline(changeset) == [
        ("create", "persistentvolumeclaim/shop/alice-rootfs-g1", None, ""),
        ("create", "persistentvolumeclaim/shop/alice-workspace", None, ""),
        ("create", "pod/shop/alice", None, ""),
    ]


def test_a_rebase_shows_the_recorded_pod_change_field_by_field() -> None:
    live = [served(m) for m in objects(sandbox())]

    changeset = plan_against(objects(sandbox(rootfs=Rootfs(size="10Gi", generation=2))), live)

    workspace = only(changeset, "persistentvolumeclaim/shop/alice-workspace")
    claim = ".spec.volumes[name=rootfs].persistentVolumeClaim.claimName"
    assert fields_of(workspace) == [
        (f'.metadata.annotations["planner.dev/pod-spec"]{claim}', "alice-rootfs-g1", "alice-rootfs-g2", None)
    ]
    assert fields_of(only(changeset, "pod/shop/alice")) == [
        (claim, "alice-rootfs-g1", "alice-rootfs-g2", None)
    ]


def test_an_env_var_dropped_from_a_sandbox_replaces_its_pod_even_without_managed_fields() -> None:
    """The workspace PVC records the last rendered pod: the removal shows without planner's Apply entry."""
    live = [served(m) for m in objects(sandbox(env={"MODE": "dev", "TRACE": "1"}))]

    changeset = plan_against(objects(sandbox(env={"MODE": "dev"})), live)

    pod = only(changeset, "pod/shop/alice")
    assert (pod.action, pod.reason) == ("replace", "forced by spec.containers[name=sandbox].env[name=TRACE]")
    assert fields_of(pod) == [
        (".spec.containers[name=sandbox].env[name=TRACE]", {"name": "TRACE", "value": "1"}, None, None)
    ]


def test_a_rebase_does_not_excuse_replacing_the_workspace() -> None:
    live = [served(m) for m in objects(sandbox())]
    desired = objects(
        sandbox(rootfs=Rootfs(size="10Gi", generation=2), workspace=Claim(size="20Gi", storage_class="fast"))
    )

    with pytest.raises(DataLossError) as raised:
        refuse_data_loss([plan_against(desired, live)])

    assert [name for name, _ in raised.value.objects] == ["persistentvolumeclaim/shop/alice-workspace"]


def test_bumping_the_source_generation_leaves_its_forks_volumes_unchanged() -> None:
    """A fork's `dataSource` is create-only: the source's new rootfs name is no change to the fork."""
    live = [served(m) for m in objects(sandbox(), sandbox("bob", fork_from="alice"))]
    bumped = objects(sandbox(rootfs=Rootfs(size="10Gi", generation=2)), sandbox("bob", fork_from="alice"))

    changeset = plan_against(bumped, live)

    assert [row for row in outline(changeset) if "bob" in row[1]] == [
        ("noop", "persistentvolumeclaim/shop/bob-rootfs-g1", None, ""),
        ("noop", "persistentvolumeclaim/shop/bob-workspace", None, ""),
        ("noop", "pod/shop/bob", None, ""),
    ]


def test_growing_a_fork_after_its_source_moved_on_writes_the_live_data_source() -> None:
    live = [served(m) for m in objects(sandbox(), sandbox("bob", fork_from="alice"))]
    grown = objects(
        sandbox(rootfs=Rootfs(size="10Gi", generation=2)),
        sandbox("bob", fork_from="alice", rootfs=Rootfs(size="15Gi")),
    )

    changeset = plan_against(grown, live)
    written = solve(changeset).task("apply persistentvolumeclaim/shop/bob-rootfs-g1").manifest

    rootfs = only(changeset, "persistentvolumeclaim/shop/bob-rootfs-g1")
    assert fields_of(rootfs) == [(".spec.resources.requests.storage", "10Gi", "15Gi", None)]
    assert written is not None
    assert written["spec"]["dataSource"] == {"kind": "PersistentVolumeClaim", "name": "alice-rootfs-g1"}
    assert written["spec"]["resources"] == {"requests": {"storage": "15Gi"}}


def idle_paused(manifest: Manifest) -> Manifest:
    """The reaper's marks on a served workspace PVC: paused for idleness at a known moment."""
    annotations = {
        **manifest["metadata"]["annotations"],
        "planner.dev/sandbox-state": "paused",
        "planner.dev/paused-reason": "idle",
        "planner.dev/last-activity": "2026-12-01T08:00:00.000000Z",
    }
    return {**manifest, "metadata": {**manifest["metadata"], "annotations": annotations}}


def test_a_sandbox_the_reaper_paused_stays_paused_under_a_running_plan() -> None:
    served_objects = [served(m) for m in objects(sandbox(idle_timeout_seconds=60))]
    live = [idle_paused(m) if m["metadata"]["name"] == "alice-workspace" else m for m in served_objects]
    live = [m for m in live if m["kind"] != "Pod"]

    changeset = plan_against(objects(sandbox(idle_timeout_seconds=60)), live)

    assert outline(changeset) == [
        ("noop", "persistentvolumeclaim/shop/alice-rootfs-g1", None, ""),
        ("noop", "persistentvolumeclaim/shop/alice-workspace", None, ""),
        ("noop", "pod/shop/alice", None, "paused (idle since 2026-12-01T08:00:00.000000Z)"),
    ]
    assert not changeset.has_changes


def test_a_plan_change_to_an_idle_paused_sandbox_keeps_it_paused() -> None:
    live = [served(m) for m in objects(sandbox(idle_timeout_seconds=60))]
    live = [idle_paused(m) if m["metadata"]["name"] == "alice-workspace" else m for m in live]
    live = [m for m in live if m["kind"] != "Pod"]

    changeset = plan_against(objects(sandbox(idle_timeout_seconds=60, env={"MODE": "dev"})), live)

    workspace = only(changeset, "persistentvolumeclaim/shop/alice-workspace")
    assert workspace.action == "update"
    assert workspace.desired is not None
    assert workspace.desired["metadata"]["annotations"]["planner.dev/sandbox-state"] == "paused"
    assert not [f for f in workspace.fields if f.path.endswith('sandbox-state"]')]
    assert only(changeset, "pod/shop/alice").action == "noop"


def test_a_sandbox_paused_by_hand_is_still_drift_under_a_running_plan() -> None:
    live = [served(m) for m in objects(sandbox())]
    live = [m for m in live if m["kind"] != "Pod"]
    live = [
        {
            **m,
            "metadata": {
                **m["metadata"],
                "annotations": {**m["metadata"]["annotations"], "planner.dev/sandbox-state": "paused"},
            },
        }
        if m["metadata"]["name"] == "alice-workspace"
        else m
        for m in live
    ]

    changeset = plan_against(objects(sandbox()), live)

    assert only(changeset, "pod/shop/alice").action == "create"
