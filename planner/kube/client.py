"""The one door to a cluster: the official client's transport, raw JSON, retries and a rate limit.

planner reads and writes plain dicts. The official `kubernetes` client provides configuration (kubeconfig,
contexts, in-cluster service accounts, TLS, auth plugins) and the HTTP transport; its generated models
are skipped on purpose (`json.loads` of the raw body is several times faster on large lists, and dicts are
what every stage works with). Errors become planner's exception tree through `planner.errors.api_error`,
the one place HTTP status maps to a class.

Retries: 429 and 5xx answers and connection errors are retried with backoff, honouring `Retry-After`.
The backoff is a function passed in, so tests and callers choose the policy. A token bucket keeps the
request rate under `qps` (default 1000, burst 2000, as kapp; client-go's 5/10 would make a 1,000-object
apply take minutes). API Priority and Fairness on the server is what protects it; `--qps` lowers it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import load_incluster_config
from kubernetes.config.kube_config import new_client_from_config

from planner.errors import ApiError, NoClusterError, PlannerError, api_error
from planner.kube.config import kubeconfig_path
from planner.objects import metadata_of

Json = dict[str, Any]
RETRIABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class ResourceType(Protocol):
    """What the client needs to know to address a kind (planner.kinds.KindInfo satisfies it)."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...


def exponential_backoff(attempt: int) -> float:
    """0.1 s, 0.2 s, 0.4 s … capped at 5 s."""
    return float(min(5.0, 0.1 * 2**attempt))


@dataclass(frozen=True)
class ClientOptions:
    qps: float = 1000.0
    burst: int = 2000
    retries: int = 6
    backoff: Callable[[int], float] = exponential_backoff
    timeout: float = 60.0
    user_agent: str = "planner"


class TokenBucket:
    """A thread-safe token bucket: `take()` blocks until a request may go."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate, self._capacity, self._clock = qps, float(burst), clock
        self._tokens, self._stamp = float(burst), clock()
        self._lock = threading.Lock()

    def take(self) -> None:
        while True:
            with self._lock:
                now = self._clock()
                self._tokens = min(self._capacity, self._tokens + (now - self._stamp) * self._rate)
                self._stamp = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self._rate
            time.sleep(wait)


def resource_path(resource: ResourceType, namespace: str | None = None, name: str | None = None) -> str:
    """`/api/v1/namespaces/ns/configmaps/x` or `/apis/apps/v1/deployments` (all namespaces)."""
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    if resource.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{resource.plural}"
    return f"{base}/{quote(name, safe='')}" if name else base


@dataclass
class RequestLog:
    """Requests made, by verb: what benchmarks print and tests assert on."""

    by_verb: Counter[str] = field(default_factory=Counter)

    def count(self, verb: str) -> None:
        self.by_verb[verb] += 1

    @property
    def total(self) -> int:
        return sum(self.by_verb.values())


class KubeClient:
    """Raw-JSON access to one cluster. Thread-safe: the executor calls it from a pool."""

    def __init__(self, api: ApiClient, options: ClientOptions | None = None) -> None:
        self._api = api
        self.options = options or ClientOptions()
        self._bucket = TokenBucket(self.options.qps, self.options.burst)
        self.log = RequestLog()
        api.user_agent = self.options.user_agent

    @classmethod
    def from_config(
        cls, *, kubeconfig: str | None, context: str | None, options: ClientOptions | None = None
    ) -> KubeClient:
        """From `--kubeconfig`/`KUBECONFIG`/`~/.kube/config`, else in-cluster; else NoClusterError."""
        try:
            api = new_client_from_config(config_file=kubeconfig_path(kubeconfig), context=context)
        except (ConfigException, OSError, TypeError) as kube_error:
            if kubeconfig:
                raise PlannerError(f"cannot use kubeconfig {kubeconfig}: {kube_error}") from kube_error
            api = _in_cluster_client()
        return cls(api, options)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        verb: str | None = None,
    ) -> Json:
        """One request with retries; the parsed JSON body of a 2xx answer, else the mapped ApiError."""
        response = self._send(method, path, query=query, body=body, content_type=content_type, verb=verb)
        try:
            data = response.read()
        finally:
            response.release_conn()
        parsed: Json = json.loads(data) if data else {}
        return parsed

    def server_side_apply(
        self,
        resource: ResourceType,
        manifest: Json,
        *,
        field_manager: str,
        force: bool,
        dry_run: bool = False,
    ) -> Json:
        """PATCH `application/apply-patch+yaml` (a JSON body is valid YAML): create or update `manifest`."""
        metadata = metadata_of(manifest)
        query = {"fieldManager": field_manager, "force": "true" if force else "false"}
        if dry_run:
            query["dryRun"] = "All"
        path = resource_path(resource, metadata.get("namespace"), metadata["name"])
        return self.request(
            "PATCH",
            path,
            query=query,
            body=manifest,
            content_type="application/apply-patch+yaml",
            verb="apply",
        )

    def stream_lines(
        self,
        path: str,
        *,
        query: Mapping[str, str],
        timeout: float | None = None,
        keep_blank: bool = False,
        verb: str = "watch",
    ) -> Iterator[bytes]:
        """A streaming GET (a watch, logs): yields lines until the server closes the stream. Blank lines
        are keep-alives in a watch and dropped; in logs they are content (`keep_blank`)."""
        response = self._send("GET", path, query=query, verb=verb, timeout=timeout)
        try:
            buffer = b""
            for chunk in response.stream(amt=65536, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                yield from (line for line in lines if keep_blank or line.strip())
            if buffer and (keep_blank or buffer.strip()):
                yield buffer
        finally:
            response.release_conn()

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        verb: str | None = None,
        timeout: float | None = None,
    ) -> urllib3.BaseHTTPResponse:
        verb = verb or method.lower()
        for attempt in range(self.options.retries + 1):
            self._bucket.take()
            self.log.count(verb)
            try:
                response = self._raw(method, path, query, body, content_type, timeout)
            except (urllib3.exceptions.HTTPError, OSError) as connection_error:
                if attempt == self.options.retries:
                    raise PlannerError(f"cannot reach {self.host}: {connection_error}") from connection_error
                time.sleep(self.options.backoff(attempt))
                continue
            if 200 <= response.status < 300:
                return response
            error_body = response.read()
            response.release_conn()
            if response.status in RETRIABLE_STATUS and attempt < self.options.retries:
                time.sleep(_retry_after(response) or self.options.backoff(attempt))
                continue
            raise api_error(response.status, error_body)
        raise AssertionError("unreachable")  # pragma: no cover

    def _raw(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        timeout: float | None,
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        _method, url, headers, body, _post = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self._api.call_api(
            method, url, header_params=headers, body=body, _request_timeout=timeout or self.options.timeout
        )
        raw: urllib3.BaseHTTPResponse = response.response
        return raw


def _retry_after(response: urllib3.BaseHTTPResponse) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return min(float(value), 30.0) if value else None
    except ValueError:
        return None


def _in_cluster_client() -> ApiClient:
    configuration = Configuration()
    try:
        load_incluster_config(client_configuration=configuration)
    except ConfigException as not_in_cluster:
        raise NoClusterError() from not_in_cluster
    return ApiClient(configuration)


__all__ = [
    "ApiError",
    "ClientOptions",
    "KubeClient",
    "RequestLog",
    "ResourceType",
    "TokenBucket",
    "exponential_backoff",
    "resource_path",
]
