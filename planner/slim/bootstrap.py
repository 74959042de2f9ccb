"""What a fresh cluster holds: the four system namespaces, the `kata-qemu` RuntimeClass and the
StorageClasses `standard` (Immediate, the default) and `wait` (WaitForFirstConsumer), as a cluster
with Kata installed would have (DESIGN.md §6). Seeding is idempotent, so a restart with a data
directory leaves existing objects alone.
"""

from __future__ import annotations

from typing import Any

from planner.slim.admission import DEFAULT_CLASS_ANNOTATION
from planner.slim.api import Api
from planner.slim.errors import StatusError
from planner.slim.resources import by_kind

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def seed_objects() -> list[tuple[str, dict[str, Any]]]:
    namespaces = [("Namespace", {"metadata": {"name": name}}) for name in SYSTEM_NAMESPACES]
    runtime = (
        "RuntimeClass",
        {
            "metadata": {"name": "kata-qemu"},
            "handler": "kata-qemu",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}},
        },
    )
    standard = (
        "StorageClass",
        {
            "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
            "provisioner": "planner.dev/embedded",
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
            "allowVolumeExpansion": True,
        },
    )
    wait = (
        "StorageClass",
        {
            "metadata": {"name": "wait"},
            "provisioner": "planner.dev/embedded",
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
        },
    )
    return [*namespaces, runtime, standard, wait]


def seed(api: Api) -> None:
    for kind, body in seed_objects():
        try:
            api.create(by_kind(kind), "", body)
        except StatusError as exc:
            if exc.code != 409:
                raise
