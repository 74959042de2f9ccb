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

Usage (the output is deterministic: running it twice gives byte-identical files):

    .venv/bin/python scripts/generate_k8s_openapi.py
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
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
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=OUT, help="where to write (default: %(default)s)")
    args = parser.parse_args(argv)
    definitions = load_definitions()
    schemas = {
        name: convert_definition(name, body) for name, body in sorted(definitions.items()) if kept(name)
    }
    missing = sorted(dangling_refs(schemas))
    if missing:
        raise SystemExit("references to definitions not kept: " + ", ".join(missing))
    document = {"source": f"kubernetes-validate {SOURCE_VERSION}", "schemas": schemas}
    raw = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    print(f"wrote {args.out}: {len(schemas)} schemas, {len(raw)} bytes uncompressed", file=sys.stderr)
    return 0


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


if __name__ == "__main__":
    sys.exit(main())
