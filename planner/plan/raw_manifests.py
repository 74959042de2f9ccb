"""Raw manifests: Kubernetes objects a plan holds as they are, inline (`manifests`) or in files beside
it (`manifestFiles`), read and checked with every problem at its own file, line and column.

A manifest file is read under the plan file's rules (`limits.py`: a regular file, at most 8 MiB, UTF-8,
bounded nesting and aliases), as multi-document YAML. `manifestFiles` are paths or globs (`**`
included) relative to the plan file's directory (an imported fragment's: to its own); an absolute path, and any match that resolves
(symlinks followed) outside that directory, is refused, so a plan reads nothing its directory does not
hold — there is no switch to allow it: keep the plan beside its manifests. A glob that matches no file
is an error (a typo must not silently drop objects, which the next apply would prune). At most
`MAX_MANIFEST_FILES` files per plan.

The checks here need no cluster: scope (a kind planner knows, or a CRD of the plan declares; any
other kind is taken as namespaced here, and placed by the cluster's discovery when the plan is made,
`planner.app.custom_kinds`), cluster-scoped objects only with `allowClusterScoped`, no field
only the API server sets (`metadata.uid`, `resourceVersion`...), one object per kind/namespace/name, none that
the plan renders itself, and dependencies (`planner.dev/depends-on`
on a manifest, `Kind/name` in a workload's `dependsOn`) that name something of the plan and form no
cycle.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from planner.errors import Diagnostic
from planner.kinds import KindInfo, declared_kinds, group_of, known
from planner.objects import LOCK_PREFIX, json_copy
from planner.plan.model import Position, RawManifest
from planner.plan.raw import Node, root
from planner.plan.schema_check import check_schema
from planner.plan.source import ParsedFile, child_path, read_documents, read_plan_file
from planner.plan.suggest import hint
from planner.plan.validate import rendered_objects

MAX_MANIFEST_FILES = 1000
DEPENDS_ON = "planner.dev/depends-on"
_GLOB_CHARACTERS = frozenset("*?[")
SERVER_SET_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
)


@dataclass(frozen=True)
class Entry:
    """One raw object where it is written: its file and its path there."""

    parsed: ParsedFile
    path: str
    data: dict[str, Any]
    origin: str = ""  # `chart/<name>` for a chart's object

    def at(self, key: str) -> str:
        return child_path(self.path, key)

    def diagnostic(self, key: str, message: str) -> Diagnostic:
        return self.parsed.diagnostic(self.at(key) if key else self.path, message, at_value=False)

    @property
    def api_version(self) -> str:
        return str(self.data["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.data["kind"])

    @property
    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = self.data["metadata"]
        return metadata

    @property
    def handle(self) -> str:
        return f"{self.kind}/{self.metadata['name']}"

    def depends_on(self) -> list[str]:
        value = (self.metadata.get("annotations") or {}).get(DEPENDS_ON)
        return [item.strip() for item in str(value).split(",") if item.strip()] if value else []


Rendered = Callable[[ParsedFile, Node, list[Diagnostic]], Iterable[tuple[ParsedFile, str]]]


def read_manifests(parsed: ParsedFile, rendered: Rendered) -> tuple[list[Entry], list[Diagnostic]]:
    """The plan's raw objects (inline first, then each file's in order, then those `rendered` gives:
    the documents of its Kustomize directories and charts, each with its origin) and the problems of
    reading them; an object with a problem is left out."""
    plan = root(parsed.data)
    if plan is None:
        return [], []
    entries = [Entry(parsed, item.path, item.data) for item in plan.items("manifests") if _whole(item.data)]
    problems: list[Diagnostic] = []
    for file in _files(parsed, plan, problems):
        documents = read_documents(file)
        if isinstance(documents, Diagnostic):
            problems.append(documents)
            continue
        entries += _document_entries(documents, problems)
    for documents, origin in rendered(parsed, plan, problems):
        entries += _document_entries(documents, problems, origin)
    return entries, problems


def _document_entries(documents: ParsedFile, problems: list[Diagnostic], origin: str = "") -> Iterator[Entry]:
    report = check_schema(documents, definition="manifest")
    problems += report.diagnostics
    bad = {diagnostic.path.partition(".")[0] for diagnostic in report.diagnostics}
    for index, item in enumerate(documents.data):
        path = child_path("", index)
        if path not in bad and _whole(item):
            yield Entry(documents, path, item, origin)


def manifest_files(path: Path) -> tuple[Path, ...]:
    """The manifest files the plan file at `path` reads now (those its `manifestFiles` match, inside
    its directory); none when it cannot be read. Whoever watches a plan file for changes watches these
    too (a file a glob comes to match later is seen at the next full resync; `load.input_files` also
    reads its imports)."""
    parsed = read_plan_file(path)
    return () if isinstance(parsed, Diagnostic) else manifest_files_in(parsed)


def manifest_files_in(parsed: ParsedFile) -> tuple[Path, ...]:
    """`manifest_files` of a parsed plan (one merged from imports: each pattern beside its fragment)."""
    plan = root(parsed.data)
    return () if plan is None else tuple(_files(parsed, plan, []))


def _whole(item: Any) -> bool:
    """Whether an item has what every later step reads (the schema reports those that do not)."""
    metadata = item.get("metadata") if isinstance(item, dict) else None
    return (
        isinstance(metadata, dict)
        and isinstance(metadata.get("name"), str)
        and all(isinstance(item.get(key), str) and item[key] for key in ("apiVersion", "kind"))
    )


def _files(parsed: ParsedFile, plan: Node, problems: list[Diagnostic]) -> Iterator[Path]:
    seen: set[Path] = set()
    for path, pattern in plan.strings("manifestFiles"):
        base = Path(parsed.file_of(parsed.position(path))).parent  # an imported fragment's: its own
        matched, problem = _matches(base, Path(os.path.realpath(base)), pattern)
        if problem is not None:
            problems.append(parsed.diagnostic(path, problem))
            continue
        for file in matched:
            real = Path(os.path.realpath(file))
            if real in seen:
                continue
            seen.add(real)
            if len(seen) > MAX_MANIFEST_FILES:
                problems.append(
                    parsed.diagnostic(path, f"more than {MAX_MANIFEST_FILES} manifest files: split the plan")
                )
                return
            yield file


def _matches(base: Path, real_base: Path, pattern: str) -> tuple[list[Path], str | None]:
    if "\x00" in pattern:  # no file name holds one; the OS calls refuse it with a ValueError
        return [], f"{pattern!r} holds a NUL character: no file is named so"
    if os.path.isabs(pattern):
        return [], f"{pattern!r} is absolute: manifest files are named relative to the plan file's directory"
    literal = not (_GLOB_CHARACTERS & set(pattern))
    matched = [base / pattern] if literal else sorted(f for f in base.glob(pattern) if not f.is_dir())
    outside = [file for file in matched if leaves(file, real_base)]
    if outside:
        return [], f"{pattern!r} leads outside the plan file's directory ({outside[0]}): refused"
    if not matched:
        return [], f"{pattern!r} matches no file beside the plan"
    if literal and not os.path.lexists(matched[0]):
        return [], f"no such file: {pattern!r} (relative to the plan file's directory)"
    return matched, None


def leaves(file: Path, real_base: Path) -> bool:
    """Whether `file`, symlinks followed, resolves outside `real_base` (a resolved directory): the rule
    that keeps manifest files in the plan's directory and imported fragments in the repository."""
    return not Path(os.path.realpath(file)).is_relative_to(real_base)


# --- checks ------------------------------------------------------------------------------------------


def manifest_diagnostics(parsed: ParsedFile, entries: list[Entry]) -> Iterator[Diagnostic]:
    """Every problem of the plan's raw objects that needs no cluster to see."""
    plan = root(parsed.data)
    if plan is None:
        return
    metadata = plan.child("metadata")
    namespace = (metadata.text("namespace") if metadata else None) or ""
    allowed = plan.data.get("allowClusterScoped") is True
    declared = {(info.group, info.kind): info for info in declared_kinds(entry.data for entry in entries)}
    rendered = {(o.kind, o.namespace, o.name): o for o in rendered_objects(plan)}
    handles = {entry.handle for entry in entries} | {entry.origin for entry in entries if entry.origin}
    runnables = {
        name
        for section in ("workloads", "sandboxes")
        for item in plan.items(section)
        if (name := item.text("name"))
    }
    first: dict[tuple[str, str, str, str], Entry] = {}
    for entry in entries:
        namespaced = _namespaced(entry, declared)
        yield from _scope_problems(entry, namespaced=namespaced, allowed=allowed)
        yield from _server_fields(entry)
        yield from _data_problems(entry)
        key = (
            group_of(entry.api_version),
            entry.kind,
            _namespace(entry, namespaced, namespace),
            entry.metadata["name"],
        )
        earlier = first.setdefault(key, entry)
        if earlier is not entry:
            where = earlier.parsed.position(earlier.path)
            yield entry.diagnostic(
                "metadata.name",
                f"{entry.handle} is already declared at {earlier.parsed.file}:{where.line}:{where.column}: "
                "one object per kind, namespace and name",
            )
        if entry.kind == "Lease" and str(key[3]).startswith(LOCK_PREFIX) and key[0] == "coordination.k8s.io":
            yield entry.diagnostic(
                "metadata.name",
                f"{entry.handle}: Leases named {LOCK_PREFIX}<plan> are planner's run locks, which only "
                "planner takes: a plan holding one would block that plan's applies",
            )
        collision = rendered.get((entry.kind, key[2], key[3]))
        if collision is not None:
            where = parsed.position(collision.origin)
            yield entry.diagnostic(
                "metadata.name",
                f"{entry.handle} collides with {collision.reference}, which the plan renders itself "
                f"({parsed.file}:{where.line}:{where.column}): rename one of them",
            )
        for target in entry.depends_on():
            if target not in handles and target not in runnables:
                yield entry.diagnostic(
                    f"metadata.annotations.{DEPENDS_ON}",
                    f'unknown dependency "{target}": expected a workload or sandbox of this plan, a '
                    "manifest as Kind/name, or a chart as chart/<name>",
                )
            elif target == entry.handle:
                yield entry.diagnostic(
                    f"metadata.annotations.{DEPENDS_ON}", f'"{target}" cannot depend on itself'
                )
    for workload in plan.items("workloads"):
        for path, target in workload.strings("dependsOn"):
            if "/" in target and target not in handles:
                yield parsed.diagnostic(path, _unknown_target(target, handles))
    yield from _cycles_through_manifests(plan, entries)


def _cycles_through_manifests(plan: Node, entries: list[Entry]) -> Iterator[Diagnostic]:
    """Dependency cycles with a manifest in them, reported once each at that manifest's annotation
    (cycles among workloads and sandboxes alone are `validate_refs`'s)."""
    edges: list[tuple[str, str]] = []
    for section in ("workloads", "sandboxes"):
        for item in plan.items(section):
            name = item.text("name")  # None for a broken entry, which the schema check reports
            edges += [(name, target) for _, target in item.strings("dependsOn")] if name else []
    by_handle: dict[str, Entry] = {}
    for entry in entries:
        by_handle.setdefault(entry.handle, entry)
        if entry.origin:
            edges.append((entry.origin, entry.handle))  # depending on a chart is depending on each member
        edges += [(entry.handle, target) for target in entry.depends_on()]
    if not by_handle or not edges:  # no manifest, or no edge: no cycle (and networkx is not imported)
        return
    import networkx as nx

    graph = nx.DiGraph(edges)
    for group in nx.strongly_connected_components(graph):
        members = [by_handle[name] for name in by_handle if name in group]
        if len(group) > 1 and members:
            first = members[0]
            inside = graph.subgraph(group)
            after = next(iter(inside.successors(first.handle)))
            cycle = [first.handle, *nx.shortest_path(inside, after, first.handle)]
            yield first.diagnostic(
                f"metadata.annotations.{DEPENDS_ON}", f"dependency cycle: {' -> '.join(cycle)}"
            )


def _namespaced(entry: Entry, declared: dict[tuple[str, str], KindInfo]) -> bool:
    group = group_of(entry.api_version)
    info = known(group, entry.kind) or declared.get((group, entry.kind))
    return True if info is None else info.namespaced


def _namespace(entry: Entry, namespaced: bool, plan_namespace: str) -> str:
    return str(entry.metadata.get("namespace") or plan_namespace) if namespaced else ""


def _unknown_target(target: str, handles: set[str]) -> str:
    """`unknown dependsOn target "chart/nope": no chart of this plan is named nope (did you mean …)`."""
    if target.startswith("chart/"):
        charts = sorted(h.removeprefix("chart/") for h in handles if h.startswith("chart/"))
        name = target.removeprefix("chart/")
        said = f"no chart of this plan is named {name}"
        return f'unknown dependsOn target "{target}": {said}{hint(name, charts, listing="charts") or " (it has none)"}'
    manifests = sorted(h for h in handles if not h.startswith("chart/"))
    said = f"no manifest of this plan is {target}"
    return f'unknown dependsOn target "{target}": {said}{hint(target, manifests, listing="manifests") or " (it has none)"}'


# What the API server decodes in core/v1 Secrets and ConfigMaps: a value it cannot read refuses the object.
_DATA_FIELDS = {
    "Secret": {"data": True, "stringData": False},
    "ConfigMap": {"data": False, "binaryData": True},
}


def _data_problems(entry: Entry) -> Iterator[Diagnostic]:
    """A Secret's or ConfigMap's data that is not a map of strings, or whose base64 fields do not decode:
    the API would refuse the object, after the apply had begun."""
    fields = _DATA_FIELDS.get(entry.kind) if entry.api_version == "v1" else None
    for field, encoded in (fields or {}).items():
        value = entry.data.get(field)
        if value is None:
            continue
        if not isinstance(value, dict):
            yield entry.diagnostic(field, f"{entry.handle}: {field} must be a map of keys to strings")
            continue
        for key, item in value.items():
            if not isinstance(item, str):
                yield entry.diagnostic(
                    f"{field}.{key}", f"{entry.handle}: {field}.{key} must be a string (quote it)"
                )
            elif encoded and not _is_base64(item):
                yield entry.diagnostic(
                    f"{field}.{key}",
                    f"{entry.handle}: {field}.{key} is not base64: the API refuses it (write the value "
                    f"under {'stringData' if entry.kind == 'Secret' else 'data'}, or encode it)",
                )


def _is_base64(text: str) -> bool:
    """Go's standard encoding, as the API server decodes `[]byte` fields (line breaks are skipped)."""
    try:
        base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except binascii.Error:
        return False
    return True


def _server_fields(entry: Entry) -> Iterator[Diagnostic]:
    """Metadata only the API server sets (a manifest copied from `kubectl get -o yaml`): applied, it
    would fail (a stale resourceVersion, another uid). A `status` is left out by render instead, as
    the API server ignores it on write (upstream CRD files often carry an empty one)."""
    found = [f"metadata.{key}" for key in SERVER_SET_METADATA if key in entry.metadata]
    for path in found:
        yield entry.diagnostic(path, f"{path} is set by the API server, not by a manifest: remove it")


def _scope_problems(entry: Entry, *, namespaced: bool, allowed: bool) -> Iterator[Diagnostic]:
    problems = scope_problems(entry.data, namespaced=namespaced, allowed=allowed)
    return (entry.diagnostic(key, message) for key, message in problems)


def scope_problems(obj: Mapping[str, Any], *, namespaced: bool, allowed: bool) -> Iterator[tuple[str, str]]:
    """(key, message) of what is wrong with a raw object's scope: a cluster-scoped one needs the plan's
    `allowClusterScoped` and names no namespace. Known here for planner's kinds and the plan's CRDs; the
    cluster's discovery answers for the others when the plan is made (`planner.app.custom_kinds`)."""
    if namespaced:
        return
    kind = obj.get("kind")
    if not allowed:
        yield (
            "kind",
            f"{kind} is cluster-scoped: set `allowClusterScoped: true` on the plan to manage "
            "cluster-scoped objects (apply then also prunes them)",
        )
    if (obj.get("metadata") or {}).get("namespace"):
        yield "metadata.namespace", f"{kind} is cluster-scoped: it has no namespace"


# --- the model ---------------------------------------------------------------------------------------


def raw_manifests(entries: list[Entry]) -> tuple[RawManifest, ...]:
    """The model of checked entries: the objects as written (a deep copy), where they are written."""
    return tuple(_raw_manifest(entry, entry.parsed.position(entry.path)) for entry in entries)


def _raw_manifest(entry: Entry, where: Position) -> RawManifest:
    return RawManifest(
        object=json_copy(entry.data),
        file=entry.parsed.file_of(where),  # an imported fragment's, for an inline manifest it sets
        path=entry.path,
        position=replace(where, file=""),
        depends_on=tuple(entry.depends_on()),
        origin=entry.origin,
    )
