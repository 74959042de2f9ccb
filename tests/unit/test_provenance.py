"""Tracing a changed field back to the plan value that set it (#42 item 3): the file, line and column
of the one scalar under the object's plan entry with the new value, the field's own key name breaking
ties; no origin when none or several match, and never for a secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planner.changeset import Change, ChangeSet, FieldChange
from planner.objects import ObjectRef
from planner.plan import Plan, load_plans
from planner.plan.source import plain_scalars
from planner.provenance import last_key, origin_path, with_origins

BASE = """\
workloads:
  - name: web
    image: web:1
    port: 8080
    expose: true
    env: {PORT: "8080", MODE: fast}
    replicas: 2
    ingress: {host: shop.example.com}
manifests:
  - apiVersion: v1
    kind: Secret
    metadata: {name: token}
    stringData: {token: hunter2}
"""
PROD = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {name: shop, namespace: shop}
imports: [base.yaml]
secrets:
  - name: creds
    data: {password: swordfish}
workloads:
  - name: web
    replicas: 5
    ingress: {host: prod.example.com}
"""


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    (tmp_path / ".git").mkdir()
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "prod.yaml").write_text(PROD)
    return load_plans([tmp_path / "prod.yaml"]).plans[0]


def update(kind: str, name: str, *fields: FieldChange) -> Change:
    return Change(
        ref=ObjectRef(group="", kind=kind, namespace="shop", name=name),
        action="update",
        desired={},
        live={},
        fields=fields,
    )


def traced(plan: Plan, *changes: Change) -> list[list[str | None]]:
    changeset = ChangeSet(plan="shop", namespace="shop", changes=changes)
    return [[f.origin for f in change.fields] for change in with_origins(changeset, plan).changes]


def test_each_value_is_traced_to_the_file_that_set_it(plan: Plan, tmp_path: Path) -> None:
    deployment = update(
        "Deployment",
        "web",
        FieldChange(path=".spec.replicas", before=2, after=5),
        FieldChange(path=".spec.template.spec.containers[name=web].image", before="web:0", after="web:1"),
        FieldChange(
            path=".spec.template.spec.containers[name=web].ports[0].containerPort", before=80, after=8080
        ),
    )
    ingress = update(
        "Ingress", "web", FieldChange(path=".spec.rules[0].host", before="a", after="prod.example.com")
    )
    assert traced(plan, deployment, ingress) == [
        [f"{tmp_path}/prod.yaml:10:5", f"{tmp_path}/base.yaml:3:5", f"{tmp_path}/base.yaml:4:5"],
        [f"{tmp_path}/prod.yaml:11:15"],
    ]


def test_no_origin_when_no_single_value_set_it(plan: Plan) -> None:
    deployment = update(
        "Deployment",
        "web",
        FieldChange(path=".spec.minReadySeconds", before=0, after=7),  # nothing in the plan says 7
        FieldChange(
            path=".spec.template.spec.containers[name=web].env[name=MODE].value", before="fast", after="slow"
        ),
        FieldChange(path=".spec.paused", before=True, after=None),  # the plan drops it
        FieldChange(path=".spec.selector", before={}, after={"a": "b"}),  # not a scalar
    )
    unplanned = update("Deployment", "other", FieldChange(path=".spec.replicas", before=1, after=5))
    assert traced(plan, deployment, unplanned) == [[None, None, None, None], [None]]


def test_secret_values_are_never_kept_to_trace(plan: Plan) -> None:
    assert plain_scalars({"secrets": [{"name": "a", "data": {"k": "v"}}]}) == {}
    assert "hunter2" not in plan.source.scalars.values()
    assert "swordfish" not in plan.source.scalars.values()
    assert plan.source.scalars["manifests[0].metadata.name"] == "token"
    sandbox = {"sandboxes": [{"name": "box", "secretEnv": {"TOKEN": "t"}, "image": "i"}]}
    assert plain_scalars(sandbox) == {"sandboxes[0].name": "box", "sandboxes[0].image": "i"}


@pytest.mark.parametrize(
    ("field", "candidates", "expected"),
    [
        (".spec.replicas", [("w[0].replicas", 3), ("w[0].min", 3)], "w[0].replicas"),
        (".spec.replicas", [("w[0].max", 3), ("w[0].min", 3)], None),
        (".spec.replicas", [("w[0].replicas", "3")], None),  # a string is not the integer 3
        (".spec.paused", [("w[0].paused", 1)], None),  # nor is 1 True
        (".data.LOG_LEVEL", [("c[0].data.LOG_LEVEL", "warn")], "c[0].data.LOG_LEVEL"),
    ],
)
def test_origin_path_picks_the_one_matching_value(
    field: str, candidates: list[tuple[str, Any]], expected: str | None
) -> None:
    after = True if field == ".spec.paused" else ("warn" if "LOG" in field else 3)
    assert origin_path(FieldChange(path=field, before=None, after=after), candidates) == expected


@pytest.mark.parametrize(
    ("path", "key"),
    [
        (".spec.template.spec.containers[name=web].image", "image"),
        ("workloads[0].env.PORT", "PORT"),
        ('.metadata.annotations["planner.dev/x"]', "planner.dev/x"),
        ("workloads[3]", "workloads"),
        (".spec.template.spec.containers[name=web]", "containers"),
        (".spec.rules[0].host", "host"),
    ],
)
def test_last_key(path: str, key: str) -> None:
    assert last_key(path) == key
