"""Seed 002, feature by feature: sidecars, init containers, probes and volumes shared in one pod."""

from __future__ import annotations

from typing import Any

import pytest

from planner.plan.model import Container, Probe, Volume
from tests.unit.render_support import IMAGE, main_container, plan, pod_spec, rendered_object, workload


def rendered_pod(**fields: Any) -> dict[str, Any]:
    return pod_spec(rendered_object(plan(workloads=(workload(**fields),)), "Deployment", "web"))


def logs(mount_path: str, *, read_only: bool = False) -> Volume:
    return Volume(name="logs", source="emptyDir", ref="", mount_path=mount_path, read_only=read_only)


def test_sidecars_follow_the_main_container_in_plan_order() -> None:
    sidecars = (
        Container(name="log-shipper", image="fluent/fluent-bit:3.0"),
        Container(name="proxy", image="envoyproxy/envoy:v1.30"),
    )
    pod = rendered_pod(sidecars=sidecars)
    assert pod["containers"] == [
        {"name": "web", "image": IMAGE},
        {"name": "log-shipper", "image": "fluent/fluent-bit:3.0"},
        {"name": "proxy", "image": "envoyproxy/envoy:v1.30"},
    ]


def test_a_sidecar_maps_every_field() -> None:
    sidecar = Container(
        name="proxy",
        image="envoyproxy/envoy:v1.30",
        command=("envoy",),
        args=("-c", "/etc/envoy.yaml"),
        env={"B": "2", "A": "1"},
        workdir="/etc",
        cpu="100m",
        memory="64Mi",
    )
    assert rendered_pod(sidecars=(sidecar,))["containers"][1] == {
        "name": "proxy",
        "image": "envoyproxy/envoy:v1.30",
        "command": ["envoy"],
        "args": ["-c", "/etc/envoy.yaml"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "workingDir": "/etc",
        "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
    }


def test_init_containers_keep_plan_order() -> None:
    inits = (
        Container(name="init-schema", image=IMAGE, command=("/app/api",), args=("migrate",)),
        Container(name="warm-cache", image="busybox:1.36", command=("sh", "-c", "echo warm")),
    )
    pod = rendered_pod(init_containers=inits)
    assert pod["initContainers"] == [
        {"name": "init-schema", "image": IMAGE, "command": ["/app/api"], "args": ["migrate"]},
        {"name": "warm-cache", "image": "busybox:1.36", "command": ["sh", "-c", "echo warm"]},
    ]


def test_no_init_containers_renders_no_field() -> None:
    assert "initContainers" not in rendered_pod()


PROBE_ROWS = [
    (
        "an httpGet probe has a path and a port",
        Probe(handler="httpGet", path="/healthz", port=8080),
        {"httpGet": {"path": "/healthz", "port": 8080}},
    ),
    (
        "an httpGet probe may name its port",
        Probe(handler="httpGet", path="/ready", port="http"),
        {"httpGet": {"path": "/ready", "port": "http"}},
    ),
    (
        "a tcpSocket probe has only a port",
        Probe(handler="tcpSocket", port=5432),
        {"tcpSocket": {"port": 5432}},
    ),
    (
        "an exec probe has its command",
        Probe(handler="exec", command=("cat", "/tmp/alive")),
        {"exec": {"command": ["cat", "/tmp/alive"]}},
    ),
    (
        "every timing is carried over when set",
        Probe(
            handler="tcpSocket",
            port=9000,
            initial_delay_seconds=0,
            period_seconds=5,
            timeout_seconds=2,
            success_threshold=1,
            failure_threshold=4,
        ),
        {
            "tcpSocket": {"port": 9000},
            "initialDelaySeconds": 0,
            "periodSeconds": 5,
            "timeoutSeconds": 2,
            "successThreshold": 1,
            "failureThreshold": 4,
        },
    ),
]


@pytest.mark.parametrize(("probe", "expected"), [r[1:] for r in PROBE_ROWS], ids=[r[0] for r in PROBE_ROWS])
def test_probes_in_kubernetes_shape(probe: Probe, expected: dict[str, Any]) -> None:
    main = main_container(
        rendered_object(
            plan(workloads=(workload(readiness_probe=probe, liveness_probe=probe),)), "Deployment", "web"
        )
    )
    assert main["readinessProbe"] == expected
    assert main["livenessProbe"] == expected


def test_a_sidecar_probe_is_on_the_sidecar() -> None:
    sidecar = Container(
        name="shipper", image="fluent/fluent-bit:3.0", liveness_probe=Probe(handler="tcpSocket", port=2020)
    )
    pod = rendered_pod(sidecars=(sidecar,))
    assert pod["containers"][1]["livenessProbe"] == {"tcpSocket": {"port": 2020}}
    assert "livenessProbe" not in pod["containers"][0]


def test_an_empty_dir_named_in_every_container_is_one_volume_mounted_in_each() -> None:
    pod = rendered_pod(
        volumes=(logs("/var/log/api"),),
        sidecars=(
            Container(
                name="shipper", image="fluent/fluent-bit:3.0", volumes=(logs("/logs", read_only=True),)
            ),
        ),
        init_containers=(Container(name="prepare", image="busybox:1.36", volumes=(logs("/work"),)),),
    )
    assert pod["volumes"] == [{"name": "logs", "emptyDir": {}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "logs", "mountPath": "/var/log/api"}]
    assert pod["containers"][1]["volumeMounts"] == [{"name": "logs", "mountPath": "/logs", "readOnly": True}]
    assert pod["initContainers"][0]["volumeMounts"] == [{"name": "logs", "mountPath": "/work"}]


def test_pod_volumes_appear_in_order_of_first_use_main_then_sidecars_then_init() -> None:
    config = Volume(name="cfg", source="configMap", ref="api-config", mount_path="/etc/api")
    token = Volume(name="token", source="secret", ref="api-token", mount_path="/etc/token", read_only=True)
    pod = rendered_pod(
        init_containers=(Container(name="prepare", image="busybox:1.36", volumes=(logs("/work"),)),),
        sidecars=(Container(name="shipper", image="fluent/fluent-bit:3.0", volumes=(token, config)),),
        volumes=(config,),
    )
    assert pod["volumes"] == [
        {"name": "cfg", "configMap": {"name": "api-config"}},
        {"name": "token", "secret": {"secretName": "api-token"}},
        {"name": "logs", "emptyDir": {}},
    ]


def test_one_volume_mounted_twice_in_a_container_with_sub_paths() -> None:
    config = Volume(
        name="cfg", source="configMap", ref="api-config", mount_path="/etc/a.json", sub_path="a.json"
    )
    other = Volume(
        name="cfg", source="configMap", ref="api-config", mount_path="/etc/b.json", sub_path="b.json"
    )
    pod = rendered_pod(volumes=(config, other))
    assert pod["volumes"] == [{"name": "cfg", "configMap": {"name": "api-config"}}]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "cfg", "mountPath": "/etc/a.json", "subPath": "a.json"},
        {"name": "cfg", "mountPath": "/etc/b.json", "subPath": "b.json"},
    ]


@pytest.mark.parametrize(
    ("read_only", "expected"),
    [
        (True, {"name": "logs", "mountPath": "/l", "readOnly": True}),
        (False, {"name": "logs", "mountPath": "/l"}),
    ],
    ids=["readOnly true is written", "readOnly false is left out"],
)
def test_read_only_only_when_true(read_only: bool, expected: dict[str, Any]) -> None:
    assert rendered_pod(volumes=(logs("/l", read_only=read_only),))["containers"][0]["volumeMounts"] == [
        expected
    ]
