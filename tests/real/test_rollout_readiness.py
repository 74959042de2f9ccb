"""A 1-replica Deployment updated to an image that never pulls, on a real control plane: the real
Deployment controller surges a new pod while the old one keeps serving (replicas=2, updated=1, ready=1),
`planner apply` fails with the reason once its timeout passes and skips what depends on it, and real
kubectl's `rollout status` agrees that the rollout has not finished.
"""

from __future__ import annotations

from pathlib import Path

from tests.real.conftest import Runner, http, write_plan
from tests.realplane import RealCluster

BROKEN = "    podAnnotations: {sim.planner.dev/image-pull-error: 'manifest unknown'}\n"


def rollout_plan(namespace: str, *, image: str, after: str) -> str:
    broken = BROKEN if image != "nginx:1.27" else ""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: rollout, namespace: {namespace}}}\n"
        "workloads:\n"
        f"  - name: web\n    image: '{image}'\n    replicas: 1\n{broken}"
        f"  - name: after\n    image: nginx:1.27\n    env: {{VERSION: '{after}'}}\n    dependsOn: [web]\n"
    )


def test_a_failed_update_fails_the_apply_with_its_reason_and_skips_its_dependents(
    planner: Runner, kubectl: Runner, cluster: RealCluster, namespace: str, tmp_path: Path
) -> None:
    good = rollout_plan(namespace, image="nginx:1.27", after="1")
    first = planner("apply", str(write_plan(tmp_path, good)), "--timeout", "120s")
    assert first.returncode == 0, first.stdout + first.stderr

    broken = rollout_plan(namespace, image="web:nope", after="2")
    result = planner("apply", str(write_plan(tmp_path, broken)), "--timeout", "10s")

    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    failed = [line for line in lines if line.startswith(f"  failed wait-ready deployment/{namespace}/web: ")]
    assert failed, lines
    assert "timed out after 10s waiting until ready: " in failed[0], failed
    assert "ImagePullBackOff" in failed[0] or "ErrImagePull" in failed[0], failed
    assert (
        f"  skipped apply deployment/{namespace}/after: wait-ready deployment/{namespace}/web failed" in lines
    )
    status, after = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/after")
    assert status == 200, after
    assert after["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "VERSION", "value": "1"}]
    status, web = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert (web["status"]["replicas"], web["status"]["updatedReplicas"], web["status"]["readyReplicas"]) == (
        2,
        1,
        1,
    )

    rollout = kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=1s")
    assert rollout.returncode != 0, rollout.stdout  # kubectl agrees: the rollout has not finished
    again = planner("plan", "--detailed-exitcode", str(write_plan(tmp_path, broken)))
    assert again.returncode == 2, again.stdout + again.stderr  # `after` is still to be updated
