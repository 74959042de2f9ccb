"""Labels and annotations as the API server validates them, so a bad one stops at `validate`.

The rules are apimachinery's (`IsQualifiedName`, `IsValidLabelValue`, `ValidateAnnotations`): a key is
`name` or `prefix/name`, the prefix a DNS subdomain of at most 253 characters, the name at most 63
letters, digits, `-`, `_` or `.` starting and ending with a letter or digit; a label value is empty or
such a name; annotation keys follow the key rule (the prefix compared in lowercase). A scheduling
term's `key` is a node label key and follows the key rule too. How many bytes of annotations an object
may carry depends on what planner adds to them: `render/size_limits.py` checks that on the rendered objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from planner.errors import Diagnostic
from planner.plan.raw import Node, workload_kind
from planner.plan.source import ParsedFile

MAX_PREFIX = 253
MAX_NAME_PART = 63
MAX_LABEL_VALUE = 63
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_CHARACTERS = "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"


def meta_diagnostics(plan: Node, parsed: ParsedFile) -> Iterator[Diagnostic]:
    for workload in plan.items("workloads"):
        for field in ("labels", *workload_kind(workload).label_maps):
            yield from _labels(workload, field, parsed)
        for field in ("annotations", "podAnnotations"):
            yield from _annotations(workload, field, parsed)
        if (ingress := workload.child("ingress")) is not None:
            yield from _annotations(ingress, "annotations", parsed)
        for term in workload.items("scheduling"):
            key = term.text("key")
            problem = key_problem(key, "node label key") if key else None
            if problem:
                yield parsed.diagnostic(term.at("key"), problem)


def _labels(owner: Node, field: str, parsed: ParsedFile) -> Iterator[Diagnostic]:
    labels = owner.child(field)
    for key, value in _strings(labels.data if labels else {}):
        problem = key_problem(key, "label key")
        if problem:
            yield parsed.diagnostic(f"{owner.at(field)}.{key}", problem, at_value=False)
        problem = label_value_problem(value)
        if problem:
            yield parsed.diagnostic(f"{owner.at(field)}.{key}", problem)


def _annotations(owner: Node, field: str, parsed: ParsedFile) -> Iterator[Diagnostic]:
    annotations = owner.child(field)
    for key, _ in _strings(annotations.data if annotations else {}):
        problem = key_problem(key, "annotation key", any_case=True)
        if problem:
            yield parsed.diagnostic(f"{owner.at(field)}.{key}", problem, at_value=False)


def _strings(data: Mapping[str, object]) -> list[tuple[str, str]]:
    """(key, value) of the string values (the schema check reports the others)."""
    return [(key, value) for key, value in data.items() if isinstance(value, str)]


def key_problem(key: str, noun: str, *, any_case: bool = False) -> str | None:
    """Why `key` is not a qualified name (`name` or `prefix/name`), or None. `any_case`: the prefix is
    checked in lowercase, as the API checks annotation keys."""
    parts = key.split("/")
    if len(parts) > 2:
        return f'{noun} "{key}" has more than one "/": expected "name" or "prefix/name"'
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return f'{noun} "{key}" has an empty prefix before "/"'
        if len(prefix) > MAX_PREFIX:
            return f"{noun} prefix is {len(prefix)} characters: at most {MAX_PREFIX} (a DNS subdomain)"
        if not _SUBDOMAIN.fullmatch(prefix.lower() if any_case else prefix):
            return (
                f'{noun} prefix "{prefix}" is not a DNS subdomain: expected lowercase letters, digits, '
                "'-' and '.', starting and ending with a letter or digit (example.com)"
            )
    name = parts[-1]
    if not name:
        return f'{noun} "{key}" has an empty name'
    if len(name) > MAX_NAME_PART:
        return f"{noun} name is {len(name)} characters: at most {MAX_NAME_PART}"
    if not _NAME_PART.fullmatch(name):
        return f'{noun} name "{name}" is not valid: expected {_NAME_CHARACTERS}'
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > MAX_LABEL_VALUE:
        return f"label value is {len(value)} characters: at most {MAX_LABEL_VALUE}"
    if value and not _NAME_PART.fullmatch(value):
        return f'label value "{value}" is not valid: expected empty, or {_NAME_CHARACTERS}'
    return None
