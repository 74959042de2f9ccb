"""The plan-time check of env references to objects a plan does not declare: one GET per object read
(never a LIST of every Secret), only key names looked at, and each problem at its file position. The
cluster is a recording stand-in that answers GETs from a dict of objects by path."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from planner.app.references import missing_references, with_roll_reasons
from planner.changeset import Change, ChangeSet, FieldChange
from planner.errors import NotFoundError
from planner.kube.client import KubeClient
from planner.objects import ObjectRef
from planner.plan import load_plans

HEADER = "apiVersion: planner.dev/v1\nkind: Plan\nmetadata: {name: shop, namespace: shop}\n"


class RecordingCluster:
    def __init__(self, objects: Mapping[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str, str]] = []

    def request(self, method: str, path: str, *, verb: str = "", **_: Any) -> dict[str, Any]:
        self.calls.append((method, path, verb))
        if path not in self.objects:
            raise NotFoundError(f"{path} not found", status=404)
        return self.objects[path]


def problems(tmp_path: Path, body: str, cluster: RecordingCluster) -> list[str]:
    path = tmp_path / "plan.yaml"
    path.write_text(HEADER + body)
    (plan,) = load_plans([path], environ={}).plans
    return [
        str(d).removeprefix(f"{path}:")
        for d in missing_references(cast(KubeClient, cluster), plan, "default")
    ]


def test_each_external_object_costs_one_get_and_plan_objects_and_optional_ones_none(tmp_path: Path) -> None:
    cluster = RecordingCluster(
        {
            "/api/v1/namespaces/shop/secrets/vault": {
                "data": {"token": "c2VjcmV0"},
                "metadata": {"name": "vault"},
            }
        }
    )
    body = (
        "secrets:\n  - name: db\n    data: {password: x}\n"
        "workloads:\n  - name: web\n    image: nginx\n"
        "    env:\n"
        "      A: {secretKeyRef: {name: vault, key: token}}\n"
        "      B: {secretKeyRef: {name: vault, key: tokne}}\n"
        "      C: {secretKeyRef: {name: db, key: password}}\n"
        "      D: {configMapKeyRef: {name: maybe, key: k, optional: true}}\n"
        "    envFrom: [{secret: vault}, {configMap: gone}]\n"
        "    volumes: [{configMap: mounted, mountPath: /etc/m}]\n"
    )
    assert problems(tmp_path, body, cluster) == [
        '12:39: workloads[0].env.B.secretKeyRef.key: secret "vault" in namespace shop has no key "tokne" (it has: '
        "token): fix the key, or mark the reference optional",
        '15:33: workloads[0].envFrom[1].configMap: configMap "gone" is not declared by this plan and does not '
        "exist in namespace shop: declare it in the plan, create it first, or mark the reference optional",
        '16:15: workloads[0].volumes[0]: configMap "mounted" is not declared by this plan and does not exist '
        "in namespace shop: declare it in the plan or create it first",
    ]
    assert cluster.calls == [
        ("GET", "/api/v1/namespaces/shop/secrets/vault", "get"),
        ("GET", "/api/v1/namespaces/shop/configmaps/gone", "get"),
        ("GET", "/api/v1/namespaces/shop/configmaps/mounted", "get"),
    ]


def test_a_workload_whose_config_hash_moved_names_the_plan_objects_it_reads_that_changed() -> None:
    secret = ObjectRef(group="", kind="Secret", namespace="shop", name="db-credentials")
    config = ObjectRef(group="", kind="ConfigMap", namespace="shop", name="web-config")
    web = ObjectRef(group="apps", kind="Deployment", namespace="shop", name="web")
    pod = {
        "containers": [
            {
                "name": "web",
                "envFrom": [
                    {"secretRef": {"name": "db-credentials"}},
                    {"configMapRef": {"name": "web-config"}},
                ],
            }
        ]
    }
    desired = {"kind": "Deployment", "metadata": {"namespace": "shop"}, "spec": {"template": {"spec": pod}}}
    moved = FieldChange(
        path='.spec.template.metadata.annotations["planner.dev/config-hash"]', before="a", after="b"
    )
    changes = (
        Change(ref=secret, action="update", desired={}, live={}),
        Change(ref=config, action="noop", desired={}, live={}),
        Change(
            ref=web, action="update", desired=desired, live=desired, fields=(moved,), reason="plan changed"
        ),
    )
    result = with_roll_reasons(ChangeSet(plan="shop", namespace="shop", changes=changes))
    assert [c.reason for c in result.changes] == [
        "",
        "",
        "plan changed; rolls because secret db-credentials changed",
    ]


def test_a_workload_in_another_namespace_needs_the_object_there_even_when_the_plan_declares_it(
    tmp_path: Path,
) -> None:
    cluster = RecordingCluster({})
    body = (
        "secrets:\n  - name: db\n    data: {password: x}\n"
        "workloads:\n  - name: web\n    image: nginx\n    runtimeNamespace: other\n"
        "    env: {PW: {secretKeyRef: {name: db, key: password}}}\n"
    )
    assert problems(tmp_path, body, cluster) == [
        '11:16: workloads[0].env.PW.secretKeyRef: secret "db" is declared by this plan in the plan\'s namespace, '
        "not the workload's, and does not exist in namespace other: declare it in the plan, create it first, "
        "or mark the reference optional"
    ]
    assert cluster.calls == [("GET", "/api/v1/namespaces/other/secrets/db", "get")]
