"""The example plans in `plans/`, loaded by the real loader and rendered: every manifest passes the
Kubernetes schema, the objects are the ones the examples promise, and the hashes are blind to how the
YAML was written (key order, whitespace, comments)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planner.plan import Plan, load_plans
from planner.render import render
from tests.paths import PLANS
from tests.unit.render_support import find, kinds_and_names, validate


def example(name: str) -> list[dict[str, Any]]:
    (plan,) = load_plans([PLANS / f"{name}.yaml"]).plans
    manifests = render(plan, "default")
    validate(manifests)
    return manifests


EXAMPLES = [
    (
        "web-stack",
        [
            "ConfigMap/web-config",
            "Secret/db-credentials",
            "Job/migrate",
            "Deployment/web",
            "Service/web-svc",
        ],
    ),
    ("pod-fidelity", ["ConfigMap/api-config", "Secret/api-token", "Deployment/api", "Service/api-svc"]),
    (
        "sandboxes",
        [
            "Secret/alice-env",
            "PersistentVolumeClaim/alice-rootfs-g1",
            "PersistentVolumeClaim/alice-workspace",
            "Pod/alice",
            "PersistentVolumeClaim/bob-rootfs-g1",
            "PersistentVolumeClaim/bob-workspace",
            "PersistentVolumeClaim/alice-experiment-rootfs-g1",
            "PersistentVolumeClaim/alice-experiment-workspace",
            "Pod/alice-experiment",
            "PersistentVolumeClaim/carol-rootfs-g2",
            "PersistentVolumeClaim/carol-workspace",
            "Pod/carol",
        ],
    ),
]


@pytest.mark.parametrize(
    ("name", "objects"),
    EXAMPLES,
    ids=[f"{name} renders valid manifests in the documented order" for name, _ in EXAMPLES],
)
def test_example_plans_render_valid_manifests(name: str, objects: list[str]) -> None:
    assert kinds_and_names(example(name)) == objects


def test_the_web_stack_waits_for_its_migration_job() -> None:
    web = find(example("web-stack"), "Deployment", "web")
    assert (
        web["metadata"]["annotations"]["config.kubernetes.io/depends-on"]
        == "batch/namespaces/shop/Job/migrate"
    )


def test_the_web_stack_secret_carries_the_password_file() -> None:
    secret = find(example("web-stack"), "Secret", "db-credentials")
    assert set(secret["data"]) == {"username", "password"}
    assert secret["data"]["username"] == "c2hvcA=="  # base64("shop")


def test_the_forked_sandbox_clones_alice() -> None:
    manifests = example("sandboxes")
    rootfs = find(manifests, "PersistentVolumeClaim", "alice-experiment-rootfs-g1")
    assert rootfs["spec"]["dataSource"] == {"kind": "PersistentVolumeClaim", "name": "alice-rootfs-g1"}


def test_the_paused_sandbox_is_marked_on_its_workspace() -> None:
    workspace = find(example("sandboxes"), "PersistentVolumeClaim", "bob-workspace")
    assert workspace["metadata"]["annotations"]["planner.dev/sandbox-state"] == "paused"


PLAN_TEXT = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {name: shop, namespace: shop}
configMaps:
  - name: cfg
    data: {a: "1", b: "2"}
workloads:
  - name: web
    image: web:1
    env: {A: "1", B: "2"}
    labels: {x: "1", y: "2"}
"""

REWRITTEN_TEXT = """\
# The same plan, keys reordered, with comments and block style.
workloads:
  - labels:
      y: "2"
      x: "1"     # order of labels
    env:
      B: "2"
      A: "1"
    image:   web:1
    name: web
kind: Plan
configMaps:
  - data:
      b: "2"
      a: "1"
    name: cfg
metadata:
  namespace: shop
  name: shop
apiVersion: planner.dev/v1
"""


def _load_text(directory: Path, text: str) -> Plan:
    path = directory / "plan.yaml"
    path.write_text(text)
    (plan,) = load_plans([path]).plans
    return plan


def test_key_order_whitespace_and_comments_change_no_hash(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = render(_load_text(tmp_path / "a", PLAN_TEXT), "default")
    second = render(_load_text(tmp_path / "b", REWRITTEN_TEXT), "default")
    hashes = [[m["metadata"]["annotations"]["planner.dev/hash"] for m in ms] for ms in (first, second)]
    assert hashes[0] == hashes[1]
    assert len(hashes[0]) == 2
