"""A small client for the embedded cluster's admin endpoints, and raw HTTP to it, for tests and benchmarks.

    admin = SlimAdmin.of(handle)                   # a running_cluster handle or a ClusterInfo
    admin.set_faults(errorRates={"503": 1.0})      # PATCH /slim/faults
    admin.clear_faults()                           # PUT /slim/faults {}
    admin.pause("nodeagent"); admin.resume("nodeagent")
    admin.request_count(verb="list", resource="pods")   # from /metrics
    with admin.faults(latencySeconds=0.5): ...     # set for a block, then cleared
    admin.requests(user="system:serviceaccount:ci:planner")   # the request log, /slim/requests
    with urlopen(handle, "/api/v1/pods?watch=1") as reply: ...   # any other request, as the admin

The server speaks TLS and lets in only who shows its admin token (or a token it issued): every
request here carries the endpoint's `token` and trusts only its `ca`, and so does an aiohttp session
from `client_session`.

Plain urllib, so it works from any test without an event loop or the kubernetes client.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.client import HTTPResponse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client.parser import text_string_to_metric_families

from planner.slim.certs import tls_context

if TYPE_CHECKING:
    import aiohttp

Obj = dict[str, Any]


class Endpoint(Protocol):
    """An embedded cluster's address and the admin's credentials (`ClusterHandle`, `ClusterInfo`)."""

    @property
    def url(self) -> str: ...

    @property
    def token(self) -> str | None: ...

    @property
    def ca(self) -> Path | None: ...


def authorization(token: str | None) -> dict[str, str]:
    """The header that presents `token` (none for a server that needs none)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def urlopen(
    endpoint: Endpoint,
    path: str,
    *,
    method: str | None = None,
    data: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> HTTPResponse:
    """`urllib.request.urlopen` of `path` on the cluster, as its admin; raises `HTTPError` as urllib does."""
    sent = {**(headers or {}), **authorization(endpoint.token)}
    request = urllib.request.Request(endpoint.url + path, data=data, method=method, headers=sent)
    reply: HTTPResponse = urllib.request.urlopen(request, timeout=timeout, context=tls_context(endpoint.ca))
    return reply


def client_session(endpoint: Endpoint, *, limit: int = 100) -> aiohttp.ClientSession:
    """An aiohttp session (at most `limit` connections) that presents the endpoint's token and trusts
    its CA, for benchmarks that need many requests in flight."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=limit, ssl=tls_context(endpoint.ca) or True)
    return aiohttp.ClientSession(connector=connector, headers=authorization(endpoint.token))


class SlimAdmin:
    def __init__(
        self, url: str, *, token: str | None = None, ca: Path | None = None, timeout: float = 10.0
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.ca = ca
        self.timeout = timeout

    @classmethod
    def of(cls, endpoint: Endpoint, *, timeout: float = 10.0) -> SlimAdmin:
        return cls(endpoint.url, token=endpoint.token, ca=endpoint.ca, timeout=timeout)

    def _call(self, method: str, path: str, body: Obj | None = None) -> bytes:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        with urlopen(self, path, method=method, data=data, headers=headers, timeout=self.timeout) as reply:
            content: bytes = reply.read()
            return content

    # --- faults --------------------------------------------------------------------------------------

    def get_faults(self) -> Obj:
        result: Obj = json.loads(self._call("GET", "/slim/faults"))
        return result

    def set_faults(self, **settings: Any) -> Obj:
        result: Obj = json.loads(self._call("PATCH", "/slim/faults", settings))
        return result

    def clear_faults(self) -> Obj:
        result: Obj = json.loads(self._call("PUT", "/slim/faults", {}))
        return result

    @contextlib.contextmanager
    def faults(self, **settings: Any) -> Iterator[None]:
        self.set_faults(**settings)
        try:
            yield
        finally:
            self.clear_faults()

    # --- pausing -------------------------------------------------------------------------------------

    def pause(self, component: str) -> None:
        self._call("POST", "/slim/pause", {"component": component, "paused": True})

    def resume(self, component: str) -> None:
        self._call("POST", "/slim/pause", {"component": component, "paused": False})

    def paused(self) -> dict[str, bool]:
        result: dict[str, bool] = json.loads(self._call("GET", "/slim/pause"))
        return result

    # --- metrics -------------------------------------------------------------------------------------

    def metrics_text(self) -> str:
        return self._call("GET", "/metrics").decode()

    def request_counts(self) -> dict[tuple[str, str, str], float]:
        """slim_requests_total by (verb, resource, code)."""
        counts: dict[tuple[str, str, str], float] = {}
        for family in text_string_to_metric_families(self.metrics_text()):
            for sample in family.samples:
                if sample.name == "slim_requests_total":
                    labels = sample.labels
                    counts[(labels["verb"], labels["resource"], labels["code"])] = sample.value
        return counts

    def request_count(
        self, *, verb: str | None = None, resource: str | None = None, code: str | None = None
    ) -> float:
        return sum(
            value
            for (v, r, c), value in self.request_counts().items()
            if (verb is None or v == verb)
            and (resource is None or r == resource)
            and (code is None or c == code)
        )

    def open_watches(self, resource: str | None = None) -> float:
        total = 0.0
        for family in text_string_to_metric_families(self.metrics_text()):
            for sample in family.samples:
                if sample.name == "slim_open_watches" and (
                    resource is None or sample.labels["resource"] == resource
                ):
                    total += sample.value
        return total

    # --- the request log -----------------------------------------------------------------------------

    def requests(self, user: str | None = None) -> list[Obj]:
        """The logged requests, oldest first (only `user`'s when given): user, verb, apiGroup,
        resource, subresource, namespace, name, path and code."""
        query = f"?{urllib.parse.urlencode({'user': user})}" if user is not None else ""
        items: list[Obj] = json.loads(self._call("GET", f"/slim/requests{query}"))["items"]
        return items

    def clear_requests(self) -> None:
        self._call("DELETE", "/slim/requests")
