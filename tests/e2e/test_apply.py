"""`planner apply` end to end: the CLI in a subprocess against the embedded cluster, state checked
through raw HTTP and kubectl only (never planner's own reader).

Order is proven with resourceVersions, which the server draws from one global counter: after an apply,
a watch from the resourceVersion before it replays every event in order, so an object's ADDED event
carries its creation resourceVersion and a Job's status change to Complete carries the moment it
completed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.plan.durations import parse_duration
from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin, urlopen
from tests.e2e.conftest import Runner, current_rv, events_since, http, write_plan
from tests.paths import REPO
from tests.simulated import eventually

PART_OF = "applyset.kubernetes.io/part-of"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.2, simulate=True) as handle:
        yield handle


# --- reading the cluster -----------------------------------------------------------------------------


def get(cluster: ClusterHandle, path: str) -> Any:
    status, body = http(cluster, "GET", path)
    assert status == 200, body
    return body


def exists(cluster: ClusterHandle, path: str) -> bool:
    return http(cluster, "GET", path)[0] == 200


def created_at(cluster: ClusterHandle, path: str, rv: int) -> dict[str, int]:
    """Creation resourceVersion by object name, for the objects of a collection created after `rv`."""
    return {
        e["object"]["metadata"]["name"]: int(e["object"]["metadata"]["resourceVersion"])
        for e in events_since(cluster, path, rv)
        if e["type"] == "ADDED"
    }


def completed_at(cluster: ClusterHandle, namespace: str, job: str, rv: int) -> int:
    for event in events_since(cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs", rv):
        obj = event["object"]
        conditions = (obj.get("status") or {}).get("conditions") or []
        if obj["metadata"]["name"] == job and any(
            c["type"] == "Complete" and c["status"] == "True" for c in conditions
        ):
            return int(obj["metadata"]["resourceVersion"])
    raise AssertionError(f"job {job} never completed")


def json_events(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


# --- plans ---------------------------------------------------------------------------------------------


def web_plan(namespace: str, *, image: str = "nginx:1.27", replicas: int | None = None) -> str:
    replica_line = f"    replicas: {replicas}\n" if replicas is not None else ""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: web, namespace: {namespace}}}\n"
        "configMaps:\n  - {name: web-config, data: {LOG_LEVEL: info}}\n"
        "secrets:\n  - {name: web-token, data: {token: not-a-secret}}\n"
        "workloads:\n"
        "  - name: web\n"
        f"    image: '{image}'\n"
        "    port: 8080\n"
        "    expose: true\n"
        f"{replica_line}"
        "    volumes:\n"
        "      - {configMap: web-config, mountPath: /etc/web}\n"
        "      - {secret: web-token, mountPath: /etc/token}\n"
    )


def job_plan(
    namespace: str, *, image: str = "busybox:1.36", labels: str = "{}", ttl: int | None = None
) -> str:
    ttl_line = f"    ttlSecondsAfterFinished: {ttl}\n" if ttl is not None else ""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: jobs, namespace: {namespace}}}\n"
        "workloads:\n"
        "  - name: migrate\n"
        "    kind: job\n"
        f"    image: '{image}'\n"
        f"    labels: {labels}\n"
        f"{ttl_line}"
    )


def sandbox_plan(
    namespace: str,
    *,
    state: str = "running",
    generation: int = 1,
    fork: bool = False,
    storage: str = "",
    fork_rootfs: str = "",
) -> str:
    storage_class = f", storageClass: {storage}" if storage else ""
    text = (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: boxes, namespace: {namespace}}}\n"
        "sandboxes:\n"
        "  - name: alice\n"
        "    image: ghcr.io/acme/devbox:1\n"
        f"    state: {state}\n"
        f"    rootfs: {{size: 1Gi, generation: {generation}{storage_class}}}\n"
        f"    workspace: {{size: 2Gi{storage_class}}}\n"
    )
    if fork:
        text += (
            "  - name: alice-fork\n"
            "    image: ghcr.io/acme/devbox:1\n"
            "    forkFrom: alice\n"
            f"    rootfs: {fork_rootfs or f'{{size: 1Gi, generation: {generation}}}'}\n"
            "    workspace: {size: 2Gi}\n"
        )
    return text


def apply_ok(planner: Runner, plan: Path, *args: str) -> str:
    result = planner("apply", str(plan), *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# --- writes that need no controller (--no-wait) --------------------------------------------------------


def test_first_apply_writes_the_parent_first_and_config_before_the_workload_then_nothing_is_left_to_do(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, web_plan(namespace))
    before = current_rv(cluster)
    apply_ok(planner, plan, "--no-wait")
    base = f"/api/v1/namespaces/{namespace}"
    config_maps = created_at(cluster, f"{base}/configmaps", before)
    secrets = created_at(cluster, f"{base}/secrets", before)
    deployment = created_at(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", before)["web"]
    assert secrets["web"] < config_maps["web-config"] < deployment  # the parent Secret `web` first
    assert secrets["web"] < secrets["web-token"] < deployment
    assert exists(cluster, f"{base}/services/web-svc")
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr


def test_an_apply_reads_the_parent_once_and_lists_no_storage_classes_for_a_plan_without_claims(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    admin = SlimAdmin.of(cluster)
    admin.clear_requests()  # this module's tests share the cluster one after another, never at once
    apply_ok(planner, write_plan(tmp_path, web_plan(namespace)))
    made = [(r["verb"], r["resource"], r["namespace"] or "", r["name"] or "") for r in admin.requests()]
    # The plan's read: the writes start from the copy read or written last.
    assert made.count(("get", "secrets", namespace, "web")) == 1, made
    assert [f"{m[0]} {m[3]}".strip() for m in made if m[1] == "secrets"] == [
        "get web",  # the plan's read of the parent
        "list",  # the plan's Secrets
        "create",  # the parent, listing what the run will write: no read before
        "patch web-token",  # its create-only server-side apply
        "create",  # generation 1: the parent named none, so the records are not listed
        "update web",  # the parent settled (the applied closure) and naming it: no read before
    ]
    assert not [m for m in made if m[1] == "storageclasses"]  # only a claim's verdict reads them


def test_apply_says_namespace_created_for_a_namespace_it_created(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """Created before the run lock is taken (its Lease lives there), and said so; the plan still counts
    it as missing, so its `ensure` task runs and finds it."""
    fresh = f"{namespace}-new"
    result = planner("apply", str(write_plan(tmp_path, web_plan(fresh))), "--no-wait")
    assert result.returncode == 0, result.stdout + result.stderr
    said = f"namespace/{fresh}: namespace created (the run lock lives there)"
    assert said in result.stderr.splitlines(), result.stderr
    assert any(
        line.endswith(f"] namespace/{fresh}: namespace present") for line in result.stdout.splitlines()
    )
    assert exists(cluster, f"/api/v1/namespaces/{fresh}")


def test_a_foreign_deployment_fails_only_itself_stays_untouched_and_adopt_takes_it_over(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    labels = {"app": "web", "gobrave-workload": "web"}
    foreign = {
        "metadata": {"name": "web", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "x:1"}]},
            },
        },
    }
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    status, created = http(cluster, "POST", path, foreign)
    assert status == 201, created
    plan = write_plan(tmp_path, web_plan(namespace))
    result = planner("apply", str(plan), "--no-wait")
    assert result.returncode == 1
    message = (
        f"deployment {namespace}/web exists and is not managed by plan web (written by Python-urllib): "
        "`planner apply --adopt` of this plan takes it over"
    )
    assert message in result.stdout
    live = get(cluster, f"{path}/web")  # controllers may write its status; nothing else may change
    assert (live["metadata"]["generation"], live["metadata"]["labels"]) == (1, labels)
    assert "planner" not in {entry["manager"] for entry in live["metadata"]["managedFields"]}
    assert exists(cluster, f"/api/v1/namespaces/{namespace}/configmaps/web-config")  # others went on
    apply_ok(planner, plan, "--no-wait", "--adopt")
    adopted = get(cluster, f"{path}/web")
    assert adopted["metadata"]["uid"] == created["metadata"]["uid"]
    assert adopted["metadata"]["labels"][PART_OF].startswith("applyset-")
    assert adopted["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"


def test_a_job_runs_once_per_run_key_even_after_its_ttl_removed_it_and_rerun_runs_it_again(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, job_plan(namespace, ttl=2))
    apply_ok(planner, plan, "--timeout", "60s")
    job_path = f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate"
    deadline = time.monotonic() + 20
    while exists(cluster, job_path):  # the TTL controller deletes the finished Job
        assert time.monotonic() < deadline, "the finished Job was never deleted"
        time.sleep(0.2)
    before = current_rv(cluster)
    assert apply_ok(planner, plan, "--timeout", "60s").endswith(
        f"Plan jobs (namespace {namespace}): no changes\n"
    )
    assert created_at(cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs", before) == {}
    apply_ok(planner, plan, "--no-wait", "--rerun", "migrate")
    events = events_since(cluster, f"/apis/batch/v1/namespaces/{namespace}/jobs", before)
    (rerun_uid,) = [e["object"]["metadata"]["uid"] for e in events if e["type"] == "ADDED"]
    records = get(cluster, f"/api/v1/namespaces/{namespace}/secrets/jobs")["data"]
    runs = [json.loads(base64.b64decode(v)) for k, v in records.items() if not k.startswith("planner.")]
    assert [run["uid"] for run in runs] == [rerun_uid]


def test_a_job_label_change_updates_the_job_without_running_it_again(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    apply_ok(planner, write_plan(tmp_path, job_plan(namespace)), "--no-wait")
    job_path = f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate"
    uid = get(cluster, job_path)["metadata"]["uid"]
    apply_ok(planner, write_plan(tmp_path, job_plan(namespace, labels="{tier: batch}")), "--no-wait")
    job = get(cluster, job_path)
    assert (job["metadata"]["uid"], job["metadata"]["labels"]["tier"]) == (uid, "batch")


def test_replicas_another_writer_owns_survive_applies_of_a_plan_that_declares_none(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    apply_ok(planner, write_plan(tmp_path, web_plan(namespace)), "--no-wait")
    scale_path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web/scale"

    def scaled_to_four() -> bool:  # as an autoscaler does: read, write, again on a conflict
        scale = get(cluster, scale_path)
        try:
            with urlopen(
                cluster,
                f"{scale_path}?fieldManager=hpa-controller",
                data=json.dumps({**scale, "spec": {"replicas": 4}}).encode(),
                method="PUT",
                headers={"Content-Type": "application/json"},
                timeout=10,
            ) as reply:
                return reply.status == 200
        except urllib.error.HTTPError as error:
            if error.code != 409:  # the controller wrote the Deployment between the read and the write
                raise
            return False

    eventually(scaled_to_four, timeout=15)
    plan = write_plan(tmp_path, web_plan(namespace, image="nginx:1.28"))
    apply_ok(planner, plan, "--timeout", "60s")  # waits for the rollout: nothing is left to do after
    live = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert live["spec"]["replicas"] == 4
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout


def test_apply_json_output_is_design_events_ending_in_a_summary(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    result = planner("apply", str(write_plan(tmp_path, web_plan(namespace))), "--no-wait", "-o", "json")
    assert result.returncode == 0, result.stderr
    events = json_events(result.stdout)
    assert {e["type"] for e in events} == {"Planned", "Applying", "Applied", "Summary"}
    assert events[-1]["type"] == "Summary" and events[-1]["failed"] == [] and events[-1]["skipped"] == []
    applied = {e["object"] for e in events if e["type"] == "Applied"}
    assert f"deployment/{namespace}/web" in applied and f"configmap/{namespace}/web-config" in applied
    assert all(e["time"].endswith("Z") for e in events)
    assert "not-a-secret" not in result.stdout


# --- sandbox transitions (seed 003) --------------------------------------------------------------------


def sandbox_objects(cluster: ClusterHandle, namespace: str) -> dict[str, str]:
    """uid by `<kind>/<name>` for the sandbox's pod and PVCs."""
    base = f"/api/v1/namespaces/{namespace}"
    found = {}
    for kind, plural in (("pod", "pods"), ("pvc", "persistentvolumeclaims")):
        for item in get(cluster, f"{base}/{plural}")["items"]:
            found[f"{kind}/{item['metadata']['name']}"] = item["metadata"]["uid"]
    return found


def test_pause_resume_and_rebase_change_exactly_the_objects_seed_003_names(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    before = current_rv(cluster)
    apply_ok(planner, write_plan(tmp_path, sandbox_plan(namespace)), "--no-wait")
    base = f"/api/v1/namespaces/{namespace}"
    claims = created_at(cluster, f"{base}/persistentvolumeclaims", before)
    assert max(claims.values()) < created_at(cluster, f"{base}/pods", before)["alice"]  # volumes first
    running = sandbox_objects(cluster, namespace)
    assert set(running) == {"pod/alice", "pvc/alice-rootfs-g1", "pvc/alice-workspace"}

    apply_ok(planner, write_plan(tmp_path, sandbox_plan(namespace, state="paused")), "--no-wait")
    paused = sandbox_objects(cluster, namespace)
    assert paused == {k: v for k, v in running.items() if k != "pod/alice"}  # only the pod went
    workspace = get(cluster, f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/alice-workspace")
    assert workspace["metadata"]["annotations"]["planner.dev/sandbox-state"] == "paused"

    apply_ok(planner, write_plan(tmp_path, sandbox_plan(namespace)), "--no-wait")
    resumed = sandbox_objects(cluster, namespace)
    assert set(resumed) == set(running) and resumed["pvc/alice-workspace"] == running["pvc/alice-workspace"]

    apply_ok(planner, write_plan(tmp_path, sandbox_plan(namespace, generation=2)), "--no-wait")
    rebased = sandbox_objects(cluster, namespace)
    assert set(rebased) == {"pod/alice", "pvc/alice-rootfs-g2", "pvc/alice-workspace"}
    assert rebased["pvc/alice-workspace"] == running["pvc/alice-workspace"]


def test_a_fork_clones_the_source_sandboxes_volumes(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    apply_ok(planner, write_plan(tmp_path, sandbox_plan(namespace, fork=True)), "--no-wait")
    base = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    sources = {
        name: get(cluster, f"{base}/alice-fork-{name}")["spec"].get("dataSource", {}).get("name")
        for name in ("rootfs-g1", "workspace")
    }
    assert sources == {"rootfs-g1": "alice-rootfs-g1", "workspace": "alice-workspace"}


def test_a_fork_outlives_its_sources_rebase_and_still_grows(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    """A fork's dataSource is create-only: the source's rebase is no change to the fork's PVCs, and a
    later update of the fork keeps the dataSource it was created with."""
    fork_rootfs = "{size: 1Gi, generation: 1}"
    apply_ok(planner, write_plan(tmp_path, sandbox_plan(namespace, fork=True)))
    rebased = write_plan(tmp_path, sandbox_plan(namespace, generation=2, fork=True, fork_rootfs=fork_rootfs))

    planned = planner("plan", str(rebased), "-o", "json")
    apply_ok(planner, rebased)
    again = planner("plan", str(rebased), "--detailed-exitcode")
    grown = "{size: 3Gi, generation: 1}"
    apply_ok(
        planner, write_plan(tmp_path, sandbox_plan(namespace, generation=2, fork=True, fork_rootfs=grown))
    )

    changed = {r["object"] for r in json_events(planned.stdout) if r["type"] == "Planned"}
    assert changed and not {name for name in changed if "alice-fork" in name}, changed
    assert again.returncode == 0, again.stdout + again.stderr
    claim = get(cluster, f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/alice-fork-rootfs-g1")
    assert claim["spec"]["dataSource"]["name"] == "alice-rootfs-g1"
    assert claim["spec"]["resources"]["requests"]["storage"] == "3Gi"


# --- waits (controllers and node agent) ----------------------------------------------------------------


def chain_plan(namespace: str, *, exit_code: int | None = None) -> str:
    """A Job that runs 3 simulated seconds, a Deployment that depends on it, and one that does not."""
    failing = f', sim.planner.dev/exit-code: "{exit_code}"' if exit_code is not None else ""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: chain, namespace: {namespace}}}\n"
        "workloads:\n"
        "  - name: migrate\n"
        "    kind: job\n"
        "    image: busybox:1.36\n"
        "    backoffLimit: 0\n"
        f'    podAnnotations: {{sim.planner.dev/run-seconds: "3"{failing}}}\n'
        "  - name: web\n"
        "    image: nginx:1.27\n"
        "    dependsOn: [migrate]\n"
        "  - name: other\n"
        "    image: nginx:1.27\n"
    )


def test_a_dependent_is_created_only_after_its_job_completed_and_a_second_plan_is_empty(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(tmp_path, chain_plan(namespace))
    before = current_rv(cluster)
    apply_ok(planner, plan, "--timeout", "60s")
    completed = completed_at(cluster, namespace, "migrate", before)
    deployments = created_at(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", before)
    assert deployments["web"] > completed
    assert deployments["other"] < completed  # not held back by a dependency it does not have
    again = planner("plan", str(plan), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr


GRAPH_LINE = re.compile(r"^(?P<task>\S+ \S+)(?: \[timeout (?P<timeout>[^\]]+)\])?(?: <- (?P<after>.*))?$")
TaskLine = tuple[str, float | None, tuple[str, ...]]


def graph_tasks(output: str) -> list[TaskLine]:
    """`plan -o json --graph`'s task list: (task, timeout in seconds, predecessors), in order."""
    tasks = []
    for line in output.splitlines():
        if line.startswith("{") or not line:
            continue
        found = GRAPH_LINE.match(line)
        assert found, line
        timeout = found["timeout"]
        seconds = None if timeout is None else parse_duration(timeout)
        after = tuple(found["after"].split(", ")) if found["after"] else ()
        tasks.append((found["task"], seconds, after))
    return tasks


def ran_tasks(events: list[dict[str, Any]]) -> list[TaskLine]:
    """The tasks apply announced (`Planned`, in order) with the timeout each wait ran with (`Waiting`)."""
    timeouts = {e["task"]: e.get("timeout") for e in events if e["type"] == "Waiting"}
    return [
        (e["task"], timeouts.get(e["task"]), tuple(e.get("predecessors", ())))
        for e in events
        if e["type"] == "Planned"
    ]


def test_plan_graph_prints_exactly_the_task_list_apply_runs(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    text = chain_plan(namespace).replace("  - name: web\n", "  - name: web\n    timeout: 90s\n")
    plan = write_plan(tmp_path, text)
    graph = planner("plan", str(plan), "--graph", "-o", "json")
    assert graph.returncode == 0, graph.stderr
    applied = planner("apply", str(plan), "-o", "json")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    planned = graph_tasks(graph.stdout)
    assert (
        f"wait-ready deployment/{namespace}/web",
        90.0,
        (f"create deployment/{namespace}/web",),
    ) in planned
    assert (f"wait-ready job/{namespace}/migrate", 300.0, (f"create job/{namespace}/migrate",)) in planned
    assert ran_tasks(json_events(applied.stdout)) == planned


def test_a_failed_job_skips_exactly_its_dependents_and_fixing_the_plan_converges(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    result = planner(
        "apply", str(write_plan(tmp_path, chain_plan(namespace, exit_code=1))), "--timeout", "60s"
    )
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith(f"  failed wait-ready job/{namespace}/migrate: ") for line in lines), lines
    assert f"  skipped create deployment/{namespace}/web: wait-ready job/{namespace}/migrate failed" in lines
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    assert not exists(cluster, f"{deployments}/web")
    assert get(cluster, f"{deployments}/other")["status"].get("availableReplicas") == 1
    apply_ok(planner, write_plan(tmp_path, chain_plan(namespace)), "--timeout", "60s")
    assert get(cluster, f"{deployments}/web")["status"].get("availableReplicas") == 1


@pytest.mark.parametrize("no_wait", [True, False], ids=["no-wait", "waiting"])
def test_a_dependency_already_failed_skips_its_dependents_on_the_next_apply(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path, no_wait: bool
) -> None:
    plan = write_plan(tmp_path, chain_plan(namespace, exit_code=3))
    assert planner("apply", str(plan), "--timeout", "60s").returncode == 1
    again = planner("apply", str(plan), *(["--no-wait"] if no_wait else []))
    assert again.returncode == 1, again.stdout + again.stderr
    lines = again.stdout.splitlines()
    failed = [line for line in lines if line.startswith(f"  failed wait-ready job/{namespace}/migrate: ")]
    assert len(failed) == 1 and "its run-key ran: change its template or pass --rerun migrate" in failed[0]
    assert f"  skipped create deployment/{namespace}/web: wait-ready job/{namespace}/migrate failed" in lines
    assert not exists(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    selector = "planner.dev/plan=chain,planner.dev/generation"
    records = get(cluster, f"/api/v1/namespaces/{namespace}/secrets?labelSelector={selector}")["items"]
    results = {r["metadata"]["labels"]["planner.dev/generation"]: r["metadata"]["labels"] for r in records}
    assert {labels["planner.dev/result"] for labels in results.values()} == {"failed"}  # never converged


def test_a_job_template_change_runs_it_again(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    apply_ok(planner, write_plan(tmp_path, job_plan(namespace)), "--timeout", "60s")
    job_path = f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate"
    first = get(cluster, job_path)["metadata"]["uid"]
    apply_ok(planner, write_plan(tmp_path, job_plan(namespace, image="busybox:1.37")), "--timeout", "60s")
    job = get(cluster, job_path)
    assert job["metadata"]["uid"] != first
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.37"


def test_a_sandbox_whose_volumes_wait_for_their_first_consumer_still_converges(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    apply_ok(planner, write_plan(tmp_path, sandbox_plan(namespace, storage="wait")), "--timeout", "60s")
    pod = get(cluster, f"/api/v1/namespaces/{namespace}/pods/alice")
    assert any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"]["conditions"])


def test_errors_latency_and_dropped_watches_during_apply_still_converge(
    planner: Runner, cluster: ClusterHandle, namespace: str, tmp_path: Path
) -> None:
    from planner.testing.slimadmin import SlimAdmin

    plan = write_plan(tmp_path, chain_plan(namespace))
    faults = {
        "latencySeconds": 0.05,
        "errorRates": {"429": 0.1, "503": 0.1},
        "retryAfterSeconds": 0,
        "dropWatchAfterEvents": 2,
    }
    with SlimAdmin.of(cluster).faults(**faults):
        result = planner("apply", str(plan), "--timeout", "90s")
    assert result.returncode == 0, result.stdout + result.stderr
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    assert get(cluster, f"{deployments}/web")["status"].get("availableReplicas") == 1


@pytest.mark.parametrize(
    ("plan_text", "args", "expected"),
    [
        (
            "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: x}\nworkloads: [{name: a}]\n",
            (),
            "image",
        ),
        (None, ("--timeout", "soon"), "bad duration 'soon'"),
        (None, (), "no cluster configured"),
    ],
    ids=[
        "a broken plan is reported before any cluster is looked for",
        "a malformed timeout is a usage error",
        "no cluster configured says how to start one",
    ],
)
def test_apply_errors_exit_1_with_one_clear_message(
    planner: Runner, tmp_path: Path, plan_text: str | None, args: tuple[str, ...], expected: str
) -> None:
    plan = write_plan(tmp_path, plan_text or web_plan("default"))
    no_kubeconfig = {"KUBECONFIG": "", "HOME": str(tmp_path)}  # unset, and no ~/.kube/config
    result = planner("apply", str(plan), *args, env=no_kubeconfig)
    assert result.returncode == 1
    assert expected in result.stderr, result.stderr


def test_the_plans_own_timeout_overrides_the_command_lines_for_its_workload(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = write_plan(
        tmp_path,
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: slow, namespace: {namespace}}}\n"
        "workloads:\n"
        "  - name: stuck\n"
        "    image: nginx:1.27\n"
        "    timeout: 2s\n"
        '    podAnnotations: {sim.planner.dev/never-ready: "true"}\n',
    )
    started = time.monotonic()
    result = planner("apply", str(plan), "--timeout", "5m")
    assert result.returncode == 1
    assert (
        f"  failed wait-ready deployment/{namespace}/stuck: timed out after 2s waiting until ready"
        in result.stdout
    )
    assert time.monotonic() - started < 30


def test_one_plans_rollout_never_holds_up_another_plans_writes(
    cluster: ClusterHandle, home: Path, namespace: str, tmp_path: Path
) -> None:
    """Two plans in one apply: while the first one's Deployment cannot become ready (the node agent is
    paused), the second one's ConfigMap is written all the same, and the apply ends once both are done."""
    from planner.testing.slimadmin import SlimAdmin

    other = f"{namespace}-b"
    assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": other}})[0] == 201
    slow = write_plan(
        tmp_path,
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: slow, namespace: {namespace}}}\n"
        "workloads:\n  - {name: web, image: 'nginx:1.27'}\n",
        name="slow.yaml",
    )
    quick = write_plan(
        tmp_path,
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: quick, namespace: {other}}}\n"
        "configMaps:\n  - {name: flags, data: {MODE: fast}}\n",
        name="quick.yaml",
    )
    admin = SlimAdmin.of(cluster)
    admin.pause("nodeagent")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "KUBECONFIG": str(cluster.kubeconfig),
    }
    command = [sys.executable, "-m", "planner", "apply", str(slow), str(quick), "-o", "json"]
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        written = eventually(lambda: exists(cluster, f"/api/v1/namespaces/{other}/configmaps/flags"))
        running_then = process.poll() is None
    finally:
        admin.resume("nodeagent")
        out, err = process.communicate(timeout=120)

    assert written and running_then, out + err
    assert process.returncode == 0, out + err
    summaries = [e for e in map(json.loads, out.splitlines()) if e["type"] == "Summary"]
    assert [(s["done"][0], s["failed"]) for s in summaries] == [
        (f"parent secret/{other}/quick", []),
        (f"parent secret/{namespace}/slow", []),
    ]
    web = get(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert web["status"]["availableReplicas"] == 1
