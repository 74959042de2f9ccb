"""The HTTP glue's door: authenticate, log and authorize each request before its handler runs.

The middleware runs inside the errors middleware, which turns the StatusErrors raised here (401,
403) and by handlers into Status responses. Every path is guarded, the health checks too: a wrong
token is a 401 there as well, and the anonymous user reaches them because the bootstrap RBAC policy
lets `system:unauthenticated` read them, as on a real apiserver. It records the request in the request
log under its user (the code once it is answered), authorizes it (`auth.Auth.check`) and hands the
user to the handler (`request[USER]`: the access reviews answer for it). `/slim/requests`
reads (`GET`, optionally `?user=`) or clears (`DELETE`) the log.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from planner.slim.auth import Auth
from planner.slim.requestinfo import of_request
from planner.slim.requestlog import RequestLog
from planner.slim.status_errors import StatusError, method_not_allowed, unauthorized
from planner.slim.users import ANONYMOUS, User

PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/livez"})  # the health checks
USER = "planner.slim.user"


def guard(auth: Auth, log: RequestLog) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Any) -> web.StreamResponse:
        user = auth.authenticate(request.headers.get("Authorization", ""))
        if user is None:
            raise unauthorized()
        user = auth.impersonate(user, request.headers)
        info = of_request(request)
        entry = log.record(user.name, info) if log.logged(request.path) else None
        request[USER] = user
        try:
            auth.check(user, info)
            response: web.StreamResponse = await handler(request)
        except StatusError as exc:
            if entry is not None:
                entry.code = exc.code
            raise
        if entry is not None:
            entry.code = response.status
        return response

    return middleware


def user_of(request: web.Request) -> User:
    found = request.get(USER)
    return found if isinstance(found, User) else ANONYMOUS


def request_log_handler(log: RequestLog) -> Any:
    async def handle(request: web.Request) -> web.StreamResponse:
        if request.method == "DELETE":
            log.clear()
        elif request.method != "GET":
            raise method_not_allowed()
        return web.json_response({"items": log.entries(request.query.get("user"))})

    return handle
