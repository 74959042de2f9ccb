"""Content negotiation: which format a request body is in, and which one a response is written in.

Request bodies (create, update, bindings, DeleteOptions) may be JSON, YAML or Kubernetes protobuf, as
the apiserver's serializers accept; anything else is the apiserver's 415. Responses follow the
client's `Accept` the way the apiserver's negotiation does: clauses ordered by `q` (then the more
specific first, otherwise as sent), the first one the server can write wins. A clause asking for a
conversion (`as=Table`, `as=PartialObjectMetadata[List]`, `g=meta.k8s.io`, `v=v1|v1beta1`) is
acceptable only in a format that conversion has: Tables are JSON only, so
`application/vnd.kubernetes.protobuf;as=Table` falls through to the next clause. Protobuf applies to
built-in kinds only (custom resources and Tables stay JSON); the HTTP layer checks the kind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.error import YAMLError

from planner.slim import protobuf
from planner.slim.errors import bad_request, unsupported_media_type
from planner.slim.patch import load_yaml, media_type

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


def negotiate(accept: str) -> Output:
    """The response format for an Accept header; JSON when nothing in it can be written."""
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


def decode_body(raw: bytes, content_type: str | None, kind: str) -> Any:
    """A request body as a JSON value, from JSON (the default), YAML or protobuf."""
    sent = media_type(content_type)
    if sent in ("", JSON):
        return _json(raw, kind)
    if sent == YAML:
        return _yaml(raw, kind)
    if sent == PROTOBUF:
        return _protobuf(raw, kind)
    raise unsupported_media_type(REQUEST_TYPES)


def _json(raw: bytes, kind: str) -> Any:
    try:
        return json.loads(raw or b"null")
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


def _yaml(raw: bytes, kind: str) -> Any:
    try:
        return load_yaml(raw.decode("utf-8", "replace"))
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
