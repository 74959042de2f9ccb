"""A plan file's text with the secret values written in it literally replaced by `***`.

A generation record keeps the plan files an apply rendered, for people to read (`planner history
--show`); a value given literally under `secrets[].data`, `sandboxes[].secretEnv` or
`warmPools[].template.secretEnv` must not be among what they read. The text is composed again as the loader
composes it (libyaml, else ruamel.yaml's YAML 1.2 parser), and each such scalar is replaced
where it is written, so everything else — comments, order, layout — stays as the author wrote it. A
value from `valueFrom` (an environment variable, a file) is not in the text and needs nothing. An
anchored value keeps its anchor, so aliases elsewhere still read; the alias then shows `***` too.
"""

from __future__ import annotations

from collections.abc import Iterator

from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from planner.plan.secrets import SECRET_VALUE_MAPS
from planner.plan.source import plan_yaml

MASK = "***"
_MERGE_TAG = "tag:yaml.org,2002:merge"


def redacted(text: str) -> str | None:
    """`text` with every literal secret value replaced by `"***"`; None when it is not one YAML plan
    document that can be read (then nothing of it may be shown)."""
    document = _composed(text)
    if not isinstance(document, MappingNode):
        return None
    spans = {(node.start_mark.index, node.end_mark.index): node for node in _secret_scalars(document)}
    for (start, end), node in sorted(spans.items(), reverse=True):
        text = text[:start] + _replacement(text[start:end], node) + text[end:]
    return text


def _composed(text: str) -> Node | None:
    """The document's node graph, composed as the loader composes it: libyaml first (several times
    faster on a large plan), ruamel's YAML 1.2 parser for what libyaml refuses; None when neither reads
    it. Both mark positions in characters, so the spans replaced are the same either way."""
    for pure in (False, True):
        try:
            document: Node | None = plan_yaml(pure=pure).compose(text)
        except YAMLError:
            continue
        return document
    return None


def _replacement(written: str, node: ScalarNode) -> str:
    """`"***"`, after the value's anchor (aliases must still resolve) and before the line breaks a
    block scalar's text ends with (the next key stays on its own line)."""
    anchor = f"&{node.anchor} " if written.startswith("&") and node.anchor else ""
    breaks = written[len(written.rstrip("\r\n")) :]
    return f'{anchor}"{MASK}"{breaks}'


def _secret_scalars(document: MappingNode) -> Iterator[ScalarNode]:
    for location in SECRET_VALUE_MAPS:
        for values in _maps_at(document, location):
            for _, value in _pairs(values):
                if isinstance(value, ScalarNode):
                    yield value


def _maps_at(node: Node | None, location: tuple[str, ...]) -> Iterator[MappingNode]:
    if not isinstance(node, MappingNode):
        return
    if not location:
        yield node
        return
    key, *rest = location
    child = _value(node, key)
    if rest and rest[0] == "*":
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
