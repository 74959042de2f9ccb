"""Masking of Secret values and Secret hashes in anything printed (DESIGN §5)."""

from __future__ import annotations

import copy
from typing import Any

MASK = "***"
HASH_ANNOTATION = "planner.dev/hash"
_SECRET_VALUE_FIELDS = ("data", "stringData")


def is_secret(manifest: dict[str, Any]) -> bool:
    return manifest.get("kind") == "Secret" and manifest.get("apiVersion", "v1") == "v1"


def mask_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """A copy of `manifest` with a Secret's values and content hash replaced by `***`; others unchanged."""
    if not is_secret(manifest):
        return manifest
    masked = copy.deepcopy(manifest)
    for field in _SECRET_VALUE_FIELDS:
        if isinstance(masked.get(field), dict):
            masked[field] = {key: MASK for key in masked[field]}
    annotations = masked.get("metadata", {}).get("annotations")
    if isinstance(annotations, dict) and HASH_ANNOTATION in annotations:
        annotations[HASH_ANNOTATION] = MASK
    return masked
