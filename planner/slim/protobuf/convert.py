"""Kubernetes JSON <-> protobuf messages, field by field, as Go's two encoders would see the same object.

The server stores and reasons about objects as Kubernetes JSON (dicts). A protobuf body is the same
Go struct written by another encoder, so converting means reproducing what the Go struct would look
like in JSON:

- a present zero on a non-pointer `omitempty` scalar is Go's "unset" (Go's protobuf encoder writes
  every non-pointer field; its JSON encoder drops the zero ones), so it is dropped; on a pointer field
  (`replicas: 0`, `suspend: false`) it is a value and kept;
- a present message is emitted even when empty (`resources: {}`, `status: {}`), as Go emits a struct;
- Time is RFC 3339 in seconds and `null` when zero (an empty message), MicroTime has six fractional
  digits; Quantity is its string; IntOrString an int or a string; bytes are base64; FieldsV1 and
  RawExtension carry embedded JSON (a RawExtension may also hold a nested protobuf object);
- map keys come out sorted, as Go sorts them.

JSON keys that the schema does not know are dropped when encoding, as a v1.28 server drops fields it
does not know; a value of the wrong JSON type is a `ConversionError` naming its path.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.message import Message

from planner.slim.decoding import json_type
from planner.slim.protobuf.messages import FieldSpec, Schema, Shape

MAGIC = b"k8s\x00"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class ConversionError(ValueError):
    """A value that does not fit its field (path, what was expected, what was found)."""


# --- JSON -> message ----------------------------------------------------------------------------------


def fill(schema: Schema, message: Message, obj: Mapping[str, Any], path: str = "") -> None:
    """Set `message`'s fields from the JSON object `obj`."""
    if not isinstance(obj, Mapping):
        raise ConversionError(f"{path or '.'}: expected an object, found {_json_type(obj)}")
    by_json = schema.spec(message.DESCRIPTOR.full_name).by_json
    for key, value in obj.items():
        target = by_json.get(key)
        if target is None:
            continue
        inline, spec = target
        holder = message
        for step in inline:
            holder = getattr(holder, step.name)
            holder.SetInParent()
        _set(schema, holder, spec, value, f"{path}.{key}")


def _set(schema: Schema, message: Message, spec: FieldSpec, value: Any, path: str) -> None:
    if value is None:
        if spec.shape in (Shape.TIME, Shape.MICRO_TIME) and not spec.repeated:
            getattr(message, spec.name).SetInParent()  # Go's zero Time: an empty message, `null` in JSON
        return
    if spec.is_map:
        _set_map(schema, getattr(message, spec.name), spec, value, path)
    elif spec.repeated:
        _set_list(schema, getattr(message, spec.name), spec, value, path)
    elif spec.shape in (Shape.SCALAR, Shape.BYTES):
        _set_scalar(message, spec, _scalar(spec, value, path), path)
    else:
        _fill_value(schema, getattr(message, spec.name), spec, value, path)


def _set_scalar(message: Message, spec: FieldSpec, value: Any, path: str) -> None:
    try:
        setattr(message, spec.name, value)
    except (TypeError, ValueError) as exc:
        raise ConversionError(f"{path}: {exc}") from exc


def _set_map(schema: Schema, container: Any, spec: FieldSpec, value: Any, path: str) -> None:
    if not isinstance(value, Mapping):
        raise ConversionError(f"{path}: expected an object, found {_json_type(value)}")
    scalar = spec.shape in (Shape.SCALAR, Shape.BYTES)
    for key, item in value.items():
        if scalar:
            try:
                container[key] = _scalar(spec, item, f"{path}.{key}")
            except (TypeError, ValueError) as exc:
                raise ConversionError(f"{path}.{key}: {exc}") from exc
        else:
            entry = container[key]  # a message value's entry exists once read: Go's zero value for null
            if item is not None:
                _fill_value(schema, entry, spec, item, f"{path}.{key}")


def _set_list(schema: Schema, container: Any, spec: FieldSpec, value: Any, path: str) -> None:
    if not isinstance(value, list):
        raise ConversionError(f"{path}: expected a list, found {_json_type(value)}")
    if spec.shape in (Shape.SCALAR, Shape.BYTES):
        try:
            container.extend(_scalar(spec, item, f"{path}[{i}]") for i, item in enumerate(value))
        except (TypeError, ValueError) as exc:
            raise ConversionError(f"{path}: {exc}") from exc
        return
    for i, item in enumerate(value):
        _fill_value(schema, container.add(), spec, item, f"{path}[{i}]")


def _scalar(spec: FieldSpec, value: Any, path: str) -> Any:
    if spec.shape is Shape.BYTES:
        if not isinstance(value, str):
            raise ConversionError(f"{path}: expected a base64 string, found {_json_type(value)}")
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ConversionError(f"{path}: illegal base64 data") from exc
    if isinstance(value, dict | list):
        raise ConversionError(f"{path}: expected a scalar, found {_json_type(value)}")
    return value


def _fill_value(schema: Schema, message: Message, spec: FieldSpec, value: Any, path: str) -> None:
    """Fill one message-typed value (a field, a list item or a map value) by its shape."""
    filler = FILLERS.get(spec.shape)
    if filler is None:
        fill(schema, message, value, path)
        message.SetInParent()
        return
    try:
        filler(message, value)
    except (TypeError, ValueError) as exc:
        raise ConversionError(f"{path}: {exc}") from exc


def _fill_time(message: Any, value: Any) -> None:
    message.seconds = _whole_seconds(_parse_time(value))  # Go's Time drops sub-second precision


def _fill_micro_time(message: Any, value: Any) -> None:
    moment = _parse_time(value)
    message.seconds, message.nanos = _whole_seconds(moment), moment.microsecond * 1000


def _whole_seconds(moment: datetime) -> int:
    return (moment.replace(microsecond=0) - EPOCH) // timedelta(seconds=1)


def _parse_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise TypeError(f"expected an RFC 3339 time string, found {_json_type(value)}")
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no time zone")
    return moment


def _fill_quantity(message: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TypeError(f"expected a quantity, found {_json_type(value)}")
    message.string = value if isinstance(value, str) else json.dumps(value)


def _fill_int_or_string(message: Any, value: Any) -> None:
    if isinstance(value, str):
        message.type, message.intVal, message.strVal = 1, 0, value
    elif isinstance(value, int) and not isinstance(value, bool):
        message.type, message.intVal, message.strVal = 0, value, ""
    else:
        raise TypeError(f"expected an integer or a string, found {_json_type(value)}")


def _fill_raw(message: Any, value: Any) -> None:
    message.raw = _json_bytes(value)


def _fill_fields(message: Any, value: Any) -> None:
    message.Raw = _json_bytes(value)


def _fill_items(message: Any, value: Any) -> None:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, found {_json_type(value)}")
    message.items.extend(value)


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


FILLERS: dict[Shape, Callable[[Any, Any], None]] = {
    Shape.TIME: _fill_time,
    Shape.MICRO_TIME: _fill_micro_time,
    Shape.QUANTITY: _fill_quantity,
    Shape.INT_OR_STRING: _fill_int_or_string,
    Shape.RAW: _fill_raw,
    Shape.FIELDS: _fill_fields,
    Shape.ITEMS: _fill_items,
}


# --- message -> JSON ----------------------------------------------------------------------------------


def to_json(schema: Schema, message: Message, nested: Callable[[bytes], Any]) -> dict[str, Any]:
    """The JSON object of `message`; `nested` decodes a RawExtension holding a protobuf object."""
    spec = schema.spec(message.DESCRIPTOR.full_name)
    out: dict[str, Any] = {}
    for fd, value in message.ListFields():
        field = spec.fields[fd.number]
        if field.inline:
            out.update(to_json(schema, value, nested))
        elif field.is_map:
            out[field.json] = {key: _value(schema, field, value[key], nested) for key in sorted(value)}
        elif field.repeated:
            out[field.json] = [_value(schema, field, item, nested) for item in value]
        elif not (field.omit_zero and not value):
            out[field.json] = _value(schema, field, value, nested)
    for key, empty_list in spec.unset:
        if key not in out:
            out[key] = [] if empty_list else None
    return out


def _value(schema: Schema, field: FieldSpec, value: Any, nested: Callable[[bytes], Any]) -> Any:
    shape = field.shape
    if shape is Shape.SCALAR:
        return value
    if shape is Shape.BYTES:
        return base64.b64encode(value).decode()
    if shape is Shape.MESSAGE:
        return to_json(schema, value, nested)
    if shape is Shape.RAW:
        return _raw_json(value.raw, nested)
    if shape is Shape.FIELDS:
        return _raw_json(value.Raw, nested)
    return READERS[shape](value)


def _raw_json(raw: bytes, nested: Callable[[bytes], Any]) -> Any:
    if not raw:
        return None
    if raw.startswith(MAGIC):
        return nested(raw)
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConversionError(f"embedded object is neither JSON nor protobuf: {exc}") from exc


def _read_time(message: Any) -> str | None:
    if not message.HasField("seconds"):
        return None
    return datetime.fromtimestamp(message.seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _read_micro_time(message: Any) -> str | None:
    if not message.HasField("seconds") and not message.HasField("nanos"):
        return None
    moment = datetime.fromtimestamp(message.seconds, UTC).replace(microsecond=message.nanos // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _read_int_or_string(message: Any) -> int | str:
    return message.strVal if message.type == 1 else message.intVal  # type: ignore[no-any-return]


READERS: dict[Shape, Callable[[Any], Any]] = {
    Shape.TIME: _read_time,
    Shape.MICRO_TIME: _read_micro_time,
    Shape.QUANTITY: lambda message: message.string,
    Shape.INT_OR_STRING: _read_int_or_string,
    Shape.ITEMS: lambda message: list(message.items),
}


# What a conversion error calls a value, by its JSON type.
_FOUND = {
    "null": "null",
    "boolean": "a boolean",
    "integer": "a number",
    "number": "a number",
    "string": "a string",
    "array": "a list",
    "object": "an object",
}


def _json_type(value: Any) -> str:
    return _FOUND[json_type(value)]
