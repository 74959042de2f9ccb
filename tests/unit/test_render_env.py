"""Env from Secrets, ConfigMaps and pod fields, and the config-hash annotation that rolls a workload
when the plan's own ConfigMaps and Secrets it reads change (expected manifests written by hand)."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from planner.plan.config_refs import ConfigRef, workload_config_refs
from planner.plan.model import ConfigMap, Container, EnvFrom, EnvRef, Secret, Volume
from planner.render import ANNOTATION_CONFIG_HASH
from planner.render import render as render_plan
from tests.unit.render_support import IMAGE, find, plan, pod_spec, rendered_object, validate, workload

KEY = bytes(range(32))
PASSWORD = EnvRef(source="secretKeyRef", name="db-credentials", key="password")
MODE = EnvRef(source="configMapKeyRef", name="web-config", key="mode", optional=True)
POD_IP = EnvRef(source="fieldRef", key="status.podIP")
LABEL = EnvRef(source="fieldRef", key="metadata.labels['app']")
CONFIG = ConfigMap(name="web-config", data={"mode": "fast"})
SECRET = Secret(name="db-credentials", data={"password": "s3cret", "user": "app"})


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def test_env_references_render_as_value_from_sorted_by_name() -> None:
    web = workload(env={"POD_IP": POD_IP, "DB_PASSWORD": PASSWORD, "MODE": MODE, "APP": LABEL, "LOG": "info"})
    container = pod_spec(rendered_object(plan(workloads=(web,)), "Deployment", "web"))["containers"][0]
    assert container["env"] == [
        {
            "name": "APP",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels['app']"}},
        },
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db-credentials", "key": "password"}}},
        {"name": "LOG", "value": "info"},
        {
            "name": "MODE",
            "valueFrom": {"configMapKeyRef": {"name": "web-config", "key": "mode", "optional": True}},
        },
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
    ]


def test_a_resource_field_ref_renders_as_kubernetes_reads_it() -> None:
    cpu = EnvRef(source="resourceFieldRef", key="limits.cpu", divisor="1m")
    memory = EnvRef(source="resourceFieldRef", name="proxy", key="requests.memory")
    web = workload(
        env={"CPU": cpu}, sidecars=(Container(name="proxy", image="busybox:1.36", env={"MEM": memory}),)
    )
    pod = pod_spec(rendered_object(plan(workloads=(web,)), "Deployment", "web"))
    assert pod["containers"][0]["env"] == [
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}}
    ]
    assert pod["containers"][1]["env"] == [
        {
            "name": "MEM",
            "valueFrom": {"resourceFieldRef": {"containerName": "proxy", "resource": "requests.memory"}},
        }
    ]


def test_env_from_renders_in_plan_order_for_sidecars_and_init_containers() -> None:
    sources = (
        EnvFrom(source="secret", name="db-credentials"),
        EnvFrom(source="configMap", name="web-config", prefix="WEB_", optional=True),
    )
    web = workload(
        sidecars=(Container(name="proxy", image="busybox:1.36", env_from=sources),),
        init_containers=(Container(name="migrate", image="busybox:1.36", env={"PW": PASSWORD}),),
    )
    pod = pod_spec(rendered_object(plan(workloads=(web,)), "Deployment", "web"))
    assert pod["containers"][1]["envFrom"] == [
        {"secretRef": {"name": "db-credentials"}},
        {"configMapRef": {"name": "web-config", "optional": True}, "prefix": "WEB_"},
    ]
    assert pod["initContainers"][0]["env"] == [
        {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "db-credentials", "key": "password"}}}
    ]
    assert "envFrom" not in pod["containers"][0]


def test_config_refs_name_every_reference_with_its_plan_path() -> None:
    web = workload(
        env={"DB_PASSWORD": PASSWORD, "POD_IP": POD_IP},
        env_from=(EnvFrom(source="configMap", name="web-config"),),
        sidecars=(
            Container(
                name="proxy",
                image=IMAGE,
                volumes=(Volume(name="tls", source="secret", ref="tls", mount_path="/tls"),),
            ),
        ),
    )
    assert list(workload_config_refs(web, "workloads[2]")) == [
        ConfigRef(
            kind="secret",
            name="db-credentials",
            key="password",
            optional=False,
            via="env",
            path="workloads[2].env.DB_PASSWORD.secretKeyRef",
        ),
        ConfigRef(
            kind="configMap",
            name="web-config",
            key=None,
            optional=False,
            via="envFrom",
            path="workloads[2].envFrom[0].configMap",
        ),
        ConfigRef(
            kind="secret",
            name="tls",
            key=None,
            optional=False,
            via="volume",
            path="workloads[2].sidecars[0].volumes[0]",
        ),
    ]


def config_hash(the_plan: Any, name: str = "web", key: bytes | None = KEY) -> str | None:
    manifests = render_plan(the_plan, "default", config_key=key)
    validate(manifests)
    kind = next(
        m["kind"] for m in manifests if m["metadata"]["name"] == name and m["kind"] in ("Deployment", "Job")
    )
    annotations = find(manifests, kind, name)["spec"]["template"]["metadata"].get("annotations", {})
    value: str | None = annotations.get(ANNOTATION_CONFIG_HASH)
    return value


def test_the_config_hash_digests_the_plan_objects_read_through_env_env_from_and_volumes() -> None:
    web = workload(
        env={"DB_PASSWORD": PASSWORD},
        volumes=(Volume(name="config", source="configMap", ref="web-config", mount_path="/etc/web"),),
        pod_annotations={"team": "web"},
    )
    the_plan = plan(workloads=(web,), config_maps=(CONFIG,), secrets=(SECRET,))
    config_digest = hashlib.sha256(b'{"mode":"fast"}').hexdigest()
    secret_digest = hmac.new(KEY, b'{"password":"s3cret","user":"app"}', hashlib.sha256).hexdigest()
    expected = hashlib.sha256(
        canonical({"configMap/web-config": config_digest, "secret/db-credentials": secret_digest})
    ).hexdigest()
    template = find(render_plan(the_plan, "default", config_key=KEY), "Deployment", "web")["spec"]["template"]
    assert template["metadata"]["annotations"] == {"team": "web", ANNOTATION_CONFIG_HASH: expected}


def test_the_config_hash_changes_exactly_when_data_it_reads_changes() -> None:
    web = workload(env_from=(EnvFrom(source="secret", name="db-credentials"),))
    other = workload(name="other", env={"MODE": MODE})
    base = dict(workloads=(web, other), config_maps=(CONFIG,), secrets=(SECRET,))
    before = config_hash(plan(**base))
    rotated = Secret(name="db-credentials", data={"password": "n3w", "user": "app"})
    assert config_hash(plan(**base | {"secrets": (rotated,)})) != before
    assert config_hash(plan(**base | {"secrets": (rotated,)}), "other") == config_hash(plan(**base), "other")
    edited = ConfigMap(name="web-config", data={"mode": "slow"})
    assert config_hash(plan(**base | {"config_maps": (edited,)})) == before
    assert config_hash(plan(**base | {"config_maps": (edited,)}), "other") != config_hash(
        plan(**base), "other"
    )
    assert config_hash(plan(**base)) == before  # deterministic


def test_the_secret_part_is_keyed_so_the_annotation_tells_nothing_without_the_key() -> None:
    web = workload(env={"DB_PASSWORD": PASSWORD})
    the_plan = plan(workloads=(web,), secrets=(SECRET,))
    unkeyed = hashlib.sha256(canonical(dict(SECRET.data))).hexdigest()
    keyed = config_hash(the_plan)
    assert keyed != hashlib.sha256(canonical({"secret/db-credentials": unkeyed})).hexdigest()
    assert keyed != config_hash(the_plan, key=bytes(32))
    # Without the key (offline render) a Secret enters by its key names only.
    names = "keys:" + hashlib.sha256(b'["password","user"]').hexdigest()
    assert (
        config_hash(the_plan, key=None)
        == hashlib.sha256(canonical({"secret/db-credentials": names})).hexdigest()
    )


def test_no_annotation_for_objects_the_plan_does_not_declare_nor_for_pod_fields() -> None:
    web = workload(
        env={"POD_IP": POD_IP, "EXTERNAL": EnvRef(source="secretKeyRef", name="vault", key="token")}
    )
    assert config_hash(plan(workloads=(web,), secrets=(SECRET,))) is None


def test_a_job_that_reads_a_changed_secret_gets_a_new_run_key() -> None:
    job = workload(name="migrate", kind="job", env={"DB_PASSWORD": PASSWORD})
    rotated = Secret(name="db-credentials", data={"password": "n3w", "user": "app"})

    def run_key(secret: Secret) -> str:
        manifests = render_plan(plan(workloads=(job,), secrets=(secret,)), "default", config_key=KEY)
        key: str = find(manifests, "Job", "migrate")["metadata"]["annotations"]["planner.dev/run-key"]
        return key

    assert run_key(SECRET) != run_key(rotated)


def test_a_workload_in_another_namespace_reads_that_namespaces_objects_so_no_hash() -> None:
    moved = workload(runtime_namespace="elsewhere", env={"DB_PASSWORD": PASSWORD})
    assert config_hash(plan(workloads=(moved,), secrets=(SECRET,))) is None
    home = workload(runtime_namespace="shop", env={"DB_PASSWORD": PASSWORD})
    assert config_hash(plan(workloads=(home,), secrets=(SECRET,))) is not None
