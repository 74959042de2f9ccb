"""The apiserver's YAML-to-JSON conversion (sigs.k8s.io/yaml over go-yaml), with its strict check.

A YAML body — a create or update sent as `application/yaml`, or a server-side apply configuration
(JSON is YAML too) — is converted to JSON values before anything reads it: timestamps stay the strings
they were written as, and of two equal keys in one mapping the later wins. In strict mode the apiserver
converts the body a second time with go-yaml's strict decoder, whose one extra complaint is such a
duplicate key: `yaml: unmarshal errors:\\n  line 5: key "replicas" already set in map`, one line per
pair of equal keys, each mapping's own pairs before those of the mappings inside it. `convert` does
both at once from one parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

TIMESTAMP = "tag:yaml.org,2002:timestamp"
MERGE = "tag:yaml.org,2002:merge"
STRICT_PREFIX = "error converting YAML to JSON: yaml: unmarshal errors:\n  "


@dataclass(frozen=True)
class Converted:
    """A YAML document as JSON values, and go-yaml's strict complaints about it."""

    value: Any
    duplicates: tuple[str, ...] = ()

    @property
    def strict_error(self) -> str | None:
        """The error YAMLToJSONStrict returns, or None."""
        return STRICT_PREFIX + "\n  ".join(self.duplicates) if self.duplicates else None


def convert(text: str) -> Converted:
    """One YAML document (empty: null) as JSON values; raises ruamel's YAMLError when it is not YAML."""
    yaml = YAML(typ="safe", pure=True)
    node = yaml.compose(text)
    if node is None:
        return Converted(None)
    duplicates: list[str] = []
    value = _value(yaml, node, duplicates)
    return Converted(value, tuple(duplicates))


def _value(yaml: YAML, node: Node, duplicates: list[str]) -> Any:
    if isinstance(node, MappingNode):
        duplicates.extend(_duplicate_keys(node))
        return _mapping(yaml, node, duplicates)
    if isinstance(node, SequenceNode):
        return [_value(yaml, item, duplicates) for item in node.value]
    if node.tag == TIMESTAMP:
        return str(node.value)
    return yaml.constructor.construct_object(node, deep=True)


def _mapping(yaml: YAML, node: MappingNode, duplicates: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if key_node.tag == MERGE:
            for merged in _merged(yaml, value_node, duplicates):
                for key, item in merged.items():
                    out.setdefault(key, item)
            continue
        key = _value(yaml, key_node, duplicates)
        out[str(key) if not isinstance(key, str) else key] = _value(yaml, value_node, duplicates)
    return out


def _merged(yaml: YAML, node: Node, duplicates: list[str]) -> list[dict[str, Any]]:
    sources = node.value if isinstance(node, SequenceNode) else [node]
    return [value for source in sources if isinstance(value := _value(yaml, source, duplicates), dict)]


def _duplicate_keys(node: MappingNode) -> list[str]:
    """go-yaml's check: every later key equal to an earlier one, as `line N: key "k" already set in map`."""
    keys = [key for key, _ in node.value]
    found = []
    for i, first in enumerate(keys):
        for later in keys[i + 1 :]:
            if isinstance(first, ScalarNode) and isinstance(later, ScalarNode) and first.value == later.value:
                found.append(
                    f"line {later.start_mark.line + 1}: key {_go_quote(later.value)} already set in map"
                )
    return found


def _go_quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'
