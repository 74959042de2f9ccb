"""`server_predicted`: a server dry run's result replaces the client-side field prediction."""

from __future__ import annotations

import copy

import pytest

from planner.diff import Change, FieldChange, server_predicted
from planner.objects import ObjectRef

LIVE = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "10", "generation": 1},
    "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "web:1"}]}}},
    "status": {"replicas": 2},
}
REF = ObjectRef(group="apps", kind="Deployment", namespace="shop", name="web")


def result_with(**changes: object) -> dict:  # type: ignore[type-arg]
    result = copy.deepcopy(LIVE)
    result["metadata"] |= {
        "resourceVersion": "11",
        "generation": 2,
        "managedFields": [{"manager": "planner"}],
    }
    result["status"] = {"replicas": 1}
    result["spec"] |= changes
    return result


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (result_with(), ()),
        (result_with(replicas=3), (FieldChange(path=".spec.replicas", before=2, after=3),)),
        (
            {**result_with(), "spec": {k: v for k, v in LIVE["spec"].items() if k != "replicas"}},  # type: ignore[attr-defined]
            (FieldChange(path=".spec.replicas", before=2, after=None),),
        ),
    ],
    ids=[
        "bookkeeping alone (resourceVersion, generation, managedFields, status) is no change",
        "a changed field shows old and new",
        "a field the server dropped shows as removed",
    ],
)
def test_server_result_becomes_the_fields(result: dict, expected: tuple[FieldChange, ...]) -> None:  # type: ignore[type-arg]
    change = Change(
        ref=REF, action="update", desired={}, live=LIVE, fields=(FieldChange(path="x", before=1, after=2),)
    )
    predicted = server_predicted(change, result)
    assert predicted.fields == expected
    assert predicted.reason == "server dry run"


def test_secret_values_from_the_server_stay_masked() -> None:
    live = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "data": {"password": "b2xk"}}
    result = {**live, "data": {"password": "bmV3"}}
    ref = ObjectRef(group="", kind="Secret", namespace="shop", name="db")
    predicted = server_predicted(Change(ref=ref, action="update", desired={}, live=live), result)
    assert "b2xk" not in repr(predicted.fields) and "bmV3" not in repr(predicted.fields)
