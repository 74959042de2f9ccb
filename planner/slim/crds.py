"""The CustomResourceDefinition kind (`apiextensions.k8s.io/v1`): its defaults, validation and status.

What the apiextensions-apiserver's strategy, validation and controllers do to a CRD, as hooks of its
`ResourceType` (`resources.py`):

- defaults: `spec.conversion.strategy: None`, `names.singular` (the lowercase kind) and `names.listKind`
  (kind + `List`);
- validation (422 like every other kind's): `metadata.name` is `<plural>.<group>`, a group with a dot,
  lowercase DNS-1035 plural and singular, a scope, versions with unique DNS-1035 names, exactly one of
  them the storage version, a structural schema (`type: object` at the root) on each; `spec.group`,
  `spec.scope` and the names are immutable;
- status, which the naming and establishing controllers set in the real server a moment after the
  write: here it is set by the write itself, so a CRD is Established when its create returns.
  `acceptedNames` are the names no other CRD of the group already uses; any conflict leaves
  `NamesAccepted` False (reason `<Name>Conflict`) and the CRD not Established, and its kind is not
  served; `storedVersions` gains the storage version. Conflicts are judged at each write of the CRD: removing the other CRD does not re-accept it
  until it is written again.

Serving the custom resources themselves is `customresources.py`'s.
"""

from __future__ import annotations

import re
from typing import Any

from planner.slim import admission, validators
from planner.slim.meta import now_rfc3339
from planner.slim.status_errors import Cause, Target

Obj = dict[str, Any]
KIND = "CustomResourceDefinition"
SCOPES = ("Cluster", "Namespaced")
CONVERSION_STRATEGIES = ("None", "Webhook")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# The names a CRD claims in its group, in the order the naming controller checks them.
_NAME_FIELDS = ("plural", "singular", "kind", "listKind")


def spec_of(crd: Obj) -> Obj:
    spec = crd.get("spec")
    return spec if isinstance(spec, dict) else {}


def names_of(crd: Obj) -> Obj:
    names = spec_of(crd).get("names")
    return names if isinstance(names, dict) else {}


def versions_of(crd: Obj) -> list[Obj]:
    versions = spec_of(crd).get("versions")
    return [v for v in versions if isinstance(v, dict)] if isinstance(versions, list) else []


def storage_version(crd: Obj) -> str | None:
    return next((str(v.get("name")) for v in versions_of(crd) if v.get("storage") is True), None)


def contents(crd: Obj) -> tuple[str, ...]:
    """The store key of the CRD's custom resources, which go when it does."""
    return (f"{spec_of(crd).get('group')}/{names_of(crd).get('plural')}",)


def condition(crd: Obj, kind: str) -> Obj | None:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == kind), None)


def established(crd: Obj) -> bool:
    found = condition(crd, "Established")
    return found is not None and found.get("status") == "True"


# --- defaults -----------------------------------------------------------------------------------------


def default_crd(crd: Obj) -> None:
    spec = crd.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if not spec.get("conversion"):
        spec["conversion"] = {"strategy": "None"}
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")


# --- validation ---------------------------------------------------------------------------------------


def validate_crd(crd: Obj) -> list[Cause]:
    spec, names = spec_of(crd), names_of(crd)
    group, plural = spec.get("group") or "", names.get("plural") or ""
    causes: list[Cause] = []
    name = (crd.get("metadata") or {}).get("name") or ""
    if name != f"{plural}.{group}":
        causes.append(
            validators.invalid_value("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
        )
    causes += _validate_group(group)
    causes += _validate_names(names)
    scope = spec.get("scope")
    if not scope:
        causes.append(validators.required("spec.scope", ""))
    elif scope not in SCOPES:
        causes.append(validators.not_supported("spec.scope", scope, SCOPES))
    causes += _validate_versions(versions_of(crd), spec.get("versions"))
    strategy = (spec.get("conversion") or {}).get("strategy")
    if strategy not in CONVERSION_STRATEGIES:
        causes.append(validators.not_supported("spec.conversion.strategy", strategy, CONVERSION_STRATEGIES))
    elif strategy == "Webhook":
        causes.append(
            validators.forbidden(
                "spec.conversion.strategy", "conversion webhooks are not served by this server"
            )
        )
    return causes


def update_crd(new: Obj, old: Obj) -> list[Cause]:
    causes: list[Cause] = []
    for path, field in (("spec.group", "group"), ("spec.scope", "scope")):
        if spec_of(new).get(field) != spec_of(old).get(field):
            causes.append(validators.immutable(path, spec_of(new).get(field)))
    return causes


def _validate_group(group: str) -> list[Cause]:
    if not group:
        return [validators.required("spec.group", "")]
    if "." not in group:
        return [validators.invalid_value("spec.group", group, "should be a domain with at least one dot")]
    if not _SUBDOMAIN.match(group):
        return [validators.invalid_value("spec.group", group, _subdomain_message())]
    return []


def _subdomain_message() -> str:
    return (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )


def _dns1035_message() -> str:
    return (
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    )


def _validate_names(names: Obj) -> list[Cause]:
    causes: list[Cause] = []
    for field in ("plural", "singular"):
        value = names.get(field) or ""
        path = f"spec.names.{field}"
        if not value:
            causes.append(validators.required(path, ""))
        elif not _DNS1035.match(value):
            causes.append(validators.invalid_value(path, value, _dns1035_message()))
    for field in ("kind", "listKind"):
        if not names.get(field):
            causes.append(validators.required(f"spec.names.{field}", ""))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        causes.append(
            validators.invalid_value(
                "spec.names.listKind", names["listKind"], "kind and listKind may not be the same"
            )
        )
    return causes


def _validate_versions(versions: list[Obj], raw: Any) -> list[Cause]:
    if not raw:
        return [
            validators.required("spec.versions", "must have exactly one version marked as storage version")
        ]
    causes: list[Cause] = []
    seen: set[str] = set()
    for index, version in enumerate(versions):
        path = f"spec.versions[{index}]"
        name = version.get("name") or ""
        if not name:
            causes.append(validators.required(f"{path}.name", ""))
        elif not _DNS1035.match(name):
            causes.append(validators.invalid_value(f"{path}.name", name, _dns1035_message()))
        elif name in seen:
            causes.append(validators.duplicate(f"{path}.name", name))
        seen.add(name)
        causes += _validate_schema(version, path)
    if sum(1 for v in versions if v.get("storage") is True) != 1:
        causes.append(
            validators.invalid_value(
                "spec.versions", raw, "must have exactly one version marked as storage version"
            )
        )
    return causes


def _validate_schema(version: Obj, path: str) -> list[Cause]:
    schema = (version.get("schema") or {}).get("openAPIV3Schema")
    where = f"{path}.schema.openAPIV3Schema"
    if not isinstance(schema, dict):
        return [validators.required(where, "schemas are required")]
    if schema.get("type") != "object":
        if not schema.get("type"):
            return [validators.required(f"{where}.type", "must not be empty at the root")]
        return [validators.invalid_value(f"{where}.type", schema["type"], "must be object at the root")]
    return []


# --- status: names and conditions ---------------------------------------------------------------------


def admit_crd(cluster: admission.Admission, crd: Obj, old: Obj | None, target: Target) -> list[Cause]:
    """Accept the names no other CRD of the group claims, and set the conditions that follow."""
    others = [
        c
        for c in cluster.find_all(KIND)
        if (c.get("metadata") or {}).get("name") != (crd.get("metadata") or {}).get("name")
        and spec_of(c).get("group") == spec_of(crd).get("group")
    ]
    names = names_of(crd)
    taken = _claimed(others)
    previous = ((old or {}).get("status") or {}).get("acceptedNames") or {}
    conflict: tuple[str, str] | None = None
    accepted: Obj = {}
    for field in ("plural", "singular", "shortNames", "kind", "listKind", "categories"):
        wanted = names.get(field)
        if not wanted:
            continue
        clashes = [w for w in (wanted if isinstance(wanted, list) else [wanted]) if w in taken]
        if clashes and field != "categories":
            conflict = conflict or (field, clashes[0])
            if field in previous:
                accepted[field] = previous[field]
            continue
        accepted[field] = wanted
    status = crd.setdefault("status", {})
    status["acceptedNames"] = accepted
    stored = status.setdefault("storedVersions", [])
    version = storage_version(crd)
    if version is not None and version not in stored:
        stored.append(version)
    status["conditions"] = _conditions(old, conflict)
    return []


def _claimed(crds: list[Obj]) -> set[str]:
    claimed: set[str] = set()
    for other in crds:
        accepted = (other.get("status") or {}).get("acceptedNames") or {}
        for field in (*_NAME_FIELDS, "shortNames"):
            value = accepted.get(field)
            claimed.update(value if isinstance(value, list) else [value] if value else [])
    return claimed


def _conditions(old: Obj | None, conflict: tuple[str, str] | None) -> list[Obj]:
    if conflict is None:
        names = _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found")
        ready = _condition(
            "Established", "True", "InitialNamesAccepted", "the initial names have been accepted"
        )
    else:
        field, value = conflict
        reason = field[0].upper() + field[1:] + "Conflict"
        names = _condition("NamesAccepted", "False", reason, f'"{value}" is already in use')
        ready = _condition("Established", "False", "NotAccepted", "not all names are accepted")
    return [_keep_transition(old, names), _keep_transition(old, ready)]


def _condition(kind: str, status: str, reason: str, message: str) -> Obj:
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": now_rfc3339(),
        "reason": reason,
        "message": message,
    }


def _keep_transition(old: Obj | None, new: Obj) -> Obj:
    """A condition whose status did not change keeps its lastTransitionTime."""
    before = condition(old, new["type"]) if old is not None else None
    if before is not None and before.get("status") == new["status"]:
        return {**new, "lastTransitionTime": before.get("lastTransitionTime")}
    return new
