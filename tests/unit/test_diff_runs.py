"""Jobs run once per run-key: the record in the parent Secret, `already-ran`, and `--rerun`."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from planner.diff import UNRECORDED, diff
from planner.state.applyset import RunRecord, encode_run_record, run_keys_of, run_records, trimmed_run_records
from tests.unit.diff_support import (
    NAMESPACE,
    PLAN,
    Manifest,
    find,
    live_state,
    outline,
    rendered,
    served,
    workload,
)

RUN_KEY = "planner.dev/run-key"


def job(**fields: Any) -> Manifest:
    return find(rendered(workloads=(workload("migrate", kind="job", **fields),)), "Job", "migrate")


def parent_with(*records: tuple[str, dict[str, Any]]) -> Manifest:
    data = {key: base64.b64encode(json.dumps(value).encode()).decode() for key, value in records}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": PLAN, "namespace": NAMESPACE},
        "data": data,
    }


MIGRATE = job()
MIGRATE_KEY = MIGRATE["metadata"]["annotations"][RUN_KEY]
RAN = (MIGRATE_KEY, {"namespace": "shop", "name": "migrate", "uid": "0b7c-11"})
RUNTIME_ID = MIGRATE["metadata"]["annotations"]["planner.dev/runtime-id"]


def test_the_record_format_is_base64_json_keyed_by_run_key() -> None:
    record = RunRecord(run_key=MIGRATE_KEY, namespace="shop", name="migrate", uid="0b7c-11")

    encoded = encode_run_record(record)

    assert json.loads(base64.b64decode(encoded)) == {"name": "migrate", "namespace": "shop", "uid": "0b7c-11"}
    assert run_records({"data": {MIGRATE_KEY: encoded}}) == {MIGRATE_KEY: record}


def test_a_record_keeps_the_jobs_runtime_id_for_the_monitor() -> None:
    record = RunRecord(
        run_key=MIGRATE_KEY,
        namespace="shop",
        name="migrate",
        uid="0b7c-11",
        runtime_id="k3s-shop|job|migrate",
    )

    encoded = encode_run_record(record)

    assert json.loads(base64.b64decode(encoded)) == {
        "name": "migrate",
        "namespace": "shop",
        "runtimeId": "k3s-shop|job|migrate",
        "uid": "0b7c-11",
    }
    assert run_records({"data": {MIGRATE_KEY: encoded}}) == {MIGRATE_KEY: record}


def test_undecodable_entries_are_ignored() -> None:
    parent = {
        "data": {
            "a": "not base64!",
            "b": base64.b64encode(b"[1]").decode(),
            "c": base64.b64encode(b"{}").decode(),
        }
    }

    assert run_records(parent) == {}
    assert run_records(None) == {}


def test_the_trimmed_record_keeps_only_run_keys_of_the_closure() -> None:
    kept = RunRecord(run_key=MIGRATE_KEY, namespace="shop", name="migrate", uid="0b7c-11")
    stale = RunRecord(run_key="f" * 64, namespace="shop", name="migrate", uid="old")

    closure = rendered(workloads=(workload("migrate", kind="job"),))
    data = trimmed_run_records({kept.run_key: kept, stale.run_key: stale}, run_keys_of(closure))

    assert data == {MIGRATE_KEY: encode_run_record(kept)}


def test_a_job_whose_run_key_ran_and_is_gone_is_already_ran() -> None:
    changeset = diff([MIGRATE], live_state(parent=parent_with(RAN)), plan=PLAN, namespace=NAMESPACE)

    assert outline(changeset) == [
        ("noop", "job/shop/migrate", "already-ran", "run-key already ran as job shop/migrate (uid 0b7c-11)")
    ]
    assert not changeset.has_changes


def test_rerun_creates_a_job_whose_run_key_already_ran() -> None:
    state = live_state(parent=parent_with(RAN))

    changeset = diff([MIGRATE], state, plan=PLAN, namespace=NAMESPACE, rerun=frozenset({"migrate"}))

    assert outline(changeset) == [("create", "job/shop/migrate", None, "rerun requested")]


def test_rerun_replaces_a_job_that_still_exists() -> None:
    state = live_state(served(MIGRATE), parent=parent_with(RAN))

    changeset = diff([MIGRATE], state, plan=PLAN, namespace=NAMESPACE, rerun=frozenset({"migrate"}))

    assert outline(changeset) == [("replace", "job/shop/migrate", None, "rerun requested")]


def test_a_job_with_a_new_run_key_is_created_even_when_an_older_key_ran() -> None:
    changed = job(image="ghcr.io/acme/web:1.5.0")

    changeset = diff([changed], live_state(parent=parent_with(RAN)), plan=PLAN, namespace=NAMESPACE)

    assert outline(changeset) == [("create", "job/shop/migrate", None, "")]


def test_a_job_whose_run_key_ran_is_already_ran_though_a_live_job_holds_another_run_key() -> None:
    # A rollback to a closure whose Job ran before: the later run's Job is still there.
    later = job(image="ghcr.io/acme/web:1.5.0")

    changeset = diff(
        [MIGRATE], live_state(served(later), parent=parent_with(RAN)), plan=PLAN, namespace=NAMESPACE
    )

    assert outline(changeset) == [
        ("noop", "job/shop/migrate", "already-ran", "run-key already ran as job shop/migrate (uid 0b7c-11)")
    ]
    rerun = diff(
        [MIGRATE],
        live_state(served(later), parent=parent_with(RAN)),
        plan=PLAN,
        namespace=NAMESPACE,
        rerun=frozenset({"migrate"}),
    )
    assert outline(rerun) == [("replace", "job/shop/migrate", None, "rerun requested")]


PENDING = (MIGRATE_KEY, {"namespace": "shop", "name": "migrate"})


def test_a_pending_record_decodes_without_a_uid_and_counts_as_not_run() -> None:
    (record,) = run_records(parent_with(PENDING)).values()

    assert record == RunRecord(run_key=MIGRATE_KEY, namespace="shop", name="migrate")
    assert not record.ran


def test_a_job_recorded_pending_whose_job_never_appeared_is_created_again() -> None:
    changeset = diff([MIGRATE], live_state(parent=parent_with(PENDING)), plan=PLAN, namespace=NAMESPACE)

    assert outline(changeset) == [("create", "job/shop/migrate", None, "")]
    assert changeset.unrecorded == ()


@pytest.mark.parametrize(
    "parent",
    [parent_with(PENDING), parent_with(), None],
    ids=[
        "a live Job recorded only as pending is recorded by the next apply",
        "a live Job whose run-key the parent does not hold is recorded by the next apply",
        "a live Job of a plan without parent is recorded by the next apply",
    ],
)
def test_a_live_job_without_a_confirmed_record_is_unchanged_but_its_run_is_to_be_recorded(
    parent: Manifest | None,
) -> None:
    live = served(MIGRATE, uid="u-live")

    changeset = diff([MIGRATE], live_state(live, parent=parent), plan=PLAN, namespace=NAMESPACE)

    assert outline(changeset) == [("noop", "job/shop/migrate", None, UNRECORDED)]
    assert not changeset.has_changes
    assert changeset.unrecorded == (
        RunRecord(run_key=MIGRATE_KEY, namespace="shop", name="migrate", uid="u-live", runtime_id=RUNTIME_ID),
    )


def test_a_live_job_whose_run_is_recorded_needs_no_record() -> None:
    changeset = diff(
        [MIGRATE], live_state(served(MIGRATE), parent=parent_with(RAN)), plan=PLAN, namespace=NAMESPACE
    )

    assert outline(changeset) == [("noop", "job/shop/migrate", None, "")]
    assert changeset.unrecorded == ()


def test_a_secret_with_the_parents_name_that_is_not_the_parent_is_an_ownership_conflict() -> None:
    impostor = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": PLAN, "namespace": NAMESPACE, "uid": "f1"},
        "type": "Opaque",
    }

    changeset = diff([MIGRATE], live_state(foreign=[impostor]), plan=PLAN, namespace=NAMESPACE)

    assert changeset.conflicts == (
        f"secret {NAMESPACE}/{PLAN} exists and is not the ApplySet parent of plan {PLAN}; "
        "rename the plan or move that secret",
    )


def hook(policy: str) -> Manifest:
    annotations = {**MIGRATE["metadata"]["annotations"], "helm.sh/hook-delete-policy": policy}
    return {**MIGRATE, "metadata": {**MIGRATE["metadata"], "annotations": annotations}}


@pytest.mark.parametrize(
    ("policy", "result", "expected"),
    [
        ("hook-succeeded", "succeeded", ("noop", "already-ran")),
        ("hook-failed", "succeeded", ("noop", "already-ran")),
        ("hook-failed", "failed", ("create", None)),
    ],
    ids=[
        "deleted after it succeeded: already ran",
        "succeeded, hook-failed only: already ran",
        "failed and deleted by hook-failed: runs again",
    ],
)
def test_a_chart_hook_job_deleted_after_its_run_runs_again_only_when_that_run_failed(
    policy: str, result: str, expected: tuple[str, str | None]
) -> None:
    record = (MIGRATE_KEY, {**RAN[1], "outcome": {"result": result}})
    changeset = diff([hook(policy)], live_state(parent=parent_with(record)), plan=PLAN, namespace=NAMESPACE)
    [(action, ref, transition, reason)] = outline(changeset)
    assert (action, transition) == expected and ref == "job/shop/migrate"
    if action == "create":
        assert reason == "its last run failed (hook-failed deleted it): it runs again"


HOOK_ACCOUNT = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {
        "name": "migrator",
        "namespace": "shop",
        "annotations": {
            "helm.sh/hook": "pre-install",
            "helm.sh/hook-delete-policy": "hook-succeeded",
            RUN_KEY: "a" * 64,
        },
    },
}


def test_a_charts_other_hook_whose_run_key_ran_and_that_its_policy_deleted_is_already_ran() -> None:
    ran = ("a" * 64, {"namespace": "shop", "name": "migrator", "uid": "5e1f-02"})

    changeset = diff([HOOK_ACCOUNT], live_state(parent=parent_with(ran)), plan=PLAN, namespace=NAMESPACE)

    assert outline(changeset) == [
        (
            "noop",
            "serviceaccount/shop/migrator",
            "already-ran",
            "run-key already ran as serviceaccount shop/migrator (uid 5e1f-02)",
        )
    ]
    assert run_keys_of([HOOK_ACCOUNT]) == {"a" * 64}  # its record is kept in the parent with the Jobs'


def test_a_charts_other_hook_whose_run_key_did_not_run_is_created() -> None:
    changeset = diff([HOOK_ACCOUNT], live_state(parent=parent_with(RAN)), plan=PLAN, namespace=NAMESPACE)

    assert outline(changeset) == [("create", "serviceaccount/shop/migrator", None, "")]
