"""Schema validation with messages written for people.

jsonschema reports what failed in its own vocabulary ("8080 is not of type 'string'", "... is not valid
under any of the given schemas"). Here each error becomes one Diagnostic that says what was expected and
what was found, at the offending node, with the fix when there is an obvious one. `oneOf` failures are
collapsed into the one sentence that matters ("exactly one of httpGet, tcpSocket, exec"), and a node that
breaks several value rules at once (empty and not matching a pattern) gets one message, not several.

A valid plan is recognised first by jsonschema-rs, a compiled validator about fifty times faster than
jsonschema's (a third of a second for a plan of 1,000 workloads before): only a plan it finds invalid is
checked again by jsonschema, whose errors the messages are made from. It never accepts what jsonschema
refuses: its `uniqueItems` finds every repeat the one here does (it compares 1 and 1.0 equal, this one
does not), its patterns' `\\s` is widened to Python's (which also matches U+001C–U+001F), its `$` ends
only the text (Python's also before a final newline: stricter), and a value it cannot take (an integer
beyond 64 bits) counts as invalid.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from planner.errors import Diagnostic
from planner.plan.durations import DURATION_HINT
from planner.plan.schema import fragment_schema, plan_schema
from planner.plan.source import ParsedFile, child_path
from planner.plan.suggest import hint

if TYPE_CHECKING:  # jsonschema itself is imported only for a plan jsonschema-rs finds invalid
    from jsonschema.exceptions import ValidationError

NEVER_REASON = "Pull policy Never is rejected for preflight validation"

_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DURATION_PATTERN = "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
_PATTERN_MESSAGES = {
    _NAME_PATTERN: "{found} is not a valid name: expected lowercase letters, digits and '-', "
    "starting and ending with a letter or digit (DNS-1123 label)",
    _DURATION_PATTERN: "bad duration {found}: " + DURATION_HINT,
    "^/": "expected an absolute path starting with '/', found {found}",
    "^[A-Za-z_][A-Za-z0-9_]*$": "{found} is not an environment variable name: expected letters, digits "
    "and '_', not starting with a digit",
    "^[-._a-zA-Z][-._a-zA-Z0-9]*$": "{found} is not an environment variable name: expected letters, "
    "digits, '_', '-' and '.', not starting with a digit",
    "^[-._a-zA-Z0-9]+$": "{found} is not a valid key: expected letters, digits, '_', '-' and '.'",
    "^[0-9]+%$": "expected a count or a percentage like 1 or 25%, found {found}",
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": "{found} is not a valid name: "
    "expected lowercase letters, digits, '-' and '.', each dot-separated part starting and ending with a "
    "letter or digit (DNS-1123 subdomain)",
    "^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$": "{found} is not a valid name: expected lowercase letters, digits, "
    "'-' and '.', starting and ending with a letter or digit",
    "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$": "{found} is not a host "
    "name: expected lowercase DNS labels joined by dots, optionally starting with '*.' (a wildcard)",
    "^([a-z0-9]([-a-z0-9]*[a-z0-9])?|[A-Z][A-Za-z0-9]*/[a-z0-9]([-.a-z0-9]*[a-z0-9])?|chart/[a-z0-9]"
    "([-a-z0-9]*[a-z0-9])?)$": "{found} is not a dependsOn target: expected a workload or sandbox name (web), "
    "a manifest as Kind/name with the kind capitalised as its manifest spells it (ConfigMap/settings), or a "
    "chart as chart/<name>",
    "^[A-Z][A-Za-z0-9]*$": "{found} is not a kind: expected a kind as manifests spell it, capitalised "
    "(ConfigMap, Deployment)",
    "^https?://": "expected an http:// or https:// URL, found {found}",
    "^[0-9a-f]{40}$": "expected a full commit hash (40 lowercase hexadecimal digits), found {found}",
}
_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}
_INT_BITS = {2**31 - 1: 32, 2**63 - 1: 64}  # the largest int32 and int64: the plan schema's maximums
_SECRET_DATA = re.compile(r"secrets\[\d+\]\.data\.")
# Keywords about a node's own value: when several fail on one node, only the first in this order is told.
_VALUE_KEYWORDS = ("type", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum")


@dataclass(frozen=True)
class SchemaReport:
    diagnostics: list[Diagnostic]
    broken: frozenset[str]  # paths of nodes that are themselves invalid (not just missing a field)


def _unique_items(
    validator: Any, unique: bool, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """jsonschema's own `uniqueItems` compares every pair of items that do not sort (a list mixing
    mappings and numbers): quadratic, so one hostile list in an 8 MiB plan would never finish."""
    del schema
    from jsonschema.exceptions import ValidationError

    if unique and validator.is_type(instance, "array") and _first_repeat(instance) is not None:
        yield ValidationError("has non-unique elements")


def _first_repeat(items: Sequence[Any]) -> int | None:
    """The index of the first item equal to an earlier one, in one pass."""
    seen: set[str] = set()
    for index, item in enumerate(items):
        key = json.dumps(item, sort_keys=True)
        if key in seen:
            return index
        seen.add(key)
    return None


@cache
def _python_validator() -> Any:
    """jsonschema's draft-07 validator class, with the `uniqueItems` above, and `integer` meaning a
    YAML integer: `2.0` is a float to YAML, which render would write as `2.0`, and the API refuses a
    float where Go has an int (or, through server-side apply, truncates it)."""
    from jsonschema import Draft7Validator, validators

    integers = Draft7Validator.TYPE_CHECKER.redefine("integer", _is_integer)
    return validators.extend(Draft7Validator, {"uniqueItems": _unique_items}, type_checker=integers)


def _is_integer(checker: Any, instance: Any) -> bool:
    del checker
    return isinstance(instance, int) and not isinstance(instance, bool)


def _has_integral_float(value: Any) -> bool:
    """Whether a float with no fraction (`2.0`, `1e3`) is anywhere in the document: jsonschema-rs takes
    it for an integer, so such a document is checked by jsonschema too."""
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_has_integral_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_integral_float(item) for item in value)
    return False


def check_schema(
    parsed: ParsedFile, *, definition: str | None = None, fragment: bool = False
) -> SchemaReport:
    """Every schema violation in `parsed`, one Diagnostic per problem: against the plan schema (with
    `fragment`, its variant requiring nothing, for an imported file), or with `definition` (`manifest`)
    a list of items of that definition of it (a file of manifests)."""
    if _known_valid(fragment, definition)(parsed.data):
        return SchemaReport([], frozenset())
    validator = _python_validator()(_schema(fragment, definition))
    errors = sorted(validator.iter_errors(parsed.data), key=_keyword_rank)
    seen_values: set[str] = set()
    broken: set[str] = set()
    found: dict[tuple[str, str], Diagnostic] = {}
    for error in errors:
        path = _path(error)
        if error.validator in _VALUE_KEYWORDS and not _about_key(error):
            if path in seen_values:
                continue
            seen_values.add(path)
        for diagnostic in _translate(error, parsed):
            found.setdefault((diagnostic.path, diagnostic.message), diagnostic)
            if error.validator != "required":
                broken.add(diagnostic.path)
    return SchemaReport(list(found.values()), frozenset(broken))


def _schema(fragment: bool, definition: str | None) -> dict[str, Any]:
    schema = fragment_schema() if fragment else plan_schema()
    if definition is None:
        return schema
    return {
        "type": "array",
        "items": {"$ref": f"#/definitions/{definition}"},
        "definitions": schema["definitions"],
    }


@cache
def _known_valid(fragment: bool, definition: str | None) -> Callable[[Any], bool]:
    """Whether jsonschema-rs finds a document valid against `_schema(fragment, definition)`, compiled
    once per process (see the module docstring); False whenever it cannot tell."""
    try:
        compiled = jsonschema_rs.Draft7Validator(
            _python_whitespace(_schema(fragment, definition)), validate_formats=False
        )
    except (ValueError, jsonschema_rs.ValidationError):  # a pattern its regex engine refuses
        return lambda _: False

    def valid(document: Any) -> bool:
        try:
            return bool(compiled.is_valid(document)) and not _has_integral_float(document)
        except (ValueError, TypeError, OverflowError):  # not a JSON value it can take
            return False

    return valid


def _python_whitespace(value: Any) -> Any:
    """The schema with each pattern's `\\s` (inside a character class, as all of the plan schema's are)
    matching what Python's does: the Unicode white space Rust's matches, and U+001C–U+001F."""
    if isinstance(value, dict):
        return {
            key: item.replace("\\s", "\\s\\x1c-\\x1f")
            if key == "pattern" and isinstance(item, str)
            else _python_whitespace(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_python_whitespace(item) for item in value]
    return value


def _keyword_rank(error: ValidationError) -> int:
    keyword = str(error.validator)
    return _VALUE_KEYWORDS.index(keyword) if keyword in _VALUE_KEYWORDS else len(_VALUE_KEYWORDS)


def _path(error: ValidationError) -> str:
    path = ""
    for part in error.absolute_path:
        path = child_path(path, part)
    return path


def _about_key(error: ValidationError) -> bool:
    """A `propertyNames` error: the instance is a mapping key, not a value."""
    return "propertyNames" in error.absolute_schema_path


def _translate(error: ValidationError, parsed: ParsedFile) -> Iterator[Diagnostic]:
    path = _path(error)
    keyword = str(error.validator)
    if keyword == "additionalProperties":
        yield from _unknown_fields(error, path, parsed)
    elif keyword == "required":
        yield from _missing_fields(error, path, parsed)
    elif keyword == "oneOf":
        yield from _one_of(error, path, parsed)
    elif keyword == "uniqueItems":
        yield _repeated_item(error, path, parsed)
    elif _about_key(error):
        key_path = child_path(path, str(error.instance))
        yield parsed.diagnostic(key_path, _value_message(error, key_path, parsed), at_value=False)
    else:
        yield parsed.diagnostic(path, _value_message(error, path, parsed))


def _unknown_fields(error: ValidationError, path: str, parsed: ParsedFile) -> Iterator[Diagnostic]:
    allowed = list(error.schema.get("properties", {}))
    for key in error.instance:
        if key not in allowed:
            expected = (
                hint(str(key), allowed, listing="expected one of") if allowed else " (expected no fields)"
            )
            yield parsed.diagnostic(child_path(path, key), f'unknown field "{key}"{expected}', at_value=False)


def _missing_fields(error: ValidationError, path: str, parsed: ParsedFile) -> Iterator[Diagnostic]:
    for key in error.validator_value:
        if key not in error.instance:
            yield parsed.diagnostic(path, f'missing required field "{key}"', at_value=False)


def _one_of(error: ValidationError, path: str, parsed: ParsedFile) -> Iterator[Diagnostic]:
    branches: Sequence[dict[str, Any]] = error.validator_value
    choices = [" with ".join(branch["required"]) for branch in branches if "required" in branch]
    if len(choices) == len(branches):
        keys = [key for branch in branches for key in branch["required"]]
        yield parsed.diagnostic(path, _exactly_one(choices, keys, error.instance), at_value=False)
    else:
        yield from _secret_value(error, path, parsed)


def _exactly_one(choices: list[str], keys: list[str], instance: Any) -> str:
    present = [key for key in keys if isinstance(instance, dict) and key in instance]
    found = " and ".join(present) if present else "none"
    return f"expected exactly one of {', '.join(choices)}, found {found}"


def _secret_value(error: ValidationError, path: str, parsed: ParsedFile) -> Iterator[Diagnostic]:
    """A secret value is a string or `{valueFrom: ...}`: explain the branch the user was aiming at."""
    instance = error.instance
    if isinstance(instance, dict):
        object_errors = [sub for sub in error.context or () if sub.relative_schema_path[0] == 1]
        for sub in sorted(object_errors, key=_keyword_rank)[:1]:
            yield from _translate(sub, parsed)
        return
    if _is_number_or_boolean(instance):
        yield parsed.diagnostic(path, _quote_hint(path, instance, parsed))
        return
    expected = (
        "a string or {valueFrom: {env: VAR}}, {valueFrom: {file: PATH}} or {valueFrom: {secretKeyRef: ...}}"
    )
    message = f"expected {expected}, found {_found(path, instance, parsed)}"
    yield parsed.diagnostic(path, message)


def _repeated_item(error: ValidationError, path: str, parsed: ParsedFile) -> Diagnostic:
    index = _first_repeat(error.instance)
    if index is None:  # pragma: no cover - the keyword found a repeat
        return parsed.diagnostic(path, "items must be unique")
    return parsed.diagnostic(child_path(path, index), f"{json.dumps(error.instance[index])} is listed twice")


def _value_message(error: ValidationError, path: str, parsed: ParsedFile) -> str:
    keyword, expected, instance = str(error.validator), error.validator_value, error.instance
    found = _found(path, instance, parsed)
    if keyword == "type":
        return _type_message(error, path, parsed)
    if keyword == "enum":
        return _enum_message(path, expected, instance, found)
    if keyword == "pattern":
        template = _PATTERN_MESSAGES.get(str(expected), "{found} does not match the pattern " + str(expected))
        return template.format(found=found)
    if keyword == "minLength":
        return (
            "must not be empty"
            if expected == 1
            else f"expected at least {expected} characters, found {found}"
        )
    if keyword == "maxLength":
        return f"{found} is {len(instance)} characters long; at most {expected} are allowed"
    if keyword == "minimum":
        return f"expected at least {expected}, found {found}"
    if keyword == "maximum":
        stored = (
            f" (the API stores it as a {_INT_BITS[expected]}-bit integer)" if expected in _INT_BITS else ""
        )
        return f"expected at most {expected}, found {found}{stored}"
    if keyword == "minItems":
        return f"expected at least {expected} item{'s' if expected != 1 else ''}, found none"
    if keyword in ("minProperties", "maxProperties"):
        return f"expected exactly one of {', '.join(error.schema.get('properties', {}))}"
    return str(error.message)  # pragma: no cover - every keyword the schema uses is handled above


def _type_message(error: ValidationError, path: str, parsed: ParsedFile) -> str:
    instance = error.instance
    # An env value may also be a mapping ({secretKeyRef: ...}), but a number there meant a string.
    wants_string = error.validator_value in ("string", ["string", "object"])
    if _is_map_value(error) and wants_string and _is_number_or_boolean(instance):
        return _quote_hint(path, instance, parsed)
    if _is_map_value(error) and instance is None:
        return "expected a string, found null: write '' for an empty value"
    wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
    names = [_TYPE_NAMES.get(str(name), str(name)) for name in wanted]
    expected = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
    kind = "string " if isinstance(instance, str) else ""
    return f"expected {expected}, found {kind}{_found(path, instance, parsed)}"


def _is_map_value(error: ValidationError) -> bool:
    schema_path = list(error.absolute_schema_path)
    return len(schema_path) >= 2 and schema_path[-2] == "additionalProperties"


def _quote_hint(path: str, instance: Any, parsed: ParsedFile) -> str:
    kind = "boolean" if isinstance(instance, bool) else "number"
    if _is_secret_value(path):
        return f"expected a string, found a {kind}: quote the value (not shown: it is a secret)"
    written = parsed.written(path) or _canonical(instance)
    return f'expected a string, found {kind} {written}: quote it ("{written}")'


def _is_secret_value(path: str) -> bool:
    """`secrets[0].data.KEY` or `…secretEnv.KEY`: a value that must never appear in a message."""
    in_secret_map = _SECRET_DATA.match(path) is not None or ".secretEnv." in path
    return in_secret_map and ".valueFrom" not in path


def _enum_message(path: str, expected: list[Any], instance: Any, found: str) -> str:
    if path.endswith("pullPolicy") and instance == "Never":
        return f'Never is rejected: "{NEVER_REASON}"; use Always or IfNotPresent'
    choices = [str(choice) for choice in expected if choice != ""]
    if len(choices) == 1:
        return f"expected {choices[0]}, found {found}"
    return f"expected one of {', '.join(choices)}, found {found}"


def _is_number_or_boolean(value: Any) -> bool:
    return isinstance(value, bool | int | float)


def _found(path: str, value: Any, parsed: ParsedFile) -> str:
    """How a found value is named in messages: its kind, and its text when it is a scalar."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    kind = "boolean" if isinstance(value, bool) else "integer" if isinstance(value, int) else "number"
    return f"{kind} {parsed.written(path) or _canonical(value)}"


def _canonical(value: Any) -> str:
    return json.dumps(value)
