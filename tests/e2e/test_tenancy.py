"""Tenancy (issue 40): a Plan object can do only what its ServiceAccount may do. The controller runs as
the cluster's admin (as the quick start runs it) and reconciles each Plan as the ServiceAccount it names,
or `--default-service-account`, through impersonation, so the API server's RBAC judges every request;
the lockdown flags refuse what leaves the Plan's namespace before anything is written. `planner apply
--as` gives a pipeline the same. Checked as the admin through kubectl and the server's request log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.e2e.conftest import Runner, write_plan
from tests.e2e.test_controller import Start, controllers
from tests.e2e.test_deploy import DEPLOY
from tests.e2e.test_plan_objects import conditions, get_json, install_crd, wait_ready
from tests.simulated import eventually

__all__ = ["controllers"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(rbac=True, simulate=True, time_scale=0.2) as handle:
        yield handle


def tenant(kubectl: Runner, namespace: str) -> str:
    """The ServiceAccount `deployer` of `namespace`, bound there to deploy/tenancy.yaml's example role
    `planner-tenant` (that namespace's objects only); its user name."""
    assert kubectl("apply", "-f", str(DEPLOY / "tenancy.yaml")).returncode == 0
    assert kubectl("create", "serviceaccount", "deployer", "-n", namespace).returncode == 0
    bound = kubectl(
        "create", "rolebinding", "deployer", "--clusterrole=planner-tenant",
        f"--serviceaccount={namespace}:deployer", "-n", namespace,
    )  # fmt: skip
    assert bound.returncode == 0, bound.stderr
    return f"system:serviceaccount:{namespace}:deployer"


def plan_object(namespace: str, name: str, body: str, *, account: str | None = "deployer") -> str:
    named = f"serviceAccountName: {account}\n" if account else ""
    return (
        f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: {name}, namespace: {namespace}}}\n"
        f"{named}reconcile: {{timeout: 20s}}\n{body}"
    )


ESCAPE = "workloads:\n  - {name: miner, image: 'nginx:1.27', runtimeNamespace: kube-system}\n"
CLUSTER_ADMIN = """\
allowClusterScoped: true
manifests:
  - apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    metadata: {name: tenant-is-admin}
    roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
    subjects: [{kind: ServiceAccount, name: default, namespace: team}]
"""
OWN = "workloads:\n  - {name: web, image: 'nginx:1.27'}\nconfigMaps:\n  - {name: settings, data: {a: b}}\n"


def refused(kubectl: Runner, namespace: str, name: str) -> dict[str, Any]:
    def failed() -> dict[str, Any] | None:
        ready = conditions(get_json(kubectl, "plan", name, "-n", namespace)).get("Ready") or {}
        return ready if ready.get("status") == "False" else None

    found: dict[str, Any] = eventually(failed, timeout=90)
    return found


def test_a_plan_does_only_what_its_service_account_may_do(
    cluster: ClusterHandle, controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    user = tenant(kubectl, namespace)
    admin = SlimAdmin.of(cluster)
    running = controllers("-n", namespace, "--interval", "1h")

    for name, body in (
        ("escape", ESCAPE),
        ("admin", CLUSTER_ADMIN.replace("namespace: team", f"namespace: {namespace}")),
    ):
        assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, name, body)).returncode == 0
    for name, what in (("escape", "deployments"), ("admin", "clusterrolebindings")):
        ready = refused(kubectl, namespace, name)
        assert "forbidden" in ready["message"] and user in ready["message"], (ready, running.output())
        assert what in ready["message"], ready
    assert kubectl("get", "deployment", "miner", "-n", "kube-system").returncode != 0
    assert kubectl("get", "clusterrolebinding", "tenant-is-admin").returncode != 0

    # Within its rights it does what it says, every request made as the account.
    admin.clear_requests()
    assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, "own", OWN)).returncode == 0
    wait_ready(kubectl, namespace, "own")
    assert get_json(kubectl, "deployment", "web", "-n", namespace)["metadata"]["name"] == "web"
    writes = [r for r in admin.requests(user) if r["verb"] in ("create", "patch", "update")]
    assert {(r["resource"], r["namespace"]) for r in writes} >= {
        ("deployments", namespace),
        ("configmaps", namespace),
        ("leases", namespace),
        ("secrets", namespace),
    }, writes

    # A Plan naming an account that does not exist fails, saying so, and writes nothing.
    ghost = plan_object(namespace, "ghost", OWN.replace("web", "ghost-web"), account="nobody")
    assert kubectl("apply", "-f", "-", stdin=ghost).returncode == 0
    ready = refused(kubectl, namespace, "ghost")
    assert ready["message"].startswith(
        f"ServiceAccount nobody (from serviceAccountName) not found in namespace {namespace}"
    )
    assert kubectl("get", "deployment", "ghost-web", "-n", namespace).returncode != 0


def test_the_lockdown_refuses_what_leaves_the_namespace_before_any_write(
    cluster: ClusterHandle, controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """With `--default-service-account` a Plan that names none is still its namespace's; with
    `--no-cross-namespace-refs` its objects in another namespace and its cluster-scoped ones are refused
    by the controller, naming the rule, even though the controller itself could write them."""
    install_crd(planner, kubectl)
    tenant(kubectl, namespace)
    admin = SlimAdmin.of(cluster)
    running = controllers(
        "-n", namespace, "--interval", "1h", "--default-service-account", "deployer", "--no-cross-namespace-refs"
    )  # fmt: skip
    admin.clear_requests()
    for name, body in (("escape", ESCAPE), ("admin", CLUSTER_ADMIN)):
        assert (
            kubectl("apply", "-f", "-", stdin=plan_object(namespace, name, body, account=None)).returncode
            == 0
        )
    escape, cluster_admin = refused(kubectl, namespace, "escape"), refused(kubectl, namespace, "admin")
    assert (
        "refused by the controller's lockdown, nothing written: deployment/kube-system/miner: in namespace kube-system, outside the Plan's namespace"
        in escape["message"]
    ), (escape, running.output())
    assert (
        "clusterrolebinding/tenant-is-admin: cluster-scoped, and the controller's --cluster-scoped-namespaces does not name namespace"
        in cluster_admin["message"]
    ), cluster_admin
    writes = [
        r
        for r in admin.requests()
        if r["verb"] in ("create", "patch", "update", "delete") and r["resource"] not in ("plans", "events")
    ]
    assert writes == [], writes
    assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, "own", OWN, account=None)).returncode == 0
    wait_ready(kubectl, namespace, "own")


def test_apply_as_a_tenant_account_is_judged_by_its_rights(
    planner: Runner, kubectl: Runner, namespace: str, tmp_path: Path
) -> None:
    """`planner apply --as`: one admin kubeconfig, the tenant's rights (issue 40, item 4)."""
    user = tenant(kubectl, namespace)
    header = f"apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {{name: cli, namespace: {namespace}}}\n"
    escape = planner("apply", str(write_plan(tmp_path, header + ESCAPE)), "--as", user, "--timeout", "20s")
    assert escape.returncode == 1, escape.stdout + escape.stderr
    assert "forbidden" in escape.stdout + escape.stderr, escape.stdout + escape.stderr
    assert f"as {user}, impersonated by kubeconfig user" in escape.stderr, escape.stderr
    assert kubectl("get", "deployment", "miner", "-n", "kube-system").returncode != 0
    own = planner("apply", str(write_plan(tmp_path, header + OWN)), "--as", user, "--timeout", "60s")
    assert own.returncode == 0, own.stdout + own.stderr
    history = planner("history", f"{namespace}/cli")
    assert user in history.stdout, history.stdout  # recorded as the account it ran as


def test_a_plan_cannot_overwrite_or_squat_on_another_namespaces_objects(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """team-b's ConfigMap named in a team-a Plan: the API server refuses the write as the tenant, and
    the object keeps its data; a Lease with team-b's run-lock name is a plan error, nothing written."""
    install_crd(planner, kubectl)
    tenant(kubectl, namespace)
    other = f"{namespace}-b"
    assert kubectl("create", "namespace", other).returncode == 0
    made = kubectl("create", "configmap", "settings", "-n", other, "--from-literal=owner=team-b")
    assert made.returncode == 0, made.stderr
    running = controllers("-n", namespace, "--interval", "1h")
    overwrite = (
        "manifests:\n  - apiVersion: v1\n    kind: ConfigMap\n"
        f"    metadata: {{name: settings, namespace: {other}}}\n    data: {{owner: team-a}}\n"
    )
    squat = (
        "manifests:\n  - apiVersion: coordination.k8s.io/v1\n    kind: Lease\n"
        f"    metadata: {{name: planner-lock-b, namespace: {other}}}\n    spec: {{holderIdentity: squatter}}\n"
    )
    for name, body in (("overwrite", overwrite), ("squat", squat)):
        assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, name, body)).returncode == 0
    overwrite_ready = refused(kubectl, namespace, "overwrite")
    assert "forbidden" in overwrite_ready["message"] and "configmaps" in overwrite_ready["message"], (
        overwrite_ready,
        running.output(),
    )
    squat_ready = refused(kubectl, namespace, "squat")
    assert "planner's run locks" in squat_ready["message"], squat_ready
    assert get_json(kubectl, "configmap", "settings", "-n", other)["data"] == {"owner": "team-b"}
    assert kubectl("get", "lease", "planner-lock-b", "-n", other).returncode != 0


def test_deleting_a_tenants_namespace_lets_it_go_though_its_plan_cannot_prune(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """The namespace's deletion takes the tenant's ServiceAccount and binding with it, so the Plan's
    prune, made as that account, is refused for good; the finalizer must not hold the namespace for
    ever. Here the Plan also names another namespace its account may not reach, so it never applied."""
    install_crd(planner, kubectl)
    tenant(kubectl, namespace)
    reach = (
        OWN + "manifests:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: default}}\n"
    )
    controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, "reach", reach)).returncode == 0
    assert "forbidden" in refused(kubectl, namespace, "reach")["message"]
    deleted = kubectl("delete", "namespace", namespace, "--timeout=60s")
    assert deleted.returncode == 0, deleted.stderr
    assert kubectl("get", "namespace", namespace).returncode != 0
    assert kubectl("get", "configmap", "x", "-n", "default").returncode != 0


POOL = (
    "warmPools:\n  - {name: dev, size: 1, template: {image: 'ghcr.io/acme/devbox:1', "
    "rootfs: {size: 1Gi}, workspace: {size: 1Gi}}}\n"
)


def pool_members(kubectl: Runner, namespace: str, kind: str) -> list[str]:
    listed = get_json(kubectl, kind, "-n", namespace, "-l", "planner.dev/pool=dev")["items"]
    return sorted(
        item["metadata"]["name"] for item in listed if not item["metadata"].get("deletionTimestamp")
    )


def test_a_warm_pool_is_kept_as_the_tenant_told_when_it_cannot_be_and_its_spares_go_with_the_plan(
    cluster: ClusterHandle, controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    install_crd(planner, kubectl)
    user = tenant(kubectl, namespace)
    admin = SlimAdmin.of(cluster)
    running = controllers("-n", namespace, "--interval", "1h")
    assert kubectl("apply", "-f", "-", stdin=plan_object(namespace, "pool", OWN + POOL)).returncode == 0
    wait_ready(kubectl, namespace, "pool")
    eventually(lambda: pool_members(kubectl, namespace, "pods"), timeout=60)
    made = {(r["verb"], r["resource"]) for r in admin.requests(user)}
    assert ("create", "pods") in made, running.output()  # the member made as the tenant, not the controller

    # An account that may not create Pods: its pool is told short on the Plan, by a Warning Event.
    rules = (DEPLOY / "tenancy.yaml").read_text().split("name: planner-tenant\n", 1)[1]
    no_pods = rules.replace(
        'verbs: [create, delete, get, list, patch, watch]\n  - apiGroups: [""]\n    resources: [events]',
        'verbs: [get, list, watch]\n  - apiGroups: [""]\n    resources: [events]',
    )
    role = f"apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: no-pods, namespace: {namespace}}}\n{no_pods}"
    assert kubectl("apply", "-f", "-", stdin=role.split("---")[0]).returncode == 0
    assert kubectl("create", "serviceaccount", "limited", "-n", namespace).returncode == 0
    bound = kubectl(
        "create",
        "rolebinding",
        "limited",
        "--role=no-pods",
        f"--serviceaccount={namespace}:limited",
        "-n",
        namespace,
    )
    assert bound.returncode == 0, bound.stderr
    short = plan_object(namespace, "short", POOL.replace("name: dev", "name: short"), account="limited")
    assert kubectl("apply", "-f", "-", stdin=short).returncode == 0

    def told() -> list[str]:
        listed = get_json(kubectl, "events", "-n", namespace, "--field-selector", "involvedObject.name=short")
        return [e["message"] for e in listed["items"] if e["reason"] == "WarmPoolFailed"]

    (message, *_) = eventually(told, timeout=60)
    assert "warm pool short is not kept at its size 1" in message and "forbidden" in message, message

    # Deleting the Plan deletes its pool's unclaimed member, Pod and PVCs.
    deleted = kubectl("delete", "plan", "pool", "-n", namespace, "--timeout=60s")
    assert deleted.returncode == 0, deleted.stderr + running.output()
    eventually(
        lambda: not pool_members(kubectl, namespace, "pods") and not pool_members(kubectl, namespace, "pvc")
    )


def test_deleting_a_plan_with_prune_false_leaves_its_objects(
    controllers: Start, planner: Runner, kubectl: Runner, namespace: str
) -> None:
    """As Flux's `prune: false`: the Plan goes, its objects stay."""
    install_crd(planner, kubectl)
    tenant(kubectl, namespace)
    running = controllers("-n", namespace, "--interval", "1h")
    kept = plan_object(namespace, "kept", OWN).replace(
        "reconcile: {timeout: 20s}", "reconcile: {timeout: 20s, prune: false}"
    )
    assert kubectl("apply", "-f", "-", stdin=kept).returncode == 0
    wait_ready(kubectl, namespace, "kept")
    deleted = kubectl("delete", "plan", "kept", "-n", namespace, "--timeout=60s")
    assert deleted.returncode == 0, deleted.stderr + running.output()
    assert kubectl("get", "deployment", "web", "-n", namespace).returncode == 0
    assert kubectl("get", "configmap", "settings", "-n", namespace).returncode == 0
