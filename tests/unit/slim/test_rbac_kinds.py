"""The kinds the RBAC and autoscaling groups add, through the HTTP-free core: RBAC defaulting and
validation as the apiserver words them, HorizontalPodAutoscaler stored once and served as v2 and v1,
ServiceAccount tokens, and the bootstrap roles a fresh cluster holds."""

from __future__ import annotations

from typing import Any

import pytest

from planner.slim import conversion
from planner.slim.api import Api
from planner.slim.bootstrap import seed
from planner.slim.resources import by_kind, lookup
from planner.slim.status_errors import StatusError
from planner.slim.store import Store
from planner.slim.tokens import Tokens

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def api() -> Api:
    core = Api(Store(None))
    seed(core)
    core.create(by_kind("Namespace"), "", {"metadata": {"name": "shop"}})
    return core


def invalid(api: Api, kind: str, namespace: str, body: Obj) -> tuple[str, list[Obj]]:
    with pytest.raises(StatusError) as raised:
        api.create(by_kind(kind), namespace, body)
    assert raised.value.code == 422
    return raised.value.body["message"], raised.value.body["details"]["causes"]


def test_binding_defaults_name_the_rbac_group_for_users_groups_and_the_role_ref(api: Api) -> None:
    created = api.create(
        by_kind("RoleBinding"),
        "shop",
        {
            "metadata": {"name": "b"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "Group", "name": "ops"},
                {"kind": "ServiceAccount", "name": "planner", "namespace": "ci"},
            ],
        },
    )
    assert created["roleRef"] == {"kind": "Role", "name": "r", "apiGroup": RBAC}
    assert created["subjects"] == [
        {"kind": "User", "name": "alice", "apiGroup": RBAC},
        {"kind": "Group", "name": "ops", "apiGroup": RBAC},
        {"kind": "ServiceAccount", "name": "planner", "namespace": "ci"},
    ]


def test_a_namespaced_rule_for_urls_and_a_rule_without_verbs_are_invalid(api: Api) -> None:
    message, causes = invalid(
        api,
        "Role",
        "shop",
        {
            "metadata": {"name": "r"},
            "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, {"apiGroups": [""]}],
        },
    )
    assert message == (
        'Role.rbac.authorization.k8s.io "r" is invalid: [rules[0].nonResourceURLs: Invalid value: '
        '[]string{"/healthz"}: namespaced rules cannot apply to non-resource URLs, rules[1].verbs: Required '
        "value: verbs must contain at least one value, rules[1].resources: Required value: resource rules "
        "must supply at least one resource]"
    )
    assert [c["reason"] for c in causes] == ["FieldValueInvalid", "FieldValueRequired", "FieldValueRequired"]


def test_cluster_role_binding_subjects_and_role_ref_are_checked(api: Api) -> None:
    message, _ = invalid(
        api,
        "ClusterRoleBinding",
        "",
        {
            "metadata": {"name": "b"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "planner"}, {"kind": "Robot", "name": "r2"}],
        },
    )
    assert message == (
        'ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.kind: Unsupported value: '
        '"Role": supported values: "ClusterRole", subjects[0].namespace: Required value, subjects[1].kind: '
        'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"]'
    )


def test_a_bindings_role_ref_cannot_change(api: Api) -> None:
    body = {"metadata": {"name": "b"}, "roleRef": {"kind": "Role", "name": "r"}}
    api.create(by_kind("RoleBinding"), "shop", body)
    with pytest.raises(StatusError) as raised:
        api.update(
            by_kind("RoleBinding"), "shop", "b", {**body, "roleRef": {"kind": "Role", "name": "other"}}
        )
    assert raised.value.body["message"] == (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: '
        'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: cannot change roleRef'
    )


def test_rbac_names_may_hold_colons_but_not_slashes(api: Api) -> None:
    api.create(by_kind("ClusterRole"), "", {"metadata": {"name": "team:reader"}, "rules": []})
    message, _ = invalid(api, "ClusterRole", "", {"metadata": {"name": "a/b"}})
    assert (
        message
        == 'ClusterRole.rbac.authorization.k8s.io "a/b" is invalid: metadata.name: Invalid value: "a/b": may not contain \'/\''
    )


def test_an_aggregation_rule_needs_a_selector(api: Api) -> None:
    message, _ = invalid(api, "ClusterRole", "", {"metadata": {"name": "agg"}, "aggregationRule": {}})
    assert message.endswith(
        "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if "
        "aggregationRule is non-nil"
    )


def test_a_fresh_cluster_holds_the_aggregated_user_facing_roles(api: Api) -> None:
    view = api.get(by_kind("ClusterRole"), "", "view")
    assert view["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]
    }
    assert view["rules"] == api.get(by_kind("ClusterRole"), "", "system:aggregate-to-view")["rules"]
    binding = api.get(by_kind("ClusterRoleBinding"), "", "cluster-admin")
    assert binding["subjects"] == [{"apiGroup": RBAC, "kind": "Group", "name": "system:masters"}]


# --- autoscaling --------------------------------------------------------------------------------------

V1 = lookup("autoscaling", "v1", "horizontalpodautoscalers")
V2 = lookup("autoscaling", "v2", "horizontalpodautoscalers")
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
CPU_80 = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
}
MEMORY = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
}


def test_a_v1_autoscaler_is_stored_as_v2_and_read_back_in_both(api: Api) -> None:
    assert V1 is not None and V2 is not None
    created = api.create(
        V1,
        "shop",
        {
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": TARGET, "maxReplicas": 3, "targetCPUUtilizationPercentage": 80},
        },
    )
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"] == {
        "scaleTargetRef": TARGET,
        "minReplicas": 1,
        "maxReplicas": 3,
        "targetCPUUtilizationPercentage": 80,
    }
    assert created["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    as_v2 = api.get(V2, "shop", "web")
    assert as_v2["spec"] == {
        "scaleTargetRef": TARGET,
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [CPU_80],
    }
    assert [o["spec"]["targetCPUUtilizationPercentage"] for o in api.list(V1, "shop")["items"]] == [80]


def test_a_v2_autoscaler_without_metrics_targets_80_percent_cpu(api: Api) -> None:
    assert V2 is not None
    created = api.create(
        V2, "shop", {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": TARGET, "maxReplicas": 2}}
    )
    assert created["spec"]["metrics"] == [CPU_80]


def test_what_v1_cannot_hold_travels_in_annotations_and_comes_back() -> None:
    stored = {
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 3, "metrics": [CPU_80, MEMORY]},
        "status": {"currentReplicas": 2, "desiredReplicas": 2},
    }
    as_v1 = conversion.hpa_to_v1(stored)
    assert as_v1["metadata"]["annotations"] == {
        "autoscaling.alpha.kubernetes.io/metrics": '[{"type":"Resource","resource":{"name":"memory","target":'
        '{"type":"AverageValue","averageValue":"1Gi"}}}]'
    }
    assert as_v1["spec"]["targetCPUUtilizationPercentage"] == 80
    back = conversion.hpa_from_v1(as_v1)
    assert back["spec"]["metrics"] == [CPU_80, MEMORY]
    assert back["metadata"]["annotations"] == {}


def test_autoscaler_bounds_are_validated(api: Api) -> None:
    assert V2 is not None
    with pytest.raises(StatusError) as raised:
        api.create(
            V2,
            "shop",
            {
                "metadata": {"name": "web"},
                "spec": {"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 4, "maxReplicas": 2},
            },
        )
    assert raised.value.body["message"] == (
        'HorizontalPodAutoscaler.autoscaling "web" is invalid: [spec.maxReplicas: Invalid value: 2: must be '
        "greater than or equal to `minReplicas`, spec.scaleTargetRef.name: Required value]"
    )


# --- tokens -------------------------------------------------------------------------------------------


def test_tokens_verify_only_while_valid_for_the_api_and_unchanged() -> None:
    clock = [1000.0]
    tokens = Tokens(b"k" * 32, clock=lambda: clock[0])
    token, expires = tokens.issue(
        "ci", "planner", "uid-1", ["https://kubernetes.default.svc.cluster.local"], 600
    )
    assert expires == 1600
    claims = tokens.verify(token)
    assert claims is not None and (claims.namespace, claims.name, claims.uid) == ("ci", "planner", "uid-1")
    header, payload, signature = token.split(".")
    assert tokens.verify(f"{header}.{payload}x.{signature}") is None
    assert Tokens(b"other" * 8, clock=lambda: clock[0]).verify(token) is None
    other_audience, _ = tokens.issue("ci", "planner", "uid-1", ["vault"], 600)
    assert tokens.verify(other_audience) is None
    clock[0] = 1600.0
    assert tokens.verify(token) is None


def test_a_token_request_is_answered_with_its_defaults(api: Api) -> None:
    api.create(by_kind("ServiceAccount"), "shop", {"metadata": {"name": "planner"}})
    answer = api.request_token("shop", "planner", {"spec": {"expirationSeconds": None}})
    assert answer["spec"] == {
        "audiences": ["https://kubernetes.default.svc.cluster.local"],
        "expirationSeconds": 3600,
        "boundObjectRef": None,
    }
    assert api.tokens.verify(answer["status"]["token"]) is not None
    with pytest.raises(StatusError) as short:
        api.request_token("shop", "planner", {"spec": {"expirationSeconds": 60}})
    assert short.value.body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 60: may not specify a duration less than 10 minutes",
            "field": "spec.expirationSeconds",
        }
    ]
    with pytest.raises(StatusError) as missing:
        api.request_token("shop", "nobody", {})
    assert missing.value.code == 404
