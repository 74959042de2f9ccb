"""The monitor against a real control plane: a Deployment ready, stopped and deleted; Jobs' starts and
ends (a failed one's exit code too) still reported by `monitor --all` after the real TTL-after-finished
controller deleted them (with the ids an uninterrupted monitor gives them); a sandbox paused and resumed. Objects are made with raw
HTTP, as another tool would.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.e2e.test_lifecycle import claim, deployment, sandbox_pod
from tests.e2e.test_monitor import events_of, expected_id, summary
from tests.real.conftest import Runner, eventually, http
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


def held_by_its_ttl(cluster: RealCluster, path: str) -> dict[str, Any] | None:
    """The Job once the TTL controller deleted it (Foreground) and planner's finalizer holds it."""
    status, job = http(cluster, "GET", path)
    if status != 200 or not job["metadata"].get("deletionTimestamp"):
        return None
    return dict(job)


def test_planned_jobs_deleted_by_their_ttl_keep_their_pods_and_are_reported_with_the_same_ids(
    cluster: RealCluster, planner: Runner, namespace: str, tmp_path: Path
) -> None:
    """The real TTL-after-finished controller deletes with Foreground propagation, so the garbage
    collector goes for the pods first: the run-record finalizer in the pod template keeps the failed
    pod, and its exit code, until a monitor started after the TTL has recorded the outcome."""
    jobs, pods = f"/apis/batch/v1/namespaces/{namespace}/jobs", f"/api/v1/namespaces/{namespace}/pods"
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: batch, namespace: {namespace}}}\n"
        "workloads:\n  - {name: etl, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: 1}\n"
        "  - {name: bad, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: 1, backoffLimit: 0,\n"
        "     podAnnotations: {sim.planner.dev/exit-code: '7'}}\n"
    )
    applied = planner("apply", str(plan), "--no-wait")  # nobody watches them finish
    assert applied.returncode == 0, applied.stdout + applied.stderr
    held = {
        name: eventually(lambda name=name: held_by_its_ttl(cluster, f"{jobs}/{name}"), what=f"{name}'s TTL")
        for name in ("etl", "bad")
    }
    assert "foregroundDeletion" in held["bad"]["metadata"]["finalizers"], held["bad"]["metadata"]
    assert "planner.dev/run-record" in held["bad"]["metadata"]["finalizers"]
    uid = held["bad"]["metadata"]["uid"]
    (pod,) = http(cluster, "GET", f"{pods}?labelSelector=batch.kubernetes.io/controller-uid={uid}")[1][
        "items"
    ]
    assert pod["metadata"]["finalizers"] == ["planner.dev/run-record"], pod["metadata"]  # GC deleted it
    assert pod["metadata"].get("deletionTimestamp"), pod["metadata"]

    result = planner("monitor", "--all", "-n", namespace, "--until-done", "--timeout", "60s", "-o", "json")

    assert result.returncode == 1, result.stdout + result.stderr  # bad failed
    events = events_of(result.stdout)
    expected = []
    for name, end in (("bad", "ContainerFailed"), ("etl", "ContainerExited")):
        rid, job_uid = f"k8s-{namespace}|job|{name}", held[name]["metadata"]["uid"]
        expected += [(t, expected_id(rid, job_uid, t)) for t in ("ContainerStarted", end)]
    assert [(e["type"], e["event_id"]) for e in events] == expected
    assert (events[1]["exit_code"], events[3]["message"]) == (7, "0")
    for name in ("etl", "bad"):  # recorded, so let go: the TTL's deletion finishes
        eventually(lambda name=name: http(cluster, "GET", f"{jobs}/{name}")[0] == 404, what=f"{name} gone")
    eventually(lambda: not http(cluster, "GET", pods)[1]["items"], what="the pods gone")
    again = planner("monitor", "--all", "-n", namespace, "--until-done", "--timeout", "60s", "-o", "json")
    assert [(e["type"], e["event_id"]) for e in events_of(again.stdout)] == expected  # from the records
    assert events_of(again.stdout)[1]["exit_code"] == 7


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
