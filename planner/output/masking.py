"""Masking of Secret values and Secret hashes in anything printed (docs/design.md §5)."""

from __future__ import annotations

from planner.kinds import SECRET
from planner.objects import ANNOTATION_HASH, Manifest, json_copy, metadata_of

MASK = "***"
_SECRET_VALUE_FIELDS = ("data", "stringData")


def is_secret(manifest: Manifest) -> bool:
    return (
        manifest.get("kind") == SECRET.kind
        and manifest.get("apiVersion", SECRET.api_version) == SECRET.api_version
    )


def mask_manifest(manifest: Manifest) -> Manifest:
    """A copy of `manifest` with a Secret's values and content hash replaced by `***`; others unchanged."""
    if not is_secret(manifest):
        return manifest
    masked: Manifest = json_copy(manifest)
    for field in _SECRET_VALUE_FIELDS:
        if isinstance(masked.get(field), dict):
            masked[field] = {key: MASK for key in masked[field]}
    annotations = metadata_of(masked).get("annotations")
    if isinstance(annotations, dict) and ANNOTATION_HASH in annotations:
        annotations[ANNOTATION_HASH] = MASK
    return masked
