"""What a workload reads from ConfigMaps and Secrets: through env (`secretKeyRef`, `configMapKeyRef`),
`envFrom` and volumes, in every container of its pod, each with where the plan writes it.

One list serves the `planner.dev/config-hash` annotation (the render digests the data of the plan's own
objects a workload reads, so that editing one rolls it) and the plan-time check of objects the plan does
not declare (`planner.app.references`), which names the file position of a missing one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from planner.plan.model import Container, EnvRef, Plan, Workload

ConfigKind = Literal["configMap", "secret"]
_KINDS: dict[str, ConfigKind] = {
    "configMapKeyRef": "configMap",
    "secretKeyRef": "secret",
    "configMap": "configMap",
    "secret": "secret",
}


@dataclass(frozen=True, kw_only=True)
class ConfigRef:
    kind: ConfigKind
    name: str
    key: str | None  # None: every key (envFrom, a volume)
    optional: bool
    via: Literal["env", "envFrom", "volume"]
    path: str  # where the plan writes the reference (`workloads[0].env.DB_PASSWORD.secretKeyRef`)


def plan_objects(plan: Plan) -> set[tuple[ConfigKind, str]]:
    """The ConfigMaps and Secrets the plan declares, as (kind, name)."""
    return {("configMap", c.name) for c in plan.config_maps} | {("secret", s.name) for s in plan.secrets}


def reads_plan_objects(plan: Plan, workload: Workload, default_namespace: str) -> bool:
    """Whether the workload runs where the plan's ConfigMaps and Secrets are (the plan's namespace): a
    workload moved elsewhere by `runtimeNamespace` reads that namespace's objects of those names."""
    return workload.runtime_namespace in (None, plan.namespace or default_namespace)


def plan_config_refs(plan: Plan) -> Iterator[tuple[Workload, ConfigRef]]:
    for index, workload in enumerate(plan.workloads):
        for ref in workload_config_refs(workload, f"workloads[{index}]"):
            yield workload, ref


def workload_config_refs(workload: Workload, path: str) -> Iterator[ConfigRef]:
    """The references of the workload at `path` in plan order: main container, sidecars, init containers."""
    yield from _container_refs(workload, path)
    for key, containers in (("sidecars", workload.sidecars), ("initContainers", workload.init_containers)):
        for index, container in enumerate(containers):
            yield from _container_refs(container, f"{path}.{key}[{index}]")


def _container_refs(container: Container | Workload, path: str) -> Iterator[ConfigRef]:
    for name, value in container.env.items():
        if isinstance(value, EnvRef) and value.source in _KINDS:
            yield ConfigRef(
                kind=_KINDS[value.source],
                name=value.name,
                key=value.key,
                optional=value.optional,
                via="env",
                path=f"{path}.env.{name}.{value.source}",
            )
    for index, source in enumerate(container.env_from):
        kind = _KINDS[source.source]
        yield ConfigRef(
            kind=kind,
            name=source.name,
            key=None,
            optional=source.optional,
            via="envFrom",
            path=f"{path}.envFrom[{index}].{source.source}",
        )
    for index, volume in enumerate(container.volumes):
        if volume.source in _KINDS:
            kind = _KINDS[volume.source]
            yield ConfigRef(
                kind=kind,
                name=volume.ref,
                key=None,
                optional=False,
                via="volume",
                path=f"{path}.volumes[{index}]",
            )
