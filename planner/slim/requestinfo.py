"""What a request asks for, in the apiserver's terms: the attributes authorization, accounting and the
request log share.

The apiserver's request-info step reads a URL and method into a verb (get, list, watch, create,
update, patch, delete, deletecollection; a lower-case HTTP method for anything that is not an API
resource), an API group and version, a namespace, a resource, a subresource and a name. Paths that
name no resource — `/healthz`, `/version`, discovery (`/api`, `/apis/apps/v1`), `/openapi/v2` — are
non-resource requests, authorized by path. A list or watch whose field selector pins
`metadata.name` names that object, so a rule's `resourceNames` can allow watching one object (what
`kubectl get pod x -w` sends).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import web

WATCH_VALUES = ("1", "true", "True")
VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
# Under /api/v1/namespaces/<name>/, these name a Namespace's subresource, not a namespaced resource.
NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class RequestInfo:
    resource_request: bool
    path: str
    verb: str
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def qualified_resource(self) -> str:
        """`resource` plus `/subresource`: what a rule's `resources` entries are matched against."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(False, path, method.lower())
    verb = VERBS.get(method, method.lower())
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 2:
        namespace = rest[1]
        if len(rest) >= 3 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name:
        if verb == "get":
            verb = "watch" if query.get("watch", "") in WATCH_VALUES else "list"
            name = _pinned_name(query.get("fieldSelector", ""))
        elif verb == "delete":
            verb = "deletecollection"
    return RequestInfo(True, path, verb, group, version, namespace, resource, subresource, name)


_KEY = "planner.slim.request_info"


def of_request(request: web.Request) -> RequestInfo:
    """`request_info` of a request, worked out once: the metrics, the guard and the router all ask."""
    found = request.get(_KEY)
    if not isinstance(found, RequestInfo):
        found = request[_KEY] = request_info(request.method, request.path, request.query)
    return found


def _pinned_name(field_selector: str) -> str:
    """The name a field selector requires exactly (`metadata.name=x`), else ""."""
    for term in field_selector.split(","):
        key, sep, value = term.partition("==") if "==" in term else term.partition("=")
        if sep and not key.endswith("!") and key.strip() == "metadata.name":
            return value.strip()
    return ""
