"""planner.state.applyset: the parent Secret's scope (superset while applying, narrowed after converging), its
ownership checks, the run record and the applied closure, as pure functions over hand-built parents."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest

from planner.errors import OwnershipError, PlannerError
from planner.objects import Manifest, ObjectRef
from planner.state.applyset import (
    AppliedClosure,
    ParentRecord,
    RunOutcome,
    RunRecord,
    Scope,
    applied_closure,
    applyset_id,
    digest_key,
    encode_run_record,
    final_outcome,
    holds_run_finalizer,
    listed_scope,
    narrowed,
    parent_manifest,
    parent_ref,
    run_finalizer_removal,
    run_outcome,
    run_record_of,
    run_records,
    settled_parent,
    with_digest_key,
    with_run_finalizer,
    with_run_outcome,
    with_run_record,
)

REF = parent_ref("shop", "shop")
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
ID = "applyset.kubernetes.io/id"


def parent(group_kinds: str = "ConfigMap", namespaces: str | None = None, **data: str) -> Manifest:
    annotations = {GROUP_KINDS: group_kinds, "applyset.kubernetes.io/tooling": "planner/0.1.0"}
    if namespaces is not None:
        annotations[NAMESPACES] = namespaces
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "shop",
            "namespace": "shop",
            "resourceVersion": "7",
            "labels": {ID: applyset_id("shop", "shop"), "team": "a"},
            "annotations": annotations,
            "managedFields": [{"manager": "planner"}],
        },
        "type": "planner.dev/applyset",
        "data": data,
    }


def scope(group_kinds: str = "", namespaces: str = "") -> Scope:
    return Scope(
        group_kinds=frozenset(filter(None, group_kinds.split(","))),
        namespaces=frozenset(filter(None, namespaces.split(","))),
    )


def ref(kind: str, name: str, namespace: str | None = "shop", group: str = "") -> ObjectRef:
    return ObjectRef(group=group, kind=kind, namespace=namespace, name=name)


def record(key: str, name: str = "migrate", uid: str = "u1") -> str:
    document = {"name": name, "namespace": "shop", "uid": uid}
    return base64.b64encode(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).decode()


def test_a_scope_lists_group_kinds_and_namespaces_of_members_but_not_namespace_objects() -> None:
    refs = [
        ref("Deployment", "web", group="apps"),
        ref("Secret", "db", namespace="other"),
        ref("Namespace", "other", namespace=None),
    ]

    assert Scope.of(refs) == scope("Deployment.apps,Secret", "other,shop")


def test_the_listed_scope_is_read_from_the_annotations_and_empty_without_a_parent() -> None:
    assert listed_scope(parent("ConfigMap,Job.batch", "a,b")) == scope("ConfigMap,Job.batch", "a,b")
    assert listed_scope(None) == Scope()


def test_only_kinds_planner_writes_are_listed_as_kinds_to_read() -> None:
    listed = scope("ConfigMap,Widget.example.com,Job.batch")

    assert [kind.kind for kind in listed.kinds] == ["ConfigMap", "Job"]


def test_the_parent_written_before_members_is_the_union_and_keeps_only_the_closures_run_records() -> None:
    live = parent("ConfigMap", "old", k1=record("k1"), stale=record("stale"))
    wanted = ParentRecord(group_kinds=("Job.batch",), namespaces=("shop", "new"), run_keys=("k1",))

    written = parent_manifest(REF, live, wanted)

    metadata = written["metadata"]
    assert metadata["annotations"][GROUP_KINDS] == "ConfigMap,Job.batch"
    assert metadata["annotations"][NAMESPACES] == "new,old"
    assert metadata["annotations"]["planner.dev/plan"] == "shop"
    assert metadata["labels"] == {ID: applyset_id("shop", "shop"), "team": "a"}
    assert "managedFields" not in metadata and metadata["resourceVersion"] == "7"
    assert written["data"] == {"k1": record("k1")}


def test_a_same_named_secret_that_is_not_the_parent_is_never_overwritten() -> None:
    foreign = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "shop", "namespace": "shop"}}

    with pytest.raises(OwnershipError, match="secret shop/shop exists and is not the ApplySet parent"):
        parent_manifest(REF, foreign, ParentRecord(group_kinds=(), namespaces=(), run_keys=()))


NOTHING_APPLIED = AppliedClosure({})


def test_settling_lists_exactly_the_scope_and_drops_an_empty_namespace_list() -> None:
    settled = settled_parent(
        REF, parent("ConfigMap,Job.batch", "old"), scope=scope("ConfigMap", "shop"), applied=NOTHING_APPLIED
    )

    annotations = settled["metadata"]["annotations"]
    assert annotations[GROUP_KINDS] == "ConfigMap"
    assert NAMESPACES not in annotations


def test_settling_without_a_scope_keeps_what_the_parent_lists() -> None:
    settled = settled_parent(REF, parent("ConfigMap,Job.batch", "old"), scope=None, applied=NOTHING_APPLIED)

    annotations = settled["metadata"]["annotations"]
    assert (annotations[GROUP_KINDS], annotations[NAMESPACES]) == ("ConfigMap,Job.batch", "old")


def test_settling_a_missing_parent_fails() -> None:
    with pytest.raises(PlannerError, match="secret shop/shop is missing: nothing to settle"):
        settled_parent(REF, None, scope=Scope(), applied=NOTHING_APPLIED)


def hashed(kind: str, name: str, digest: str) -> Manifest:
    api = {"Deployment": "apps/v1"}.get(kind, "v1")
    metadata = {"name": name, "namespace": "shop", "annotations": {"planner.dev/hash": digest}}
    return {"apiVersion": api, "kind": kind, "metadata": metadata}


def test_the_applied_closure_is_gzipped_json_of_each_objects_short_hash_beside_the_run_records() -> None:
    closure = AppliedClosure.of([hashed("ConfigMap", "a", "ab" * 32), hashed("Deployment", "web", "cd" * 32)])
    live = parent(**{"k1": record("k1")})

    settled = settled_parent(REF, live, scope=None, applied=closure)

    assert settled["data"]["k1"] == record("k1")
    packed = base64.b64decode(settled["data"]["planner.applied-closure"])
    assert json.loads(gzip.decompress(packed)) == {
        "configmap/shop/a": "abababababababab",
        "deployment/shop/web": "cdcdcdcdcdcdcdcd",
    }
    assert applied_closure(settled) == closure


def test_the_applied_closure_survives_the_parent_write_that_trims_run_records() -> None:
    closure = AppliedClosure.of([hashed("ConfigMap", "a", "ab" * 32)])
    live = parent(**{"planner.applied-closure": closure.encoded(), "k1": record("k1"), "k2": record("k2")})

    written = parent_manifest(REF, live, ParentRecord(group_kinds=(), namespaces=(), run_keys=("k2",)))

    assert written["data"] == {"planner.applied-closure": closure.encoded(), "k2": record("k2")}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, None),
        ({"planner.applied-closure": "not base64!"}, None),
        ({"planner.applied-closure": base64.b64encode(b"not gzip").decode()}, None),
        ({"planner.applied-closure": base64.b64encode(gzip.compress(b"[1, 2]")).decode()}, None),
    ],
    ids=[
        "a parent that records no closure",
        "an entry that is not base64",
        "an entry that is not gzip",
        "an entry that is not a JSON object",
    ],
)
def test_a_parent_without_a_readable_applied_closure_records_none(
    data: dict[str, str], expected: AppliedClosure | None
) -> None:
    assert applied_closure(parent(**data)) is expected


def test_equal_closures_encode_equally_whatever_their_order() -> None:
    one = AppliedClosure.of([hashed("ConfigMap", "a", "1" * 64), hashed("ConfigMap", "b", "2" * 64)])
    other = AppliedClosure.of([hashed("ConfigMap", "b", "2" * 64), hashed("ConfigMap", "a", "1" * 64)])

    assert one.encoded() == other.encoded()


@pytest.mark.parametrize(
    ("live", "written", "remaining", "expected"),
    [
        pytest.param(
            parent("ConfigMap,Job.batch", "old"),
            Scope(),
            scope("ConfigMap", "shop"),
            scope("ConfigMap", "shop"),
            id="a parent listing more than remains is narrowed to what remains",
        ),
        pytest.param(
            parent("ConfigMap"),
            scope("Job.batch", "shop"),
            scope("ConfigMap", "shop"),
            scope("ConfigMap", "shop"),
            id="what the apply wrote counts as listed: a pruned kind leaves the parent",
        ),
        pytest.param(
            parent("ConfigMap,Job.batch"),
            scope("Job.batch", "shop"),
            scope("ConfigMap,Job.batch", "shop"),
            None,
            id="a parent that fits is not written",
        ),
        pytest.param(
            None,
            Scope(),
            Scope(),
            None,
            id="a plan never applied that wrote nothing has no parent to narrow",
        ),
    ],
)
def test_after_a_converged_apply_the_parent_narrows_only_when_it_lists_more(
    live: Manifest | None, written: Scope, remaining: Scope, expected: Scope | None
) -> None:
    assert narrowed(live, written=written, remaining=remaining, namespace="shop") == expected


def job(**metadata: Any) -> Manifest:
    base = {
        "name": "migrate",
        "namespace": "shop",
        "uid": "u9",
        "annotations": {"planner.dev/run-key": "k9", "planner.dev/runtime-id": "k8s-shop|job|migrate"},
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": base | metadata}


def test_a_created_jobs_run_is_added_to_the_parents_data() -> None:
    updated = with_run_record(REF, parent(k1=record("k1")), run_record_of(job()))

    added = json.loads(base64.b64decode(updated["data"]["k9"]))
    assert added == {"name": "migrate", "namespace": "shop", "runtimeId": "k8s-shop|job|migrate", "uid": "u9"}
    assert updated["data"]["k1"] == record("k1")


def test_a_job_without_uid_or_run_key_cannot_be_recorded() -> None:
    with pytest.raises(PlannerError, match="job shop/migrate has no run-key annotation or uid"):
        run_record_of(job(uid=""))
    with pytest.raises(PlannerError, match="cannot record the run of migrate"):
        with_run_record(REF, None, run_record_of(job()))


# --- pending runs, outcomes and reserved entries --------------------------------------------------


def decoded(data: dict[str, str], key: str) -> dict[str, Any]:
    return dict(json.loads(base64.b64decode(data[key])))


PENDING_K9 = RunRecord(run_key="k9", namespace="shop", name="migrate", runtime_id="k8s-shop|job|migrate")


def test_the_parent_records_a_job_about_to_be_created_as_pending_over_what_its_run_key_held() -> None:
    live = parent(k9=record("k9", uid="old"), k1=record("k1"))
    wanted = ParentRecord(group_kinds=(), namespaces=(), run_keys=("k1", "k9"), runs=(PENDING_K9,))

    data = parent_manifest(REF, live, wanted)["data"]

    assert decoded(data, "k9") == {
        "name": "migrate",
        "namespace": "shop",
        "runtimeId": "k8s-shop|job|migrate",
    }
    assert data["k1"] == record("k1")


@pytest.mark.parametrize(
    ("held", "expected_uid"),
    [
        pytest.param({}, "u9", id="a live Job's run-key the parent does not hold is recorded"),
        pytest.param({"k9": encode_run_record(PENDING_K9)}, "u9", id="a pending run is confirmed"),
        pytest.param({"k9": record("k9", uid="u1")}, "u1", id="a run already recorded is kept"),
    ],
)
def test_the_parent_records_the_run_of_a_live_job_only_where_it_holds_no_run(
    held: dict[str, str], expected_uid: str
) -> None:
    found = run_record_of(job())
    wanted = ParentRecord(group_kinds=(), namespaces=(), run_keys=("k9",), runs=(found,))

    data = parent_manifest(REF, parent(**held), wanted)["data"]

    assert decoded(data, "k9")["uid"] == expected_uid


def test_parent_writes_keep_planners_reserved_entries_and_drop_unknown_ones() -> None:
    live = parent(
        **{"planner.digest-key": "a2V5", "planner.other": "eA==", "junk": "eA==", "k1": record("k1")}
    )

    data = parent_manifest(REF, live, ParentRecord(group_kinds=(), namespaces=(), run_keys=("k1",)))["data"]

    assert data == {"planner.digest-key": "a2V5", "planner.other": "eA==", "k1": record("k1")}
    assert run_records(live).keys() == {"k1"}


KEPT_CLOSURE = AppliedClosure({"configmap/shop/a": "abababababababab"})
KEPT_KEY = bytes(range(32))
SUPERSET = ParentRecord(group_kinds=("Job.batch",), namespaces=("new",), run_keys=("k9",), runs=(PENDING_K9,))


@pytest.mark.parametrize(
    "write",
    [
        lambda live: parent_manifest(REF, live, SUPERSET),
        lambda live: parent_manifest(REF, live, ParentRecord(group_kinds=(), namespaces=(), run_keys=())),
        lambda live: settled_parent(REF, live, scope=scope("ConfigMap", "shop"), applied=KEPT_CLOSURE),
        lambda live: with_run_record(REF, live, run_record_of(job())),
        lambda live: with_run_outcome(REF, live, run_record_of(job()), RunOutcome(result="succeeded")),
        lambda live: with_digest_key(live, bytes(32)),
    ],
    ids=[
        "the superset written before any member, with a pending run",
        "a parent write that trims every run record",
        "settling after a converged apply",
        "confirming a created Job's run",
        "recording how a Job ended",
        "plan --out asking for a digest key",
    ],
)
def test_every_parent_write_keeps_the_digest_key_and_the_applied_closure(
    write: Callable[[Manifest], Manifest],
) -> None:
    live = with_digest_key(parent(k1=record("k1"), k9=record("k9", uid="u9")), KEPT_KEY)
    live["data"]["planner.applied-closure"] = KEPT_CLOSURE.encoded()

    written = write(live)

    assert digest_key(written) == KEPT_KEY
    assert applied_closure(written) == KEPT_CLOSURE


def test_confirming_a_run_keeps_the_outcome_an_observer_recorded_first() -> None:
    seen = RunRecord(
        run_key="k9", namespace="shop", name="migrate", uid="u9", outcome=RunOutcome(result="succeeded")
    )
    live = parent(k9=encode_run_record(seen))

    assert with_run_record(REF, live, run_record_of(job())) is live


FAILED = RunOutcome(
    result="failed", reason="BackoffLimitExceeded", message="Job has reached the limit", exit_code=3
)


FAILED_U9 = {  # the record of job() with FAILED as its outcome, written out by hand
    "name": "migrate",
    "namespace": "shop",
    "runtimeId": "k8s-shop|job|migrate",
    "uid": "u9",
    "outcome": {
        "result": "failed",
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the limit",
        "exitCode": 3,
    },
}


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        pytest.param(
            encode_run_record(PENDING_K9),
            FAILED_U9,
            id="a pending run gets its uid and outcome",
        ),
        pytest.param(
            record("k9", uid="u9"),
            FAILED_U9,
            id="a run of the same uid gets its outcome",
        ),
        pytest.param(
            record("k9", uid="another"), None, id="the run of another Job of that run-key is left alone"
        ),
        pytest.param(None, None, id="a run-key the parent does not record is left alone"),
    ],
)
def test_an_outcome_is_recorded_only_on_the_run_of_that_job(held: str | None, expected: Any) -> None:
    live = parent(**({"k9": held} if held else {}))

    updated = with_run_outcome(REF, live, run_record_of(job()), FAILED)

    if expected is None:
        assert updated is live
    else:
        assert decoded(updated["data"], "k9") == expected
        assert with_run_outcome(REF, updated, run_record_of(job()), FAILED) is updated  # idempotent


def test_a_record_written_before_outcomes_existed_still_decodes_and_has_none() -> None:
    (old,) = run_records(parent(k1=record("k1"))).values()

    assert old == RunRecord(run_key="k1", namespace="shop", name="migrate", uid="u1")
    assert old.ran and old.outcome is None


def finished(condition: str, reason: str = "", message: str = "") -> Manifest:
    status = {"conditions": [{"type": condition, "status": "True", "reason": reason, "message": message}]}
    return job() | {"status": status}


def failed_pod(created: str, code: int, *, last: bool = False) -> Manifest:
    state = {"terminated": {"exitCode": code, "reason": "Error"}}
    statuses = [{"name": "main", "state": {} if last else state, "lastState": state if last else {}}]
    return {"metadata": {"creationTimestamp": created}, "status": {"containerStatuses": statuses}}


@pytest.mark.parametrize(
    ("obj", "pods", "expected"),
    [
        pytest.param(job(), [], None, id="a running Job has no outcome yet"),
        pytest.param(finished("Complete"), [], RunOutcome(result="succeeded"), id="Complete is success"),
        pytest.param(
            finished("Failed", "BackoffLimitExceeded", "Job has reached the limit"),
            [failed_pod("2026-11-29T10:00:00Z", 1), failed_pod("2026-11-29T10:00:09Z", 3)],
            FAILED,
            id="Failed keeps the reason, the message and the newest pod's exit code",
        ),
        pytest.param(
            finished("Failed", "DeadlineExceeded", "Job was active longer than specified deadline"),
            [failed_pod("2026-11-29T10:00:00Z", 137, last=True)],
            RunOutcome(
                result="failed",
                reason="DeadlineExceeded",
                message="Job was active longer than specified deadline",
                exit_code=137,
            ),
            id="a restarted container's last exit code counts",
        ),
        pytest.param(
            finished("Failed", "BackoffLimitExceeded"),
            [],
            RunOutcome(result="failed", reason="BackoffLimitExceeded"),
            id="without pods there is no exit code to tell",
        ),
    ],
)
def test_how_a_job_ended(obj: Manifest, pods: list[Manifest], expected: RunOutcome | None) -> None:
    assert run_outcome(obj, pods) == expected


def test_a_digest_key_is_added_once_and_never_replaced() -> None:
    key = bytes(range(32))
    keyed = with_digest_key(parent(), key)

    assert digest_key(keyed) == key
    assert with_digest_key(keyed, bytes(32)) is keyed
    assert digest_key(parent()) is None
    assert digest_key(parent(**{"planner.digest-key": "c2hvcnQ="})) is None  # too short to be one


# --- the run-record finalizer ---


def test_a_created_job_holds_the_run_record_finalizer_and_nothing_else_does() -> None:
    assert with_run_finalizer(job())["metadata"]["finalizers"] == ["planner.dev/run-record"]
    kept = job(finalizers=["example.com/keep"])
    assert with_run_finalizer(kept)["metadata"]["finalizers"] == [
        "example.com/keep",
        "planner.dev/run-record",
    ]
    held = with_run_finalizer(job())
    assert with_run_finalizer(held) is held  # once
    unkeyed = job(annotations={})
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert with_run_finalizer(unkeyed) is unkeyed and with_run_finalizer(config_map) is config_map
    assert "finalizers" not in job()["metadata"]  # the rendered manifest is left as it was


def test_the_pods_a_created_job_makes_hold_the_run_record_finalizer_too() -> None:
    """A TTL deletes the Job with Foreground propagation, pods first: they must keep the exit code."""
    template = {"metadata": {"labels": {"app": "migrate"}, "finalizers": ["example.com/keep"]}, "spec": {}}
    created = with_run_finalizer(job() | {"spec": {"backoffLimit": 0, "template": template}})

    assert created["spec"] == {
        "backoffLimit": 0,
        "template": {
            "metadata": {
                "labels": {"app": "migrate"},
                "finalizers": ["example.com/keep", "planner.dev/run-record"],
            },
            "spec": {},
        },
    }
    assert template["metadata"]["finalizers"] == ["example.com/keep"]  # the rendered manifest untouched
    bare = with_run_finalizer(job() | {"spec": {"template": {"spec": {}}}})
    assert bare["spec"]["template"]["metadata"] == {"finalizers": ["planner.dev/run-record"]}


def test_the_finalizer_is_removed_by_a_json_patch_that_tests_its_entry_first() -> None:
    held = job(finalizers=["foregroundDeletion", "planner.dev/run-record", "example.com/keep"])

    assert run_finalizer_removal(held) == [
        {"op": "test", "path": "/metadata/finalizers/1", "value": "planner.dev/run-record"},
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]
    assert holds_run_finalizer(held) and not holds_run_finalizer(job())
    assert run_finalizer_removal(job(finalizers=["foregroundDeletion"])) is None
    assert run_finalizer_removal(job()) is None


def test_a_job_deleted_before_it_finished_ended_as_deleted_and_a_finished_one_as_it_finished() -> None:
    deleting = job(deletionTimestamp="2026-05-01T10:00:00Z")

    assert final_outcome(job()) is None  # running
    assert final_outcome(deleting) == RunOutcome(
        result="failed", reason="Deleted", message="deleted before it finished"
    )
    assert final_outcome(finished("Complete") | {"metadata": deleting["metadata"]}) == RunOutcome(
        result="succeeded"
    )


def test_a_deletion_records_on_the_run_of_that_uid_but_never_confirms_a_pending_run() -> None:
    deleted = RunOutcome(result="failed", reason="Deleted", message="deleted before it finished")
    pending = parent(k9=encode_run_record(PENDING_K9))
    ran = parent(k9=record("k9", uid="u9"))

    assert with_run_outcome(REF, pending, run_record_of(job()), deleted) is pending
    recorded = with_run_outcome(REF, ran, run_record_of(job()), deleted)
    assert decoded(recorded["data"], "k9")["outcome"] == {
        "result": "failed",
        "reason": "Deleted",
        "message": "deleted before it finished",
    }
