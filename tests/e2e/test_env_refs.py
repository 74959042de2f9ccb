"""Env from Secrets and ConfigMaps on the embedded cluster, checked through kubectl: a workload reading
a plan Secret, a plan ConfigMap, pod fields, container resources and a Secret made outside the plan
(the plan text the real tier applies too, `tests/plan_texts.py`) starts (the simulated
node refuses a pod whose referenced objects are missing); rotating the plan Secret rolls it (a new
ReplicaSet) and the plan says why; a reference to an object the cluster lacks is a plan error at its
file position, and nothing is written. The simulated node runs no process, so env values are not
materialised; that every referenced object exists is what it checks before a pod starts."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, events_since, write_plan
from tests.plan_texts import web_env_plan

CONFIG_HASH = "planner.dev/config-hash"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


def kubectl_json(kubectl: Runner, *args: str) -> dict[str, object]:
    result = kubectl("get", *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    found: dict[str, object] = json.loads(result.stdout)
    return found


def template_of(kubectl: Runner, namespace: str) -> dict[str, object]:
    deployment = kubectl_json(kubectl, "deployment", "web", "-n", namespace)
    template: dict[str, object] = deployment["spec"]["template"]  # type: ignore[index]
    return template


def test_a_rotated_plan_secret_rolls_the_workload_that_reads_it(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    made = kubectl("create", "secret", "generic", "vault-token", "--from-literal=token=abc", "-n", namespace)
    assert made.returncode == 0, made.stderr
    plan = write_plan(tmp_path, web_env_plan(namespace, "first-password"))
    # Through a saved plan: the key its config-hash was made with is the one the parent keeps.
    saved = tmp_path / "web.plan"
    made = planner("plan", str(plan), "--out", str(saved))
    assert made.returncode == 0, made.stdout + made.stderr
    applied = planner("apply", str(saved), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    template = template_of(kubectl, namespace)
    container = template["spec"]["containers"][0]  # type: ignore[index]
    env = {variable["name"]: variable.get("valueFrom") for variable in container["env"]}
    assert env["DB_PASSWORD"] == {"secretKeyRef": {"name": "db-credentials", "key": "password"}}
    assert env["PROXY_MEMORY"] == {
        "resourceFieldRef": {"containerName": "proxy", "resource": "limits.memory", "divisor": "1Mi"}
    }
    assert container["envFrom"] == [
        {"configMapRef": {"name": "web-config"}, "prefix": "WEB_"},
        {"secretRef": {"name": "db-credentials", "optional": True}},
    ]
    first_hash = template["metadata"]["annotations"][CONFIG_HASH]  # type: ignore[index]
    ready = kubectl(
        "wait", "pods", "-l", "app=web", "-n", namespace, "--for=condition=Ready", "--timeout=30s"
    )
    assert ready.returncode == 0, ready.stderr  # the node found every referenced object
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr  # the digest key was kept: no spurious roll

    plan.write_text(web_env_plan(namespace, "second-password"))
    planned = planner("plan", str(plan))
    assert planned.returncode == 0, planned.stderr
    assert "rolls because secret db-credentials changed" in planned.stdout
    assert "second-password" not in planned.stdout + planned.stderr
    rolled = planner("apply", str(plan), "--timeout", "60s")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert template_of(kubectl, namespace)["metadata"]["annotations"][CONFIG_HASH] != first_hash  # type: ignore[index]
    replica_sets = kubectl_json(kubectl, "replicasets", "-l", "app=web", "-n", namespace)
    assert len(replica_sets["items"]) == 2  # type: ignore[arg-type]


def test_a_missing_external_secret_or_key_is_a_plan_error_and_nothing_is_written(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    made = kubectl("create", "configmap", "shared", "--from-literal=other=1", "-n", namespace)
    assert made.returncode == 0, made.stderr
    plan = write_plan(
        tmp_path,
        f"""apiVersion: planner.dev/v1
kind: Plan
metadata: {{name: broken, namespace: {namespace}}}
workloads:
  - name: web
    image: nginx:1.27
    env:
      A: {{secretKeyRef: {{name: absent, key: token}}}}
      B: {{configMapKeyRef: {{name: shared, key: mode}}}}
      C: {{secretKeyRef: {{name: absent-too, key: token, optional: true}}}}
    envFrom: [{{secret: absent}}]
""",
    )
    rv = int(kubectl_json(kubectl, "configmap", "shared", "-n", namespace)["metadata"]["resourceVersion"])  # type: ignore[index]
    for command in ("plan", "apply"):
        result = planner(command, str(plan))
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stderr.splitlines()[-3:] == [
            f'{plan}:8:11: workloads[0].env.A.secretKeyRef: secret "absent" is not declared by this plan and '
            f"does not exist in namespace {namespace}: declare it in the plan, create it first, or mark the "
            "reference optional",
            f'{plan}:9:43: workloads[0].env.B.configMapKeyRef.key: configMap "shared" in namespace {namespace} has '
            'no key "mode" (it has: other): fix the key, or mark the reference optional',
            f'{plan}:11:16: workloads[0].envFrom[0].secret: secret "absent" is not declared by this plan and '
            f"does not exist in namespace {namespace}: declare it in the plan, create it first, or mark the "
            "reference optional",
        ]
    for collection in ("api/v1/namespaces/{}/secrets", "apis/apps/v1/namespaces/{}/deployments"):
        added = [
            e for e in events_since(cluster, "/" + collection.format(namespace), rv) if e["type"] == "ADDED"
        ]
        assert added == []


def test_a_missing_mounted_secret_in_a_new_namespace_writes_nothing_not_even_the_namespace(
    planner: Runner, kubectl: Runner, tmp_path: Path
) -> None:
    """Every plan-time check passes before apply's first write, the lock's namespace included; a Secret
    or ConfigMap mounted as a volume is checked as an env reference is (issue 39, item 10)."""
    fresh = f"fresh-{os.getpid()}"
    plan = write_plan(
        tmp_path,
        f"""apiVersion: planner.dev/v1
kind: Plan
metadata: {{name: mounts, namespace: {fresh}}}
workloads:
  - name: web
    image: nginx:1.27
    volumes:
      - {{secret: tls-cert, mountPath: /etc/tls}}
      - {{configMap: site, mountPath: /etc/site}}
""",
    )
    for command in ("plan", "apply", "reconcile"):
        result = planner(command, str(plan))
        assert result.returncode == 1, result.stdout + result.stderr
        said = result.stderr + result.stdout
        assert (
            f'{plan}:8:9: workloads[0].volumes[0]: secret "tls-cert" is not declared by this plan and does not '
            f"exist in namespace {fresh}: declare it in the plan or create it first" in said
        ), said
        assert f'{plan}:9:9: workloads[0].volumes[1]: configMap "site" is not declared' in said, said
        assert kubectl("get", "namespace", fresh).returncode != 0, f"{command} created namespace {fresh}"
