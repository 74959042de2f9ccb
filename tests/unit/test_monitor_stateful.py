"""A StatefulSet in the monitor: found as a managed workload by its label, and observed by the
Deployment rules (Started once a replica is ready, Exited "0" once stopped, Deleted when gone)."""

from __future__ import annotations

from typing import Any

from planner.kinds import STATEFUL_SET, KindInfo
from planner.monitor.mapping import managed_runtime_id
from planner.monitor.monitor import observe, steady
from planner.render.identity import RuntimeID

RID = RuntimeID.parse("k8s-shop|statefulset|db")


def stateful_set(replicas: int, ready: int, current: int | None = None) -> dict[str, Any]:
    metadata = {"name": "db", "namespace": "shop", "uid": "u1", "labels": {"gobrave-workload": "db"}}
    status = {"replicas": ready if current is None else current, "readyReplicas": ready}
    return {"kind": "StatefulSet", "metadata": metadata, "spec": {"replicas": replicas}, "status": status}


def lookup_of(obj: dict[str, Any] | None) -> Any:
    def lookup(kind: KindInfo, namespace: str, name: str) -> dict[str, Any] | None:
        assert (kind, namespace, name) == (STATEFUL_SET, "shop", "db")
        return obj

    return lookup


def test_a_labelled_statefulset_is_a_managed_workload() -> None:
    assert managed_runtime_id(stateful_set(2, 0)) == RID


def test_a_statefulset_follows_the_deployment_rules() -> None:
    started, _ = observe(RID, lookup_of(stateful_set(2, 1)))
    assert (started.started_uid, started.started_message, started.end) == ("u1", "ready 1/2", None)
    stopped, _ = observe(RID, lookup_of(stateful_set(0, 0)))
    assert stopped.end is not None and (stopped.end.type, stopped.end.message) == ("ContainerExited", "0")
    gone, _ = observe(RID, lookup_of(None))
    assert gone.end is not None and gone.end.type == "ContainerDeleted"
    assert steady("statefulset", "started")
