"""A plan file as the one Plan object it means (`planner build`), as `kustomize build` prints its result.

The file is read and its imports merged (`imports.py`): the object holds every value merged, no
`imports` and no `!default`/`!remove`, `apiVersion`, `kind` and `metadata` first and the rest in merged
order. The object is for the controller, which reads neither files nor its own environment for a plan,
so what a Plan object refuses is refused here, each at the entry of the file that wrote it: a secret
value `valueFrom.env` or `valueFrom.file` (the message `load_plan_object` gives) and `manifestFiles`.
A secret value written literally would be printed: refused too, unless `show_secrets` (as `render`
prints them only with `--show-secrets`); `valueFrom.secretKeyRef` is kept as it is, read by the
controller from the plan's namespace.
"""

from __future__ import annotations

from typing import Any

from planner.errors import Diagnostic
from planner.plan.imports import resolve_imports
from planner.plan.secrets import literal_secret_paths, resolve_secrets, unread_secrets
from planner.plan.source import ParsedFile

HEAD = ("apiVersion", "kind", "metadata")
MANIFEST_FILES_REFUSED = (
    "manifestFiles cannot be used in a Plan object: the controller reads no files for a plan; "
    "write those manifests under `manifests:` instead"
)
LITERAL_SECRET_REFUSED = (
    "a literal secret value would be printed: pass --show-secrets to print it, or read it "
    "valueFrom.secretKeyRef (a Secret in the plan's namespace)"
)


def plan_object_of(parsed: ParsedFile, *, show_secrets: bool) -> dict[str, Any] | list[Diagnostic]:
    """The Plan object `parsed` means, its imports merged in; or every reason it cannot be one."""
    merged = resolve_imports(parsed)
    if isinstance(merged, list):
        return merged
    _, problems = resolve_secrets(merged, {}, refs=unread_secrets, local=False)
    data: dict[str, Any] = merged.data if isinstance(merged.data, dict) else {}
    if "manifestFiles" in data:
        problems.append(merged.diagnostic("manifestFiles", MANIFEST_FILES_REFUSED, at_value=False))
    if not show_secrets:
        problems += [merged.diagnostic(path, LITERAL_SECRET_REFUSED) for path in literal_secret_paths(data)]
    if problems:
        return sorted(problems)
    head = {key: data[key] for key in HEAD if key in data}
    return {**head, **{key: value for key, value in data.items() if key not in head}}
