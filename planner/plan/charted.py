"""Helm charts (`charts:`): the objects a chart renders, read as the documents of a manifest file are,
so they join the plan as `manifestFiles` objects do (checks, ApplySet membership, diff, ordering, wait,
prune, generations), each knowing its chart (`RawManifest.origin`, `chart/<name>`).

Helm renders (`helm_engine`, the one seam to it), while the plan loads, as `helm template` would: the
chart's `crds/` files first (unless `includeCRDs: false`), then its templates in path order, split on
Helm's document separator, NOTES.txt left out. A chart that does not render, or whose Chart.yaml names
another `version` than the plan expects, is a plan error at the entry, before anything is written.

Hooks become edges of the plan's graph, the part of a Helm release planner can honour the same way:
`pre-install`/`pre-upgrade` objects are dependencies of the chart's other objects (a Job among them is
waited for until complete), `post-install`/`post-upgrade` ones depend on all of them, and within a
phase a lower `helm.sh/hook-weight` goes first. An object that is both (a hook Job's ServiceAccount)
goes first. `test` hooks are never run (`helm test` runs them): left out, with a warning unless the
entry says `skipTests`. Delete and rollback hooks are plan errors naming the object: planner keeps every
object a plan renders as a member, so it has no moment to run them, and never drops one silently.

A hook Job runs once per rendered form, as a workload's Job runs once per run-key: it carries a run-key
(`planner.dev/run-key`) over the whole object as Helm rendered it, so it runs again when any of it
changes, not on every apply. Its delete policies: `before-hook-creation` (Helm's default) is what a
changed run-key does anyway (the old Job is replaced); `hook-succeeded`/`hook-failed` become a
`delete-hook` task after its wait (`planner.graph`), and the run recorded under its run-key keeps the
next plan from creating the deleted Job again. Another hook object (a hook Job's ServiceAccount and
RBAC, a ConfigMap) "succeeds" once created, as in Helm: `hook-succeeded` deletes it after its phase's
hook Jobs ran (Helm deletes a phase's succeeded hooks once all of it succeeded), and `hook-failed` never
applies. It runs once per rendered form too: its run-key covers itself and its phase's Job run-keys,
so it is created again (and deleted again) when it changes or a Job of its phase runs again, which may
need it. On a Pod, whose run would have to be waited for, those policies are a plan error.

Values: `valuesFiles` in order, then `values`, then `secretValues` (the loader resolved its leaves, as
it does `secrets[].data`, and masks the literal ones in the text a generation keeps: `redact`).

Confinement follows `kustomize`: the chart and the values files are relative to the file naming them,
absolute paths are refused, and nothing may lead out of the repository. A chart from an HTTP chart
repository (`repo:`, a pinned `version`) is fetched and cached by digest (`chart_repository`), with the
entry's `credentials` when it has them (resolved by the loader as every secret value is: from the
environment or a file for the CLI, from a Secret as the tenant for a Plan object); a chart in an OCI
registry (`chart: oci://…`) likewise, through the OCI distribution API (`oci_registry`), into the same
cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from planner.errors import Diagnostic
from planner.kinds import declared_kinds, group_of, known
from planner.objects import (
    ANNOTATION_RUN_KEY,
    HOOK_DELETE_POLICY,
    HOOKS_AFTER,
    HOOKS_BEFORE,
    canonical_json,
    hook_delete_policies,
    hook_phase,
    hooks_of,
)
from planner.plan.chart_repository import Credentials, fetch_chart
from planner.plan.helm_engine import Capabilities, ChartFailure, RenderedChart, render_chart
from planner.plan.imports import outside_repository, repository_root
from planner.plan.input_limits import read_text
from planner.plan.model import ChartRelease
from planner.plan.oci_registry import fetch_oci_chart, is_oci
from planner.plan.raw import Node, root
from planner.plan.raw_manifests import DEPENDS_ON, leaves
from planner.plan.source import ParsedFile, child_path, parse_documents

CHARTS = "charts"
SECRET_VALUES = "secretValues"
HOOK_WEIGHT = "helm.sh/hook-weight"
TESTS = frozenset({"test", "test-success", "test-failure"})
DELETE_POLICIES = frozenset({"before-hook-creation", "hook-succeeded", "hook-failed"})
HOOK_SUCCEEDED = "hook-succeeded"
AFTER_RUN_POLICIES = frozenset({HOOK_SUCCEEDED, "hook-failed"})
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")  # Helm's own (releaseutil.SplitManifests)


@dataclass
class ChartOutput:
    """The charts of one plan as they rendered: their documents (with each one's origin) and releases."""

    documents: list[tuple[ParsedFile, str]]
    releases: list[ChartRelease]


def chart_documents(
    parsed: ParsedFile,
    plan: Node,
    problems: list[Diagnostic],
    capabilities: Capabilities,
    secrets: Mapping[str, str] | None = None,
) -> ChartOutput:
    """The rendered documents of each chart entry, in order; problems go to `problems` at the entry.
    `secrets` holds the resolved secret values by path, the leaves of each entry's `secretValues`."""
    output = ChartOutput([], [])
    metadata = plan.child("metadata")
    plan_namespace = (metadata.text("namespace") if metadata else None) or ""
    real_root = Path(os.path.realpath(repository_root(Path(parsed.file))))
    seen: set[str] = set()
    for item in plan.items(CHARTS):
        name, chart = item.text("name"), item.text("chart")
        if name is None or chart is None:
            continue  # the schema check reports it
        if name in seen:
            problems.append(
                parsed.diagnostic(
                    item.at("name"), f"a second chart named {name!r}: release names are unique in a plan"
                )
            )
            continue
        seen.add(name)
        if not plan_namespace and not item.text("namespace"):
            problems.append(
                parsed.diagnostic(
                    item.at("name"),
                    f"chart {name!r} needs a namespace (its .Release.Namespace): set `namespace` on it, or "
                    "the plan's metadata.namespace",
                )
            )
            continue
        found = _one_chart(parsed, item, real_root, plan_namespace, capabilities, secrets or {})
        if isinstance(found, list):
            problems += found
            continue
        documents, release, warnings = found
        problems += warnings
        output.documents.append((documents, f"chart/{name}"))
        output.releases.append(release)
    return output


def chart_files_in(parsed: ParsedFile) -> tuple[Path, ...]:
    """The files the chart entries of a parsed plan read (each chart's files, its values files): those
    whose change may change what it renders."""
    plan = root(parsed.data)
    if plan is None:
        return ()
    real_root = Path(os.path.realpath(repository_root(Path(parsed.file))))
    files: list[Path] = []
    for item in plan.items(CHARTS):
        chart = _local(item)
        base = _base(parsed, item.at("chart"))
        if chart is not None and _confined(base / chart, chart, real_root, "chart") is None:
            files += [base / chart] if (base / chart).is_file() else sorted(_files_under(base / chart))
        for path, written in item.strings("valuesFiles"):
            if _confined(_base(parsed, path) / written, written, real_root, "values file") is None:
                files.append(_base(parsed, path) / written)
    return tuple(files)


def _local(item: Node) -> str | None:
    """The entry's chart when it is a path beside the plan (not a chart repository's or registry's)."""
    chart = item.text("chart")
    return None if chart is None or item.text("repo") is not None or is_oci(chart) else chart


def _files_under(directory: Path) -> Iterator[Path]:
    for folder, _, names in os.walk(directory):
        yield from (Path(folder) / name for name in sorted(names))


def _base(parsed: ParsedFile, path: str) -> Path:
    """The directory a relative path written at `path` is relative to: that of the file that wrote it (an
    imported fragment's own; with an environment's chart entry merged over its base's, each field's)."""
    return Path(parsed.file_of(parsed.position(path))).parent


def _one_chart(
    parsed: ParsedFile,
    item: Node,
    real_root: Path,
    plan_namespace: str,
    capabilities: Capabilities,
    secrets: Mapping[str, str],
) -> tuple[ParsedFile, ChartRelease, list[Diagnostic]] | list[Diagnostic]:
    name = str(item.text("name"))
    credentials = _credentials(item, secrets)
    if credentials is False:
        return []  # a value that did not resolve is reported where it is written; nothing is fetched
    path = _chart_path(parsed, item, real_root, credentials if isinstance(credentials, Credentials) else None)
    if isinstance(path, Diagnostic):
        return [path]
    given = _values(parsed, item, real_root)
    if isinstance(given, Diagnostic):
        return [given]
    plain, origins = given
    secret_values = item.child(SECRET_VALUES)
    hidden = _resolved_tree(secret_values, secrets) if secret_values is not None else {}
    values = _merge(plain, hidden)
    namespace = item.text("namespace") or plan_namespace
    rendered = render_chart(path, release=name, namespace=namespace, values=values, capabilities=capabilities)
    if isinstance(rendered, ChartFailure):
        return [
            parsed.diagnostic(item.at("chart"), f"Helm could not render chart {name!r}: {rendered.message}")
        ]
    expected = item.text("version")
    if expected is not None and expected != rendered.version:
        return [
            parsed.diagnostic(
                item.at("version"),
                f"chart {name!r} is {rendered.name} {rendered.version}, not the version {expected} the plan "
                "expects: change `version` to upgrade (or downgrade) it",
            )
        ]
    found = _documents(parsed, item, rendered, namespace if namespace != plan_namespace else None)
    if isinstance(found, list):
        return found
    documents, release, warnings = found
    release = dataclasses.replace(
        release, values=plain, origins=origins, secrets=dict(value_leaves(hidden)) if hidden else {}
    )
    return documents, release, warnings


def _credentials(item: Node, secrets: Mapping[str, str]) -> Credentials | Literal[False] | None:
    """The entry's repository credentials as the loader resolved them (None: it has none; False: one of
    them did not resolve)."""
    given = item.child("credentials")
    if given is None:
        return None
    username, password = secrets.get(given.at("username")), secrets.get(given.at("password"))
    return False if username is None or password is None else Credentials(username, password)


def _chart_path(
    parsed: ParsedFile, item: Node, real_root: Path, credentials: Credentials | None
) -> Path | Diagnostic:
    """The chart's directory or archive: beside the plan, or fetched from its repository or OCI registry
    (a pinned version, cached by digest: `chart_repository`, `oci_registry`)."""
    chart, repo, version = str(item.text("chart")), item.text("repo"), item.text("version")
    if repo is not None and is_oci(chart):
        return parsed.diagnostic(
            item.at("repo"), "an oci:// chart names its registry itself: leave out `repo`"
        )
    if _local(item) is not None and item.child("credentials") is not None:
        return parsed.diagnostic(
            item.at("credentials"),
            "`credentials` are for a chart repository or an OCI registry: set `repo`, or an oci:// `chart`",
        )
    if _local(item) is not None:
        base = _base(parsed, item.at("chart"))
        problem = _confined(base / chart, chart, real_root, "chart")
        return base / chart if problem is None else parsed.diagnostic(item.at("chart"), problem)
    if version is None:
        where = "an OCI registry" if is_oci(chart) else "a repository"
        return parsed.diagnostic(item.path, f"a chart from {where} needs its `version`: pin the one to apply")
    if is_oci(chart):
        fetched = fetch_oci_chart(chart, version, credentials)
        return fetched if isinstance(fetched, Path) else parsed.diagnostic(item.at("chart"), fetched)
    fetched = fetch_chart(str(repo), chart, version, credentials)
    return fetched if isinstance(fetched, Path) else parsed.diagnostic(item.at("repo"), fetched)


def _documents(
    parsed: ParsedFile, item: Node, rendered: RenderedChart, namespace: str | None
) -> tuple[ParsedFile, ChartRelease, list[Diagnostic]] | list[Diagnostic]:
    name, chart = str(item.text("name")), str(item.text("chart"))
    kept: list[tuple[str, str]] = []
    tests: list[str] = []
    problems: list[Diagnostic] = []
    for source, document, head in split_rendered(rendered, include_crds=item.data.get("includeCRDs", True)):
        hooks = hooks_of(head)
        if hooks & TESTS:
            tests.append(_handle(head))
            continue
        problem = _malformed(head, source) or _unsupported(head, hooks)
        if problem is not None:
            problems.append(parsed.diagnostic(item.at("chart"), f"chart {name!r}: {problem}"))
            continue
        kept.append((source, f"# Source: {source}\n{document}\n"))
    if problems:
        return problems
    output = "---\n".join(text for _, text in kept)
    documents = parse_documents(f"{chart} (chart {name}: Helm's output)", output)
    if isinstance(documents, Diagnostic):
        message = f"chart {name!r} rendered unreadable YAML: {documents.message}"
        return [parsed.diagnostic(item.at("chart"), message)]
    objects = [document for document in documents.data if isinstance(document, dict)]
    _key_runs(objects)
    # crds/ files come first, before the hooks too, as Helm installs them (the kind order keeps them first)
    _order_hooks(objects[sum(1 for source, _ in kept if source.startswith("crds/")) :])
    if namespace is not None:
        _place(objects, namespace)
    warnings = []
    if tests and not item.data.get("skipTests", False):
        warnings.append(
            parsed.diagnostic(
                item.at("name"),
                f"chart {name!r}: its test hooks ({', '.join(tests)}) are left out: planner never runs "
                "them (`helm test` does); `skipTests: true` says so quietly",
                warning=True,
            )
        )
    return documents, ChartRelease(name, chart, rendered.name, rendered.version), warnings


def split_rendered(
    rendered: RenderedChart, *, include_crds: bool
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The objects of a rendered chart as `helm template` prints them, in its order of files: (file, the
    document's text, its data), the crds/ files first when included, empty documents left out."""
    crds = [(f"crds/{file}", text) for file, text in rendered.crds] if include_crds else []
    for source, text in [*crds, *rendered.templates]:
        for document in _SEPARATOR.split(text):
            head = _head(document)
            if head is not None:
                yield source, document.strip(), head


def _head(document: str) -> dict[str, Any] | None:
    """A document's data when it holds an object (a document of comments only, or empty, is none)."""
    if not document.strip():
        return None
    try:
        data = YAML(typ="safe").load(document)
    except YAMLError:
        return {"kind": "", "metadata": {}}  # kept: parsing the whole output reports where it is broken
    return data if isinstance(data, dict) else None


def _annotations(head: Mapping[str, Any]) -> dict[str, Any]:
    metadata = head.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _handle(head: Mapping[str, Any]) -> str:
    metadata = head.get("metadata")
    return f"{head.get('kind')}/{metadata.get('name') if isinstance(metadata, dict) else None}"


def _malformed(head: Mapping[str, Any], source: str) -> str | None:
    """What keeps a rendered object from being read as one at all: metadata, or its labels or
    annotations, that are no mapping (the hooks' edges and run-keys are written there)."""
    metadata = head.get("metadata", {})
    fields = {"metadata": metadata} | (
        {field: metadata.get(field) for field in ("labels", "annotations")}
        if isinstance(metadata, dict)
        else {}
    )
    wrong = [field for field, value in fields.items() if value is not None and not isinstance(value, dict)]
    if not wrong:
        return None
    return f"{source} renders a {head.get('kind') or 'document'} whose {wrong[0]} is not a mapping"


def _unsupported(head: Mapping[str, Any], hooks: frozenset[str]) -> str | None:
    if not hooks:
        return None
    others = sorted(hooks - HOOKS_BEFORE - HOOKS_AFTER)
    if others:
        return (
            f"{_handle(head)} is a {', '.join(others)} hook, which planner cannot run: it runs only the "
            "pre/post-install and pre/post-upgrade hooks, as part of an apply"
        )
    policies = hook_delete_policies(head)
    unsupported = sorted(policies - DELETE_POLICIES)
    if unsupported:
        return (
            f"{_handle(head)} has {HOOK_DELETE_POLICY} {', '.join(unsupported)}, which planner does not "
            f"know: it honours {', '.join(sorted(DELETE_POLICIES))}"
        )
    if head.get("kind") == "Pod" and policies & AFTER_RUN_POLICIES:
        return (
            f"{_handle(head)} has {HOOK_DELETE_POLICY} {', '.join(sorted(policies & AFTER_RUN_POLICIES))}, "
            "which planner cannot honour on a Pod (its run would have to be waited for and recorded, as a "
            "Job's is, so that the deleted Pod is not created again): make the hook a Job"
        )
    return None


def _key_runs(objects: list[dict[str, Any]]) -> None:
    """Each hook Job's run-key: a hash of the Job as Helm rendered it, so it runs again when (and only
    when) any of it changes. Each other hook object that `hook-succeeded` deletes gets one too: a hash
    of itself and of its phase's hook Job run-keys, so it is created again whenever it changes or a Job
    of its phase runs again (which may need it: a hook Job's ServiceAccount), and not on every apply."""
    jobs: dict[str | None, list[str]] = {}
    for obj in objects:
        if obj.get("kind") == "Job" and hooks_of(obj):
            key = hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()
            _writable_annotations(obj)[ANNOTATION_RUN_KEY] = key
            jobs.setdefault(hook_phase(obj), []).append(key)
    for obj in objects:
        if obj.get("kind") != "Job" and HOOK_SUCCEEDED in hook_delete_policies(obj) and hook_phase(obj):
            keyed = canonical_json({"object": obj, "jobs": sorted(jobs.get(hook_phase(obj), []))})
            _writable_annotations(obj)[ANNOTATION_RUN_KEY] = hashlib.sha256(keyed.encode("utf-8")).hexdigest()


def _writable_annotations(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's annotations to add to; a template's empty `annotations:` (null) becomes a mapping."""
    metadata = obj.setdefault("metadata", {})
    if not isinstance(metadata.get("annotations"), dict):
        metadata["annotations"] = {}
    annotations: dict[str, Any] = metadata["annotations"]
    return annotations


def _order_hooks(objects: list[dict[str, Any]]) -> None:
    """Hooks as edges (`planner.dev/depends-on`): pre hooks by weight, then the chart's other objects,
    then post hooks by weight."""
    phases: dict[str, list[tuple[int, str, dict[str, Any]]]] = {"pre": [], "main": [], "post": []}
    for obj in objects:
        phase = hook_phase(obj) or "main"
        phases[phase].append((_weight(obj), _handle(obj), obj))
    earlier: list[str] = []
    for phase in ("pre", "main", "post"):
        members = phases[phase]
        for weight, handle, obj in members:
            before = [other for w, other, _ in members if w < weight] if phase != "main" else []
            _depend(obj, [target for target in [*earlier, *before] if target != handle])
        earlier += [handle for _, handle, _ in members]


def _weight(obj: Mapping[str, Any]) -> int:
    try:
        return int(str(_annotations(obj).get(HOOK_WEIGHT, 0)))
    except ValueError:
        return 0


def _depend(obj: dict[str, Any], targets: list[str]) -> None:
    if not targets:
        return
    annotations = _writable_annotations(obj)
    already = [part.strip() for part in str(annotations.get(DEPENDS_ON, "")).split(",") if part.strip()]
    annotations[DEPENDS_ON] = ",".join(dict.fromkeys([*already, *targets]))


def _place(objects: list[dict[str, Any]], namespace: str) -> None:
    """The release namespace on each namespaced object that names none (a kind neither planner nor the
    chart's CRDs know is taken as namespaced, as the plan's manifests are)."""
    declared = {(info.group, info.kind): info for info in declared_kinds(objects)}
    for obj in objects:
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict) or metadata.get("namespace"):
            continue
        key = (group_of(str(obj.get("apiVersion", ""))), str(obj.get("kind", "")))
        info = known(*key) or declared.get(key)
        if info is None or info.namespaced:
            metadata["namespace"] = namespace


def _values(
    parsed: ParsedFile, item: Node, real_root: Path
) -> tuple[dict[str, Any], dict[str, str]] | Diagnostic:
    """`valuesFiles` in order, then `values`, merged as Helm merges `-f` files; and the `file:line:column`
    that set each value, by value path (a later file's, or `values`, wins as its value does)."""
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for path, written in item.strings("valuesFiles"):
        read = _values_file(_base(parsed, path), written, real_root)
        if isinstance(read, str):
            return parsed.diagnostic(path, read)
        merged, origins = _merge(merged, read[0]), origins | read[1]
    values = item.data.get("values")
    if not isinstance(values, dict):
        return merged, origins
    return _merge(merged, values), origins | _origins(parsed, values, "", item.at("values"))


def _values_file(base: Path, written: str, real_root: Path) -> tuple[dict[str, Any], dict[str, str]] | str:
    """A values file's values and where each is written, or what is wrong with it."""
    problem = _confined(base / written, written, real_root, "values file")
    if problem is not None:
        return problem
    text = read_text(base / written, what="values file")
    if isinstance(text, Diagnostic):
        return f"{written!r}: {text.message}"
    try:
        data = YAML(typ="safe").load(text)
    except YAMLError as error:
        return f"{written!r} is not YAML: {error}".replace("\n", " ")
    if data is not None and not isinstance(data, dict):
        return f"{written!r} holds no mapping of values"
    return data or {}, _file_origins(os.path.normpath(base / written), text)


def value_path(parent: str, key: object) -> str:
    """A value's path as `plan` names it: `.controller.replicaCount`, `.tolerations[0]`, `["a.b"]`."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    text = str(key)
    return f"{parent}.{text}" if _PLAIN_KEY.fullmatch(text) else f"{parent}[{json.dumps(text)}]"


def value_leaves(values: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(value path, scalar) of every leaf of a values tree; an empty map or list is a leaf of its own."""
    if isinstance(values, dict) and values:
        for key, value in values.items():
            yield from value_leaves(value, value_path(path, key))
    elif isinstance(values, list) and values:
        for index, value in enumerate(values):
            yield from value_leaves(value, value_path(path, index))
    else:
        yield path, values


def _file_origins(name: str, text: str) -> dict[str, str]:
    """Where each value of a values file is written (none when it does not parse as a plan file would:
    Helm's reading of it decides what it holds)."""
    parsed = parse_documents(name, text)
    if isinstance(parsed, Diagnostic) or not parsed.data or not isinstance(parsed.data[0], dict):
        return {}
    return _origins(parsed, parsed.data[0], "", "[0]")


def _origins(parsed: ParsedFile, values: Any, path: str, at: str) -> dict[str, str]:
    """`file:line:column` of every node of a values tree by value path (`path`); `at` is the node's
    path in `parsed`."""
    where = parsed.position(at)
    found = {path: f"{parsed.file_of(where)}:{where.line}:{where.column}"} if path else {}
    children: Iterable[tuple[Any, Any]] = (
        values.items() if isinstance(values, dict) else enumerate(values) if isinstance(values, list) else ()
    )
    for key, value in children:
        found |= _origins(parsed, value, value_path(path, key), child_path(at, key))
    return found


def _resolved_tree(tree: Node, secrets: Mapping[str, str]) -> dict[str, Any]:
    """A `secretValues` tree with each leaf its resolved value (a leaf that did not resolve is left out:
    its problem is reported where it is written)."""
    resolved: dict[str, Any] = {}
    for key, value in tree.data.items():
        if isinstance(value, dict) and "valueFrom" not in value:
            resolved[key] = _resolved_tree(Node(tree.at(key), value), secrets)
        elif tree.at(key) in secrets:
            resolved[key] = secrets[tree.at(key)]
    return resolved


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        earlier = merged.get(key)
        merged[key] = (
            _merge(earlier, value) if isinstance(earlier, dict) and isinstance(value, dict) else value
        )
    return merged


def _confined(target: Path, written: str, real_root: Path, what: str) -> str | None:
    if os.path.isabs(written):
        return f"{written!r} is absolute: a {what} is named relative to the plan file's directory"
    if leaves(target, real_root):
        return outside_repository(written, real_root)
    if not target.exists():
        return f"no such {what}: {written!r} (relative to the plan file's directory)"
    return None
