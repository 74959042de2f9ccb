"""A plan file's text with the secret values written in it literally replaced by `***`.

A generation record keeps the plan files an apply rendered, for people to read (`planner history
--show`); a value given literally under `secrets[].data`, `sandboxes[].secretEnv`,
`warmPools[].template.secretEnv`, anywhere under a chart's `secretValues`, or in the
`data`/`stringData` of an inline Secret manifest must not be
among what they read. The loader masks them while it reads
the file (`ParsedFile.shown`), from the node graph it composed anyway: each such scalar is replaced
where it is written, so everything else — comments, order, layout — stays as the author wrote it, and
the record keeps the text that was applied, not whatever the file holds by the time the apply ends. A
value from `valueFrom` (an environment variable, a file) is not in the text and needs nothing. An
anchored value keeps its anchor, so aliases elsewhere still read; the alias then shows `***` too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from planner.sops.plaintext import is_encrypted

MASK = "***"
# Where a plan holds secret values: the maps under these keys (`*`: every item of a list). The loader
# resolves them (`planner.plan.secrets`) and masks the ones written literally in the text it keeps.
SECRET_VALUE_MAPS: tuple[tuple[str, ...], ...] = (
    ("secrets", "*", "data"),
    ("sandboxes", "*", "secretEnv"),
    ("warmPools", "*", "template", "secretEnv"),
    ("charts", "*", "credentials"),
)
# Trees of secret values (nested maps, as Helm values are): every leaf under these is one.
SECRET_VALUE_TREES: tuple[tuple[str, ...], ...] = (("charts", "*", "secretValues"),)
_MERGE_TAG = "tag:yaml.org,2002:merge"


def masked(text: str, document: Node) -> str:
    """`text`, which composed to `document`, with every literal secret value replaced by `"***"`
    (marks count characters, with libyaml and ruamel's own parser alike)."""
    if not isinstance(document, MappingNode):
        return text
    spans = {(node.start_mark.index, node.end_mark.index): node for node in _secret_scalars(document)}
    pieces, kept_until = [], 0
    for (start, end), node in sorted(spans.items()):
        pieces += [text[kept_until:start], _replacement(text[start:end], node)]
        kept_until = end
    pieces.append(text[kept_until:])
    return "".join(pieces)


def _replacement(written: str, node: ScalarNode) -> str:
    """`"***"`, after the value's anchor (aliases must still resolve) and before the line breaks a
    block scalar's text ends with (the next key stays on its own line)."""
    anchor = f"&{node.anchor} " if written.startswith("&") and node.anchor else ""
    breaks = written[len(written.rstrip("\r\n")) :]
    return f'{anchor}"{MASK}"{breaks}'


def _secret_scalars(document: MappingNode) -> Iterator[ScalarNode]:
    for location in (*SECRET_VALUE_MAPS, *_raw_secret_maps(document)):
        for values in _maps_at(document, location):
            for _, value in _pairs(values):
                if isinstance(value, ScalarNode):
                    yield value
    for location in SECRET_VALUE_TREES:
        for tree in _maps_at(document, location):
            yield from _tree_scalars(tree)


def _tree_scalars(tree: MappingNode) -> Iterator[ScalarNode]:
    for _, value in _pairs(tree):
        if isinstance(value, ScalarNode):
            yield value
        elif isinstance(value, MappingNode) and _value(value, "valueFrom") is None:
            yield from _tree_scalars(value)


def _raw_secret_maps(document: MappingNode) -> Iterator[tuple[str, ...]]:
    """`manifests[i].data` and `.stringData` of each inline manifest that is a Secret."""
    items = _value(document, "manifests")
    for index, item in enumerate(items.value if isinstance(items, SequenceNode) else []):
        kind = _value(item, "kind") if isinstance(item, MappingNode) else None
        if isinstance(kind, ScalarNode) and kind.value == "Secret":
            yield from (("manifests", str(index), field) for field in ("data", "stringData"))


def _maps_at(node: Node | None, location: tuple[str, ...]) -> Iterator[MappingNode]:
    if not isinstance(node, MappingNode):
        return
    if not location:
        yield node
        return
    key, *rest = location
    child = _value(node, key)
    if rest and rest[0].isdigit():  # one item of a list
        items = child.value if isinstance(child, SequenceNode) else []
        if int(rest[0]) < len(items):
            yield from _maps_at(items[int(rest[0])], tuple(rest[1:]))
    elif rest and rest[0] == "*":
        for item in child.value if isinstance(child, SequenceNode) else []:
            yield from _maps_at(item, tuple(rest[1:]))
    else:
        yield from _maps_at(child, tuple(rest))


def _value(node: MappingNode, key: str) -> Node | None:
    return next((value for name, value in _pairs(node) if name.value == key), None)


def _pairs(node: MappingNode) -> Iterator[tuple[Node, Node]]:
    """The mapping's key/value pairs, those merged in (`<<: *base`) included."""
    for key, value in node.value:
        if key.tag != _MERGE_TAG:
            yield key, value
            continue
        for source in value.value if isinstance(value, SequenceNode) else [value]:
            if isinstance(source, MappingNode):
                yield from _pairs(source)


def literal_secret_paths(document: Mapping[str, Any]) -> list[str]:
    """The paths of the secret values written literally in a plan as data (a Plan object as the API
    server returns it): `secrets[0].data.password`. A Plan object stores them in plain text, and so does
    `kubectl apply`'s last-applied-configuration annotation; `valueFrom.secretKeyRef` keeps them out."""
    found = []
    for location in SECRET_VALUE_MAPS:
        for path, values in _dict_maps_at(document, location, ""):
            found += [
                f"{path}.{key}"
                for key, value in values.items()
                if isinstance(value, str) and not is_encrypted(value)
            ]
    for index, item in enumerate(document.get("manifests") or []):
        if isinstance(item, Mapping) and item.get("kind") == "Secret":
            for field in ("data", "stringData"):
                written = item.get(field)
                keys = list(written) if isinstance(written, Mapping) else []
                found += [f"manifests[{index}].{field}.{key}" for key in keys]
    return found


def _dict_maps_at(node: Any, location: tuple[str, ...], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not location:
        if isinstance(node, Mapping):
            yield path, node
        return
    key, *rest = location
    if key == "*":
        for index, item in enumerate(node if isinstance(node, list) else []):
            yield from _dict_maps_at(item, tuple(rest), f"{path}[{index}]")
        return
    child = node.get(key) if isinstance(node, Mapping) else None
    yield from _dict_maps_at(child, tuple(rest), f"{path}.{key}" if path else key)
