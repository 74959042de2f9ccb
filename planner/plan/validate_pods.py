"""Rules for what runs: workload kinds, pods, containers, volumes, quantities, users.

These are the rules Kubernetes or the workload model imposes that a JSON Schema cannot state: fields that belong to
some workload kinds only, `expose` needing a port, claim volumes naming a declared claim (or, in a
StatefulSet, being a named claim template), `replicas` within an autoscaler's bounds, probes not allowed on init containers, container and
volume names that must agree within one pod, quantities the API server would reject or clamp (above
2^63-1 it silently cuts a binary quantity down, and no int64 reader can use a larger decimal one). A
`user` that is not numeric is a warning, not an error: it maps to `runAsUser` only when it parses as one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from planner import workloads
from planner.errors import Diagnostic
from planner.kube.quantity import MAX_QUANTITY, parse_quantity
from planner.plan import names
from planner.plan.raw import Node, pod_containers, volume_source, workload_kind
from planner.plan.source import ParsedFile, child_path
from planner.plan.suggest import hint

NUMERIC_USER = re.compile(r"\d+(:\d+)?")
QUANTITY_HINT = "expected a Kubernetes quantity like 500m, 0.5, 256Mi or 1Gi"
# The docker reference grammar (distribution's `reference.ReferenceRegexp`), which the kubelet parses an
# image with: anything else is `InvalidImageName` on the node, long after apply said it was fine.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)
MAX_IMAGE_NAME = 255


def pod_diagnostics(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    claims = {name: None for item in plan.items("volumeClaims") if (name := item.text("name"))}
    for claim in plan.items("volumeClaims"):
        yield from _quantities(claim, ("size",), parsed, positive=True)
    for workload in plan.items("workloads"):
        yield from _kind_fields(workload, parsed)
        yield from _expose(workload, parsed)
        yield from _kind_checks(workload, parsed)
        yield from _ingress(workload, parsed)
        yield from _autoscale(workload, parsed)
        yield from _claim_volumes(workload, claims, parsed)
        yield from _scheduling(workload, parsed)
        yield from _containers(workload, parsed)
        yield from _volumes(workload, parsed)
        yield from _user(workload, parsed)
        for _, container in pod_containers(workload):
            yield from _image(container, parsed)
    for sandbox in plan.items("sandboxes"):
        yield from _sandbox_quantities(sandbox, parsed)
        yield from _image(sandbox, parsed)
    for pool in plan.items("warmPools"):
        template = pool.child("template")
        if template is not None:
            yield from _sandbox_quantities(template, parsed)
            yield from _image(template, parsed)


def _image(container: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    image = container.text("image")
    if not image:
        return
    name = image.split("@", 1)[0]
    name = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    if IMAGE_REFERENCE.fullmatch(image) and len(name) <= MAX_IMAGE_NAME:
        return
    yield parsed.diagnostic(
        container.at("image"),
        f"{json.dumps(image)} is not an image reference: expected [registry[:port]/]repository[:tag][@digest] "
        f"with a lowercase repository and no spaces (a {MAX_IMAGE_NAME}-character name at most), as "
        "`nginx:1.27` or `ghcr.io/acme/app@sha256:…`",
    )


def _kind_fields(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    kind = workload_kind(workload)
    for field in workloads.own_fields():
        if field in workload.data and field not in kind.fields:
            owners = " and ".join(f"{owner.name}s" for owner in workloads.accepting(field))
            message = f"{field} is for {owners} only; this workload is a {kind.name}"
            yield parsed.diagnostic(workload.at(field), message, at_value=False)


def _kind_checks(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    """What the workload's own kind says of its fields."""
    for problem in workload_kind(workload).checks(workload.data):
        path = workload.path
        for key in problem.keys:
            path = child_path(path, key)
        yield parsed.diagnostic(path, problem.message, at_value=problem.at_value)


def _exposed_kinds() -> str:
    return " and ".join(f"{owner.name}s" for owner in workloads.KINDS if owner.service == "exposed")


def _expose(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    if workload.data.get("expose") is not True:
        return
    kind = workload_kind(workload)
    if kind.service is None:
        message = f"expose is for {_exposed_kinds()} only: a {kind.name} gets no Service"
        yield parsed.diagnostic(workload.at("expose"), message, at_value=False)
    elif kind.service == "headless":
        message = f"expose is for {_exposed_kinds()} only: a {kind.name} with a port gets its headless Service anyway"
        yield parsed.diagnostic(workload.at("expose"), message, at_value=False)
    elif "port" not in workload.data:
        message = "expose needs a port: the Service forwards to it (add port)"
        yield parsed.diagnostic(workload.at("expose"), message, at_value=False)


def _ingress(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    if "ingress" not in workload.data:
        return
    kind = workload_kind(workload)
    if kind.service != "exposed":  # expose is refused for it too: say what it can do instead
        message = f"ingress is for {_exposed_kinds()} only (with expose: true and a port): a {kind.name} "
        message += (
            "gets no Service"
            if kind.service is None
            else "has only its headless Service <name>; to route to it, declare a Service and an Ingress "
            "under manifests"
        )
        yield parsed.diagnostic(workload.at("ingress"), message, at_value=False)
    elif workload.data.get("expose") is not True:
        message = "ingress needs expose: true (and a port): it routes to the workload's Service <name>-svc"
        yield parsed.diagnostic(workload.at("ingress"), message, at_value=False)


def _autoscale(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    """An autoscaler's bounds must hold together and hold the replicas the workload starts with."""
    scale = workload.child("autoscale")
    if scale is None:
        return
    low, high = scale.data.get("min"), scale.data.get("max")
    if not (isinstance(low, int) and isinstance(high, int)):
        return
    if high < low:
        yield parsed.diagnostic(scale.at("max"), f"max ({high}) is below min ({low})")
        return
    replicas = workload.data.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and not low <= replicas <= high:
        message = (
            f"replicas {replicas} is outside autoscale's [{low}, {high}]: the autoscaler owns replicas, "
            "which only say how many the workload starts with"
        )
        yield parsed.diagnostic(workload.at("replicas"), message)


def _claim_volumes(workload: Node, claims: dict[str, None], parsed: ParsedFile) -> Iterator[Diagnostic]:
    """`persistentVolumeClaim` names a claim of the plan; `claim` templates are a StatefulSet's, named."""
    kind = workload_kind(workload)
    for _, container in pod_containers(workload):
        for volume in container.items("volumes"):
            claim = volume.text("persistentVolumeClaim")
            if claim is not None and claim not in claims:
                known = hint(claim, list(claims), listing="declared", limit=10)
                message = f'unknown claim "{claim}": no entry of volumeClaims has that name{known}'
                yield parsed.diagnostic(volume.at("persistentVolumeClaim"), message)
            if "claim" not in volume.data:
                continue
            if not kind.claim_templates:
                owners = " and ".join(f"{owner.name}s" for owner in workloads.KINDS if owner.claim_templates)
                message = (
                    f"a claim template is for {owners} only; this workload is a {kind.name}: "
                    "declare the claim in volumeClaims and mount it with persistentVolumeClaim"
                )
                yield parsed.diagnostic(volume.at("claim"), message, at_value=False)
            elif "name" not in volume.data:
                message = (
                    "a claim template needs a name: each pod's PVC is named <name>-<statefulset>-<ordinal>"
                )
                yield parsed.diagnostic(volume.at("claim"), message, at_value=False)


def _scheduling(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    for term in workload.items("scheduling"):
        operator = term.text("operator")
        values = term.data.get("values")
        if operator in ("In", "NotIn") and not values:
            yield parsed.diagnostic(
                term.at("operator"), f"operator {operator} needs at least one value in values"
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            yield parsed.diagnostic(term.at("values"), f"operator {operator} takes no values", at_value=False)


def _containers(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    seen: dict[str, str] = {}
    for role, container in pod_containers(workload):
        name = container.text("name")
        if name is not None and name in seen:
            line = parsed.position(seen[name]).line
            what = "the main container" if seen[name] == workload.at("name") else seen[name].rsplit(".", 1)[0]
            message = (
                f'container name "{name}" is already used by {what} (line {line}): names are unique in a pod'
            )
            yield parsed.diagnostic(container.at("name"), message)
        elif name is not None:
            seen[name] = container.at("name")
        yield from _probes(role, container, parsed)
        yield from _quantities(container, ("cpu", "memory"), parsed, positive=False)


def _probes(role: str, container: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    for probe in ("readinessProbe", "livenessProbe"):
        if role == "init" and probe in container.data:
            message = f"init containers cannot have a {probe} (Kubernetes rejects it): they run to completion"
            yield parsed.diagnostic(container.at(probe), message, at_value=False)
    liveness = container.child("livenessProbe")
    threshold = liveness.data.get("successThreshold") if liveness else None
    if liveness is not None and isinstance(threshold, int) and threshold != 1:
        message = f"expected 1 for a liveness probe (Kubernetes requires it), found {threshold}"
        yield parsed.diagnostic(liveness.at("successThreshold"), message)


def _volumes(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    """Volumes that share a name across the pod's containers are one pod volume: same source required."""
    defined: dict[str, tuple[tuple[str, str], str]] = {}
    for _, container in pod_containers(workload):
        mounts: dict[str, str] = {}
        for volume in container.items("volumes"):
            yield from _mount_path(volume, mounts, parsed)
            source = volume_source(volume)
            mount_path = volume.text("mountPath")
            if source is None or mount_path is None:
                continue
            name = volume.text("name") or names.derived_volume_name(source[0], source[1], mount_path)
            earlier = defined.setdefault(name, (source, volume.path))
            if earlier[0] != source:
                yield parsed.diagnostic(volume.path, _volume_conflict(name, source, earlier), at_value=False)


def _mount_path(volume: Node, mounts: dict[str, str], parsed: ParsedFile) -> Iterator[Diagnostic]:
    mount_path = volume.text("mountPath")
    if mount_path is None:
        return
    if mount_path in mounts:
        message = f'mountPath "{mount_path}" is already used by {mounts[mount_path]} in this container'
        yield parsed.diagnostic(volume.at("mountPath"), message)
    else:
        mounts[mount_path] = volume.path


def _volume_conflict(name: str, source: tuple[str, str], earlier: tuple[tuple[str, str], str]) -> str:
    return (
        f'volume "{name}" is {_describe(source)} here but {_describe(earlier[0])} in {earlier[1]}: '
        "volumes that share a name are one pod volume and need the same source"
    )


def _describe(source: tuple[str, str]) -> str:
    kind, ref = source
    return kind if kind == "emptyDir" else f'{kind} "{ref}"'


def _user(workload: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    user = workload.data.get("user")
    if user is None or isinstance(user, bool) or not isinstance(user, str | int):
        return
    if not NUMERIC_USER.fullmatch(str(user)):
        message = f'user "{user}" is not "uid" or "uid:gid" (digits): it is kept but not mapped to runAsUser'
        yield parsed.diagnostic(workload.at("user"), message, warning=True)


def _sandbox_quantities(sandbox: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    yield from _quantities(sandbox, ("cpu", "memory"), parsed, positive=False)
    for claim in ("rootfs", "workspace"):
        node = sandbox.child(claim)
        if node is not None:
            yield from _quantities(node, ("size",), parsed, positive=True)


def _quantities(
    node: Node, fields: tuple[str, ...], parsed: ParsedFile, *, positive: bool
) -> Iterator[Diagnostic]:
    for field in fields:
        text = quantity_text(node.data.get(field), parsed.written(node.at(field)))
        if text is None:
            continue
        problem = quantity_problem(text, positive=positive)
        if problem:
            yield parsed.diagnostic(node.at(field), problem)


def quantity_text(value: object, written: str | None) -> str | None:
    """A quantity as its string form: strings as they are, numbers as written (`0.50` stays `0.50`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and written is not None:
        return written
    return str(value)


def quantity_problem(text: str, *, positive: bool) -> str | None:
    try:
        value = parse_quantity(text)
    except ValueError:
        return f'bad quantity "{text}": {QUANTITY_HINT}'
    if positive and value <= 0:
        return f'expected a size greater than zero, found "{text}"'
    if value < 0:
        return f'expected a quantity of zero or more, found "{text}"'
    if value > MAX_QUANTITY:
        return (
            f"expected a quantity of at most 2^63-1 ({MAX_QUANTITY}, just under 8Ei: the most Kubernetes "
            f'can count), found "{text}"'
        )
    return None
