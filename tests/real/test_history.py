"""Generations against a real kube-apiserver: three applies record generations 1–3, `history` and
`diff-generations` name what changed, and `rollback --to 1` restores generation 1's objects (checked
through kubectl) without running its Job again, recorded as generation 4. No output holds the plan's
secret value.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from tests.real.conftest import Runner, http, write_plan
from tests.realplane import RealCluster

SECRET_VALUE = "hunter2-literal-7f3a"
SECRET_B64 = base64.b64encode(SECRET_VALUE.encode()).decode()


def shop(namespace: str, version: str, *, worker: bool = True) -> str:
    text = (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{VERSION: '{version}'}}}}\n"
        f"secrets:\n  - {{name: creds, data: {{PASSWORD: '{SECRET_VALUE}'}}}}\n"
        "workloads:\n"
        f"  - name: migrate\n    kind: job\n    image: 'shop-migrate:{version}'\n    backoffLimit: 0\n"
        f"  - name: web\n    image: 'shop:{version}'\n    dependsOn: [migrate]\n"
        "    volumes: [{configMap: settings, mountPath: /etc/shop}]\n"
    )
    if worker:
        text += "  - name: worker\n    image: 'shop-worker:1.0'\n"
    return text


def run_ok(planner: Runner, outputs: list[str], *args: str) -> str:
    done = planner(*args)
    outputs += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def images(kubectl: Runner, namespace: str) -> dict[str, str]:
    listed = kubectl("get", "deployments", "-n", namespace, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    return {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["image"]
        for d in json.loads(listed.stdout)["items"]
    }


def job_uid(cluster: RealCluster, namespace: str) -> str:
    status, body = http(cluster, "GET", f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate")
    assert status == 200, body
    return str(body["metadata"]["uid"])


def test_generations_their_diff_and_a_rollback_that_does_not_rerun_the_job(
    planner: Runner, kubectl: Runner, cluster: RealCluster, namespace: str, tmp_path: Path
) -> None:
    outputs: list[str] = []
    plan = tmp_path / "plan.yaml"
    for revision, text in (
        ("rev-1", shop(namespace, "1.0")),
        ("rev-2", shop(namespace, "2.0")),
        ("rev-3", shop(namespace, "2.0", worker=False)),
    ):
        write_plan(tmp_path, text)
        run_ok(planner, outputs, "apply", str(plan), "--source-revision", revision, "--timeout", "120s")

    listed = json.loads(run_ok(planner, outputs, "history", "shop", "-n", namespace, "-o", "json"))
    assert listed["current"] == 3
    assert [(g["generation"], g["result"], g["revision"]) for g in listed["generations"]] == [
        (1, "converged", "rev-1"),
        (2, "converged", "rev-2"),
        (3, "converged", "rev-3"),
    ]
    compared = json.loads(
        run_ok(planner, outputs, "diff-generations", "shop", "1", "3", "-n", namespace, "-o", "json")
    )
    changed = {(o["object"], o["change"]): o["fields"] for o in compared["objects"]}
    assert set(changed) == {
        (f"configmap/{namespace}/settings", "changed"),
        (f"deployment/{namespace}/web", "changed"),
        (f"deployment/{namespace}/worker", "removed"),
        (f"job/{namespace}/migrate", "changed"),
    }
    web = {f["path"]: (f["before"], f["after"]) for f in changed[(f"deployment/{namespace}/web", "changed")]}
    assert web[".spec.template.spec.containers[name=web].image"] == ("shop:1.0", "shop:2.0")

    ran = job_uid(cluster, namespace)
    done = run_ok(planner, outputs, "rollback", "shop", "-n", namespace, "--to", "1", "--timeout", "120s")
    assert "rolled back to generation 1 (rev-1), recorded as generation 4" in done + outputs[-1]
    assert images(kubectl, namespace) == {"web": "shop:1.0", "worker": "shop-worker:1.0"}
    got = kubectl("get", "configmap", "settings", "-n", namespace, "-o", "jsonpath={.data.VERSION}")
    assert got.stdout == "1.0", got.stderr
    assert job_uid(cluster, namespace) == ran  # generation 1's migration ran already: not again
    after = json.loads(run_ok(planner, outputs, "history", "shop", "-n", namespace, "-o", "json"))
    assert after["current"] == 4
    for output in outputs:
        assert SECRET_VALUE not in output and SECRET_B64 not in output
