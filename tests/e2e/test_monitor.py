"""`planner monitor` end to end: real informers over real HTTP against the embedded cluster, with its
controllers and node agent paused so each test writes the workload status it needs (through the
`/status` subresource, as a controller would) and the events are exactly predictable.

Event ids are checked against DESIGN §5's formula written out here by hand: sha256 of
"<runtime ID>\\n<object uid>\\n<event type>".
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import REPO, Runner, events_since, http, put_retrying
from tests.e2e.test_lifecycle import create, deployment, get, job, make_sandbox
from tests.simulated import eventually


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(simulate=True, paused=("controllers", "nodeagent")) as handle:
        yield handle


def expected_id(runtime_id: str, uid: str, event_type: str) -> str:
    return hashlib.sha256(f"{runtime_id}\n{uid}\n{event_type}".encode()).hexdigest()


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["type"], e["runtime_id"], e["message"]) for e in events]


def set_status(cluster: ClusterHandle, path: str, status: dict[str, Any]) -> None:
    put_retrying(cluster, f"{path}/status", lambda current: current | {"status": status}, read=path)


def jobs(namespace: str) -> str:
    return f"/apis/batch/v1/namespaces/{namespace}/jobs"


def deployments(namespace: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments"


class Background:
    """`planner monitor ...` running while the test changes the cluster."""

    def __init__(self, cluster: ClusterHandle, home: Path, *args: str) -> None:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "planner", "monitor", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        self.seen: list[dict[str, Any]] = []

    def first_event(self) -> dict[str, Any]:
        """Block until the monitor reports its first event: it has registered and taken its snapshot."""
        return self.read_until(1)[0]

    def read_until(self, count: int) -> list[dict[str, Any]]:
        """Block until the monitor has reported `count` events in all; every event read so far."""
        assert self.process.stdout is not None
        while len(self.seen) < count:
            line = self.process.stdout.readline()
            assert line, f"the monitor ended after {len(self.seen)} events, expected {count}"
            self.seen.append(json.loads(line))
        return self.seen

    def kill(self) -> list[dict[str, Any]]:
        """SIGKILL: no cleanup, no flush of anything not yet printed. The events read before it."""
        self.process.kill()
        self.process.wait(10)
        return self.seen

    def finish(self, timeout: float = 30.0) -> tuple[int, list[dict[str, Any]], str]:
        stdout, stderr = self.process.communicate(timeout=timeout)
        return self.process.returncode, self.seen + events_of(stdout), stderr


def test_a_job_finished_before_registration_yields_started_then_exited(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    created = create(cluster, jobs(namespace), job("etl", namespace))
    set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1})
    rid = f"k8s-{namespace}|job|etl"
    result = planner("monitor", rid, "--until-done", "--timeout", "20s", "-o", "json")
    assert result.returncode == 0, result.stderr
    events = events_of(result.stdout)
    assert summary(events) == [
        ("ContainerStarted", rid, "active 0, succeeded 1"),
        ("ContainerExited", rid, "0"),
    ]
    uid = created["metadata"]["uid"]
    assert [e["event_id"] for e in events] == [
        expected_id(rid, uid, "ContainerStarted"),
        expected_id(rid, uid, "ContainerExited"),
    ]
    assert [e["object"] for e in events] == [f"job/{namespace}/etl"] * 2
    again = events_of(planner("monitor", rid, "--until-done", "--timeout", "20s", "-o", "json").stdout)
    assert [e["event_id"] for e in again] == [e["event_id"] for e in events]  # a restart: same ids


def test_replayed_events_carry_the_times_the_objects_record_not_the_replay_time(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, jobs(namespace), job("done", namespace))
    set_status(
        cluster,
        f"{jobs(namespace)}/done",
        {"startTime": "2026-11-29T10:00:00Z", "completionTime": "2026-11-29T10:05:00Z", "succeeded": 1},
    )
    create(cluster, jobs(namespace), job("broken", namespace))
    failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many"}
    set_status(
        cluster,
        f"{jobs(namespace)}/broken",
        {
            "startTime": "2026-11-29T11:00:00Z",
            "conditions": [failed | {"lastTransitionTime": "2026-11-29T11:02:03Z"}],
        },
    )
    done, broken = f"k8s-{namespace}|job|done", f"k8s-{namespace}|job|broken"

    result = planner("monitor", done, broken, "--until-done", "--timeout", "20s", "-o", "json")

    times = {(e["runtime_id"], e["type"]): e["time"] for e in events_of(result.stdout)}
    assert times == {
        (done, "ContainerStarted"): "2026-11-29T10:00:00.000Z",
        (done, "ContainerExited"): "2026-11-29T10:05:00.000Z",
        (broken, "ContainerStarted"): "2026-11-29T11:00:00.000Z",
        (broken, "ContainerFailed"): "2026-11-29T11:02:03.000Z",
    }, result.stdout + result.stderr


def test_two_registrations_of_one_id_report_each_event_once(
    cluster: ClusterHandle, home: Path, namespace: str
) -> None:
    create(cluster, jobs(namespace), job("etl", namespace))
    set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": "2026-11-29T10:00:00Z", "active": 1})
    rid = f"k8s-{namespace}|job|etl"
    running = Background(cluster, home, rid, rid, "--until-done", "--timeout", "20s", "-o", "json")
    running.first_event()
    set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1})
    code, events, stderr = running.finish()
    assert code == 0, stderr
    assert [e["type"] for e in events] == ["ContainerStarted", "ContainerExited"]


def test_a_job_failing_past_its_backoff_limit_fails_with_the_condition_message(
    cluster: ClusterHandle, home: Path, namespace: str
) -> None:
    create(cluster, jobs(namespace), job("etl", namespace))
    rid = f"k8s-{namespace}|job|etl"
    path = f"{jobs(namespace)}/etl"
    set_status(cluster, path, {"startTime": "2026-11-29T10:00:00Z", "active": 1})
    running = Background(cluster, home, rid, "--until-done", "--timeout", "20s", "-o", "json")
    running.first_event()
    set_status(cluster, path, {"startTime": "2026-11-29T10:00:00Z", "active": 1, "failed": 1})  # retrying
    failed = {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the specified backoff limit",
    }
    set_status(cluster, path, {"startTime": "2026-11-29T10:00:00Z", "failed": 2, "conditions": [failed]})
    code, events, stderr = running.finish()
    assert code == 1, stderr
    assert summary(events) == [
        ("ContainerStarted", rid, "active 1, succeeded 0"),
        ("ContainerFailed", rid, "Job has reached the specified backoff limit"),
    ]


def test_a_job_that_fails_once_then_succeeds_exits_0_without_a_failure(
    cluster: ClusterHandle, home: Path, namespace: str
) -> None:
    create(cluster, jobs(namespace), job("etl", namespace))
    rid = f"k8s-{namespace}|job|etl"
    path = f"{jobs(namespace)}/etl"
    set_status(cluster, path, {"startTime": "2026-11-29T10:00:00Z", "active": 1, "failed": 1})
    running = Background(cluster, home, rid, "--until-done", "--timeout", "20s", "-o", "json")
    running.first_event()
    set_status(cluster, path, {"startTime": "2026-11-29T10:00:00Z", "failed": 1, "succeeded": 1})
    code, events, stderr = running.finish()
    assert code == 0, stderr
    assert [e["type"] for e in events] == ["ContainerStarted", "ContainerExited"]


def test_deployment_ready_then_scaled_to_zero(
    cluster: ClusterHandle, planner: Runner, home: Path, namespace: str
) -> None:
    created = create(cluster, deployments(namespace), deployment("web", namespace))
    rid = f"k8s-{namespace}|deployment|web"
    path = f"{deployments(namespace)}/web"
    set_status(cluster, path, {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1})
    running = Background(cluster, home, rid, "--timeout", "8s", "-o", "json")
    running.first_event()
    assert planner("stop", rid).returncode == 0
    set_status(cluster, path, {"replicas": 0})
    code, events, stderr = running.finish()
    assert code == 0, stderr
    assert summary(events) == [("ContainerStarted", rid, "ready 1/1"), ("ContainerExited", rid, "0")]
    assert events[1]["event_id"] == expected_id(rid, created["metadata"]["uid"], "ContainerExited")


def test_a_deleted_deployment_reports_deleted(
    cluster: ClusterHandle, planner: Runner, home: Path, namespace: str
) -> None:
    create(cluster, deployments(namespace), deployment("web", namespace))
    rid = f"k8s-{namespace}|deployment|web"
    running = Background(cluster, home, rid, "--until-done", "--timeout", "20s", "-o", "json")
    time.sleep(1.0)
    assert planner("delete", rid).returncode == 0
    code, events, stderr = running.finish()
    assert code == 0, stderr
    assert summary(events) == [("ContainerDeleted", rid, f"deployment {namespace}/web is gone")]


def test_progress_deadline_exceeded_fails_the_deployment(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, deployments(namespace), deployment("web", namespace))
    deadline = {
        "type": "Progressing",
        "status": "False",
        "reason": "ProgressDeadlineExceeded",
        "message": 'ReplicaSet "web-1" has timed out progressing.',
    }
    set_status(cluster, f"{deployments(namespace)}/web", {"replicas": 1, "conditions": [deadline]})
    rid = f"k8s-{namespace}|deployment|web"
    result = planner("monitor", rid, "--until-done", "--timeout", "20s", "-o", "json")
    assert result.returncode == 1
    assert summary(events_of(result.stdout)) == [
        ("ContainerFailed", rid, 'ReplicaSet "web-1" has timed out progressing.')
    ]


def test_a_missing_workload_is_reported_deleted(planner: Runner, namespace: str) -> None:
    rid = f"k8s-{namespace}|job|never"
    result = planner("monitor", rid, "--until-done", "--timeout", "20s", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert summary(events_of(result.stdout)) == [("ContainerDeleted", rid, f"job {namespace}/never is gone")]
    assert events_of(result.stdout)[0]["event_id"] == expected_id(rid, "", "ContainerDeleted")
    text = planner("monitor", rid, "--until-done", "--timeout", "20s").stdout
    assert text.split("  ", 1)[1].split() == [
        "ContainerDeleted",
        rid,
        "job",
        f"{namespace}/never",
        "is",
        "gone",
    ]


def test_monitor_rejects_a_malformed_runtime_id(planner: Runner) -> None:
    result = planner("monitor", "not-an-id", "--until-done")
    assert result.returncode == 1
    assert "malformed runtime ID 'not-an-id'" in result.stderr


def ready(pod_path: str, cluster: ClusterHandle) -> None:
    set_status(
        cluster,
        pod_path,
        {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}], "podIP": "10.244.0.9"},
    )


def test_sandbox_rebase_is_silent_pause_exits_and_resume_starts_again(
    cluster: ClusterHandle, planner: Runner, home: Path, namespace: str
) -> None:
    make_sandbox(cluster, namespace)
    pod_path = f"/api/v1/namespaces/{namespace}/pods/box"
    ready(pod_path, cluster)
    rid = f"k8s-{namespace}|sandbox|box"
    running = Background(cluster, home, rid, "--timeout", "8s", "-o", "json")
    running.first_event()
    pod = get(cluster, pod_path)
    assert pod is not None
    code, _ = http(cluster, "DELETE", pod_path)  # a rebase: the pod goes while the state says running
    assert code == 200
    create(
        cluster,
        f"/api/v1/namespaces/{namespace}/pods",
        {k: pod[k] for k in ("apiVersion", "kind", "spec")}
        | {"metadata": {k: pod["metadata"][k] for k in ("name", "namespace", "labels", "annotations")}},
    )
    ready(pod_path, cluster)
    time.sleep(0.5)
    assert planner("pause", rid).returncode == 0
    code, events, stderr = running.finish()
    assert code == 0, stderr
    assert summary(events) == [("ContainerStarted", rid, "pod Ready"), ("ContainerExited", rid, "paused")]
    assert events[0]["event_id"] == expected_id(rid, pod["metadata"]["uid"], "ContainerStarted")


def test_attach_all_follows_every_managed_workload_in_the_namespace(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, deployments(namespace), deployment("web", namespace))
    set_status(cluster, f"{deployments(namespace)}/web", {"replicas": 1, "readyReplicas": 1})
    create(cluster, jobs(namespace), job("etl", namespace))
    set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1})
    result = planner("monitor", "--all", "-n", namespace, "--until-done", "--timeout", "20s", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert sorted(summary(events_of(result.stdout))) == [
        ("ContainerExited", f"k8s-{namespace}|job|etl", "0"),
        ("ContainerStarted", f"k8s-{namespace}|deployment|web", "ready 1/1"),
        ("ContainerStarted", f"k8s-{namespace}|job|etl", "active 0, succeeded 1"),
    ]


def labelled_pod(name: str, namespace: str, workload: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": workload, "gobrave-workload": workload},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "ghcr.io/acme/app:1"}],
        },
    }


def test_status_shows_the_newest_pod_as_kubectl_does(
    cluster: ClusterHandle, planner: Runner, namespace: str
) -> None:
    create(cluster, jobs(namespace), job("etl", namespace))
    set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1})
    create(cluster, f"/api/v1/namespaces/{namespace}/pods", labelled_pod("etl-abcde", namespace, "etl"))
    completed = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    container = {
        "name": "main",
        "ready": False,
        "restartCount": 0,
        "image": "x",
        "imageID": "",
        "state": completed,
    }
    set_status(
        cluster,
        f"/api/v1/namespaces/{namespace}/pods/etl-abcde",
        {"phase": "Succeeded", "containerStatuses": [container]},
    )
    create(cluster, deployments(namespace), deployment("web", namespace))
    create(cluster, f"/api/v1/namespaces/{namespace}/pods", labelled_pod("web-1", namespace, "web"))
    crashing = container | {"restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    set_status(
        cluster,
        f"/api/v1/namespaces/{namespace}/pods/web-1",
        {"phase": "Running", "containerStatuses": [crashing]},
    )
    result = planner("status", f"k8s-{namespace}|job|etl", f"k8s-{namespace}|deployment|web", "-o", "json")
    assert result.returncode == 0, result.stderr
    rows = [
        {k: r[k] for k in ("runtime_id", "state", "ready", "restarts", "status", "message")}
        for r in events_of(result.stdout)
    ]
    assert rows == [
        {
            "runtime_id": f"k8s-{namespace}|job|etl",
            "state": "Exited",
            "ready": "0/1",
            "restarts": 0,
            "status": "Completed",
            "message": "0",
        },
        {
            "runtime_id": f"k8s-{namespace}|deployment|web",
            "state": "Created",
            "ready": "0/1",
            "restarts": 3,
            "status": "CrashLoopBackOff",
            "message": "",
        },
    ]
    text = planner("status", f"k8s-{namespace}|deployment|web").stdout.splitlines()
    assert text[0].split() == ["RUNTIME", "ID", "STATE", "READY", "RESTARTS", "STATUS", "AGE", "MESSAGE"]
    assert text[1].split()[:5] == [
        f"k8s-{namespace}|deployment|web",
        "Created",
        "0/1",
        "3",
        "CrashLoopBackOff",
    ]


def test_status_ready_of_a_deployment_counts_its_replicas_as_kubectl_get_deploy(
    cluster: ClusterHandle, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    two = deployment("web", namespace)
    two["spec"]["replicas"] = 2
    create(cluster, deployments(namespace), two)
    set_status(cluster, f"{deployments(namespace)}/web", {"replicas": 2, "readyReplicas": 1})
    create(cluster, f"/api/v1/namespaces/{namespace}/pods", labelled_pod("web-1", namespace, "web"))
    ready = {"name": "main", "ready": True, "restartCount": 0, "image": "x", "imageID": ""}
    running = ready | {"state": {"running": {"startedAt": "2026-11-29T10:00:00Z"}}}
    set_status(
        cluster,
        f"/api/v1/namespaces/{namespace}/pods/web-1",
        {
            "phase": "Running",
            "containerStatuses": [running],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    )
    result = planner("status", f"k8s-{namespace}|deployment|web", "-o", "json")
    assert result.returncode == 0, result.stderr
    [row] = events_of(result.stdout)
    shown = kubectl("get", "deployment", "web", "-n", namespace, "--no-headers").stdout.split()
    assert row["ready"] == shown[1] == "1/2"


def shop_plan(directory: Path, namespace: str, body: str) -> Path:
    plan = directory / "plan.yaml"
    plan.write_text(
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: shop, namespace: {namespace}}}\n{body}"
    )
    return plan


def test_status_of_a_plan_lists_its_workloads_and_sandboxes(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = shop_plan(
        tmp_path,
        namespace,
        "workloads:\n  - name: web\n    image: nginx:1.27\n  - name: etl\n    kind: job\n    image: busybox:1.36\n",
    )
    result = planner("status", str(plan), "-o", "json")
    assert result.returncode == 0, result.stderr
    assert [(r["runtime_id"], r["state"], r["age"], r["message"]) for r in events_of(result.stdout)] == [
        (f"k8s-{namespace}|deployment|web", "NotFound", "-", f"deployment {namespace}/web not found"),
        (f"k8s-{namespace}|job|etl", "NotFound", "-", f"job {namespace}/etl not found"),
    ]  # never applied: not `Deleted`, which would say they were there


def test_status_of_a_runtime_id_that_never_existed_says_not_found(planner: Runner, namespace: str) -> None:
    result = planner("status", f"k8s-{namespace}|deployment|nosuch")
    assert result.returncode == 0, result.stderr
    _header, row = result.stdout.splitlines()
    assert row.split()[:2] == [f"k8s-{namespace}|deployment|nosuch", "NotFound"]
    assert row.endswith(f"deployment {namespace}/nosuch not found") and "gone" not in row


def test_status_of_a_plan_without_workloads_or_sandboxes_says_so(
    planner: Runner, namespace: str, tmp_path: Path
) -> None:
    plan = shop_plan(tmp_path, namespace, "configMaps:\n  - {name: settings, data: {a: b}}\n")
    result = planner("status", str(plan))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {plan}: no workloads or sandboxes to show (status shows those; `planner plan` tells "
        "whether a plan's other objects match)\n"
    )


STEPS = ("web ready", "etl active", "web scaled to 0", "etl succeeded")


def take_step(cluster: ClusterHandle, planner: Runner, namespace: str, step: str) -> None:
    started = "2026-11-29T10:00:00Z"
    if step == "web ready":
        set_status(cluster, f"{deployments(namespace)}/web", {"replicas": 1, "readyReplicas": 1})
    elif step == "etl active":
        set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": started, "active": 1})
    elif step == "web scaled to 0":
        assert planner("stop", f"k8s-{namespace}|deployment|web").returncode == 0
        set_status(cluster, f"{deployments(namespace)}/web", {"replicas": 0})
    else:
        set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": started, "succeeded": 1})


@pytest.mark.parametrize(
    "crash_after",
    [1, 2, 3],
    ids=[
        "killed after the deployment started, two steps happen while it is down",
        "killed after both started, the deployment exits while it is down",
        "killed after the deployment exited, the job finishes while it is down",
    ],
)
def test_a_killed_and_restarted_monitor_reports_the_same_event_ids_as_an_uninterrupted_one(
    cluster: ClusterHandle, planner: Runner, home: Path, namespace: str, crash_after: int
) -> None:
    create(cluster, deployments(namespace), deployment("web", namespace))
    create(cluster, jobs(namespace), job("etl", namespace))
    ids = (f"k8s-{namespace}|deployment|web", f"k8s-{namespace}|job|etl")
    flags = ("--until-done", "--timeout", "30s", "-o", "json")
    take_step(cluster, planner, namespace, STEPS[0])
    steady = Background(cluster, home, *ids, *flags)
    crashing = Background(cluster, home, *ids, *flags)
    steady.first_event()  # each has registered and reported the deployment's start
    crashing.first_event()
    before_crash = crashing.kill() if crash_after == 1 else []
    for number, step in enumerate(STEPS[1:], start=2):
        take_step(cluster, planner, namespace, step)
        if number <= crash_after:
            crashing.read_until(number)  # each step yields exactly one event
        if number == crash_after:
            before_crash = crashing.kill()
    restarted = Background(cluster, home, *ids, *flags)
    code, after_restart, stderr = restarted.finish()
    assert code == 0, stderr
    _, uninterrupted, _ = steady.finish()
    assert len(uninterrupted) == 4
    assert {e["event_id"] for e in before_crash + after_restart} == {e["event_id"] for e in uninterrupted}


def test_a_job_deleted_while_the_monitor_was_down_is_reported_deleted_on_restart(
    cluster: ClusterHandle, home: Path, namespace: str
) -> None:
    create(cluster, jobs(namespace), job("etl", namespace))
    path = f"{jobs(namespace)}/etl"
    set_status(cluster, path, {"startTime": "2026-11-29T10:00:00Z", "active": 1})
    rid = f"k8s-{namespace}|job|etl"
    first = Background(cluster, home, rid, "--until-done", "--timeout", "30s", "-o", "json")
    assert first.first_event()["type"] == "ContainerStarted"
    first.kill()
    set_status(cluster, path, {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1})
    background = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    code, _ = http(cluster, "DELETE", path, background)  # the TTL controller's delete (no GC running here)
    assert code == 200
    again = Background(cluster, home, rid, "--until-done", "--timeout", "30s", "-o", "json")
    code, events, stderr = again.finish()
    assert code == 0, stderr
    assert summary(events) == [("ContainerDeleted", rid, f"job {namespace}/etl is gone")]


# --- against the simulated controllers and node agent (time scale 0.1) ------------------------------


@pytest.fixture(scope="module")
def simulated() -> Iterator[ClusterHandle]:
    """A second cluster whose controllers and node agent run, ten times faster than real time."""
    with running_cluster(simulate=True, time_scale=0.1) as handle:
        yield handle


@pytest.fixture
def sim_namespace(simulated: ClusterHandle) -> str:
    name = f"sim{os.getpid()}-{next(_sim_names)}"
    status, body = http(simulated, "POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    return name


@pytest.fixture
def sim_planner(simulated: ClusterHandle, home: Path) -> Runner:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(simulated.kubeconfig)}
        command = [sys.executable, "-m", "planner", *args]
        return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)

    return run


_sim_names = itertools.count()


def with_knobs(manifest: dict[str, Any], **knobs: str) -> dict[str, Any]:
    annotations = {f"sim.planner.dev/{key.replace('_', '-')}": value for key, value in knobs.items()}
    manifest["spec"]["template"]["metadata"]["annotations"] = annotations
    return manifest


def monitor_until_done(run: Runner, rid: str) -> tuple[int, list[dict[str, Any]]]:
    result = run("monitor", rid, "--until-done", "--timeout", "60s", "-o", "json")
    return result.returncode, events_of(result.stdout)


def test_sim_a_job_that_exits_0_starts_then_exits(
    simulated: ClusterHandle, sim_planner: Runner, sim_namespace: str
) -> None:
    create(simulated, jobs(sim_namespace), job("etl", sim_namespace))
    rid = f"k8s-{sim_namespace}|job|etl"
    code, events = monitor_until_done(sim_planner, rid)
    assert code == 0
    assert [(e["type"], e["message"]) for e in events][-1] == ("ContainerExited", "0")
    assert [e["type"] for e in events] == ["ContainerStarted", "ContainerExited"]


def test_sim_a_job_failing_past_its_backoff_limit_fails_with_the_condition_message(
    simulated: ClusterHandle, sim_planner: Runner, sim_namespace: str
) -> None:
    failing = with_knobs(job("etl", sim_namespace), exit_code="1")
    failing["spec"]["backoffLimit"] = 1
    create(simulated, jobs(sim_namespace), failing)
    rid = f"k8s-{sim_namespace}|job|etl"
    code, events = monitor_until_done(sim_planner, rid)
    assert code == 1
    live = get(simulated, f"{jobs(sim_namespace)}/etl")
    assert live is not None
    condition = next(c for c in live["status"]["conditions"] if c["type"] == "Failed")
    assert condition["message"] == "Job has reached the specified backoff limit"
    assert summary(events) == [
        ("ContainerStarted", rid, events[0]["message"]),
        ("ContainerFailed", rid, "Job has reached the specified backoff limit"),
    ]


def test_sim_deployment_ready_then_stopped_then_deleted(
    simulated: ClusterHandle, sim_planner: Runner, sim_namespace: str
) -> None:
    create(simulated, deployments(sim_namespace), deployment("web", sim_namespace))
    rid = f"k8s-{sim_namespace}|deployment|web"
    code, events = monitor_until_done(sim_planner, rid)
    assert (code, summary(events)) == (0, [("ContainerStarted", rid, "ready 1/1")])
    assert sim_planner("stop", rid).returncode == 0
    code, events = monitor_until_done(sim_planner, rid)
    assert (code, [e["type"] for e in events]) == (0, ["ContainerExited"])
    assert events[0]["message"] == "0"
    assert sim_planner("delete", rid).returncode == 0
    code, events = monitor_until_done(sim_planner, rid)
    assert (code, [e["type"] for e in events]) == (0, ["ContainerDeleted"])


def test_sim_progress_deadline_exceeded_fails_the_deployment(
    simulated: ClusterHandle, sim_planner: Runner, sim_namespace: str
) -> None:
    stuck = with_knobs(deployment("web", sim_namespace), never_ready="true")
    stuck["spec"]["progressDeadlineSeconds"] = 5
    create(simulated, deployments(sim_namespace), stuck)
    rid = f"k8s-{sim_namespace}|deployment|web"
    code, events = monitor_until_done(sim_planner, rid)
    assert code == 1
    assert [e["type"] for e in events] == ["ContainerFailed"]
    assert "has timed out progressing" in events[0]["message"]


def pod_ready(cluster: ClusterHandle, namespace: str, name: str) -> bool:
    pod = get(cluster, f"/api/v1/namespaces/{namespace}/pods/{name}")
    conditions = (pod or {}).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def wait_until(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_sim_sandbox_pause_exits_resume_starts_and_a_rebase_is_silent(
    simulated: ClusterHandle, sim_planner: Runner, home: Path, sim_namespace: str
) -> None:
    make_sandbox(simulated, sim_namespace)
    rid = f"k8s-{sim_namespace}|sandbox|box"
    pod_path = f"/api/v1/namespaces/{sim_namespace}/pods/box"
    wait_until(lambda: pod_ready(simulated, sim_namespace, "box"))
    running = Background(simulated, home, rid, "--timeout", "15s", "-o", "json")
    assert running.first_event()["type"] == "ContainerStarted"
    pod = get(simulated, pod_path)
    assert pod is not None
    http(simulated, "DELETE", pod_path)  # a rebase: the pod goes while the state says running ...
    wait_until(lambda: get(simulated, pod_path) is None)
    workspace = get(simulated, f"/api/v1/namespaces/{sim_namespace}/persistentvolumeclaims/box-workspace")
    assert workspace is not None
    recorded = json.loads(workspace["metadata"]["annotations"]["planner.dev/pod-spec"])
    create(simulated, f"/api/v1/namespaces/{sim_namespace}/pods", recorded)
    wait_until(lambda: pod_ready(simulated, sim_namespace, "box"))  # ... and comes back
    assert sim_planner("pause", rid).returncode == 0
    code, events, stderr = running.finish()
    assert code == 0, stderr
    assert [(e["type"], e["message"]) for e in events][1:] == [("ContainerExited", "paused")]
    assert sim_planner("resume", rid).returncode == 0
    code, resumed = monitor_until_done(sim_planner, rid)
    assert (code, [e["type"] for e in resumed]) == (0, ["ContainerStarted"])
    assert resumed[0]["event_id"] != events[0]["event_id"]  # a new pod: a new start


# --- faults ------------------------------------------------------------------------------------------


def set_status_retrying(cluster: ClusterHandle, path: str, status: dict[str, Any]) -> None:
    """set_status through injected 429/500/503 answers (the test's own writes are not under test)."""
    for _ in range(200):
        code, current = http(cluster, "GET", path)
        if code == 200:
            code, current = http(cluster, "PUT", f"{path}/status", current | {"status": status})
            if code == 200:
                return
        assert code in (429, 500, 503), (code, current)
        time.sleep(0.02)
    raise AssertionError(f"could not write the status of {path}")


def test_under_watch_drops_forced_410s_and_503_bursts_no_event_is_missed_or_repeated(
    cluster: ClusterHandle, home: Path, namespace: str
) -> None:
    names = [f"job-{index:03d}" for index in range(200)]
    for name in names:
        create(cluster, jobs(namespace), job(name, namespace))
    create(cluster, jobs(namespace), job("sentinel", namespace))
    set_status(cluster, f"{jobs(namespace)}/sentinel", {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1})
    ids = [f"k8s-{namespace}|job|{name}" for name in [*names, "sentinel"]]
    running = Background(cluster, home, *ids, "--until-done", "--timeout", "150s", "-o", "json")
    running.read_until(2)  # the sentinel, registered last, reported: every ID is registered
    admin = SlimAdmin.of(cluster)
    watches, lists = (admin.request_count(verb=verb, resource="jobs") for verb in ("watch", "list"))
    admin.set_faults(dropWatchAfterEvents=3, expireNextWatches=2, errorRates={"503": 0.2}, seed=7)
    try:
        for name in names:
            set_status_retrying(
                cluster, f"{jobs(namespace)}/{name}", {"startTime": "2026-11-29T10:00:00Z", "active": 1}
            )
        for name in names:
            set_status_retrying(
                cluster, f"{jobs(namespace)}/{name}", {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1}
            )
        code, events, stderr = running.finish(timeout=180)
    finally:
        admin.clear_faults()
    assert code == 0, stderr[-2000:]
    reported = Counter((event["runtime_id"], event["type"]) for event in events)
    expected = {(rid, kind) for rid in ids for kind in ("ContainerStarted", "ContainerExited")}
    assert set(reported) == expected  # nothing missed
    assert max(reported.values()) == 1  # nothing repeated
    assert admin.request_count(verb="watch", resource="jobs") - watches >= 50  # streams were cut and resumed
    assert admin.request_count(verb="list", resource="jobs") - lists >= 2  # 410s forced relists


def test_status_watch_prints_again_when_a_row_changes(
    cluster: ClusterHandle, home: Path, namespace: str
) -> None:
    create(cluster, jobs(namespace), job("etl", namespace))
    rid = f"k8s-{namespace}|job|etl"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "KUBECONFIG": str(cluster.kubeconfig)}
    command = [sys.executable, "-m", "planner", "status", rid, "--watch", "--timeout", "5s", "-o", "json"]
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    first = json.loads(process.stdout.readline())
    set_status(cluster, f"{jobs(namespace)}/etl", {"startTime": "2026-11-29T10:00:00Z", "succeeded": 1})
    rest, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert [first["state"], *(row["state"] for row in events_of(rest))] == ["Created", "Exited"]


def test_sim_monitor_all_reports_a_planned_job_deleted_by_its_ttl_while_no_monitor_ran(
    simulated: ClusterHandle, sim_planner: Runner, sim_namespace: str, tmp_path: Path
) -> None:
    """No labelled object is left, but the plan's parent Secret records the run and, since apply waited
    for it, how it ended: `--all` still reports it Started and Exited, with the ids an uninterrupted
    monitor gave it (made from the Job's uid)."""
    listed = http(simulated, "GET", f"{jobs(sim_namespace)}?limit=1")[1]
    since = listed["metadata"]["resourceVersion"]
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: batch, namespace: {sim_namespace}}}\n"
        "workloads:\n  - {name: etl, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: 1}\n"
    )
    applied = sim_planner("apply", str(plan), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    deadline = time.monotonic() + 30
    while get(simulated, f"{jobs(sim_namespace)}/etl") is not None:  # the TTL controller deletes it
        assert time.monotonic() < deadline, "the finished Job was never deleted"
        time.sleep(0.2)
    added = events_since(simulated, jobs(sim_namespace), since)
    uid = next(e["object"]["metadata"]["uid"] for e in added if e["type"] == "ADDED")
    # Another ApplySet tool's parent whose data happens to decode as a run record is not planner's.
    record = base64.b64encode(json.dumps({"name": "ghost", "namespace": sim_namespace, "uid": "u"}).encode())
    foreign = {
        "metadata": {"name": "other-tool", "labels": {"applyset.kubernetes.io/id": "applyset-x-v1"}},
        "data": {"k": record.decode()},
    }
    assert http(simulated, "POST", f"/api/v1/namespaces/{sim_namespace}/secrets", foreign)[0] == 201

    result = sim_planner(
        "monitor", "--all", "-n", sim_namespace, "--until-done", "--timeout", "30s", "-o", "json"
    )
    assert result.returncode == 0, result.stderr
    rid = f"k8s-{sim_namespace}|job|etl"
    events = events_of(result.stdout)
    assert [(e["type"], e["event_id"]) for e in events] == [
        ("ContainerStarted", expected_id(rid, uid, "ContainerStarted")),
        ("ContainerExited", expected_id(rid, uid, "ContainerExited")),
    ]
    assert events[1]["message"] == "0"


def batch_plan(namespace: str, *, ttl: int) -> str:
    """Two Jobs: `ok` succeeds, `bad` exits 3 with no retry."""
    return (
        "apiVersion: planner.dev/v1\nkind: Plan\n"
        f"metadata: {{name: batch, namespace: {namespace}}}\n"
        "workloads:\n"
        f"  - {{name: ok, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: {ttl}}}\n"
        f"  - {{name: bad, kind: job, image: 'busybox:1.36', ttlSecondsAfterFinished: {ttl}, backoffLimit: 0,\n"
        "      podAnnotations: {sim.planner.dev/exit-code: '3'}}\n"
    )


def recorded_outcomes(cluster: ClusterHandle, namespace: str) -> dict[str, Any]:
    """Job name → the outcome its run record in the parent Secret `batch` holds (None: none yet)."""
    parent = get(cluster, f"/api/v1/namespaces/{namespace}/secrets/batch")
    assert parent is not None
    runs = [
        json.loads(base64.b64decode(v)) for k, v in parent["data"].items() if not k.startswith("planner.")
    ]
    return {run["name"]: run.get("outcome") for run in runs}


OUTCOMES = {
    "ok": {"result": "succeeded"},
    "bad": {
        "result": "failed",
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the specified backoff limit",
        "exitCode": 3,
    },
}


def delete_jobs_as_their_ttl_does(cluster: ClusterHandle, namespace: str) -> None:
    background = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
    for name in ("ok", "bad"):
        code, body = http(cluster, "DELETE", f"{jobs(namespace)}/{name}", background)
        assert code == 200, body
    for name in ("ok", "bad"):
        eventually(lambda name=name: get(cluster, f"{jobs(namespace)}/{name}") is None, timeout=30)


def monitor_all(run: Runner, namespace: str) -> list[dict[str, Any]]:
    result = run("monitor", "--all", "-n", namespace, "--until-done", "--timeout", "60s", "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr  # `bad` failed
    return sorted(events_of(result.stdout), key=lambda e: (e["runtime_id"], e["type"]))


def test_sim_how_a_planned_job_ended_outlives_it_apply_records_it_and_a_restarted_monitor_reports_it(
    simulated: ClusterHandle, sim_planner: Runner, sim_namespace: str, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(batch_plan(sim_namespace, ttl=3600))  # the test deletes them, as their TTL would
    applied = sim_planner("apply", str(plan), "--timeout", "60s")
    assert applied.returncode == 1, applied.stdout + applied.stderr  # `bad` failed; apply saw both end
    assert recorded_outcomes(simulated, sim_namespace) == OUTCOMES
    uninterrupted = monitor_all(sim_planner, sim_namespace)
    delete_jobs_as_their_ttl_does(simulated, sim_namespace)
    restarted = monitor_all(sim_planner, sim_namespace)
    assert [(e["type"], e["event_id"]) for e in restarted] == [
        (e["type"], e["event_id"]) for e in uninterrupted
    ]
    ends = [
        (e["runtime_id"].split("|")[2], e["type"], e["message"])
        for e in restarted
        if e["type"] != "ContainerStarted"
    ]
    assert ends == [
        ("bad", "ContainerFailed", "Job has reached the specified backoff limit"),
        ("ok", "ContainerExited", "0"),
    ]


def test_sim_the_monitor_records_how_a_job_nobody_waited_for_ended(
    simulated: ClusterHandle, sim_planner: Runner, sim_namespace: str, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(batch_plan(sim_namespace, ttl=3600))
    applied = sim_planner("apply", str(plan), "--no-wait")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert recorded_outcomes(simulated, sim_namespace) == {"ok": None, "bad": None}
    uninterrupted = monitor_all(sim_planner, sim_namespace)
    assert recorded_outcomes(simulated, sim_namespace) == OUTCOMES
    delete_jobs_as_their_ttl_does(simulated, sim_namespace)
    restarted = monitor_all(sim_planner, sim_namespace)
    assert [(e["type"], e["event_id"]) for e in restarted] == [
        (e["type"], e["event_id"]) for e in uninterrupted
    ]
