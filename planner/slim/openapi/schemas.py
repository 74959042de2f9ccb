"""The OpenAPI schemas of the built-in kinds, and the Go types they describe.

`k8s-openapi.json.gz` (written by `scripts/generate_k8s_openapi.py` from Kubernetes v1.28's published
definitions) holds one OpenAPI v3 component schema per definition (`io.k8s.api.apps.v1.Deployment`).
It is loaded once, on first use, and serves two readers: the OpenAPI v3 documents (`documents.py`)
hand the schemas to clients as they are, and body decoding (`planner.slim.decoding`) reads them as
the Go types the apiserver decodes into — `GoType`, which says what JSON a field takes and how Go
names its type in an error message (`int32`, `[]v1.Container`, `map[string]string`, `v1.PodSpec`).

Go's names are derived from the definition names (`io.k8s.api.core.v1.PodSpec` is `v1.PodSpec`, a
Quantity is `resource.Quantity`), except for fields of named non-struct types (`v1.Protocol`,
`[]v1.PersistentVolumeAccessMode`, `v1.ResourceList`), which OpenAPI does not name: the table's
`goTypes` gives those, read from the Go sources.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cache
from importlib import resources
from typing import Any

COMPONENTS = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"


class Kind(Enum):
    """What JSON a Go type takes; the special kinds unmarshal themselves (custom `UnmarshalJSON`)."""

    STRUCT = "struct"
    SLICE = "slice"
    MAP = "map"
    STRING = "string"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT64 = "float64"
    BOOL = "bool"
    BYTES = "bytes"  # []byte: a base64 string
    QUANTITY = "quantity"
    INT_OR_STRING = "int_or_string"
    TIME = "time"
    MICRO_TIME = "micro_time"
    ANY = "any"  # RawExtension, FieldsV1, an untyped object: any JSON

    # Members are singletons compared by identity: hashing them by identity too keeps the decoders'
    # per-value reader lookups in C (Enum's own hash is Python code, run for every decoded value).
    __hash__ = object.__hash__


SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": Kind.QUANTITY,
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": Kind.INT_OR_STRING,
    f"{META}.Time": Kind.TIME,
    f"{META}.MicroTime": Kind.MICRO_TIME,
    f"{META}.FieldsV1": Kind.ANY,
    "io.k8s.apimachinery.pkg.runtime.RawExtension": Kind.ANY,
}
SCALARS = {
    ("string", None): Kind.STRING,
    ("string", "byte"): Kind.BYTES,
    ("string", "date-time"): Kind.TIME,
    ("integer", "int32"): Kind.INT32,
    ("integer", "int64"): Kind.INT64,
    ("integer", None): Kind.INT64,
    ("number", "double"): Kind.FLOAT64,
    ("number", None): Kind.FLOAT64,
    ("boolean", None): Kind.BOOL,
}
GO_NAMES = {
    Kind.STRING: "string",
    Kind.INT32: "int32",
    Kind.INT64: "int64",
    Kind.FLOAT64: "float64",
    Kind.BOOL: "bool",
    Kind.BYTES: "[]uint8",
    Kind.ANY: "interface {}",
}


@dataclass(frozen=True)
class ListSemantics:
    """How server-side apply identifies a list's items: `atomic` (by index), `set` (by value) or
    `map` (by the values of `keys`)."""

    type: str = "atomic"
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoType:
    """One Go type as the decoders see it. `definition` names a struct's (or special type's) schema;
    `elem` is a slice's or map's element type; `go_name` is Go's `reflect.Type.String()`."""

    kind: Kind
    go_name: str
    definition: str = ""
    elem: GoType | None = None
    list: ListSemantics = field(default_factory=ListSemantics)

    @property
    def struct_name(self) -> str:
        """The struct's own name, as Go's JSON errors print it (`DeploymentSpec`)."""
        return self.definition.rsplit(".", 1)[-1]


class Schemas:
    """The component schemas, indexed by group-version-kind, with their Go types built on demand."""

    def __init__(
        self, components: Mapping[str, Any], go_types: Mapping[str, Mapping[str, list[str]]]
    ) -> None:
        self.components = components
        self._go_types = go_types
        self._by_gvk: dict[tuple[str, str], str] = {}
        for name, schema in components.items():
            for gvk in schema.get("x-kubernetes-group-version-kind") or ():
                api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
                self._by_gvk.setdefault((api_version, gvk["kind"]), name)
        self._fields: dict[str, dict[str, GoType]] = {}

    def definition(self, api_version: str, kind: str) -> str | None:
        """The definition name of a kind (`apps/v1`, `Deployment`), else None."""
        return self._by_gvk.get((api_version, kind))

    def type_of(self, api_version: str, kind: str) -> GoType | None:
        name = self.definition(api_version, kind)
        return self.named(name) if name else None

    def named(self, definition: str) -> GoType:
        special = SPECIAL.get(definition)
        if special is not None:
            return GoType(special, _go_name(definition), definition)
        schema = self.components[definition]
        if "properties" in schema or (
            schema.get("type") == "object" and "additionalProperties" not in schema
        ):
            if not schema.get("properties"):
                return GoType(Kind.ANY, GO_NAMES[Kind.ANY], definition)
            return GoType(Kind.STRUCT, _go_name(definition), definition)
        return self.of(schema)

    def fields(self, struct: GoType) -> dict[str, GoType]:
        """A struct's fields by JSON name (inlined structs already flattened into their parent)."""
        found = self._fields.get(struct.definition)
        if found is None:
            properties = self.components[struct.definition].get("properties") or {}
            names = self._go_types.get(struct.definition) or {}
            found = {name: _named(self.of(schema), names.get(name)) for name, schema in properties.items()}
            self._fields[struct.definition] = found
        return found

    def required(self, struct: GoType) -> tuple[str, ...]:
        return tuple(self.components[struct.definition].get("required") or ())

    def of(self, schema: Mapping[str, Any]) -> GoType:
        """The Go type of one property schema."""
        ref = _ref(schema)
        if ref is not None:
            return self.named(ref)
        kind = schema.get("type")
        if kind == "array":
            elem = self.of(schema.get("items") or {})
            return GoType(Kind.SLICE, f"[]{elem.go_name}", elem=elem, list=_list_semantics(schema))
        if kind == "object" or "additionalProperties" in schema:
            values = schema.get("additionalProperties")
            if not isinstance(values, Mapping):
                return GoType(Kind.ANY, GO_NAMES[Kind.ANY])
            elem = self.of(values)
            return GoType(Kind.MAP, f"map[string]{elem.go_name}", elem=elem)
        scalar = SCALARS.get((str(kind), schema.get("format")), Kind.ANY)
        return GoType(scalar, GO_NAMES.get(scalar, GO_NAMES[Kind.ANY]))


def _named(go_type: GoType, names: list[str] | None) -> GoType:
    """`go_type` with Go's names for a named type (and for its element, for a list or map)."""
    if not names:
        return go_type
    elem = go_type.elem
    if elem is not None and len(names) > 1 and elem.kind is not Kind.STRUCT:
        elem = replace(elem, go_name=names[1])
    return replace(go_type, go_name=names[0], elem=elem)


def _ref(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None and len(schema.get("allOf") or ()) == 1:
        ref = schema["allOf"][0].get("$ref")
    return str(ref).removeprefix(COMPONENTS) if ref else None


def _list_semantics(schema: Mapping[str, Any]) -> ListSemantics:
    """As the apiserver builds its apply schema: `x-kubernetes-list-type` when given, else a list with
    a patch merge key is a map keyed by it, else the list is atomic."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map":
        return ListSemantics("map", tuple(schema.get("x-kubernetes-list-map-keys") or ()))
    if list_type in ("set", "atomic"):
        return ListSemantics(str(list_type))
    merge_key = schema.get("x-kubernetes-patch-merge-key")
    if merge_key:
        return ListSemantics("map", (str(merge_key),))
    return ListSemantics()


def _go_name(definition: str) -> str:
    """`io.k8s.api.core.v1.PodSpec` -> `v1.PodSpec` (package name and type name)."""
    package, _, name = definition.rpartition(".")
    return f"{package.rsplit('.', 1)[-1]}.{name}"


@cache
def schemas() -> Schemas:
    """The committed table, loaded on first use."""
    raw = resources.files("planner.slim.openapi").joinpath("k8s-openapi.json.gz").read_bytes()
    table = json.loads(gzip.decompress(raw))
    return Schemas(table["schemas"], table["goTypes"])
