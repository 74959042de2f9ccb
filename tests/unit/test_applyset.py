"""planner.applyset: the parent Secret's scope (superset while applying, narrowed after converging), its
ownership checks, the run record and the applied closure, as pure functions over hand-built parents."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest

from planner.applyset import (
    AppliedClosure,
    ParentRecord,
    Scope,
    applied_closure,
    applyset_id,
    listed_scope,
    narrowed,
    parent_manifest,
    parent_ref,
    run_record_of,
    settled_parent,
    with_run_record,
)
from planner.errors import OwnershipError, PlannerError
from planner.objects import Manifest, ObjectRef

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
    packed = base64.b64decode(settled["data"]["applied-closure"])
    assert json.loads(gzip.decompress(packed)) == {
        "configmap/shop/a": "abababababababab",
        "deployment/shop/web": "cdcdcdcdcdcdcdcd",
    }
    assert applied_closure(settled) == closure


def test_the_applied_closure_survives_the_parent_write_that_trims_run_records() -> None:
    closure = AppliedClosure.of([hashed("ConfigMap", "a", "ab" * 32)])
    live = parent(**{"applied-closure": closure.encoded(), "k1": record("k1"), "k2": record("k2")})

    written = parent_manifest(REF, live, ParentRecord(group_kinds=(), namespaces=(), run_keys=("k2",)))

    assert written["data"] == {"applied-closure": closure.encoded(), "k2": record("k2")}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, None),
        ({"applied-closure": "not base64!"}, None),
        ({"applied-closure": base64.b64encode(b"not gzip").decode()}, None),
        ({"applied-closure": base64.b64encode(gzip.compress(b"[1, 2]")).decode()}, None),
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
