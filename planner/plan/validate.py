"""Semantic checks: what the schema cannot say about a plan.

Each check reads the raw document (see `raw.py`) and returns Diagnostics; `semantic_diagnostics` runs
them all so one `validate` shows every problem. Name rules live here: names are unique per kind, as
Kubernetes has them (a Secret `db` beside a StatefulSet `db` is fine), workloads and sandboxes together
(a bare `dependsOn` name and a runtime ID's name find one of them), and no object the plan renders (docs/design.md §3: Service `<name>-svc`, sandbox PVCs and env Secret, the
ApplySet parent Secret `<plan>`, a StatefulSet's headless Service `<name>`) may share a kind, namespace and name with another, or outgrow 63
characters. Reference and cycle rules are in `validate_refs.py`, pod rules in `validate_pods.py`, label and
annotation rules in `validate_meta.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from planner.errors import Diagnostic
from planner.plan import names
from planner.plan.raw import Node, root, workload_kind
from planner.plan.reconcile_section import reconcile_diagnostics
from planner.plan.source import ParsedFile
from planner.plan.validate_env import env_diagnostics
from planner.plan.validate_meta import meta_diagnostics
from planner.plan.validate_pods import pod_diagnostics
from planner.plan.validate_refs import reference_diagnostics
from planner.workloads.kind import ServiceShape, WorkloadKind

# Sections whose names share one name space, each with the rule a repeat breaks.
_NAME_SPACES = (
    (("workloads", "sandboxes"), "workload and sandbox names are unique (dependsOn names them bare)"),
    (("configMaps",), "configMap names are unique"),
    (("secrets",), "secret names are unique"),
    (("volumeClaims",), "claim names are unique"),
)


def semantic_diagnostics(parsed: ParsedFile) -> list[Diagnostic]:
    """Every semantic problem of the plan in `parsed` (errors and warnings)."""
    plan = root(parsed.data)
    if plan is None:
        return []
    return [
        *_unique_names(plan, parsed),
        *_warm_pool_names(plan, parsed),
        *_generated_names(plan, parsed),
        *reference_diagnostics(plan, parsed),
        *pod_diagnostics(plan, parsed),
        *meta_diagnostics(plan, parsed),
        *env_diagnostics(plan, parsed),
        *reconcile_diagnostics(plan, parsed),
    ]


def _in_file_order(entries: list[tuple[str, str]], parsed: ParsedFile) -> list[tuple[str, str]]:
    return sorted(entries, key=lambda entry: parsed.order(entry[0]))


def _unique_names(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    for sections, rule in _NAME_SPACES:
        entries = [
            (item.at("name"), name)
            for section in sections
            for item in plan.items(section)
            if (name := item.text("name"))
        ]
        yield from _repeats(entries, parsed, rule, "claim name" if sections == ("volumeClaims",) else "name")


def _warm_pool_names(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    sandboxes = [(item.at("name"), name) for item in plan.items("sandboxes") if (name := item.text("name"))]
    pools = [(item.at("name"), name) for item in plan.items("warmPools") if (name := item.text("name"))]
    yield from _repeats(pools, parsed, "warm pool names are unique", "warm pool name")
    taken = {name: path for path, name in reversed(sandboxes)}
    for path, name in pools:
        if name in taken:
            where = parsed.position(taken[name]).line
            yield parsed.diagnostic(
                path,
                f'warm pool name "{name}" is already used by sandbox {_owner(taken[name])} (line {where}): '
                "warm pools and sandboxes share one name space",
            )


def _repeats(
    entries: list[tuple[str, str]], parsed: ParsedFile, rule: str, noun: str
) -> Iterator[Diagnostic]:
    first: dict[str, str] = {}
    for path, name in _in_file_order(entries, parsed):
        if name in first:
            line = parsed.position(first[name]).line
            yield parsed.diagnostic(
                path, f'{noun} "{name}" is already used by {_owner(first[name])} (line {line}): {rule}'
            )
        else:
            first[name] = path


def _owner(name_path: str) -> str:
    """`workloads[0]` for `workloads[0].name`."""
    return name_path.rsplit(".", 1)[0]


@dataclass(frozen=True, kw_only=True)
class Rendered:
    """One object the plan renders, and how to speak of it in a message."""

    kind: str
    namespace: str
    name: str
    origin: str  # path of the name field it comes from
    subject: str  # how it is named in a message reported at its origin
    reference: str  # how it is named when another object collides with it
    base: str = ""  # for a generated name, the plan name it is made from
    generated: str = ""  # for a generated name, its form: "<name>-svc"
    owner: str = ""  # for a generated name, what generates it: "an exposed workload"


def rendered_objects(plan: Node) -> Iterator[Rendered]:
    """Every object the plan renders itself, by kind, namespace ("" when the plan names none) and name."""
    return _rendered_objects(plan)


def _rendered_objects(plan: Node) -> Iterator[Rendered]:
    metadata = plan.child("metadata")
    plan_name = metadata.text("name") if metadata else None
    namespace = (metadata.text("namespace") if metadata else None) or ""
    if plan_name:
        yield Rendered(
            kind="Secret",
            namespace=namespace,
            name=plan_name,
            origin="metadata.name",
            subject=f'the ApplySet parent Secret "{plan_name}"',
            reference=f'the ApplySet parent Secret of plan "{plan_name}"',
            base=plan_name,
            generated="<plan>",
            owner="a plan",
        )
    yield from _workload_objects(plan, namespace)
    yield from _sandbox_objects(plan, namespace)
    for section, kind in (
        ("configMaps", "ConfigMap"),
        ("secrets", "Secret"),
        ("volumeClaims", "PersistentVolumeClaim"),
    ):
        for item in plan.items(section):
            if name := item.text("name"):
                label = f'{kind} "{name}"'
                yield Rendered(
                    kind=kind,
                    namespace=namespace,
                    name=name,
                    origin=item.at("name"),
                    subject=label,
                    reference=label,
                )


@dataclass(frozen=True, kw_only=True)
class _Service:
    """The Service a workload kind's shape renders, when it does, and how messages speak of it."""

    renders: Callable[[Node], bool]
    name: Callable[[str], str]
    form: str  # the generated name's form: "<name>-svc"
    what: str  # "Service", "headless Service"


_SERVICES: dict[ServiceShape, _Service] = {
    "exposed": _Service(
        renders=lambda workload: workload.data.get("expose") is True,
        name=names.service_name,
        form="<name>-svc",
        what="Service",
    ),
    "headless": _Service(
        renders=lambda workload: "port" in workload.data,
        name=lambda name: name,
        form="<name>",
        what="headless Service",
    ),
}


def _service_words(kind: WorkloadKind[Any]) -> tuple[str, str]:
    """How messages name what a Service belongs to, and what generates it."""
    if kind.service == "exposed":
        return "workload", "an exposed workload"
    return kind.name, f"a {kind.name} with a port"


def _workload_objects(plan: Node, namespace: str) -> Iterator[Rendered]:
    for workload in plan.items("workloads"):
        name = workload.text("name")
        if not name:
            continue
        here = workload.text("runtimeNamespace") or namespace
        workload_type = workload_kind(workload)
        kind = workload_type.api.kind
        label = f'{kind} "{name}"'
        origin = workload.at("name")
        yield Rendered(
            kind=kind,
            namespace=here,
            name=name,
            origin=origin,
            subject=label,
            reference=label,
        )
        service = _SERVICES.get(workload_type.service) if workload_type.service else None
        if service is not None and service.renders(workload):
            of, owner = _service_words(workload_type)
            generated = service.name(name)
            yield Rendered(
                kind="Service",
                namespace=here,
                name=generated,
                origin=origin,
                subject=f'its {service.what} "{generated}"',
                reference=f'the {service.what} of {of} "{name}"',
                base=name,
                generated=service.form,
                owner=owner,
            )


def _sandbox_objects(plan: Node, namespace: str) -> Iterator[Rendered]:
    for sandbox in plan.items("sandboxes"):
        name = sandbox.text("name")
        if not name:
            continue
        origin = sandbox.at("name")
        of = f'of sandbox "{name}"'
        yield Rendered(
            kind="Pod",
            namespace=namespace,
            name=name,
            origin=origin,
            subject=f'Pod "{name}"',
            reference=f"the Pod {of}",
        )
        generation = _generation(sandbox)
        derived = [
            (
                "PersistentVolumeClaim",
                names.rootfs_pvc_name(name, generation),
                "rootfs PVC",
                f"<name>-rootfs-g{generation}",
            ),
            ("PersistentVolumeClaim", names.workspace_pvc_name(name), "workspace PVC", "<name>-workspace"),
        ]
        if sandbox.data.get("secretEnv"):
            derived.append(("Secret", names.sandbox_env_secret_name(name), "env Secret", "<name>-env"))
        for kind, generated, role, form in derived:
            yield Rendered(
                kind=kind,
                namespace=namespace,
                name=generated,
                origin=origin,
                subject=f'its {role} "{generated}"',
                reference=f"the {role} {of}",
                base=name,
                generated=form,
                owner="a sandbox",
            )


def _generation(sandbox: Node) -> int:
    rootfs = sandbox.child("rootfs")
    generation = rootfs.data.get("generation", 1) if rootfs else 1
    return generation if isinstance(generation, int) and not isinstance(generation, bool) else 1


def _generated_names(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    objects = sorted(_rendered_objects(plan), key=lambda rendered: parsed.order(rendered.origin))
    yield from _too_long(objects, parsed)
    first: dict[tuple[str, str, str], Rendered] = {}
    for rendered in objects:
        earlier = first.setdefault((rendered.kind, rendered.namespace, rendered.name), rendered)
        if earlier is not rendered and _collision_to_report(earlier, rendered):
            line = parsed.position(earlier.origin).line
            yield parsed.diagnostic(
                rendered.origin,
                f"{rendered.subject} collides with {earlier.reference} ({earlier.origin}, line {line}): "
                "rename one of them",
            )


def _collision_to_report(earlier: Rendered, later: Rendered) -> bool:
    """Whether two objects of one kind, namespace and name are a problem not reported elsewhere: two
    objects named directly by the plan, or generated from one repeated name, are the duplicate-name error."""
    if not (earlier.generated or later.generated):
        return False
    return not (earlier.generated and later.generated and earlier.base == later.base)


def _too_long(objects: list[Rendered], parsed: ParsedFile) -> Iterator[Diagnostic]:
    """One diagnostic per name whose longest generated name outgrows 63 characters. A name that is itself
    too long is left to the schema check, which reports it already."""
    longest: dict[str, Rendered] = {}
    for rendered in objects:
        if not rendered.generated or len(rendered.base) > names.MAX_NAME:
            continue
        current = longest.get(rendered.origin)
        if len(rendered.name) > names.MAX_NAME and (
            current is None or len(rendered.name) > len(current.name)
        ):
            longest[rendered.origin] = rendered
    for origin, rendered in longest.items():
        base_length = len(rendered.base)
        allowed = names.MAX_NAME - (len(rendered.name) - base_length)
        yield parsed.diagnostic(
            origin,
            f"name is {base_length} characters, too long for {rendered.owner}: at most {allowed}, so that "
            f'the name "{rendered.generated}" fits in {names.MAX_NAME}',
        )
