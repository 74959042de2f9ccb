"""RBAC over HTTP: a cluster started with `rbac=True` authenticates ServiceAccount tokens it issued and
the admin token, and allows each request exactly when a bound role does, answering the rest with
the apiserver's 403. Every check is a raw request carrying the token under test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from planner.testing.slimadmin import SlimAdmin
from tests.slimcluster import http

Obj = dict[str, Any]
RBAC = "/apis/rbac.authorization.k8s.io/v1"
WEB = {
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(rbac=True) as handle:
        yield handle


_names = iter(range(1_000_000))


@pytest.fixture
def ns(cluster: ClusterHandle) -> str:
    name = f"r{os.getpid()}-{next(_names)}"
    assert http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": name}}).status == 201
    return name


def account(cluster: ClusterHandle, namespace: str, name: str = "planner", **spec: Any) -> str:
    """A new ServiceAccount's token (made by the admin)."""
    reply = http(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}}
    )
    assert reply.status == 201, reply.body
    return token_for(cluster, namespace, name, **spec)


def token_for(cluster: ClusterHandle, namespace: str, name: str, **spec: Any) -> str:
    reply = http(
        cluster, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", {"spec": spec}
    )
    assert reply.status == 201, reply.body
    token: str = reply.body["status"]["token"]
    return token


def create(cluster: ClusterHandle, path: str, body: Obj) -> None:
    reply = http(cluster, "POST", path, body)
    assert reply.status == 201, reply.body


def bind(
    cluster: ClusterHandle, namespace: str, name: str, role_kind: str, role: str, subjects: list[Obj]
) -> None:
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}
    create(
        cluster,
        f"{RBAC}/namespaces/{namespace}/rolebindings",
        {"metadata": {"name": name}, "roleRef": ref, "subjects": subjects},
    )


def service_account(namespace: str, name: str = "planner") -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


DEPLOYER_RULES = [
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "verbs": ["get", "list", "watch", "create", "patch"],
    },
    {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]},
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": ["settings"],
        "verbs": ["get", "update"],
    },
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
]

# (what, method, path under the namespace, body, allowed): every verb the Role grants, and its neighbours
REQUESTS: list[tuple[str, str, str, Any, bool]] = [
    ("list deployments", "GET", "/apis/apps/v1/namespaces/{ns}/deployments", None, True),
    (
        "watch deployments",
        "GET",
        "/apis/apps/v1/namespaces/{ns}/deployments?watch=1&timeoutSeconds=1",
        None,
        True,
    ),
    ("create a deployment", "POST", "/apis/apps/v1/namespaces/{ns}/deployments", WEB, True),
    ("get a deployment", "GET", "/apis/apps/v1/namespaces/{ns}/deployments/web", None, True),
    (
        "patch a deployment",
        "PATCH",
        "/apis/apps/v1/namespaces/{ns}/deployments/web",
        {"metadata": {"labels": {"x": "y"}}},
        True,
    ),
    (
        "update its scale",
        "PUT",
        "/apis/apps/v1/namespaces/{ns}/deployments/web/scale",
        {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {"name": "web"},
            "spec": {"replicas": 2},
        },
        True,
    ),
    ("read its scale", "GET", "/apis/apps/v1/namespaces/{ns}/deployments/web/scale", None, False),
    ("delete a deployment", "DELETE", "/apis/apps/v1/namespaces/{ns}/deployments/web", None, False),
    ("read the named ConfigMap", "GET", "/api/v1/namespaces/{ns}/configmaps/settings", None, True),
    (
        "update the named ConfigMap",
        "PUT",
        "/api/v1/namespaces/{ns}/configmaps/settings",
        {"metadata": {"name": "settings"}, "data": {"a": "2"}},
        True,
    ),
    ("read another ConfigMap", "GET", "/api/v1/namespaces/{ns}/configmaps/other", None, False),
    ("list ConfigMaps (no name to match)", "GET", "/api/v1/namespaces/{ns}/configmaps", None, False),
    ("read a pod's log (no such pod: 404)", "GET", "/api/v1/namespaces/{ns}/pods/p/log", None, True),
    ("list pods", "GET", "/api/v1/namespaces/{ns}/pods", None, False),
    ("list deployments everywhere", "GET", "/apis/apps/v1/deployments", None, False),
]


def test_a_service_account_bound_to_a_role_gets_exactly_its_verbs(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns)
    create(
        cluster, f"{RBAC}/namespaces/{ns}/roles", {"metadata": {"name": "deployer"}, "rules": DEPLOYER_RULES}
    )
    bind(cluster, ns, "planner", "Role", "deployer", [service_account(ns)])
    create(
        cluster, f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "settings"}, "data": {"a": "1"}}
    )
    outcomes = {}
    for what, method, path, body, _allowed in REQUESTS:
        reply = http(cluster, method, path.format(ns=ns), body, token=token, content_type=_type(method))
        outcomes[what] = reply.status
    expected = {what: _expected_code(what, method, allowed) for what, method, _, _, allowed in REQUESTS}
    assert outcomes == expected


def _type(method: str) -> str:
    return "application/merge-patch+json" if method == "PATCH" else "application/json"


def _expected_code(what: str, method: str, allowed: bool) -> int:
    if not allowed:
        return 403
    if "no such pod" in what:
        return 404
    return 201 if method == "POST" else 200


def test_the_request_log_lists_what_the_account_did(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns, "logged")
    user = f"system:serviceaccount:{ns}:logged"
    http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods?fieldSelector=metadata.name%3Dp", token=token)
    http(cluster, "GET", "/api", token=token)
    admin = SlimAdmin.of(cluster)
    assert [
        (e["verb"], e["apiGroup"], e["resource"], e["namespace"], e["name"], e["path"], e["code"])
        for e in admin.requests(user=user)
    ] == [
        ("list", "", "pods", ns, "p", f"/api/v1/namespaces/{ns}/pods", 403),
        ("get", "", "", "", "", "/api", 200),
    ]
    forbidden = http(cluster, "GET", "/slim/requests", token=token)
    assert forbidden.body["message"] == f'forbidden: User "{user}" cannot get path "/slim/requests"'


def test_a_forbidden_request_gets_the_apiservers_status(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns)
    reply = http(cluster, "GET", f"/apis/apps/v1/namespaces/{ns}/deployments", token=token)
    assert (reply.status, reply.body) == (
        403,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'deployments.apps is forbidden: User "system:serviceaccount:{ns}:planner" cannot list '
            f'resource "deployments" in API group "apps" in the namespace "{ns}"',
            "reason": "Forbidden",
            "details": {"group": "apps", "kind": "deployments"},
            "code": 403,
        },
    )


def test_a_binding_to_a_missing_role_says_so(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns)
    bind(cluster, ns, "ghost", "Role", "nowhere", [service_account(ns)])
    reply = http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", token=token)
    assert reply.body["message"].endswith(': RBAC: role.rbac.authorization.k8s.io "nowhere" not found')


def test_a_cluster_role_bound_in_a_namespace_applies_there_only(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns)
    bind(cluster, ns, "viewers", "ClusterRole", "view", [service_account(ns)])
    assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", token=token).status == 200
    assert http(cluster, "GET", f"/api/v1/namespaces/{ns}/secrets", token=token).status == 403
    assert http(cluster, "GET", "/api/v1/namespaces/default/pods", token=token).status == 403
    assert http(cluster, "GET", "/api/v1/pods", token=token).status == 403


def test_a_cluster_role_binding_applies_everywhere(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns, "lister")
    create(
        cluster,
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": f"{ns}-nodes"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}],
        },
    )
    create(
        cluster,
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": f"{ns}-nodes"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{ns}-nodes",
            },
            "subjects": [service_account(ns, "lister")],
        },
    )
    assert http(cluster, "GET", "/api/v1/nodes", token=token).status == 200
    assert http(cluster, "GET", "/api/v1/nodes/n1", token=token).status == 403


def test_discovery_is_for_authenticated_users_and_health_for_everyone(
    cluster: ClusterHandle, ns: str
) -> None:
    token = account(cluster, ns)
    for path in ("/api", "/apis", "/api/v1", "/apis/rbac.authorization.k8s.io/v1", "/openapi/v2", "/version"):
        assert http(cluster, "GET", path, token=token).status == 200, path
    assert http(cluster, "GET", "/version", token="").status == 200
    assert http(cluster, "GET", "/healthz", token="").status == 200
    anonymous = http(cluster, "GET", "/api", token="")
    assert (anonymous.status, anonymous.body["message"], anonymous.body["details"]) == (
        403,
        'forbidden: User "system:anonymous" cannot get path "/api"',
        {},
    )


def test_tokens_the_server_did_not_issue_or_no_longer_honours_are_rejected(
    cluster: ClusterHandle, ns: str
) -> None:
    token = account(cluster, ns)
    assert http(cluster, "GET", "/api", token=token).status == 200
    assert http(cluster, "GET", "/api", token=token + "x").status == 401
    other_audience = token_for(cluster, ns, "planner", audiences=["vault"])
    assert http(cluster, "GET", "/api", token=other_audience).status == 401
    assert http(cluster, "DELETE", f"/api/v1/namespaces/{ns}/serviceaccounts/planner").status == 200
    create(cluster, f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "planner"}})
    rejected = http(cluster, "GET", "/api", token=token)
    assert (rejected.status, rejected.body["reason"], rejected.body["message"]) == (
        401,
        "Unauthorized",
        "Unauthorized",
    )


def test_the_admin_may_do_anything(cluster: ClusterHandle) -> None:
    assert http(cluster, "GET", "/api/v1/nodes").status == 200
    assert http(cluster, "GET", f"{RBAC}/clusterroles/cluster-admin").status == 200


# --- reviews ------------------------------------------------------------------------------------------


def review(
    cluster: ClusterHandle, kind: str, spec: Obj, *, token: str | None = None, namespace: str = ""
) -> Any:
    group = (
        "authentication.k8s.io" if kind in ("SelfSubjectReview", "TokenReview") else "authorization.k8s.io"
    )
    where = f"/namespaces/{namespace}" if namespace else ""
    body = {"apiVersion": f"{group}/v1", "kind": kind, "spec": spec}
    reply = http(cluster, "POST", f"/apis/{group}/v1{where}/{kind.lower()}s", body, token=token)
    assert reply.status == 201, reply.body
    return reply.body


def test_access_reviews_answer_from_rbac(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns)
    bind(cluster, ns, "viewers", "ClusterRole", "view", [service_account(ns)])
    asked = {"namespace": ns, "verb": "list", "resource": "pods"}
    assert review(cluster, "SelfSubjectAccessReview", {"resourceAttributes": asked}, token=token)[
        "status"
    ] == {
        "allowed": True,
        "reason": f'RBAC: allowed by RoleBinding "viewers/{ns}" of ClusterRole "view" to ServiceAccount "planner/{ns}"',
    }
    secrets = {**asked, "resource": "secrets"}
    assert review(cluster, "SelfSubjectAccessReview", {"resourceAttributes": secrets}, token=token)[
        "status"
    ] == {"allowed": False}
    about = {"user": f"system:serviceaccount:{ns}:planner", "groups": ["system:serviceaccounts"]}
    answer = review(cluster, "SubjectAccessReview", {**about, "resourceAttributes": asked})
    assert answer["status"]["allowed"] is True and answer["spec"]["user"] == about["user"]
    local = review(
        cluster, "LocalSubjectAccessReview", {**about, "resourceAttributes": secrets}, namespace=ns
    )
    assert local["status"] == {"allowed": False}
    masters = review(
        cluster, "SelfSubjectAccessReview", {"nonResourceAttributes": {"path": "/x", "verb": "get"}}
    )
    assert masters["status"] == {"allowed": True}


def test_a_review_must_ask_about_something(cluster: ClusterHandle) -> None:
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}}
    reply = http(cluster, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body)
    assert (reply.status, reply.body["message"]) == (
        422,
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: '
        "(*authorization.NonResourceAttributes)(nil): exactly one of nonResourceAttributes or resourceAttributes "
        "must be specified",
    )
    assert http(cluster, "GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").status == 405


def test_rules_and_identity_reviews(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns)
    create(
        cluster,
        f"{RBAC}/namespaces/{ns}/roles",
        {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    )
    bind(cluster, ns, "b", "Role", "r", [service_account(ns)])
    rules = review(cluster, "SelfSubjectRulesReview", {"namespace": ns}, token=token)["status"]
    assert rules["resourceRules"][-1] == {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    assert {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    } in rules["resourceRules"]
    assert rules["incomplete"] is False
    assert any("/apis/*" in r["nonResourceURLs"] for r in rules["nonResourceRules"])
    me = review(cluster, "SelfSubjectReview", {}, token=token)["status"]["userInfo"]
    assert me["username"] == f"system:serviceaccount:{ns}:planner"
    assert me["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
    checked = review(cluster, "TokenReview", {"token": token})["status"]
    assert checked["authenticated"] is True and checked["user"]["username"] == me["username"]


def test_impersonation_needs_the_impersonate_verb(cluster: ClusterHandle, ns: str) -> None:
    token = account(cluster, ns)
    as_account = {"Impersonate-User": f"system:serviceaccount:{ns}:planner"}
    reply = http(cluster, "GET", f"/api/v1/namespaces/{ns}/pods", headers=as_account)
    assert reply.body["message"] == (
        f'pods is forbidden: User "system:serviceaccount:{ns}:planner" cannot list resource "pods" in API '
        f'group "" in the namespace "{ns}"'
    )
    refused = http(cluster, "GET", "/api", headers={"Impersonate-User": "alice"}, token=token)
    assert refused.body["message"] == (
        f'users "alice" is forbidden: User "system:serviceaccount:{ns}:planner" cannot impersonate resource '
        '"users" in API group "" at the cluster scope'
    )
