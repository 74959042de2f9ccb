"""A plan file as the one Plan object it means (`planner build`), as `kustomize build` prints its result.

The file is read and its imports merged (`imports.py`): the object holds every value merged, no
`imports` and no `!default`/`!remove`, `apiVersion`, `kind` and `metadata` first and the rest in merged
order. The object is for the controller, which reads neither files nor its own environment for a plan,
so what a Plan object refuses is refused here, each at the entry of the file that wrote it: a secret
value `valueFrom.env` or `valueFrom.file` (the message `load_plan_object` gives), a file with
SOPS-encrypted values, whose metadata cannot cover a merged object, and `charts` (which the controller
would render with an engine it may not have). The objects of `manifestFiles` are read (as the loader
reads them, confined to the repository), and those each `kustomize` directory renders (`kustomized`,
with Kustomize itself), and written under `manifests`, as `kustomize build` inlines its resources. A secret value written literally would be printed: refused too, unless
`show_secrets` (as `render`
prints them only with `--show-secrets`); `valueFrom.secretKeyRef` is kept as it is, read by the
controller from the plan's namespace.

`explained_object_of` (`planner build --explain`) gives the same object with, for each scalar value,
the file, line and column that set it, the file named relative to the plan file's directory. The
merge kept those positions (`Position.file`), so nothing is read again. Its output is for reading, not
for the cluster: a literal secret value is shown as `***` (its value with --show-secrets) instead of
refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from planner.errors import Diagnostic
from planner.plan.imports import resolve_imports
from planner.plan.kustomized import KUSTOMIZE, kustomized_documents
from planner.plan.raw import Node
from planner.plan.raw_manifests import read_manifests
from planner.plan.secrets import literal_secret_paths, resolve_secrets, unread_secrets
from planner.plan.source import ParsedFile, child_path
from planner.sops.metadata import SOPS

HEAD = ("apiVersion", "kind", "metadata")
INLINED = ("manifestFiles", KUSTOMIZE)  # read here, their objects written under `manifests`
CHARTS_REFUSED = (
    "charts cannot be used in a Plan object: the controller reads no files for a plan; "
    "render the charts into `manifests:` instead"
)
LITERAL_SECRET_REFUSED = (
    "a literal secret value would be printed: pass --show-secrets to print it, or read it "
    "valueFrom.secretKeyRef (a Secret in the plan's namespace)"
)

SEALED_REFUSED = (
    "a file with SOPS-encrypted values cannot be merged into a Plan object: its sops metadata covers "
    "that file alone. A plan file that imports nothing is its Plan object already (kubectl apply -f it), "
    "or let the controller read the files as they are (--plans)"
)

MASK = "***"


def plan_object_of(parsed: ParsedFile, *, show_secrets: bool) -> dict[str, Any] | list[Diagnostic]:
    """The Plan object `parsed` means, its imports merged in; or every reason it cannot be one."""
    merged = resolve_imports(parsed)
    if isinstance(merged, list):
        return merged
    return _object_of(merged, refuse_literals=not show_secrets)


def explained_object_of(
    parsed: ParsedFile, *, show_secrets: bool
) -> tuple[dict[str, Any], dict[str, str]] | list[Diagnostic]:
    """The Plan object `parsed` means and, by path (`workloads[0].image`), where each scalar value in it
    was set (`../base/app.yaml:7:15`); literal secret values `***` unless `show_secrets`. Or every
    reason it cannot be a Plan object, as `plan_object_of` says them."""
    merged = resolve_imports(parsed)
    if isinstance(merged, list):
        return merged
    built = _object_of(merged, refuse_literals=False)
    if isinstance(built, list):
        return built
    if not show_secrets:
        built = _masked(built, "", frozenset(literal_secret_paths(built)))
    directory = Path(parsed.file).parent
    origins = {
        path: f"{os.path.relpath(merged.file_of(where), directory)}:{where.line}:{where.column}"
        for path, where in merged.values.items()
    }
    return built, origins


def _with_files_inlined(merged: ParsedFile, data: dict[str, Any]) -> tuple[dict[str, Any], list[Diagnostic]]:
    """`data` with the objects its `manifestFiles` match and its `kustomize` directories render appended
    to `manifests`, in the order the loader reads them, and both keys gone: the controller reads no
    files, so the object carries them (charts are refused)."""

    def rendered(
        parsed: ParsedFile, plan: Node, problems: list[Diagnostic]
    ) -> Iterator[tuple[ParsedFile, str]]:
        yield from ((documents, "") for documents in kustomized_documents(parsed, plan, problems))

    entries, problems = read_manifests(merged, rendered)
    from_files = [entry.data for entry in entries if entry.parsed is not merged]
    inlined = {key: value for key, value in data.items() if key not in INLINED}
    inlined["manifests"] = [*data.get("manifests", ()), *from_files]
    return inlined, problems


def _masked(data: Any, path: str, secrets: frozenset[str]) -> Any:
    if path in secrets:
        return MASK
    if isinstance(data, dict):
        return {key: _masked(value, child_path(path, key), secrets) for key, value in data.items()}
    if isinstance(data, list):
        return [_masked(value, child_path(path, index), secrets) for index, value in enumerate(data)]
    return data


def _object_of(merged: ParsedFile, *, refuse_literals: bool) -> dict[str, Any] | list[Diagnostic]:
    if merged.sealed:
        return [sealed.diagnostic(SOPS, SEALED_REFUSED, at_value=False) for sealed in merged.sealed]
    _, problems = resolve_secrets(merged, {}, refs=unread_secrets, local=False)
    data: dict[str, Any] = merged.data if isinstance(merged.data, dict) else {}
    if any(key in data for key in INLINED):
        data, unread = _with_files_inlined(merged, data)
        problems += unread
    if "charts" in data:
        problems.append(merged.diagnostic("charts", CHARTS_REFUSED, at_value=False))
    if refuse_literals:
        problems += [merged.diagnostic(path, LITERAL_SECRET_REFUSED) for path in literal_secret_paths(data)]
    if problems:
        return sorted(problems)
    head = {key: data[key] for key in HEAD if key in data}
    return {**head, **{key: value for key, value in data.items() if key not in head}}
