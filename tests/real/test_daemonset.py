"""`kind: daemonset` against kube-apiserver v1.28.7 and its DaemonSet controller (with two simulated
nodes): what `planner render` writes passes `kubectl apply --dry-run=server --validate=strict`, the apply
waits until a pod runs on each node, `planner monitor` reports the DaemonSet and each node's pod, `stop`
takes them off every node (drift the next plan shows and the next apply puts right), and `delete`
deletes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.conftest import write_plan
from tests.e2e.test_monitor import Background
from tests.real.conftest import Runner, eventually
from tests.realplane import RealCluster

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
      - {{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}}
    updateStrategy: {{type: RollingUpdate, maxUnavailable: 1}}
"""


def pods(kubectl: Runner, namespace: str) -> list[dict[str, Any]]:
    listed = kubectl("get", "pods", "-n", namespace, "-l", "gobrave-workload=logs", "-o", "json")
    return [p for p in json.loads(listed.stdout)["items"] if not p["metadata"].get("deletionTimestamp")]


def test_a_daemonset_on_a_real_api_server(
    cluster: RealCluster, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path, home: Path
) -> None:
    path = write_plan(tmp_path, PLAN.format(ns=namespace))
    rendered = planner("render", str(path))
    assert rendered.returncode == 0, rendered.stderr
    dry_run = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=rendered.stdout)
    assert dry_run.returncode == 0, dry_run.stderr
    assert "daemonset.apps/logs created (server dry run)" in dry_run.stdout

    applied = planner("apply", str(path), "--timeout", "90s")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    nodes = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    running = pods(kubectl, namespace)
    assert sorted(p["spec"]["nodeName"] for p in running) == sorted(n["metadata"]["name"] for n in nodes)
    again = planner("plan", str(path), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout + again.stderr

    rid = f"k8s-{namespace}|daemonset|logs"
    monitor = Background(cluster, home, rid, "--timeout", "90s", "-o", "json")  # type: ignore[arg-type]
    events = monitor.read_until(1 + len(running))
    monitor.kill()
    assert sorted(event["object"] for event in events) == sorted(
        [f"daemonset/{namespace}/logs", *(f"pod/{namespace}/{p['metadata']['name']}" for p in running)]
    )
    assert {event["type"] for event in events} == {"ContainerStarted"}

    stopped = planner("stop", rid)
    assert stopped.returncode == 0, stopped.stderr
    eventually(lambda: not pods(kubectl, namespace), timeout=60, what="the pods leave every node")
    drift = planner("plan", str(path), "--detailed-exitcode")
    assert drift.returncode == 2, drift.stdout + drift.stderr
    reapplied = planner("apply", str(path), "--timeout", "90s")
    assert reapplied.returncode == 0, reapplied.stdout + reapplied.stderr
    assert len(pods(kubectl, namespace)) == len(nodes)

    deleted = planner("delete", rid)
    assert deleted.returncode == 0, deleted.stderr
    assert kubectl("get", "daemonset", "logs", "-n", namespace).returncode != 0
