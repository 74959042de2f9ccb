"""Label and field selectors: parsed once per request, then matched against many objects.

Label selectors accept every form `kubectl` and client-go send: `k=v`,
`k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, comma meaning AND. Field
selectors accept `=`, `==`, `!=` on the fields a kind supports (every kind: `metadata.name` and
`metadata.namespace`; more per kind in the resource table); anything else is a 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from planner.slim.status_errors import bad_request

FieldGetter = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # one of = != in notin exists !exists > <
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        return present and _compare_int(value, self.op, self.values[0])


def _compare_int(value: str, op: str, bound: str) -> bool:
    try:
        number = int(value)
    except ValueError:
        return False
    return number > int(bound) if op == ">" else number < int(bound)


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(req.matches(labels or {}) for req in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


_SET_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_CMP_RE = re.compile(r"^\s*([^\s!=<>(),]+)\s*(==|=|!=|>|<)\s*([^\s,()]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>(),]+)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split at commas that are not inside `( … )`."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [t for t in terms if t.strip()]


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text:
        return LabelSelector()
    return LabelSelector(tuple(_parse_term(term) for term in _split_terms(text)))


def _parse_term(term: str) -> Requirement:
    if match := _SET_RE.match(term):
        values = tuple(v.strip() for v in match.group(3).split(",") if v.strip())
        return Requirement(match.group(1), match.group(2), values)
    if match := _CMP_RE.match(term):
        op = "=" if match.group(2) == "==" else match.group(2)
        if op in {">", "<"} and not re.fullmatch(r"-?\d+", match.group(3)):
            raise bad_request(
                "unable to parse requirement: for 'gt', 'lt' operators, the value must be an integer"
            )
        return Requirement(match.group(1), op, (match.group(3),))
    if match := _EXISTS_RE.match(term):
        return Requirement(match.group(2), "!exists" if match.group(1) else "exists")
    raise bad_request(f"unable to parse requirement: found '{term.strip()}', expected: identifier")


def selector_from_label_selector(spec: Mapping[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector (matchLabels + matchExpressions) as requirements."""
    if not spec:
        return LabelSelector()
    reqs = [Requirement(k, "=", (str(v),)) for k, v in (spec.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in spec.get("matchExpressions") or []:
        reqs.append(
            Requirement(
                expr.get("key", ""), ops.get(expr.get("operator", ""), "in"), tuple(expr.get("values") or ())
            )
        )
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class FieldTerm:
    path: str
    value: str
    negate: bool


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    def matches(self, obj: dict[str, Any], getters: Mapping[str, FieldGetter]) -> bool:
        return all((getters[t.path](obj) == t.value) != t.negate for t in self.terms)

    def exact_name(self) -> str | None:
        """The name when the selector pins `metadata.name=X` (kubectl wait), to skip a scan."""
        for term in self.terms:
            if term.path == "metadata.name" and not term.negate:
                return term.value
        return None


def parse_field_selector(text: str | None, getters: Mapping[str, FieldGetter]) -> FieldSelector:
    if not text:
        return FieldSelector()
    terms = []
    for raw in _split_terms(text):
        match = re.match(r"^\s*([^=!]+?)\s*(==|=|!=)\s*(.*?)\s*$", raw)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{raw}'")
        path = match.group(1)
        if path not in getters:
            raise bad_request(f"field label not supported: {path}")
        terms.append(FieldTerm(path, match.group(3), match.group(2) == "!="))
    return FieldSelector(tuple(terms))


def dig(obj: Mapping[str, Any], dotted: str) -> str:
    """The string value at a dotted path, "" when absent (field-selector semantics)."""
    current: Any = obj
    for part in dotted.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
    return "" if current is None else str(current)


def field_getter(dotted: str) -> FieldGetter:
    return lambda obj: dig(obj, dotted)
