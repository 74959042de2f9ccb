"""Tenancy on a real control plane (issue 40): the controller runs as its ServiceAccount with only
deploy/'s roles (a TokenRequest token) and reconciles a Plan as the tenant account it names, through
impersonation. The real API server is the judge: a workload in kube-system and a ClusterRoleBinding to
cluster-admin are refused with its 403 and nothing is written; the Plan's own objects are written, and
the audit log shows each of those requests made as the controller impersonating the tenant."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.e2e.test_deploy import DEPLOY, USER, start_controller
from tests.e2e.test_plan_objects import get_json, install_crd
from tests.e2e.test_tenancy import CLUSTER_ADMIN, ESCAPE, OWN, plan_object, refused, tenant
from tests.real.conftest import Runner, token_kubeconfig
from tests.realplane import RealCluster


def impersonated(cluster: RealCluster, user: str, controller: str = USER) -> list[dict[str, object]]:
    """The audit events of the controller's requests made as `user`."""
    lines = cluster.audit_log.read_text().splitlines() if cluster.audit_log.exists() else []
    events = [json.loads(line) for line in lines if line.strip()]
    return [
        e
        for e in events
        if e.get("stage") == "ResponseComplete"
        and e.get("user", {}).get("username") == controller
        and e.get("impersonatedUser", {}).get("username") == user
    ]


def test_a_plan_reconciled_as_its_account_is_judged_by_the_api_server(
    cluster: RealCluster, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    applied = kubectl("apply", "-k", str(DEPLOY))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    kubectl("scale", "deployment", "planner-controller", "-n", "planner-system", "--replicas=0")
    install_crd(planner, kubectl)
    user = tenant(kubectl, namespace)
    kubeconfig = token_kubeconfig(cluster, "planner-system", "planner-controller", tmp_path / "kubeconfig")
    process, log = start_controller(tmp_path, kubeconfig, None, "-n", namespace, "--interval", "1h")
    try:
        admin = CLUSTER_ADMIN.replace("namespace: team", f"namespace: {namespace}")
        for name, body in (("escape", ESCAPE), ("admin", admin), ("own", OWN)):
            assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, name, body)).returncode == 0
        for name, what in (("escape", "deployments"), ("admin", "clusterrolebindings")):
            ready = refused(kubectl, namespace, name)
            assert "forbidden" in ready["message"] and user in ready["message"], (ready, log.read_text())
            assert what in ready["message"], ready
        done = kubectl("wait", "--for=condition=Ready", "plan/own", "-n", namespace, "--timeout=120s")
        assert done.returncode == 0, done.stderr + log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    assert kubectl("get", "deployment", "miner", "-n", "kube-system").returncode != 0
    assert kubectl("get", "clusterrolebinding", "tenant-is-admin").returncode != 0
    assert get_json(kubectl, "deployment", "web", "-n", namespace)["metadata"]["name"] == "web"
    made = impersonated(cluster, user)
    writes = {
        (str(ref.get("resource")), str(ref.get("namespace")), e["responseStatus"]["code"])  # type: ignore[index]
        for e in made
        if e["verb"] in ("create", "patch") and isinstance(ref := e.get("objectRef"), dict)
    }
    assert ("deployments", namespace, 201) in writes, writes
    assert ("leases", namespace, 201) in writes, writes
    refusals = {
        (str(ref.get("resource")), str(ref.get("namespace")))
        for e in made
        if e["responseStatus"]["code"] == 403 and isinstance(ref := e.get("objectRef"), dict)  # type: ignore[index]
    }
    assert ("deployments", "kube-system") in refusals, refusals  # asked as the tenant, refused by the server


def test_a_multi_tenant_controller_needs_only_its_own_role_on_a_real_api_server(
    cluster: RealCluster, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """Bound to only `planner-controller` and `planner-impersonator`, with `--default-service-account`,
    the controller reconciles a Plan as the tenant: the audit log shows none of its own requests
    refused and none of the Plan's objects written by it."""
    assert kubectl("apply", "-k", str(DEPLOY)).returncode == 0
    kubectl("scale", "deployment", "planner-controller", "-n", "planner-system", "--replicas=0")
    install_crd(planner, kubectl)
    account = f"tenant-controller-{namespace}"
    controller_user = f"system:serviceaccount:planner-system:{account}"
    assert kubectl("create", "serviceaccount", account, "-n", "planner-system").returncode == 0
    for role in ("planner-controller", "planner-impersonator"):
        bound = kubectl(
            "create", "clusterrolebinding", f"{account}-{role}", f"--clusterrole={role}",
            f"--serviceaccount=planner-system:{account}",
        )  # fmt: skip
        assert bound.returncode == 0, bound.stderr
    user = tenant(kubectl, namespace)
    kubeconfig = token_kubeconfig(cluster, "planner-system", account, tmp_path / "kubeconfig")
    assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, "own", OWN, account=None)).returncode == 0
    process, log = start_controller(
        tmp_path, kubeconfig, None, "-n", namespace, "--interval", "1h", "--default-service-account", "deployer"
    )  # fmt: skip
    try:
        done = kubectl("wait", "--for=condition=Ready", "plan/own", "-n", namespace, "--timeout=120s")
        assert done.returncode == 0, done.stderr + log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    lines = cluster.audit_log.read_text().splitlines() if cluster.audit_log.exists() else []
    events = [json.loads(line) for line in lines if line.strip()]
    own = [
        e
        for e in events
        if e.get("stage") == "ResponseComplete"
        and e.get("user", {}).get("username") == controller_user
        and not e.get("impersonatedUser")
    ]
    assert own, "no request of the controller's own was audited"
    assert [e for e in own if e["responseStatus"]["code"] == 403] == []
    writes = {
        str(e["objectRef"]["resource"])  # type: ignore[index]
        for e in own
        if e["verb"] in ("create", "patch", "update", "delete")
    }
    assert writes <= {"plans", "events", "leases"}, writes
    assert impersonated(cluster, user, controller_user), "nothing was done as the tenant"


def test_deleting_a_tenants_namespace_on_a_real_api_server_lets_it_go(
    cluster: RealCluster, planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """A namespace's deletion takes the tenant's ServiceAccount and binding with the Plan; the real
    namespace controller happens to delete the Plan first, so here the binding is taken away before the
    namespace is deleted: the Plan's prune, made as that account, is then refused for good, and the
    controller must release its finalizer, or the namespace stays Terminating for ever."""
    assert kubectl("apply", "-k", str(DEPLOY)).returncode == 0
    kubectl("scale", "deployment", "planner-controller", "-n", "planner-system", "--replicas=0")
    install_crd(planner, kubectl)
    tenant(kubectl, namespace)
    reach = (
        OWN + "manifests:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}\n"
    )
    kubeconfig = token_kubeconfig(cluster, "planner-system", "planner-controller", tmp_path / "kubeconfig")
    process, log = start_controller(tmp_path, kubeconfig, None, "-n", namespace, "--interval", "1h")
    try:
        assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, "reach", reach)).returncode == 0
        assert "forbidden" in refused(kubectl, namespace, "reach")["message"], log.read_text()
        assert kubectl("delete", "rolebinding", "deployer", "-n", namespace).returncode == 0
        deleted = kubectl("delete", "namespace", namespace, "--timeout=90s")
        assert deleted.returncode == 0, deleted.stderr + log.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    assert kubectl("get", "namespace", namespace).returncode != 0
    assert kubectl("get", "configmap", "x", "-n", "default").returncode != 0
