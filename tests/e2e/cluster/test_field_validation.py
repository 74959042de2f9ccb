"""Strict decoding over HTTP: wrong types, unknown and duplicate fields on every write path, under each
`fieldValidation` directive, answered with the apiserver's codes, messages and `Warning` headers; what a
lenient write stores is what the apiserver stores (unknown fields dropped), so the official client can
list it afterwards."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from planner.slim.cluster import ClusterHandle
from tests.slimcluster import http

APPS = "/apis/apps/v1/namespaces/{ns}/deployments"
CONFIGMAPS = "/api/v1/namespaces/{ns}/configmaps"


def deployment(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "web", "image": "nginx", **spec.pop("container", {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}},
            **spec,
        },
    }


def test_a_boolean_configmap_value_is_refused_and_the_client_still_lists(
    cluster: ClusterHandle, namespace: str, core_v1: client.CoreV1Api
) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flags"}, "data": {"enabled": True}}
    reply = http(cluster, "POST", CONFIGMAPS.format(ns=namespace), body)
    assert (reply.status, reply.body["reason"], reply.body["message"]) == (
        400,
        "BadRequest",
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        "json: cannot unmarshal bool into Go struct field ConfigMap.data of type string",
    )
    assert core_v1.list_namespaced_config_map(namespace).items[0].metadata.name == "kube-root-ca.crt"


def test_a_string_replica_count_is_refused_even_under_ignore(cluster: ClusterHandle, namespace: str) -> None:
    reply = http(
        cluster,
        "POST",
        APPS.format(ns=namespace) + "?fieldValidation=Ignore",
        deployment("web", replicas="2"),
    )
    assert reply.status == 400
    assert reply.body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: '
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )


UNKNOWN = 'unknown field "spec.template.spec.containers[0].resource"'
WARNED = ('299 - "unknown field \\"spec.template.spec.containers[0].resource\\""',)


@pytest.mark.parametrize(
    ("directive", "status", "warnings"),
    [("Strict", 400, ()), ("Warn", 201, WARNED), ("", 201, WARNED), ("Ignore", 201, ())],
    ids=["Strict refuses", "Warn warns", "no directive means Warn", "Ignore is silent"],
)
def test_unknown_fields_follow_the_directive_on_create(
    cluster: ClusterHandle, namespace: str, directive: str, status: int, warnings: tuple[str, ...]
) -> None:
    query = f"?fieldValidation={directive}" if directive else ""
    reply = http(
        cluster, "POST", APPS.format(ns=namespace) + query, deployment("web", container={"resource": {}})
    )
    assert (reply.status, reply.warnings) == (status, warnings)
    if status == 400:
        assert reply.body["message"] == (
            f'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: {UNKNOWN}'
        )
        return
    stored = http(cluster, "GET", APPS.format(ns=namespace) + "/web").body
    assert "resource" not in stored["spec"]["template"]["spec"]["containers"][0]


def test_duplicate_fields_in_a_json_body_are_strict_errors(cluster: ClusterHandle, namespace: str) -> None:
    raw = json.dumps(deployment("dup")).replace('"selector"', '"replicas": 1, "replicas": 2, "selector"', 1)
    reply = http(cluster, "POST", APPS.format(ns=namespace) + "?fieldValidation=Strict", raw)
    assert reply.body["message"].endswith('strict decoding error: duplicate field "spec.replicas"')
    created = http(cluster, "POST", APPS.format(ns=namespace) + "?fieldValidation=Warn", raw)
    assert created.status == 201 and created.body["spec"]["replicas"] == 2
    assert created.warnings == ('299 - "duplicate field \\"spec.replicas\\""',)


def test_duplicate_keys_in_a_yaml_body_are_reported_by_line(cluster: ClusterHandle, namespace: str) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: '1'\n  a: '2'\n"
    path = CONFIGMAPS.format(ns=namespace)
    refused = http(cluster, "POST", path + "?fieldValidation=Strict", text, content_type="application/yaml")
    assert refused.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        "error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 7: key "a" already set in map'
    )
    created = http(cluster, "POST", path, text, content_type="application/yaml")
    assert created.body["data"] == {"a": "2"}
    assert created.warnings == ('299 - "line 7: key \\"a\\" already set in map"',)


def test_an_update_follows_the_directive_too(cluster: ClusterHandle, namespace: str) -> None:
    path = CONFIGMAPS.format(ns=namespace)
    http(cluster, "POST", path, {"metadata": {"name": "u"}, "data": {"a": "1"}})
    body = {"metadata": {"name": "u"}, "data": {"a": "2"}, "extra": 1}
    refused = http(cluster, "PUT", f"{path}/u?fieldValidation=Strict", body)
    assert refused.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "extra"'
    )
    updated = http(cluster, "PUT", f"{path}/u?fieldValidation=Ignore", body)
    assert (updated.status, updated.warnings, "extra" in updated.body) == (200, (), False)


def test_an_unknown_directive_is_refused(cluster: ClusterHandle, namespace: str) -> None:
    reply = http(
        cluster,
        "POST",
        CONFIGMAPS.format(ns=namespace) + "?fieldValidation=Loose",
        {"metadata": {"name": "x"}},
    )
    assert (reply.status, reply.body["details"]) == (
        422,
        {
            "group": "meta.k8s.io",
            "kind": "CreateOptions",
            "causes": [
                {
                    "reason": "FieldValueNotSupported",
                    "message": 'Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"',
                    "field": "fieldValidation",
                }
            ],
        },
    )


@pytest.fixture
def web(cluster: ClusterHandle, namespace: str) -> str:
    reply = http(cluster, "POST", APPS.format(ns=namespace), deployment("web"))
    assert reply.status == 201, reply.body
    return APPS.format(ns=namespace) + "/web"


def patch(cluster: ClusterHandle, path: str, kind: str, body: Any, query: str = "") -> Any:
    media = {
        "merge": "application/merge-patch+json",
        "json": "application/json-patch+json",
        "strategic": "application/strategic-merge-patch+json",
        "apply": "application/apply-patch+yaml",
    }[kind]
    return http(cluster, "PATCH", path + query, body, content_type=media)


def test_a_merge_patch_with_a_wrong_type_is_a_422_on_the_patch(cluster: ClusterHandle, web: str) -> None:
    reply = patch(cluster, web, "merge", {"spec": {"replicas": "3"}})
    assert (reply.status, reply.body["reason"]) == (422, "Invalid")
    cause = reply.body["details"]["causes"][0]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    assert reply.body["message"].startswith(
        ' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":\\"apps/v1\\"'
    )
    assert reply.body["message"].endswith(
        ": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )


def test_a_strategic_patch_quotes_the_patch_as_go_prints_a_map(cluster: ClusterHandle, web: str) -> None:
    reply = patch(cluster, web, "strategic", {"spec": {"replicas": "3"}})
    assert reply.body["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[replicas:3]]": unrecognized type: int32'
    )
    strict = patch(cluster, web, "strategic", {"spec": {"zeta": 1, "alpha": 2}}, "?fieldValidation=Strict")
    assert strict.body["message"] == (
        ' "" is invalid: patch: Invalid value: "map[spec:map[alpha:2 zeta:1]]": '
        'strict decoding error: unknown field "spec.alpha", unknown field "spec.zeta"'
    )


def test_patches_warn_by_default_and_drop_what_they_warn_about(cluster: ClusterHandle, web: str) -> None:
    for kind, body in [
        ("merge", {"spec": {"bogus": 1}}),
        ("strategic", {"spec": {"bogus": 1}}),
        ("json", [{"op": "add", "path": "/spec/bogus", "value": 1}]),
    ]:
        reply = patch(cluster, web, kind, body)
        assert reply.status == 200, reply.body
        assert reply.warnings == ('299 - "unknown field \\"spec.bogus\\""',), kind
        assert "bogus" not in reply.body["spec"]


def test_a_json_patch_operation_with_an_unknown_key_is_a_strict_error(
    cluster: ClusterHandle, web: str
) -> None:
    operations = [{"op": "add", "path": "/spec/paused", "value": True, "note": "x"}]
    reply = patch(cluster, web, "json", operations, "?fieldValidation=Strict")
    assert reply.status == 422
    assert reply.body["message"].endswith(': strict decoding error: json patch unknown field "[0].note"')


def test_server_side_apply_refuses_undeclared_fields_whatever_the_directive(
    cluster: ClusterHandle, web: str
) -> None:
    config = deployment("web", container={"resource": {}})
    reply = patch(cluster, web, "apply", config, "?fieldManager=t&fieldValidation=Ignore")
    assert (reply.status, "reason" in reply.body, reply.body["message"]) == (
        500,
        False,
        "failed to create typed patch object (/web; apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="web"].resource: field not declared in schema',
    )


def test_server_side_apply_duplicates_follow_the_directive(cluster: ClusterHandle, web: str) -> None:
    text = json.dumps(deployment("web")).replace('"selector"', '"replicas": 1, "replicas": 2, "selector"', 1)
    refused = patch(cluster, web, "apply", text, "?fieldManager=t&force=true&fieldValidation=Strict")
    assert (refused.status, refused.body["message"]) == (
        400,
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 1: key "replicas" already set in map',
    )
    applied = patch(cluster, web, "apply", text, "?fieldManager=t&force=true&fieldValidation=Warn")
    assert applied.status == 200 and applied.body["spec"]["replicas"] == 2
    assert applied.warnings == ('299 - "line 1: key \\"replicas\\" already set in map"',)
