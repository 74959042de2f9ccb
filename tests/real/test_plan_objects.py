"""Plan objects on a real control plane: the CRD from `planner crd` is served by kube-apiserver v1.28.7,
a plan file passes its strict field validation as it is, `kubectl apply` of it makes `planner
controller` apply its workloads, and `kubectl wait --for=condition=Ready` returns once the status it
writes (accepted by the real status subresource) says so; an Event on the Plan tells it; `kubectl
delete` of the Plan waits for its finalizer, which prunes what it made.
"""

from __future__ import annotations

from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import conditions, get_json, install_crd, plan_events, shop_plan, wait_ready
from tests.real.conftest import Runner

__all__ = ["controllers"]  # the fixture, shared with the e2e tier


def test_a_plan_object_applied_with_kubectl_becomes_ready_with_its_workloads(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    made = kubectl("create", "secret", "generic", "db", "-n", namespace, "--from-literal=password=hunter2")
    assert made.returncode == 0, made.stderr
    text = shop_plan(namespace, replicas=2)
    strict = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=text)
    assert strict.returncode == 0, strict.stderr
    running = controllers("-n", namespace, "--interval", "1h")
    applied = kubectl("apply", "-f", "-", stdin=text)
    assert applied.returncode == 0, applied.stderr

    wait_ready(kubectl, namespace, "shop")
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
