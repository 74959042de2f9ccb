"""Plan -> manifests: the pure renderer (docs/design.md §1, §3).

`render(plan, default_namespace, config_key=...)` reads nothing but its arguments: no cluster, no clock, no
randomness, so the same plan renders byte-identical manifests on every machine. Every top-level object
carries the plan's identity (ApplySet membership, plan name) and, last, its content hash.

Result order, deterministic and relied on by printers and tests: the plan's ConfigMaps, then its
Secrets, then its PersistentVolumeClaims; then per sandbox its env Secret, rootfs PVC, workspace PVC
and Pod; then per workload its Deployment, Job, CronJob or StatefulSet, its Service, its Ingress and
its HorizontalPodAutoscaler — each group in plan order; last the raw manifests, inline ones first,
then each manifest file's. Warm pools render nothing: the sandbox controller creates their members.
"""

from __future__ import annotations

from planner.objects import Manifest as _Manifest
from planner.objects import json_copy as _json_copy
from planner.plan.model import Plan as _Plan
from planner.render.claims import render_claims as _render_claims
from planner.render.config_objects import render_config as _render_config
from planner.render.confighash import ANNOTATION_CONFIG_HASH
from planner.render.confighash import ConfigHashes as _ConfigHashes
from planner.render.identity import (
    RUNTIME_ID_FORM,
    RuntimeID,
    content_hash,
    depends_on_ref,
    is_dns_label,
    plan_namespace,
    run_key,
    sandbox_runtime_id,
    workload_labels,
    workload_namespace,
    workload_runtime_id,
)
from planner.render.identity import Stamp as _Stamp
from planner.render.identity import with_hash as _with_hash
from planner.render.raw_objects import render_manifests as _render_manifests
from planner.render.sandbox_objects import SandboxRenderer as _SandboxRenderer
from planner.render.size_limits import limit_diagnostics
from planner.render.workload_objects import render_workload as _render_workload

__all__ = [
    "ANNOTATION_CONFIG_HASH",
    "RUNTIME_ID_FORM",
    "RuntimeID",
    "content_hash",
    "depends_on_ref",
    "is_dns_label",
    "limit_diagnostics",
    "plan_namespace",
    "render",
    "run_key",
    "sandbox_runtime_id",
    "workload_labels",
    "workload_namespace",
    "workload_runtime_id",
]


def render(plan: _Plan, default_namespace: str, *, config_key: bytes | None = None) -> list[_Manifest]:
    """Every object the plan declares, in the order described above, each with its `planner.dev/hash`;
    `config_key` is the plan's digest key, which Secrets enter the config-hash annotation under
    (`render.confighash`)."""
    stamp = _Stamp.of(plan, default_namespace)
    namespace = plan_namespace(plan, default_namespace)
    sandboxes = _SandboxRenderer(plan, stamp=stamp, default_namespace=default_namespace)
    config = _ConfigHashes(plan, config_key, default_namespace)
    objects = _render_config(plan, stamp=stamp, namespace=namespace)
    objects += _render_claims(plan, stamp=stamp, namespace=namespace)
    for sandbox in plan.sandboxes:
        objects += sandboxes.render(sandbox)
    for workload in plan.workloads:
        objects += _render_workload(
            workload, plan=plan, stamp=stamp, default_namespace=default_namespace, config=config
        )
    objects += _render_manifests(plan, stamp=stamp, default_namespace=default_namespace)
    # Deep copies, so no two manifests share a nested dict that a later stage could mutate.
    return [_with_hash(_json_copy(obj)) for obj in objects]
