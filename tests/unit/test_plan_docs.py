"""docs/plan-format.md is generated from the schema and must not drift from it."""

from __future__ import annotations

import re

import pytest

from planner.plan.docs import generate
from planner.plan.schema import plan_schema
from tests.paths import REPO

DOC = REPO / "docs" / "plan-format.md"


def test_the_committed_doc_is_what_the_schema_generates() -> None:
    assert DOC.read_text(encoding="utf-8") == generate(), "run `make docs` to regenerate docs/plan-format.md"


def test_every_field_of_the_schema_has_a_description_and_an_example() -> None:
    missing = [
        path
        for path, field in _fields(plan_schema(), "")
        if "description" not in field or not field.get("examples")
    ]
    assert missing == []


def test_every_field_name_of_the_schema_appears_in_the_doc() -> None:
    documented = set(re.findall(r"^\| `([^`]+)` \|", generate(), flags=re.MULTILINE))
    leaves = {path.rsplit(".", 1)[-1] for path, _ in _fields(plan_schema(), "")}
    assert {leaf for leaf in leaves if not any(row.endswith(leaf) for row in documented)} == set()


@pytest.mark.parametrize(
    "rule",
    [
        "a plan that omits metadata.namespace belongs to whatever namespace it is applied to",
        "**one** trailing line break",
        "| `configMap: NAME` | `cm-NAME` |",
        # what test_plan_as_object's kustomize test shows `planner build` doing (it refused it once)
        "`planner build` renders the directory\n  and inlines its objects under `manifests:`",
    ],
    ids=[
        "the namespace rule is stated",
        "the secret file newline rule is stated",
        "volume naming is tabled",
        "build inlines kustomize",
    ],
)
def test_the_doc_states_the_loader_rules(rule: str) -> None:
    assert rule.lower() in generate().lower()


def _fields(node: dict[str, object], prefix: str) -> list[tuple[str, dict[str, object]]]:
    """(path, schema) of every property in the schema, definitions included (not valueFrom internals)."""
    found: list[tuple[str, dict[str, object]]] = []
    properties = node.get("properties", {})
    assert isinstance(properties, dict)
    for name, field in properties.items():
        if "$ref" in field:
            continue
        found.append((f"{prefix}{name}", field))
        found += _fields(field, f"{prefix}{name}.")
        items = field.get("items")
        if isinstance(items, dict):
            found += _fields(items, f"{prefix}{name}[].")
    definitions = node.get("definitions", {})
    assert isinstance(definitions, dict)
    for name, definition in definitions.items():
        if name != "secretValue":
            found += _fields(definition, f"{name}.")
    return found
