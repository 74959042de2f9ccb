"""The API's size limits, checked on the rendered objects so that a plan too big for the API stops
before anything is written.

A real server refuses a ConfigMap whose `data` and `binaryData` values add up to more than 1 MiB, a
Secret whose decoded `data` does (both 422), annotations over 256 KiB on one object (422), a request
body over 3 MiB (413), and etcd, by default, any object over 1.5 MiB ("etcdserver: request is too
large"). Found at `apply` time these fail one object after the ApplySet parent was written; found here
they are plan errors, each at the plan entry that renders the object: `validate` reports them, and
`render`, `plan` and `apply` refuse to go on.

Sizes are counted as the server counts them: data values in bytes (Secret values decoded), annotation
keys and values in bytes, and the whole object as its JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from typing import Any

from planner.errors import Diagnostic
from planner.objects import Manifest
from planner.plan.model import Plan
from planner.render.plan_entries import entry_paths

MAX_DATA_BYTES = 1024 * 1024
MAX_ANNOTATIONS_BYTES = 256 * 1024
MAX_OBJECT_BYTES = 1536 * 1024  # etcd's default --max-request-bytes; below the 3 MiB request limit


def limit_diagnostics(plan: Plan, manifests: list[Manifest]) -> list[Diagnostic]:
    """One diagnostic per limit a rendered object passes, at the plan entry it comes from."""
    origins = entry_paths(plan)
    found: list[Diagnostic] = []
    for manifest in manifests:
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        origin = origins.get((kind, name), "")
        where = plan.source.position(origin)
        for problem in _problems(manifest):
            found.append(Diagnostic(plan.source.file_of(where), where.line, where.column, origin, problem))
    return found


def _problems(manifest: Manifest) -> Iterator[str]:
    what = f'the rendered {manifest["kind"]} "{manifest["metadata"]["name"]}"'
    data = _data_bytes(manifest)
    if data > MAX_DATA_BYTES:
        yield (
            f"{what} holds {data:,} bytes of data: the API allows at most {MAX_DATA_BYTES:,} (1 MiB) in one "
            f"{manifest['kind']} (split it)"
        )
    for metadata in _metadata(manifest):
        annotations = _annotation_bytes(metadata.get("annotations") or {})
        if annotations > MAX_ANNOTATIONS_BYTES:
            yield (
                f"{what} carries {annotations:,} bytes of annotations: the API allows at most "
                f"{MAX_ANNOTATIONS_BYTES:,} (256 KiB) on one object"
            )
    size = len(json.dumps(manifest, separators=(",", ":")).encode())
    if size > MAX_OBJECT_BYTES:
        yield (
            f"{what} is {size:,} bytes: a Kubernetes object can be at most {MAX_OBJECT_BYTES:,} (1.5 MiB, "
            "what etcd stores by default)"
        )


def _data_bytes(manifest: Manifest) -> int:
    if manifest["kind"] == "ConfigMap":
        text = sum(len(str(value).encode()) for value in _values(manifest, "data"))
        return text + sum(_decoded_bytes(value) for value in _values(manifest, "binaryData"))
    if manifest["kind"] == "Secret":
        return sum(_decoded_bytes(value) for value in _values(manifest, "data"))
    return 0


def _values(manifest: Manifest, field: str) -> list[Any]:
    found = manifest.get(field)
    return list(found.values()) if isinstance(found, dict) else []


def _decoded_bytes(value: Any) -> int:
    """The bytes a base64 value holds; what does not decode (the plan's checks refuse it) counts as its
    text."""
    text = str(value)
    try:
        return len(base64.b64decode(text))
    except binascii.Error:
        return len(text.encode())


def _metadata(manifest: Manifest) -> Iterator[Mapping[str, Any]]:
    """The object's metadata and its pod template's."""
    yield manifest["metadata"]
    template = (manifest.get("spec") or {}).get("template")
    if isinstance(template, dict):
        yield template.get("metadata") or {}


def _annotation_bytes(annotations: Mapping[str, str]) -> int:
    return sum(len(key.encode()) + len(str(value).encode()) for key, value in annotations.items())
