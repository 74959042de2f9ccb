"""Fault injection: latency, error answers, dropped watches and forced 410s, switchable at run time.

The executor's and monitor's tests need a cluster that misbehaves on purpose. `Faults` is the live
configuration: set at start (`--faults '<json>'`) and changed through `PUT`/`PATCH /slim/faults`
(`GET` reads it); `/slim/pause` pauses and resumes the controllers and the node agent. The aiohttp
middleware applies latency and error rates to API requests only (never to `/slim/`, `/metrics` or
the health endpoints); `wrap_watch` ends a watch stream after N events or at random, or answers the
next watch with an ERROR 410 Expired event, as an apiserver whose watch cache moved on does.

JSON form (camelCase, every key optional): `{"latencySeconds": 0.2, "errorRates": {"429": 0.5,
"500": 0.1, "503": 0}, "errorResources": ["leases"], "retryAfterSeconds": 1, "dropWatchAfterEvents": 3,
"dropWatchProbability": 0.1, "expireNextWatches": 1, "seed": 7}`. `errorResources`, when not empty,
limits the error answers to requests for those resources (plurals, `pods/log` for a subresource), so
one API can fail while the rest works (a run lock's renewals, say).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

from aiohttp import web

from planner.slim import status_errors
from planner.slim.requestinfo import of_request

Obj = dict[str, Any]
INJECTABLE_CODES = (429, 500, 503)
EXEMPT_PREFIXES = ("/slim/", "/metrics", "/healthz", "/readyz", "/livez")


@dataclass
class Faults:
    latency_seconds: float = 0.0
    error_rates: dict[int, float] = field(default_factory=dict)
    error_resources: frozenset[str] = frozenset()
    retry_after_seconds: int = 1
    drop_watch_after_events: int | None = None
    drop_watch_probability: float = 0.0
    expire_next_watches: int = 0
    rng: random.Random = field(default_factory=random.Random)

    # --- configuration -------------------------------------------------------------------------------

    def to_json(self) -> Obj:
        return {
            "latencySeconds": self.latency_seconds,
            "errorRates": {str(code): rate for code, rate in sorted(self.error_rates.items())},
            "errorResources": sorted(self.error_resources),
            "retryAfterSeconds": self.retry_after_seconds,
            "dropWatchAfterEvents": self.drop_watch_after_events,
            "dropWatchProbability": self.drop_watch_probability,
            "expireNextWatches": self.expire_next_watches,
        }

    def apply(self, settings: Obj, *, replace: bool) -> None:
        """Set the given keys (PATCH), or reset everything first (PUT); ValueError on a bad value."""
        if replace:
            self.latency_seconds, self.error_rates, self.retry_after_seconds = 0.0, {}, 1
            self.error_resources = frozenset()
            self.drop_watch_after_events, self.drop_watch_probability, self.expire_next_watches = None, 0.0, 0
        unknown = set(settings) - {*self.to_json(), "seed"}
        if unknown:
            raise ValueError(f"unknown fault settings: {', '.join(sorted(unknown))}")
        if "latencySeconds" in settings:
            self.latency_seconds = max(float(settings["latencySeconds"]), 0.0)
        if "errorRates" in settings:
            self.error_rates = _rates(settings["errorRates"] or {})
        if "errorResources" in settings:
            self.error_resources = frozenset(str(r) for r in settings["errorResources"] or ())
        if "retryAfterSeconds" in settings:
            self.retry_after_seconds = int(settings["retryAfterSeconds"])
        if "dropWatchAfterEvents" in settings:
            value = settings["dropWatchAfterEvents"]
            self.drop_watch_after_events = int(value) if value is not None else None
        if "dropWatchProbability" in settings:
            self.drop_watch_probability = float(settings["dropWatchProbability"])
        if "expireNextWatches" in settings:
            self.expire_next_watches = int(settings["expireNextWatches"])
        if settings.get("seed") is not None:
            self.rng.seed(int(settings["seed"]))

    # --- requests ------------------------------------------------------------------------------------

    def injected_error(self, resource: str = "") -> int | None:
        if self.error_resources and resource not in self.error_resources:
            return None
        for code, rate in sorted(self.error_rates.items()):
            if rate > 0 and self.rng.random() < rate:
                return code
        return None

    def error_response(self, code: int) -> web.Response:
        body = status_errors.status_body(code, *_REASONS[code])
        headers = {"Content-Type": "application/json"}
        if code == 429:
            body["details"] = {"retryAfterSeconds": self.retry_after_seconds}
            headers["Retry-After"] = str(self.retry_after_seconds)
        return web.Response(status=code, body=json.dumps(body).encode(), headers=headers)

    async def wrap_watch(self, events: AsyncIterator[Obj]) -> AsyncIterator[Obj]:
        if self.expire_next_watches > 0:
            self.expire_next_watches -= 1
            closer = getattr(events, "aclose", None)
            if closer is not None:
                await closer()
            yield {
                "type": "ERROR",
                "object": status_errors.expired("too old resource version: injected fault").body,
            }
            return
        sent = 0
        try:
            async for event in events:
                yield event
                sent += 1
                if self.drop_watch_after_events is not None and sent >= self.drop_watch_after_events:
                    return
                if self.drop_watch_probability > 0 and self.rng.random() < self.drop_watch_probability:
                    return
        finally:
            closer = getattr(events, "aclose", None)
            if closer is not None:
                await closer()


_REASONS: dict[int, tuple[str, str]] = {
    429: ("TooManyRequests", "Too many requests, please try again later. (injected fault)"),
    500: ("InternalError", "Internal error occurred: injected fault"),
    503: ("ServiceUnavailable", "The server is currently unable to handle the request (injected fault)"),
}


def _rates(raw: Obj) -> dict[int, float]:
    rates = {int(code): float(rate) for code, rate in raw.items()}
    bad = [code for code in rates if code not in INJECTABLE_CODES]
    if bad:
        raise ValueError(f"error rates may be set for {INJECTABLE_CODES} only, not {bad}")
    return rates


def middleware(faults: Faults) -> Any:
    @web.middleware
    async def inject(request: web.Request, handler: Any) -> web.StreamResponse:
        if not (faults.latency_seconds > 0 or faults.error_rates) or request.path.startswith(EXEMPT_PREFIXES):
            return cast(web.StreamResponse, await handler(request))
        if faults.latency_seconds > 0:
            await asyncio.sleep(faults.latency_seconds)
        code = faults.injected_error(of_request(request).qualified_resource)
        if code is not None:
            return faults.error_response(code)
        return cast(web.StreamResponse, await handler(request))

    return inject
