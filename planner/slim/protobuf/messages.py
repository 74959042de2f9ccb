"""The Kubernetes protobuf schema: which message a kind is, and how each field maps to its JSON form.

Two committed files, written by `scripts/generate_k8s_protobuf.py` from Kubernetes v1.28.7's own
definitions, are loaded once: `k8s.desc.gz` (the compiled `generated.proto` files) gives the messages
to the `protobuf` runtime; `gojson.json` carries what the `.proto` files cannot say about Kubernetes
JSON, which Go's struct tags decide: renamed and inlined fields, scalars whose zero value means unset
(non-pointer `omitempty`), fields Go writes as `null` when unset, and the API group of each proto
package.

A `MessageSpec` is that knowledge folded into one table per message, keyed both ways (JSON key and
proto field number), built on first use and cached: the converter never consults descriptors twice.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

META = "k8s.io.apimachinery.pkg.apis.meta.v1"
RUNTIME = "k8s.io.apimachinery.pkg.runtime"
# meta/v1 kinds the apiserver registers in every group version (options, Status, watch events and the
# unversioned discovery documents).
EVERY_GROUP_KINDS = frozenset(
    (
        "Status",
        "WatchEvent",
        "DeleteOptions",
        "ListOptions",
        "GetOptions",
        "CreateOptions",
        "UpdateOptions",
        "PatchOptions",
        "APIVersions",
        "APIGroupList",
        "APIGroup",
        "APIResourceList",
    )
)


class Shape(Enum):
    """How a value looks in JSON; the special messages are those Go marshals by hand."""

    SCALAR = "scalar"
    BYTES = "bytes"  # base64 in JSON
    MESSAGE = "message"
    TIME = "time"  # RFC 3339, seconds; null when zero
    MICRO_TIME = "micro_time"  # RFC 3339 with six fractional digits
    QUANTITY = "quantity"  # its canonical string
    INT_OR_STRING = "int_or_string"
    RAW = "raw"  # RawExtension: embedded JSON, or a nested protobuf object
    FIELDS = "fields"  # FieldsV1: embedded JSON
    ITEMS = "items"  # a Go named slice (`ExtraValue`): the list itself


SPECIAL_SHAPES = {
    f"{META}.Time": Shape.TIME,
    f"{META}.MicroTime": Shape.MICRO_TIME,
    f"{META}.FieldsV1": Shape.FIELDS,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": Shape.QUANTITY,
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": Shape.QUANTITY,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": Shape.INT_OR_STRING,
    f"{RUNTIME}.RawExtension": Shape.RAW,
}


@dataclass(frozen=True)
class FieldSpec:
    name: str
    number: int
    json: str
    shape: Shape  # of the field's value; for a map, of the map's values
    message: str  # the value's message type, "" for scalars
    repeated: bool = False
    is_map: bool = False
    omit_zero: bool = False  # a present zero is Go's unset non-pointer field: not in JSON
    inline: bool = False  # the message's fields sit in the parent's JSON object


@dataclass(frozen=True)
class MessageSpec:
    full_name: str
    fields: Mapping[int, FieldSpec]
    # JSON key -> (inline fields to descend through, the field): inlined messages flattened
    by_json: Mapping[str, tuple[tuple[FieldSpec, ...], FieldSpec]]
    # Fields Go writes even when unset: `null` (a nil pointer, list or map without `omitempty`), or
    # `[]` for a list kind's items (the apiserver never returns a nil list).
    unset: tuple[tuple[str, bool], ...] = field(default=())  # (JSON key, whether `[]`)


class Schema:
    """The descriptor pool, message classes and per-message specs of Kubernetes' protobuf messages."""

    def __init__(self, descriptors: descriptor_pb2.FileDescriptorSet, go_json: Mapping[str, Any]) -> None:
        self._pool = descriptor_pool.DescriptorPool()
        for file in descriptors.file:
            self._pool.Add(file)
        self._go: Mapping[str, Mapping[str, Any]] = go_json["messages"]
        self._lists = frozenset(go_json["lists"])
        self._packages = {api_version: package for package, api_version in go_json["groups"].items()}
        self._specs: dict[str, MessageSpec] = {}
        self._classes: dict[str, type[Message]] = {}
        self._names: dict[tuple[str, str], str | None] = {}

    def message_name(self, api_version: str, kind: str) -> str | None:
        """The message of a kind (`apps/v1` `Deployment` -> `k8s.io.api.apps.v1.Deployment`), else None.

        The kinds every group version serves (Status, DeleteOptions, WatchEvent…) come from meta/v1.
        """
        key = (api_version, kind)
        if key not in self._names:
            packages = (self._packages.get(api_version), META if kind in EVERY_GROUP_KINDS else None)
            found = (f"{package}.{kind}" for package in packages if package is not None)
            self._names[key] = next((name for name in found if self._has(name)), None)
        return self._names[key]

    def message_class(self, full_name: str) -> type[Message]:
        found = self._classes.get(full_name)
        if found is None:
            found = message_factory.GetMessageClass(self._pool.FindMessageTypeByName(full_name))
            self._classes[full_name] = found
        return found

    def spec(self, full_name: str) -> MessageSpec:
        found = self._specs.get(full_name)
        if found is None:
            found = self._build(self._pool.FindMessageTypeByName(full_name))
            self._specs[full_name] = found
        return found

    def _has(self, full_name: str) -> bool:
        try:
            self._pool.FindMessageTypeByName(full_name)
        except KeyError:
            return False
        return True

    def _build(self, descriptor: Descriptor) -> MessageSpec:
        go = self._go.get(descriptor.full_name, {})
        fields = {fd.number: self._field(fd, go) for fd in descriptor.fields}
        by_json: dict[str, tuple[tuple[FieldSpec, ...], FieldSpec]] = {}
        for spec in fields.values():
            if spec.inline:
                for key, (path, inner) in self.spec(spec.message).by_json.items():
                    by_json[key] = ((spec, *path), inner)
            else:
                by_json[spec.json] = ((), spec)
        unset = tuple(
            (spec.json, spec.name == "items" and descriptor.name.endswith("List"))
            for spec in fields.values()
            if spec.name in go.get("null", ())
        )
        return MessageSpec(descriptor.full_name, fields, by_json, unset)

    def _field(self, fd: FieldDescriptor, go: Mapping[str, Any]) -> FieldSpec:
        entry = fd.message_type
        is_map = entry is not None and entry.GetOptions().map_entry
        value = entry.fields_by_name["value"] if entry is not None and is_map else fd
        message = value.message_type.full_name if value.message_type is not None else ""
        return FieldSpec(
            name=fd.name,
            number=fd.number,
            json=go.get("names", {}).get(fd.name, fd.name),
            shape=self._shape(value, message),
            message=message,
            repeated=fd.is_repeated and not is_map,
            is_map=is_map,
            omit_zero=fd.name in go.get("omitZero", ()),
            inline=fd.name in go.get("inline", ()),
        )

    def _shape(self, fd: FieldDescriptor, message: str) -> Shape:
        if message:
            if message in self._lists:
                return Shape.ITEMS
            return SPECIAL_SHAPES.get(message, Shape.MESSAGE)
        return Shape.BYTES if fd.type == FieldDescriptor.TYPE_BYTES else Shape.SCALAR


@cache
def schema() -> Schema:
    """The schema of the committed artifact, loaded on first use (about 30 ms)."""
    package = resources.files("planner.slim.protobuf")
    raw = gzip.decompress(package.joinpath("k8s.desc.gz").read_bytes())
    go_json = json.loads(package.joinpath("gojson.json").read_text())
    return Schema(descriptor_pb2.FileDescriptorSet.FromString(raw), go_json)
