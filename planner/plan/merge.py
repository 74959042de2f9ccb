"""Merging plan files: a plan and the fragments it imports (`imports:`) become one plan, every value
keeping the file, line and column that set it.

The rules (docs/plan-format.md, "Imports", tells them with examples):

- Mappings merge key by key.
- Lists of named things merge entry by entry: `workloads`, `sandboxes`, `warmPools`, `configMaps`,
  `secrets`, `volumeClaims`, `charts` (a chart's `values` merge key by key, as an environment sets its
  own over a base) and a workload's `sidecars` and `initContainers` by `name`; `manifests` by
  apiVersion, kind, `metadata.namespace` and `metadata.name`. An inherited entry keeps its place, a new
  one comes after the inherited ones. Every other list, and every scalar, is replaced as a whole.
- The importing file wins over everything it imports.
- Two imports of one file that set the same value differently are an error naming both places, unless
  exactly one of them marks it `!default`, or the importing file sets that value itself. A value one
  side overrides and the other merely inherits from a file both import (a shared base) is no
  disagreement: the override stands. A `!default`
  on a mapping or list marks everything under it.
- `!remove` on a named entry (`- !remove {name: worker}`) or on a mapping value (`DEBUG: !remove`)
  removes what the file's imports declare there; removing something no import declares is an error.

A file is read into a `Located` tree (its data with each node's positions, file-qualified); merging
works on trees, and `flatten` turns the merged tree back into plain data and positions by path, so
everything after the merge reads a `ParsedFile` as it reads one file.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from planner.errors import Diagnostic
from planner.plan.model import Position
from planner.plan.source import ParsedFile, child_path

NAMED_BY_NAME = frozenset(
    {
        "workloads",
        "sandboxes",
        "warmPools",
        "configMaps",
        "secrets",
        "volumeClaims",
        "charts",
        "workloads[].sidecars",
        "workloads[].initContainers",
    }
)
NAMED_AS_OBJECTS = frozenset({"manifests"})  # by apiVersion, kind, metadata.namespace, metadata.name


@dataclass(frozen=True)
class Located:
    """One node of a plan file: its value (a dict or list of nodes, or a scalar) and where it is."""

    value: Any
    file: str  # "" for the importing plan file itself
    path: str  # its path in that file
    key: Position  # where its key or list item starts
    at: Position | None  # where its scalar value starts
    default: bool = False  # marked `!default`, or under a node so marked
    remove: bool = False  # marked `!remove`
    supersedes: frozenset[str] = frozenset()  # files whose value here this one replaced (an import's)

    def plain(self) -> Any:
        """The node as plain data, as the file's data holds it."""
        if isinstance(self.value, dict):
            return {key: node.plain() for key, node in self.value.items()}
        if isinstance(self.value, list):
            return [node.plain() for node in self.value]
        return self.value

    def where(self) -> Position:
        return self.at or self.key

    def place(self) -> str:
        where = self.where()
        return f"{where.file}:{where.line}:{where.column}"


def located(parsed: ParsedFile, file: str) -> Located:
    """`parsed` as a tree; `file` names it in positions ("" for the plan file itself)."""
    return _node(parsed, file, "", parsed.data, default=False)


def _node(parsed: ParsedFile, file: str, path: str, data: Any, *, default: bool) -> Located:
    tag = parsed.tags.get(path)
    default = default or tag == "default"
    if isinstance(data, dict):
        value: Any = {
            key: _node(parsed, file, child_path(path, key), item, default=default)
            for key, item in data.items()
        }
    elif isinstance(data, list):
        value = [
            _node(parsed, file, child_path(path, i), item, default=default) for i, item in enumerate(data)
        ]
    else:
        value = data
    key = parsed.keys.get(path, Position(line=1, column=1))
    at = parsed.values.get(path)
    return Located(
        value=value,
        file=file,
        path=path,
        key=replace(key, file=file),
        at=replace(at, file=file) if at is not None else None,
        default=default,
        remove=tag == "remove",
    )


def without(tree: Located, key: str) -> Located:
    """`tree` (a mapping) without `key`."""
    if not isinstance(tree.value, dict):
        return tree
    return replace(tree, value={k: v for k, v in tree.value.items() if k != key})


# --- the importing file over what it imports ---------------------------------------------------------


def override(lower: Located | None, upper: Located, shape: str, problems: list[Diagnostic]) -> Located:
    """`upper` (the importing file's node) over `lower` (what its imports declare there, if anything):
    mappings and named lists merge, anything else is `upper`'s. `shape` is the path with list indices
    left out (`workloads[].sidecars`), which says which lists are named."""
    if isinstance(upper.value, dict):
        below = lower.value if lower is not None and isinstance(lower.value, dict) else {}
        return replace(upper, value=_override_mapping(below, upper.value, shape, problems))
    if isinstance(upper.value, list) and _named(shape):
        below_items = lower.value if lower is not None and isinstance(lower.value, list) else []
        return replace(upper, value=_override_named(below_items, upper.value, shape, problems))
    if isinstance(upper.value, list):  # replaced whole: a `!remove` in it has no entry to remove
        problems.extend(_nothing_to_remove(item) for item in upper.value if item.remove)
    if lower is None:
        return upper
    return replace(upper, supersedes=upper.supersedes | lower.supersedes | {lower.file})


def _override_mapping(
    lower: dict[str, Located], upper: dict[str, Located], shape: str, problems: list[Diagnostic]
) -> dict[str, Located]:
    result = dict(lower)
    for key, node in upper.items():
        below = result.get(key)
        if node.remove:
            if below is None:
                problems.append(_nothing_to_remove(node))
            result.pop(key, None)
            continue
        result[key] = override(below, node, child_path(shape, key), problems)
    return result


def _override_named(
    lower: list[Located], upper: list[Located], shape: str, problems: list[Diagnostic]
) -> list[Located]:
    result = _by_identity(lower, shape)
    for node in upper:
        identity = _identity(shape, node.value)
        below = result.get(identity) if identity is not None else None
        if node.remove:
            if below is None:
                problems.append(_nothing_to_remove(node))
            else:
                del result[identity]
            continue
        merged = override(below, node, f"{shape}[]", problems)
        result[identity if below is not None else _fresh_key(result, identity)] = merged
    return list(result.values())


def _nothing_to_remove(node: Located) -> Diagnostic:
    where = node.key
    return Diagnostic(
        where.file,
        where.line,
        where.column,
        node.path,
        "!remove removes nothing: no file this one imports declares it",
    )


# --- two imports of one file -------------------------------------------------------------------------


def join(
    left: Located, right: Located, over: Located | None, shape: str, problems: list[Diagnostic]
) -> Located:
    """Two imports' nodes at one place (`left` imported first), `over` the importing file's node there
    if it sets one. Where they disagree on a value and neither is `!default` nor set by the importing
    file, the problem names both places and `left` stands."""
    if isinstance(left.value, dict) and isinstance(right.value, dict):
        return replace(left, value=_join_mapping(left.value, right.value, over, shape, problems))
    if isinstance(left.value, list) and isinstance(right.value, list) and _named(shape):
        return replace(left, value=_join_named(left.value, right.value, over, shape, problems))
    if left.plain() == right.plain() or over is not None:
        return left if left.plain() == right.plain() else right
    if right.file in left.supersedes:  # a file both import, which `left`'s side overrode
        return left
    if left.file in right.supersedes:
        return right
    if left.default != right.default:
        return right if left.default else left
    problems.append(_conflict(left, right))
    return left


def _join_mapping(
    left: dict[str, Located],
    right: dict[str, Located],
    over: Located | None,
    shape: str,
    problems: list[Diagnostic],
) -> dict[str, Located]:
    result = dict(left)
    above = over.value if over is not None and isinstance(over.value, dict) else {}
    for key, node in right.items():
        earlier = result.get(key)
        here = child_path(shape, key)
        result[key] = node if earlier is None else join(earlier, node, above.get(key), here, problems)
    return result


def _join_named(
    left: list[Located],
    right: list[Located],
    over: Located | None,
    shape: str,
    problems: list[Diagnostic],
) -> list[Located]:
    result = _by_identity(left, shape)
    above = _by_identity(over.value, shape) if over is not None and isinstance(over.value, list) else {}
    for node in right:
        identity = _identity(shape, node.value)
        earlier = result.get(identity) if identity is not None else None
        if earlier is None:
            result[_fresh_key(result, identity)] = node
        else:
            result[identity] = join(earlier, node, above.get(identity), f"{shape}[]", problems)
    return list(result.values())


def _conflict(left: Located, right: Located) -> Diagnostic:
    where = right.where()
    return Diagnostic(
        where.file,
        where.line,
        where.column,
        right.path,
        f"{_shown(right)} conflicts with {_shown(left)} set at {left.place()} (both imported by one "
        "file): set it in the importing file, or mark one of them !default",
    )


def _shown(node: Located) -> str:
    value = node.plain()
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return json.dumps(value)


# --- named lists -------------------------------------------------------------------------------------


def _named(shape: str) -> bool:
    return shape in NAMED_BY_NAME or shape in NAMED_AS_OBJECTS


def _identity(shape: str, item: Any) -> Hashable | None:
    """What names an entry of the named list at `shape`; None for an entry without it (a broken entry,
    which is kept as it is, for the schema check to report)."""
    if not isinstance(item, dict):
        return None
    if shape in NAMED_AS_OBJECTS:
        metadata = item.get("metadata")
        fields = metadata.value if metadata is not None and isinstance(metadata.value, dict) else {}
        parts = (item.get("apiVersion"), item.get("kind"), fields.get("namespace"), fields.get("name"))
        return tuple(part.value if part is not None else None for part in parts)
    name = item.get("name")
    return name.value if name is not None and isinstance(name.value, str) else None


def _by_identity(items: list[Located], shape: str) -> dict[Hashable, Located]:
    """Entries by identity, in order; a repeated or missing identity gets a key of its own, so nothing
    is merged away before the checks that report it."""
    result: dict[Hashable, Located] = {}
    for node in items:
        identity = _identity(shape, node.value)
        result[
            identity if identity is not None and identity not in result else _fresh_key(result, identity)
        ] = node
    return result


def _fresh_key(result: dict[Hashable, Located], identity: Hashable | None) -> Hashable:
    if identity is not None and identity not in result:
        return identity
    return ("#unnamed", object())  # unique: the entries' order is the dict's, not the keys'


# --- back to plain data ------------------------------------------------------------------------------


def flatten(tree: Located) -> tuple[Any, dict[str, Position], dict[str, Position]]:
    """The merged tree as plain data with positions by its new paths (keys/items, scalar values)."""
    keys: dict[str, Position] = {}
    values: dict[str, Position] = {}
    for path, node in _walk(tree, ""):
        if path:
            keys[path] = node.key
        if node.at is not None:
            values[path] = node.at
    return tree.plain(), keys, values


def _walk(node: Located, path: str) -> Iterator[tuple[str, Located]]:
    yield path, node
    if isinstance(node.value, dict):
        for key, child in node.value.items():
            yield from _walk(child, child_path(path, key))
    elif isinstance(node.value, list):
        for index, child in enumerate(node.value):
            yield from _walk(child, child_path(path, index))
