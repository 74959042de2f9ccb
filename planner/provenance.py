"""Where a planned value comes from: each changed field of a plan traced back to the file, line and
column that set it (`spec.replicas: 2 → 5 (from envs/production.yaml:12:5)`), so a reviewer of a
composed plan sees which environment or base file a change is in.

The trace is by value, under the plan entry that renders the object (`planner.render.plan_entries`):
the scalars the entry declares whose value is the field's new value, of the same type. When several
match, the one with the field's own key name wins (`replicas` for `.spec.replicas`); when that still
leaves more than one, or none, the field gets no origin — a guess would mislead. Secret values are
never traced (the plan keeps no scalar of them).
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from planner.changeset import Change, ChangeSet, FieldChange
from planner.plan.model import Plan, Source
from planner.render.plan_entries import entry_paths

_ENTRY = re.compile(r"^[A-Za-z]+\[\d+\]")
_TRAILING_ITEMS = re.compile(r"(\[[^\]]*\])+$")


def with_origins(changeset: ChangeSet, plan: Plan) -> ChangeSet:
    """`changeset` with the origin of each changed field's new value, where one plan value set it."""
    if not plan.source.scalars:
        return changeset
    entries = entry_paths(plan)
    declared = _scalars_by_entry(plan.source.scalars)
    changes = tuple(_traced(change, entries, declared, plan.source) for change in changeset.changes)
    return dataclasses.replace(changeset, changes=changes)


def _scalars_by_entry(scalars: Mapping[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    grouped: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for path, value in scalars.items():
        if entry := _ENTRY.match(path):
            grouped[entry.group()].append((path, value))
    return grouped


def _traced(
    change: Change,
    entries: Mapping[tuple[str, str], str],
    declared: Mapping[str, list[tuple[str, Any]]],
    source: Source,
) -> Change:
    entry = entries.get((change.ref.kind, change.ref.name))
    if entry is None or not change.fields:
        return change
    top = entry.split(".", 1)[0]  # `workloads[0]` of `workloads[0].ingress`
    candidates = [(path, value) for path, value in declared.get(top, ()) if _under(path, entry)]
    fields = tuple(_with_origin(field, candidates, source) for field in change.fields)
    return dataclasses.replace(change, fields=fields)


def _under(path: str, entry: str) -> bool:
    return path == entry or path.startswith((f"{entry}.", f"{entry}["))


def _with_origin(field: FieldChange, candidates: list[tuple[str, Any]], source: Source) -> FieldChange:
    path = origin_path(field, candidates)
    if path is None:
        return field
    where = source.positions.get(path)
    if where is None:
        return field
    return dataclasses.replace(field, origin=f"{source.file_of(where)}:{where.line}:{where.column}")


def origin_path(field: FieldChange, candidates: list[tuple[str, Any]]) -> str | None:
    """The one plan path among `candidates` (path, value) that set `field`'s new value, or None."""
    after = field.after
    if after is None or isinstance(after, dict | list):
        return None
    same = [path for path, value in candidates if type(value) is type(after) and value == after]
    if len(same) > 1:
        key = last_key(field.path)
        same = [path for path in same if last_key(path) == key]
    return same[0] if len(same) == 1 else None


def last_key(path: str) -> str:
    """The last key of a field or plan path: `image` of `.spec.containers[name=web].image`, `PORT` of
    `workloads[0].env.PORT`, `x` of `.metadata.annotations["x"]`, `containers` of `.containers[0]`."""
    if path.endswith('"]'):
        return path[path.rfind('["') + 2 : -2]
    return _TRAILING_ITEMS.sub("", path).rsplit(".", 1)[-1]
