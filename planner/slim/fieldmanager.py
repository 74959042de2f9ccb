"""Server-side apply and field ownership (`metadata.managedFields`) in the apiserver's real format.

Every write records who owns which fields, as structured-merge-diff does inside the real apiserver:

- `apply()` is a PATCH with `application/apply-patch+yaml`. The config is merged into the live object
  (maps key by key, associative lists item by item on their apply keys, sets as unions, atomic values
  replaced — `mergekeys`). The applier's entry (operation `Apply`) becomes exactly the config's field
  set; fields it applied last time but no longer applies are removed from the object unless another
  manager still owns them. A field another manager owns whose value the apply would change (or add)
  is a conflict (`ApplyConflict`, 409 with `FieldManagerConflict` causes) unless `force`, which moves
  ownership. An apply that changes nothing returns the live object unchanged — managedFields included,
  time not bumped — so the caller skips the write and keeps the resourceVersion. An object that never
  had managedFields gives its current fields to a `before-first-apply` entry first. `kubectl`'s apply
  may take over, without `force`, the fields its client-side `last-applied-configuration` annotation
  still describes, and keeps that annotation in step with what it applies.
- `update()` is every other write (create, PUT, JSON/merge/strategic patch, `/status`, `/scale`,
  `pods/binding`): the writer's `Update` entry gains every field it added or changed (all of them on
  create), every other entry loses them, entries left with no fields are dropped, and subresource
  writes carry `subresource: status|scale|binding`. A write that changes nothing leaves managedFields as
  they were. Past ten `Update` entries, the oldest are folded into one `ancient-changes` entry per
  apiVersion, as the apiserver caps them (`Apply` entries are never capped).

Fields no one owns, as in the real server: the identity and bookkeeping metadata (`name`,
`namespace`, `uid`, `resourceVersion`, `generation`, `creationTimestamp`, `managedFields`, `selfLink`);
`status` on main-resource writes and `spec` on `/status` writes of kinds with a status (the
strategies reset them); and
whatever the server sets after the field manager has run. The real apiserver computes ownership before
its strategy and admission, so the creator does not own a Job's generated selector and
`controller-uid`/`job-name` labels, a Pod's service account, token volume and mounts, default
tolerations, `priority`/`preemptionPolicy`, or a Service's allocated `clusterIP(s)`/`ipFamilies`/
`ipFamilyPolicy`; pass `update()` the object before those are added to reproduce that (fields it
receives are fields it records). Status set later by a controller through `/status` is owned by that
controller's manager (`kube-controller-manager` with `subresource: status` in the golden files).

Left out: per-version field-set conversion (every kind here has a single served version).
"""

from __future__ import annotations

import functools
import json
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from planner.slim.mergekeys import Atomic, Field, KeyedList, SetList, Struct, go_zero_value, schema_for
from planner.slim.meta import json_copy
from planner.slim.resources import BY_KIND
from planner.slim.status_errors import status_body
from planner.slim.strategic import PatchError

Path = tuple[str, ...]

APPLY: Final = "Apply"
UPDATE: Final = "Update"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
MAX_MANAGER_LENGTH: Final = 128
# Update entries beyond this many are folded, oldest first, into one per apiVersion (capmanagers.go).
MAX_UPDATE_MANAGERS: Final = 10
ANCIENT_CHANGES: Final = "ancient-changes"

_MISSING: Final[Any] = object()

# Paths structured-merge-diff strips from every manager's set (exact paths, not subtrees).
_STRIPPED: Final[frozenset[Path]] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", f"f:{name}")
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)

# ------------------------------------------------------------------------------------------ path sets


def encode_fields(paths: Iterable[Path]) -> dict[str, Any]:
    """A set of paths as a FieldsV1 tree: `"."` marks a member that also has members below it."""
    root: dict[str, Any] = {}
    members: set[int] = set()  # the ids of the nodes (all alive here) whose paths are members
    for path in paths:
        node = root
        for element in path:
            node = node.setdefault(element, {})
        members.add(id(node))
    members.discard(id(root))
    return _emit(root, members)


def _emit(node: dict[str, Any], members: set[int]) -> dict[str, Any]:
    """`node`'s members in the apiserver's order, `"."` first where `node` is a member itself."""
    out: dict[str, Any] = {".": {}} if id(node) in members else {}
    for element in sorted(node, key=_element_sort_key) if len(node) > 1 else node:
        child = node[element]
        out[element] = _emit(child, members) if child else {}
    return out


def decode_fields(fields_v1: dict[str, Any]) -> set[Path]:
    """The set of paths a FieldsV1 tree describes."""
    paths: set[Path] = set()
    _collect(fields_v1, (), paths)
    return paths


def _collect(node: dict[str, Any], path: Path, paths: set[Path]) -> None:
    for element, child in node.items():
        if element == ".":
            paths.add(path)
            continue
        if not child:
            paths.add((*path, element))
        else:
            _collect(child, (*path, element), paths)


@functools.lru_cache(maxsize=65536)
def _element_sort_key(element: str) -> tuple[int, Any]:
    kind, _, rest = element.partition(":")
    if kind == "f":
        return (0, rest)
    if kind == "k":
        return (1, [(name, _value_sort_key(v)) for name, v in sorted(json.loads(rest).items())])
    if kind == "v":
        return (2, _value_sort_key(json.loads(rest)))
    return (3, int(rest) if rest.isdigit() else rest)


def _value_sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    return (4, json.dumps(value, sort_keys=True))


def path_string(path: Path) -> str:
    """A path as the apiserver prints it in conflicts: `.spec.containers[name="web"].image`."""
    parts: list[str] = []
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            parts.append(f".{rest}")
        elif kind == "k":
            fields = json.loads(rest)
            parts.append("[" + ",".join(f"{k}={_go_value(v)}" for k, v in sorted(fields.items())) + "]")
        elif kind == "v":
            parts.append(f"[={_go_value(json.loads(rest))}]")
        else:
            parts.append(f"[{rest}]")
    return "".join(parts)


def _go_value(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# A path element's JSON, as `json.dumps(..., separators=(",", ":"), ensure_ascii=False)` writes it, by
# one encoder: every keyed list item of every write names its element.
_ELEMENT_JSON: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _key_element(item: dict[str, Any], schema: KeyedList) -> str | None:
    keys = schema.apply_keys or ()
    values: dict[str, Any] = {}
    for key in sorted(keys):
        if key in item:
            values[key] = item[key]
        elif key in schema.key_defaults:
            values[key] = schema.key_defaults[key]
        else:
            return None
    return "k:" + _ELEMENT_JSON.encode(values)


def _value_element(value: Any) -> str:
    return "v:" + _ELEMENT_JSON.encode(value)


def _keyed_items(items: list[Any], schema: KeyedList) -> list[tuple[str, Any]] | None:
    """(path element, item) pairs of an associative list, or None when it cannot be keyed (an item
    without its key fields, or duplicates): then it is treated as atomic."""
    pairs: list[tuple[str, Any]] = []
    for item in items:
        element = _key_element(item, schema) if isinstance(item, dict) else None
        if element is None:
            return None
        pairs.append((element, item))
    if len({element for element, _ in pairs}) != len(pairs):
        return None
    return pairs


def _is_keyed(schema: Field | None) -> bool:
    return isinstance(schema, KeyedList) and schema.apply_keys is not None


# ------------------------------------------------------------------------------------------ field sets


def field_set(value: Any, schema: Field | None, path: Path = ()) -> set[Path]:
    """Every path a config sets, as structured-merge-diff's ToFieldSet: leaves, atomic values and
    associative-list items; maps contribute only their members."""
    paths: set[Path] = set()
    _field_set(value, schema, path, paths)
    return paths


def _field_set(value: Any, schema: Field | None, path: Path, out: set[Path]) -> None:
    if isinstance(schema, Atomic):
        out.add(path)
    elif isinstance(value, dict):
        for key, child in value.items():
            _field_set(child, _child(schema, key), (*path, f"f:{key}"), out)
    elif isinstance(value, list):
        _list_field_set(value, schema, path, out)
    else:
        out.add(path)


def _list_field_set(value: list[Any], schema: Field | None, path: Path, out: set[Path]) -> None:
    if isinstance(schema, SetList):
        out.update((*path, _value_element(v)) for v in value)
        return
    pairs = _keyed_items(value, schema) if isinstance(schema, KeyedList) and _is_keyed(schema) else None
    if pairs is None or not isinstance(schema, KeyedList):
        out.add(path)
        return
    for element, item in pairs:
        out.add((*path, element))
        _field_set(item, schema.item, (*path, element), out)


def _child(schema: Field | None, key: str) -> Field | None:
    return schema.child(key) if isinstance(schema, Struct) else None


@dataclass
class Diff:
    """structured-merge-diff's Comparison of two objects."""

    added: set[Path] = field(default_factory=set)
    modified: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)

    def changed(self) -> set[Path]:
        return self.added | self.modified


def compare(old: Any, new: Any, schema: Field | None) -> Diff:
    """What changed from `old` to `new`; a map or list item that appears is itself added."""
    diff = Diff()
    _compare(old, new, schema, (), diff)
    return diff


def _compare(old: Any, new: Any, schema: Field | None, path: Path, diff: Diff) -> None:
    if old is _MISSING:
        _every_path(new, schema, path, diff.added)
        return
    if new is _MISSING:
        _every_path(old, schema, path, diff.removed)
        return
    if old == new:
        return  # an equal subtree holds no change: only the branches that differ are walked
    if isinstance(old, dict) and isinstance(new, dict) and not isinstance(schema, _CONTAINERS):
        _compare_maps(old, new, schema if isinstance(schema, Struct) else None, path, diff)
        return
    members = _members(old, new, schema)
    if members is not None:
        for element, (old_child, new_child, child_schema) in members.items():
            _compare(old_child, new_child, child_schema, (*path, element), diff)
        if path and old is _MISSING:
            diff.added.add(path)
        elif path and new is _MISSING:
            diff.removed.add(path)
        return
    if old is _MISSING:
        diff.added.add(path)
    elif new is _MISSING:
        diff.removed.add(path)
    elif old != new:
        diff.modified.add(path)


def _compare_maps(
    old: dict[str, Any], new: dict[str, Any], struct: Struct | None, path: Path, diff: Diff
) -> None:
    """`_compare` of two maps member by member (what `_members` pairs for them, without the pairing:
    most of a write's comparisons are of maps)."""
    for key, new_child in new.items():
        child_schema = struct.child(key) if struct is not None else None
        _compare(old.get(key, _MISSING), new_child, child_schema, (*path, f"f:{key}"), diff)
    for key, old_child in old.items():
        if key not in new:
            child_schema = struct.child(key) if struct is not None else None
            _every_path(old_child, child_schema, (*path, f"f:{key}"), diff.removed)


def _every_path(value: Any, schema: Field | None, path: Path, into: set[Path]) -> None:
    """What `_compare` finds where one side lacks `value` altogether: every path in it, each member
    of a container as `_members` names it (a create's field set is mostly this)."""
    if isinstance(schema, Atomic):
        into.add(path)
    elif isinstance(value, dict):
        if not isinstance(schema, _LISTS):  # a map where a list belongs has no members
            struct = schema if isinstance(schema, Struct) else None
            for key, child in value.items():
                child_schema = struct.child(key) if struct is not None else None
                _every_path(child, child_schema, (*path, f"f:{key}"), into)
        if path:
            into.add(path)
    elif isinstance(value, list) and isinstance(schema, SetList):
        for element in {_value_element(v): v for v in value}:
            into.add((*path, element))
        if path:
            into.add(path)
    elif isinstance(value, list) and isinstance(schema, KeyedList) and _is_keyed(schema):
        pairs = _keyed_items(value, schema)
        if pairs is not None:
            for element, item in pairs:
                _every_path(item, schema.item, (*path, element), into)
        if pairs is None or path:
            into.add(path)
    else:  # a value, not a container
        into.add(path)


Members = dict[str, tuple[Any, Any, Field | None]]
_SET_ITEM: Final = Atomic()  # a set's item is a value, whatever its shape
_LISTS: Final = (SetList, KeyedList)
_CONTAINERS: Final = (Atomic, SetList, KeyedList)  # schemas under which a map is not compared by member


def _members(old: Any, new: Any, schema: Field | None) -> Members | None:
    """The members of `old` and `new` compared as one container — path element: (old member, new
    member, its schema), `_MISSING` where one side lacks it — or None when they compare as values:
    an atomic field, values of different shapes, a list that is neither a set nor keyable."""
    if isinstance(schema, Atomic):
        return None
    present = [v for v in (old, new) if v is not _MISSING and v is not None]
    if not present:
        return None
    if all(isinstance(v, dict) for v in present):
        if isinstance(schema, _LISTS):
            return {}  # a map where a list belongs: a container without members
        before = old if isinstance(old, dict) else {}
        after = new if isinstance(new, dict) else {}
        return {
            f"f:{key}": (before.get(key, _MISSING), after.get(key, _MISSING), _child(schema, key))
            for key in {**before, **after}
        }
    if not all(isinstance(v, list) for v in present):
        return None
    if isinstance(schema, SetList):
        before_set = {_value_element(v): v for v in (old if isinstance(old, list) else [])}
        after_set = {_value_element(v): v for v in (new if isinstance(new, list) else [])}
        return _paired(before_set, after_set, _SET_ITEM)
    if not (isinstance(schema, KeyedList) and _is_keyed(schema)):
        return None
    sides = [_keyed_items(v, schema) if isinstance(v, list) else [] for v in (old, new)]
    if sides[0] is None or sides[1] is None:
        return None
    return _paired(dict(sides[0]), dict(sides[1]), schema.item)


def _paired(before: dict[str, Any], after: dict[str, Any], schema: Field | None) -> Members:
    return {e: (before.get(e, _MISSING), after.get(e, _MISSING), schema) for e in {**before, **after}}


# ------------------------------------------------------------------------------------------ merging


def merge(live: Any, config: Any, schema: Field | None) -> Any:
    """Server-side apply's merge of a config into the live object. What the config leaves alone is
    shared with `live`, not copied: the maps and lists the merge builds are its own, and the removals
    that follow copy what they change (`remove_paths`)."""
    if config is _MISSING:
        return live
    if live is _MISSING or live is None or isinstance(schema, Atomic):
        return json_copy(config)
    if isinstance(live, dict) and isinstance(config, dict):
        return _merge_maps(live, config, schema)
    if isinstance(live, list) and isinstance(config, list):
        return _merge_lists(live, config, schema)
    return json_copy(config)


def _merge_maps(live: dict[str, Any], config: dict[str, Any], schema: Field | None) -> dict[str, Any]:
    out = dict(live)
    for key, value in config.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(live.get(key, _MISSING), value, _child(schema, key))
    return out


def _merge_lists(live: list[Any], config: list[Any], schema: Field | None) -> list[Any]:
    if isinstance(schema, SetList):
        lhs = [(_value_element(v), v) for v in live]
        rhs = [(_value_element(v), v) for v in config]
        return _merge_ordered(lhs, rhs, lambda left, right: json_copy(right))
    if isinstance(schema, KeyedList) and _is_keyed(schema):
        lhs_pairs = _keyed_items(live, schema)
        rhs_pairs = _keyed_items(config, schema)
        if lhs_pairs is not None and rhs_pairs is not None:
            item_schema = schema.item
            return _merge_ordered(lhs_pairs, rhs_pairs, lambda left, right: merge(left, right, item_schema))
    return json_copy(config)


def _merge_ordered(
    lhs: list[tuple[str, Any]], rhs: list[tuple[str, Any]], merge_item: Callable[[Any, Any], Any]
) -> list[Any]:
    """Associative-list merge order as structured-merge-diff produces it: live-only items keep their
    place, shared and new items follow the config's order."""
    rhs_ids = {element for element, _ in rhs}
    lhs_map = dict(lhs)
    shared = [element for element, _ in rhs if element in lhs_map]
    out: list[Any] = []
    done: set[str] = set()
    li = ri = si = 0
    while li < len(lhs) or ri < len(rhs):
        if li < len(lhs) and ri < len(rhs):
            element = lhs[li][0]
            if element == rhs[ri][0]:
                out.append(merge_item(lhs[li][1], rhs[ri][1]))
                done.add(element)
                li, ri = li + 1, ri + 1
                si += 1 if si < len(shared) and shared[si] == element else 0
                continue
            if element in rhs_ids and si < len(shared) and shared[si] != element:
                li += 1
                continue
        if li < len(lhs):
            element = lhs[li][0]
            if element not in rhs_ids:
                out.append(lhs[li][1])
                li += 1
                continue
            if element in done:
                li += 1
                continue
        if ri < len(rhs):
            element, item = rhs[ri]
            done.add(element)
            out.append(merge_item(lhs_map.get(element, _MISSING), item))
            ri += 1
            si += 1 if si < len(shared) and shared[si] == element else 0
    return out


def remove_paths(obj: dict[str, Any], paths: Iterable[Path], schema: Field | None) -> None:
    """Remove the values at `paths` from `obj` (a path's subtree goes with it): `obj` itself is
    changed, and every map or list on the way to a removal is replaced by a copy first, so values
    `obj` shares with another object (a merge's with the live object) are left as they were."""
    for path in sorted(paths, key=len, reverse=True):
        _remove(obj, path, schema)


def _remove(node: Any, path: Path, schema: Field | None) -> None:
    """Remove `path` below `node`, which is the caller's own to change."""
    element, rest = path[0], path[1:]
    kind, _, name = element.partition(":")
    if kind == "f" and isinstance(node, dict):
        if not rest:
            node.pop(name, None)
        elif isinstance(child := node.get(name), dict | list):
            node[name] = child = _shallow_copy(child)
            _remove(child, rest, _child(schema, name))
        return
    if not isinstance(node, list):
        return
    index = _find_item(node, element, schema)
    if index is None:
        return
    if not rest:
        del node[index]
    elif isinstance(schema, KeyedList) and isinstance(item := node[index], dict):
        node[index] = item = dict(item)
        _remove(item, rest, schema.item)


def _shallow_copy(value: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any]:
    return dict(value) if isinstance(value, dict) else list(value)


def _find_item(items: list[Any], element: str, schema: Field | None) -> int | None:
    for index, item in enumerate(items):
        if element.startswith("v:") and _value_element(item) == element:
            return index
        if not (element.startswith("k:") and isinstance(schema, KeyedList) and isinstance(item, dict)):
            continue
        if _key_element(item, schema) == element:
            return index
    return None


# ------------------------------------------------------------------------------------------ managers


@dataclass(frozen=True)
class Entry:
    """One managedFields entry: a manager, its operation and the paths it owns."""

    manager: str
    operation: str
    api_version: str
    time: str | None
    fields: frozenset[Path]
    subresource: str | None = None
    # The stored FieldsV1 tree this entry was read from, with the very set decoded from it: as long as
    # `fields` is that set (a write that changes an entry's fields makes a new one), the tree is this
    # entry's encoding as it is, and most entries of a write are left as they were.
    read_from: tuple[frozenset[Path], dict[str, Any]] | None = field(default=None, compare=False, repr=False)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # As the apiserver's manager identifier: appliers are one manager whatever their apiVersion.
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource or "")

    def describe(self) -> str:
        """How conflict messages name this manager."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            entry["time"] = self.time
        entry["fieldsType"] = "FieldsV1"
        read = self.read_from
        entry["fieldsV1"] = (
            read[1] if read is not None and read[0] is self.fields else _fields_v1(self.fields)
        )
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


@functools.lru_cache(maxsize=4096)
def _fields_v1(fields: frozenset[Path]) -> dict[str, Any]:
    """An entry's FieldsV1 tree, encoded once per distinct set of paths: the entries a write leaves
    as they were, and those of objects written from the same manifest, share one tree (never
    changed in place: every write builds new entries)."""
    return encode_fields(fields)


def _without(entry: Entry, paths: set[Path] | frozenset[Path]) -> Entry:
    """`entry` without `paths`: itself (its set, and so its tree) when it owns none of them."""
    return entry if paths.isdisjoint(entry.fields) else replace(entry, fields=entry.fields - paths)


def decode_managed_fields(entries: Iterable[dict[str, Any]], *, stored: bool = False) -> list[Entry]:
    """The entries of `metadata.managedFields`; entries without a manager or operation are dropped.
    `stored`: they are a stored object's, so each tree is in this encoder's form and may be kept (a
    client's are encoded again, as the apiserver does)."""
    decoded: list[Entry] = []
    for raw in entries:
        if not raw.get("manager") and not raw.get("operation"):
            continue
        tree = raw.get("fieldsV1") or {}
        fields = frozenset(decode_fields(tree))
        decoded.append(
            Entry(
                manager=str(raw.get("manager", "")),
                operation=str(raw.get("operation", "")),
                api_version=str(raw.get("apiVersion", "")),
                time=raw.get("time"),
                fields=fields,
                subresource=raw.get("subresource") or None,
                read_from=(fields, tree) if stored and isinstance(tree, dict) else None,
            )
        )
    return decoded


def encode_managed_fields(entries: Iterable[Entry]) -> list[dict[str, Any]]:
    """managedFields in the apiserver's order: Apply before Update, then by time, manager, apiVersion."""
    ordered = sorted(
        entries,
        key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource or ""),
    )
    return [entry.as_dict() for entry in ordered]


# ------------------------------------------------------------------------------------------ conflicts


@dataclass(frozen=True)
class Conflict:
    manager: Entry
    path: Path


class ApplyConflict(Exception):
    """An apply would change fields other managers own; `conflicts` lists (manager, path)."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        self.conflicts = sorted(conflicts, key=lambda c: (c.manager.describe(), path_string(c.path)))
        super().__init__(self.message)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return [(c.manager.manager, path_string(c.path)) for c in self.conflicts]

    @property
    def message(self) -> str:
        if len(self.conflicts) == 1:
            only = self.conflicts[0]
            return f"Apply failed with 1 conflict: conflict with {only.manager.describe()}: " + path_string(
                only.path
            )
        lines: list[str] = []
        for manager in sorted({c.manager.describe() for c in self.conflicts}):
            lines.append(f"conflicts with {manager}")
            lines.extend(
                f"- {path_string(c.path)}" for c in self.conflicts if c.manager.describe() == manager
            )
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)

    def status_body(self) -> dict[str, Any]:
        """The 409 Status the apiserver sends (golden `ssa_conflict_other_manager.json`)."""
        causes = [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {c.manager.describe()}",
                "field": path_string(c.path),
            }
            for c in self.conflicts
        ]
        return status_body(409, "Conflict", self.message, {"causes": causes})


def missing_field_manager_status() -> dict[str, Any]:
    """The 422 for an apply patch without `?fieldManager=` (golden `ssa_missing_field_manager.json`)."""
    message = "Required value: is required for apply patch"
    details = {
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{"reason": "FieldValueRequired", "message": message, "field": "fieldManager"}],
    }
    return status_body(
        422, "Invalid", f'PatchOptions.meta.k8s.io "" is invalid: fieldManager: {message}', details
    )


def manager_from_user_agent(user_agent: str) -> str:
    """The field manager the apiserver derives from a User-Agent: the program name before the first
    `/`, printable characters only, at most 128 bytes (`kubectl/v1.28.7 (linux/amd64)` → `kubectl`)."""
    name = user_agent.split("/", 1)[0]
    out = ""
    for char in name:
        if unicodedata.category(char).startswith("C") or (char.isspace() and char != " "):
            continue
        if len((out + char).encode()) > MAX_MANAGER_LENGTH:
            break
        out += char
    return out


# ------------------------------------------------------------------------------------------ operations


@dataclass(frozen=True)
class _Context:
    kind: str
    schema: Struct
    subresource: str | None
    has_status: bool

    def ignored(self, paths: Iterable[Path]) -> set[Path]:
        """Paths no one owns: stripped metadata and the fields this kind of write resets."""
        reset = self.reset_root()
        return {p for p in paths if p not in _STRIPPED and not (reset and p[:1] == reset)}

    def reset_root(self) -> Path:
        """What this write's strategy resets: a kind with a status subresource drops `status` on
        main-resource writes and `spec` on `/status` writes."""
        if not self.has_status:
            return ()
        return ("f:spec",) if self.subresource == "status" else ("f:status",)


def _context(kind: str, subresource: str | None, schema: Struct | None, has_status: bool | None) -> _Context:
    """A write's context; the merge schema and whether the kind has a status subresource default to
    the built-in kind's (custom kinds pass their own)."""
    if has_status is None:
        resource = BY_KIND.get(kind)
        has_status = resource is not None and resource.has_status
    return _Context(kind, schema or schema_for(kind), subresource, has_status)


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` without managedFields: a new top level and metadata, sharing everything below them (the
    field manager only reads it, or replaces the metadata's managedFields)."""
    out = dict(obj)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        out["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    return out


def _with_managed_fields(obj: dict[str, Any], entries: list[Entry]) -> dict[str, Any]:
    metadata = obj.setdefault("metadata", {})
    encoded = encode_managed_fields(entries)
    if encoded:
        metadata["managedFields"] = encoded
    else:
        metadata.pop("managedFields", None)
    return obj


def _managed(obj: dict[str, Any] | None) -> list[Entry]:
    if obj is None:
        return []
    return decode_managed_fields((obj.get("metadata") or {}).get("managedFields") or [], stored=True)


def _compared(old: dict[str, Any], new: dict[str, Any], kind: str, schema: Struct) -> Diff:
    """`compare` of the top-level fields that differ (kind and apiVersion are no one's), each with the
    Go zero value's fields filled in where it lacks them. Only those are copied and walked: a status
    write leaves the spec as it was, and an equal subtree holds no change."""
    keys = [
        key
        for key in {**old, **new}
        if key not in ("kind", "apiVersion") and old.get(key, _MISSING) != new.get(key, _MISSING)
    ]
    if not keys:
        return Diff()
    zero = go_zero_value(kind)
    return compare(_fill_zero(old, zero, keys), _fill_zero(new, zero, keys), schema)


def _fill_zero(obj: dict[str, Any], zero: Mapping[str, Any], keys: list[str]) -> dict[str, Any]:
    """`obj`'s `keys` with `zero`'s fields filled in where it lacks them, for comparing only: it
    shares `obj`'s values."""
    filled = {key: json_copy(zero[key]) for key in keys if key in zero}
    return _overlay(filled, {key: obj[key] for key in keys if key in obj})


def _overlay(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = _overlay(base[key], value)
        else:
            base[key] = value
    return base


def _record_update(
    entries: list[Entry], old: dict[str, Any], new: dict[str, Any], writer: Entry, ctx: _Context
) -> list[Entry]:
    """structured-merge-diff's Update: the writer takes what changed, everyone loses it."""
    diff = _compared(old, new, ctx.kind, ctx.schema)
    taken = ctx.ignored(diff.changed())
    lost = taken | diff.removed
    kept = [_without(e, lost) for e in entries]
    if not taken:
        return [e for e in kept if e.fields]
    previous = next((e for e in kept if e.identity == writer.identity), None)
    kept = [e for e in kept if e.identity != writer.identity]
    if previous is not None and taken <= previous.fields:  # it changed only what it owned already
        kept.append(replace(writer, fields=previous.fields, read_from=previous.read_from))
    else:
        kept.append(replace(writer, fields=frozenset(taken | (previous.fields if previous else set()))))
    return [e for e in kept if e.fields]


def update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    kind: str,
    api_version: str,
    manager: str,
    subresource: str | None,
    now: str,
    schema: Struct | None = None,
    has_status: bool | None = None,
) -> dict[str, Any]:
    """`new` with managedFields recording a non-apply write by `manager` (create when `old` is None).

    managedFields the client sent in `new` replace the live ones (that is how clients reset them; a
    single empty entry `[{}]` clears them); otherwise the live ones carry over."""
    ctx = _context(kind, subresource, schema, has_status)
    entries = _base_entries(old, new, subresource)
    writer = Entry(manager, UPDATE, api_version, now, frozenset(), subresource)
    before = _without_managed_fields(old) if old is not None else {}
    after = _without_managed_fields(new)
    recorded = _record_update(entries, before, after, writer, ctx)
    return _with_managed_fields(after, cap_update_managers(recorded))


def cap_update_managers(entries: list[Entry], limit: int = MAX_UPDATE_MANAGERS) -> list[Entry]:
    """At most `limit` Update entries, as the apiserver keeps them: walking the Update entries oldest
    first (by whole second, then identity), each apiVersion's first entry is set aside and every later
    one of that version is folded into the version's `ancient-changes` bucket (created from the set-
    aside entry when missing; it takes the folded entry's time) until the count fits. Apply entries are
    never capped."""
    updates = sorted(
        (e for e in entries if e.operation == UPDATE), key=lambda e: ((e.time or "")[:19], e.identity)
    )
    count = len(updates)
    kept = {e.identity: e for e in entries}
    first: dict[str, Entry] = {}
    for entry in updates:
        if count <= limit:
            break
        version = entry.api_version
        bucket_id = (ANCIENT_CHANGES, UPDATE, version, "")
        if version not in first:
            first[version] = entry
            continue
        if entry.identity == bucket_id:
            continue
        bucket = kept.get(bucket_id) or kept.pop(first[version].identity)
        kept[bucket_id] = Entry(ANCIENT_CHANGES, UPDATE, version, entry.time, bucket.fields | entry.fields)
        del kept[entry.identity]
        count -= 1
    return list(kept.values())


def _base_entries(old: dict[str, Any] | None, new: dict[str, Any], subresource: str | None) -> list[Entry]:
    sent = (new.get("metadata") or {}).get("managedFields")
    if sent and subresource is None:
        return decode_managed_fields(sent)
    return _managed(old)


def apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    *,
    kind: str,
    api_version: str,
    manager: str,
    force: bool,
    now: str,
    subresource: str | None = None,
    schema: Struct | None = None,
    has_status: bool | None = None,
) -> dict[str, Any]:
    """The object after `manager` applies `config` (create when `live` is None), managedFields updated.

    Raises `ApplyConflict` when the apply would change fields other managers own and `force` is off,
    and `PatchError` (400) when the config carries managedFields. Returns an object equal to `live`
    when nothing changes."""
    if (config.get("metadata") or {}).get("managedFields") is not None:
        raise PatchError(400, "BadRequest", "metadata.managedFields must be nil")
    ctx = _context(kind, subresource, schema, has_status)
    applier = Entry(manager, APPLY, api_version, now, frozenset(), subresource)
    try:
        return _apply(live, config, ctx, applier, force=force)
    except ApplyConflict as conflict:
        allowed = _allowed_by_last_applied(live, ctx) if manager == "kubectl" and live else set()
        if force or not allowed or any(c.path not in allowed for c in conflict.conflicts):
            raise
        return _apply(live, config, ctx, applier, force=True)


def _apply(
    live: dict[str, Any] | None, config: dict[str, Any], ctx: _Context, applier: Entry, *, force: bool
) -> dict[str, Any]:
    """`applier` names the manager, apiVersion and time; its fields become the config's."""
    now = applier.time or ""
    live_obj = _without_managed_fields(live) if live is not None else {}
    entries = _entries_before_apply(live, live_obj, ctx, applier.api_version, now)
    config = _reset_fields_dropped(config, ctx)
    applier = replace(applier, fields=frozenset(ctx.ignored(field_set(config, ctx.schema))))
    previous = next((e for e in entries if e.identity == applier.identity), None)
    others = [e for e in entries if e.identity != applier.identity]
    merged = merge(live_obj, config, ctx.schema)
    if previous is not None:
        _prune(merged, previous.fields - applier.fields, [applier, *others], ctx.schema)
    diff = _compared(live_obj, merged, ctx.kind, ctx.schema)
    others = _settle_others(others, diff, ctx, force=force)
    if live is not None and merged == live_obj:
        applier = replace(applier, time=previous.time if previous else now)
    result = _with_managed_fields(merged, [applier, *others])
    if applier.manager == "kubectl" and live is not None:
        _sync_last_applied(result, config)
    if live is not None and result == live:
        return json_copy(live)
    return result


def _entries_before_apply(
    live: dict[str, Any] | None, live_obj: dict[str, Any], ctx: _Context, api_version: str, now: str
) -> list[Entry]:
    entries = _managed(live)
    if live is None or entries:
        return entries
    # An object that never had managedFields: its current fields go to `before-first-apply`.
    writer = Entry(BEFORE_FIRST_APPLY, UPDATE, api_version, now, frozenset())
    return _record_update([], {}, live_obj, writer, ctx)


def _reset_fields_dropped(config: dict[str, Any], ctx: _Context) -> dict[str, Any]:
    reset = ctx.reset_root()
    if not reset:
        return config
    return {k: v for k, v in config.items() if f"f:{k}" != reset[0]}


def _prune(merged: dict[str, Any], dropped: frozenset[Path], owners: list[Entry], schema: Struct) -> None:
    """Remove what the applier no longer applies, unless some manager still owns it or a field
    below it."""
    owned = frozenset().union(*(e.fields for e in owners))
    removable = {p for p in dropped if not any(o[: len(p)] == p for o in owned)}
    remove_paths(merged, _outermost(removable), schema)


def _outermost(paths: set[Path]) -> set[Path]:
    return {p for p in paths if not any(p[:i] in paths for i in range(1, len(p)))}


def _settle_others(others: list[Entry], diff: Diff, ctx: _Context, *, force: bool) -> list[Entry]:
    changed = ctx.ignored(diff.changed())
    conflicts = [Conflict(e, p) for e in others for p in sorted(e.fields & changed, key=_path_sort_key)]
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    settled = [_without(e, changed | diff.removed) for e in others]
    return [e for e in settled if e.fields]


def _path_sort_key(path: Path) -> list[tuple[int, Any]]:
    return [_element_sort_key(element) for element in path]


def _allowed_by_last_applied(live: dict[str, Any], ctx: _Context) -> set[Path]:
    """Conflicts a `kubectl` apply may take over from client-side apply: fields of the
    last-applied-configuration annotation whose value the live object still has."""
    annotation = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not annotation:
        return set()
    try:
        last_applied = json.loads(annotation)
    except json.JSONDecodeError:
        return set()
    if not isinstance(last_applied, dict):
        return set()
    diff = compare(last_applied, _without_managed_fields(live), ctx.schema)
    return field_set(last_applied, ctx.schema) - diff.modified


def _sync_last_applied(result: dict[str, Any], config: dict[str, Any]) -> None:
    """kubectl's server-side apply keeps an existing client-side annotation in step with its config."""
    annotations = (result.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED not in annotations:
        return
    applied = json_copy(config)
    applied_annotations = (applied.get("metadata") or {}).get("annotations")
    if isinstance(applied_annotations, dict):
        applied_annotations.pop(LAST_APPLIED, None)
    # The merge may share the annotations with the live object: the result gets its own.
    result["metadata"]["annotations"] = {**annotations, LAST_APPLIED: _go_json(applied) + "\n"}


def _go_json(value: Any) -> str:
    """JSON as Go's encoder writes a map: sorted keys, compact, `<>&` escaped."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
