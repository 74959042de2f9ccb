"""Names of the objects a plan renders (DESIGN §3), in one place: the loader checks them for
collisions and length before anything renders, and the renderer uses them to name what it builds."""

from __future__ import annotations

SERVICE_SUFFIX = "-svc"


def service_name(workload: str) -> str:
    return f"{workload}{SERVICE_SUFFIX}"


def rootfs_pvc_name(sandbox: str, generation: int) -> str:
    return f"{sandbox}-rootfs-g{generation}"


def workspace_pvc_name(sandbox: str) -> str:
    return f"{sandbox}-workspace"


def sandbox_env_secret_name(sandbox: str) -> str:
    return f"{sandbox}-env"
