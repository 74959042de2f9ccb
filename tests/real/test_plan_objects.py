"""Plan objects on a real control plane: the CRD from `planner crd` is served by kube-apiserver v1.28.7,
a plan file passes its strict field validation as it is, `kubectl apply` of it makes `planner
controller` apply its workloads, and `kubectl wait --for=condition=Ready` returns once the status it
writes (accepted by the real status subresource) says so; an Event on the Plan tells it; `kubectl
delete` of the Plan waits for its finalizer, which prunes what it made and trims its generation records
to --history-max. Shards: the Plan labelled `planner.dev/shard=a` is reconciled by the controller of
shard a, an unlabelled one by the unsharded controller, each the leader of its own Lease (the real
server's label selectors on their watches).
"""

from __future__ import annotations

from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import (
    conditions,
    generation_records,
    get_json,
    install_crd,
    knob_plan,
    lease_holder,
    plan_events,
    reporters,
    sharded,
    shop_plan,
    wait_ready,
)
from tests.real.conftest import Runner

__all__ = ["controllers"]  # the fixture, shared with the e2e tier


def test_a_plan_object_applied_with_kubectl_becomes_ready_with_its_workloads(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    made = kubectl("create", "secret", "generic", "db", "-n", namespace, "--from-literal=password=hunter2")
    assert made.returncode == 0, made.stderr
    text = sharded(shop_plan(namespace, replicas=2), "a")
    strict = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text)
    assert strict.returncode == 0, strict.stderr
    elect = ("-n", namespace, "--interval", "1h", "--leader-elect", "--lease-namespace", namespace)
    running = controllers(*elect, "--shard", "a", "--history-max", "1")
    unsharded = controllers(*elect)
    applied = kubectl("apply", "-f", "-", stdin=text)
    assert applied.returncode == 0, applied.stderr
    assert kubectl("apply", "-f", "-", stdin=knob_plan(namespace, "other")).returncode == 0

    wait_ready(kubectl, namespace, "shop")
    wait_ready(kubectl, namespace, "other")
    leaders = [
        lease_holder(kubectl, namespace, name) for name in ("planner-controller-a", "planner-controller")
    ]
    assert all(leaders) and leaders[0] != leaders[1], leaders
    assert reporters(kubectl, namespace, "shop") == {leaders[0]}, running.output()
    assert reporters(kubectl, namespace, "other") == {leaders[1]}, unsharded.output()
    deployment = get_json(kubectl, "deployment", "shop-web", "-n", namespace)
    assert deployment["spec"]["replicas"] == 2
    plan = get_json(kubectl, "plan", "shop", "-n", namespace)
    assert plan["status"]["observedGeneration"] == 1 and plan["status"]["lastAppliedGeneration"] == 1
    assert plan["status"]["inventory"]["objects"] == {"Deployment": 1, "Secret": 1}
    assert conditions(plan)["Ready"]["reason"] == "ReconciliationSucceeded"
    events = {e[:2] for e in plan_events(kubectl, namespace, "shop")}
    assert events == {("Reconciled", "Normal")}, running.output()

    deleted = kubectl("delete", "plan", "shop", "-n", namespace, "--timeout=120s")
    assert deleted.returncode == 0, deleted.stderr + running.output()
    assert kubectl("get", "deployment", "shop-web", "-n", namespace).returncode != 0
    assert kubectl("get", "secret", "shop-db", "-n", namespace).returncode != 0
    assert generation_records(kubectl, namespace, "shop") == ["planner.shop.g2"]  # the prune's
