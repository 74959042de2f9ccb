"""What happens to a StatefulSet's claims is said truthfully (issue 39, items 3 and 4).

A raw StatefulSet whose `persistentVolumeClaimRetentionPolicy.whenDeleted` is Delete: Kubernetes
deletes its PVCs when the set goes, so a change that replaces it (a claim template resized) or prunes
it destroys data — marked, and refused without `--allow-data-loss`; the claim keeps its uid. Under the
default policy, the replace keeps the claims at their size, and the next plan says the claim differs from
its template rather than that the cluster matches. Checked through kubectl and raw HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, write_plan
from tests.simulated import eventually


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def stateful_plan(namespace: str, *, size: str, policy: str, keep_set: bool = True) -> str:
    stateful = f"""\
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: {{name: db}}
    spec:
      serviceName: db
      replicas: 1
      persistentVolumeClaimRetentionPolicy: {{whenDeleted: {policy}, whenScaled: Retain}}
      selector: {{matchLabels: {{app: db}}}}
      template:
        metadata: {{labels: {{app: db}}}}
        spec:
          containers: [{{name: db, image: 'postgres:16.4'}}]
      volumeClaimTemplates:
        - metadata: {{name: data}}
          spec:
            accessModes: [ReadWriteOnce]
            resources: {{requests: {{storage: {size}}}}}
"""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: store, namespace: {namespace}}}\n"
        "manifests:\n"
        "  - apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: settings}\n    data: {mode: fast}\n"
        + (stateful if keep_set else "")
    )


def claim(kubectl: Runner, namespace: str) -> dict[str, Any]:
    found: dict[str, Any] = eventually(
        lambda: (
            (done := kubectl("get", "pvc", "data-db-0", "-n", namespace, "-o", "json")).returncode == 0
            and __import__("json").loads(done.stdout)
        ),
        timeout=60,
    )
    return found


def test_a_policy_that_deletes_claims_makes_a_replace_and_a_prune_data_loss(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, stateful_plan(namespace, size="1Gi", policy="Delete"))
    first = planner("apply", str(plan), "--timeout", "60s")
    assert first.returncode == 0, first.stdout + first.stderr
    uid = claim(kubectl, namespace)["metadata"]["uid"]

    for changed in (
        stateful_plan(namespace, size="2Gi", policy="Delete"),
        stateful_plan(namespace, size="1Gi", policy="Delete", keep_set=False),
    ):
        plan = write_plan(tmp_path, changed)
        planned = planner("plan", str(plan))
        assert planned.returncode == 1, planned.stdout + planned.stderr  # printed, then refused
        assert "destroys data" in planned.stdout, planned.stdout
        assert "(persistentVolumeClaimRetentionPolicy.whenDeleted: Delete)" in planned.stdout, planned.stdout
        assert "are kept" not in planned.stdout, planned.stdout
        refused = planner("apply", str(plan), "--timeout", "30s")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "the plan destroys data; re-run with --allow-data-loss to accept it" in refused.stderr
        assert f"statefulset/{namespace}/db: would be" in refused.stderr
        assert claim(kubectl, namespace)["metadata"]["uid"] == uid  # nothing was written

    accepted = planner("apply", str(plan), "--allow-data-loss", "--timeout", "60s")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    gone = eventually(lambda: kubectl("get", "pvc", "data-db-0", "-n", namespace).returncode != 0, timeout=60)
    assert gone


def test_a_resized_claim_template_keeps_the_claims_size_and_the_plan_says_so(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, stateful_plan(namespace, size="1Gi", policy="Retain"))
    assert planner("apply", str(plan), "--timeout", "60s").returncode == 0
    uid = claim(kubectl, namespace)["metadata"]["uid"]

    plan = write_plan(tmp_path, stateful_plan(namespace, size="2Gi", policy="Retain"))
    planned = planner("plan", str(plan))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    said = " ".join(planned.stdout.split())  # lines are wrapped at 200 columns
    assert "its existing PVCs keep their size (claim templates apply to new claims only)" in said, said
    applied = planner("apply", str(plan), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr

    kept = claim(kubectl, namespace)
    assert kept["metadata"]["uid"] == uid
    assert kept["spec"]["resources"]["requests"]["storage"] == "1Gi"
    after = planner("plan", str(plan))
    assert "No changes. The cluster matches" not in after.stdout, after.stdout
    assert (
        f"= unchanged statefulset/{namespace}/db (PVC data-0 requests 1Gi, its template 2Gi: claim templates "
        "apply to new claims only" in after.stdout.replace("data-db-0", "data-0")
    ), after.stdout
    assert "the cluster differs from plan store at 1 object" in after.stdout, after.stdout
