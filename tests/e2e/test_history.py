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
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, http, write_plan
from tests.e2e.test_apply import sandbox_plan
from tests.paths import REPO
from tests.simulated import eventually

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


def assert_valid(document: dict[str, Any], schema: str) -> None:
    """`document` (a command's `-o json` output) validates against `schemas/<schema>`."""
    validator = jsonschema.Draft7Validator(json.loads((REPO / "schemas" / schema).read_text()))
    assert [error.message for error in validator.iter_errors(document)] == [], document


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
    comment = run_ok(planner, "plan", str(plan), "-o", "markdown", outputs=outputs)
    assert "*cluster is at generation 1 of plan shop (converged)*" in comment.split("\n\n")[:3]

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


def test_a_failed_run_that_wrote_nothing_but_the_parent_records_no_generation(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """`reconcile` meets a ConfigMap someone else made only at its create (it does not probe first): the
    run fails having written nothing of the plan, and retrying it must not fill the history."""
    plan = write_plan(tmp_path, shop(namespace, "1.0"))
    run_ok(planner, "reconcile", str(plan))
    assert kubectl("create", "configmap", "manual", "-n", namespace).returncode == 0
    text = shop(namespace, "1.0").replace("configMaps:\n", "configMaps:\n  - {name: manual, data: {A: b}}\n")
    write_plan(tmp_path, text)
    for _ in range(2):
        failed = planner("reconcile", str(plan))
        assert failed.returncode == 1, failed.stdout + failed.stderr
    assert sorted(records(cluster, namespace)) == [1]
    assert parent_generation(cluster, namespace) == "1"


def three_applies(planner: Runner, tmp_path: Path, namespace: str, outputs: list[str]) -> Path:
    """v1; v2 with new images; v3 without the worker, each from its own revision."""
    plan = tmp_path / "plan.yaml"
    for revision, text in (
        ("rev-1", shop(namespace, "1.0")),
        ("rev-2", shop(namespace, "2.0")),
        ("rev-3", shop(namespace, "2.0", worker=False)),
    ):
        write_plan(tmp_path, text)
        run_ok(planner, "apply", str(plan), "--source-revision", revision, outputs=outputs)
    return plan


def test_history_lists_each_generation_and_diff_generations_names_exactly_what_changed(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    outputs: list[str] = []
    three_applies(planner, tmp_path, namespace, outputs)

    table = run_ok(planner, "history", "shop", "-n", namespace, outputs=outputs).splitlines()
    assert table[0].split() == ["GEN", "WHEN", "RESULT", "REVISION", "WHO", "CHANGES"]
    rows = [line.split(maxsplit=5) for line in table[1:4]]
    assert [(r[0], r[2], r[3]) for r in rows] == [
        ("1", "converged", "rev-1"),
        ("2", "converged", "rev-2"),
        ("3*", "converged", "rev-3"),
    ]
    assert rows[0][5] == "5 created"
    assert rows[2][5] == "1 deleted"
    assert table[4] == f"cluster is at generation 3 of plan shop (namespace {namespace})"
    listed = json.loads(run_ok(planner, "history", "shop", "-n", namespace, "-o", "json", outputs=outputs))
    assert listed["current"] == 3
    assert_valid(listed, "history.schema.json")
    assert [(g["generation"], g["result"], g["revision"]) for g in listed["generations"]] == [
        (1, "converged", "rev-1"),
        (2, "converged", "rev-2"),
        (3, "converged", "rev-3"),
    ]

    shown = run_ok(planner, "history", "shop", "-n", namespace, "--show", "1", outputs=outputs)
    assert "shop:1.0" in shown and f"secret/{namespace}/creds  ***" in shown
    assert 'PASSWORD: "***"' in shown
    shown_json = json.loads(
        run_ok(planner, "history", "shop", "-n", namespace, "--show", "1", "-o", "json", outputs=outputs)
    )
    (creds,) = [m for m in shown_json["closure"] if m["kind"] == "Secret"]
    assert creds["data"] == {"PASSWORD": "***"}
    missing = planner("history", "shop", "-n", namespace, "--show", "9")
    assert (
        missing.returncode == 1
        and "no generation 9" in missing.stderr
        and "recorded: 1, 2, 3" in missing.stderr
    )

    compared = json.loads(
        run_ok(planner, "diff-generations", "shop", "1", "3", "-n", namespace, "-o", "json", outputs=outputs)
    )
    assert_valid(compared, "generations-diff.schema.json")
    changed = {(o["object"], o["change"]): o["fields"] for o in compared["objects"]}
    assert set(changed) == {
        (f"configmap/{namespace}/settings", "changed"),
        (f"deployment/{namespace}/web", "changed"),
        (f"deployment/{namespace}/worker", "removed"),
        (f"job/{namespace}/migrate", "changed"),
    }
    web = {f["path"]: (f["before"], f["after"]) for f in changed[(f"deployment/{namespace}/web", "changed")]}
    assert web[".spec.template.spec.containers[name=web].image"] == ("shop:1.0", "shop:2.0")
    text = run_ok(planner, "history", "shop", "-n", namespace, "--diff", "1", "3", outputs=outputs)
    assert f"  - deployment/{namespace}/worker" in text
    assert "    .spec.template.spec.containers[name=web].image: shop:1.0 → shop:2.0" in text
    markdown = run_ok(
        planner, "diff-generations", "shop", "1", "3", "-n", namespace, "-o", "markdown", outputs=outputs
    )
    assert f"| `-` | `deployment/{namespace}/worker` |" in markdown
    run_key = '.metadata.annotations["planner.dev/run-key"]'
    migrate = {f["path"]: f for f in changed[(f"job/{namespace}/migrate", "changed")]}
    assert re.fullmatch("[0-9a-f]{64}", migrate[run_key]["before"])  # JSON keeps the digests
    assert f"      {run_key}: new run: template changed" in text.splitlines()
    assert f"`{run_key}`: new run: template changed" in markdown
    assert not re.search("[0-9a-f]{64}", text + markdown)
    for output in outputs:
        assert SECRET_VALUE not in output and SECRET_B64 not in output


def job_uid(cluster: ClusterHandle, namespace: str) -> str:
    status, body = http(cluster, "GET", f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate")
    assert status == 200, body
    return str(body["metadata"]["uid"])


def test_rollback_restores_generation_1_without_rerunning_its_job_and_records_generation_4(
    planner: Runner, kubectl: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    outputs: list[str] = []
    plan = three_applies(planner, tmp_path, namespace, outputs)
    ran = job_uid(cluster, namespace)

    dry = run_ok(planner, "rollback", "shop", "-n", namespace, "--to", "1", "--dry-run", outputs=outputs)
    assert f"deployment/{namespace}/worker" in dry and "shop:2.0" in dry and "shop:1.0" in dry
    assert sorted(records(cluster, namespace)) == [1, 2, 3]  # a dry run writes nothing
    saved = tmp_path / "rollback.json"
    run_ok(
        planner,
        "rollback",
        "shop",
        "-n",
        namespace,
        "--to",
        "1",
        "--dry-run",
        "--out",
        str(saved),
        outputs=outputs,
    )
    assert SECRET_VALUE not in saved.read_text() and SECRET_B64 not in saved.read_text()

    done = run_ok(planner, "rollback", "shop", "-n", namespace, "--to", "1", outputs=outputs)
    assert "rolled back to generation 1 (rev-1), recorded as generation 4" in done + outputs[-1]
    assert images(cluster, namespace) == {"web": "shop:1.0", "worker": "shop-worker:1.0"}
    got = kubectl("get", "configmap", "settings", "-n", namespace, "-o", "jsonpath={.data.VERSION}")
    assert got.stdout == "1.0", got.stderr
    assert job_uid(cluster, namespace) == ran  # the v1 migration ran already: not run again
    fourth = records(cluster, namespace)[4]
    assert fourth["document"]["rolledBackFrom"] == 1
    assert fourth["document"]["revision"] == "rev-1"
    assert fourth["metadata"]["labels"]["planner.dev/result"] == "converged"
    table = run_ok(planner, "history", "shop", "-n", namespace, outputs=outputs)
    assert "rollback to 1: " in table.splitlines()[4] and table.splitlines()[4].startswith("4*")
    unchanged = run_ok(
        planner, "rollback", "shop", "-n", namespace, "--to", "1", "--dry-run", outputs=outputs
    )
    assert "No changes." in unchanged

    # The saved rollback plan, reviewed before, is stale now (the objects it read moved): refused.
    stale = planner("apply", str(saved))
    assert stale.returncode == 1 and "stale" in (stale.stdout + stale.stderr).lower(), stale.stderr
    # Forward again: the plan files apply as generation 5.
    run_ok(planner, "apply", str(plan), outputs=outputs)
    assert images(cluster, namespace) == {"web": "shop:2.0"}
    # A rollback reviewed as a saved plan and applied with `apply FILE` (the default target: the newest
    # converged generation before the current 5, which is 4).
    reviewed = tmp_path / "reviewed.json"
    run_ok(planner, "rollback", "shop", "-n", namespace, "--dry-run", "--out", str(reviewed), outputs=outputs)
    run_ok(planner, "apply", str(reviewed), outputs=outputs)
    assert images(cluster, namespace) == {"web": "shop:1.0", "worker": "shop-worker:1.0"}
    assert records(cluster, namespace)[6]["document"]["rolledBackFrom"] == 4
    for output in outputs:
        assert SECRET_VALUE not in output and SECRET_B64 not in output


def test_a_rollback_after_the_parent_was_deleted_takes_the_runs_from_the_generation_record(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    three_applies(planner, tmp_path, namespace, [])
    ran = job_uid(cluster, namespace)
    status, body = http(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert status == 200, body

    done = run_ok(planner, "rollback", "shop", "-n", namespace, "--to", "1")
    assert "rolled back to generation 1 (rev-1), recorded as generation 4" in done
    assert images(cluster, namespace) == {"web": "shop:1.0", "worker": "shop-worker:1.0"}
    assert job_uid(cluster, namespace) == ran  # generation 1 recorded that v1's migration ran
    status, parent = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert status == 200, parent
    runs = set(records(cluster, namespace)[1]["document"]["runs"])
    assert runs and runs <= set(parent["data"])  # written back: the next rollback knows them too
    again = run_ok(planner, "rollback", "shop", "-n", namespace, "--to", "1", "--dry-run")
    assert "No changes." in again


def test_an_apply_after_the_parent_was_deleted_numbers_on_from_the_records_left(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """The parent names no generation, so the run tries record 1 first: taken, it lists the records."""
    plan = write_plan(tmp_path, shop(namespace, "1.0"))
    run_ok(planner, "apply", str(plan))
    write_plan(tmp_path, shop(namespace, "2.0"))
    run_ok(planner, "apply", str(plan))
    status, body = http(cluster, "DELETE", f"/api/v1/namespaces/{namespace}/secrets/shop")
    assert status == 200, body

    write_plan(tmp_path, shop(namespace, "3.0"))
    run_ok(planner, "apply", str(plan))
    kept = records(cluster, namespace)
    assert sorted(kept) == [1, 2, 3]
    assert kept[3]["document"]["closure"] and parent_generation(cluster, namespace) == "3"
    assert images(cluster, namespace)["web"] == "shop:3.0"


def lease_holder(cluster: ClusterHandle, namespace: str) -> str:
    status, body = http(
        cluster, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/planner-lock-shop"
    )
    return str(body.get("spec", {}).get("holderIdentity") or "") if status == 200 else ""


def test_a_rollback_and_an_apply_are_serialised_by_the_plans_lock(
    planner: Runner, cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    outputs: list[str] = []
    plan = write_plan(tmp_path, shop(namespace, "1.0"))
    run_ok(planner, "apply", str(plan), outputs=outputs)
    write_plan(tmp_path, shop(namespace, "2.0"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}
    admin = SlimAdmin.of(cluster)
    admin.pause("nodeagent")  # the v2 migration cannot run: the apply holds the lock until resumed
    started: list[subprocess.Popen[str]] = []
    try:
        applying = background(started, env, "apply", str(plan), "--source-revision", "rev-2")
        eventually(lambda: f"/{applying.pid}/" in lease_holder(cluster, namespace))
        refused = planner("rollback", "shop", "-n", namespace, "--to", "1")
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert "locked" in refused.stderr or "holds" in refused.stderr, refused.stderr
        waiting = background(
            started, env, "rollback", "shop", "-n", namespace, "--to", "1", "--lock-timeout", "120s"
        )
        admin.resume("nodeagent")
        for process in (applying, waiting):
            out, err = process.communicate(timeout=120)
            outputs += [out, err]
            assert process.returncode == 0, out + err
    finally:
        admin.resume("nodeagent")
        for process in started:
            if process.poll() is None:
                process.kill()
                process.communicate()
    kept = records(cluster, namespace)
    assert sorted(kept) == [1, 2, 3]
    assert (kept[2]["document"]["revision"], kept[2]["document"]["rolledBackFrom"]) == ("rev-2", None)
    assert kept[3]["document"]["rolledBackFrom"] == 1
    assert kept[2]["document"]["finished"] <= kept[3]["document"]["started"]
    assert images(cluster, namespace) == {"web": "shop:1.0", "worker": "shop-worker:1.0"}
    for output in outputs:
        assert SECRET_VALUE not in output and SECRET_B64 not in output


def background(
    started: list[subprocess.Popen[str]], env: dict[str, str], *args: str
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "planner", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started.append(process)
    return process


def test_a_rollback_that_would_need_secret_data_the_record_did_not_keep_is_refused(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, shop(namespace, "1.0"))
    run_ok(planner, "apply", str(plan), "--no-secret-history")
    write_plan(tmp_path, shop(namespace, "2.0").replace(SECRET_VALUE, "another-value-9"))
    run_ok(planner, "apply", str(plan), "--no-secret-history")
    refused = planner("rollback", "shop", "-n", namespace)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert (
        f"recorded without Secret data (--no-secret-history), and rolling back would have to write secret/{namespace}/creds"
        in refused.stderr
    )
    assert sorted(records(cluster, namespace)) == [1, 2]
    assert images(cluster, namespace)["web"] == "shop:2.0"


def claims(cluster: ClusterHandle, namespace: str) -> list[str]:
    status, body = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/persistentvolumeclaims")
    assert status == 200, body
    return sorted(c["metadata"]["name"] for c in body["items"])


def test_a_rollback_taking_a_sandboxes_rootfs_back_says_disks_are_not_restored_and_needs_allow_data_loss(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, sandbox_plan(namespace, state="running", generation=1))
    run_ok(planner, "apply", str(plan), "--no-wait")
    write_plan(tmp_path, sandbox_plan(namespace, state="paused", generation=2))
    run_ok(planner, "apply", str(plan), "--no-wait")
    assert claims(cluster, namespace) == ["alice-rootfs-g2", "alice-workspace"]
    compared = run_ok(planner, "diff-generations", "boxes", "2", "1", "-n", namespace)
    assert (
        f"  ~ persistentvolumeclaim/{namespace}/alice-rootfs-g1 (disk contents are not restored)\n"
        "      sandbox alice rootfs: g2 → g1\n"
    ) in compared
    compared_json = json.loads(
        run_ok(planner, "diff-generations", "boxes", "2", "1", "-n", namespace, "-o", "json")
    )
    assert_valid(compared_json, "generations-diff.schema.json")
    notes = {o["object"]: o.get("note") for o in compared_json["objects"]}
    assert notes[f"persistentvolumeclaim/{namespace}/alice-rootfs-g1"] == "disk contents are not restored"

    refused = planner("rollback", "boxes", "-n", namespace, "--no-wait")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert (
        "rootfs back from g2 to g1" in refused.stderr and "disk contents are not restored" in refused.stderr
    )
    assert "--allow-data-loss" in refused.stderr
    assert claims(cluster, namespace) == ["alice-rootfs-g2", "alice-workspace"]

    done = planner("rollback", "boxes", "-n", namespace, "--no-wait", "--allow-data-loss")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: sandbox alice: rootfs back from g2 to g1" in done.stderr
    assert claims(cluster, namespace) == ["alice-rootfs-g1", "alice-workspace"]
    status, pod = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods/alice")
    assert status == 200, pod  # running again, as generation 1 had it


def test_history_of_a_plan_in_another_namespace_fails_and_names_where_it_is(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    """`history NAME` without `-n` looks in the context's namespace (`default`): a plan recorded only
    elsewhere is an error naming where it is, not an empty exit 0 (issue 39, item 11)."""
    run_ok(planner, "apply", str(write_plan(tmp_path, shop(namespace, "1.0"))), "--timeout", "60s")
    missing = planner("history", "shop")
    assert missing.returncode == 1, missing.stdout + missing.stderr
    said = missing.stderr
    assert "plan shop has no recorded generations in namespace default; plan shop has generations in " in said
    assert namespace in said.split("generations in namespace ")[2].split(" (name it")[0].split(", "), said
    nowhere = planner("history", "no-such-plan")
    assert nowhere.returncode == 1, nowhere.stdout
    assert "nor in any other namespace" in nowhere.stderr, nowhere.stderr
    assert run_ok(planner, "history", f"{namespace}/shop").startswith("GEN ")
