"""Sandboxes: two Block-mode PVCs, an optional env Secret and, while running, a Kata Pod.

The workspace PVC is the part of a sandbox that survives pause and rebase, so it carries the sandbox's
state and its rendered Pod: `resume` can recreate the Pod from the cluster alone. The rootfs PVC is
named by generation, so a generation bump is a new PVC rather than an edit of an immutable one. A fork
clones the source's current rootfs and workspace through `dataSource`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from planner.kinds import PERSISTENT_VOLUME_CLAIM, POD
from planner.objects import (
    ANNOTATION_IDLE_TIMEOUT,
    ANNOTATION_PLAN,
    ANNOTATION_POD_SPEC,
    ANNOTATION_RUNTIME_ID,
    ANNOTATION_SANDBOX_STATE,
    LABEL_CLAIMED,
    LABEL_POOL,
    Manifest,
    canonical_json,
    present,
)
from planner.plan.model import Claim, Plan, Sandbox, WarmPool
from planner.plan.names import rootfs_pvc_name, sandbox_env_secret_name, workspace_pvc_name
from planner.render.claims import claim_spec
from planner.render.config_objects import opaque_secret
from planner.render.identity import (
    Stamp,
    depends_on_annotation,
    plan_namespace,
    sandbox_runtime_id,
    workload_labels,
)
from planner.render.pods import Fields, env_list, resources

SANDBOX_CONTAINER = "sandbox"
ROOTFS_VOLUME = "rootfs"
WORKSPACE_VOLUME = "workspace"
ROOTFS_DEVICE = "/dev/rootfs"
WORKSPACE_DEVICE = "/dev/workspace"


def pvc_spec(claim: Claim, *, clone_of: str | None) -> Fields:
    clone = {"kind": PERSISTENT_VOLUME_CLAIM.kind, "name": clone_of} if clone_of else None
    return claim_spec(claim, volume_mode="Block", data_source=clone)


def sandbox_container(sandbox: Sandbox) -> Fields:
    env_from = (
        [{"secretRef": {"name": sandbox_env_secret_name(sandbox.name)}}] if sandbox.secret_env else None
    )
    devices = [
        {"name": ROOTFS_VOLUME, "devicePath": ROOTFS_DEVICE},
        {"name": WORKSPACE_VOLUME, "devicePath": WORKSPACE_DEVICE},
    ]
    return {
        "name": SANDBOX_CONTAINER,
        "image": sandbox.image,
        **present(
            env=env_list(sandbox.env), envFrom=env_from, resources=resources(sandbox.cpu, sandbox.memory)
        ),
        "volumeDevices": devices,
    }


@dataclass(frozen=True, kw_only=True)
class PoolStamp(Stamp):
    """A warm-pool member's identity: its pool's labels and the plan's name, but no ApplySet membership,
    so a plan's prune never counts a member as its own (the controller keeps the pool's size)."""

    pool: str
    applyset: str = ""

    def metadata(
        self,
        *,
        name: str,
        namespace: str,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> Manifest:
        pool_labels = {LABEL_POOL: self.pool, LABEL_CLAIMED: "false"}
        return {
            "name": name,
            "namespace": namespace,
            "labels": {**(labels or {}), **pool_labels},
            "annotations": {**(annotations or {}), ANNOTATION_PLAN: self.plan},
        }


class SandboxRenderer:
    """Renders one plan's sandboxes; holds what every sandbox needs (the plan, its stamp, namespace)."""

    def __init__(self, plan: Plan, *, stamp: Stamp, default_namespace: str) -> None:
        self.plan = plan
        self.stamp = stamp
        self.default_namespace = default_namespace
        self.namespace = plan_namespace(plan, default_namespace)
        self.by_name: Mapping[str, Sandbox] = {s.name: s for s in plan.sandboxes}

    def render(self, sandbox: Sandbox) -> list[Manifest]:
        """The env Secret (for secretEnv), the rootfs and workspace PVCs, and the Pod while running."""
        pod = self.pod(sandbox)
        objects = [self.env_secret(sandbox)] if sandbox.secret_env else []
        objects += [self.rootfs_pvc(sandbox), self.workspace_pvc(sandbox, pod)]
        if sandbox.state == "running":
            objects.append(pod)
        return objects

    def identity(self, sandbox: Sandbox) -> dict[str, str]:
        return {ANNOTATION_RUNTIME_ID: str(sandbox_runtime_id(self.plan, sandbox, self.default_namespace))}

    def idle_timeout(self, sandbox: Sandbox) -> dict[str, str]:
        seconds = sandbox.idle_timeout_seconds
        return {} if seconds is None else {ANNOTATION_IDLE_TIMEOUT: f"{seconds:g}"}

    def dependencies(self, sandbox: Sandbox) -> dict[str, str]:
        return depends_on_annotation(self.plan, sandbox.depends_on, self.default_namespace)

    def env_secret(self, sandbox: Sandbox) -> Manifest:
        name = sandbox_env_secret_name(sandbox.name)
        annotations = self.identity(sandbox)
        return opaque_secret(
            name, sandbox.secret_env, stamp=self.stamp, namespace=self.namespace, annotations=annotations
        )

    def pvc(
        self, sandbox: Sandbox, name: str, claim: Claim, *, clone_of: str | None, annotations: Fields
    ) -> Manifest:
        metadata = self.stamp.metadata(
            name=name, namespace=self.namespace, labels=workload_labels(sandbox.name), annotations=annotations
        )
        return {
            "apiVersion": PERSISTENT_VOLUME_CLAIM.api_version,
            "kind": PERSISTENT_VOLUME_CLAIM.kind,
            "metadata": metadata,
            "spec": pvc_spec(claim, clone_of=clone_of),
        }

    def rootfs_pvc(self, sandbox: Sandbox) -> Manifest:
        source = self.fork_source(sandbox)
        clone_of = rootfs_pvc_name(source.name, source.rootfs.generation) if source else None
        name = rootfs_pvc_name(sandbox.name, sandbox.rootfs.generation)
        return self.pvc(sandbox, name, sandbox.rootfs, clone_of=clone_of, annotations=self.identity(sandbox))

    def workspace_pvc(self, sandbox: Sandbox, pod: Manifest) -> Manifest:
        source = self.fork_source(sandbox)
        annotations = {
            **self.identity(sandbox),
            ANNOTATION_SANDBOX_STATE: sandbox.state,
            ANNOTATION_POD_SPEC: canonical_json(pod),
            **self.idle_timeout(sandbox),
            **({} if sandbox.state == "running" else self.dependencies(sandbox)),
        }
        name = workspace_pvc_name(sandbox.name)
        clone_of = workspace_pvc_name(source.name) if source else None
        return self.pvc(sandbox, name, sandbox.workspace, clone_of=clone_of, annotations=annotations)

    def pod(self, sandbox: Sandbox) -> Manifest:
        """The sandbox Pod, rendered even while paused: the workspace PVC records it for `resume`."""
        metadata = self.stamp.metadata(
            name=sandbox.name,
            namespace=self.namespace,
            labels=workload_labels(sandbox.name),
            annotations={**self.identity(sandbox), **self.dependencies(sandbox)},
        )
        claims = {
            ROOTFS_VOLUME: rootfs_pvc_name(sandbox.name, sandbox.rootfs.generation),
            WORKSPACE_VOLUME: workspace_pvc_name(sandbox.name),
        }
        spec = {
            "runtimeClassName": sandbox.runtime_class_name,
            "containers": [sandbox_container(sandbox)],
            "volumes": [{"name": v, "persistentVolumeClaim": {"claimName": c}} for v, c in claims.items()],
            "restartPolicy": "Always",
        }
        return {"apiVersion": POD.api_version, "kind": POD.kind, "metadata": metadata, "spec": spec}

    def fork_source(self, sandbox: Sandbox) -> Sandbox | None:
        return self.by_name[sandbox.fork_from] if sandbox.fork_from else None


def render_pool_member(plan: Plan, pool: WarmPool, name: str, *, default_namespace: str) -> list[Manifest]:
    """One running member of `pool` named `name`: a sandbox of the pool's template, labelled
    `planner.dev/pool=<pool>` and `planner.dev/claimed=false` (env Secret, both PVCs and the Pod)."""
    template = {f.name: getattr(pool.template, f.name) for f in fields(pool.template)}
    sandbox = Sandbox(name=name, **template)
    renderer = SandboxRenderer(
        plan, stamp=PoolStamp(plan=plan.name, pool=pool.name), default_namespace=default_namespace
    )
    return renderer.render(sandbox)
