"""The lockdown's refusals and the account a Plan is reconciled as (`planner.controller.tenancy`)."""

from __future__ import annotations

from planner.controller.tenancy import Tenancy, service_account_user

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "team-a"},
}
ESCAPED = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "miner", "namespace": "kube-system"},
}
BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "tenant-is-admin"},
}


def test_without_the_lockdown_nothing_is_refused_by_the_controller() -> None:
    assert Tenancy().refusals("team-a", [DEPLOYMENT, ESCAPED, BINDING]) == []


def test_the_lockdown_refuses_other_namespaces_and_cluster_scoped_objects_naming_the_rule() -> None:
    lockdown = Tenancy(no_cross_namespace_refs=True)
    assert lockdown.refusals("team-a", [DEPLOYMENT, ESCAPED, BINDING]) == [
        "deployment/kube-system/miner: in namespace kube-system, outside the Plan's namespace team-a "
        "(--no-cross-namespace-refs)",
        "clusterrolebinding/tenant-is-admin: cluster-scoped, and the controller's --cluster-scoped-namespaces "
        "does not name namespace team-a (allowClusterScoped alone is the plan's own word)",
    ]


def test_a_namespace_the_admin_names_may_hold_cluster_scoped_objects() -> None:
    platform = Tenancy(no_cross_namespace_refs=True, cluster_scoped_namespaces=frozenset({"platform"}))
    assert platform.refusals("platform", [BINDING]) == []
    assert len(platform.refusals("team-a", [BINDING])) == 1


def test_a_plan_is_reconciled_as_its_own_account_else_the_default() -> None:
    assert Tenancy(default_service_account="deployer").account_of("ci") == "ci"
    assert Tenancy(default_service_account="deployer").account_of(None) == "deployer"
    assert Tenancy().account_of(None) is None
    assert service_account_user("team-a", "ci") == "system:serviceaccount:team-a:ci"
