"""The controller's answers to Plans that cannot be reconciled as they are, checked through kubectl and
/metrics: an interval below its floor and a dependsOn cycle are Stalled saying why; a Plan refused by the
lockdown or whose ServiceAccount is missing counts as a failed reconcile of its namespace's Plan; a
failure retried again and again is one Event counting up; two Plans of one name in two namespaces are
two series."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import conditions, events_of_plan, get_json, install_crd, wait_ready
from tests.e2e.test_tenancy import ESCAPE, OWN, refused
from tests.simulated import eventually

__all__ = ["controllers"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def plan_object(namespace: str, name: str, body: str, *, head: str = "") -> str:
    return f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: {name}, namespace: {namespace}}}\n{head}{body}"


def stalled(kubectl: Runner, namespace: str, name: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        stall = conditions(get_json(kubectl, "plan", name, "-n", namespace)).get("Stalled") or {}
        return stall if stall.get("status") == "True" else None

    condition: dict[str, Any] = eventually(found, timeout=90)
    return condition


def failed_events(kubectl: Runner, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in events_of_plan(kubectl, namespace, name) if e["reason"] == "ReconcileFailed"]


def test_plans_that_cannot_be_reconciled_say_why_count_as_failed_and_repeat_one_event(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    other = f"{namespace}-b"
    assert kubectl("create", "namespace", other).returncode == 0
    running = controllers("--interval", "1h", "--no-cross-namespace-refs")
    plans = [
        plan_object(namespace, "web", OWN),
        plan_object(other, "web", OWN),
        plan_object(namespace, "escape", ESCAPE),
        plan_object(namespace, "ghost", OWN.replace("web", "ghost-web"), head="serviceAccountName: nobody\n"),
        plan_object(namespace, "fast", "", head="reconcile: {interval: 0s}\n"),
        plan_object(namespace, "self", "", head="reconcile: {dependsOn: [{name: self}]}\n"),
        plan_object(namespace, "ca", "", head="reconcile: {dependsOn: [{name: cb}]}\n"),
        plan_object(namespace, "cb", "", head="reconcile: {dependsOn: [{name: ca}]}\n"),
    ]
    for text in plans:
        applied = kubectl("apply", "-f", "-", stdin=text)
        assert applied.returncode == 0, applied.stderr

    # Below its floor, the interval is a plan error at its line and column: Stalled, never spun on.
    fast = stalled(kubectl, namespace, "fast")
    assert re.search(
        rf"^plan/fast -n {namespace}:\d+:\d+: reconcile\.interval: 0s is too short: at least 10s",
        fast["message"],
    ), (fast, running.output())

    # A dependsOn cycle is Stalled naming it, not a wait for ever.
    for name, cycle in (("self", "self → self"), ("ca", "ca → cb → ca"), ("cb", "cb → ca → cb")):
        assert stalled(kubectl, namespace, name)["message"] == f"dependsOn cycle: {cycle}", running.output()
        ready = conditions(get_json(kubectl, "plan", name, "-n", namespace))["Ready"]
        assert (ready["status"], ready["reason"]) == ("False", "ReconciliationFailed"), ready

    # A missing ServiceAccount is retried: one ReconcileFailed Event, counting each retry.
    def counted() -> dict[str, Any] | None:
        events = failed_events(kubectl, namespace, "ghost")
        return events[0] if len(events) == 1 and events[0]["count"] >= 3 else None

    ghost = eventually(counted, timeout=90)
    assert ghost["message"].startswith(
        f"ServiceAccount nobody (from serviceAccountName) not found in namespace {namespace}"
    )
    assert ghost["lastTimestamp"] >= ghost["firstTimestamp"], ghost
    assert len(failed_events(kubectl, namespace, "ghost")) == 1, failed_events(kubectl, namespace, "ghost")

    assert "refused by the controller's lockdown" in refused(kubectl, namespace, "escape")["message"]
    wait_ready(kubectl, namespace, "web")
    wait_ready(kubectl, other, "web")

    def series(ns: str, plan: str, result: str) -> str:
        return f'planner_reconcile_total{{namespace="{ns}",plan="{plan}",result="{result}"}}'

    samples = running.metrics()
    assert samples[series(namespace, "web", "applied")] == 1.0, samples
    assert samples[series(other, "web", "applied")] == 1.0, samples
    for name in ("escape", "fast", "self", "ca", "cb"):
        assert samples[series(namespace, name, "failed")] >= 1.0, (name, samples)
    assert samples[series(namespace, "ghost", "failed")] >= 3.0, samples
