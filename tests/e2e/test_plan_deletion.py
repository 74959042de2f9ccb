"""Deleting a Plan object deletes everything it made but PVCs and Namespaces, in every shape a plan can
have (issue 39, item 2): a Secret whose value comes from `secretKeyRef` beside a Deployment reading it
(the plan is rendered under its digest key), a raw manifest of a kind only the cluster serves (a Lease:
the plan is placed through discovery). Both used to be rendered again from the Plan, so the prune
applied the whole plan and deleted nothing while its Event said it had. A prune that cannot finish
keeps the finalizer, and the Plan's Ready condition says why. Checked through kubectl."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.e2e.conftest import Runner
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_plan_objects import conditions, get_json, install_crd, plan_events, wait_ready
from tests.simulated import eventually

__all__ = ["controllers"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def every_shape_plan(namespace: str, name: str) -> str:
    return f"""\
apiVersion: planner.dev/v1
kind: Plan
metadata: {{name: {name}, namespace: {namespace}}}
secrets:
  - name: creds
    data: {{password: {{valueFrom: {{secretKeyRef: {{name: source, key: password}}}}}}}}
volumeClaims:
  - {{name: data, size: 1Gi}}
workloads:
  - name: web
    image: nginx:1.27
    env:
      PASSWORD: {{secretKeyRef: {{name: creds, key: password}}}}
    volumes:
      - {{name: data, persistentVolumeClaim: data, mountPath: /data}}
manifests:
  - apiVersion: coordination.k8s.io/v1
    kind: Lease
    metadata: {{name: {name}-beacon}}
    spec: {{holderIdentity: someone}}
  - apiVersion: v1
    kind: ConfigMap
    metadata: {{name: settings}}
    data: {{mode: fast}}
"""


def names(kubectl: Runner, namespace: str, kind: str) -> list[str]:
    found = get_json(kubectl, kind, "-n", namespace)["items"]
    return sorted(
        item["metadata"]["name"] for item in found if item["metadata"]["name"] != "kube-root-ca.crt"
    )


def test_deleting_a_plan_deletes_every_object_but_its_claims_and_says_which(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    deleting_a_plan(controllers, planner, kubectl, namespace)


def test_a_prune_that_cannot_finish_keeps_the_finalizer_and_says_why(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    a_held_prune(controllers, planner, kubectl, namespace)


def test_a_plan_in_a_namespace_being_deleted_lets_the_namespace_go(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    a_deleted_namespace(controllers, planner, kubectl, namespace)


def deleting_a_plan(controllers: Start, planner: Runner, kubectl: Runner, namespace: str) -> None:
    """Both shapes in one Plan, deleted: everything gone but its claim, the Event naming each (the
    real tier runs the same)."""
    install_crd(planner, kubectl)
    made = kubectl("create", "secret", "generic", "source", "-n", namespace, "--from-literal=password=s3cr3t")
    assert made.returncode == 0, made.stderr
    running = controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-f", "-", stdin=every_shape_plan(namespace, "shop")).returncode == 0
    wait_ready(kubectl, namespace, "shop")
    assert names(kubectl, namespace, "deployments") == ["web"]
    assert names(kubectl, namespace, "leases") == ["shop-beacon"]
    records = [s for s in names(kubectl, namespace, "secrets") if s.startswith("planner.shop.g")]

    deleted = kubectl("delete", "plan", "shop", "-n", namespace, "--timeout=90s")

    assert deleted.returncode == 0, deleted.stderr + running.output()
    assert names(kubectl, namespace, "deployments") == []
    assert names(kubectl, namespace, "configmaps") == []
    assert names(kubectl, namespace, "leases") == []
    # What stays: the Secret it read from, its claim, its ApplySet parent (which lists the claim still)
    # and its history (the prune's generation too).
    secrets = names(kubectl, namespace, "secrets")
    assert [s for s in secrets if not s.startswith("planner.shop.g")] == ["shop", "source"], secrets
    assert len([s for s in secrets if s.startswith("planner.shop.g")]) == len(records) + 1, secrets
    assert names(kubectl, namespace, "pvc") == ["data"]
    (pruned,) = [e for e in plan_events(kubectl, namespace, "shop") if e[0] == "Pruned"]
    message = pruned[2]
    assert message.startswith("deleted 4 objects: "), message
    for ref in (
        f"configmap/{namespace}/settings",
        f"deployment/{namespace}/web",
        f"lease/{namespace}/shop-beacon",
        f"secret/{namespace}/creds",
    ):
        assert ref in message.split("; kept")[0], message
    assert message.endswith(
        f"; kept 1: persistentvolumeclaim/{namespace}/data (PVCs and Namespaces are kept without "
        "reconcile.allowDataLoss)"
    ), message
    assert "s3cr3t" not in message + running.output()


def a_held_prune(controllers: Start, planner: Runner, kubectl: Runner, namespace: str) -> None:
    """A ConfigMap held by someone else's finalizer: the prune fails and says so, then finishes."""
    install_crd(planner, kubectl)
    text = every_shape_plan(namespace, "held").replace(
        "{valueFrom: {secretKeyRef: {name: source, key: password}}}", "literal"
    )
    text += "reconcile: {timeout: 3s}\n"
    running = controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-f", "-", stdin=text).returncode == 0
    wait_ready(kubectl, namespace, "held")
    # Someone else's finalizer holds the ConfigMap: its delete never completes.
    patch = json.dumps({"metadata": {"finalizers": ["example.com/hold"]}})
    assert kubectl("patch", "configmap", "settings", "-n", namespace, "-p", patch).returncode == 0

    assert kubectl("delete", "plan", "held", "-n", namespace, "--wait=false").returncode == 0

    def refused() -> dict[str, str] | None:
        ready = conditions(get_json(kubectl, "plan", "held", "-n", namespace)).get("Ready") or {}
        return ready if ready.get("reason") == "PruneFailed" else None

    ready = eventually(refused, timeout=60)
    assert ready["status"] == "False", ready
    assert "cannot prune its objects: " in ready["message"], ready
    assert f"configmap/{namespace}/settings" in ready["message"], ready
    assert "its finalizer planner.dev/prune stays (remove it to leave them)" in ready["message"], ready
    plan = get_json(kubectl, "plan", "held", "-n", namespace)
    assert plan["metadata"]["finalizers"] == ["planner.dev/prune"], plan["metadata"]
    assert any(e[:2] == ("ReconcileFailed", "Warning") for e in plan_events(kubectl, namespace, "held"))

    # The hold released: the next try finishes, and the Plan is gone.
    release = json.dumps({"metadata": {"finalizers": None}})
    assert kubectl("patch", "configmap", "settings", "-n", namespace, "-p", release).returncode == 0
    gone = kubectl("wait", "--for=delete", "plan/held", "-n", namespace, "--timeout=90s")
    assert gone.returncode == 0, gone.stderr + running.output()
    assert names(kubectl, namespace, "deployments") == []


def a_deleted_namespace(controllers: Start, planner: Runner, kubectl: Runner, namespace: str) -> None:
    """`kubectl delete namespace` with a Plan in it: the server refuses every create there (the run
    lock's Lease, a generation record, an Event), so the prune runs without them, its finalizer goes,
    and so does the namespace."""
    install_crd(planner, kubectl)
    text = every_shape_plan(namespace, "doomed").replace(
        "{valueFrom: {secretKeyRef: {name: source, key: password}}}", "literal"
    )
    running = controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-f", "-", stdin=text).returncode == 0
    wait_ready(kubectl, namespace, "doomed")

    gone = kubectl("delete", "namespace", namespace, "--timeout=120s")

    assert gone.returncode == 0, gone.stderr + running.output()
    assert kubectl("get", "namespace", namespace).returncode != 0
    assert f"namespace {namespace} is being deleted: no lock can be taken there" in running.output()
