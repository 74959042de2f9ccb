"""Strategic merge patch (`application/strategic-merge-patch+json`) as the apiserver applies it.

This is what `kubectl apply` (client-side), `kubectl edit`, `label`, `annotate`, `scale` and the Python
client's default dict patch send. It is a JSON merge patch (null deletes a key, maps merge) plus
per-field list rules from `mergekeys`: lists with a merge key merge item by item, primitive lists with
the merge strategy (finalizers) are unions, every other list is replaced. Directives:

- `$patch: replace | delete | merge` on a map (replace it wholesale, empty it, merge it) and on a list
  item (`delete` removes the item with that merge key, `replace` makes the patch list the whole list);
- `$setElementOrder/<field>`: the order of the merged list (patch items in that order, server-only
  items kept where they were relative to them);
- `$retainKeys`: the keys a map keeps — every other key is cleared (a volume switching its source);
- `$deleteFromPrimitiveList/<field>`: values removed from a primitive merge list.

Failures raise `PatchError` with the status code and wording of apimachinery's `strategicpatch`
errors as the apiserver maps them (400 for malformed directives, 422 for content errors, 500 for the
errors it does not classify, as it does).
"""

from __future__ import annotations

import json
from typing import Any

from planner.slim.mergekeys import Field, KeyedList, SetList, Struct, schema_for
from planner.slim.meta import json_copy
from planner.slim.status_errors import status_body

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
SET_ORDER_PREFIX = "$setElementOrder/"
DELETE_PRIMITIVE_PREFIX = "$deleteFromPrimitiveList/"


class PatchError(Exception):
    """A patch the apiserver refuses: HTTP `code`, Status `reason` and `message` as it words them."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def status_body(self) -> dict[str, Any]:
        """The `kind: Status` body to send."""
        if self.code == 500:
            message = f"Internal error occurred: {self.message}"
            return status_body(500, self.reason, message, {"causes": [{"message": self.message}]})
        return status_body(self.code, self.reason, self.message)


def _bad_request(message: str) -> PatchError:
    return PatchError(400, "BadRequest", message)


def _invalid(message: str) -> PatchError:
    return PatchError(422, "Invalid", message)


def _internal(message: str) -> PatchError:
    return PatchError(500, "InternalError", message)


def _go_map(value: Any) -> str:
    """Roughly how Go's %v prints a map in apimachinery's error messages."""
    if isinstance(value, dict):
        inner = " ".join(f"{k}:{_go_map(v)}" for k, v in sorted(value.items()))
        return f"map[{inner}]"
    return str(value)


def strategic_merge_patch(original: dict[str, Any], patch: dict[str, Any], *, kind: str) -> dict[str, Any]:
    """Apply a strategic merge patch to `original` (left untouched) and return the patched object."""
    if not isinstance(patch, dict):
        raise _bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
    return _merge_map(json_copy(original), json_copy(patch), schema_for(kind))


# ----------------------------------------------------------------------------------------------- maps


def _merge_map(
    original: dict[str, Any] | None, patch: dict[str, Any], schema: Field | None
) -> dict[str, Any]:
    if DIRECTIVE in patch:
        handled = _map_directive(patch)
        if handled is not None:
            return handled
    result = original if original is not None else {}
    _apply_retain_keys(result, patch)
    _apply_element_orders(result, patch, schema)
    deletions = {k: v for k, v in patch.items() if k.startswith(DELETE_PRIMITIVE_PREFIX)}
    for key, value in patch.items():
        if key.startswith(DELETE_PRIMITIVE_PREFIX):
            continue
        if value is None:
            result.pop(key, None)
            continue
        result[key] = _merge_value(result.get(key), value, _child(schema, key), key)
    for key, value in deletions.items():
        _delete_from_primitive_list(result, key[len(DELETE_PRIMITIVE_PREFIX) :], value)
    return result


def _map_directive(patch: dict[str, Any]) -> dict[str, Any] | None:
    """Handle `$patch` on a map: the new value, or None to go on merging."""
    directive = patch.pop(DIRECTIVE)
    if directive == "replace":
        return patch
    if directive == "delete":
        return {}
    if directive == "merge":
        return None
    raise _internal(f"unknown patch type: {directive} in map: {_go_map({**patch, DIRECTIVE: directive})}")


def _child(schema: Field | None, key: str) -> Field | None:
    return schema.child(key) if isinstance(schema, Struct) else None


def _merge_value(original: Any, patch: Any, schema: Field | None, key: str) -> Any:
    if isinstance(patch, dict):
        return _merge_map(original if isinstance(original, dict) else None, patch, schema)
    if isinstance(patch, list):
        if not isinstance(original, list):
            return _merge_list([], patch, schema, key)
        return _merge_list(original, patch, schema, key)
    return patch


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    keep = patch.pop(RETAIN_KEYS)
    if not isinstance(keep, list):
        raise _bad_request("invalid patch format of retainKeys")
    for key, value in patch.items():
        if value is None or key.startswith(("$setElementOrder/", "$deleteFromPrimitiveList/")):
            continue
        if key not in keep:
            raise _invalid("patch content doesn't match retainKeys list")
    for key in list(original):
        if key not in keep:
            del original[key]


# ---------------------------------------------------------------------------------------------- lists


def _merge_list(original: list[Any], patch: list[Any], schema: Field | None, key: str) -> list[Any]:
    if any(isinstance(item, list) for item in patch):
        raise _invalid("lists of lists are not supported")
    if isinstance(schema, KeyedList) and schema.patch_key is not None:
        return _merge_keyed_list(original, patch, schema, schema.patch_key)
    if isinstance(schema, SetList):
        merged = _dedupe(original + patch)
        return _order(merged, patch, original, None)
    return [_strip_directives(item) for item in patch]


def _strip_directives(item: Any) -> Any:
    if isinstance(item, dict):
        return _merge_map(None, item, None)
    return item


def _dedupe(values: list[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def _merge_keyed_list(original: list[Any], patch: list[Any], schema: KeyedList, key: str) -> list[Any]:
    for item in original + patch:
        if not isinstance(item, dict):
            raise _internal(f"expected a map, but received a {type(item).__name__}")
    items, replace = _special_items(original, patch, key)
    merged = list(original) if not replace else []
    for item in items:
        if key not in item:
            raise _internal(f"map: {_go_map(item)} does not contain declared merge key: {key}")
        index = _index_by_key(merged, key, item[key])
        if index is None:
            merged.append(_merge_map(None, item, schema.item))
        else:
            merged[index] = _merge_map(merged[index], item, schema.item)
    return _order(merged, items, original if not replace else [], key)


def _special_items(original: list[Any], patch: list[Any], key: str) -> tuple[list[dict[str, Any]], bool]:
    """Apply `$patch: delete` items to `original` in place; return the plain items and whether a
    `$patch: replace` item asked for the patch list to become the whole list."""
    plain: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        directive = item.get(DIRECTIVE)
        if directive is None:
            plain.append(item)
        elif directive == "delete":
            if key not in item:
                raise _internal(f"map: {_go_map(item)} does not contain declared merge key: {key}")
            original[:] = [o for o in original if o.get(key) != item[key]]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise _internal("merging lists cannot yet be specified in the patch")
        else:
            raise _internal(f"unknown patch type: {directive} in map: {_go_map(item)}")
    return plain, replace


def _index_by_key(items: list[Any], key: str, value: Any) -> int | None:
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get(key) == value:
            return index
    return None


def _identity(item: Any, key: str | None) -> str:
    value = item.get(key) if key is not None and isinstance(item, dict) else item
    return json.dumps(value, sort_keys=True)


def _order(merged: list[Any], wanted: list[Any], server_order: list[Any], key: str | None) -> list[Any]:
    """Patch items in `wanted` order, server-only items interleaved where they stood in `server_order`
    (apimachinery's normalizeElementOrder + mergeSortedSlice)."""
    wanted_ids = [_identity(item, key) for item in wanted]
    server_ids = [_identity(item, key) for item in server_order]
    in_patch = [item for item in merged if _identity(item, key) in wanted_ids]
    server_only = [item for item in merged if _identity(item, key) not in wanted_ids]
    in_patch.sort(key=lambda item: wanted_ids.index(_identity(item, key)))
    server_only.sort(key=lambda i: _position(server_ids, _identity(i, key)))
    return _interleave(server_only, in_patch, server_ids, key)


def _position(order: list[str], identity: str) -> int:
    return order.index(identity) if identity in order else len(order)


def _interleave(left: list[Any], right: list[Any], server_ids: list[str], key: str | None) -> list[Any]:
    result: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            result.append(left[i])
            i += 1
            continue
        if i >= len(left):
            result.append(right[j])
            j += 1
            continue
        li, ri = _identity(left[i], key), _identity(right[j], key)
        if li in server_ids and ri in server_ids and server_ids.index(li) < server_ids.index(ri):
            result.append(left[i])
            i += 1
        else:
            result.append(right[j])
            j += 1
    return result


def _apply_element_orders(original: dict[str, Any], patch: dict[str, Any], schema: Field | None) -> None:
    for directive in [k for k in patch if k.startswith(SET_ORDER_PREFIX)]:
        order = patch.pop(directive)
        field_name = directive[len(SET_ORDER_PREFIX) :]
        if not isinstance(order, list):
            raise _internal(f"expected a slice, but received a {type(order).__name__}")
        field_schema = _child(schema, field_name)
        key = field_schema.patch_key if isinstance(field_schema, KeyedList) else None
        _check_order_covers_patch(patch.get(field_name), order, key)
        if field_name in patch:
            live = original.get(field_name)
            merged = _merge_value(live, patch.pop(field_name), field_schema, field_name)
        elif field_name in original:
            merged = original[field_name]
        else:
            continue
        live_list = original.get(field_name)
        original[field_name] = _order(merged, order, live_list if isinstance(live_list, list) else [], key)


def _check_order_covers_patch(patch_list: Any, order: list[Any], key: str | None) -> None:
    if not isinstance(patch_list, list):
        return
    order_ids = [_identity(item, key) for item in order]
    for item in patch_list:
        if isinstance(item, dict) and item.get(DIRECTIVE) is not None:
            continue
        if _identity(item, key) not in order_ids:
            raise _bad_request("invalid patch format of setElementOrder list")


def _delete_from_primitive_list(original: dict[str, Any], field_name: str, values: Any) -> None:
    if not isinstance(values, list):
        raise _bad_request("invalid patch format of primitive list")
    current = original.get(field_name)
    if isinstance(current, list):
        original[field_name] = [v for v in current if v not in values]
