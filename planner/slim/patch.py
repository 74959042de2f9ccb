"""PATCH by content type: the one dispatch table, plus the managedFields hook every write calls.

`PATCHERS` maps a media type (parameters such as `;charset` stripped) to a function
`(current object, raw body, context) -> patched object`. JSON patch (RFC 6902, via `jsonpatch`) and
merge patch (RFC 7386) are served; strategic merge and server-side apply are part 2's
(`planner/slim/strategic.py`, `planner/slim/fieldmanager.py`): they answer 415 until part 2 adds its
functions to this table. An unknown media type is 415 too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonpatch

from planner.slim.errors import StatusError, bad_request, status_body
from planner.slim.resources import ResourceType

Obj = dict[str, Any]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True)
class PatchContext:
    """What a patcher may need beyond the document: the kind, the manager, force (for apply)."""

    resource: ResourceType
    field_manager: str | None
    force: bool
    subresource: str | None


Patcher = Callable[[Obj, bytes, PatchContext], Obj]


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError as exc:
        raise bad_request(f"error decoding patch: {exc}") from exc


def json_patch(current: Obj, body: bytes, ctx: PatchContext) -> Obj:
    operations = _parse_json(body)
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp")
    try:
        result = jsonpatch.apply_patch(current, operations)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
        raise StatusError(
            422,
            status_body(
                422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
            ),
        ) from exc
    if not isinstance(result, dict):
        raise bad_request("the patched object is not a JSON object")
    return result


def merge_patch(current: Obj, body: bytes, ctx: PatchContext) -> Obj:
    patch = _parse_json(body)
    if not isinstance(patch, dict):
        raise bad_request("the patch is not a JSON object")
    merged = apply_merge_patch(current, patch)
    assert isinstance(merged, dict)
    return merged


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _not_yet(content_type: str) -> Patcher:
    def refuse(current: Obj, body: bytes, ctx: PatchContext) -> Obj:
        raise unsupported(content_type)

    return refuse


def unsupported(content_type: str) -> StatusError:
    accepted = ", ".join(t for t, fn in PATCHERS.items() if t not in _LATER)
    message = f"the body of the request was in an unknown format - accepted media types include: {accepted}"
    return StatusError(415, status_body(415, "UnsupportedMediaType", message))


_LATER = {STRATEGIC_MERGE_PATCH, APPLY_PATCH}

# The dispatch table. Part 2 replaces the two `_not_yet` entries with strategic.py / fieldmanager.py.
PATCHERS: dict[str, Patcher] = {
    JSON_PATCH: json_patch,
    MERGE_PATCH: merge_patch,
    STRATEGIC_MERGE_PATCH: _not_yet(STRATEGIC_MERGE_PATCH),
    APPLY_PATCH: _not_yet(APPLY_PATCH),
}


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def patcher_for(content_type: str | None) -> Patcher:
    kind = media_type(content_type)
    if kind not in PATCHERS:
        raise unsupported(kind)
    return PATCHERS[kind]


def creates_when_missing(content_type: str | None) -> bool:
    """Server-side apply creates an absent object (201); every other patch of one is a 404."""
    return media_type(content_type) == APPLY_PATCH


def is_apply(content_type: str | None) -> bool:
    return media_type(content_type) == APPLY_PATCH


# --- managedFields hook ---------------------------------------------------------------------------------


def managed_fields(
    old: Obj | None, new: Obj, *, manager: str | None, operation: str, subresource: str | None
) -> Obj:
    """Every write path calls this with the stored object (None on create) and the object about to be
    stored, and stores what it returns. Part 2 (fieldmanager.py) fills it in to maintain
    `metadata.managedFields`; for now it is the identity except that client-sent managedFields are
    dropped, so the field is simply absent (kubectl hides it; k8s-api-behaviour.md §2).
    `operation` is "Update" or "Apply"; `subresource` is "status", "scale" or None."""
    new.get("metadata", {}).pop("managedFields", None)
    return new
