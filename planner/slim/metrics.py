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

from planner.slim.requestinfo import RequestInfo, of_request

NOT_COUNTED = ("/metrics",)


def _labels(info: RequestInfo) -> tuple[str, str]:
    return info.verb, info.qualified_resource


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "slim_requests", "API requests served", ("verb", "resource", "code"), registry=self.registry
        )
        self._children: dict[tuple[str, str, int], Any] = {}
        self.open_watches = Gauge(
            "slim_open_watches", "watch streams open now", ("resource",), registry=self.registry
        )

    def _counter(self, verb: str, resource: str, code: int) -> Any:
        """The request counter's child for these labels, looked up once (prometheus_client checks and
        locks on every `labels` call)."""
        key = (verb, resource, code)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.requests.labels(verb, resource, str(code))
        return child

    def render(self) -> web.Response:
        response = web.Response(body=generate_latest(self.registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    def middleware(self) -> Any:
        @web.middleware
        async def count(request: web.Request, handler: Any) -> web.StreamResponse:
            if request.path in NOT_COUNTED:
                return cast(web.StreamResponse, await handler(request))
            verb, resource = _labels(of_request(request))
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
                self._counter(verb, resource, code).inc()

        return count
