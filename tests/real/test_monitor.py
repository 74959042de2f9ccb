"""The monitor against a real control plane: a Deployment ready, stopped and deleted; a Job's start and
exit still reported by `monitor --all` after the real TTL-after-finished controller deleted it (with
the ids an uninterrupted monitor gives it); a sandbox paused and resumed. Objects are made with raw
HTTP, as another tool would.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.test_lifecycle import claim, deployment, sandbox_pod
from tests.e2e.test_monitor import events_of, expected_id, summary
from tests.real.conftest import Runner, admin_context, eventually, http
from tests.realplane import RealCluster


def create(cluster: RealCluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    status, created = http(cluster, "POST", path, body)
    assert status == 201, created
    return dict(created)


def until_done(planner: Runner, *args: str) -> subprocess.CompletedProcess[str]:
    return planner("monitor", *args, "--until-done", "--timeout", "90s", "-o", "json")


def test_a_deployment_is_started_then_exited_when_stopped_then_deleted(
    cluster: RealCluster, planner: Runner, namespace: str
) -> None:
    create(cluster, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", namespace))
    rid = f"k8s-{namespace}|deployment|web"
    started = until_done(planner, rid)
    assert (started.returncode, summary(events_of(started.stdout))) == (
        0,
        [("ContainerStarted", rid, "ready 1/1")],
    )
    assert planner("stop", rid).returncode == 0
    stopped = until_done(planner, rid)
    assert [(e["type"], e["message"]) for e in events_of(stopped.stdout)] == [("ContainerExited", "0")]
    assert planner("delete", rid).returncode == 0
    deleted = until_done(planner, rid)
    assert [e["type"] for e in events_of(deleted.stdout)] == ["ContainerDeleted"]


def test_a_planned_job_deleted_by_its_ttl_is_still_reported_with_the_same_ids(
    cluster: RealCluster, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    since = http(cluster, "GET", f"{jobs}?limit=1")[1]["metadata"]["resourceVersion"]
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: batch, namespace: {namespace}}}\n"
        "workloads:\n  - {name: etl, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: 1}\n"
    )
    applied = planner("apply", str(plan), "--timeout", "90s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    eventually(lambda: http(cluster, "GET", f"{jobs}/etl")[0] == 404, what="the TTL controller's delete")
    watched = f"{cluster.url}{jobs}?watch=1&resourceVersion={since}&timeoutSeconds=1"
    with urllib.request.urlopen(watched, context=admin_context(cluster), timeout=30) as reply:
        added = [json.loads(line) for line in reply.read().decode().splitlines() if line.strip()]
    uid = next(e["object"]["metadata"]["uid"] for e in added if e["type"] == "ADDED")

    result = planner("monitor", "--all", "-n", namespace, "--until-done", "--timeout", "60s", "-o", "json")

    assert result.returncode == 0, result.stderr
    rid = f"k8s-{namespace}|job|etl"
    events = events_of(result.stdout)
    assert [(e["type"], e["event_id"]) for e in events] == [
        ("ContainerStarted", expected_id(rid, uid, "ContainerStarted")),
        ("ContainerExited", expected_id(rid, uid, "ContainerExited")),
    ]
    assert events[1]["message"] == "0"


def test_a_sandbox_is_started_paused_and_resumed(
    cluster: RealCluster, planner: Runner, namespace: str
) -> None:
    pod = sandbox_pod("box", namespace)
    state = {"planner.dev/sandbox-state": "running", "planner.dev/pod-spec": json.dumps(pod, sort_keys=True)}
    base = f"/api/v1/namespaces/{namespace}"
    create(cluster, f"{base}/persistentvolumeclaims", claim("box-rootfs-g2", namespace, "box"))
    create(cluster, f"{base}/persistentvolumeclaims", claim("box-workspace", namespace, "box", state))
    create(cluster, f"{base}/pods", pod)
    rid = f"k8s-{namespace}|sandbox|box"
    started = until_done(planner, rid)
    assert [e["type"] for e in events_of(started.stdout)] == ["ContainerStarted"], started.stderr
    assert planner("pause", rid).returncode == 0
    paused = until_done(planner, rid)
    assert [(e["type"], e["message"]) for e in events_of(paused.stdout)] == [("ContainerExited", "paused")]
    eventually(
        lambda: http(cluster, "GET", f"{base}/pods/box")[0] == 404, what="the paused sandbox's pod deleted"
    )
    assert planner("resume", rid).returncode == 0
    resumed = until_done(planner, rid)
    assert [e["type"] for e in events_of(resumed.stdout)] == ["ContainerStarted"]
    assert events_of(resumed.stdout)[0]["event_id"] != events_of(started.stdout)[0]["event_id"]
