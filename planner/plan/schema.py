"""The plan format's JSON Schema, the single source of truth of what a plan file may say.

The wheel ships it as `planner/schemas/plan.schema.json` (pyproject force-includes it); a checkout has it
at `schemas/plan.schema.json`. Both are tried, wheel first, so `planner schema` and the loader agree with
the file the docs are generated from.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA_FILE = "plan.schema.json"
SAVED_PLAN_SCHEMA_FILE = "saved-plan.schema.json"
_REPO_SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


@cache
def schema_text(name: str = SCHEMA_FILE) -> str:
    """A schema exactly as shipped (the plan's: what `planner schema` prints)."""
    packaged = resources.files("planner").joinpath("schemas", name)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (_REPO_SCHEMAS / name).read_text(encoding="utf-8")


def saved_plan_schema() -> dict[str, Any]:
    """The schema a saved plan's file must match before `apply FILE` reads it."""
    loaded = json.loads(schema_text(SAVED_PLAN_SCHEMA_FILE))
    if not isinstance(loaded, dict):  # pragma: no cover - the shipped schema is an object
        raise TypeError("the saved-plan schema is not a JSON object")
    return loaded


@cache
def _schema() -> dict[str, Any]:
    loaded = json.loads(schema_text())
    if not isinstance(loaded, dict):  # pragma: no cover - the shipped schema is an object
        raise TypeError("the plan schema is not a JSON object")
    return loaded


def plan_schema() -> dict[str, Any]:
    """The parsed schema. Shared and cached: callers must not modify it."""
    return _schema()


_ALTERNATIVES = ("oneOf", "anyOf", "allOf", "not", "if", "then", "else")


@cache
def fragment_schema() -> dict[str, Any]:
    """The schema of an imported fragment: the plan's, with no field required anywhere (a fragment may
    set one field of one workload: the merged plan is checked against `plan_schema`). `required` inside
    `oneOf` and the like stays: there it says which alternative a value is, not what it must have."""
    loaded = json.loads(schema_text())
    _drop_required(loaded)
    return dict(loaded)


def _drop_required(node: Any) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("required"), list):
            del node["required"]
        for key, child in node.items():
            if key not in _ALTERNATIVES:
                _drop_required(child)
    elif isinstance(node, list):
        for child in node:
            _drop_required(child)
