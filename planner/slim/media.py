"""Content negotiation: which format a request body is in, and which one a response is written in.

Request bodies (create, update, bindings, DeleteOptions) may be JSON, YAML or Kubernetes protobuf, as
the apiserver's serializers accept; anything else is the apiserver's 415. Responses follow the
client's `Accept` the way the apiserver's negotiation does: clauses ordered by `q` (then the more
specific first, otherwise as sent), the first one the server can write wins. A clause asking for a
conversion (`as=Table`, `as=PartialObjectMetadata[List]`, `g=meta.k8s.io`, `v=v1|v1beta1`) is
acceptable only in a format that conversion has: Tables are JSON only, so
`application/vnd.kubernetes.protobuf;as=Table` falls through to the next clause. Protobuf applies to
built-in kinds only (custom resources and Tables stay JSON); the HTTP layer checks the kind.

A JSON or YAML body is also decoded as the apiserver's typed decoder reads it into the kind's Go struct
(`planner.slim.decoding`): a value of the wrong type is the apiserver's 400 (`ConfigMap in version "v1"
cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct field ConfigMap.data of
type string`), and unknown or duplicate fields follow the request's `fieldValidation`: Strict rejects
them (400 `strict decoding error: unknown field "spec.foo"`), Warn (the default) returns one warning
each, Ignore says nothing. Protobuf has no strict mode, and its types are checked by its own decoder.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.error import YAMLError

from planner.slim import decoding, fieldvalidation, protobuf, yamljson
from planner.slim.openapi.schemas import schemas
from planner.slim.patch import media_type
from planner.slim.status_errors import StatusError, bad_request, unsupported_media_type

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = protobuf.MEDIA_TYPE
REQUEST_TYPES = (JSON, YAML, PROTOBUF)  # in the order the apiserver lists them
CONVERSIONS = {
    "Table": (JSON,),
    "PartialObjectMetadata": (JSON, PROTOBUF),
    "PartialObjectMetadataList": (JSON, PROTOBUF),
}
CONVERSION_VERSIONS = ("v1", "v1beta1")


@dataclass(frozen=True)
class Clause:
    """One media range of an Accept header."""

    type: str
    subtype: str
    params: dict[str, str]
    q: float = 1.0


@dataclass(frozen=True)
class Output:
    """The negotiated response format: a media type and an optional conversion (`Table`, …)."""

    media_type: str = JSON
    conversion: str | None = None

    @property
    def protobuf(self) -> bool:
        return self.media_type == PROTOBUF


def parse_accept(header: str) -> list[Clause]:
    """The clauses of an Accept header, best first: by q, then concrete types before wildcards."""
    clauses = [_clause(part) for part in header.split(",") if part.strip()]
    return sorted(clauses, key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))


def _clause(part: str) -> Clause:
    media_range, *raw_params = part.split(";")
    kind, _, subtype = media_range.strip().lower().partition("/")
    params: dict[str, str] = {}
    q = 1.0
    for raw in raw_params:
        key, sep, value = raw.partition("=")
        if not sep:
            continue
        if key.strip() == "q":
            q = _quality(value)
        else:
            params[key.strip()] = value.strip()
    return Clause(kind, subtype.strip(), params, q)


def _quality(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return 0.0


@functools.lru_cache(maxsize=256)
def negotiate(accept: str) -> Output:
    """The response format for an Accept header; JSON when nothing in it can be written (remembered:
    a client sends the same header with every request)."""
    for clause in parse_accept(accept):
        for candidate in (JSON, PROTOBUF):
            if _matches(clause, candidate) and (output := _acceptable(clause, candidate)) is not None:
                return output
    return Output()


def _matches(clause: Clause, candidate: str) -> bool:
    kind, subtype = candidate.split("/")
    return (clause.type, clause.subtype) in ((kind, subtype), (kind, "*"), ("*", "*"))


def _acceptable(clause: Clause, candidate: str) -> Output | None:
    conversion = clause.params.get("as")
    if conversion is None:
        return Output(candidate)
    if (
        candidate in CONVERSIONS.get(conversion, ())
        and clause.params.get("g") == "meta.k8s.io"
        and clause.params.get("v") in CONVERSION_VERSIONS
    ):
        return Output(candidate, conversion)
    return None


# sigs.k8s.io/json's and go-yaml's nesting limit in kube-apiserver v1.28: deeper bodies are refused.
MAX_DEPTH = 10000


def decode_body(
    raw: bytes, content_type: str | None, kind: str, check: fieldvalidation.Check | None = None
) -> Any:
    """A request body as JSON values, from JSON (the default), YAML or protobuf; with a `check`, JSON and
    YAML bodies are decoded into its kind as the apiserver does (its warnings go to the check). A body
    nested past what the recursion here reaches is a 400, as kube-apiserver answers past 10,000 levels."""
    sent = media_type(content_type)
    # ruamel's scanner slows with depth squared: a YAML body that may be too deep is measured first.
    brackets = raw.count(b"[") + raw.count(b"{") if sent == YAML else 0
    if brackets > MAX_DEPTH and nesting_depth(raw.decode("utf-8", "replace"))[0] > MAX_DEPTH:
        raise _too_deep(raw, sent, kind)
    try:
        return _decoded(raw, sent, kind, check)
    except RecursionError:
        raise _too_deep(raw, sent, kind) from None


def _too_deep(raw: bytes, sent: str, kind: str) -> StatusError:
    text = raw.decode("utf-8", "replace")
    depth, opener = nesting_depth(text)
    unrecognized = f"the object provided is unrecognized (must be of type {kind}): "
    if depth > MAX_DEPTH:  # kube-apiserver's own words, the body cut at 30 characters as it cuts it
        if sent == YAML:
            return bad_request(f"{unrecognized}yaml: exceeded max depth of {MAX_DEPTH} ({text[:30]} ...)")
        return bad_request(
            f"{unrecognized}couldn't get version/kind; json parse error: invalid character '{opener}' "
            f"exceeded max depth ({text[:30]} ...)"
        )
    return bad_request(
        f"{unrecognized}nested {depth} levels deep, more than this embedded cluster decodes (a real "
        f"kube-apiserver takes up to {MAX_DEPTH})"
    )


def nesting_depth(text: str) -> tuple[int, str]:
    """How deep JSON (or flow YAML) nests arrays and objects, strings skipped, and the bracket that first
    went past MAX_DEPTH ("" when none did): one pass, no recursion."""
    depth = deepest = 0
    quoted = escaped = False
    opener = ""
    for char in text:
        if quoted:
            escaped, quoted = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            opener = opener or (char if depth > MAX_DEPTH else "")
        elif char in "]}":
            depth -= 1
    return deepest, opener


def _decoded(raw: bytes, sent: str, kind: str, check: fieldvalidation.Check | None) -> Any:
    if sent in ("", JSON):
        return _typed(_json(raw, kind), (), check)
    if sent == YAML:
        converted = _yaml(raw, kind)
        yaml_strict = (converted.strict_error,) if converted.strict_error else ()
        return _typed(decoding.Parsed(converted.value), yaml_strict, check)
    if sent == PROTOBUF:
        return _protobuf(raw, kind)
    raise unsupported_media_type(REQUEST_TYPES)


def _typed(parsed: decoding.Parsed, yaml_strict: tuple[str, ...], check: fieldvalidation.Check | None) -> Any:
    """Type errors fail whatever the directive; strict errors follow it. A body naming another kind is
    left to the kind check that follows."""
    document = parsed.value
    if check is None or not isinstance(document, dict) or not _names(document, check):
        return parsed.plain()
    kind, version = document.get("kind") or check.kind, document.get("apiVersion") or check.api_version
    prefix = f'{kind} in version "{version.rsplit("/", 1)[-1]}" cannot be handled as a {check.kind}: '
    go_type = check.go_type
    if go_type is None:  # a custom resource (or no checks): its schema's unknown fields
        plain = parsed.plain()
        unknown = [*yaml_strict, *check.unknown_fields(plain)]
        check.strict(unknown, lambda: bad_request(prefix + fieldvalidation.strict_decoding_error(unknown)))
        return plain
    findings = decoding.decode_json(schemas(), document, go_type, plain_input=parsed.is_plain)
    if findings.error is not None:
        raise bad_request(prefix + findings.error)
    found = [*yaml_strict, *findings.strict]
    check.strict(found, lambda: bad_request(prefix + fieldvalidation.strict_decoding_error(found)))
    return findings.value


def _names(document: dict[str, Any], check: fieldvalidation.Check) -> bool:
    """Whether the body names the endpoint's kind and version (or names none)."""
    kind, api_version = document.get("kind"), document.get("apiVersion")
    return kind in (None, "", check.kind) and api_version in (None, "", check.api_version)


def _json(raw: bytes, kind: str) -> decoding.Parsed:
    try:
        return decoding.parse(raw or b"null")
    except ValueError as exc:
        raise bad_request(_json_error(raw.decode("utf-8", "replace"), kind, exc)) from exc


def _json_error(text: str, kind: str, exc: ValueError) -> str:
    position = getattr(exc, "pos", 0)
    char = text[position] if position < len(text) else ""
    looking = (
        "looking for beginning of object key string"
        if "property name" in str(exc)
        else "looking for beginning of value"
    )
    return (
        f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; "
        "json parse error: "
        f"invalid character '{char}' {looking} ({text[:64]})"
    )


def _yaml(raw: bytes, kind: str) -> yamljson.Converted:
    try:
        return yamljson.convert(raw.decode("utf-8", "replace"))
    except YAMLError as exc:
        raise bad_request(
            f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; "
            f"json parse error: error converting YAML to JSON: {exc}"
        ) from exc


def _protobuf(raw: bytes, kind: str) -> Any:
    try:
        return protobuf.decode(raw)
    except protobuf.ProtobufError as exc:
        raise bad_request(f"the object provided is unrecognized (must be of type {kind}): {exc}") from exc
