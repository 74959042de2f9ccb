"""On a real control plane, a retried apply of a plan whose Deployment can never be scheduled fails
with kube-scheduler's reason although it writes nothing; `plan --detailed-exitcode` exits 2 and
`reconcile --check` fails (issue 39, item 1; the embedded twin is tests/e2e/test_retried_apply.py)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_retried_apply import retried_apply_fails
from tests.real.conftest import Runner


def test_a_retried_apply_of_an_application_that_is_down_fails_with_the_reason(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = retried_apply_fails(planner, namespace, tmp_path, "5s")
    rollout = kubectl("rollout", "status", "deployment/api", "-n", namespace, "--timeout=1s")
    assert rollout.returncode != 0, rollout.stdout  # kubectl agrees: it has not rolled out
    planned = planner("plan", "--detailed-exitcode", str(plan))
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "1 not ready" in planned.stdout, planned.stdout
    check = planner("reconcile", "--check", str(plan))
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"not ready: deployment {namespace}/api" in check.stdout, check.stdout
