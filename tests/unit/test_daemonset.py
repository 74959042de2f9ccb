"""`kind: daemonset` as its module builds it: loaded from a plan, rendered whole (and valid against the
v1.28 schema), looked at by the monitor, its pods followed one by one and its READY column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planner.plan import load_plans
from planner.workloads import daemonset
from planner.workloads.daemonset import DaemonSetSpec, DaemonUpdate, Toleration
from planner.workloads.kind import Look
from planner.workloads.observation import End, Observation
from tests.unit.render_support import IMAGE, SHOP_APPLYSET, plan, rendered, without_hash, workload

LABELS = {"app": "agent", "gobrave-workload": "agent"}
PLAN = """\
apiVersion: planner.dev/v1
kind: Plan
metadata: {name: shop, namespace: shop}
workloads:
  - name: agent
    kind: daemonset
    image: fluent/fluent-bit:3.1
    nodeSelector: {kubernetes.io/os: linux}
    tolerations:
      - {operator: Exists}
      - {key: dedicated, value: agents, effect: NoExecute, tolerationSeconds: 60}
    updateStrategy: {maxSurge: 1, maxUnavailable: 0}
"""


def test_a_daemonset_loads_its_own_fields(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    (loaded,) = load_plans([path], environ={}).plans
    (agent,) = loaded.workloads
    assert (agent.kind, agent.replicas) == ("daemonset", None)
    assert agent.spec == DaemonSetSpec(
        update_strategy=DaemonUpdate(type="RollingUpdate", max_unavailable=0, max_surge=1),
        node_selector={"kubernetes.io/os": "linux"},
        tolerations=(
            Toleration(operator="Exists"),
            Toleration(key="dedicated", value="agents", effect="NoExecute", toleration_seconds=60),
        ),
    )


def test_a_daemonset_whole_manifest() -> None:
    spec = DaemonSetSpec(
        update_strategy=DaemonUpdate(type="RollingUpdate", max_unavailable="10%"),
        node_selector={"kubernetes.io/os": "linux"},
        tolerations=(
            Toleration(key="node-role.kubernetes.io/control-plane", operator="Exists", effect="NoSchedule"),
        ),
    )
    (manifest,) = rendered(plan(workloads=(workload("agent", kind="daemonset", spec=spec),)))
    assert without_hash(manifest) == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "agent",
            "namespace": "shop",
            "labels": {**LABELS, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {"planner.dev/plan": "shop", "planner.dev/runtime-id": "k8s-shop|daemonset|agent"},
        },
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {
                    "containers": [{"name": "agent", "image": IMAGE}],
                    "restartPolicy": "Always",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "tolerations": [
                        {
                            "key": "node-role.kubernetes.io/control-plane",
                            "operator": "Exists",
                            "effect": "NoSchedule",
                        }
                    ],
                },
            },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
        },
    }


def test_a_daemonset_with_a_port_gets_no_service_and_declares_no_replicas() -> None:
    manifests = rendered(plan(workloads=(workload("agent", kind="daemonset", port=2020),)))
    assert [m["kind"] for m in manifests] == ["DaemonSet"]
    assert "replicas" not in manifests[0]["spec"]


def daemon_set(*, stopped: bool = False, **status: int) -> dict[str, Any]:
    selector = {"nodeSelector": {daemonset.STOPPED_LABEL: "true"}} if stopped else {}
    return {
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "uid": "ds-uid"},
        "spec": {"template": {"spec": selector}},
        "status": status,
    }


LOOK = Look(describe="daemonset shop/agent")


@pytest.mark.parametrize(
    ("live", "expected"),
    [
        (daemon_set(desiredNumberScheduled=2), Observation(uid="ds-uid", started_message="ready 0/2")),
        (
            daemon_set(desiredNumberScheduled=2, numberReady=1, currentNumberScheduled=2),
            Observation(uid="ds-uid", started_uid="ds-uid", started_message="ready 1/2"),
        ),
        (
            daemon_set(stopped=True, currentNumberScheduled=1, numberReady=1, desiredNumberScheduled=0),
            Observation(uid="ds-uid", started_message="ready 1/0"),
        ),
        (
            daemon_set(stopped=True, currentNumberScheduled=0),
            Observation(
                uid="ds-uid",
                started_message="ready 0/0",
                end=End(type="ContainerExited", message="0", uid="ds-uid"),
            ),
        ),
        (daemon_set(desiredNumberScheduled=0), Observation(uid="ds-uid", started_message="ready 0/0")),
        (None, Observation(end=End(type="ContainerDeleted", message="daemonset shop/agent is gone"))),
    ],
    ids=[
        "created, no pod ready yet",
        "one node's pod ready: started",
        "stopped, a pod still on its node: stopping, neither started nor ended",
        "stopped and no pod left: exited 0",
        "no eligible node is not an end: nothing was stopped",
        "gone: deleted",
    ],
)
def test_one_look_at_a_daemonset(live: dict[str, Any] | None, expected: Observation) -> None:
    assert daemonset.observe(live, LOOK) == expected


def pod(name: str, *, owner: str = "agent", ready: bool = False, **status: Any) -> dict[str, Any]:
    owners = [{"kind": "DaemonSet", "name": owner, "controller": True, "apiVersion": "apps/v1"}]
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "uid": f"{name}-uid", "ownerReferences": owners},
        "spec": {"nodeName": "node-1"},
        "status": {"conditions": conditions, **status},
    }


def test_each_node_s_pod_is_a_run_of_its_own() -> None:
    mine = [pod("agent-b", ready=True), pod("other-a", owner="other"), pod("agent-a")]
    mine[0]["metadata"]["creationTimestamp"] = "2026-12-07T10:00:01Z"
    mine[2]["metadata"]["creationTimestamp"] = "2026-12-07T10:00:00Z"
    assert [p["metadata"]["name"] for p in daemonset.pods("agent", "shop", mine)] == ["agent-a", "agent-b"]
    assert daemonset.observe_pod(mine[0], Look(describe="pod shop/agent-b")) == Observation(
        uid="agent-b-uid", started_uid="agent-b-uid", started_message="pod Ready on node-1"
    )
    failed = pod("agent-c", phase="Failed", reason="Evicted", message="The node was low on memory.")
    assert daemonset.observe_pod(failed, Look(describe="pod shop/agent-c")).end == End(
        type="ContainerFailed", message="The node was low on memory.", uid="agent-c-uid"
    )


def test_ready_is_ready_pods_over_the_nodes_that_should_run_one() -> None:
    assert daemonset.ready(daemon_set(desiredNumberScheduled=3, numberReady=2)) == "2/3"
    assert daemonset.ready(daemon_set()) == "0/0"
