"""Which entry of a plan renders each object: `workloads[2]` for its Deployment, Service and
autoscaler, `workloads[2].ingress` for its Ingress, `manifests[0]` for an inline manifest. Limit
diagnostics point there, and a changed field is traced back to a value under it
(`planner.provenance`)."""

from __future__ import annotations

from planner import workloads
from planner.plan import names
from planner.plan.model import Plan


def entry_paths(plan: Plan) -> dict[tuple[str, str], str]:
    """(kind, name) of every rendered object → the path of the plan entry that renders it."""
    origins: dict[tuple[str, str], str] = {}
    for index, config_map in enumerate(plan.config_maps):
        origins["ConfigMap", config_map.name] = f"configMaps[{index}]"
    for index, secret in enumerate(plan.secrets):
        origins["Secret", secret.name] = f"secrets[{index}]"
    for index, sandbox in enumerate(plan.sandboxes):
        here = f"sandboxes[{index}]"
        origins["Pod", sandbox.name] = here
        origins["Secret", names.sandbox_env_secret_name(sandbox.name)] = f"{here}.secretEnv"
        origins["PersistentVolumeClaim", names.rootfs_pvc_name(sandbox.name, sandbox.rootfs.generation)] = (
            here
        )
        origins["PersistentVolumeClaim", names.workspace_pvc_name(sandbox.name)] = here
    for index, workload in enumerate(plan.workloads):
        here = f"workloads[{index}]"
        kind = workloads.named(workload.kind)
        origins[kind.api.kind, workload.name] = here
        origins["Service", names.service_name(workload.name)] = here
        origins["Ingress", workload.name] = f"{here}.ingress"
        if kind.service == "headless":
            origins["Service", workload.name] = here
        origins["HorizontalPodAutoscaler", workload.name] = here
    for index, claim in enumerate(plan.volume_claims):
        origins["PersistentVolumeClaim", claim.name] = f"volumeClaims[{index}]"
    for manifest in plan.manifests:
        if manifest.path.startswith("manifests["):  # written in the plan itself, not a manifest file
            origins[manifest.kind, manifest.name] = manifest.path
    return origins
