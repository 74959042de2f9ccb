"""Rules for env read from elsewhere: a `fieldRef` names a pod field the downward API gives to env, and
a `secretKeyRef`/`configMapKeyRef` to a Secret or ConfigMap the plan declares names a key it declares
(unless `optional`), since the kubelet would otherwise refuse to start the container. References to
objects the plan does not declare are checked against the cluster when the plan is made
(`planner.app.references`): loading a plan reads no cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from planner.errors import Diagnostic
from planner.plan.raw import Node, pod_containers
from planner.plan.source import ParsedFile
from planner.plan.suggest import hint

# The fields the API server accepts in an env var's fieldRef (validation.validEnvDownwardAPIFieldPathExpressions).
DOWNWARD_FIELDS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
_SUBSCRIPTED_FIELD = re.compile(r"metadata\.(labels|annotations)\['[^'\s]+'\]")
_SECTIONS = {"secretKeyRef": "secrets", "configMapKeyRef": "configMaps"}
_WHAT = {"secretKeyRef": "secret", "configMapKeyRef": "configMap"}


def env_diagnostics(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    declared = {source: _data_keys(plan, section) for source, section in _SECTIONS.items()}
    metadata = plan.child("metadata")
    namespace = metadata.text("namespace") if metadata is not None else None
    for workload in plan.items("workloads"):
        # Moved to another namespace, it reads that namespace's objects, not the plan's.
        moved = workload.text("runtimeNamespace") not in (None, namespace)
        for _, container in pod_containers(workload):
            env = container.child("env")
            values = [env.child(name) for name in env.data] if env is not None else []
            for value in values:
                if value is not None:
                    yield from _env_value(value, {} if moved else declared, parsed)


def _data_keys(plan: Node, section: str) -> dict[str, list[str]]:
    """The data keys of each object of a section, by name."""
    found: dict[str, list[str]] = {}
    for item in plan.items(section):
        name, data = item.text("name"), item.child("data")
        if name is not None:
            found[name] = list(data.data) if data is not None else []
    return found


def _env_value(
    value: Node, declared: Mapping[str, Mapping[str, list[str]]], parsed: ParsedFile
) -> Iterator[Diagnostic]:
    field = value.text("fieldRef")
    if field is not None and not is_downward_field(field):
        allowed = ", ".join(DOWNWARD_FIELDS[:3]) + ", metadata.labels['KEY'], metadata.annotations['KEY'], "
        allowed += ", ".join(DOWNWARD_FIELDS[3:])
        message = f'fieldRef "{field}" is not a pod field env can read: expected one of {allowed}'
        yield parsed.diagnostic(value.at("fieldRef"), message)
    for source, objects in declared.items():
        ref = value.child(source)
        name, key = (ref.text("name"), ref.text("key")) if ref is not None else (None, None)
        keys = objects.get(name or "")
        if ref is None or keys is None or key is None or ref.data.get("optional") is True:
            continue
        if key not in keys:
            listing = hint(key, keys, listing="it has") or " (it has no data)"
            message = f'{_WHAT[source]} "{name}" of this plan has no key "{key}"{listing}'
            yield parsed.diagnostic(ref.at("key"), message)


def is_downward_field(path: str) -> bool:
    return path in DOWNWARD_FIELDS or _SUBSCRIPTED_FIELD.fullmatch(path) is not None
