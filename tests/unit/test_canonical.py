"""What counts as equal between a desired manifest and a live object, and who owns a field."""

from __future__ import annotations

from typing import Any

import pytest

from planner.canonical import (
    ItemKey,
    ManagedEntry,
    applied_part,
    declared,
    differences,
    dropped,
    format_path,
    leaves,
    owners,
    owns,
    with_server_forms,
)


def container(**fields: Any) -> dict[str, Any]:
    return {"name": "web", "image": "nginx:1.25", **fields}


def pod_spec(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"spec": {"containers": list(containers), **fields}}


TOKEN_MOUNT = {
    "name": "kube-api-access-x",
    "readOnly": True,
    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
}
TOKEN_VOLUME = {"name": "kube-api-access-x", "projected": {"sources": []}}
ADMISSION_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]

EQUAL = [
    (
        pod_spec(container(resources={"limits": {"cpu": "0.5"}})),
        pod_spec(container(resources={"limits": {"cpu": "500m"}, "requests": {"cpu": "500m"}})),
        "cpu 0.5 equals 500m",
    ),
    (
        pod_spec(container(resources={"limits": {"memory": "1024Mi"}})),
        pod_spec(container(resources={"limits": {"memory": "1Gi"}})),
        "memory 1024Mi equals 1Gi",
    ),
    (
        pod_spec(container(resources={"requests": {"cpu": "2000m"}})),
        pod_spec(container(resources={"requests": {"cpu": "2"}})),
        "cpu 2000m equals 2",
    ),
    (
        pod_spec(container(resources={"limits": {"cpu": 2}})),
        pod_spec(container(resources={"limits": {"cpu": "2"}})),
        "a number written as a quantity equals its string form",
    ),
    (
        pod_spec(container(resources={"limits": {"cpu": "0.0000000001"}})),
        pod_spec(container(resources={"limits": {"cpu": "1n"}})),
        "a quantity finer than 1n equals the 1n the server rounds it up to",
    ),
    (
        pod_spec(container(resources={"limits": {"memory": "1.0000000001"}})),
        pod_spec(container(resources={"limits": {"memory": "1000000001n"}})),
        "the server rounds a fraction beyond nano away from zero",
    ),
    (
        {"spec": {"resources": {"requests": {"storage": "1024Mi"}}}},
        {"spec": {"resources": {"requests": {"storage": "1Gi"}}}},
        "PVC storage 1024Mi equals 1Gi",
    ),
    (
        pod_spec(container(env=[{"name": "CPU", "valueFrom": {"resourceFieldRef": {"divisor": "1000m"}}}])),
        pod_spec(container(env=[{"name": "CPU", "valueFrom": {"resourceFieldRef": {"divisor": "1"}}}])),
        "a resourceFieldRef divisor of 1000m equals the 1 the server keeps",
    ),
    (
        pod_spec(container(env=[{"name": "EMPTY", "value": ""}])),
        pod_spec(container(env=[{"name": "EMPTY"}])),
        "an env value of empty string equals the server's valueless entry",
    ),
    (
        pod_spec(container(volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": False}])),
        pod_spec(container(volumeMounts=[{"name": "data", "mountPath": "/data"}])),
        "readOnly false equals an absent readOnly",
    ),
    (
        {"metadata": {"labels": {}, "annotations": {}}, **pod_spec(container(securityContext={}))},
        {"metadata": {"name": "x"}, **pod_spec(container())},
        "empty maps equal absent maps",
    ),
    (
        pod_spec(container(args=[])),
        pod_spec(container()),
        "an empty list equals an absent list",
    ),
    (
        pod_spec(container()),
        pod_spec({"name": "istio-proxy", "image": "proxy:1"}, container()),
        "an injected sidecar at index 0 is not a change",
    ),
    (
        pod_spec(
            container(volumeMounts=[{"name": "data", "mountPath": "/data"}]),
            volumes=[{"name": "data", "emptyDir": {}}],
        ),
        pod_spec(
            container(volumeMounts=[{"name": "data", "mountPath": "/data"}, TOKEN_MOUNT]),
            volumes=[{"name": "data", "emptyDir": {}}, TOKEN_VOLUME],
        ),
        "an admission-added volume and mount are not a change",
    ),
    (
        pod_spec(container(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])),
        pod_spec(container(env=[{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])),
        "env reordered by name is not a change",
    ),
    (
        pod_spec(container(ports=[{"containerPort": 8080}])),
        pod_spec(container(ports=[{"containerPort": 8080, "protocol": "TCP"}])),
        "a container port matches its defaulted TCP protocol",
    ),
    (
        {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}},
        {"spec": {"ports": [{"protocol": "TCP", "port": 80, "targetPort": 8080}], "clusterIP": "10.0.0.9"}},
        "a Service port is matched by port",
    ),
    (
        pod_spec(container(), tolerations=[{"key": "gpu", "operator": "Exists"}]),
        pod_spec(container(), tolerations=[*ADMISSION_TOLERATIONS, {"key": "gpu", "operator": "Exists"}]),
        "admission-added tolerations are not a change",
    ),
    (
        {"metadata": {"labels": {"app": "web"}}},
        {"metadata": {"labels": {"app": "web", "team": "shop"}, "annotations": {"other.tool/id": "1"}}},
        "labels and annotations other tools add are not a change",
    ),
    (
        {"spec": {"replicas": 0}},
        {"spec": {"replicas": 0}},
        "replicas 0 equals replicas 0",
    ),
]


@pytest.mark.parametrize(("desired", "live"), [c[:2] for c in EQUAL], ids=[c[2] for c in EQUAL])
def test_canonically_equal_objects_show_no_difference(desired: dict[str, Any], live: dict[str, Any]) -> None:
    assert differences(declared(desired), live) == []


WEB = ItemKey((("name", "web"),))

DIFFERENT = [
    (
        pod_spec(container(image="nginx:1.27")),
        pod_spec(container()),
        [(("spec", "containers", WEB, "image"), "nginx:1.25", "nginx:1.27")],
        "an image change names the container and both images",
    ),
    (
        pod_spec(container(resources={"limits": {"cpu": "0.5"}})),
        pod_spec(container(resources={"limits": {"cpu": "1"}})),
        [(("spec", "containers", WEB, "resources", "limits", "cpu"), "1", "0.5")],
        "a different quantity value is a difference, shown as written",
    ),
    (
        {"spec": {"replicas": 0}},
        {"spec": {"replicas": 3}},
        [(("spec", "replicas"), 3, 0)],
        "replicas 0 is a value, not an empty field",
    ),
    (
        pod_spec(container(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])),
        pod_spec(container(env=[{"name": "A", "value": "1"}])),
        [(("spec", "containers", WEB, "env", ItemKey((("name", "B"),))), None, {"name": "B", "value": "2"})],
        "a missing env entry is a difference at that entry",
    ),
    (
        pod_spec(container(command=["sh", "-c", "run"])),
        pod_spec(container(command=["sh", "-c", "true"])),
        [(("spec", "containers", WEB, "command"), ["sh", "-c", "true"], ["sh", "-c", "run"])],
        "a list without a merge key is compared whole",
    ),
    (
        pod_spec(container(volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": True}])),
        pod_spec(container(volumeMounts=[{"name": "data", "mountPath": "/data"}])),
        [
            (
                ("spec", "containers", WEB, "volumeMounts", ItemKey((("mountPath", "/data"),)), "readOnly"),
                None,
                True,
            )
        ],
        "readOnly true is declared and its absence live is a difference",
    ),
    (
        {"spec": {"ports": [{"port": 80, "targetPort": "8080"}]}},
        {"spec": {"ports": [{"protocol": "TCP", "port": 80, "targetPort": 8080}]}},
        [(("spec", "ports", ItemKey((("port", 80), ("protocol", "TCP"))), "targetPort"), 8080, "8080")],
        "a named port string is not the number it spells",
    ),
    (
        {"spec": {"nodeSelector": {"disk": "ssd"}}},
        {"spec": {"nodeSelector": {"disk": "ssd", "planner.dev/stopped": "true"}}},
        [
            (
                ("spec", "nodeSelector"),
                {"disk": "ssd", "planner.dev/stopped": "true"},
                {"disk": "ssd"},
            )
        ],
        "a key another writer adds to an atomic map is a difference of the whole map",
    ),
]


@pytest.mark.parametrize(
    ("desired", "live", "expected"), [c[:3] for c in DIFFERENT], ids=[c[3] for c in DIFFERENT]
)
def test_real_changes_are_found_with_their_path(
    desired: dict[str, Any], live: dict[str, Any], expected: list[Any]
) -> None:
    found = [(d.path, d.before, d.after) for d in differences(declared(desired), live)]

    assert found == expected


def test_secret_string_data_is_compared_as_the_servers_base64_data() -> None:
    desired = {"kind": "Secret", "data": {"user": "YWRtaW4="}, "stringData": {"password": "hunter2"}}

    assert with_server_forms(desired) == {
        "kind": "Secret",
        "data": {"user": "YWRtaW4=", "password": "aHVudGVyMg=="},
    }


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (
            ("spec", "template", "spec", "containers", WEB, "image"),
            ".spec.template.spec.containers[name=web].image",
        ),
        (("metadata", "annotations", "planner.dev/hash"), '.metadata.annotations["planner.dev/hash"]'),
        (("spec", "ports", ItemKey((("port", 80), ("protocol", "TCP")))), ".spec.ports[port=80]"),
        (
            ("spec", "ports", ItemKey((("port", 53), ("protocol", "UDP")))),
            ".spec.ports[port=53,protocol=UDP]",
        ),
    ],
    ids=[
        "a container field by name",
        "an annotation key with dots and slashes is quoted",
        "the default TCP protocol is left out of a port key",
        "a non-default protocol is shown",
    ],
)
def test_paths_read_like_kubectl_explain(path: tuple[Any, ...], text: str) -> None:
    assert format_path(path) == text


# FieldsV1 as a real server writes it (see tests/golden/k8s/ssa_get.json).
PLANNER_FIELDS = {
    "f:metadata": {"f:labels": {"f:app": {}}},
    "f:spec": {
        "f:selector": {},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"web"}': {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:env": {'k:{"name":"OLD"}': {".": {}, "f:name": {}, "f:value": {}}},
                        "f:ports": {
                            'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
                        },
                    }
                }
            }
        },
    },
}
TEMPLATE_WEB = ("spec", "template", "spec", "containers", WEB)


@pytest.mark.parametrize(
    ("path", "owned"),
    [
        ((*TEMPLATE_WEB, "image"), True),
        (("spec", "selector", "matchLabels", "app"), True),
        ((*TEMPLATE_WEB, "ports", ItemKey((("containerPort", 8080), ("protocol", "TCP")))), True),
        (("spec", "replicas"), False),
        (("spec", "template", "spec", "containers", ItemKey((("name", "sidecar"),)), "image"), False),
    ],
    ids=[
        "a keyed container's field",
        "beneath an atomic map owned as a whole",
        "a port keyed by containerPort and protocol",
        "a field the manager never set",
        "another container's field",
    ],
)
def test_ownership_follows_fields_v1(path: tuple[Any, ...], owned: bool) -> None:
    assert owns(PLANNER_FIELDS, path) is owned


def test_status_writers_never_own_declared_fields() -> None:
    entries = [
        ManagedEntry(
            manager="kubectl", operation="Update", subresource="scale", fields={"f:spec": {"f:replicas": {}}}
        ),
        ManagedEntry(
            manager="kube-controller-manager",
            operation="Update",
            subresource="status",
            fields={"f:spec": {"f:replicas": {}}},
        ),
    ]

    assert owners(entries, ("spec", "replicas")) == ["kubectl"]


def test_dropped_finds_the_topmost_field_the_manifest_no_longer_declares() -> None:
    desired = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "spec": {
                    "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 8080}]}]
                }
            },
        },
    }

    assert dropped(PLANNER_FIELDS, desired) == [(*TEMPLATE_WEB, "env")]


# What a POST of a Deployment records (an Update entry): every field, server defaults included, maps
# marked as set (`.`), ports keyed with their defaulted protocol.
CREATED_FIELDS: dict[str, Any] = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    "f:spec": {
        "f:progressDeadlineSeconds": {},
        "f:replicas": {},
        "f:selector": {},
        "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"web"}': {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {
                            'k:{"containerPort":8080,"protocol":"TCP"}': {
                                ".": {},
                                "f:containerPort": {},
                                "f:protocol": {},
                            }
                        },
                        "f:terminationMessagePath": {},
                    }
                },
                "f:volumes": {'k:{"name":"cache"}': {".": {}, "f:emptyDir": {}, "f:name": {}}},
            }
        },
    },
}
DECLARED_DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "spec": {
                "containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 8080}]}],
                "volumes": [{"name": "cache", "emptyDir": {}}],
            }
        },
    },
}


def test_the_applied_part_of_a_create_is_what_the_manifest_declares_in_the_servers_spelling() -> None:
    assert applied_part(CREATED_FIELDS, DECLARED_DEPLOYMENT) == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:selector": {},
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"web"}': {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
                            },
                        }
                    },
                    "f:volumes": {'k:{"name":"cache"}': {".": {}, "f:name": {}}},
                }
            },
        },
    }


@pytest.mark.parametrize(
    ("created", "desired", "expected"),
    [
        pytest.param(
            {"f:spec": {"f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}}}},
            {"spec": {"strategy": {"type": "Recreate"}}},
            {},
            id="a declared struct holding only defaulted fields is left out",
        ),
        pytest.param(
            {"f:spec": {"f:finalizers": {'v:"a"': {}, 'v:"b"': {}}}},
            {"spec": {"finalizers": ["b"]}},
            {"f:spec": {"f:finalizers": {'v:"b"': {}}}},
            id="a set keeps the declared values only",
        ),
        pytest.param(
            {"f:spec": {"f:command": {}}},
            {"spec": {"command": ["run", "--fast"]}},
            {"f:spec": {"f:command": {}}},
            id="an atomic list is owned whole",
        ),
        pytest.param(
            {"f:data": {".": {}, "f:a": {}, "f:b": {}}},
            {"data": {"a": "1"}},
            {"f:data": {"f:a": {}}},
            id="a map filled by the create is not owned itself, only its declared keys",
        ),
    ],
)
def test_the_applied_part_keeps_only_declared_paths(
    created: dict[str, Any], desired: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert applied_part(created, desired) == expected


def test_leaves_walk_named_items_by_key_and_stop_at_atomic_lists() -> None:
    desired = {"spec": {"containers": [{"name": "web", "command": ["run"], "image": "x"}]}}

    assert list(leaves(desired)) == [
        ("spec", "containers", WEB, "command"),
        ("spec", "containers", WEB, "image"),
        ("spec", "containers", WEB, "name"),
    ]
