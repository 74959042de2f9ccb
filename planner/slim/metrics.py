"""Request accounting: `/metrics` in the Prometheus text format, one registry per server.

`slim_requests_total{verb,resource,code}` counts every request with the apiserver's verb names
(get, list, watch, create, update, patch, delete, deletecollection; `resource` is the plural, with
`/<subresource>` when there is one, and empty for discovery and other non-resource paths);
`slim_open_watches{resource}` is the number of watch streams open now. Tests and benchmarks read
them to assert how many API calls a command made. `/metrics` itself is not counted.
"""

from __future__ import annotations

from typing import Any, cast

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest

NOT_COUNTED = ("/metrics",)


def classify(method: str, path: str, query: Any) -> tuple[str, str]:
    """(verb, resource) of a request, as the apiserver's request info names them."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        rest = parts[3:]
    else:
        return method.lower(), ""
    if not rest:
        return method.lower(), ""
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource, name = rest[0], rest[1] if len(rest) > 1 else None
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    watching = str(query.get("watch", "")).lower() in ("true", "1")
    verbs = {
        "GET": "watch" if watching else ("get" if name else "list"),
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if name else "deletecollection",
    }
    return verbs.get(method, method.lower()), resource


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "slim_requests", "API requests served", ("verb", "resource", "code"), registry=self.registry
        )
        self.open_watches = Gauge(
            "slim_open_watches", "watch streams open now", ("resource",), registry=self.registry
        )

    def render(self) -> web.Response:
        response = web.Response(body=generate_latest(self.registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    def middleware(self) -> Any:
        @web.middleware
        async def count(request: web.Request, handler: Any) -> web.StreamResponse:
            if request.path in NOT_COUNTED:
                return cast(web.StreamResponse, await handler(request))
            verb, resource = classify(request.method, request.path, request.query)
            watching = verb == "watch"
            if watching:
                self.open_watches.labels(resource).inc()
            code = 500
            try:
                response = cast(web.StreamResponse, await handler(request))
                code = response.status
                return response
            except web.HTTPException as exc:
                code = exc.status
                raise
            finally:
                if watching:
                    self.open_watches.labels(resource).dec()
                self.requests.labels(verb, resource, str(code)).inc()

        return count
