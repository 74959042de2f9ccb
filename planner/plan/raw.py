"""Defensive reading of a plan document before it is known to be valid.

Semantic checks run even when the schema found problems elsewhere in the file, so that every error is
reported at once; they must therefore read the raw data without trusting its shape. These accessors
return nothing for a node of the wrong type (the schema check already reports it), and name each node
by its path so diagnostics can point at it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from planner import workloads
from planner.plan.model import VolumeSource
from planner.plan.source import child_path
from planner.workloads.kind import WorkloadKind

VOLUME_SOURCES: tuple[VolumeSource, ...] = (
    "hostPath",
    "emptyDir",
    "configMap",
    "secret",
    "persistentVolumeClaim",
    "claim",
)
REF_FREE_SOURCES = ("emptyDir", "claim")  # sources that name nothing: an emptyDir, a claim template


@dataclass(frozen=True)
class Node:
    """A mapping in the document and its path."""

    path: str
    data: dict[str, Any]

    def at(self, key: str) -> str:
        return child_path(self.path, key)

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value if isinstance(value, str) else None

    def child(self, key: str) -> Node | None:
        value = self.data.get(key)
        return Node(self.at(key), value) if isinstance(value, dict) else None

    def items(self, key: str) -> Iterator[Node]:
        """The mapping items of the list under `key`."""
        value = self.data.get(key)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, dict):
                    yield Node(child_path(self.at(key), index), item)

    def strings(self, key: str) -> Iterator[tuple[str, str]]:
        """(path, text) of the string items of the list under `key`."""
        value = self.data.get(key)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, str):
                    yield child_path(self.at(key), index), item


def root(data: Any) -> Node | None:
    return Node("", data) if isinstance(data, dict) else None


def workload_kind(workload: Node) -> WorkloadKind[Any]:
    """The workload's kind (the default when it names none or one the schema refuses)."""
    kind = workload.data.get("kind")
    return workloads.named(kind if isinstance(kind, str) else None)


def volume_source(volume: Node) -> tuple[str, str] | None:
    """(source, ref) of a volume with exactly one source; ref is "" for emptyDir and claim templates."""
    present = [source for source in VOLUME_SOURCES if source in volume.data]
    if len(present) != 1:
        return None
    source = present[0]
    ref = "" if source in REF_FREE_SOURCES else volume.data[source]
    return (source, ref) if isinstance(ref, str) else None


def pod_containers(workload: Node) -> Iterator[tuple[str, Node]]:
    """('main' | 'sidecar' | 'init', node) for every container of a workload's pod, main first."""
    yield "main", workload
    for sidecar in workload.items("sidecars"):
        yield "sidecar", sidecar
    for init in workload.items("initContainers"):
        yield "init", init
