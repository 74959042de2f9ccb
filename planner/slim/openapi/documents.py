"""The apiserver's OpenAPI v3 documents for the kinds the server serves.

`GET /openapi/v3` lists one document per group version (`api/v1`, `apis/apps/v1`, …) with the URL to
fetch it, whose `hash` changes with its content (besides the recorded ones of `/api`, `/apis`, each
`/apis/<group>`, `/version`, `/logs` and the issuer's, as v1.28.7 lists them); each document is
`openapi: 3.0.0` with

- `paths`: every URL of every served kind (collection, object, subresources) and its operations, each
  carrying `x-kubernetes-group-version-kind` and `x-kubernetes-action`, its query parameters and, for
  writes, its request body (a PATCH accepts the four patch media types);
- `components.schemas`: the schemas of those kinds, their lists and everything they reference, from
  the committed table (`schemas.py`), descriptions, patch strategies and list types included.

Real clients read exactly those parts: `kubectl explain` finds a resource's kind through the operations
of its paths and then walks the schemas; kubectl's field-validation check looks for the
`fieldValidation` parameter of the kind's PATCH operation (and validates client-side when it is
missing); kubectl 1.31+ computes strategic merge patches from the schemas' patch strategies when the
PATCH operation accepts them. Operations and parameters carry no descriptions (the apiserver's are prose
clients never read); the documents are built once, from the resource table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from functools import cache, lru_cache
from importlib.resources import files
from typing import Any

from planner.slim.customresources import Kinds
from planner.slim.discovery_documents import SUBRESOURCE_KINDS, VERSION_INFO
from planner.slim.openapi.schemas import COMPONENTS, META, schemas
from planner.slim.patch import patchers
from planner.slim.resources import RESOURCES, SUBRESOURCE_VERBS, ResourceType

Obj = dict[str, Any]
ROOT = "/openapi/v3"
# Kinds every group version's operations refer to.
COMMON = (
    f"{META}.Status",
    f"{META}.DeleteOptions",
    f"{META}.Patch",
    f"{META}.WatchEvent",
    f"{META}.APIResourceList",
)
LIST_QUERY = (
    ("allowWatchBookmarks", "boolean"),
    ("continue", "string"),
    ("fieldSelector", "string"),
    ("labelSelector", "string"),
    ("limit", "integer"),
    ("resourceVersion", "string"),
    ("resourceVersionMatch", "string"),
    ("sendInitialEvents", "boolean"),
    ("timeoutSeconds", "integer"),
    ("watch", "boolean"),
)
WRITE_QUERY = (("dryRun", "string"), ("fieldManager", "string"), ("fieldValidation", "string"))
PATCH_QUERY = (*WRITE_QUERY, ("force", "boolean"))
DELETE_QUERY = (
    ("dryRun", "string"),
    ("gracePeriodSeconds", "integer"),
    ("orphanDependents", "boolean"),
    ("propagationPolicy", "string"),
)
RESPONSE_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")


def path_of(group: str, version: str) -> str:
    """A group version's key in the discovery document (`api/v1`, `apis/apps/v1`)."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def discovery(kinds: Kinds) -> Obj:
    """The `/openapi/v3` document: each group version's URL, with the hash of its document."""
    return {
        "paths": {
            path: {"serverRelativeURL": f"{ROOT}/{path}?hash={digest}"}
            for path, (_, digest) in sorted(_all_documents(kinds).items())
        }
    }


def document(path: str, kinds: Kinds) -> bytes | None:
    """One group version's document as JSON (None: no such group version)."""
    found = _all_documents(kinds).get(path)
    return found[0] if found else None


def _all_documents(kinds: Kinds) -> dict[str, tuple[bytes, str]]:
    custom = kinds.custom()
    if not custom:
        return {**_documents(), **_endpoint_documents(tuple(kinds.groups()))}
    return {
        **_documents(),
        **_custom_documents(kinds, kinds.generation),
        **_endpoint_documents(tuple(kinds.groups())),
    }


@lru_cache(maxsize=4)
def _endpoint_documents(groups: tuple[str, ...]) -> dict[str, tuple[bytes, str]]:
    """The documents of the paths that serve no kind: `/api`, `/apis`, each `/apis/<group>`, `/version`,
    `/logs` and the service account issuer's, as v1.28.7 serves them (`endpoints.json`)."""
    recorded = json.loads(files("planner.slim.openapi").joinpath("endpoints.json").read_text())
    template = recorded.pop("apis/{group}")
    for group in groups:
        recorded[f"apis/{group}"] = _group_document(template, group)
    return {path: _digested(document) for path, document in recorded.items()}


def _group_document(template: Obj, group: str) -> Obj:
    """`/apis/<group>/`'s document: its one operation is tagged and named after the group's camel-cased
    name without `.k8s.io` (`rbacAuthorization`, `getRbacAuthorizationAPIGroup`)."""
    words = group.removesuffix(".k8s.io").split(".")
    tag = words[0] + "".join(word[:1].upper() + word[1:] for word in words[1:])
    [operation] = template["paths"].values()
    get = {**operation["get"], "tags": [tag], "operationId": f"get{tag[:1].upper()}{tag[1:]}APIGroup"}
    return {**template, "paths": {f"/apis/{group}/": {**operation, "get": get}}}


def _digested(document: Obj) -> tuple[bytes, str]:
    raw = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return raw, hashlib.sha512(raw).hexdigest().upper()


@cache
def _documents() -> dict[str, tuple[bytes, str]]:
    by_group_version: dict[tuple[str, str], list[ResourceType]] = {}
    for rt in RESOURCES:
        if schemas().definition(rt.group_version, rt.kind):
            by_group_version.setdefault((rt.group, rt.version), []).append(rt)
    return _encoded(by_group_version, {})


@lru_cache(maxsize=4)
def _custom_documents(kinds: Kinds, generation: int) -> dict[str, tuple[bytes, str]]:
    """The documents of the custom kinds' group versions, as `kinds` served them at `generation`."""
    by_group_version: dict[tuple[str, str], list[ResourceType]] = {}
    components: Obj = {}
    for rt in kinds.custom():
        by_group_version.setdefault((rt.group, rt.version), []).append(rt)
        components.update(_custom_components(rt))
    return _encoded(by_group_version, components)


def _encoded(
    by_group_version: dict[tuple[str, str], list[ResourceType]], custom: Obj
) -> dict[str, tuple[bytes, str]]:
    return {
        path_of(group, version): _digested(_document(members, custom))
        for (group, version), members in by_group_version.items()
    }


def custom_definition(rt: ResourceType, kind: str) -> str:
    """A custom kind's schema name, as the apiserver names it: the group reversed, version, kind
    (`dev.kpt.v1alpha1.ResourceGroup`)."""
    return ".".join([*reversed(rt.group.split(".")), rt.version, kind])


def _custom_components(rt: ResourceType) -> Obj:
    """A custom kind's schema (its CRD's, with the type fields and ObjectMeta) and its list's."""
    schema = json.loads(json.dumps(rt.schema or {"type": "object"}))
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    properties["metadata"] = {"allOf": [_ref(f"{META}.ObjectMeta")]}
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt.group, rt.version, rt.kind)]
    listing = {
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "items": {"type": "array", "items": _ref(custom_definition(rt, rt.kind))},
            "kind": {"type": "string"},
            "metadata": {"allOf": [_ref(f"{META}.ListMeta")]},
        },
        "x-kubernetes-group-version-kind": [_gvk(rt.group, rt.version, rt.list_kind)],
    }
    return {custom_definition(rt, rt.kind): schema, custom_definition(rt, rt.list_kind): listing}


def _definitions(rt: ResourceType) -> tuple[str | None, str | None]:
    """The schema names of the kind and its list."""
    if not rt.structured:
        return custom_definition(rt, rt.kind), custom_definition(rt, rt.list_kind)
    return schemas().definition(rt.group_version, rt.kind), schemas().definition(
        rt.group_version, rt.list_kind
    )


def _document(members: list[ResourceType], custom: Obj) -> Obj:
    paths: Obj = {}
    for rt in sorted(members, key=lambda r: r.plural):
        paths.update(_resource_paths(rt))
    own = {name: custom[name] for name in _referenced(paths) if name in custom}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
        "paths": paths,
        "components": {
            "schemas": dict(sorted({**_closure([*_referenced(paths), *_referenced(own)]), **own}.items())),
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
    }


def _resource_paths(rt: ResourceType) -> Obj:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
    scoped = f"{prefix}/namespaces/{{namespace}}" if rt.namespaced else prefix
    kind = _gvk(rt.group, rt.version, rt.kind)
    definition, list_definition = _definitions(rt)
    one, many = _ref(definition), _ref(list_definition or definition)
    collection, item = f"{scoped}/{rt.plural}", f"{scoped}/{rt.plural}/{{name}}"
    paths: Obj = {
        collection: _operations(rt, kind, one, many, collection=True),
        item: _operations(rt, kind, one, many, collection=False),
    }
    if rt.namespaced:
        paths[f"{prefix}/{rt.plural}"] = {"get": _list(rt, kind, many, all_namespaces=True)}
    for sub in rt.subresources:
        sub_path = f"{item}/{sub}"
        if sub == "log":
            paths[sub_path] = {"get": _operation(rt, "get", "connect", kind, None, (), _text_response())}
            continue
        group, version, sub_kind, verbs = SUBRESOURCE_KINDS.get(
            sub, (rt.group, rt.version, rt.kind, SUBRESOURCE_VERBS)
        )
        api_version = f"{group}/{version}" if group else (version or rt.version)
        sub_definition = (
            schemas().definition(api_version, sub_kind) if sub in SUBRESOURCE_KINDS else definition
        )
        if sub_definition is None:
            continue
        sub_gvk = _gvk(group, version or rt.version, sub_kind)
        paths[sub_path] = _subresource(rt, sub, verbs, sub_gvk, _ref(sub_definition))
    return {path: {**operations, "parameters": _path_parameters(path)} for path, operations in paths.items()}


def _operations(rt: ResourceType, kind: Obj, one: Obj, many: Obj, *, collection: bool) -> Obj:
    verbs = set(rt.verbs)
    found: Obj = {}
    if collection:
        if "list" in verbs:
            found["get"] = _list(rt, kind, many, all_namespaces=False)
        if "create" in verbs:
            found["post"] = _operation(rt, "create", "post", kind, one, WRITE_QUERY, _responses(one))
        if "deletecollection" in verbs:
            query = (*DELETE_QUERY, *LIST_QUERY)
            found["delete"] = _operation(
                rt, "deletecollection", "deletecollection", kind, _status(), query, _responses(_status())
            )
        return found
    if "get" in verbs:
        found["get"] = _operation(rt, "read", "get", kind, None, (), _responses(one))
    if "update" in verbs:
        found["put"] = _operation(rt, "replace", "put", kind, one, WRITE_QUERY, _responses(one))
    if "patch" in verbs:
        found["patch"] = _patch(rt, "patch", kind, one)
    if "delete" in verbs:
        found["delete"] = _operation(rt, "delete", "delete", kind, _status(), DELETE_QUERY, _responses(one))
    return found


def _subresource(rt: ResourceType, sub: str, verbs: Iterable[str], kind: Obj, schema: Obj) -> Obj:
    found: Obj = {}
    suffix = sub.capitalize()
    for verb in verbs:
        if verb == "get":
            found["get"] = _operation(rt, "read", "get", kind, None, (), _responses(schema), suffix)
        elif verb == "update":
            found["put"] = _operation(
                rt, "replace", "put", kind, schema, WRITE_QUERY, _responses(schema), suffix
            )
        elif verb == "patch":
            found["patch"] = _patch(rt, "patch", kind, schema, suffix)
        elif verb == "create":
            found["post"] = _operation(
                rt, "create", "post", kind, schema, WRITE_QUERY, _responses(schema), suffix
            )
    return found


def _list(rt: ResourceType, kind: Obj, many: Obj, *, all_namespaces: bool) -> Obj:
    operation = _operation(rt, "list", "list", kind, None, LIST_QUERY, _responses(many))
    if all_namespaces:
        operation["operationId"] = _operation_id(rt, "list", "ForAllNamespaces", scoped=False)
    return operation


def _patch(rt: ResourceType, verb: str, kind: Obj, schema: Obj, suffix: str = "") -> Obj:
    operation = _operation(rt, verb, "patch", kind, None, PATCH_QUERY, _responses(schema), suffix)
    content = {media: {"schema": _ref(f"{META}.Patch")} for media in patchers(rt)}
    operation["requestBody"] = {"content": content, "required": True}
    return operation


def _operation(
    rt: ResourceType,
    verb: str,
    action: str,
    kind: Obj,
    body: Obj | None,
    query: Iterable[tuple[str, str]],
    responses: Obj,
    suffix: str = "",
) -> Obj:
    operation: Obj = {
        "operationId": _operation_id(rt, verb, suffix),
        "parameters": [{"in": "query", "name": name, "schema": {"type": kind_of}} for name, kind_of in query],
        "responses": responses,
        "tags": [f"{rt.group.split('.')[0] or 'core'}_{rt.version}"],
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": kind,
    }
    if body is not None:
        operation["requestBody"] = {"content": {"*/*": {"schema": body}}, "required": True}
    return operation


def _operation_id(rt: ResourceType, verb: str, suffix: str = "", *, scoped: bool = True) -> str:
    """`patchAppsV1NamespacedDeploymentScale`, as the apiserver names its operations."""
    group = "".join(part.capitalize() for part in rt.group.split(".")[0].split("-")) or "Core"
    scope = "Namespaced" if rt.namespaced and scoped else ""
    return f"{verb}{group}{rt.version.capitalize()}{scope}{rt.kind}{suffix}"


def _responses(schema: Obj) -> Obj:
    content = {media: {"schema": schema} for media in RESPONSE_TYPES}
    return {"200": {"description": "OK", "content": content}, "401": {"description": "Unauthorized"}}


def _text_response() -> Obj:
    return {"200": {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}}


def _path_parameters(path: str) -> list[Obj]:
    found = [
        {"in": "path", "name": name, "required": True, "schema": {"type": "string"}}
        for name in ("name", "namespace")
        if f"{{{name}}}" in path
    ]
    return [*found, {"in": "query", "name": "pretty", "schema": {"type": "string"}}]


def _gvk(group: str, version: str, kind: str) -> Obj:
    return {"group": group, "version": version, "kind": kind}


def _ref(definition: str | None) -> Obj:
    return {"$ref": COMPONENTS + definition} if definition else {}


def _status() -> Obj:
    return _ref(f"{META}.Status")


def _referenced(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref.removeprefix(COMPONENTS)
        for value in node.values():
            yield from _referenced(value)
    elif isinstance(node, list):
        for value in node:
            yield from _referenced(value)


def _closure(names: Iterable[str]) -> Obj:
    """The schemas named and every schema they reference, in name order."""
    components = schemas().components
    found: dict[str, Any] = {}
    pending = [*names, *COMMON]
    while pending:
        name = pending.pop()
        if name in found or name not in components:
            continue
        found[name] = components[name]
        pending.extend(_referenced(components[name]))
    return dict(sorted(found.items()))
