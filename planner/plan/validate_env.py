"""Rules for env read from elsewhere: a `fieldRef` names a pod field the downward API gives to env, a
`resourceFieldRef` a resource of a container of the workload in a divisor Kubernetes takes, and a
`secretKeyRef`/`configMapKeyRef` to a Secret or ConfigMap the plan declares names a key it declares
(unless `optional`), since the kubelet would otherwise refuse to start the container. References to
objects the plan does not declare are checked against the cluster when the plan is made
(`planner.app.references`): loading a plan reads no cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from planner.errors import Diagnostic
from planner.kube.quantity import parse_quantity
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
# The container resources env can read (validation.validEnvResourceFieldPathExpressions), hugepages aside.
RESOURCE_FIELDS = (
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
)
_HUGEPAGES = ("limits.hugepages-", "requests.hugepages-")
_CPU_DIVISORS = ("1m", "1")
_BYTE_DIVISORS = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
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
        containers = [name for _, container in pod_containers(workload) if (name := container.text("name"))]
        for _, container in pod_containers(workload):
            env = container.child("env")
            values = [env.child(name) for name in env.data] if env is not None else []
            for value in values:
                if value is not None:
                    yield from _env_value(value, {} if moved else declared, parsed)
                    yield from _resource_value(value, containers, parsed)


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


def _resource_value(value: Node, containers: list[str], parsed: ParsedFile) -> Iterator[Diagnostic]:
    """A resourceFieldRef names a resource the downward API gives, in a divisor Kubernetes accepts for
    it, of a container of the workload's pod."""
    ref = value.child("resourceFieldRef")
    resource = ref.text("resource") if ref is not None else None
    if ref is None or resource is None:
        return
    if resource not in RESOURCE_FIELDS and not resource.startswith(_HUGEPAGES):
        message = (
            f'resource "{resource}" is not one env can read: expected one of {", ".join(RESOURCE_FIELDS)}, '
        )
        yield parsed.diagnostic(
            ref.at("resource"), message + "limits.hugepages-SIZE or requests.hugepages-SIZE"
        )
    container = ref.text("containerName")
    if container is not None and container not in containers:
        listing = hint(container, containers, listing="its containers are") or ""
        yield parsed.diagnostic(
            ref.at("containerName"), f'no container "{container}" in this workload{listing}'
        )
    divisor = ref.data.get("divisor")
    if (
        isinstance(divisor, (str, int))
        and not isinstance(divisor, bool)
        and not _divides(resource, str(divisor))
    ):
        allowed = _CPU_DIVISORS if resource.endswith(".cpu") else _BYTE_DIVISORS
        message = f'divisor "{divisor}" is not one Kubernetes takes for {resource}: expected one of {", ".join(allowed)}'
        yield parsed.diagnostic(ref.at("divisor"), message)


def _divides(resource: str, divisor: str) -> bool:
    """Whether the API server accepts `divisor` for `resource`: it compares the quantity's canonical
    spelling (`1000m` is `1`, `1024Mi` is `1Gi`, but `1024` stays `1024`) with its list."""
    try:
        value = parse_quantity(divisor)
    except ValueError:
        return False
    if value == 0:
        return True  # Kubernetes' unset divisor
    binary, exponent = divisor.endswith("i"), "e" in divisor.lower()
    allowed = _CPU_DIVISORS if resource.endswith(".cpu") else _BYTE_DIVISORS
    return value == 1 or any(
        parse_quantity(spelling) == value and spelling.endswith("i") == binary and not exponent
        for spelling in allowed
    )


def is_downward_field(path: str) -> bool:
    return path in DOWNWARD_FIELDS or _SUBSCRIPTED_FIELD.fullmatch(path) is not None
