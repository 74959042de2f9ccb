"""Everything that makes the embedded cluster behave, wired to one server: controllers, node agent,
faults, metrics, pod logs and the `/slim/` admin endpoints.

`Simulation` is created with the server's options, started on the server's event loop after the
store is seeded, and handed to the HTTP app, which asks it for its middlewares, its extra routes,
the watch wrapper and the pod-log handler. Admin endpoints:

- `GET/PUT/PATCH /slim/faults`: read, replace or change the fault settings (see `faults.py`);
- `GET /slim/pause`, `POST /slim/pause {"component": "controllers"|"nodeagent", "paused": bool}`;
- `GET /slim/stats`: per reconciler, the passes run, keys synced and full resyncs so far;
- `GET /metrics`: Prometheus text.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Iterable
from typing import Any

from aiohttp import web

from planner.slim import logs, status_errors
from planner.slim.api import Api
from planner.slim.controllers import controllers
from planner.slim.faults import Faults
from planner.slim.faults import middleware as fault_middleware
from planner.slim.metrics import Metrics
from planner.slim.nodeagent import NodeAgent
from planner.slim.reconcilers import COMPONENTS, FULL_RESYNC_SECONDS, PassCounts, Scale, Switches, start
from planner.slim.resources import by_kind

Obj = dict[str, Any]


class Simulation:
    def __init__(
        self,
        api: Api,
        *,
        time_scale: float = 1.0,
        paused: Iterable[str] = (),
        faults: Obj | None = None,
        resync_seconds: float = FULL_RESYNC_SECONDS,
    ) -> None:
        self.api = api
        self.resync_seconds = resync_seconds
        self.scale = Scale(time_scale)
        self.switches = Switches()
        for component in paused:
            self.switches.pause(component)
        self.faults = Faults()
        self.faults.apply(faults or {}, replace=True)
        self.metrics = Metrics()
        self.node_agent = NodeAgent(api, self.scale)
        self.counts: dict[str, PassCounts] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        reconcilers = [*controllers(self.api, self.scale), self.node_agent]
        self._tasks = start(
            reconcilers, self.api.store, self.switches, self.counts, full_resync_seconds=self.resync_seconds
        )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- HTTP hooks ----------------------------------------------------------------------------------

    def middlewares(self) -> list[Any]:
        """Outermost first: count every answer, including injected faults."""
        return [self.metrics.middleware(), fault_middleware(self.faults)]

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/metrics", self._metrics)
        app.router.add_route("*", "/slim/faults", self._faults)
        app.router.add_route("*", "/slim/pause", self._pause)
        app.router.add_get("/slim/stats", self._stats)

    def wrap_watch(self, events: AsyncIterator[Obj]) -> AsyncIterator[Obj]:
        return self.faults.wrap_watch(events)

    async def pod_log(
        self, request: web.Request, namespace: str, name: str, container: str
    ) -> web.StreamResponse:
        rt = by_kind("Pod")
        return await logs.serve_log(
            request,
            lambda: self.api.get(rt, namespace, name),
            self.node_agent.started_at,
            container,
            self.scale.factor,
            time.time,
        )

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        return self.metrics.render()

    async def _stats(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({name: dataclasses.asdict(c) for name, c in self.counts.items()})

    async def _faults(self, request: web.Request) -> web.StreamResponse:
        if request.method in ("PUT", "PATCH"):
            try:
                self.faults.apply(await request.json(), replace=request.method == "PUT")
            except (ValueError, TypeError, AttributeError) as exc:
                raise status_errors.bad_request(str(exc)) from exc
        elif request.method != "GET":
            raise status_errors.method_not_allowed()
        return web.json_response(self.faults.to_json(), dumps=json.dumps)

    async def _pause(self, request: web.Request) -> web.StreamResponse:
        if request.method == "POST":
            try:
                body = await request.json()
                self.switches.pause(str(body["component"]), bool(body.get("paused", True)))
            except (ValueError, KeyError, TypeError) as exc:
                raise status_errors.bad_request(
                    f"expected {{'component': one of {COMPONENTS}, 'paused': bool}}: {exc}"
                ) from exc
        elif request.method != "GET":
            raise status_errors.method_not_allowed()
        return web.json_response({c: self.switches.is_paused(c) for c in COMPONENTS})
