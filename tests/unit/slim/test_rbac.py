"""The RBAC authorizer, rule by rule and binding by binding, against hand-written expectations taken
from the apiserver's RBAC (rule matching, subjects, the reasons and the 403 body), the request
attributes it is given, aggregation, and the bootstrap policy's user-facing roles."""

from __future__ import annotations

from typing import Any

import pytest

from planner.slim.authorizer import Attributes, Authorizer, aggregated_rules, forbidden, rule_allows
from planner.slim.bootstrap import policy_objects
from planner.slim.requestinfo import RequestInfo, request_info
from planner.slim.users import ANONYMOUS, User, service_account_user

Obj = dict[str, Any]
SA = service_account_user("ci", "planner")


def resource(
    verb: str, group: str, res: str, *, ns: str = "shop", sub: str = "", name: str = "", user: User = SA
) -> Attributes:
    return Attributes(user, RequestInfo(True, "", verb, group, "v1", ns, res, sub, name))


def url(verb: str, path: str, user: User = SA) -> Attributes:
    return Attributes(user, RequestInfo(False, path, verb))


def rule(verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None) -> Obj:
    found: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if names is not None:
        found["resourceNames"] = names
    return found


@pytest.mark.parametrize(
    ("rule_", "attrs", "allowed"),
    [
        (rule(["get"], [""], ["pods"]), resource("get", "", "pods"), True),
        (rule(["get"], [""], ["pods"]), resource("list", "", "pods"), False),
        (rule(["*"], [""], ["pods"]), resource("deletecollection", "", "pods"), True),
        (rule(["get"], ["apps"], ["deployments"]), resource("get", "", "deployments"), False),
        (rule(["get"], ["*"], ["deployments"]), resource("get", "apps", "deployments"), True),
        (rule(["get"], [""], ["*"]), resource("get", "", "pods", sub="log"), True),
        (rule(["get"], [""], ["pods"]), resource("get", "", "pods", sub="log"), False),
        (rule(["get"], [""], ["pods/log"]), resource("get", "", "pods", sub="log"), True),
        (rule(["get"], [""], ["pods/log"]), resource("get", "", "pods"), False),
        (
            rule(["update"], ["apps"], ["*/scale"]),
            resource("update", "apps", "deployments", sub="scale"),
            True,
        ),
        (rule(["update"], ["apps"], ["*/scale"]), resource("update", "apps", "deployments"), False),
        (
            rule(["get"], [""], ["configmaps"], ["settings"]),
            resource("get", "", "configmaps", name="settings"),
            True,
        ),
        (
            rule(["get"], [""], ["configmaps"], ["settings"]),
            resource("get", "", "configmaps", name="other"),
            False,
        ),
        (rule(["list"], [""], ["configmaps"], ["settings"]), resource("list", "", "configmaps"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, url("get", "/healthz"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, url("post", "/healthz"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, url("get", "/apis/apps/v1"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}, url("get", "/apis"), False),
        ({"verbs": ["*"], "nonResourceURLs": ["*"]}, url("delete", "/anything"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/api"]}, resource("get", "", "pods"), False),
        (rule(["get"], ["*"], ["*"]), url("get", "/version"), False),
    ],
    ids=[
        "the verb and resource of the rule",
        "another verb",
        "* is every verb",
        "another API group",
        "* is every API group",
        "* is every resource, subresources too",
        "a resource does not cover its subresources",
        "a subresource named with its resource",
        "a subresource rule does not cover the resource",
        "*/scale is the scale subresource of any resource",
        "*/scale does not cover the resource itself",
        "resourceNames allow the object named",
        "resourceNames deny another object",
        "resourceNames never allow a list (it names no object)",
        "a non-resource URL",
        "a non-resource URL with another verb",
        "a trailing * matches by prefix",
        "a prefix rule does not match the bare prefix",
        "* is every URL",
        "a URL rule allows no resource",
        "a resource rule allows no URL",
    ],
)
def test_rule_matching(rule_: Obj, attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(rule_, attrs) is allowed


# --- bindings -----------------------------------------------------------------------------------------


class Policy:
    """An in-memory rbac.Policy: cluster roles and bindings, namespaced roles and bindings."""

    def __init__(self, objects: list[tuple[str, Obj]]) -> None:
        self.objects = objects

    def _of(self, kind: str, namespace: str = "") -> list[Obj]:
        found = [o for k, o in self.objects if k == kind and o["metadata"].get("namespace", "") == namespace]
        return sorted(found, key=lambda o: str(o["metadata"]["name"]))

    def cluster_role_bindings(self) -> list[Obj]:
        return self._of("ClusterRoleBinding")

    def role_bindings(self, namespace: str) -> list[Obj]:
        return self._of("RoleBinding", namespace)

    def cluster_role(self, name: str) -> Obj | None:
        return next((o for o in self._of("ClusterRole") if o["metadata"]["name"] == name), None)

    def role(self, namespace: str, name: str) -> Obj | None:
        return next((o for o in self._of("Role", namespace) if o["metadata"]["name"] == name), None)


def meta(name: str, namespace: str = "") -> Obj:
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def binding(name: str, role_kind: str, role: str, subjects: list[Obj], namespace: str = "") -> Obj:
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}
    return {"metadata": meta(name, namespace), "roleRef": ref, "subjects": subjects}


SA_SUBJECT = {"kind": "ServiceAccount", "name": "planner", "namespace": "ci"}
POLICY = Policy(
    [
        (
            "Role",
            {
                "metadata": meta("deployer", "shop"),
                "rules": [rule(["get", "list"], ["apps"], ["deployments"])],
            },
        ),
        ("ClusterRole", {"metadata": meta("pod-reader"), "rules": [rule(["get"], [""], ["pods"])]}),
        ("ClusterRole", {"metadata": meta("node-reader"), "rules": [rule(["list"], [""], ["nodes"])]}),
        ("RoleBinding", binding("planner", "Role", "deployer", [SA_SUBJECT], "shop")),
        ("RoleBinding", binding("pods", "ClusterRole", "pod-reader", [SA_SUBJECT], "shop")),
        (
            "RoleBinding",
            binding(
                "local", "ClusterRole", "pod-reader", [{"kind": "ServiceAccount", "name": "planner"}], "ci"
            ),
        ),
        ("RoleBinding", binding("ghost", "Role", "missing", [SA_SUBJECT], "cart")),
        (
            "ClusterRoleBinding",
            binding("nodes", "ClusterRole", "node-reader", [{"kind": "Group", "name": "ops"}]),
        ),
        (
            "ClusterRoleBinding",
            binding("alice", "ClusterRole", "pod-reader", [{"kind": "User", "name": "alice"}]),
        ),
    ]
)
ALICE = User("alice", groups=("system:authenticated",))
OPS = User("bob", groups=("ops", "system:authenticated"))


@pytest.mark.parametrize(
    ("attrs", "allowed", "reason"),
    [
        (
            resource("list", "apps", "deployments"),
            True,
            'RBAC: allowed by RoleBinding "planner/shop" of Role "deployer" to ServiceAccount "planner/ci"',
        ),
        (resource("list", "apps", "deployments", ns="other"), False, ""),
        (resource("delete", "apps", "deployments"), False, ""),
        (
            resource("get", "", "pods"),
            True,
            'RBAC: allowed by RoleBinding "pods/shop" of ClusterRole "pod-reader" to ServiceAccount "planner/ci"',
        ),
        (resource("get", "", "pods", ns=""), False, ""),
        (
            resource("get", "", "pods", ns="ci"),
            True,
            'RBAC: allowed by RoleBinding "local/ci" of ClusterRole "pod-reader" to ServiceAccount "planner/ci"',
        ),
        (
            resource("get", "", "pods", ns="cart"),
            False,
            'RBAC: role.rbac.authorization.k8s.io "missing" not found',
        ),
        (
            resource("get", "", "pods", ns="anywhere", user=ALICE),
            True,
            'RBAC: allowed by ClusterRoleBinding "alice" of ClusterRole "pod-reader" to User "alice"',
        ),
        (
            resource("list", "", "nodes", ns="", user=OPS),
            True,
            'RBAC: allowed by ClusterRoleBinding "nodes" of ClusterRole "node-reader" to Group "ops"',
        ),
        (resource("list", "", "nodes", ns="", user=ALICE), False, ""),
        (resource("get", "", "pods", user=ANONYMOUS), False, ""),
    ],
    ids=[
        "a RoleBinding to a Role allows in its namespace",
        "a RoleBinding allows nothing in another namespace",
        "a verb the Role lacks is not allowed",
        "a RoleBinding to a ClusterRole allows in the binding's namespace",
        "a RoleBinding to a ClusterRole allows nothing cluster-wide",
        "a ServiceAccount subject without a namespace is the binding's namespace's",
        "a binding to a missing Role says so in the reason",
        "a ClusterRoleBinding allows in every namespace",
        "a Group subject matches the user's groups",
        "a user outside the group is not allowed",
        "the anonymous user is bound to nothing",
    ],
)
def test_bindings(attrs: Attributes, allowed: bool, reason: str) -> None:
    decision = Authorizer(POLICY).authorize(attrs)
    assert (decision.allowed, decision.reason) == (allowed, reason)


def test_rules_for_lists_cluster_then_namespace_rules() -> None:
    rules = Authorizer(POLICY).rules_for(SA, "shop")
    assert rules.resource_rules == [
        {"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
    ]
    assert rules.non_resource_rules == [] and rules.errors == []


def test_rules_for_reports_a_binding_to_a_missing_role() -> None:
    assert Authorizer(POLICY).rules_for(SA, "cart").errors == [
        'role.rbac.authorization.k8s.io "missing" not found'
    ]


# --- the 403 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "message", "details"),
    [
        (
            resource("list", "apps", "deployments"),
            'deployments.apps is forbidden: User "system:serviceaccount:ci:planner" cannot list resource '
            '"deployments" in API group "apps" in the namespace "shop"',
            {"group": "apps", "kind": "deployments"},
        ),
        (
            resource("get", "", "secrets", name="db"),
            'secrets "db" is forbidden: User "system:serviceaccount:ci:planner" cannot get resource "secrets" '
            'in API group "" in the namespace "shop"',
            {"name": "db", "kind": "secrets"},
        ),
        (
            resource("update", "apps", "deployments", sub="scale", name="web"),
            'deployments.apps "web" is forbidden: User "system:serviceaccount:ci:planner" cannot update '
            'resource "deployments/scale" in API group "apps" in the namespace "shop"',
            {"name": "web", "group": "apps", "kind": "deployments"},
        ),
        (
            resource("list", "", "nodes", ns=""),
            'nodes is forbidden: User "system:serviceaccount:ci:planner" cannot list resource "nodes" in API '
            'group "" at the cluster scope',
            {"kind": "nodes"},
        ),
        (
            url("get", "/api", ANONYMOUS),
            'forbidden: User "system:anonymous" cannot get path "/api"',
            {},
        ),
    ],
    ids=[
        "a namespaced list names group and namespace",
        "a named object is quoted after the resource",
        "a subresource is named after the resource",
        "a cluster-scoped request is at the cluster scope",
        "a non-resource request names the path, with empty details",
    ],
)
def test_forbidden_bodies_are_the_apiservers(attrs: Attributes, message: str, details: Obj) -> None:
    error = forbidden(attrs)
    assert error.code == 403
    assert error.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


def test_a_reason_follows_the_message() -> None:
    error = forbidden(
        resource("get", "", "pods", ns="cart"), 'RBAC: role.rbac.authorization.k8s.io "x" not found'
    )
    assert error.body["message"].endswith(
        'in the namespace "cart": RBAC: role.rbac.authorization.k8s.io "x" not found'
    )


# --- request attributes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        (
            "GET",
            "/api/v1/namespaces/shop",
            {},
            RequestInfo(True, "/api/v1/namespaces/shop", "get", "", "v1", "shop", "namespaces", "", "shop"),
        ),
        (
            "PUT",
            "/api/v1/namespaces/shop/finalize",
            {},
            RequestInfo(
                True,
                "/api/v1/namespaces/shop/finalize",
                "update",
                "",
                "v1",
                "shop",
                "namespaces",
                "finalize",
                "shop",
            ),
        ),
        (
            "GET",
            "/api/v1/namespaces/shop/pods",
            {"watch": "1", "fieldSelector": "metadata.name=web"},
            RequestInfo(True, "/api/v1/namespaces/shop/pods", "watch", "", "v1", "shop", "pods", "", "web"),
        ),
        (
            "POST",
            "/api/v1/namespaces/ci/serviceaccounts/planner/token",
            {},
            RequestInfo(
                True,
                "/api/v1/namespaces/ci/serviceaccounts/planner/token",
                "create",
                "",
                "v1",
                "ci",
                "serviceaccounts",
                "token",
                "planner",
            ),
        ),
        ("GET", "/apis/apps/v1", {}, RequestInfo(False, "/apis/apps/v1", "get")),
        ("POST", "/healthz", {}, RequestInfo(False, "/healthz", "post")),
    ],
    ids=[
        "a namespace is in its own namespace",
        "a namespace's subresource",
        "a watch pinned to one name names it",
        "a ServiceAccount's token is its subresource",
        "discovery is a non-resource request",
        "a non-resource verb is the method, lower-cased",
    ],
)
def test_request_attributes(method: str, path: str, query: dict[str, str], expected: RequestInfo) -> None:
    assert request_info(method, path, query) == expected


# --- aggregation --------------------------------------------------------------------------------------


def labelled(name: str, labels: dict[str, str], rules: list[Obj]) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "rules": rules}


def test_aggregation_takes_selected_roles_by_name_without_duplicates_or_itself() -> None:
    pods, nodes = rule(["get"], [""], ["pods"]), rule(["list"], [""], ["nodes"])
    selector = {"matchLabels": {"team": "a"}}
    aggregator = {
        "metadata": {"name": "team", "labels": {"team": "a"}},
        "aggregationRule": {"clusterRoleSelectors": [selector]},
        "rules": [rule(["delete"], [""], ["pods"])],
    }
    roles = [
        labelled("zeta", {"team": "a"}, [pods]),
        labelled("alpha", {"team": "a"}, [nodes, pods]),
        labelled("other", {"team": "b"}, [rule(["*"], ["*"], ["*"])]),
        aggregator,
    ]
    assert aggregated_rules(aggregator, roles) == [nodes, pods]
    assert aggregated_rules(roles[0], roles) is None


def test_aggregation_follows_the_selectors_order_and_expressions() -> None:
    first, second = rule(["get"], [""], ["a"]), rule(["get"], [""], ["b"])
    aggregator = {
        "metadata": {"name": "agg"},
        "aggregationRule": {
            "clusterRoleSelectors": [
                {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["two"]}]},
                {"matchLabels": {"tier": "one"}},
            ]
        },
    }
    roles = [labelled("a", {"tier": "one"}, [first]), labelled("b", {"tier": "two"}, [second]), aggregator]
    assert aggregated_rules(aggregator, roles) == [second, first]


# --- the bootstrap policy -----------------------------------------------------------------------------


def bootstrap() -> Policy:
    return Policy(list(policy_objects()))


def bound_to(role: str, user: User) -> Authorizer:
    policy = bootstrap()
    subject = {"kind": "User", "name": user.name, "apiGroup": "rbac.authorization.k8s.io"}
    policy.objects.append(("RoleBinding", binding("b", "ClusterRole", role, [subject], "shop")))
    return Authorizer(policy)


CAROL = User("carol", groups=("system:authenticated",))


@pytest.mark.parametrize(
    ("role", "verb", "group", "res", "sub", "allowed"),
    [
        ("view", "list", "", "pods", "", True),
        ("view", "get", "", "pods", "log", True),
        ("view", "list", "", "secrets", "", False),
        ("view", "create", "apps", "deployments", "", False),
        ("view", "watch", "autoscaling", "horizontalpodautoscalers", "", True),
        ("edit", "list", "", "secrets", "", True),
        ("edit", "create", "apps", "deployments", "", True),
        ("edit", "update", "apps", "deployments", "scale", True),
        ("edit", "create", "", "serviceaccounts", "token", True),
        ("edit", "create", "rbac.authorization.k8s.io", "rolebindings", "", False),
        ("admin", "create", "rbac.authorization.k8s.io", "rolebindings", "", True),
        ("admin", "list", "", "pods", "", True),
        ("cluster-admin", "delete", "anything.example.com", "widgets", "", True),
    ],
    ids=[
        "view lists pods",
        "view reads pod logs",
        "view never reads secrets",
        "view creates nothing",
        "view watches autoscalers",
        "edit reads secrets",
        "edit creates deployments",
        "edit scales deployments",
        "edit makes ServiceAccount tokens",
        "edit cannot grant roles",
        "admin grants roles in its namespace",
        "admin has view's rules through edit",
        "cluster-admin may do anything",
    ],
)
def test_the_user_facing_roles_aggregate_their_rules(
    role: str, verb: str, group: str, res: str, sub: str, allowed: bool
) -> None:
    attrs = resource(verb, group, res, sub=sub, user=CAROL)
    assert bound_to(role, CAROL).authorize(attrs).allowed is allowed


@pytest.mark.parametrize(
    ("user", "path", "allowed"),
    [
        (CAROL, "/apis/apps/v1", True),
        (CAROL, "/openapi/v2", True),
        (CAROL, "/metrics", False),
        (ANONYMOUS, "/version", True),
        (ANONYMOUS, "/healthz", True),
        (ANONYMOUS, "/api", False),
    ],
    ids=[
        "an authenticated user reads discovery",
        "an authenticated user reads the OpenAPI documents",
        "metrics are for system:monitoring",
        "anyone reads the version",
        "anyone reads health",
        "the anonymous user reads no discovery",
    ],
)
def test_discovery_and_public_info(user: User, path: str, allowed: bool) -> None:
    assert Authorizer(bootstrap()).authorize(url("get", path, user)).allowed is allowed
