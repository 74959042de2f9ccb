"""Reading one plan file: YAML text to plain data plus the position of every node.

ruamel.yaml composes the text into a node graph whose every node carries its start line and column.
libyaml's C scanner (ruamel.yaml.clib) composes first, several times faster than the pure-Python one on
large plans; it scans YAML 1.1 and so refuses a few YAML 1.2 forms (`[postgres://db:5432]`), and any
file it refuses is composed again by ruamel's own YAML 1.2 parser, whose verdict and messages stand.
Tags are resolved by ruamel's YAML 1.2 resolver either way (`yes` stays a string).
This module walks that graph once, building plain dicts, lists and scalars and
recording, per path (`workloads[0].image`), where the key or item starts and, for scalars, where the
value starts. Validation messages point at values ("found integer 8080" points at the 8080), structural
messages at keys. Nothing later depends on ruamel's types.

Before anything is composed, `limits.py` checks the bytes (size, encoding, control characters) and
the parser's event stream (nesting, aliases), so hostile YAML is refused with a position instead of
exhausting the stack, memory or time. A tagged scalar the constructor cannot read (`!!int` of 5,000
digits) is a YAML error at the value.

A file holds one plan: a second YAML document is an error, not a second plan, because a plan name owns
one ApplySet and two plans in one file would hide that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from ruamel.yaml.resolver import VersionedResolver

from planner.errors import Diagnostic
from planner.plan.input_limits import event_problem, read_text
from planner.plan.model import Position
from planner.plan.redact import masked
from planner.plan.suggest import hint

_TOKEN = re.compile(r"[^\s,\]\}#]+")
_DOCUMENT_START = re.compile(r"^---(\s|$)")
_DUPLICATE_KEY = re.compile(r'found duplicate key "(.*)" with value')
_YAML_TAG_PREFIX = "tag:yaml.org,2002:"
_MERGE_TAG = f"{_YAML_TAG_PREFIX}merge"
_STR_TAG = f"{_YAML_TAG_PREFIX}str"
PLAN_TAGS = {"!default": "default", "!remove": "remove"}  # local tags the import merge reads (merge.py)
_YAML_TAGS = {  # the tags YAML's own types take, by the kind of node they may tag: any other is refused
    ScalarNode: ("str", "int", "float", "bool", "null", "timestamp", "binary"),
    MappingNode: ("map",),
    SequenceNode: ("seq",),
}


class _Yaml12Resolver(VersionedResolver):
    """ruamel's resolver, always at YAML 1.2. The stock one asks the parser for the document's version
    on every scalar, which with libyaml's parser means an AttributeError each time: a third of
    composing a large plan. A `%YAML 1.1` directive therefore does not make `yes` a boolean."""

    @property
    def processing_version(self) -> tuple[int, int]:
        return (1, 2)


def plan_yaml(*, pure: bool) -> YAML:
    """A safe loader for plan text: libyaml's scanner (`pure=False`) or ruamel's own, YAML 1.2 tags."""
    yaml = YAML(typ="safe", pure=pure)
    yaml.Resolver = _Yaml12Resolver
    return yaml


@dataclass(frozen=True, kw_only=True)
class ParsedFile:
    """One plan file as plain data, with positions by path."""

    file: str
    data: Any
    keys: dict[str, Position] = field(default_factory=dict)  # mapping keys and sequence items
    values: dict[str, Position] = field(default_factory=dict)  # scalar values
    lines: tuple[str, ...] = ()
    shown: str = ""  # the text with its literal secret values masked, as a generation record keeps it
    tags: dict[str, str] = field(default_factory=dict)  # `default`/`remove` by path (`!default` in the text)
    texts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # lines of imported files, by name
    imported: dict[str, str] = field(default_factory=dict)  # each imported file's `shown` text, by name
    # Each file of the plan (this one, its imports) that carried SOPS metadata, as read (`sealed.py`).
    sealed: tuple[ParsedFile, ...] = ()

    def position(self, path: str, *, at_value: bool = True) -> Position:
        """Where `path` is: its scalar value, else its key or item, else its nearest ancestor's."""
        if at_value and path in self.values:
            return self.values[path]
        while path:
            if path in self.keys:
                return self.keys[path]
            cut = max(path.rfind("."), path.rfind("["))
            path = path[:cut] if cut > 0 else ""
        return Position(line=1, column=1)

    def order(self, path: str) -> tuple[int, int]:
        """(line, column) of `path`, to sort things in file order."""
        where = self.position(path)
        return where.line, where.column

    def written(self, path: str) -> str | None:
        """The text of the scalar at `path` as written in the file that set it (`0.50`, `1e3`, `yes`)."""
        where = self.values.get(path)
        lines = self.texts.get(where.file, self.lines) if where is not None else self.lines
        if where is None or where.line > len(lines):
            return None
        match = _TOKEN.match(lines[where.line - 1], where.column - 1)
        return match.group(0) if match else None

    def diagnostic(
        self, path: str, message: str, *, at_value: bool = True, warning: bool = False
    ) -> Diagnostic:
        """A problem at `path`, in the file that set it (an imported fragment, or this file)."""
        where = self.position(path, at_value=at_value)
        file = self.file_of(where)
        if warning:
            return Diagnostic(file, where.line, where.column, path, message, "warning")
        return Diagnostic(file, where.line, where.column, path, message)

    def file_of(self, where: Position) -> str:
        """The name of the file `where` is in."""
        return where.file or self.file


def child_path(parent: str, key: object) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def plain_scalars(data: Any) -> dict[str, Any]:
    """Every scalar of a plan's data by its path (`workloads[0].replicas`), leaving out secret values:
    `secrets`, `secretEnv` maps, charts' `secretValues` and the `data`/`stringData` of an inline Secret
    manifest."""
    found: dict[str, Any] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            if key != "secrets":
                _collect(value, str(key), found)
    return found


def _collect(value: Any, path: str, found: dict[str, Any]) -> None:
    if isinstance(value, dict):
        secret_manifest = value.get("kind") == "Secret" and "apiVersion" in value
        for key, child in value.items():
            if key in ("secretEnv", "secretValues") or (secret_manifest and key in ("data", "stringData")):
                continue
            _collect(child, child_path(path, key), found)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _collect(child, child_path(path, index), found)
    else:
        found[path] = value


def read_plan_file(path: Path) -> ParsedFile | Diagnostic:
    """The parsed file, or the one diagnostic that stopped parsing (a limit of `limits.py`, a syntax
    error, a second document…)."""
    name = str(path)
    text = read_text(path)
    if isinstance(text, Diagnostic):
        return text
    return parse_plan_text(name, text)


def parse_plan_text(name: str, text: str) -> ParsedFile | Diagnostic:
    """`text` parsed as a plan file named `name` is (a Plan object's fields, written out as YAML)."""
    try:
        return _parse(name, text, pure=False)
    except MarkedYAMLError:
        pass  # libyaml scans YAML 1.1 and refuses some 1.2 plain scalars: let the 1.2 parser decide
    try:
        return _parse(name, text, pure=True)
    except MarkedYAMLError as error:
        return _syntax_diagnostic(name, error)


def read_documents(path: Path) -> ParsedFile | Diagnostic:
    """A file of Kubernetes objects (multi-document YAML, as `kubectl apply -f` reads it) under the
    same limits as a plan file: its data is the list of its non-empty documents, so the third one's
    `metadata.name` is at path `[2].metadata.name` and keeps its own line and column."""
    name = str(path)
    text = read_text(path, what="manifest file")
    if isinstance(text, Diagnostic):
        return text
    return parse_documents(name, text)


def parse_documents(name: str, text: str) -> ParsedFile | Diagnostic:
    """`text` read as `read_documents` reads a file named `name` (the output of a renderer, such as
    `kubectl kustomize`, which has no file of its own)."""
    try:
        return _parse(name, text, pure=False, documents=True)
    except MarkedYAMLError:
        pass
    try:
        return _parse(name, text, pure=True, documents=True)
    except MarkedYAMLError as error:
        return _syntax_diagnostic(name, error)


def _parse(name: str, text: str, *, pure: bool, documents: bool = False) -> ParsedFile | Diagnostic:
    """Check the event stream against the limits, then compose and walk the node graph."""
    problem = event_problem(name, plan_yaml(pure=pure).parse(text))
    if problem is not None:
        return problem
    yaml = plan_yaml(pure=pure)
    if documents:
        return _all_documents(name, text, list(yaml.compose_all(text)), yaml)
    return _single_document(name, text, list(yaml.compose_all(text)), yaml)


def _all_documents(name: str, text: str, documents: list[Node], yaml: YAML) -> ParsedFile:
    walk = _Walk(yaml)
    present = [document for document in documents if not _is_null(document)]
    data = []
    for index, document in enumerate(present):
        walk.keys[child_path("", index)] = walk.values[child_path("", index)] = _position(document)
        data.append(walk.plain(document, child_path("", index)))
    return ParsedFile(
        file=name,
        data=data,
        keys=walk.keys,
        values=walk.values,
        lines=tuple(text.splitlines()),
        tags=walk.tags,
    )


def _single_document(name: str, text: str, documents: list[Node], yaml: YAML) -> ParsedFile | Diagnostic:
    present = [document for document in documents if not _is_null(document)]
    lines = tuple(text.splitlines())
    if len(present) > 1:
        line = _second_document_line(lines)
        return Diagnostic(
            name,
            line,
            1,
            "",
            "a second YAML document: a plan file holds exactly one plan (split it into two files)",
        )
    if not present:
        return Diagnostic(name, 1, 1, "", "empty plan file: expected a plan (apiVersion, kind, metadata)")
    walk = _Walk(yaml)
    data = walk.plain(present[0], "")
    return ParsedFile(
        file=name,
        data=data,
        keys=walk.keys,
        values=walk.values,
        lines=lines,
        shown=masked(text, present[0]),
        tags=walk.tags,
    )


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == f"{_YAML_TAG_PREFIX}null"


class _Walk:
    """One walk over a composed document: plain data out, positions collected on the way down."""

    def __init__(self, yaml: YAML) -> None:
        self.keys: dict[str, Position] = {}
        self.values: dict[str, Position] = {}
        self.tags: dict[str, str] = {}
        self._constructor = yaml.constructor
        self._resolver = _Yaml12Resolver()

    def plain(self, node: Node, path: str) -> Any:
        # Read once: ruamel makes the tag's text anew on each read of `node.tag`.
        tag_text = str(node.tag)
        tag = PLAN_TAGS.get(tag_text)
        if tag is None and tag_text.removeprefix(_YAML_TAG_PREFIX) not in _YAML_TAGS[type(node)]:
            raise _unknown_tag(node, tag_text)
        if tag is not None:
            self.tags[path] = tag
            if isinstance(node, ScalarNode):  # read as if untagged: `!default 3` is the integer 3
                plain = not node.style
                implicit = self._resolver.resolve(ScalarNode, node.value, (plain, not plain))
                node = ScalarNode(implicit, node.value, node.start_mark, node.end_mark, style=node.style)
                tag_text = str(node.tag)
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        if isinstance(node, SequenceNode):
            return self._sequence(node, path)
        return self._scalar(node, tag_text)

    def _scalar(self, node: Node, tag_text: str) -> Any:
        if tag_text == _STR_TAG:  # most scalars: the constructor would return the text as it is
            return node.value
        try:
            value = _plain_scalar(self._constructor.construct_object(node, deep=True))
            if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
                raise ValueError("an integer too large to print")  # 0x… of thousands of digits
            return value
        except (ValueError, TypeError, ArithmeticError, LookupError) as error:  # `!!int` of 5,000 digits
            tag = str(node.tag).replace(_YAML_TAG_PREFIX, "!!")
            raise MarkedYAMLError(
                problem=f"cannot read this {tag} value", problem_mark=node.start_mark
            ) from error

    def _mapping(self, node: MappingNode, path: str) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in _merged_pairs(node):
            key = str(self.plain(key_node, path))
            if key in result:
                raise MarkedYAMLError(
                    problem=f'found duplicate key "{key}" with value', problem_mark=key_node.start_mark
                )
            here = child_path(path, key)
            self.keys[here] = _position(key_node)
            if isinstance(value_node, ScalarNode):
                self.values[here] = _position(value_node)
            result[key] = self.plain(value_node, here)
        return result

    def _sequence(self, node: SequenceNode, path: str) -> list[Any]:
        items: list[Any] = []
        for index, value_node in enumerate(node.value):
            here = child_path(path, index)
            self.keys[here] = self.values[here] = _position(value_node)
            items.append(self.plain(value_node, here))
        return items


def _unknown_tag(node: Node, tag_text: str) -> MarkedYAMLError:
    """A tag nothing reads, which would otherwise be dropped in silence (`- !remov {name: worker}`
    removing nothing): refused at the tag, naming the tags the node could take."""
    shown = tag_text.replace(_YAML_TAG_PREFIX, "!!")
    known = [*PLAN_TAGS, *(f"!!{name}" for name in _YAML_TAGS[type(node)])]
    kind = {ScalarNode: "value", MappingNode: "mapping", SequenceNode: "list"}[type(node)]
    problem = f"unknown tag {shown!r} on a {kind}" + hint(shown, known, listing="known tags")
    return MarkedYAMLError(problem=problem, problem_mark=node.start_mark)


def _merged_pairs(node: MappingNode) -> list[tuple[Node, Node]]:
    """The mapping's key/value pairs with YAML merge keys (`<<: *base`) expanded; own keys win."""
    merges = [(k.tag == _MERGE_TAG, (k, v)) for k, v in node.value]
    own = [pair for is_merge, pair in merges if not is_merge]
    if len(own) == len(merges):
        return own
    names = {k.value for k, _ in own if isinstance(k, ScalarNode)}
    merged: list[tuple[Node, Node]] = []
    for value_node in [value for is_merge, (_, value) in merges if is_merge]:
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        for source in sources:
            for k, v in _merged_pairs(source) if isinstance(source, MappingNode) else []:
                if isinstance(k, ScalarNode) and k.value not in names:
                    names.add(k.value)
                    merged.append((k, v))
    return merged + own


# Python prints no integer of more than 4,300 decimal digits (sys.get_int_max_str_digits), which a hex,
# octal or binary YAML integer can exceed; no plan value comes near.
_MAX_INT_BITS = 14_000


def _plain_scalar(node: Any) -> Any:
    if node is None or isinstance(node, bool):
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return str(node)  # strings, and timestamps or other tagged scalars as the text YAML gave


def _position(node: Node) -> Position:
    return Position(line=node.start_mark.line + 1, column=node.start_mark.column + 1)


def _syntax_diagnostic(name: str, error: MarkedYAMLError) -> Diagnostic:
    mark = error.problem_mark or error.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = str(error.problem or error.context or "unreadable YAML")
    duplicate = _DUPLICATE_KEY.match(problem)
    if duplicate:  # ruamel's text quotes both values, which may be secrets
        problem = f'duplicate key "{duplicate.group(1)}"'
    return Diagnostic(name, line, column, "", f"invalid YAML: {problem}")


def _second_document_line(lines: tuple[str, ...]) -> int:
    starts = [number for number, line in enumerate(lines, start=1) if _DOCUMENT_START.match(line)]
    first_content = next(
        (
            number
            for number, line in enumerate(lines, start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ),
        1,
    )
    later = [number for number in starts if number > first_content]
    return later[0] if later else (starts[0] if starts else 1)
