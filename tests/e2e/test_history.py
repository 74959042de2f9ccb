"""Generations end to end: `planner apply`/`reconcile`/`rollback` processes against the embedded cluster
over HTTP; what they record is read back through raw HTTP (the record Secrets decoded here, by hand),
and what a rollback restores through kubectl.

Every output of these commands is searched for the plan's literal secret value and for the one a
Secret's data holds in base64: neither may appear.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, http, write_plan

TIME_SCALE = 0.2
SECRET_VALUE = "hunter2-literal-7f3a"
SECRET_B64 = base64.b64encode(SECRET_VALUE.encode()).decode()


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=TIME_SCALE, simulate=True) as handle:
        yield handle


def shop(namespace: str, version: str, *, worker: bool = True, migrate_exit: int | None = None) -> str:
    """A migration Job and a web Deployment at `version`, a worker (unless left out), a ConfigMap and a
    Secret whose value is written literally in the file."""
    failing = f', sim.planner.dev/exit-code: "{migrate_exit}"' if migrate_exit is not None else ""
    text = (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        f"configMaps:\n  - {{name: settings, data: {{VERSION: '{version}'}}}}\n"
        f"secrets:\n  - {{name: creds, data: {{PASSWORD: '{SECRET_VALUE}'}}}}\n"
        "workloads:\n"
        f"  - name: migrate\n    kind: job\n    image: 'shop-migrate:{version}'\n    backoffLimit: 0\n"
        f"    podAnnotations: {{sim.planner.dev/run-seconds: '1'{failing}}}\n"
        f"  - name: web\n    image: 'shop:{version}'\n    dependsOn: [migrate]\n"
        "    volumes: [{configMap: settings, mountPath: /etc/shop}]\n"
    )
    if worker:
        text += "  - name: worker\n    image: 'shop-worker:1.0'\n"
    return text


def run_ok(planner: Runner, *args: str, outputs: list[str] | None = None) -> str:
    done = planner(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    if outputs is not None:
        outputs += [done.stdout, done.stderr]
    return done.stdout


def records(cluster: ClusterHandle, namespace: str, plan: str = "shop") -> dict[int, dict[str, Any]]:
    """The plan's generation records by number, each its Secret with the decoded `document` beside."""
    selector = f"planner.dev/plan={plan},planner.dev/generation"
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets?labelSelector={selector}")
    assert status == 200, body
    found = {}
    for item in body["items"]:
        document = json.loads(gzip.decompress(base64.b64decode(item["data"]["generation"])))
        found[int(item["metadata"]["labels"]["planner.dev/generation"])] = {**item, "document": document}
    return found


def parent_generation(cluster: ClusterHandle, namespace: str) -> str | None:
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert status == 200, body
    return body["metadata"].get("annotations", {}).get("planner.dev/generation")


def images(cluster: ClusterHandle, namespace: str) -> dict[str, str]:
    status, body = http(cluster, "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments")
    assert status == 200, body
    return {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]["containers"][0]["image"] for d in body["items"]
    }


def test_each_apply_that_writes_records_a_generation_a_no_op_records_none(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    outputs: list[str] = []
    plan = write_plan(tmp_path, shop(namespace, "1.0"))
    run_ok(planner, "apply", str(plan), "--source-revision", "rev-one", outputs=outputs)
    run_ok(planner, "apply", str(plan), outputs=outputs)  # nothing to do: nothing recorded
    assert sorted(records(cluster, namespace)) == [1]
    assert parent_generation(cluster, namespace) == "1"
    told = run_ok(planner, "plan", str(plan), outputs=outputs)
    assert "cluster is at generation 1 of plan shop (converged)" in told
    summary = json.loads(run_ok(planner, "plan", str(plan), "-o", "json").splitlines()[-1])
    assert summary["generation"] == 1

    first = records(cluster, namespace)[1]
    document = first["document"]
    assert first["metadata"]["name"] == "planner.shop.g1"
    assert first["type"] == "planner.dev/generation.v1"
    assert first["metadata"]["labels"] == {
        "planner.dev/plan": "shop",
        "planner.dev/generation": "1",
        "planner.dev/result": "converged",
    }
    assert (document["generation"], document["result"], document["revision"]) == (1, "converged", "rev-one")
    assert document["rolledBackFrom"] is None
    assert document["who"]["host"]
    assert document["started"] <= document["finished"]
    # The plan file as written, its literal secret value masked.
    (text,) = document["sources"].values()
    assert SECRET_VALUE not in text and 'PASSWORD: "***"' in text and "shop:1.0" in text
    kinds = sorted(f"{m['kind']}/{m['metadata']['name']}" for m in document["closure"])
    assert kinds == [
        "ConfigMap/settings",
        "Deployment/web",
        "Deployment/worker",
        "Job/migrate",
        "Secret/creds",
    ]
    assert set(document["hashes"]) == {
        f"{k.split('/')[0].lower()}/{namespace}/{k.split('/')[1]}" for k in kinds
    }
    # The record is a Secret, as Helm's releases are: it keeps the rendered Secret's data for a rollback.
    (creds,) = [m for m in document["closure"] if m["kind"] == "Secret"]
    assert creds["data"] == {"PASSWORD": SECRET_B64}
    assert {c["action"] for c in document["changes"]} == {"create"}
    assert len(document["runs"]) == 1  # the migration ran
    for output in outputs:
        assert SECRET_VALUE not in output and SECRET_B64 not in output


def test_a_failed_apply_is_recorded_as_failed_naming_its_tasks(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "1.0", migrate_exit=3))
    failed = planner("apply", str(plan), "--timeout", "60s")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    (record,) = records(cluster, namespace).values()
    assert record["metadata"]["labels"]["planner.dev/result"] == "failed"
    assert "wait-ready job/" + namespace + "/migrate" in record["document"]["failedTasks"]
    assert parent_generation(cluster, namespace) == "1"


def test_history_max_keeps_the_newest_and_secret_data_can_be_left_out(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    for version in ("1.0", "2.0", "3.0"):
        plan = write_plan(tmp_path, shop(namespace, version))
        run_ok(planner, "apply", str(plan), "--history-max", "2", "--no-secret-history")
    kept = records(cluster, namespace)
    assert sorted(kept) == [2, 3]
    assert parent_generation(cluster, namespace) == "3"
    (creds,) = [m for m in kept[3]["document"]["closure"] if m["kind"] == "Secret"]
    assert "data" not in creds and kept[3]["document"]["secretData"] is False


def test_reconcile_records_a_generation_per_plan_that_changed(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "1.0"))
    run_ok(planner, "reconcile", str(plan), "--source-revision", "abc123")
    run_ok(planner, "reconcile", str(plan))
    (record,) = records(cluster, namespace).values()
    assert record["document"]["revision"] == "abc123"
