"""What counts as "the same" between a rendered manifest and a live object (docs/design.md §4), and who owns what.

A live object is the desired manifest after the API server and its admission chain had their say:
defaults filled in, quantities re-spelled (`0.5` → `500m`), `stringData` folded into `data`, a service
account volume and its mounts added, sidecars injected, labels added by other tools. Comparing the two
naively gives the perpetual diffs users of other tools complain about. So the desired side is first
reduced to what it really declares (`declared`), and then compared with the live object *as a subset*
(`differences`):

The rest of the rules, and why: docs/architecture.md ("Module notes", canonical.py).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from planner.kinds import SECRET
from planner.kube.quantity import stored_quantity
from planner.objects import metadata_of


@dataclass(frozen=True)
class ItemKey:
    """A list item picked by its merge key, e.g. `containers[name=web]` (fields sorted by name)."""

    fields: tuple[tuple[str, Any], ...]

    def __str__(self) -> str:
        shown = [(k, v) for k, v in self.fields if KEY_DEFAULTS.get(k) != v] or list(self.fields[:1])
        return "[" + ",".join(f"{k}={v}" for k, v in shown) + "]"


@dataclass(frozen=True)
class SetValue:
    """A member of a set-like list in FieldsV1 (`v:"kubernetes.io/pvc-protection"`)."""

    value: Any


@dataclass(frozen=True)
class Index:
    """A list position in FieldsV1 (`i:0`), used by lists with no merge key."""

    position: int


Segment = str | ItemKey | SetValue | Index
Path = tuple[Segment, ...]


@dataclass(frozen=True)
class MergeKey:
    fields: tuple[str, ...]
    defaults: Mapping[str, Any] = field(default_factory=dict)


_BY_NAME = (MergeKey(("name",)),)
_PROTOCOL = {"protocol": "TCP"}

# List field name -> its merge keys, first match wins: a key applies when every desired item carries its
# first field. `ports` is container ports (`containerPort`) in a pod and `port` in a Service.
MERGE_KEYS: Mapping[str, tuple[MergeKey, ...]] = {
    "containers": _BY_NAME,
    "initContainers": _BY_NAME,
    "ephemeralContainers": _BY_NAME,
    "env": _BY_NAME,
    "volumes": _BY_NAME,
    "imagePullSecrets": _BY_NAME,
    "volumeMounts": (MergeKey(("mountPath",)),),
    "volumeDevices": (MergeKey(("devicePath",)),),
    "ports": (
        MergeKey(("containerPort", "protocol"), _PROTOCOL),
        MergeKey(("port", "protocol"), _PROTOCOL),
    ),
}
KEY_DEFAULTS: Mapping[str, Any] = _PROTOCOL
# Lists that behave as sets of unnamed items: admission appends to them (two NoExecute tolerations on
# every Pod), so each declared item must be somewhere in the live list, in any order.
SET_LISTS = frozenset({"tolerations"})
# Maps the API server keeps whole (`+mapType=atomic`): a key another writer adds takes the map from its
# owner, and planner's forced apply puts the declared map back whole, so they compare whole too.
ATOMIC_MAPS = frozenset({"nodeSelector"})

_QUANTITY_PARENTS = frozenset({"limits", "requests", "capacity"})
_QUANTITY_KEYS = frozenset({"sizeLimit", "divisor"})
_MISSING: Any = object()


@dataclass(frozen=True, kw_only=True)
class Difference:
    """One declared field whose live value differs; `before` None when the live object lacks it."""

    path: Path
    before: Any
    after: Any


def is_empty(value: Any) -> bool:
    """What a desired manifest may write without declaring anything (see the module docstring)."""
    return value is None or value is False or (isinstance(value, (str, list, dict)) and not value)


def declared(value: Any) -> Any:
    """`value` with every empty field dropped, recursively; list items are kept in place."""
    if isinstance(value, dict):
        kept = {k: declared(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if not is_empty(v)}
    if isinstance(value, list):
        return [declared(item) for item in value]
    return value


def with_server_forms(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest as a server stores it where planner might write another form: a Secret's
    `stringData` is base64-encoded into `data`."""
    result = dict(manifest)
    if manifest.get("kind") == SECRET.kind and manifest.get("stringData"):
        encoded = {
            k: base64.b64encode(str(v).encode()).decode("ascii") for k, v in manifest["stringData"].items()
        }
        result["data"] = {**(manifest.get("data") or {}), **encoded}
        del result["stringData"]
    return result


def differences(desired: Any, live: Any, path: Path = ()) -> list[Difference]:
    """Where the declared `desired` (already passed through `declared`) is not a subset of `live`."""
    if live is _MISSING or live is None:
        return [Difference(path=path, before=None, after=desired)]
    if isinstance(desired, dict):
        return _map_differences(desired, live, path)
    if isinstance(desired, list):
        return _list_differences(desired, live, path)
    if _same_scalar(desired, live, path):
        return []
    return [Difference(path=path, before=live, after=desired)]


def render_differences(old: Any, new: Any, path: Path = ()) -> list[Difference]:
    """Every difference between two of planner's own renders, compared both ways and exactly (neither is
    a live object with server additions): what `new` declares that `old` lacks or holds otherwise
    (`before` is old's value), then what only `old` declares (`after` None)."""
    forward = differences(declared(new), old, path)
    seen = {d.path for d in forward}
    removed = [
        Difference(path=d.path, before=d.after, after=None)
        for d in differences(declared(old), new, path)
        if d.path not in seen
    ]
    return forward + removed


def _map_differences(desired: dict[str, Any], live: Any, path: Path) -> list[Difference]:
    if not isinstance(live, dict):
        return [Difference(path=path, before=live, after=desired)]
    if path and path[-1] in ATOMIC_MAPS and live.keys() != desired.keys():
        return [Difference(path=path, before=live, after=desired)]
    found: list[Difference] = []
    for key in sorted(desired):
        found += differences(desired[key], live.get(key, _MISSING), (*path, key))
    return found


def _list_differences(desired: list[Any], live: Any, path: Path) -> list[Difference]:
    if not isinstance(live, list):
        return [Difference(path=path, before=live, after=desired)]
    name = path[-1] if path else None
    if name in SET_LISTS:
        contained = all(any(not differences(want, have, path) for have in live) for want in desired)
        return [] if contained else [Difference(path=path, before=live, after=desired)]
    key = merge_key(name, desired)
    if key is None:
        atomic_equal = len(desired) == len(live) and all(
            not differences(want, have, path) for want, have in zip(desired, live, strict=True)
        )
        return [] if atomic_equal else [Difference(path=path, before=live, after=desired)]
    found: list[Difference] = []
    for item in desired:
        item_key = key_of(key, item)
        found += differences(item, find_item(live, item_key), (*path, item_key))
    return found


def project(desired: Any, live: Any, name: Segment | None = None) -> Any:
    """The part of `live` that the declared `desired` speaks about, shaped like `desired`: map keys the
    plan declares, list items matched by merge key. What a saved plan digests to notice a moved object."""
    if isinstance(desired, dict) and isinstance(live, dict):
        return {k: project(v, live[k], k) for k, v in sorted(desired.items()) if k in live}
    if isinstance(desired, list) and isinstance(live, list):
        key = merge_key(name, desired)
        if key is None:
            return live
        matched = ((item, find_item(live, key_of(key, item))) for item in desired)
        return [project(want, have, name) for want, have in matched if have is not _MISSING]
    return live


def merge_key(list_name: Segment | None, items: Sequence[Any]) -> MergeKey | None:
    """The merge key of a list named `list_name` whose items are `items`, None for an atomic list."""
    if not isinstance(list_name, str) or not items or not all(isinstance(i, dict) for i in items):
        return None
    for candidate in MERGE_KEYS.get(list_name, ()):
        if all(candidate.fields[0] in item for item in items):
            return candidate
    return None


def key_of(key: MergeKey, item: Mapping[str, Any]) -> ItemKey:
    values = {name: item.get(name, key.defaults.get(name)) for name in key.fields}
    return ItemKey(tuple(sorted((k, v) for k, v in values.items() if v is not None)))


def find_item(items: Sequence[Any], wanted: ItemKey) -> Any:
    """The item of `items` with the merge key `wanted` (absent key fields take their defaults)."""
    for item in items:
        if isinstance(item, dict) and all(item.get(k, KEY_DEFAULTS.get(k)) == v for k, v in wanted.fields):
            return item
    return _MISSING


def _same_scalar(desired: Any, live: Any, path: Path) -> bool:
    if desired == live and type(desired) is type(live):
        return True
    if is_quantity_path(path):
        before, after = quantity(live), quantity(desired)
        return before is not None and before == after
    return False


def is_quantity_path(path: Path) -> bool:
    return bool(path) and (path[-1] in _QUANTITY_KEYS or (len(path) > 1 and path[-2] in _QUANTITY_PARENTS))


def quantity(value: Any) -> Decimal | None:
    """The value a server keeps of a Kubernetes quantity (`500m`, `0.5`, `1Gi`, `2`; `0.1n` keeps 1n),
    None when it is not one."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        return stored_quantity(str(value))
    except ValueError:
        return None


def lookup(value: Any, path: Path) -> Any:
    """The value at `path` inside `value`, or None when any step is missing."""
    for segment in path:
        value = _step(value, segment)
        if value is _MISSING:
            return None
    return value


def _step(value: Any, segment: Segment) -> Any:
    if isinstance(segment, str):
        return value.get(segment, _MISSING) if isinstance(value, dict) else _MISSING
    if not isinstance(value, list):
        return _MISSING
    if isinstance(segment, ItemKey):
        return find_item(value, segment)
    if isinstance(segment, SetValue):
        return segment.value if segment.value in value else _MISSING
    return value[segment.position] if 0 <= segment.position < len(value) else _MISSING


def format_path(path: Path) -> str:
    """`.spec.template.spec.containers[name=web].image`; keys with dots or slashes are quoted
    (`.metadata.annotations["planner.dev/hash"]`)."""
    parts: list[str] = []
    for segment in path:
        if isinstance(segment, str):
            plain = segment.replace("-", "").replace("_", "").isalnum()
            parts.append(f".{segment}" if plain else f'["{segment}"]')
        elif isinstance(segment, ItemKey):
            parts.append(str(segment))
        elif isinstance(segment, SetValue):
            parts.append(f"[{json.dumps(segment.value)}]")
        else:
            parts.append(f"[{segment.position}]")
    return "".join(parts)


def pattern_of(path: Path) -> str:
    """The `kinds.py` spelling of a path: dotted keys, `[*]` for any item (`spec.containers[*].image`)."""
    text = ""
    for segment in path:
        text += f".{segment}" if isinstance(segment, str) else "[*]"
    return text.lstrip(".")


def covers(pattern: str, path_pattern: str) -> bool:
    """Whether the `kinds.py` path `pattern` is `path_pattern` or one of its ancestors."""
    return path_pattern == pattern or path_pattern.startswith((pattern + ".", pattern + "["))


# --- ownership (managedFields, FieldsV1) ---


def parse_segment(key: str) -> Segment | None:
    """One FieldsV1 key as a path segment; None for `.` (the node itself)."""
    prefix, _, rest = key.partition(":")
    if prefix == "f":
        return rest
    if prefix == "k":
        return ItemKey(tuple(sorted(json.loads(rest).items())))
    if prefix == "v":
        return SetValue(json.loads(rest))
    if prefix == "i":
        return Index(int(rest))
    return None


def _children(node: Mapping[str, Any]) -> Iterator[tuple[Segment, Mapping[str, Any]]]:
    for key, child in node.items():
        segment = parse_segment(key)
        if segment is not None:
            yield segment, child if isinstance(child, dict) else {}


def owns(fields_v1: Mapping[str, Any], path: Path) -> bool:
    """Whether a FieldsV1 set covers `path`: the path itself, something beneath it, or an atomic
    ancestor (a leaf `{}` above it, such as `f:selector` or `f:command`)."""
    node: Mapping[str, Any] = fields_v1
    for segment in path:
        child = next((c for s, c in _children(node) if s == segment), None)
        if child is None:
            return False
        if not child:
            return True
        node = child
    return True


@dataclass(frozen=True, kw_only=True)
class ManagedEntry:
    manager: str
    operation: str
    subresource: str
    fields: Mapping[str, Any]
    time: str = ""  # when the manager last changed the object (RFC 3339, to the second)


def managed_entries(live: Mapping[str, Any]) -> list[ManagedEntry]:
    """The live object's managedFields entries in FieldsV1 format."""
    entries = metadata_of(live).get("managedFields") or []
    return [
        ManagedEntry(
            manager=str(e.get("manager", "")),
            operation=str(e.get("operation", "")),
            subresource=str(e.get("subresource", "")),
            fields=e.get("fieldsV1") or {},
            time=str(e.get("time") or ""),
        )
        for e in entries
        if isinstance(e, dict) and e.get("fieldsType", "FieldsV1") == "FieldsV1"
    ]


def owners(entries: Sequence[ManagedEntry], path: Path) -> list[str]:
    """The managers owning `path`, sorted; status-subresource writers never own declared fields."""
    return sorted({e.manager for e in entries if e.subresource != "status" and owns(e.fields, path)})


def dropped(fields_v1: Mapping[str, Any], desired: Any, path: Path = ()) -> list[Path]:
    """The topmost paths a FieldsV1 set owns that `desired` no longer has (a field the manager set and
    the manifest dropped). A path present in `desired` counts even when empty: it is still declared."""
    found: list[Path] = []
    for segment, child in _children(fields_v1):
        inner = _step(desired, segment)
        if inner is _MISSING:
            found.append((*path, segment))
        elif child:
            found += dropped(child, inner, (*path, segment))
    return found


def applied_part(created: Mapping[str, Any], desired: Any, *, item: bool = False) -> dict[str, Any]:
    """The part of `created` (the FieldsV1 set a create of `desired` recorded: every field the object
    had, defaults included) that `desired` declares: the set a server-side apply of `desired` would
    own. The server's spelling of every path is kept (keyed items with their defaulted key fields).
    An apply owns a list item itself (`.`) but not a map or struct it fills (a create marks those
    too), nor a map declared empty (`emptyDir: {}`; only an atomic map would be, and planner never
    declares one empty); a map declared but holding nothing `created` owns is left out."""
    part: dict[str, Any] = {}
    for key, child in created.items():
        segment = parse_segment(key)
        if segment is None:
            if item:
                part[key] = child
            continue
        inner = _step(desired, segment)
        if inner is _MISSING or inner == {}:
            continue
        if not child or not isinstance(child, dict):
            part[key] = {}
        elif narrowed := applied_part(child, inner, item=not isinstance(segment, str)):
            part[key] = narrowed
    return part


def leaves(value: Any, path: Path = ()) -> Iterator[Path]:
    """Every leaf path of a declared manifest, list items by merge key; atomic lists are leaves."""
    if isinstance(value, dict) and value:
        for key in sorted(value):
            yield from leaves(value[key], (*path, key))
        return
    if isinstance(value, list) and value:
        key = merge_key(path[-1] if path else None, value)
        if key is not None:
            for item in value:
                yield from leaves(item, (*path, key_of(key, item)))
            return
    yield path
