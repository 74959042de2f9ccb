"""Where a planned value comes from: each changed field of a plan traced back to the file, line and
column that set it (`spec.replicas: 2 → 5 (from envs/production.yaml:12:5)`), so a reviewer of a
composed plan sees which environment or base file a change is in.

The trace is by value, under the plan entry that renders the object (`planner.render.plan_entries`):
the scalars the entry declares whose value is the field's new value, of the same type. When several
match, the one with the field's own key name wins (`replicas` for `.spec.replicas`); when that still
leaves more than one, or none, the field gets no origin — a guess would mislead. Secret values are
never traced (the plan keeps no scalar of them).

A chart's values are traced at the chart instead (`with_chart_changes`): its values as given (with
the file, line and column of each, `planner.plan.charted`) are compared leaf by leaf with those the
applied generation recorded (`recorded_charts`), and each chart whose version or values changed is
told with the objects it changed. Its secret values are recorded and compared only as digests keyed
with the plan's digest key, so a change shows without anything that lets a value be guessed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.changeset import Change, ChangeSet, ChartChange, FieldChange, ValueChange
from planner.plan.charted import value_path
from planner.plan.model import ChartRelease, Plan, Source
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


# --- charts: what changed in a chart's inputs since the applied generation ------------------------------

_ABSENT = object()


def recorded_charts(changeset: ChangeSet, plan: Plan, key: bytes | None) -> dict[str, dict[str, Any]]:
    """The charts' inputs as a generation records them, by release: the version, the values as given
    (`secretValues` left out), the objects it renders (so a later plan knows which of its deletes are
    the chart's), and a digest of each secret value keyed with the plan's digest key (kept in its
    ApplySet parent, never beside the record's digests), which tells a changed secret value and nothing
    else: an unkeyed hash of a short value would let it be guessed. Without a key, no digests."""
    return {
        chart.name: {
            "version": chart.version,
            "values": dict(chart.values),
            "objects": sorted(str(c.ref) for c in _members(changeset, plan, chart)),
            **({"secretDigests": secret_digests(chart.secrets, key)} if key is not None else {}),
        }
        for chart in plan.charts
    }


def _members(changeset: ChangeSet, plan: Plan, chart: ChartRelease) -> list[Change]:
    """The changes (no-ops too) of the objects the chart renders now."""
    raws = plan.chart_members.get(f"chart/{chart.name}", ())
    refs = {_ref_key(raw.object, changeset.namespace) for raw in raws}
    return [
        c
        for c in changeset.changes
        if c.desired is not None and _ref_key(c.desired, changeset.namespace) in refs
    ]


def secret_digests(secrets: Mapping[str, str], key: bytes) -> dict[str, str]:
    """HMAC-SHA256 of each secret value under `key`, by value path (the path is in the message, so two
    equal values at two paths do not show as equal)."""
    return {
        path: hmac.new(key, f"{path}\0{value}".encode(), hashlib.sha256).hexdigest()
        for path, value in sorted(secrets.items())
    }


def value_changes(before: Any, after: Any, origins: Mapping[str, str], path: str = "") -> list[ValueChange]:
    """Each value that differs between two values trees, leaf by leaf (maps by key, lists by index; a
    key or item only one side has is added or removed whole), in the order of `after` then what it
    dropped, with the origin of each new value from `origins` (by value path)."""
    if _same(before, after):
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        keys = [*after, *(key for key in before if key not in after)]
        return [
            change
            for key in keys
            for change in value_changes(
                before.get(key, _ABSENT), after.get(key, _ABSENT), origins, value_path(path, key)
            )
        ]
    if isinstance(before, list) and isinstance(after, list):
        return [
            change
            for index in range(max(len(before), len(after)))
            for change in value_changes(
                before[index] if index < len(before) else _ABSENT,
                after[index] if index < len(after) else _ABSENT,
                origins,
                value_path(path, index),
            )
        ]
    return [
        ValueChange(
            path=path,
            before=None if before is _ABSENT else before,
            after=None if after is _ABSENT else after,
            origin=origins.get(path) if after is not _ABSENT else None,
        )
    ]


def _same(before: Any, after: Any) -> bool:
    """Equal as YAML reads them: `1`, `1.0` and `true` are three values."""
    if before is _ABSENT or after is _ABSENT:
        return before is after
    return json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)


def secret_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[ValueChange]:
    """Each secret value whose digest differs, was added or removed: only that it changed."""
    return [
        ValueChange(path=path, before=None, after=None, secret=True)
        for path in sorted({*before, *after})
        if before.get(path) != after.get(path)
    ]


@dataclass(frozen=True, kw_only=True)
class AppliedCharts:
    """The charts of the generation the cluster is at: `charts` (release → `<chart>-<version>`, always
    recorded) and `inputs` (`recorded_charts`' form; empty in a generation recorded before it was)."""

    charts: Mapping[str, str]
    inputs: Mapping[str, Mapping[str, Any]]


def with_chart_changes(
    changeset: ChangeSet, plan: Plan, applied: AppliedCharts | None, key: bytes | None
) -> ChangeSet:
    """`changeset` with each chart whose version or values changed since the `applied` generation (none
    before the first), and each chart of a generation that did not record values whose objects change,
    listing the objects it changed; `key` digests its secret values as `recorded_charts` did."""
    if applied is None:
        return changeset
    found = []
    for chart in plan.charts:
        inputs = applied.inputs.get(chart.name) or {}
        dropped = frozenset(inputs.get("objects") or ())  # those a delete here takes out of the chart
        rendered = [c for c in _members(changeset, plan, chart) if c.action != "noop"]
        deleted = [c for c in changeset.changes if c.action == "delete" and str(c.ref) in dropped]
        changed = (*rendered, *deleted)
        change = _chart_change(chart, applied, key, changed)
        if (
            change.version_before != change.version_after
            or change.values
            or (changed and not change.recorded)
        ):
            found.append(change)
    kept = {chart.name for chart in plan.charts}
    found += [_removed(name, applied, changeset) for name in sorted(applied.charts.keys() - kept)]
    return dataclasses.replace(changeset, charts=tuple(found))


def _removed(name: str, applied: AppliedCharts, changeset: ChangeSet) -> ChartChange:
    """A chart of the applied generation the plan no longer has, with the deletes of the objects it
    rendered then (none known when that generation did not record them)."""
    inputs = applied.inputs.get(name)
    if inputs is None:  # recorded before chart inputs were: `<chart>-<version>` is all there is
        return ChartChange(name=name, version_before=applied.charts[name], version_after=None, recorded=False)
    rendered = frozenset(inputs.get("objects") or ())
    deleted = tuple(c for c in changeset.changes if c.action == "delete" and str(c.ref) in rendered)
    return ChartChange(
        name=name, version_before=str(inputs.get("version")), version_after=None, objects=deleted
    )


def _chart_change(
    chart: ChartRelease, applied: AppliedCharts, key: bytes | None, changed: tuple[Change, ...]
) -> ChartChange:
    inputs = applied.inputs.get(chart.name)
    if inputs is None:
        spelled = applied.charts.get(chart.name)
        before = spelled.removeprefix(f"{chart.chart_name}-") if spelled is not None else None
        recorded = spelled is None  # a chart new in this plan has nothing to compare with
        return ChartChange(
            name=chart.name,
            version_before=before,
            version_after=chart.version,
            recorded=recorded,
            objects=changed,
        )
    values = value_changes(inputs.get("values") or {}, dict(chart.values), chart.origins)
    old_digests = inputs.get("secretDigests")
    if key is not None and isinstance(old_digests, dict):
        values += secret_changes(old_digests, secret_digests(chart.secrets, key))
    return ChartChange(
        name=chart.name,
        version_before=str(inputs.get("version")),
        version_after=chart.version,
        values=tuple(values),
        objects=changed,
    )


def _ref_key(manifest: Mapping[str, Any] | None, namespace: str) -> tuple[str, str, str, str]:
    """An object's identity with the plan's namespace for one that names none (as it is rendered)."""
    metadata = (manifest or {}).get("metadata") or {}
    return (
        str((manifest or {}).get("apiVersion", "")).rpartition("/")[0],
        str((manifest or {}).get("kind", "")),
        str(metadata.get("namespace") or namespace),
        str(metadata.get("name", "")),
    )
