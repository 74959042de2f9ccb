"""Reading a parsed body into a kind's Go type, as the apiserver's decoders do, with their messages.

The apiserver decodes a JSON body into the kind's Go struct (`sigs.k8s.io/json`, case-sensitive, ints
preserved). A value of the wrong JSON type fails the request — `json: cannot unmarshal bool into Go
struct field ConfigMap.data of type string` — and so does a value a type's own unmarshaler rejects (a
Quantity, an IntOrString, a timestamp, base64 bytes). With field validation on, the strict decoder
also collects every key the struct does not declare and every key given twice, each with its path
(`unknown field "spec.template.spec.containers[0].resource"`, `duplicate field "spec.replicas"`); the
caller rejects (Strict) or warns (Warn). `decode_json` walks a parsed document that way.

Strategic merge patches (`unstructured.py`) and server-side apply (`applyschema.py`) reach the struct
other ways and word their errors their own way; they share this module's helpers.

`parse` keeps what Python's parser would lose and Go's decoder reports: every member of an object
that repeats a key, in order (`JSONObject.pairs`), and the literal text of non-integer numbers
(`number 1.5`); `plain` turns the result back into ordinary JSON values. It notes while parsing
whether it met either, so the usual document — no repeated key, no fraction — is neither walked for
duplicates nor copied back into plain values.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from planner import quantities
from planner.slim import gotime
from planner.slim.openapi.schemas import GoType, Kind, Schemas

INT_RANGES = {Kind.INT32: (-(2**31), 2**31 - 1), Kind.INT64: (-(2**63), 2**63 - 1)}
MAX_STRICT_ERRORS = 100  # the decoder stops collecting there


class JSONObject(dict[str, Any]):
    """A parsed JSON object that repeats a key: it also keeps its members in document order,
    duplicates included; as a dict, the last of duplicate keys wins, as it does in Go."""

    pairs: list[tuple[str, Any]]


class JSONNumber(float):
    """A non-integer JSON number with the literal text Go's errors quote."""

    text: str


@dataclass(frozen=True)
class Parsed:
    """A parsed JSON document and what parsing met: an object repeating a key (`repeats`), a
    non-integer number (`fractions`). Without either, `value` is plain JSON values already."""

    value: Any
    repeats: bool = False
    fractions: bool = False

    @property
    def is_plain(self) -> bool:
        """Whether `value` holds ordinary JSON values only (no parser types)."""
        return not (self.repeats or self.fractions)

    def plain(self) -> Any:
        """The document as ordinary JSON values (a copy only when it holds parser types)."""
        return self.value if self.is_plain else plain(self.value)

    def duplicates(self) -> list[str]:
        """`duplicates(value)`, without the walk when no object repeated a key."""
        return duplicates(self.value) if self.repeats else []


class _Reader:
    """One parse's hooks: they build the parser types and note that they did."""

    def __init__(self) -> None:
        self.repeats = self.fractions = False

    def object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        self.repeats = True
        repeating = JSONObject(obj)
        repeating.pairs = pairs
        return repeating

    def number(self, text: str) -> JSONNumber:
        self.fractions = True
        number = JSONNumber(text)
        number.text = text
        return number


def parse(raw: bytes) -> Parsed:
    """A JSON document, objects that repeat a key as `JSONObject`s and non-integer numbers as
    `JSONNumber`s; raises ValueError (with `pos`) on malformed JSON."""
    reader = _Reader()
    value = json.loads(
        raw, object_pairs_hook=reader.object, parse_float=reader.number, parse_constant=_constant
    )
    return Parsed(value, reader.repeats, reader.fractions)


def _constant(text: str) -> Any:
    raise ValueError(f"invalid character '{text[0]}' looking for beginning of value")


def plain(value: Any) -> Any:
    """`value` with JSONObjects and JSONNumbers replaced by dicts and floats."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, JSONNumber):
        return float(value)
    return value


def members(obj: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    return obj.pairs if isinstance(obj, JSONObject) else obj.items()


@dataclass
class Findings:
    """What decoding found: the error that fails the request (Go's message), else the strict errors and
    the decoded value (what the Go struct holds: unknown fields dropped, the last of duplicates)."""

    error: str | None = None
    strict: list[str] = field(default_factory=list)
    value: Any = None


class Fatal(Exception):
    """The decode fails with this message (the first type error, or a type's own unmarshaler's)."""


class _At:
    """Where the walk is, as a step from its parent (a struct's field, a list's index or a map's key):
    the error context — Go's (the struct fields from the root, the struct holding the last one) and
    the strict decoder's path (with list indexes and map keys) — is spelled out only when an error
    names it."""

    __slots__ = ("parent", "step", "struct_name")

    def __init__(
        self, parent: _At | None = None, step: str | int = "", struct_name: str | None = None
    ) -> None:
        self.parent, self.step = parent, step
        self.struct_name = struct_name  # set on a struct field's step: the struct holding it

    @property
    def fields(self) -> tuple[str, ...]:
        steps: list[str] = []
        at: _At | None = self
        while at is not None and at.parent is not None:
            if at.struct_name is not None:
                steps.append(str(at.step))
            at = at.parent
        return tuple(reversed(steps))

    @property
    def struct(self) -> str:
        at: _At | None = self
        while at is not None and at.struct_name is None:
            at = at.parent
        return at.struct_name if at is not None and at.struct_name is not None else ""

    @property
    def path(self) -> str:
        if self.parent is None:
            return ""
        if isinstance(self.step, int):
            return f"{self.parent.path}[{self.step}]"
        return self.parent.key(self.step)

    def key(self, name: str) -> str:
        path = self.path
        return f"{path}.{name}" if path else name


# --- Go's encoding/json into a typed struct ------------------------------------------------------------


# Which members of a document changed: a name maps to what changed below it, or to None when the
# whole member did.
Changed = dict[str, "Changed | None"]


def decode_json(
    schemas: Schemas,
    document: Any,
    into: GoType,
    *,
    plain_input: bool = False,
    changed: Changed | None = None,
) -> Findings:
    """Decode `document` (`parse(raw).value`, or any JSON value) into `into` as Go would.
    `plain_input`: the document holds no parser types (no `JSONObject`, no `JSONNumber`), so its
    values are kept as they are (free-form ones shared) rather than converted. `changed`: only those
    members are new (a patch wrote them into an object that decoded cleanly before); the rest is
    known to decode as it is and is kept without a walk, which finds nothing the full walk would."""
    walk = _JsonWalk(schemas, plain_input)
    try:
        value = (
            walk.value(document, into, _At())
            if changed is None
            else walk.part(document, into, _At(), changed)
        )
    except Fatal as exc:
        return Findings(error=str(exc))
    return Findings(strict=walk.strict, value=value)


def _unchanged(value: Any) -> Any:
    return value


class _JsonWalk:
    """One decode: each reader checks a value against its Go type and returns what Go would hold."""

    def __init__(self, schemas: Schemas, plain_input: bool = False) -> None:
        self.schemas = schemas
        self.strict: list[str] = []
        self._seen: set[str] = set()
        self.plain: Callable[[Any], Any] = _unchanged if plain_input else plain

    def add_strict(self, error: str) -> None:
        if error not in self._seen and len(self.strict) < MAX_STRICT_ERRORS:
            self._seen.add(error)
            self.strict.append(error)

    def value(self, value: Any, into: GoType, at: _At, existing: Any = None) -> Any:
        """`existing`: what an earlier duplicate key decoded; Go decodes a repeated struct or map into
        it rather than replacing it."""
        if value is None:
            return None
        reader = _JSON_READERS.get(into.kind)
        if reader is not None:
            return reader(self, value, into, at, existing)
        if (problem := _scalar_problem(value, into)) is not None:
            raise Fatal(_type_error(problem, into, at))
        return self.plain(value)

    def part(self, value: Any, into: GoType, at: _At, changed: Changed | None) -> Any:
        """`value` with the members `changed` names decoded and the others kept (a list changes whole:
        its indexes shift)."""
        if changed is None or not isinstance(value, dict) or into.kind not in (Kind.STRUCT, Kind.MAP):
            return self.value(value, into, at)
        struct = into.kind is Kind.STRUCT
        fields = self.schemas.fields(into) if struct else {}
        out = dict(value)
        for key, item in members(value):
            if key not in changed:
                continue
            if not struct:
                assert into.elem is not None
                out[key] = self.part(item, into.elem, _At(at, key), changed[key])
            elif (field_type := fields.get(key)) is None:
                self.add_strict(f'unknown field "{at.key(key)}"')
                del out[key]
            else:
                out[key] = self.part(item, field_type, _At(at, key, into.struct_name), changed[key])
        return out

    def struct(self, value: Any, into: GoType, at: _At, existing: Any) -> Any:
        if not isinstance(value, dict):
            raise Fatal(_type_error(_json_kind(value), into, at))
        fields = self.schemas.fields(into)
        out: dict[str, Any] = dict(existing) if isinstance(existing, dict) else {}
        given: set[str] = set()
        struct_name = into.struct_name
        for key, item in members(value):
            field_type = fields.get(key)
            if field_type is None:
                self.add_strict(f'unknown field "{at.key(key)}"')
                continue
            if key in given:
                self.add_strict(f'duplicate field "{at.key(key)}"')
            given.add(key)
            out[key] = self.value(item, field_type, _At(at, key, struct_name), out.get(key))
        return out

    def slice(self, value: Any, into: GoType, at: _At, existing: Any) -> Any:
        if not isinstance(value, list):
            raise Fatal(_type_error(_json_kind(value), into, at))
        assert into.elem is not None
        return [self.value(item, into.elem, _At(at, i)) for i, item in enumerate(value)]

    def map(self, value: Any, into: GoType, at: _At, existing: Any) -> Any:
        if not isinstance(value, dict):
            raise Fatal(_type_error(_json_kind(value), into, at))
        assert into.elem is not None
        out: dict[str, Any] = dict(existing) if isinstance(existing, dict) else {}
        given: set[str] = set()
        for key, item in members(value):
            if key in given:
                self.add_strict(f'duplicate field "{at.key(key)}"')
            given.add(key)
            out[key] = self.value(item, into.elem, _At(at, key), out.get(key))
        return out

    def any(self, value: Any, into: GoType, at: _At, existing: Any) -> Any:
        """RawExtension and FieldsV1 read their raw JSON themselves: anything goes, unchecked."""
        return self.plain(value)

    def bytes(self, value: Any, into: GoType, at: _At, existing: Any) -> Any:
        if isinstance(value, str):
            offset = bad_base64_offset(value)
            if offset is not None:
                raise Fatal(f"illegal base64 data at input byte {offset}")
        elif not isinstance(value, list):
            raise Fatal(_type_error(_json_kind(value), into, at))
        return self.plain(value)

    def special(self, value: Any, into: GoType, at: _At, existing: Any) -> Any:
        problem = custom_unmarshal_error(value, into.kind)
        if problem is not None:
            raise Fatal(problem)
        return self.plain(value)


_JSON_READERS: dict[Kind, Callable[[_JsonWalk, Any, GoType, _At, Any], Any]] = {
    Kind.STRUCT: _JsonWalk.struct,
    Kind.SLICE: _JsonWalk.slice,
    Kind.MAP: _JsonWalk.map,
    Kind.ANY: _JsonWalk.any,
    Kind.BYTES: _JsonWalk.bytes,
    Kind.QUANTITY: _JsonWalk.special,
    Kind.INT_OR_STRING: _JsonWalk.special,
    Kind.TIME: _JsonWalk.special,
    Kind.MICRO_TIME: _JsonWalk.special,
}


def duplicates(document: Any, path: str = "") -> list[str]:
    """The strict errors of decoding `document` into an untyped map (a merge patch): every key given
    twice, at any depth."""
    found: list[str] = []
    if isinstance(document, dict):
        given: set[str] = set()
        for key, item in members(document):
            key_path = f"{path}.{key}" if path else key
            if key in given:
                found.append(f'duplicate field "{key_path}"')
            given.add(key)
            found.extend(duplicates(item, key_path))
    elif isinstance(document, list):
        for i, item in enumerate(document):
            found.extend(duplicates(item, f"{path}[{i}]"))
    return list(dict.fromkeys(found))


def _scalar_problem(value: Any, into: GoType) -> str | None:
    """The JSON kind Go names in its type error, when `value` does not fit the scalar `into`."""
    kind = into.kind
    if kind is Kind.STRING:
        return None if isinstance(value, str) else _json_kind(value)
    if kind is Kind.BOOL:
        return None if isinstance(value, bool) else _json_kind(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _json_kind(value)
    if kind is Kind.FLOAT64:
        return None
    text = number_text(value)
    low, high = INT_RANGES[kind]
    if not _is_int_text(text) or not low <= int(text) <= high:
        return f"number {text}"
    return None


def _is_int_text(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _type_error(value_kind: str, into: GoType, at: _At) -> str:
    if at.struct or at.fields:
        return (
            f"json: cannot unmarshal {value_kind} into Go struct field {at.struct}.{'.'.join(at.fields)} "
            f"of type {into.go_name}"
        )
    return f"json: cannot unmarshal {value_kind} into Go value of type {into.go_name}"


def json_type(value: Any) -> str:
    """A decoded JSON value's type in JSON Schema's words: null, boolean, integer (an int), number (a
    float), string, array (a list) or object (anything else). Each reader names it in its own
    vocabulary from this."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# encoding/json's names in its UnmarshalTypeError.
_JSON_KINDS = {"null": "object", "boolean": "bool", "integer": "number", "number": "number"}


def _json_kind(value: Any) -> str:
    kind = json_type(value)
    return _JSON_KINDS.get(kind, kind)


def number_text(value: int | float) -> str:
    """A number as its JSON literal: the parsed text when kept, else as Go writes a YAML float into
    JSON (`strconv.FormatFloat(f, 'g', -1, 64)`)."""
    if isinstance(value, JSONNumber):
        return value.text
    if isinstance(value, int) or not math.isfinite(value):
        return str(value)
    return go_float(value)


def go_float(value: float) -> str:
    """Go's shortest `%g` form of a float: exponent form below 1e-4 and from 1e+06."""
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)  # where the decimal point falls in `digits`
    prefix = "-" if value < 0 else ""
    power = point - 1
    if power < -4 or power >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def custom_unmarshal_error(value: Any, kind: Kind) -> str | None:
    """The error of a type that unmarshals itself (Quantity, IntOrString, Time, MicroTime), if any."""
    if value is None:
        return None
    if kind is Kind.QUANTITY:
        text = value if isinstance(value, str) else _raw_json(value)
        try:
            quantities.parse(text)
        except quantities.QuantityError as exc:
            return str(exc)
        return None
    if kind is Kind.INT_OR_STRING:
        if isinstance(value, str):
            return None
        problem = _scalar_problem(value, GoType(Kind.INT32, "int32"))
        return None if problem is None else f"json: cannot unmarshal {problem} into Go value of type int32"
    if not isinstance(value, str):
        return f"json: cannot unmarshal {_json_kind(value)} into Go value of type string"
    layout = gotime.RFC3339_MICRO if kind is Kind.MICRO_TIME else gotime.RFC3339
    return gotime.parse_error(layout, value)


def _raw_json(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_text(value)
    return json.dumps(plain(value), separators=(",", ":"))


def bad_base64_offset(text: str) -> int | None:
    """Where Go's standard base64 decoder gives up on `text` (None: it decodes)."""
    stripped = text.replace("\r", "").replace("\n", "")
    for index, char in enumerate(stripped):
        if not (char.isascii() and (char.isalnum() or char in "+/=")):
            return index
    try:
        base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        if len(stripped) % 4:
            return max(len(stripped) - (len(stripped) % 4 or 4), 0)
        return len(stripped.rstrip("=")) // 4 * 4
    return None


def go_value(value: Any) -> str:
    """Go's %v (and %+v) of an unstructured value (maps with sorted keys, as fmt prints them)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_text(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(go_value(item) for item in value) + "]"
    return "map[" + " ".join(f"{key}:{go_value(value[key])}" for key in sorted(value)) + "]"
