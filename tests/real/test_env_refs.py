"""Env from Secrets and ConfigMaps on a real kube-apiserver: what `planner render` writes passes
`kubectl apply --dry-run=server --validate=strict`; applied, with a Secret made outside the plan, a
second plan finds nothing to do (the server's defaults, such as a fieldRef's apiVersion or a
resourceFieldRef's divisor spelt as it keeps it, read as no change, and the digest key was kept); rotating the plan Secret rolls the Deployment to a new
ReplicaSet, and the plan says why."""

from __future__ import annotations

import json
from pathlib import Path

from tests.plan_texts import web_env_plan
from tests.real.conftest import Runner, write_plan


def test_env_references_are_accepted_strictly_and_a_rotated_secret_rolls_the_deployment(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    made = kubectl("create", "secret", "generic", "vault-token", "--from-literal=token=abc", "-n", namespace)
    assert made.returncode == 0, made.stderr
    plan = write_plan(tmp_path, web_env_plan(namespace, "first-password"))
    rendered = planner("render", str(plan), "--show-secrets")
    assert rendered.returncode == 0, rendered.stderr
    dry_run = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=rendered.stdout)
    assert dry_run.returncode == 0, dry_run.stderr

    applied = planner("apply", str(plan), "--timeout", "180s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    again = planner("plan", "--detailed-exitcode", str(plan))
    assert again.returncode == 0, again.stdout + again.stderr

    plan.write_text(web_env_plan(namespace, "second-password"))
    planned = planner("plan", str(plan))
    assert "rolls because secret db-credentials changed" in planned.stdout, planned.stdout + planned.stderr
    assert "second-password" not in planned.stdout + planned.stderr
    rolled = planner("apply", str(plan), "--timeout", "180s")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    listed = kubectl("get", "replicasets", "-l", "app=web", "-n", namespace, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["items"]) == 2
