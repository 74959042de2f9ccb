"""The simulated node agent through the Python client: pod fidelity (container statuses, probes,
restarts, sidecars, init containers, IPs), ordering protection, scheduling and pod logs (time scale 0.05)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.simulated import eventually, simulated_cluster_fixture
from tests.slimcluster import http

cluster = simulated_cluster_fixture()
KNOB = "sim.planner.dev/"


def pod(
    name: str,
    *containers: dict[str, Any],
    init: list[dict[str, Any]] | None = None,
    policy: str = "Always",
    **knobs: str,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": policy,
        "containers": list(containers) or [{"name": "app", "image": "nginx"}],
    }
    if init:
        spec["initContainers"] = init
    annotations = {KNOB + k.replace("_", "-").replace("--", "."): v for k, v in knobs.items()}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": spec}


def read(core_v1: client.CoreV1Api, namespace: str, name: str) -> Any:
    return core_v1.read_namespaced_pod(name, namespace)


def statuses(p: Any) -> dict[str, Any]:
    return {s.name: s for s in p.status.container_statuses or []}


def condition(p: Any, kind: str) -> str | None:
    return next((c.status for c in p.status.conditions or [] if c.type == kind), None)


# --- containerStatuses ------------------------------------------------------------------------------


def test_a_healthy_pod_runs_with_full_container_statuses(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("healthy"))
    running = eventually(
        lambda: (p := read(core_v1, namespace, "healthy")) and condition(p, "Ready") == "True" and p
    )
    [app] = running.status.container_statuses
    assert (app.ready, app.started, app.restart_count) == (True, True, 0)
    assert app.state.running.started_at is not None
    assert app.image == "docker.io/library/nginx:latest"
    assert app.image_id.startswith("docker.io/library/nginx@sha256:")
    assert app.container_id.startswith("containerd://")
    assert running.status.phase == "Running"
    assert running.status.pod_ip.startswith("10.244.")
    assert running.spec.node_name == "planner-node-0"
    assert {c.type for c in running.status.conditions} == {
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    }


def test_a_knob_with_a_container_suffix_affects_only_that_container(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    body = pod(
        "sidecars",
        {"name": "app", "image": "nginx"},
        {"name": "sidecar", "image": "envoy"},
        never_ready__sidecar="true",
    )
    core_v1.create_namespaced_pod(namespace, body)
    settled = eventually(
        lambda: (
            (p := read(core_v1, namespace, "sidecars"))
            and statuses(p).get("app")
            and statuses(p)["app"].ready
            and p
        )
    )
    assert statuses(settled)["sidecar"].ready is False
    assert statuses(settled)["sidecar"].state.running is not None
    assert condition(settled, "Ready") == "False"


def test_readiness_waits_for_the_probe_timings(core_v1: client.CoreV1Api, namespace: str) -> None:
    probe = {"httpGet": {"path": "/", "port": 80}, "initialDelaySeconds": 40, "periodSeconds": 10}
    core_v1.create_namespaced_pod(
        namespace, pod("gated", {"name": "app", "image": "nginx", "readinessProbe": probe})
    )
    started = eventually(
        lambda: (p := read(core_v1, namespace, "gated")) and p.status.phase == "Running" and p
    )
    assert statuses(started)["app"].ready is False  # 40 s × 0.05 = 2 s still to go
    eventually(lambda: condition(read(core_v1, namespace, "gated"), "Ready") == "True")


def test_liveness_failures_restart_the_container_with_growing_backoff(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    probe = {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 1, "failureThreshold": 1}
    body = pod(
        "hung", {"name": "app", "image": "nginx", "livenessProbe": probe}, liveness_fail_after_seconds="2"
    )
    core_v1.create_namespaced_pod(namespace, body)
    counts: list[int] = []
    backoffs: list[str] = []
    ip = None
    for _ in range(3):
        current = eventually(
            lambda: (
                (s := statuses(read(core_v1, namespace, "hung")).get("app"))
                and s.restart_count > (counts[-1] if counts else 0)
                and s
            ),
            timeout=20,
        )
        counts.append(current.restart_count)
        assert current.last_state.terminated.exit_code == 137
        assert current.last_state.terminated.reason == "Error"
        waiting = eventually(
            lambda: (s := statuses(read(core_v1, namespace, "hung"))["app"]).state.waiting and s, timeout=20
        )
        assert waiting.state.waiting.reason == "CrashLoopBackOff"
        backoffs.append(waiting.state.waiting.message.split()[1])
        pod_ip = read(core_v1, namespace, "hung").status.pod_ip
        assert ip in (None, pod_ip)  # the pod keeps its IP across container restarts
        ip = pod_ip
    assert counts == sorted(set(counts))
    assert backoffs[:2] == ["10s", "20s"]


def test_init_containers_run_one_after_the_other(core_v1: client.CoreV1Api, namespace: str) -> None:
    inits = [{"name": "first", "image": "busybox"}, {"name": "second", "image": "busybox"}]
    core_v1.create_namespaced_pod(
        namespace, pod("staged", init=inits, run_seconds__first="20", run_seconds__second="20")
    )
    during_second = eventually(
        lambda: (
            (p := read(core_v1, namespace, "staged"))
            and len(p.status.init_container_statuses or []) == 2
            and p.status.init_container_statuses[1].state.running
            and p
        )
    )
    first = during_second.status.init_container_statuses[0]
    assert first.state.terminated.reason == "Completed"
    assert statuses(during_second)["app"].state.waiting.reason == "PodInitializing"
    assert condition(during_second, "Initialized") == "False"
    assert during_second.status.phase == "Pending"
    eventually(lambda: read(core_v1, namespace, "staged").status.phase == "Running")


@pytest.mark.parametrize(
    ("policy", "phase"),
    [("Always", "Pending"), ("Never", "Failed")],
    ids=[
        "under restartPolicy Always the init container is retried and the pod stays Pending",
        "under Never the pod fails",
    ],
)
def test_a_failing_init_container(core_v1: client.CoreV1Api, namespace: str, policy: str, phase: str) -> None:
    name = f"init-{policy.lower()}"
    core_v1.create_namespaced_pod(
        namespace, pod(name, init=[{"name": "setup", "image": "busybox"}], policy=policy, init_exit_code="1")
    )
    if policy == "Always":
        eventually(
            lambda: (
                (s := read(core_v1, namespace, name).status.init_container_statuses)
                and s[0].restart_count >= 2
            )
        )
    settled = eventually(
        lambda: (
            (p := read(core_v1, namespace, name))
            and p.status.init_container_statuses
            and p.status.phase == phase
            and p
        )
    )
    assert statuses(settled)["app"].state.waiting.reason == "PodInitializing"


def test_a_replacement_pod_gets_a_new_ip(
    apps_v1: client.AppsV1Api, core_v1: client.CoreV1Api, namespace: str
) -> None:
    body = {
        "metadata": {"name": "ips"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "ips"}},
            "template": {
                "metadata": {"labels": {"app": "ips"}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    }
    apps_v1.create_namespaced_deployment(namespace, body)

    def running_pod() -> Any:
        live = [
            p
            for p in core_v1.list_namespaced_pod(namespace, label_selector="app=ips").items
            if not p.metadata.deletion_timestamp
        ]
        return live[0] if live and live[0].status.pod_ip else None

    first = eventually(running_pod)
    core_v1.delete_namespaced_pod(first.metadata.name, namespace)
    second = eventually(lambda: (p := running_pod()) and p.metadata.name != first.metadata.name and p)
    assert second.status.pod_ip != first.status.pod_ip


def test_a_job_pod_terminates_completed(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("once", policy="Never"))
    done = eventually(lambda: (p := read(core_v1, namespace, "once")) and p.status.phase == "Succeeded" and p)
    terminated = statuses(done)["app"].state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed")


def test_an_image_pull_error_keeps_the_container_waiting(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("pull", image_pull_error="manifest unknown"))
    waiting = eventually(
        lambda: (
            (s := statuses(read(core_v1, namespace, "pull")).get("app"))
            and s.state.waiting
            and s.state.waiting.reason != "ContainerCreating"  # the moment before the pull
            and s
        )
    )
    assert waiting.state.waiting.reason in ("ErrImagePull", "ImagePullBackOff")
    assert "manifest unknown" in waiting.state.waiting.message


# --- ordering protection -------------------------------------------------------------------------------


def _volume(kind: str) -> dict[str, Any]:
    if kind == "ConfigMap":
        return {"name": "v", "configMap": {"name": "later"}}
    if kind == "Secret":
        return {"name": "v", "secret": {"secretName": "later"}}
    return {"name": "v", "persistentVolumeClaim": {"claimName": "later"}}


def _create_later(core_v1: client.CoreV1Api, namespace: str, kind: str) -> None:
    if kind == "ConfigMap":
        core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "later"}, "data": {"k": "v"}})
    elif kind == "Secret":
        core_v1.create_namespaced_secret(namespace, {"metadata": {"name": "later"}, "stringData": {"k": "v"}})
    else:
        spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        core_v1.create_namespaced_persistent_volume_claim(
            namespace, {"metadata": {"name": "later"}, "spec": spec}
        )


@pytest.mark.parametrize(
    ("kind", "reason"),
    [("ConfigMap", "FailedMount"), ("Secret", "FailedMount"), ("PersistentVolumeClaim", "FailedScheduling")],
    ids=[
        "a missing ConfigMap keeps the pod ContainerCreating until it appears",
        "a missing Secret keeps the pod ContainerCreating until it appears",
        "a missing PVC keeps the pod Pending until it appears and binds",
    ],
)
def test_a_pod_waits_for_what_its_volumes_name(
    core_v1: client.CoreV1Api, namespace: str, kind: str, reason: str
) -> None:
    body = pod("early")
    body["spec"]["volumes"] = [_volume(kind)]
    core_v1.create_namespaced_pod(namespace, body)
    [event] = eventually(
        lambda: core_v1.list_namespaced_event(namespace, field_selector=f"reason={reason}").items
    )
    assert "later" in event.message
    waiting = read(core_v1, namespace, "early")
    assert waiting.status.phase == "Pending"
    if kind != "PersistentVolumeClaim":
        assert statuses(waiting)["app"].state.waiting.reason == "ContainerCreating"
    _create_later(core_v1, namespace, kind)
    eventually(lambda: condition(read(core_v1, namespace, "early"), "Ready") == "True")


def test_required_node_affinity_matching_no_node_is_unschedulable(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    body = pod("nowhere")
    term = {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}
    body["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    core_v1.create_namespaced_pod(namespace, body)
    stuck = eventually(
        lambda: (p := read(core_v1, namespace, "nowhere")) and condition(p, "PodScheduled") == "False" and p
    )
    [scheduled] = [c for c in stuck.status.conditions if c.type == "PodScheduled"]
    assert scheduled.reason == "Unschedulable"
    assert scheduled.message.startswith(
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    )
    assert stuck.spec.node_name is None


def test_a_deleted_pod_finishes_its_graceful_deletion(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("leaving"))
    eventually(lambda: read(core_v1, namespace, "leaving").status.phase == "Running")
    core_v1.delete_namespaced_pod("leaving", namespace)
    eventually(
        lambda: not core_v1.list_namespaced_pod(namespace, field_selector="metadata.name=leaving").items
    )


# --- logs ----------------------------------------------------------------------------------------------


def log(cluster: Any, namespace: str, name: str, query: str) -> tuple[int, str]:
    reply = http(cluster, "GET", f"/api/v1/namespaces/{namespace}/pods/{name}/log?{query}")
    return reply.status, reply.body if isinstance(reply.body, str) else str(reply.body)


def test_logs_are_per_container_with_tail_and_timestamps(
    cluster: Any, core_v1: client.CoreV1Api, namespace: str
) -> None:
    body = pod(
        "talky",
        {"name": "app", "image": "nginx", "command": ["nginx", "-g", "daemon off;"]},
        {"name": "sidecar", "image": "envoy"},
    )
    core_v1.create_namespaced_pod(namespace, body)
    eventually(lambda: condition(read(core_v1, namespace, "talky"), "Ready") == "True")
    eventually(lambda: "heartbeat 3" in log(cluster, namespace, "talky", "container=app")[1])
    status, app = log(cluster, namespace, "talky", "container=app")
    assert status == 200
    lines = app.splitlines()
    assert lines[:2] == ["[app] starting image=nginx run=0", "[app] command: nginx -g daemon off;"]
    assert (
        log(cluster, namespace, "talky", "container=sidecar")[1].splitlines()[0]
        == "[sidecar] starting image=envoy run=0"
    )
    tail = log(cluster, namespace, "talky", "container=app&tailLines=2")[1].splitlines()
    assert len(tail) == 2 and all(line.startswith("[app] ") for line in tail)
    stamped = log(cluster, namespace, "talky", "container=app&timestamps=true")[1].splitlines()[0]
    assert stamped.endswith("Z [app] starting image=nginx run=0") and stamped[:4].isdigit()
    status, message = log(cluster, namespace, "talky", "container=app&previous=true")
    assert status == 400
    assert 'previous terminated container "app" in pod "talky" not found' in message


def test_previous_logs_show_the_run_before_a_restart(
    cluster: Any, core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(namespace, pod("crashy", crash_after_seconds="10"))
    eventually(
        lambda: (s := statuses(read(core_v1, namespace, "crashy")).get("app")) and s.restart_count >= 1
    )
    status, previous = log(cluster, namespace, "crashy", "previous=true")
    assert status == 200
    assert previous.splitlines()[0] == "[app] starting image=nginx run=0"
    assert previous.splitlines()[-1] == "[app] exiting with code 1"


def test_follow_streams_until_the_container_exits(
    cluster: Any, core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(namespace, pod("short", policy="Never", run_seconds="40"))
    eventually(lambda: read(core_v1, namespace, "short").status.phase == "Running")
    status, streamed = log(cluster, namespace, "short", "follow=true")
    assert status == 200
    assert streamed.splitlines()[-1] == "[app] exiting with code 0"
    assert "[app] heartbeat 39" in streamed.splitlines()


def test_a_missing_config_map_in_the_environment_is_a_config_error_until_it_appears(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    env = [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "k"}}}]
    core_v1.create_namespaced_pod(namespace, pod("configured", {"name": "app", "image": "nginx", "env": env}))
    waiting = eventually(
        lambda: (s := statuses(read(core_v1, namespace, "configured")).get("app")) and s.state.waiting and s
    )
    assert waiting.state.waiting.reason == "CreateContainerConfigError"
    assert waiting.state.waiting.message == 'configmap "settings" not found'
    core_v1.create_namespaced_config_map(namespace, {"metadata": {"name": "settings"}, "data": {"k": "v"}})
    eventually(lambda: condition(read(core_v1, namespace, "configured"), "Ready") == "True")


def test_ready_after_seconds_delays_readiness_without_a_probe(
    core_v1: client.CoreV1Api, namespace: str
) -> None:
    core_v1.create_namespaced_pod(namespace, pod("slowstart", ready_after_seconds="30"))
    running = eventually(
        lambda: (p := read(core_v1, namespace, "slowstart")) and p.status.phase == "Running" and p
    )
    assert statuses(running)["app"].ready is False  # 30 s × 0.05 = 1.5 s after the start
    eventually(lambda: condition(read(core_v1, namespace, "slowstart"), "Ready") == "True")


def test_repeated_kubelet_events_count_up(core_v1: client.CoreV1Api, namespace: str) -> None:
    core_v1.create_namespaced_pod(namespace, pod("looping", crash_after_seconds="2"))

    def started_count() -> int:
        found = core_v1.list_namespaced_event(namespace, field_selector="reason=Started").items
        return int(found[0].count) if found else 0

    eventually(lambda: started_count() >= 3, timeout=20)
    [backoff] = eventually(
        lambda: core_v1.list_namespaced_event(namespace, field_selector="reason=BackOff").items
    )
    assert backoff.type == "Warning"
    assert backoff.message.startswith("Back-off restarting failed container app in pod looping_")
