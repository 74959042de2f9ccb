"""aiohttp application: turns URLs into API-core calls and StatusErrors into Status responses.

No Kubernetes semantics live here. The router splits `/api/v1/...` and `/apis/<g>/<v>/...` paths into
(resource, namespace, name, subresource), picks the core call by method, reads the body in whatever
format it came in (JSON, YAML or protobuf: `media.decode_body`) and writes the answer in the format the
client's Accept negotiates (`media.negotiate`): protobuf for built-in kinds when asked for first, else
JSON with exactly `Content-Type: application/json` (client-go 0.27 compares it verbatim). Watches
stream one JSON event per line, or length-prefixed protobuf frames, flushed per event. Who may ask
what is `guard`'s; the create-only kinds are answered (`ResourceType.answer`) for the requester it
found. `/openapi/v2`
answers 200 with an empty protobuf document, which is what kubectl 1.27/1.28 need before
`create -f`/`apply`; `/openapi/v3` and its group-version documents come from `openapi.documents`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from planner import jsonwire
from planner.slim import discovery_documents, fieldmanager, fieldvalidation, media, protobuf, views
from planner.slim.api import Api, DeleteOptions, ListOptions, WatchOptions, WriteOptions
from planner.slim.auth import Auth
from planner.slim.customresources import Kinds
from planner.slim.http.guard import PUBLIC_PATHS, guard, request_log_handler, user_of
from planner.slim.openapi import documents
from planner.slim.patch import is_apply
from planner.slim.requestinfo import of_request
from planner.slim.requestlog import RequestLog
from planner.slim.resources import ResourceType
from planner.slim.reviews import Review
from planner.slim.simulation import Simulation
from planner.slim.status_errors import (
    StatusError,
    bad_request,
    internal,
    method_not_allowed,
    request_entity_too_large,
    unknown_path,
)
from planner.slim.verbhelpers import decode

log = logging.getLogger(__name__)

JSON = "application/json"
OPENAPI_V2_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
MAX_REQUEST_BYTES = 3 * 1024 * 1024  # the apiserver's MaxRequestBodyBytes: a larger body is a 413
API_KEY = web.AppKey("api", Api)
AUTH_KEY = web.AppKey("auth", Auth)
SIMULATION_KEY = web.AppKey("simulation", Simulation)


@dataclass(frozen=True)
class Route:
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def json_response(body: Any, status: int = 200, content_type: str = JSON) -> web.Response:
    return web.Response(status=status, body=jsonwire.dumps(body), headers={"Content-Type": content_type})


def respond(
    request: web.Request, body: Any, status: int = 200, warnings: list[str] | None = None
) -> web.Response:
    """`body` in the negotiated format: protobuf when the client asks for it first and the kind has a
    message (custom resources and Tables do not), else JSON. An object its message cannot hold (a value
    of the wrong type stored through a lenient JSON write) goes out as JSON, which clients also read.
    Each of `warnings` becomes a `Warning: 299 - "…"` header."""
    response = _encoded(request, body, status)
    for text in warnings or ():
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response


def _encoded(request: web.Request, body: Any, status: int) -> web.Response:
    if media.negotiate(request.headers.get("Accept", "")).protobuf and _encodable(body):
        try:
            encoded = protobuf.encode(body)
        except protobuf.ProtobufError as exc:
            log.warning("answering in JSON: %s", exc)
        else:
            return web.Response(status=status, body=encoded, headers={"Content-Type": protobuf.MEDIA_TYPE})
    return json_response(body, status)


def _encodable(body: Any) -> bool:
    return isinstance(body, dict) and protobuf.can_encode(str(body.get("apiVersion")), str(body.get("kind")))


def status_response(request: web.Request, error: StatusError) -> web.Response:
    return respond(request, error.body, error.code)


@web.middleware
async def errors_middleware(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        return await handler(request)
    except StatusError as exc:
        return status_response(request, exc)
    except web.HTTPRequestEntityTooLarge:
        return status_response(request, request_entity_too_large(MAX_REQUEST_BYTES))


def build_app(
    api: Api, *, token: str | None = None, simulation: Simulation | None = None, rbac: bool = False
) -> web.Application:
    """The server's app; `token` is the admin's bearer token, `rbac` turns authorization on (see
    `auth.Auth`); `simulation` adds metrics and fault middlewares, `/slim/` and `/metrics`."""
    auth = Auth(api, admin_token=token or "", rbac=rbac)
    log = RequestLog()
    middlewares = [*(simulation.middlewares() if simulation else []), errors_middleware, guard(auth, log)]
    app = web.Application(middlewares=middlewares, client_max_size=MAX_REQUEST_BYTES)
    app[API_KEY] = api
    app[AUTH_KEY] = auth
    if simulation is not None:
        app[SIMULATION_KEY] = simulation
        simulation.add_routes(app)
    app.router.add_route("*", "/slim/requests", request_log_handler(log))
    app.router.add_route("*", "/{tail:.*}", dispatch)
    app.on_response_prepare.append(_priority_and_fairness_headers(uuid.uuid4(), uuid.uuid4()))
    return app


def _priority_and_fairness_headers(
    flow_schema: uuid.UUID, priority_level: uuid.UUID
) -> Callable[[web.Request, web.StreamResponse], Awaitable[None]]:
    """kube-apiserver classifies every request with API Priority and Fairness and names the flow schema
    and priority level on the answer; clients read that to drop their own rate limit (cli-utils'
    `flowcontrol.IsEnabled`, planner's client). This server queues nothing, as an `exempt` level would
    not, and names one such pair for every request."""

    async def add(request: web.Request, response: web.StreamResponse) -> None:
        del request
        response.headers["X-Kubernetes-Pf-Flowschema-Uid"] = str(flow_schema)
        response.headers["X-Kubernetes-Pf-Prioritylevel-Uid"] = str(priority_level)

    return add


async def dispatch(request: web.Request) -> web.StreamResponse:
    parts = [p for p in request.path.split("/") if p]
    fixed = _fixed_endpoint(request, parts)
    if fixed is not None:
        return fixed
    api = request.app[API_KEY]
    route = _route(api.kinds, parts)
    if route is None:
        raise unknown_path()
    if route.subresource is None and _verb(request) not in route.resource.verbs:
        raise method_not_allowed()
    handler = {
        "GET": _get,
        "POST": _post,
        "PUT": _put,
        "PATCH": _patch,
        "DELETE": _delete,
    }.get(request.method)
    if handler is None:
        raise method_not_allowed()
    response = await handler(request, api, route)
    if route.resource.deprecation and not response.prepared:
        response.headers.add("Warning", f'299 - "{route.resource.deprecation}"')
    return response


# --- fixed endpoints ----------------------------------------------------------------------------------


# A probe's individual `ping` check (what cli-utils reads API Priority and Fairness's headers from); unlike
# the probe itself, not public.
_PING_CHECKS = frozenset(f"{probe}/ping" for probe in PUBLIC_PATHS)


def _fixed_endpoint(request: web.Request, parts: list[str]) -> web.StreamResponse | None:
    if request.method != "GET":
        return None
    accept = request.headers.get("Accept", "")
    path = "/" + "/".join(parts)
    kinds = request.app[API_KEY].kinds
    if path in PUBLIC_PATHS or path in _PING_CHECKS:
        return web.Response(text="ok", content_type="text/plain")
    if path == "/version":
        return json_response(discovery_documents.VERSION_INFO)
    if path == "/openapi/v2":
        return web.Response(body=b"", headers={"Content-Type": OPENAPI_V2_TYPE})
    if path == documents.ROOT:
        return json_response(documents.discovery(kinds))
    if path.startswith(documents.ROOT + "/"):
        found = documents.document(path.removeprefix(documents.ROOT + "/"), kinds)
        if found is None:
            raise unknown_path()
        return web.Response(body=found, headers={"Content-Type": JSON})
    if path in ("/api", "/apis") and "as=APIGroupDiscoveryList" in accept:
        version = _aggregated_version(accept)
        content_type = f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        return json_response(
            discovery_documents.aggregated(kinds, path == "/api", version), content_type=content_type
        )
    if path == "/api":
        return json_response(discovery_documents.api_versions(request.host))
    if path == "/apis":
        return json_response(discovery_documents.api_group_list(kinds))
    if path == "/api/v1":
        return json_response(discovery_documents.resource_list(kinds, "", "v1"))
    if len(parts) == 2 and parts[0] == "apis":
        return _or_404(discovery_documents.api_group(kinds, parts[1]))
    if len(parts) == 3 and parts[0] == "apis":
        return _or_404(discovery_documents.resource_list(kinds, parts[1], parts[2]))
    return None


def _aggregated_version(accept: str) -> str:
    for clause in media.parse_accept(accept):
        if clause.params.get("as") == "APIGroupDiscoveryList" and clause.params.get("v") in ("v2", "v2beta1"):
            return clause.params["v"]
    return "v2beta1"


def _or_404(body: dict | None) -> web.Response:
    if body is None:
        raise unknown_path()
    return json_response(body)


# --- routing ------------------------------------------------------------------------------------------


def _route(kinds: Kinds, parts: list[str]) -> Route | None:
    if len(parts) >= 3 and parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    resource = kinds.lookup(group, version, rest[0])
    if resource is None or (namespace is not None and not resource.namespaced):
        return None
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in resource.subresources:
        return None
    return Route(resource, namespace, name, sub)


def _verb(request: web.Request) -> str:
    return of_request(request).verb


def _query(request: web.Request) -> dict[str, str]:
    return dict(request.query)


def _write_options(request: web.Request, options_kind: str) -> WriteOptions:
    """The write's query options; `options_kind` (CreateOptions, UpdateOptions, PatchOptions) names a
    bad `fieldValidation` in the 422."""
    query = request.query
    return WriteOptions(
        dry_run="All" in query.getall("dryRun", []),
        field_manager=query.get("fieldManager") or _manager_from_agent(request),
        force=query.get("force", "") in ("true", "1", "True"),
        field_validation=fieldvalidation.directive(query.get("fieldValidation"), options_kind),
        warnings=[],
    )


def _manager_from_agent(request: web.Request) -> str | None:
    return fieldmanager.manager_from_user_agent(request.headers.get("User-Agent", "")) or None


async def _body(
    request: web.Request,
    kind: str,
    api_version: str = "",
    options: WriteOptions | None = None,
    schema: Any = None,
) -> Any:
    """The request body; with write options, decoded into `kind` (`schema`: a custom kind's) under
    their field validation."""
    check = None
    if options is not None:
        check = fieldvalidation.Check(api_version, kind, options.field_validation, options.warnings, schema)
    return media.decode_body(await request.read(), request.headers.get("Content-Type"), kind, check)


# --- verbs --------------------------------------------------------------------------------------------


async def _get(request: web.Request, api: Api, route: Route) -> web.StreamResponse:
    rt, query = route.resource, request.query
    if route.name is None:
        if query.get("watch", "") in ("1", "true", "True"):
            return await _watch(request, api, route)
        listing = api.list(rt, route.namespace, _list_options(query))
        return _render_list(request, rt, listing)
    namespace = route.namespace or ""
    if route.subresource == "scale":
        return respond(request, api.get_scale(rt, namespace, route.name))
    if route.subresource == "log":
        return await _pod_log(request, api, route)
    if route.subresource not in (None, "status", "approval"):
        raise method_not_allowed()
    obj = api.get(rt, namespace, route.name)
    return _render_one(request, rt, obj)


def _list_options(query: Any) -> ListOptions:
    limit = query.get("limit", "0") or "0"
    return ListOptions(
        label_selector=query.get("labelSelector"),
        field_selector=query.get("fieldSelector"),
        limit=int(limit) if limit.isdigit() else 0,
        continue_token=query.get("continue") or None,
        resource_version=query.get("resourceVersion"),
        resource_version_match=query.get("resourceVersionMatch"),
    )


def _render_list(request: web.Request, rt: ResourceType, listing: dict) -> web.Response:
    conversion = media.negotiate(request.headers.get("Accept", "")).conversion
    if conversion == "Table":
        table = views.table(
            views.TableRequest(
                rt,
                listing["items"],
                listing["metadata"],
                request.query.get("includeObject", "Metadata"),
                datetime.now(UTC),
            )
        )
        return json_response(table)
    if conversion == "PartialObjectMetadataList":
        return respond(request, views.partial_metadata_list(listing))
    return respond(request, listing)


def _render_one(request: web.Request, rt: ResourceType, obj: dict) -> web.Response:
    conversion = media.negotiate(request.headers.get("Accept", "")).conversion
    if conversion == "Table":
        meta = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
        include = request.query.get("includeObject", "Metadata")
        return json_response(views.table(views.TableRequest(rt, [obj], meta, include, datetime.now(UTC))))
    if conversion in ("PartialObjectMetadata", "PartialObjectMetadataList"):
        return respond(request, views.partial_metadata(obj))
    return respond(request, obj)


async def _watch(request: web.Request, api: Api, route: Route) -> web.StreamResponse:
    query, rt = request.query, route.resource
    timeout = query.get("timeoutSeconds")
    options = WatchOptions(
        label_selector=query.get("labelSelector"),
        field_selector=query.get("fieldSelector"),
        resource_version=query.get("resourceVersion"),
        timeout_seconds=float(timeout) if timeout else None,
        allow_bookmarks=query.get("allowWatchBookmarks", "") in ("1", "true", "True"),
    )
    events: Any = api.watch(route.resource, route.namespace, options)
    simulation = request.app.get(SIMULATION_KEY)
    if simulation is not None:
        events = simulation.wrap_watch(events)
    output = media.negotiate(request.headers.get("Accept", ""))
    as_table = None
    if output.conversion == "Table":
        as_table = views.TableWatch(route.resource, query.get("includeObject", "Metadata"))
    as_protobuf = as_table is None and output.protobuf and protobuf.can_encode(rt.group_version, rt.kind)
    content_type = protobuf.WATCH_MEDIA_TYPE if as_protobuf else JSON
    response = web.StreamResponse(status=200, headers={"Content-Type": content_type})
    response.enable_chunked_encoding()
    try:
        await response.prepare(request)
        async for event in events:
            if as_protobuf:
                await response.write(_watch_frame(event))
            else:
                await _send(response, as_table.event(event) if as_table else event)
        await response.write_eof()
    except (ConnectionResetError, ConnectionError):
        log.debug("watch client went away")
    finally:
        await events.aclose()
    return response


def _watch_frame(event: dict) -> bytes:
    """A protobuf watch frame; an object its message cannot hold becomes an ERROR event (the client
    stops the watch and relists, and the list falls back to JSON) rather than a silently lost event."""
    try:
        return protobuf.encode_watch_event(event)
    except protobuf.ProtobufError as exc:
        log.warning("watch event not encodable: %s", exc)
        return protobuf.encode_watch_event(
            {"type": "ERROR", "object": internal(f"unable to encode the watch event: {exc}").body}
        )


async def _send(response: web.StreamResponse, event: dict) -> None:
    await response.write(jsonwire.dumps(event) + b"\n")


async def _pod_log(request: web.Request, api: Api, route: Route) -> web.StreamResponse:
    pod = api.get(route.resource, route.namespace or "", route.name or "")
    names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    init_names = [c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or []]
    container = request.query.get("container")
    if container is None and len(names) > 1:
        raise bad_request(
            f"a container name must be specified for pod {route.name}, choose one of: [{' '.join(names)}]"
        )
    if container is not None and container not in names + init_names:
        raise bad_request(f"container {container} is not valid for pod {route.name}")
    simulation = request.app.get(SIMULATION_KEY)
    if simulation is not None:
        return await simulation.pod_log(
            request, route.namespace or "", route.name or "", container or names[0]
        )
    return web.Response(text="", content_type="text/plain")


async def _post(request: web.Request, api: Api, route: Route) -> web.StreamResponse:
    rt = route.resource
    options = _write_options(request, "CreateOptions")
    if route.subresource == "binding" and route.name:
        body = await _body(request, "Binding", "v1", options)
        bound = api.bind(route.namespace or "", route.name, body, options)
        return respond(request, bound, 201, options.warnings)
    if route.subresource == "eviction" and route.name:
        body = await _body(request, "Eviction", "policy/v1", options)
        return respond(
            request, api.evict(route.namespace or "", route.name, body, options), 201, options.warnings
        )
    if route.subresource == "token" and route.name:
        body = await _body(request, "TokenRequest", "authentication.k8s.io/v1", options)
        return respond(
            request, api.request_token(route.namespace or "", route.name, body), 201, options.warnings
        )
    if route.name is not None:
        raise method_not_allowed()
    body = await _body(request, rt.kind, rt.group_version, options, rt.schema)
    if rt.answer is not None:
        review = Review(user_of(request), request.app[AUTH_KEY])
        answered = rt.answer(review, route.namespace or "", decode(rt, body))
        return respond(request, answered, 201, options.warnings)
    if rt.records_requester is not None and isinstance(body, dict):
        body = rt.records_requester(body, user_of(request).as_user_info())
    created = api.create(rt, route.namespace or "", body, options)
    return respond(request, created, 201, options.warnings)


async def _put(request: web.Request, api: Api, route: Route) -> web.StreamResponse:
    if route.name is None:
        raise method_not_allowed()
    rt = route.resource
    options = _write_options(request, "UpdateOptions")
    scale = route.subresource == "scale"
    kind, api_version = ("Scale", "autoscaling/v1") if scale else (rt.kind, rt.group_version)
    body = await _body(request, kind, api_version, options, None if scale else rt.schema)
    if scale:
        scaled = api.update_scale(rt, route.namespace or "", route.name, body, options)
        return respond(request, scaled, 200, options.warnings)
    if route.subresource not in (None, "status", "approval"):
        raise method_not_allowed()
    updated = api.update(
        rt, route.namespace or "", route.name, body, options, subresource=_status_like(route)
    )
    return respond(request, updated, 200, options.warnings)


async def _patch(request: web.Request, api: Api, route: Route) -> web.StreamResponse:
    if route.name is None:
        raise method_not_allowed()
    rt = route.resource
    raw = await request.read()
    content_type = request.headers.get("Content-Type")
    options = _write_options(request, "PatchOptions")
    if is_apply(content_type):  # apply never falls back to the User-Agent
        options = replace(options, field_manager=request.query.get("fieldManager") or None)
    if route.subresource == "scale":
        scaled = api.patch_scale(rt, route.namespace or "", route.name, raw, content_type, options)
        return respond(request, scaled, 200, options.warnings)
    if route.subresource not in (None, "status", "approval"):
        raise method_not_allowed()
    auth, user, creating = (
        request.app[AUTH_KEY],
        user_of(request),
        replace(of_request(request), verb="create"),
    )
    patched, created = api.patch_or_create(
        rt,
        route.namespace or "",
        route.name,
        raw,
        content_type,
        options,
        subresource=_status_like(route),
        may_create=lambda: auth.check(user, creating),
    )
    return respond(request, patched, 201 if created else 200, options.warnings)


def _status_like(route: Route) -> str | None:
    """A CSR's `approval` is written as its status is (the signer's conditions live there too)."""
    return "status" if route.subresource == "approval" else route.subresource


async def _delete(request: web.Request, api: Api, route: Route) -> web.StreamResponse:
    rt = route.resource
    raw = await request.read()
    body = None
    if raw.strip():
        body = await _body(request, "DeleteOptions")
    options = DeleteOptions.from_body(body, _query(request))
    if route.name is None:
        return respond(
            request, api.delete_collection(rt, route.namespace, _list_options(request.query), options)
        )
    if route.subresource is not None:
        raise method_not_allowed()
    return respond(request, api.delete(rt, route.namespace or "", route.name, options))
