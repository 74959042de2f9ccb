"""The schema `planner schema` prints is the repository's file, and a valid draft-07 schema."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft7Validator

from planner.plan.schema import plan_schema, schema_text
from tests.paths import REPO

SCHEMA_FILE = REPO / "schemas" / "plan.schema.json"


def test_schema_text_is_the_schema_file() -> None:
    assert schema_text() == SCHEMA_FILE.read_text(encoding="utf-8")


def test_the_schema_is_valid_draft_07() -> None:
    Draft7Validator.check_schema(plan_schema())
    assert plan_schema()["$schema"] == "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    ("document", "valid"),
    [
        ({"apiVersion": "planner.dev/v1", "kind": "Plan", "metadata": {"name": "shop"}}, True),
        ({"apiVersion": "planner.dev/v1", "kind": "Plan", "metadata": {"name": "Shop"}}, False),
        ({"apiVersion": "planner.dev/v2", "kind": "Plan", "metadata": {"name": "shop"}}, False),
    ],
    ids=["the smallest plan is valid", "an upper-case name is not", "another apiVersion is not"],
)
def test_the_schema_accepts_and_rejects(document: dict[str, object], valid: bool) -> None:
    assert Draft7Validator(json.loads(schema_text())).is_valid(document) is valid
