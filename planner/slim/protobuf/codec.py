"""Kubernetes' protobuf wire format: whole objects, lists and watch frames, to and from JSON objects.

An object on the wire is the 4-byte magic `k8s\\x00` and a `runtime.Unknown` whose `typeMeta` names
the apiVersion and kind and whose `raw` is the kind's own message; a list is the same with the
`<Kind>List` message. A watch stream is a sequence of frames, each a 4-byte big-endian length and a
bare `meta/v1 WatchEvent` message (the stream serializer writes no envelope) whose `object.raw` holds
the object in the enveloped form above. Field-level conversion lives in `convert`.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from google.protobuf.message import DecodeError, Message

from planner.slim.protobuf import convert
from planner.slim.protobuf.convert import MAGIC, ConversionError
from planner.slim.protobuf.messages import META, RUNTIME, schema

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_MEDIA_TYPE = f"{MEDIA_TYPE};stream=watch"
UNKNOWN = f"{RUNTIME}.Unknown"
WATCH_EVENT = f"{META}.WatchEvent"


class ProtobufError(ValueError):
    """A body that is not a Kubernetes protobuf object of a known kind, or an object with no message."""


def can_encode(api_version: str, kind: str) -> bool:
    """Whether the kind has a protobuf message (built-in kinds do; custom resources do not)."""
    return schema().message_name(api_version, kind) is not None


def decode(data: bytes) -> dict[str, Any]:
    """The JSON object of an enveloped protobuf body, `apiVersion` and `kind` first."""
    if not data.startswith(MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    unknown: Any = _parse(UNKNOWN, data[len(MAGIC) :])
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    if unknown.contentEncoding:
        raise ProtobufError(f"unsupported content encoding {unknown.contentEncoding!r}")
    name = schema().message_name(api_version, kind)
    if name is None:
        raise ProtobufError(f'no kind "{kind}" is registered for version "{api_version}"')
    message = _parse(name, unknown.raw)
    head = {key: value for key, value in (("apiVersion", api_version), ("kind", kind)) if value}
    try:
        return head | convert.to_json(schema(), message, decode)
    except ConversionError as exc:
        raise ProtobufError(f"{kind}: {exc}") from exc


def encode(obj: Mapping[str, Any]) -> bytes:
    """The enveloped protobuf form of a JSON object (an object, a list or a Status)."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    name = schema().message_name(api_version, kind)
    if name is None:
        raise ProtobufError(f"{api_version} {kind} has no protobuf message")
    message = schema().message_class(name)()
    try:
        convert.fill(schema(), message, obj)
    except ConversionError as exc:
        raise ProtobufError(f"{kind}: {exc}") from exc
    unknown: Any = schema().message_class(UNKNOWN)()
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = api_version, kind
    unknown.raw = message.SerializeToString()
    unknown.contentEncoding, unknown.contentType = "", ""
    envelope: bytes = unknown.SerializeToString()
    return MAGIC + envelope


def encode_watch_event(event: Mapping[str, Any]) -> bytes:
    """One length-prefixed frame of a protobuf watch stream."""
    watch_event: Any = schema().message_class(WATCH_EVENT)()
    watch_event.type = event["type"]
    watch_event.object.raw = encode(event["object"])
    frame: bytes = watch_event.SerializeToString()
    return struct.pack(">I", len(frame)) + frame


def _parse(name: str, data: bytes) -> Message:
    try:
        return schema().message_class(name).FromString(data)
    except DecodeError as exc:
        raise ProtobufError(f"unable to decode {name.rsplit('.', 1)[-1]}: {exc}") from exc
