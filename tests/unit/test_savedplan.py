"""Saved plans (planner/savedplan.py): what makes one stale, what never does, and telling one apart
from a plan file. Expected values are written by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.savedplan import (
    FORMAT,
    ClusterIdentity,
    closure_digest,
    cluster_mismatch,
    declared_digest,
    is_saved_plan,
    moved_objects,
    read_saved_plans,
    write_saved_plans,
)

DESIRED: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "shop", "labels": {"app": "shop"}},
    "data": {"LOG_LEVEL": "info"},
}
LIVE: dict[str, Any] = {
    **DESIRED,
    "metadata": {**DESIRED["metadata"], "uid": "u1", "resourceVersion": "10", "annotations": {}},
}


def _with_metadata(key: str, values: dict[str, str]) -> dict[str, Any]:
    return {**LIVE, "metadata": {**LIVE["metadata"], key: {**LIVE["metadata"].get(key, {}), **values}}}


@pytest.mark.parametrize(
    ("live", "same"),
    [
        ({**LIVE, "metadata": {**LIVE["metadata"], "resourceVersion": "99", "generation": 4}}, True),
        (_with_metadata("annotations", {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}), True),
        (_with_metadata("annotations", {"deployment.kubernetes.io/revision": "3"}), True),
        ({**LIVE, "status": {"phase": "Whatever"}}, True),
        ({**LIVE, "data": {"LOG_LEVEL": "info", "EXTRA": "x"}}, True),
        (_with_metadata("annotations", {"owner": "someone"}), False),
        (_with_metadata("labels", {"team": "payments"}), False),
        ({**LIVE, "data": {"LOG_LEVEL": "debug"}}, False),
    ],
    ids=[
        "a new resourceVersion and generation keep the digest",
        "kubectl's restartedAt annotation keeps the digest",
        "a controller's revision annotation keeps the digest",
        "a status write keeps the digest",
        "a field the plan does not declare keeps the digest",
        "kubectl annotate changes the digest",
        "kubectl label changes the digest",
        "an edit of a declared field changes the digest",
    ],
)
def test_declared_digest_moves_only_when_someone_moves_the_object(live: dict[str, Any], same: bool) -> None:
    assert (declared_digest(DESIRED, live) == declared_digest(DESIRED, LIVE)) is same


def _observed(*objects: tuple[str, str, str]) -> dict[str, Any]:
    return {"objects": [{"object": o, "uid": u, "digest": d} for o, u, d in objects]}


@pytest.mark.parametrize(
    ("saved", "fresh", "moved"),
    [
        (_observed(("configmap/shop/a", "u1", "d1")), _observed(("configmap/shop/a", "u1", "d1")), []),
        (_observed(("configmap/shop/a", "u1", "d1")), _observed(), [("configmap/shop/a", "deleted")]),
        (_observed(), _observed(("configmap/shop/a", "u1", "d1")), [("configmap/shop/a", "appeared")]),
        (
            _observed(("configmap/shop/a", "u1", "d1")),
            _observed(("configmap/shop/a", "u2", "d1")),
            [("configmap/shop/a", "deleted and created again")],
        ),
        (
            _observed(("configmap/shop/a", "u1", "d1"), ("service/shop/b", "u3", "d3")),
            _observed(("configmap/shop/a", "u1", "d2"), ("service/shop/b", "u3", "d4")),
            [("configmap/shop/a", "changed"), ("service/shop/b", "changed")],
        ),
    ],
    ids=[
        "the same observation moves nothing",
        "an object gone is named deleted",
        "an object that was not there is named appeared",
        "another uid is named deleted and created again",
        "every changed digest is named, in order",
    ],
)
def test_moved_objects_names_each_object_and_what_happened(
    saved: dict[str, Any], fresh: dict[str, Any], moved: list[tuple[str, str]]
) -> None:
    assert moved_objects(saved, fresh) == moved


def test_the_closure_digest_sees_a_secret_value_change_without_holding_it() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"}, "data": {"k": "dmFsdWU="}}
    changed = {**secret, "data": {"k": "b3RoZXI="}}
    assert closure_digest([secret]) != closure_digest([changed])
    assert closure_digest([secret]) == closure_digest([dict(secret)])


@pytest.mark.parametrize(
    ("text", "saved"),
    [
        (json.dumps({"format": FORMAT, "plans": []}), True),
        ("apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\n", False),
        (json.dumps({"apiVersion": "planner.dev/v1", "kind": "Plan", "metadata": {"name": "shop"}}), False),
        ("{not json", False),
    ],
    ids=[
        "JSON with the saved-plan format is a saved plan",
        "a YAML plan file is not",
        "a JSON plan file is not",
        "a broken JSON file is not",
    ],
)
def test_a_saved_plan_is_told_from_a_plan_file_by_its_content(tmp_path: Path, text: str, saved: bool) -> None:
    path = tmp_path / "file"
    path.write_text(text)
    assert is_saved_plan(path) is saved


A = ClusterIdentity(uid="5f1e-a", server="https://a.example:6443")


@pytest.mark.parametrize(
    ("saved", "here", "refusal"),
    [
        (A, ClusterIdentity(uid="5f1e-a", server="https://a-lb.example:6443"), None),
        (
            A,
            ClusterIdentity(uid="77c0-b", server="https://a.example:6443"),
            "plan was made against cluster 5f1e-a at https://a.example:6443; "
            "this is cluster 77c0-b at https://a.example:6443",
        ),
        (A, ClusterIdentity(uid="", server="https://a.example:6443"), None),
        (
            A,
            ClusterIdentity(uid="", server="https://b.example:6443"),
            "plan was made against cluster 5f1e-a at https://a.example:6443; "
            "this is cluster (uid unreadable) at https://b.example:6443",
        ),
        (
            None,
            A,
            "the saved plan does not say which cluster it was made against; plan again",
        ),
    ],
    ids=[
        "the same uid through another URL is the same cluster",
        "another uid at the same URL is another cluster (rebuilt behind the same name)",
        "without a readable uid the same URL passes",
        "without a readable uid another URL is refused",
        "a saved plan that records no cluster is refused",
    ],
)
def test_a_saved_plan_applies_only_to_the_cluster_it_was_made_against(
    saved: ClusterIdentity | None, here: ClusterIdentity, refusal: str | None
) -> None:
    assert cluster_mismatch(saved, here) == refusal


def test_the_cluster_travels_with_the_plans_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "shop.plan.json"
    write_saved_plans(path, [{"plan": "shop"}], cluster=A)

    assert json.loads(path.read_text())["cluster"] == {"uid": "5f1e-a", "server": "https://a.example:6443"}
    assert read_saved_plans(path) == ([{"plan": "shop"}], A)
