"""Names of the objects a plan renders (docs/design.md §3), in one place: the loader checks them for
collisions and length before anything renders, and the renderer uses them to name what it builds."""

from __future__ import annotations

import hashlib

SERVICE_SUFFIX = "-svc"


def service_name(workload: str) -> str:
    return f"{workload}{SERVICE_SUFFIX}"


def rootfs_pvc_name(sandbox: str, generation: int) -> str:
    return f"{sandbox}-rootfs-g{generation}"


def rootfs_generation(name: str, sandbox: str) -> int | None:
    """The generation a sandbox's rootfs PVC name carries (`dev-rootfs-g3` → 3); None for another name."""
    prefix = rootfs_pvc_name(sandbox, 0)[:-1]
    digits = name.removeprefix(prefix)
    return int(digits) if name.startswith(prefix) and digits.isdigit() else None


def workspace_pvc_name(sandbox: str) -> str:
    return f"{sandbox}-workspace"


def sandbox_env_secret_name(sandbox: str) -> str:
    return f"{sandbox}-env"


MAX_NAME = 63
_HASH_CHARS = 10
_TRUNCATED_PREFIX = MAX_NAME - _HASH_CHARS - 1

VOLUME_PREFIXES = {
    "configMap": "cm",
    "secret": "secret",
    "persistentVolumeClaim": "pvc",
    "hostPath": "host",
    "emptyDir": "empty",
    "claim": "claim",
}


def short_hash(text: str) -> str:
    """The first 10 hex digits of sha256(text): enough to tell generated names apart."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def fit_name(name: str) -> str:
    """`name` if it fits in 63 characters, else its first 52 characters, "-" and short_hash(name)."""
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:_TRUNCATED_PREFIX]}-{short_hash(name)}"


def derived_volume_name(source: str, ref: str, mount_path: str) -> str:
    """The pod volume name of a volume written without `name`.

    configMap and secret volumes are named after what they mount (`cm-<name>`, `secret-<name>`), so two
    containers mounting the same ConfigMap share one pod volume (a claim: `pvc-<name>`); a hostPath is named by a hash of its path
    and an emptyDir by a hash of its mount path (`host-<hash>`, `empty-<hash>`), since paths are not names.
    """
    if source in ("configMap", "secret", "persistentVolumeClaim"):
        return fit_name(f"{VOLUME_PREFIXES[source]}-{ref}")
    hashed = ref if source == "hostPath" else mount_path
    return fit_name(f"{VOLUME_PREFIXES[source]}-{short_hash(hashed)}")
