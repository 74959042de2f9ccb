"""A Deployment update that never rolls out is never reported ready: `planner apply` waits as
`kubectl rollout status` would, fails with the reason when its timeout passes, and skips what depends
on the Deployment, at 1, 2 and 3 replicas under the default and custom rollout strategies.

The new pods' image never pulls (`sim.planner.dev/image-pull-error`), so the old pods keep serving: at
one replica with the default strategy the Deployment then reports replicas=2, updatedReplicas=1,
readyReplicas=1, which a check of ready against wanted counts alone takes for a finished rollout.
Real kubectl judges the same object, so planner and kubectl are seen to agree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, http, write_plan

STRATEGIES = {
    "default": "",
    "surge-0": "    strategy: {maxSurge: 0, maxUnavailable: 1}\n",
    "unavailable-0": "    strategy: {type: RollingUpdate, maxSurge: 1, maxUnavailable: 0}\n",
    "recreate": "    strategy: {type: Recreate}\n",
}
BROKEN = "    podAnnotations: {sim.planner.dev/image-pull-error: 'manifest unknown'}\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def rollout_plan(namespace: str, *, replicas: int, strategy: str, image: str, after: str) -> str:
    """`web` at `image` (broken unless it is the good one) and `after`, which depends on it."""
    broken = BROKEN if image != "nginx:1.27" else ""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: rollout, namespace: {namespace}}}\n"
        "workloads:\n"
        f"  - name: web\n    image: '{image}'\n    replicas: {replicas}\n"
        f"{STRATEGIES[strategy]}{broken}"
        f"  - name: after\n    image: nginx:1.27\n    env: {{VERSION: '{after}'}}\n    dependsOn: [web]\n"
    )


@pytest.mark.parametrize(
    ("replicas", "strategy"),
    [
        (1, "default"),
        (2, "default"),
        (3, "default"),
        (1, "surge-0"),
        (2, "unavailable-0"),
        (3, "surge-0"),
        (1, "recreate"),
    ],
)
def test_a_failed_update_fails_the_apply_with_its_reason_and_skips_its_dependents(
    planner: Runner,
    kubectl: Runner,
    cluster: ClusterHandle,
    namespace: str,
    tmp_path: Path,
    replicas: int,
    strategy: str,
) -> None:
    good = rollout_plan(namespace, replicas=replicas, strategy=strategy, image="nginx:1.27", after="1")
    first = planner("apply", str(write_plan(tmp_path, good)), "--timeout", "60s")
    assert first.returncode == 0, first.stdout + first.stderr

    broken = rollout_plan(namespace, replicas=replicas, strategy=strategy, image="web:nope", after="2")
    result = planner("apply", str(write_plan(tmp_path, broken)), "--timeout", "6s")

    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    failed = [line for line in lines if line.startswith(f"  failed wait-ready deployment/{namespace}/web: ")]
    assert failed, lines
    assert "timed out after 6s waiting until ready: ImagePullBackOff" in failed[0], failed
    skipped = f"  skipped apply deployment/{namespace}/after: wait-ready deployment/{namespace}/web failed"
    assert skipped in lines
    status, after = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/after")
    assert status == 200, after
    assert after["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "VERSION", "value": "1"}]

    rollout = kubectl("rollout", "status", "deployment/web", "-n", namespace, "--timeout=1s")
    assert rollout.returncode != 0, rollout.stdout  # kubectl agrees: the rollout has not finished

    again = planner("plan", "--detailed-exitcode", str(write_plan(tmp_path, broken)))
    assert again.returncode == 2, again.stdout + again.stderr  # `after` is still to be updated


def test_an_image_from_a_reserved_domain_never_pulls(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """`registry.invalid/x` resolves nowhere, so its pod waits in ErrImagePull and ImagePullBackOff with
    the kubelet's words, and the apply fails rather than calling it ready."""
    plan = write_plan(
        tmp_path,
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: demo, namespace: {namespace}}}\n"
        "workloads:\n  - name: web\n    image: registry.invalid/x\n",
    )

    applied = planner("apply", str(plan), "--timeout", "3s")
    pods = kubectl(
        "get", "pods", "-n", namespace, "-o", "jsonpath={.items[*].status.containerStatuses[*].state}"
    )
    events = kubectl("get", "events", "-n", namespace, "-o", "jsonpath={.items[*].message}")

    assert applied.returncode == 1, applied.stdout + applied.stderr
    assert '"reason":"ErrImagePull"' in pods.stdout or '"reason":"ImagePullBackOff"' in pods.stdout, (
        pods.stdout
    )
    assert (
        'Failed to pull image "registry.invalid/x": rpc error: code = Unknown desc = failed to pull and unpack '
        'image "registry.invalid/x:latest"' in events.stdout
    ), events.stdout


def status_of(planner: Runner, plan: Path) -> dict[str, dict[str, object]]:
    shown = planner("status", str(plan), "-o", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    rows = [json.loads(line) for line in shown.stdout.splitlines()]
    return {str(row["runtime_id"]).rsplit("|", 1)[-1]: row for row in rows}


def test_status_shows_a_stuck_rollout_unfinished_and_a_skipped_dependent_never_created(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    """A first apply whose `web` never pulls skips `after` (it depends on `web`): `after` was never
    created, and says so. Then a good `web` is updated to a broken image: READY counts the old pods
    (2/2, as kubectl shows), but the message is what `kubectl rollout status` says, not "ready 2/2"."""
    broken = rollout_plan(namespace, replicas=2, strategy="default", image="web:nope", after="1")
    first = planner("apply", str(write_plan(tmp_path, broken)), "--timeout", "3s")
    never = status_of(planner, write_plan(tmp_path, broken))["after"]

    good = rollout_plan(namespace, replicas=2, strategy="default", image="nginx:1.27", after="1")
    fixed = planner("apply", str(write_plan(tmp_path, good)), "--timeout", "60s")
    updated = planner("apply", str(write_plan(tmp_path, broken)), "--timeout", "6s")
    stuck = status_of(planner, write_plan(tmp_path, broken))["web"]

    assert (first.returncode, fixed.returncode, updated.returncode) == (1, 0, 1), (
        first.stdout + updated.stdout
    )
    assert (never["state"], never["message"]) == (
        "NotCreated",
        f"deployment/{namespace}/after was never created: the plan's last apply failed or skipped it",
    )
    assert stuck["ready"] == "2/2" and stuck["status"] in ("ErrImagePull", "ImagePullBackOff"), stuck
    assert str(stuck["message"]).startswith("rollout not finished: "), stuck
