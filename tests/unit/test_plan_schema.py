"""The schema `planner schema` prints is the repository's file, and a valid draft-07 schema."""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft7Validator

from planner.plan.schema import plan_schema, schema_text
from planner.plan.schema_check import check_schema
from planner.plan.source import ParsedFile, parse_plan_text
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


def _patterns(value: object) -> list[str]:
    if isinstance(value, dict):
        own = [value["pattern"]] if isinstance(value.get("pattern"), str) else []
        return own + [found for item in value.values() for found in _patterns(item)]
    if isinstance(value, list):
        return [found for item in value for found in _patterns(item)]
    return []


def test_every_white_space_class_in_a_pattern_is_inside_brackets() -> None:
    """The compiled validator's patterns have `\\s` widened to Python's inside a character class
    (`planner.plan.schema_check`), which is right only there."""
    patterns = _patterns(plan_schema())
    assert len(patterns) > 50
    outside = [p for p in patterns if "\\s" in re.sub(r"\[(?:\\.|[^\]\\])*\]", "", p)]
    assert outside == []


PLAN_HEAD = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop}\n"


@pytest.mark.parametrize(
    ("text", "paths"),
    [
        (PLAN_HEAD + "workloads:\n  - {name: web, image: 'nginx:1.27', replicas: 3}\n", []),
        # Python's \s matches U+001C (a Rust regex's does not): refused as before.
        (
            PLAN_HEAD + 'source: {git: {url: "https://example.com/a\\x1cb", path: plan.yaml}}\n',
            ["source.git.url"],
        ),
        # An integer beyond 64 bits, which the compiled validator cannot take: jsonschema judges it.
        (
            PLAN_HEAD + f"workloads:\n  - {{name: web, image: 'nginx:1.27', port: {2**70}}}\n",
            ["workloads[0].port"],
        ),
        # `$` ends the text only in the compiled validator; Python's also matches before a final newline.
        (PLAN_HEAD + 'workloads:\n  - {name: "web\\n", image: "nginx:1.27"}\n', []),
        # jsonschema-rs takes a float with no fraction for an integer; YAML and the API do not.
        (
            PLAN_HEAD + "workloads:\n  - {name: web, image: 'nginx:1.27', replicas: 2.0}\n",
            ["workloads[0].replicas"],
        ),
        # An integer float elsewhere (a raw manifest's free-form spec) is not refused for being one.
        (PLAN_HEAD + "manifests:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, x: 2.0}\n", []),
    ],
    ids=[
        "valid",
        "a U+001C in a git URL",
        "a port of 2**70",
        "a name ending in a newline",
        "replicas 2.0",
        "a float in a manifest",
    ],
)
def test_the_fast_path_never_accepts_what_jsonschema_refuses(text: str, paths: list[str]) -> None:
    parsed = parse_plan_text("plan.yaml", text)
    assert isinstance(parsed, ParsedFile)
    assert [d.path for d in check_schema(parsed).diagnostics] == paths


def test_an_integer_the_api_keeps_in_32_bits_is_refused_beyond_them_saying_so() -> None:
    text = (
        PLAN_HEAD
        + "workloads:\n  - {name: web, image: 'nginx:1.27', replicas: 2147483648, user: 2147483648}\n"
    )
    parsed = parse_plan_text("plan.yaml", text)
    assert isinstance(parsed, ParsedFile)
    assert [(d.path, d.message) for d in check_schema(parsed).diagnostics] == [
        (
            "workloads[0].replicas",
            "expected at most 2147483647, found integer 2147483648 (the API stores it as a 32-bit integer)",
        )
    ]  # `user` is runAsUser, an int64: 2**31 is a valid uid
