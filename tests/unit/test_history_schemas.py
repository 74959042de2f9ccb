"""What `history -o json` and `diff-generations -o json` print validates against their documented
schemas (`schemas/history.schema.json`, `schemas/generations-diff.schema.json`), and the schemas refuse
what those commands never say."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from planner.app.history import GenerationDiff, History
from planner.generations import Generation, Listed, diff_closures
from planner.output.history_table import diff_json, history_json
from planner.state.applyset import CurrentGeneration
from tests.paths import REPO
from tests.unit.test_generations import deployment, generation, rootfs, secret


def validator(name: str) -> jsonschema.Draft7Validator:
    schema = json.loads((REPO / "schemas" / name).read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(name: str, document: dict[str, Any]) -> list[str]:
    return [error.message for error in validator(name).iter_errors(document)]


def listed(number: int, *, back: int | None = None, result: str = "converged") -> Listed:
    return Listed(
        number=number,
        result=result,
        started="2026-12-01T08:58:17Z",
        revision="9f1c2ab4e6d1" if number > 1 else "",
        who="alice@laptop" if number > 1 else "",
        changes="2 updated, 1 deleted",
        rolled_back_from=back,
    )


def history_document() -> dict[str, Any]:
    shown = History(
        plan="shop",
        namespace="shop",
        current=CurrentGeneration(3, "converged"),
        generations=[listed(1), listed(2, result="failed"), listed(3, back=1)],
    )
    document: dict[str, Any] = json.loads(history_json(shown))
    return document


def diff_document(old: Generation, new: Generation) -> dict[str, Any]:
    compared = GenerationDiff(
        plan="shop", namespace="shop", old=old, new=new, objects=diff_closures(old, new)
    )
    document: dict[str, Any] = json.loads(diff_json(compared))
    return document


def shop_diff() -> dict[str, Any]:
    before = generation(1, deployment("web", "shop:1"), deployment("worker", "w:1"), secret("YQ=="))
    after = generation(3, deployment("web", "shop:2", replicas=3), deployment("api", "a:1"), secret("Yg=="))
    return diff_document(before, after)


def test_a_history_listing_validates_nulls_and_a_rollback_included() -> None:
    document = history_document()
    assert (
        document["generations"][0]["revision"] is None and document["generations"][2]["rolledBackFrom"] == 1
    )
    assert errors("history.schema.json", document) == []
    empty = json.loads(history_json(History(plan="shop", namespace="shop", current=None, generations=[])))
    assert errors("history.schema.json", empty) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("result", "pending"), ("generation", 0), ("started", "yesterday"), ("rolledBackFrom", "1")],
)
def test_the_history_schema_refuses_what_history_never_says(field: str, value: Any) -> None:
    document = history_document()
    document["generations"][0][field] = value
    assert errors("history.schema.json", document) != []


def test_a_closure_diff_validates_and_a_rootfs_going_back_carries_its_note() -> None:
    document = shop_diff()
    assert {o["change"] for o in document["objects"]} == {"added", "changed", "removed"}
    assert errors("generations-diff.schema.json", document) == []
    back = diff_document(generation(2, rootfs(2)), generation(1, rootfs(1)))
    assert back["objects"][0]["note"] == "disk contents are not restored"
    assert errors("generations-diff.schema.json", back) == []


def test_the_diff_schema_refuses_a_secret_with_fields_and_an_unknown_change() -> None:
    document = shop_diff()
    creds = next(o for o in document["objects"] if o["object"] == "secret/shop/creds")
    creds["fields"] = [{"path": ".data.PASSWORD", "before": "***", "after": "***"}]
    assert errors("generations-diff.schema.json", document) != []
    moved = shop_diff()
    moved["objects"][0]["change"] = "moved"
    assert errors("generations-diff.schema.json", moved) != []
