"""`planner build --explain`: the merged Plan object as YAML, each scalar value followed by the file,
line and column that set it as a comment (`replicas: 3  # prod.yaml:9:17`).

Written line by line here (ruamel cannot attach a comment to every value of plain data), in the block
style `to_yaml` prints (`- ` items at their key's indentation); each key and scalar is written as
ruamel writes it alone on one line, a string that would take several lines as a JSON string (valid
YAML). A value with no recorded origin (none is expected) gets no comment.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

from ruamel.yaml import YAML

from planner.plan.source import child_path

INDENT = "  "


def explained_yaml(data: dict[str, Any], origins: dict[str, str]) -> str:
    """`data` as one YAML document, each scalar with `# origin` from `origins` (by path)."""
    return "".join(f"{line}\n" for line in _mapping(data, "", "", origins))


def _mapping(data: dict[str, Any], path: str, indent: str, origins: dict[str, str]) -> Iterator[str]:
    for key, value in data.items():
        yield from _entry(f"{indent}{_scalar(key)}:", value, child_path(path, key), indent, origins)


def _entry(head: str, value: Any, path: str, indent: str, origins: dict[str, str]) -> Iterator[str]:
    """`head` (`key:` or `- `-led) followed by `value`, whose nested lines go under `indent`."""
    if isinstance(value, dict) and value:
        yield head
        yield from _mapping(value, path, indent + INDENT, origins)
    elif isinstance(value, list) and value:
        yield head
        yield from _sequence(value, path, indent, origins)
    else:
        yield f"{head} {_scalar(value)}{_comment(path, origins)}"


def _sequence(items: list[Any], path: str, indent: str, origins: dict[str, str]) -> Iterator[str]:
    for index, item in enumerate(items):
        item_path = child_path(path, index)
        if isinstance(item, dict) and item:
            lines = list(_mapping(item, item_path, indent + INDENT, origins))
            yield f"{indent}- {lines[0].removeprefix(indent + INDENT)}"
            yield from lines[1:]
        elif isinstance(item, list) and item:
            lines = list(_sequence(item, item_path, indent + INDENT, origins))
            yield f"{indent}- {lines[0].removeprefix(indent + INDENT)}"
            yield from lines[1:]
        else:
            yield f"{indent}- {_scalar(item)}{_comment(item_path, origins)}"


def _comment(path: str, origins: dict[str, str]) -> str:
    origin = origins.get(path)
    return f"  # {origin}" if origin is not None else ""


def _scalar(value: Any) -> str:
    """`value` as YAML writes it on one line: plain or quoted as ruamel chooses, `{}`/`[]` when empty."""
    yaml = YAML(typ="safe", pure=True)
    yaml.width = 1 << 30
    yaml.default_flow_style = True
    text = io.StringIO()
    yaml.dump([value], text)
    written = text.getvalue().rstrip("\n")
    if "\n" in written or not (written.startswith("[") and written.endswith("]")):
        return json.dumps(value)
    return written[1:-1]
