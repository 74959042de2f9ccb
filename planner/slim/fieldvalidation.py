"""Field validation: what each write path does with wrong types, unknown fields and duplicate fields.

A write's `?fieldValidation=` (CreateOptions, UpdateOptions, PatchOptions) is `Strict` (what kubectl
sends since 1.27), `Warn` (the default when none is given) or `Ignore`. Type errors fail every write
whatever it says; unknown and duplicate fields — the *strict* errors — fail under Strict, come back as
one `Warning` header each under Warn (`299 - "unknown field \\"spec.foo\\""`), and pass unnoticed under
Ignore. Each path words its failures as the apiserver's handler for it does:

- create and update bodies (JSON or YAML): 400 `<Kind> in version "v1" cannot be handled as a <Kind>:
  …` (`planner.slim.media` decodes those);
- JSON and merge patches: the patched object is decoded like a body; a failure is a 422 on the field
  `patch` quoting the patched object's JSON; duplicate keys in the patch itself are strict errors too;
- strategic merge patches: the patched map goes through the unstructured converter; a failure is a
  422 on `patch` quoting the patch as Go prints a map;
- server-side apply: undeclared fields and mistyped values always fail, as the apply schema rejects
  them (500 `failed to create typed patch object (…): .spec.foo: field not declared in schema`); only
  duplicate keys follow the directive (400 `error strict decoding YAML: …`).

A custom resource has no Go type: its unknown fields are those its CRD's structural schema would
prune (`structural.prune`), and they follow the directive on every path, server-side apply included
(the body is decoded as is; pruning itself happens in the write, whatever the directive).

In-process writers (controllers) pass no directive (`None`): their objects are not decoded from a
client's bytes, so nothing here runs for them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from planner.slim import applyschema, decoding, status_errors, structural, unstructured, validators, yamljson
from planner.slim.openapi.schemas import GoType, schemas
from planner.slim.status_errors import StatusError, Target

Obj = dict[str, Any]
DIRECTIVES = ("Ignore", "Strict", "Warn")
DEFAULT = "Warn"


def directive(value: str | None, options_kind: str) -> str:
    """The request's directive (`CreateOptions`, `UpdateOptions` or `PatchOptions` name the 422)."""
    if not value:
        return DEFAULT
    if value not in DIRECTIVES:
        cause = validators.not_supported("fieldValidation", value, ("", *DIRECTIVES))
        raise status_errors.invalid(Target("meta.k8s.io", "", options_kind), [cause])
    return value


def strict_decoding_error(found: list[str]) -> str:
    return "strict decoding error: " + ", ".join(found)


def warnings_for(found: list[str]) -> tuple[str, ...]:
    """One warning per strict error; go-yaml's error is split into its lines, as the apiserver does."""
    warnings: list[str] = []
    for error in found:
        if error.startswith(yamljson.STRICT_PREFIX):
            lines = error.removeprefix(yamljson.STRICT_PREFIX).split("\n")
            warnings.extend(line.strip() for line in lines)
        else:
            warnings.append(error)
    return tuple(dict.fromkeys(warnings))


@dataclass(frozen=True)
class Check:
    """One write's field validation: the Go type it decodes into, its directive (None: no checks, an
    in-process writer) and where its warnings go."""

    api_version: str
    kind: str
    directive: str | None
    warnings: list[str] | None = None
    schema: Mapping[str, Any] | None = None  # a custom kind's structural schema

    @property
    def go_type(self) -> GoType | None:
        return schemas().type_of(self.api_version, self.kind) if self.directive else None

    def unknown_fields(self, document: Any) -> list[str]:
        """The fields of a custom resource its schema does not declare (none for built-in kinds)."""
        if self.schema is None or not self.directive or not isinstance(document, dict):
            return []
        return [
            f"unknown field {_go_quote(path)}"
            for path in structural.prune(decoding.plain(document), dict(self.schema))
        ]

    def strict(self, found: list[str], failure: Callable[[], StatusError]) -> None:
        """Apply the directive to strict errors: raise `failure()` under Strict, warn under Warn (the
        failure is built only when raised: its message may quote the whole object)."""
        if not found:
            return
        if self.directive == "Strict":
            raise failure()
        if self.directive == "Warn" and self.warnings is not None:
            self.warnings.extend(w for w in warnings_for(found) if w not in self.warnings)


def patched_json(
    check: Check, patched: Obj, patch_strict: list[str], changed: decoding.Changed | None = None
) -> Obj:
    """A JSON or merge patch's result (plain JSON values), decoded like a body (`patch_strict`: what
    the patch itself had; `changed`: what it wrote, when the rest is the stored object's); returns
    what the Go struct holds (unknown fields dropped)."""

    def failure(detail: str) -> StatusError:
        shown = json.dumps(decoding.plain(patched), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return _invalid_patch(shown, detail)

    go_type = check.go_type
    if go_type is None:
        unknown = [*patch_strict, *check.unknown_fields(patched)] if check.schema is not None else []
        check.strict(unknown, lambda: failure(strict_decoding_error(unknown)))
        return patched
    findings = decoding.decode_json(schemas(), patched, go_type, plain_input=True, changed=changed)

    if findings.error is not None:
        raise failure(findings.error)
    found = [*patch_strict, *findings.strict]
    check.strict(found, lambda: failure(strict_decoding_error(found)))
    return dict(findings.value)


def patched_strategic(check: Check, patched: Obj, patch: Any, patch_strict: list[str]) -> Obj:
    """A strategic merge patch's result, through the unstructured converter (unknown fields dropped)."""
    go_type = check.go_type
    if go_type is None:
        return patched
    findings = unstructured.from_unstructured(schemas(), patched, go_type)

    def failure(detail: str) -> StatusError:
        return _invalid_patch(decoding.go_value(decoding.plain(patch)), detail)

    if findings.error is not None:
        raise failure(findings.error)
    found = [*patch_strict, *findings.strict]
    check.strict(found, lambda: failure(strict_decoding_error(found)))
    return dict(findings.value)


def _invalid_patch(shown: str, detail: str) -> StatusError:
    cause = validators.invalid_value("patch", shown, detail, rendered=_go_quote(shown))
    return status_errors.invalid(Target("", "", ""), [cause])


def applied(check: Check, config: Obj) -> None:
    """Server-side apply's schema check of the applied configuration, whatever the directive (a custom
    resource's unknown fields: as the directive says)."""
    go_type = check.go_type
    if go_type is None:
        found = check.unknown_fields(config)
        check.strict(found, lambda: status_errors.bad_request(strict_decoding_error(found)))
        return
    found = applyschema.apply_errors(schemas(), config, go_type)
    if not found:
        return
    meta = config.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    group, _, version = check.api_version.rpartition("/")
    where = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}; {group}/{version}, Kind={check.kind}"
    detail = found[0] if len(found) == 1 else "errors:\n  " + "\n  ".join(found)
    raise status_errors.unclassified(f"failed to create typed patch object ({where}): {detail}")


def apply_duplicates(check: Check, converted: yamljson.Converted) -> None:
    """Duplicate keys in an apply configuration: the directive decides."""
    error = converted.strict_error
    if check.directive is None or error is None:
        return
    check.strict([error], lambda: status_errors.bad_request(f"error strict decoding YAML: {error}"))


def _go_quote(text: str) -> str:
    """Go's %q of a string (printable Unicode kept as it is)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
