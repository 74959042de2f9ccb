"""Build the embedded server's OpenAPI schema table from Kubernetes' published schemas (development time).

The server needs one description of every built-in type's JSON form, for two jobs: decoding request
bodies the way the apiserver's typed Go decoder does (wrong types, unknown and duplicate fields) and
serving OpenAPI v3 documents (`kubectl explain`, kubectl's patch metadata and field-validation
checks). This script writes that description as `planner/slim/openapi/k8s-openapi.json.gz`, in the
form the apiserver serves: OpenAPI v3 component schemas, each keyed by its definition name
(`io.k8s.api.apps.v1.Deployment`), with descriptions, required fields, formats and the
`x-kubernetes-*` extensions (group-version-kind, patch strategies and merge keys, list types).

The source is the `kubernetes-validate` package (a dev dependency): its `v1.28.0-local` schemas are the
v1.28 OpenAPI definitions rewritten as JSON Schema. The rewrite is undone here: `["string", "null"]`
types become `"string"`, `#/$defs/` references become `#/components/schemas/` ones (wrapped in `allOf`
when the property carries its own description, as OpenAPI 3.0 wants), the `kind`/`apiVersion` enums
the package adds are dropped, and IntOrString and Quantity get the apiserver's string forms. Only GA
API versions are kept (alpha and beta definitions are never served).

Two things the package lost or never had come from the Go sources of k8s.io/api and
k8s.io/apimachinery at the same release (tag v0.28.7): the enums (a field whose type is marked `+enum`
gets `enum` and, after its description, the apiserver's "Possible enum values:" paragraph built from the
type's constants and their comments, as kube-openapi writes them), and how Go names a field's type,
which the apiserver's decode errors print (`of type v1.Protocol`, `[]v1.PersistentVolumeAccessMode`,
`v1.ResourceList`): the table's `goTypes` records, per definition and JSON field, the Go name of every
field whose type is a named non-struct type (or a list or map of one).

The package has no definitions for the served beta versions (flowcontrol v1beta2/v1beta3) nor for
kube-aggregator's APIService: `--served` adds, from OpenAPI v3 documents a real v1.28.7 apiserver
served (`tests/golden/apigroups/openapi/`), every definition the table lacks, as served. `--update`
adds them to the committed table instead of rebuilding it (no Go sources needed).

Usage (the output is deterministic: running it twice gives byte-identical files):

    .venv/bin/python scripts/generate_k8s_openapi.py \\
        --go-api /path/to/k8s.io/api --go-apimachinery /path/to/k8s.io/apimachinery \\
        --served tests/golden/apigroups/openapi/*.json.gz
    .venv/bin/python scripts/generate_k8s_openapi.py --update --served tests/golden/apigroups/openapi/*.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "planner" / "slim" / "openapi" / "k8s-openapi.json.gz"
SOURCE_VERSION = "v1.28.0-local"
REF_PREFIX = "#/$defs/"
COMPONENTS = "#/components/schemas/"
PRERELEASE = re.compile(r"\.v\d+(alpha|beta)\d+\.")
# Definitions whose JSON form is written by hand in Go: the apiserver's own OpenAPI gives them these.
HAND_WRITTEN = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--go-api", type=Path, help="k8s.io/api sources (v0.28.7)")
    parser.add_argument("--go-apimachinery", type=Path, help="k8s.io/apimachinery sources")
    parser.add_argument("--served", type=Path, nargs="*", default=[], help="served OpenAPI v3 documents")
    parser.add_argument("--update", action="store_true", help="add to the committed table, not rebuild it")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.update:
        document = json.loads(gzip.decompress(args.out.read_bytes()))
    elif args.go_api is None or args.go_apimachinery is None:
        parser.error("--go-api and --go-apimachinery are needed unless --update")
    else:
        document = build(args.go_api, args.go_apimachinery)
    schemas = document["schemas"]
    for name, body in HAND_WRITTEN.items():
        schemas[name] = {**body, **_description(schemas[name])}
    for path in args.served:
        add_served(schemas, path)
    document["schemas"] = dict(sorted(schemas.items()))
    raw = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    print(f"wrote {args.out}: {len(schemas)} schemas, {len(raw)} bytes uncompressed", file=sys.stderr)
    return 0


def add_served(schemas: dict[str, Any], path: Path) -> None:
    """The definitions of a served document the table lacks, as the apiserver serves them."""
    raw = path.read_bytes()
    served = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    for name, body in served["components"]["schemas"].items():
        schemas.setdefault(name, body)


def build(go_api: Path, go_apimachinery: Path) -> dict[str, Any]:
    definitions = load_definitions()
    schemas = {
        name: convert_definition(name, body) for name, body in sorted(definitions.items()) if kept(name)
    }
    missing = sorted(dangling_refs(schemas))
    if missing:
        raise SystemExit("references to definitions not kept: " + ", ".join(missing))
    go = GoSources({"k8s.io/api/": go_api, "k8s.io/apimachinery/": go_apimachinery})
    add_enums(schemas, go)
    return {
        "source": f"kubernetes-validate {SOURCE_VERSION}",
        "schemas": schemas,
        "goTypes": go_type_names(schemas, go),
    }


def load_definitions() -> dict[str, Any]:
    package = resources.files("kubernetes_validate")
    path = package.joinpath("kubernetes-json-schema", SOURCE_VERSION, "_definitions.json")
    definitions: dict[str, Any] = json.loads(path.read_text())["$defs"]
    return definitions


def kept(name: str) -> bool:
    return name.startswith("io.k8s.api") and not PRERELEASE.search(name)


def convert_definition(name: str, body: dict[str, Any]) -> dict[str, Any]:
    if name in HAND_WRITTEN:
        return {**HAND_WRITTEN[name], **_description(body)}
    converted = convert(body)
    for key in ("apiVersion", "kind"):
        (converted.get("properties") or {}).get(key, {}).pop("enum", None)
    return converted


def _description(body: dict[str, Any]) -> dict[str, Any]:
    return {"description": body["description"]} if "description" in body else {}


def convert(schema: Any) -> Any:
    """One JSON Schema node as an OpenAPI v3 one."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            out["type"] = _single_type(value)
        elif key == "$ref":
            continue
        elif key in ("properties", "patternProperties"):
            out[key] = {name: convert(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = convert(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [convert(sub) for sub in value]
        else:
            out[key] = value
    if "$ref" in schema:
        ref = {"$ref": COMPONENTS + schema["$ref"].removeprefix(REF_PREFIX)}
        return {"allOf": [ref], **out} if out else ref
    return out


def _single_type(value: Any) -> Any:
    if isinstance(value, list):
        kinds = [kind for kind in value if kind != "null"]
        return kinds[0] if len(kinds) == 1 else kinds
    return value


def dangling_refs(schemas: dict[str, Any]) -> set[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.removeprefix(COMPONENTS) not in schemas:
                found.add(ref)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schemas)
    return found


# --- Go type names -----------------------------------------------------------------------------------

BUILTIN = {"string", "bool", "int", "int32", "int64", "uint32", "uint64", "float64", "byte"}
TYPE_DECL = re.compile(r"^type (\w+) (.+?)\s*(//.*)?$")
STRUCT_FIELD = re.compile(r'^\s+(\w+)\s+(\S+)\s+`.*json:"([^"]*)"')
EMBEDDED = re.compile(r'^\s+(\*?[\w.]+)\s+`.*json:",inline"')
IMPORT = re.compile(r'^\s*(?:import\s+)?(\w+\s+)?"(k8s\.io/[^"]+)"')
CONSTANT = re.compile(r'^\s*(?:const\s+)?(\w+)\s+(\w+)\s*=\s*"([^"]*)"')


@dataclass
class GoPackage:
    """One Go package's declarations: struct fields by JSON name, named non-struct types, imports."""

    short: str
    structs: dict[str, dict[str, str]] = field(default_factory=dict)  # struct -> JSON name -> type
    inline: dict[str, list[str]] = field(default_factory=dict)  # struct -> embedded types
    named: dict[str, str] = field(default_factory=dict)  # non-struct type -> underlying
    imports: dict[str, str] = field(default_factory=dict)  # alias -> import path
    enums: set[str] = field(default_factory=set)  # types marked +enum
    constants: dict[str, list[tuple[str, str, str]]] = field(
        default_factory=dict
    )  # type -> (name, value, comment)


class GoSources:
    """Go packages of k8s.io/api and k8s.io/apimachinery, parsed on demand (line by line: the API
    types are gofmt'ed and declare one field per line)."""

    def __init__(self, roots: dict[str, Path]) -> None:
        self.roots = roots
        self._packages: dict[str, GoPackage | None] = {}

    def package(self, path: str) -> GoPackage | None:
        if path not in self._packages:
            self._packages[path] = self._parse(path)
        return self._packages[path]

    def _parse(self, path: str) -> GoPackage | None:
        directory = next(
            (root / path[len(prefix) :] for prefix, root in self.roots.items() if path.startswith(prefix)),
            None,
        )
        if directory is None or not directory.is_dir():
            return None
        package = GoPackage(path.rsplit("/", 1)[-1])
        for source in sorted(directory.glob("*.go")):
            if not source.name.endswith("_test.go"):
                _parse_file(source.read_text(), package)
        return package


def _parse_file(text: str, package: GoPackage) -> None:
    struct: str | None = None
    comment: list[str] = []  # the comment lines just above the current line
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            comment.append(stripped[2:].strip())
            continue
        above, comment = comment, []
        if struct is None and (constant := CONSTANT.match(line)) is not None:
            name, type_name, value = constant.groups()
            package.constants.setdefault(type_name, []).append((name, value, " ".join(above)))
            continue
        if (found := IMPORT.match(line)) is not None and ("import" in line or line.startswith("\t")):
            alias = (found.group(1) or "").strip() or found.group(2).rsplit("/", 1)[-1]
            package.imports[alias] = found.group(2)
        if struct is not None:
            if line.startswith("}"):
                struct = None
            elif (embedded := EMBEDDED.match(line)) is not None:
                package.inline.setdefault(struct, []).append(embedded.group(1).lstrip("*"))
            elif (member := STRUCT_FIELD.match(line)) is not None and not line.lstrip().startswith("//"):
                name = member.group(3).split(",")[0] or member.group(1)
                package.structs[struct][name] = member.group(2)
        elif (declared := TYPE_DECL.match(line)) is not None:
            if declared.group(2).startswith("struct {"):
                struct = declared.group(1)
                package.structs.setdefault(struct, {})
            elif not declared.group(2).startswith(("interface", "func", "=")):
                package.named[declared.group(1)] = declared.group(2)
                if "+enum" in above and declared.group(2) == "string":
                    package.enums.add(declared.group(1))


def add_enums(schemas: dict[str, Any], go: GoSources) -> None:
    """Give every field of a `+enum` type its `enum` and its "Possible enum values:" paragraph."""
    for definition, schema in schemas.items():
        path, _, struct = _go_location(definition)
        fields = _struct_fields(go, path, struct)
        for json_name, prop in (schema.get("properties") or {}).items():
            found = fields.get(json_name)
            values = _enum_values(go, *found) if found is not None else None
            if values:
                prop["enum"] = sorted(value for _, value, _ in values)
                prop["description"] = _with_enum_values(prop.get("description", ""), values)


def _enum_values(go: GoSources, expression: str, path: str) -> list[tuple[str, str, str]] | None:
    expression = expression.lstrip("*")
    package = go.package(path)
    if package is None or expression.startswith(("[]", "map[")) or expression in BUILTIN:
        return None
    type_path, name = _resolve(package, path, expression)
    owner = go.package(type_path)
    if owner is None or name not in owner.enums:
        return None
    unique: dict[str, tuple[str, str, str]] = {}
    for constant in owner.constants.get(name, []):
        kept = unique.get(constant[1])
        # kube-openapi keeps, of constants with the same value, the one with the longer comment
        if kept is None or (len(kept[2]), constant[2]) < (len(constant[2]), kept[2]):
            unique[constant[1]] = constant
    return list(unique.values())


def _with_enum_values(description: str, values: list[tuple[str, str, str]]) -> str:
    """kube-openapi's paragraph: one line per value, `"value"` and its comment without the constant's
    name, lines sorted."""
    lines = []
    for name, value, comment in values:
        text = " ".join(comment.strip().removeprefix(name).split())
        lines.append(f" - `{json.dumps(value)}` {text}")
    listed = "\n".join(line.rstrip() for line in sorted(lines))
    return (
        f"{description}\n\nPossible enum values:\n{listed}"
        if description
        else f"Possible enum values:\n{listed}"
    )


def go_type_names(schemas: dict[str, Any], go: GoSources) -> dict[str, dict[str, list[str]]]:
    """Per definition and JSON field, the Go names of a named non-struct field type: `[type]`, or
    `[type, element type]` for a list or map."""
    table: dict[str, dict[str, list[str]]] = {}
    for definition, schema in schemas.items():
        path, _, struct = _go_location(definition)
        fields = _struct_fields(go, path, struct)
        names = {}
        for json_name in schema.get("properties") or {}:
            found = fields.get(json_name)
            if found is not None and (named := _named(go, *found)) is not None:
                names[json_name] = named
        if names:
            table[definition] = names
    return table


def _go_location(definition: str) -> tuple[str, str, str]:
    """`io.k8s.api.core.v1.Pod` -> (`k8s.io/api/core/v1`, ``, `Pod`)."""
    package, _, struct = definition.rpartition(".")
    parts = package.split(".")
    if package.startswith("io.k8s.apimachinery."):
        return "k8s.io/apimachinery/" + "/".join(parts[3:]), "", struct
    return "k8s.io/api/" + "/".join(parts[3:]), "", struct


def _struct_fields(go: GoSources, path: str, struct: str) -> dict[str, tuple[str, str]]:
    """JSON name -> (Go type expression, package path), inlined structs' fields included."""
    package = go.package(path)
    if package is None or struct not in package.structs:
        return {}
    fields = {name: (expression, path) for name, expression in package.structs[struct].items()}
    for embedded in package.inline.get(struct, []):
        inner_path, inner = _resolve(package, path, embedded)
        fields = {**_struct_fields(go, inner_path, inner), **fields}
    return fields


def _resolve(package: GoPackage, path: str, expression: str) -> tuple[str, str]:
    """The package path and type name of `T` or `alias.T` as written in `package`."""
    if "." in expression:
        alias, name = expression.split(".", 1)
        return package.imports.get(alias, alias), name
    return path, expression


def _named(go: GoSources, expression: str, path: str) -> list[str] | None:
    """Go names for a field's type when it is (or holds) a named non-struct type, else None."""
    expression = expression.lstrip("*")
    package = go.package(path)
    if package is None:
        return None
    if expression.startswith("[]"):
        element = _named(go, expression[2:], path)
        return [f"[]{element[0]}", element[0]] if element and not expression[2:].startswith("[]") else None
    if expression.startswith("map["):
        value = expression[expression.index("]") + 1 :]
        element = _named(go, value, path)
        key = expression[4 : expression.index("]")]
        return [f"map[{_go_name(go, key, path)}]{element[0]}", element[0]] if element else None
    if expression in BUILTIN:
        return None
    type_path, name = _resolve(package, path, expression)
    owner = go.package(type_path)
    if owner is None or name not in owner.named:
        return None
    qualified = f"{owner.short}.{name}"
    underlying = owner.named[name]
    if underlying.startswith(("[]", "map[")):
        inner = _named(go, underlying, type_path)
        element = inner[1] if inner else _go_name(go, underlying.split("]", 1)[1], type_path)
        return [qualified, element]
    return [qualified]


def _go_name(go: GoSources, expression: str, path: str) -> str:
    """Go's name of any type expression (`resource.Quantity`, `v1.ResourceName`, `string`)."""
    expression = expression.lstrip("*")
    if expression in BUILTIN:
        return "uint8" if expression == "byte" else expression
    package = go.package(path)
    type_path, name = _resolve(package, path, expression) if package else (path, expression)
    owner = go.package(type_path)
    return f"{owner.short if owner else type_path.rsplit('/', 1)[-1]}.{name}"


if __name__ == "__main__":
    sys.exit(main())
