"""An object that drifted and has a pending change is counted as both, and every format names the
foreign field, its value and its writer (issue 39, item 7): `kubectl set env` changed a variable the plan
declares, and the plan changed the image since."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, write_plan


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def web_plan(namespace: str, image: str) -> str:
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "workloads:\n"
        f"  - name: web\n    image: '{image}'\n    env: {{DB_HOST: db.internal}}\n"
        "  - name: api\n    image: nginx:1.27\n"
    )


def test_a_drifted_object_with_a_pending_change_is_drift_too_in_every_format(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    first = planner("apply", str(write_plan(tmp_path, web_plan(namespace, "nginx:1.27"))), "--timeout", "60s")
    assert first.returncode == 0, first.stdout + first.stderr
    edited = kubectl("set", "env", "deployment/web", "-n", namespace, "DB_HOST=attacker")
    assert edited.returncode == 0, edited.stderr
    plan = write_plan(tmp_path, web_plan(namespace, "nginx:1.28"))

    text = planner("plan", str(plan)).stdout
    assert "(1 drift, 1 pending)" in text, text
    assert f"~ update deployment/{namespace}/web (changed outside the plan by kubectl-set; drift)" in text
    assert '"attacker" → "db.internal" (now owned by kubectl-set)' in text, text

    records = [json.loads(line) for line in planner("plan", str(plan), "-o", "json").stdout.splitlines()]
    (web,) = [r for r in records if r.get("object") == f"deployment/{namespace}/web"]
    assert (web["cause"], web["drift"]) == ("pending", True)
    foreign = [f for f in web["fields"] if f.get("manager")]
    assert [(f["before"], f["after"], f["manager"]) for f in foreign] == [
        ("attacker", "db.internal", "kubectl-set")
    ]
    assert (records[-1]["drift"], records[-1]["pending"]) == (1, 1)

    markdown = planner("plan", str(plan), "-o", "markdown").stdout
    assert f"| `~` | update | drift, pending | `deployment/{namespace}/web` |" in markdown, markdown
    assert "(now owned by kubectl-set)" in markdown and "attacker" in markdown

    check = planner("reconcile", "--check", str(plan))
    assert check.returncode == 2, check.stdout + check.stderr
    assert "1 drift, 1 pending" in check.stdout and "drift+pending" in check.stdout, check.stdout
