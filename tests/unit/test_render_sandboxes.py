"""Seed 003, feature by feature: a sandbox's PVCs, env Secret and Kata Pod, pause, fork and rebase."""

from __future__ import annotations

import json
from typing import Any

from planner.plan.model import Claim, Rootfs, Sandbox, SandboxTemplate, WarmPool
from planner.render.sandbox_objects import render_pool_member
from tests.unit.render_support import (
    SHOP_APPLYSET,
    find,
    kinds_and_names,
    plan,
    rendered,
    without_hash,
)

DEVBOX = "ghcr.io/acme/devbox:2026.11"
ALICE_LABELS = {"app": "alice", "gobrave-workload": "alice"}


def sandbox(name: str = "alice", **fields: Any) -> Sandbox:
    fields.setdefault("image", DEVBOX)
    fields.setdefault("rootfs", Rootfs(size="10Gi"))
    fields.setdefault("workspace", Claim(size="20Gi"))
    return Sandbox(name=name, **fields)


def metadata(name: str, **annotations: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": "shop",
        "labels": {**ALICE_LABELS, "applyset.kubernetes.io/part-of": SHOP_APPLYSET},
        "annotations": {
            "planner.dev/plan": "shop",
            "planner.dev/runtime-id": "k8s-shop|sandbox|alice",
            **annotations,
        },
    }


def pvc_spec(size: str, **extra: Any) -> dict[str, Any]:
    return {
        "accessModes": ["ReadWriteOnce"],
        "volumeMode": "Block",
        "resources": {"requests": {"storage": size}},
        **extra,
    }


ALICE_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": metadata("alice"),
    "spec": {
        "runtimeClassName": "kata-qemu",
        "containers": [
            {
                "name": "sandbox",
                "image": DEVBOX,
                "volumeDevices": [
                    {"name": "rootfs", "devicePath": "/dev/rootfs"},
                    {"name": "workspace", "devicePath": "/dev/workspace"},
                ],
            }
        ],
        "volumes": [
            {"name": "rootfs", "persistentVolumeClaim": {"claimName": "alice-rootfs-g1"}},
            {"name": "workspace", "persistentVolumeClaim": {"claimName": "alice-workspace"}},
        ],
        "restartPolicy": "Always",
    },
}


def test_a_running_sandbox_renders_two_block_pvcs_and_a_kata_pod() -> None:
    manifests = rendered(plan(sandboxes=(sandbox(),)))
    assert kinds_and_names(manifests) == [
        "PersistentVolumeClaim/alice-rootfs-g1",
        "PersistentVolumeClaim/alice-workspace",
        "Pod/alice",
    ]
    rootfs, workspace, pod = (without_hash(m) for m in manifests)
    assert rootfs == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata("alice-rootfs-g1"),
        "spec": pvc_spec("10Gi"),
    }
    pod_json = json.dumps(ALICE_POD, sort_keys=True, separators=(",", ":"))
    assert workspace == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(
            "alice-workspace", **{"planner.dev/sandbox-state": "running", "planner.dev/pod-spec": pod_json}
        ),
        "spec": pvc_spec("20Gi"),
    }
    assert pod == ALICE_POD


def test_a_paused_sandbox_keeps_its_pvcs_and_has_no_pod() -> None:
    manifests = rendered(plan(sandboxes=(sandbox(state="paused"),)))
    assert kinds_and_names(manifests) == [
        "PersistentVolumeClaim/alice-rootfs-g1",
        "PersistentVolumeClaim/alice-workspace",
    ]
    annotations = manifests[1]["metadata"]["annotations"]
    assert annotations["planner.dev/sandbox-state"] == "paused"
    assert json.loads(annotations["planner.dev/pod-spec"]) == ALICE_POD


def test_the_pod_spec_annotation_decodes_to_the_rendered_pod_without_its_hash() -> None:
    manifests = rendered(plan(sandboxes=(sandbox(env={"EDITOR": "vim"}, cpu="2", secret_env={"T": "x"}),)))
    workspace = find(manifests, "PersistentVolumeClaim", "alice-workspace")
    pod = find(manifests, "Pod", "alice")
    assert json.loads(workspace["metadata"]["annotations"]["planner.dev/pod-spec"]) == without_hash(pod)


def test_rootfs_generation_two_names_the_pvc_and_the_pod_claim() -> None:
    manifests = rendered(plan(sandboxes=(sandbox(rootfs=Rootfs(size="10Gi", generation=2)),)))
    assert kinds_and_names(manifests) == [
        "PersistentVolumeClaim/alice-rootfs-g2",
        "PersistentVolumeClaim/alice-workspace",
        "Pod/alice",
    ]
    assert manifests[2]["spec"]["volumes"][0] == {
        "name": "rootfs",
        "persistentVolumeClaim": {"claimName": "alice-rootfs-g2"},
    }


def test_a_fork_clones_the_source_current_rootfs_generation_and_workspace() -> None:
    source = sandbox("base", rootfs=Rootfs(size="10Gi", generation=3))
    fork = sandbox("alice", fork_from="base")
    manifests = rendered(plan(sandboxes=(source, fork)))
    rootfs = find(manifests, "PersistentVolumeClaim", "alice-rootfs-g1")
    workspace = find(manifests, "PersistentVolumeClaim", "alice-workspace")
    assert rootfs["spec"]["dataSource"] == {"kind": "PersistentVolumeClaim", "name": "base-rootfs-g3"}
    assert workspace["spec"]["dataSource"] == {"kind": "PersistentVolumeClaim", "name": "base-workspace"}


def test_a_sandbox_that_is_not_a_fork_has_no_data_source() -> None:
    manifests = rendered(plan(sandboxes=(sandbox(),)))
    assert all("dataSource" not in m["spec"] for m in manifests if m["kind"] == "PersistentVolumeClaim")


def test_secret_env_renders_an_opaque_secret_first_and_the_pod_reads_it() -> None:
    manifests = rendered(plan(sandboxes=(sandbox(secret_env={"GIT_TOKEN": "s3cr3t", "A": "é"}),)))
    assert kinds_and_names(manifests)[0] == "Secret/alice-env"
    secret = without_hash(manifests[0])
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "alice-env",
            "namespace": "shop",
            "labels": {"applyset.kubernetes.io/part-of": SHOP_APPLYSET},
            "annotations": {"planner.dev/plan": "shop", "planner.dev/runtime-id": "k8s-shop|sandbox|alice"},
        },
        "type": "Opaque",
        "data": {"GIT_TOKEN": "czNjcjN0", "A": "w6k="},
    }
    pod = find(manifests, "Pod", "alice")
    assert pod["spec"]["containers"][0]["envFrom"] == [{"secretRef": {"name": "alice-env"}}]


def test_without_secret_env_there_is_no_secret_and_no_env_from() -> None:
    manifests = rendered(plan(sandboxes=(sandbox(),)))
    assert "Secret" not in [m["kind"] for m in manifests]
    assert "envFrom" not in find(manifests, "Pod", "alice")["spec"]["containers"][0]


def test_env_limits_and_runtime_class_reach_the_sandbox_container() -> None:
    the_sandbox = sandbox(
        env={"TERM": "xterm", "EDITOR": "vim"}, cpu="2", memory="4Gi", runtime_class_name="kata-fc"
    )
    pod = find(rendered(plan(sandboxes=(the_sandbox,))), "Pod", "alice")
    assert pod["spec"]["runtimeClassName"] == "kata-fc"
    container = pod["spec"]["containers"][0]
    assert container["env"] == [{"name": "EDITOR", "value": "vim"}, {"name": "TERM", "value": "xterm"}]
    assert container["resources"] == {"limits": {"cpu": "2", "memory": "4Gi"}}


def test_storage_classes_are_set_per_pvc_when_given() -> None:
    the_sandbox = sandbox(rootfs=Rootfs(size="10Gi", storage_class="wait"), workspace=Claim(size="20Gi"))
    manifests = rendered(plan(sandboxes=(the_sandbox,)))
    assert find(manifests, "PersistentVolumeClaim", "alice-rootfs-g1")["spec"]["storageClassName"] == "wait"
    assert "storageClassName" not in find(manifests, "PersistentVolumeClaim", "alice-workspace")["spec"]


def test_sandboxes_use_the_default_namespace_when_the_plan_has_none() -> None:
    manifests = rendered(plan(namespace=None, sandboxes=(sandbox(),)), default_namespace="dev")
    assert {m["metadata"]["namespace"] for m in manifests} == {"dev"}
    assert manifests[0]["metadata"]["annotations"]["planner.dev/runtime-id"] == "k8s-dev|sandbox|alice"


def test_warm_pools_render_nothing() -> None:
    template = SandboxTemplate(image=DEVBOX, rootfs=Rootfs(size="10Gi"), workspace=Claim(size="20Gi"))
    assert rendered(plan(warm_pools=(WarmPool(name="pool", size=2, template=template),))) == []


def test_a_pool_member_is_a_sandbox_of_the_template_outside_the_applyset() -> None:
    template = SandboxTemplate(
        image=DEVBOX, rootfs=Rootfs(size="10Gi"), workspace=Claim(size="20Gi"), idle_timeout_seconds=90
    )
    pool = WarmPool(name="dev", size=2, template=template)

    manifests = render_pool_member(plan(warm_pools=(pool,)), pool, "dev-b2c4d", default_namespace="default")

    assert kinds_and_names(manifests) == [
        "PersistentVolumeClaim/dev-b2c4d-rootfs-g1",
        "PersistentVolumeClaim/dev-b2c4d-workspace",
        "Pod/dev-b2c4d",
    ]
    member_labels = {
        "app": "dev-b2c4d",
        "gobrave-workload": "dev-b2c4d",
        "planner.dev/pool": "dev",
        "planner.dev/claimed": "false",
    }
    assert all(m["metadata"]["labels"] == member_labels for m in manifests)
    workspace = find(manifests, "PersistentVolumeClaim", "dev-b2c4d-workspace")["metadata"]["annotations"]
    assert workspace["planner.dev/runtime-id"] == "k8s-shop|sandbox|dev-b2c4d"
    assert workspace["planner.dev/plan"] == "shop"
    assert workspace["planner.dev/idle-timeout"] == "90"
    assert find(manifests, "Pod", "dev-b2c4d")["spec"]["runtimeClassName"] == "kata-qemu"
