"""The one door to a cluster: the official client's transport, raw JSON, retries and a rate limit.

planner reads and writes plain dicts. The official `kubernetes` client provides configuration (kubeconfig,
contexts, in-cluster service accounts, TLS, auth plugins) and the HTTP transport; its generated models
are skipped on purpose (`json.loads` of the raw body is several times faster on large lists, and dicts are
what every stage works with). Errors become planner's exception tree through `planner.errors.api_error`,
the one place HTTP status maps to a class.

The rest of the rules, and why: docs/architecture.md ("Module notes", kube/client.py).
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol, TypedDict, Unpack
from urllib.parse import quote, unquote

import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import load_incluster_config
from kubernetes.config.kube_config import load_kube_config

from planner import jsonwire
from planner.errors import ApiError, KubeconfigError, NoClusterError, UnreachableError, api_error
from planner.kube.config import KubeconfigContext, choose_context
from planner.objects import metadata_of

Json = dict[str, Any]
RETRIABLE_STATUS = frozenset({429, 500, 502, 503, 504})
JSON_ACCEPT = "application/json"
# A LIST answered with the objects' metadata only (what `kubectl get -o name` asks for): a caller that
# needs labels and annotations does not download every object's data.
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# Set on every answer of a server that classifies requests with API Priority and Fairness.
FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
DEFAULT_QPS = 1000.0
# Connections kept for reuse. HTTP/1.1 takes one per request in flight (an apply's 16 writes, each
# informer's watch, a controller's workers); the client's default, 5 per CPU, drops the rest after each
# request, and every request past it pays a new TCP and TLS handshake on both sides.
POOL_CONNECTIONS = 128


class RequestOptions(TypedDict, total=False):
    """What a request may say besides its method and path (`KubeClient._send`'s defaults otherwise):
    the query, the body and its content type, the verb it is counted as (the method's, lowercased, by
    default) and the media type asked for."""

    query: Mapping[str, str] | None
    body: Any
    content_type: str
    verb: str | None
    accept: str


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
    qps: float | None = None  # None: DEFAULT_QPS until the server shows API Priority and Fairness, then none
    burst: int | None = None  # None: twice the rate
    retries: int = 6
    connect_retries: int = 2
    backoff: Callable[[int], float] = exponential_backoff
    timeout: float = 60.0
    connect_timeout: float = 5.0
    user_agent: str = "planner"
    # Kubernetes impersonation (`kubectl --as/--as-group`): every request is made as this user (and
    # these groups), so the API server's RBAC and admission judge that identity, not the credentials'.
    impersonate: str | None = None
    impersonate_groups: tuple[str, ...] = ()


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
class DiscoveryCache:
    """Discovery documents by path (`/apis/policy/v1`), as kubectl keeps them on disk: read once per
    command, read again on a miss (a CRD applied a moment ago starts serving its kind)."""

    documents: dict[str, Json] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class RequestLog:
    """Requests made, by verb: what benchmarks print and tests assert on. Counted from any thread (the
    executor's pool, the controller's workers): `+=` on a Counter is a read and a write."""

    by_verb: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, verb: str) -> None:
        with self.lock:
            self.by_verb[verb] += 1

    @property
    def total(self) -> int:
        with self.lock:
            return sum(self.by_verb.values())


class KubeClient:
    """Raw-JSON access to one cluster. Thread-safe: the executor calls it from a pool."""

    def __init__(
        self,
        api: ApiClient,
        options: ClientOptions | None = None,
        *,
        user: str | None = None,
        discovered: DiscoveryCache | None = None,
    ) -> None:
        self._api = api
        # What discovery answered, shared by every client of this cluster (`planner.kube.discovery`).
        self.discovered = discovered if discovered is not None else DiscoveryCache()
        self.options = options or ClientOptions()
        self.user = user
        qps = self.options.qps or DEFAULT_QPS
        self._bucket = TokenBucket(qps, self.options.burst or int(2 * qps))
        self._reached = False
        self._server_is_fair = False  # it answered with API Priority and Fairness's flow schema
        self.log = RequestLog()
        api.user_agent = self.options.user_agent

    @classmethod
    def from_config(
        cls, *, kubeconfig: str | None, context: str | None, options: ClientOptions | None = None
    ) -> KubeClient:
        """From the kubeconfig the user named (kube.config's rules), else in-cluster; a named source that
        cannot be used raises KubeconfigError, no source at all NoClusterError."""
        chosen = choose_context(kubeconfig=kubeconfig, context=context)
        configuration = _configuration(chosen)
        configuration.retries = False  # one retry loop: ours
        configuration.connection_pool_maxsize = POOL_CONNECTIONS
        return cls(ApiClient(configuration), options, user=chosen.user)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    @property
    def throttled(self) -> bool:
        """Whether requests wait for the client's own token bucket: when the user gave `qps`, or until
        the server has shown that API Priority and Fairness governs it."""
        return self.options.qps is not None or not self._server_is_fair

    def with_options(self, **changes: Any) -> KubeClient:
        """The same cluster, credentials and connection pool with other options (say, no retries and a
        short timeout for a request that must fail fast and be retried by its caller)."""
        return KubeClient(
            self._api, replace(self.options, **changes), user=self.user, discovered=self.discovered
        )

    def request(self, method: str, path: str, **options: Unpack[RequestOptions]) -> Json:
        """One request with retries; the parsed JSON body of a 2xx answer, else the mapped ApiError.
        `accept` may ask for a server-side conversion (`METADATA_LIST_ACCEPT`: a list of the objects'
        metadata only)."""
        return _json_of(self._send(method, path, **options))

    def request_dated(
        self, method: str, path: str, **options: Unpack[RequestOptions]
    ) -> tuple[Json, datetime | None]:
        """`request`, and the server's clock when it answered: its `Date` header (to the second; None
        when it sends none), so a caller can judge a time the server's way rather than its own."""
        response = self._send(method, path, **options)
        return _json_of(response), _server_date(response)

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
        accept: str = JSON_ACCEPT,
    ) -> urllib3.BaseHTTPResponse:
        verb = verb or method.lower()
        for attempt in range(self.options.retries + 1):
            if self.throttled:
                self._bucket.take()
            self.log.count(verb)
            try:
                response = self._raw(method, path, query, body, content_type, timeout, accept)
            except (urllib3.exceptions.HTTPError, OSError) as connection_error:
                retries = self.options.retries
                if not self._reached:
                    retries = min(retries, self.options.connect_retries)
                if attempt >= retries:
                    cause = connection_cause(connection_error, connect_timeout=self.options.connect_timeout)
                    raise UnreachableError(f"cannot reach {self.host}: {cause}") from connection_error
                time.sleep(self.options.backoff(attempt))
                continue
            self._reached = True
            if not self._server_is_fair and FLOW_SCHEMA_HEADER in response.headers:
                self._server_is_fair = True
            if 200 <= response.status < 300:
                return response
            error_body = response.read()
            response.release_conn()
            if response.status in RETRIABLE_STATUS and attempt < self.options.retries:
                time.sleep(_retry_after(response) or self.options.backoff(attempt))
                continue
            raise self._refusal(api_error(response.status, error_body), verb, path)
        raise AssertionError("unreachable")  # pragma: no cover

    def _refusal(self, error: ApiError, verb: str, path: str) -> ApiError:
        """401 and 403 say who was refused what, where; other errors pass unchanged."""
        if error.http_status not in (401, 403):
            return error
        who = f"kubeconfig user {self.user}" if self.user else "the in-cluster service account"
        if self.options.impersonate:  # the server judged the impersonated user, not the credentials'
            who = f"{self.options.impersonate}, impersonated by {who}"
        if error.http_status == 401:
            message = (
                f"unauthorized: {self.host} rejected the credentials of {who} "
                f"(trying to {describe_request(verb, path)})"
            )
        else:
            message = f"forbidden: {error} ({self.host}, as {who})"
        return type(error)(message, status=error.http_status, reason=error.reason, body=error.body)

    def _raw(
        self,
        method: str,
        path: str,
        query: Mapping[str, str] | None,
        body: Any,
        content_type: str,
        timeout: float | None,
        accept: str = JSON_ACCEPT,
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = content_type
        if self.options.impersonate:
            headers["Impersonate-User"] = self.options.impersonate
        # The body is already plain JSON data: param_serialize would only copy it, walking every
        # value through sanitize_for_serialization (a sixth of a create's client CPU).
        _method, url, headers, _body, _post = self._api.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            auth_settings=["BearerToken"],
        )
        read_timeout = timeout or self.options.timeout
        # Sent through the official client's transport, its urllib3 pool (TLS, proxy, keep-alive), by
        # the call its `RESTClientObject.request` ends in: that wrapper only adds content-type regexes
        # (four per write) and a serialisation of the body, which is plain JSON here.
        sent = urllib3.HTTPHeaderDict(headers)
        for group in self.options.impersonate_groups if self.options.impersonate else ():
            sent.add("Impersonate-Group", group)  # one header per group, as client-go sends them
        response: urllib3.BaseHTTPResponse = self._api.rest_client.pool_manager.request(
            method,
            url,
            body=None if body is None else jsonwire.dumps(body),
            headers=sent,
            timeout=urllib3.Timeout(
                connect=min(self.options.connect_timeout, read_timeout), read=read_timeout
            ),
            preload_content=False,
        )
        return response


def _json_of(response: urllib3.BaseHTTPResponse) -> Json:
    """The answer's JSON body (`{}` when empty), its connection back in the pool."""
    try:
        data = response.read()
    finally:
        response.release_conn()
    parsed: Json = jsonwire.loads(data) if data else {}
    return parsed


def _server_date(response: urllib3.BaseHTTPResponse) -> datetime | None:
    value = response.headers.get("Date")
    try:
        return parsedate_to_datetime(value) if value else None
    except (TypeError, ValueError):
        return None


def _retry_after(response: urllib3.BaseHTTPResponse) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return min(float(value), 30.0) if value else None
    except ValueError:
        return None


def _configuration(chosen: KubeconfigContext) -> Configuration:
    configuration = Configuration()
    try:
        if chosen.in_cluster:
            load_incluster_config(client_configuration=configuration)
        else:
            load_kube_config(
                config_file=chosen.config_file,
                context=chosen.context,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, OSError, TypeError, ValueError) as unusable:
        if chosen.in_cluster:
            raise NoClusterError() from unusable
        where = f'context "{chosen.context}" of {", ".join(chosen.files)}'
        raise KubeconfigError(f"kubeconfig {where}: {unusable}") from unusable
    return configuration


def connection_cause(error: BaseException, *, connect_timeout: float) -> str:
    """What went wrong below HTTP, in a few words: the most telling cause urllib3 wrapped."""
    causes: list[BaseException] = []
    seen: BaseException | None = error
    while seen is not None and seen not in causes:
        causes.append(seen)
        reason = getattr(seen, "reason", None)
        seen = (reason if isinstance(reason, BaseException) else None) or seen.__cause__ or seen.__context__
    for kinds, text in _CAUSES:
        matching = [cause for cause in causes if isinstance(cause, kinds)]
        if matching:
            return text.format(connect_timeout=connect_timeout, detail=_innermost_text(matching[-1]))
    if any("Connection refused" in str(cause) for cause in causes):
        return "connection refused"
    return _innermost_text(causes[-1])


# Most specific first: urllib3's NewConnectionError is a ConnectTimeoutError, whatever the real cause.
_CAUSES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    ((urllib3.exceptions.NameResolutionError, socket.gaierror), "host name not found"),
    ((urllib3.exceptions.SSLError, ssl.SSLError), "TLS handshake failed: {detail}"),
    (urllib3.exceptions.ReadTimeoutError, "no answer in time"),
    ((urllib3.exceptions.ProtocolError, ConnectionResetError), "connection closed by the server"),
    ((urllib3.exceptions.ConnectTimeoutError, TimeoutError), "no connection within {connect_timeout:g}s"),
)


def _innermost_text(error: BaseException) -> str:
    """The error's own words, without `[Errno 111]`/`[SSL: …]` prefixes and the `(_ssl.c:1006)` suffix."""
    verify = getattr(error, "verify_message", None)
    text = f"certificate verify failed: {verify}" if verify else str(error)
    text = text.split("] ", 1)[-1] if text.startswith("[") else text
    return text.split(" (_ssl.c:", 1)[0]


def describe_request(verb: str, path: str) -> str:
    """`list deployments in namespace shop`, `get secrets/shop in namespace shop`, `list namespaces`."""
    parts = [unquote(part) for part in path.split("?", 1)[0].strip("/").split("/")]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    what = "/".join(rest) or path
    return f"{verb} {what}" + (f" in namespace {namespace}" if namespace else "")


__all__ = [
    "JSON_ACCEPT",
    "METADATA_LIST_ACCEPT",
    "ApiError",
    "ClientOptions",
    "DiscoveryCache",
    "KubeClient",
    "RequestLog",
    "ResourceType",
    "TokenBucket",
    "connection_cause",
    "describe_request",
    "exponential_backoff",
    "resource_path",
]
