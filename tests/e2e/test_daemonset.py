"""`kind: daemonset` through the CLI on the embedded cluster (its DaemonSet controller, scheduler and node
agent running), checked through kubectl: the node is tainted, so only a pod that tolerates the taint runs
there; apply waits for the rollout as `kubectl rollout status ds` would and a second plan finds nothing;
`planner monitor` reports the DaemonSet and its node's pod each on their own; `stop` takes the pods off
every node (drift the next plan shows and the next apply puts right), `start` brings them back, `status` shows READY over DESIRED, and
`delete` deletes it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner, write_plan
from tests.e2e.test_monitor import Background

TAINT = "dedicated=agents:NoSchedule"
PLAN = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {{name: agents, namespace: {ns}}}
workloads:
  - name: logs
    kind: daemonset
    image: fluent/fluent-bit:3.1
    nodeSelector: {{kubernetes.io/os: linux}}
    tolerations:
      - {{key: dedicated, operator: Equal, value: agents, effect: NoSchedule}}
    updateStrategy: {{type: RollingUpdate, maxUnavailable: 1}}
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


@pytest.fixture(scope="module")
def node(cluster: ClusterHandle) -> str:
    """The cluster's one node, tainted `dedicated=agents:NoSchedule`."""

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        command = ["kubectl", f"--kubeconfig={cluster.kubeconfig}", *args]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    (found,) = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    name = str(found["metadata"]["name"])
    tainted = kubectl("taint", "node", name, TAINT)
    assert tainted.returncode == 0, tainted.stderr
    return name


def get_json(kubectl: Runner, namespace: str, *what: str) -> dict[str, Any]:
    result = kubectl("get", *what, "-n", namespace, "-o", "json")
    assert result.returncode == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def running_pods(kubectl: Runner, namespace: str) -> list[dict[str, Any]]:
    pods = get_json(kubectl, namespace, "pods", "-l", "gobrave-workload=logs")["items"]
    return [pod for pod in pods if not pod["metadata"].get("deletionTimestamp")]


def test_a_daemonset_runs_a_pod_on_the_tainted_node_is_monitored_per_pod_and_stops_and_starts(
    cluster: ClusterHandle,
    node: str,
    planner: Runner,
    kubectl: Runner,
    namespace: str,
    tmp_path: Path,
    home: Path,
) -> None:
    path = write_plan(tmp_path, PLAN.format(ns=namespace))
    applied = planner("apply", str(path), "--timeout", "60s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    rolled = kubectl("rollout", "status", "daemonset/logs", "-n", namespace, "--timeout", "5s")
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    again = planner("plan", str(path), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    daemon_set = get_json(kubectl, namespace, "daemonset", "logs")
    template = daemon_set["spec"]["template"]["spec"]
    assert template["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert template["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "agents", "effect": "NoSchedule"}
    ]
    rolling = {"maxUnavailable": 1, "maxSurge": 0}  # the server defaults maxSurge
    assert daemon_set["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": rolling}
    (pod,) = running_pods(kubectl, namespace)
    assert pod["spec"]["nodeName"] == node

    rid = f"k8s-{namespace}|daemonset|logs"
    monitor = Background(cluster, home, rid, "--timeout", "60s", "-o", "json")
    first_two = monitor.read_until(2)[:2]
    assert sorted((event["type"], event["object"]) for event in first_two) == [
        ("ContainerStarted", f"daemonset/{namespace}/logs"),
        ("ContainerStarted", f"pod/{namespace}/{pod['metadata']['name']}"),
    ]
    assert {event["runtime_id"] for event in first_two} == {rid}

    stopped = planner("stop", rid)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped daemonset" in stopped.stdout
    later = monitor.read_until(4)[2:4]
    monitor.kill()
    assert sorted((event["type"], event["object"]) for event in later) == [
        ("ContainerDeleted", f"pod/{namespace}/{pod['metadata']['name']}"),
        ("ContainerExited", f"daemonset/{namespace}/logs"),
    ]
    assert running_pods(kubectl, namespace) == []
    drift = planner("plan", str(path), "--detailed-exitcode")
    assert drift.returncode == 2, drift.stdout + drift.stderr
    assert "planner.dev/stopped" in drift.stdout

    reapplied = planner("apply", str(path), "--timeout", "60s")  # the declared nodeSelector, whole again
    assert reapplied.returncode == 0, reapplied.stdout + reapplied.stderr
    selector = get_json(kubectl, namespace, "daemonset", "logs")["spec"]["template"]["spec"]["nodeSelector"]
    assert selector == {"kubernetes.io/os": "linux"}
    assert len(running_pods(kubectl, namespace)) == 1

    assert planner("stop", rid).returncode == 0
    started = planner("start", rid)
    assert started.returncode == 0, started.stderr
    assert "started daemonset" in started.stdout
    waited = kubectl("rollout", "status", "daemonset/logs", "-n", namespace, "--timeout", "30s")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    status = planner("status", rid)
    assert status.returncode == 0, status.stderr
    header, row = status.stdout.splitlines()[:2]
    assert header.split()[:4] == ["RUNTIME", "ID", "STATE", "READY"]
    assert row.split()[:3] == [rid, "Started", "1/1"]

    deleted = planner("delete", rid)
    assert deleted.returncode == 0, deleted.stderr
    assert kubectl("get", "daemonset", "logs", "-n", namespace).returncode != 0


def test_a_daemonset_that_no_node_tolerates_runs_no_pod_and_is_ready_at_once(
    node: str, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """Without the toleration the tainted node is not eligible: the DaemonSet wants no pod, so it has
    nothing to wait for, as `kubectl rollout status` says of it too."""
    text = PLAN.format(ns=namespace).split("    tolerations:")[0]
    applied = planner("apply", str(write_plan(tmp_path, text)), "--timeout", "30s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    status = get_json(kubectl, namespace, "daemonset", "logs")["status"]
    assert (status["desiredNumberScheduled"], status["numberReady"]) == (0, 0)
    assert running_pods(kubectl, namespace) == []
