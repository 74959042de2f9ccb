"""Run the embedded API server: open the store, seed it, serve HTTP on 127.0.0.1 until stopped."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from planner.slim.api import Api
from planner.slim.bootstrap import seed
from planner.slim.certs import Certificates
from planner.slim.http.app import build_app
from planner.slim.reconcilers import FULL_RESYNC_SECONDS
from planner.slim.simulation import Simulation
from planner.slim.store import DEFAULT_EVENT_CAPACITY, Store
from planner.slim.tokens import Tokens, load_key

HOST = "127.0.0.1"
DB_NAME = "state.db"
# The young generation is collected every this many net allocations of containers (Python's default is
# 700); the older two keep their defaults.
COLLECTOR_THRESHOLDS = (7000, 10, 10)
TOKEN_ENV = "PLANNER_SLIM_TOKEN"  # the admin token, when the server is started by planner itself


@dataclass(frozen=True)
class ServerOptions:
    port: int
    data_dir: Path | None = None
    memory: bool = False
    token: str | None = None
    time_scale: float = 1.0  # multiplies every simulated delay, backoff and deadline
    watch_cache_size: int = DEFAULT_EVENT_CAPACITY
    port_file: Path | None = None
    paused: tuple[str, ...] = ()  # "controllers" and/or "nodeagent", paused from the start
    faults: dict[str, Any] | None = None  # the /slim/faults JSON to start with
    simulate: bool = True  # False: the bare API server (no controllers, node agent, faults)
    resync_seconds: float = FULL_RESYNC_SECONDS  # how often every controller key is looked at again
    rbac: bool = False  # authorize requests by RBAC (`token` is then the admin's)
    tls: Certificates | None = None  # serve HTTPS with this certificate (kubectl sends tokens only then)


def open_api(options: ServerOptions) -> Api:
    path = None
    kept = not options.memory and options.data_dir is not None
    if kept and options.data_dir is not None:
        path = private_database(options.data_dir)
    # Only the simulation's controllers remove server-added finalizers: a bare server adds none.
    api = Api(
        Store(path, event_capacity=options.watch_cache_size),
        server_finalizers=options.simulate,
        tokens=Tokens(load_key(options.data_dir if kept else None)),
    )
    seed(api)
    api.store.mark_compacted()
    return api


def private_database(data_dir: Path) -> Path:
    """The SQLite file in `data_dir`, readable by its owner only: it holds every Secret. A new data
    directory is created 0700; the file (and SQLite's journal files, which copy its mode) 0600."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = data_dir / DB_NAME
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    for file in (path, data_dir / f"{DB_NAME}-wal", data_dir / f"{DB_NAME}-shm"):
        if file.exists():
            file.chmod(0o600)  # a file made by an older planner, or under a lax umask
    return path


async def serve_async(options: ServerOptions) -> None:
    api = open_api(options)
    simulation = None
    if options.simulate:
        simulation = Simulation(
            api,
            time_scale=options.time_scale,
            paused=options.paused,
            faults=options.faults,
            resync_seconds=options.resync_seconds,
        )
        simulation.start()
    # A short shutdown timeout: open watches must not hold `planner cluster down` for a minute.
    runner = web.AppRunner(
        build_app(api, token=options.token, simulation=simulation, rbac=options.rbac),
        access_log=None,
        handler_cancellation=True,
        shutdown_timeout=1.0,
    )
    await runner.setup()
    site = web.TCPSite(runner, HOST, options.port, reuse_address=True, ssl_context=_ssl_context(options.tls))
    await site.start()
    _settle_collector()
    _announce_port(site, options.port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    scheme = "https" if options.tls is not None else "http"
    logging.getLogger(__name__).info("serving on %s://%s:%d", scheme, HOST, options.port)
    try:
        await stop.wait()
    finally:
        if simulation is not None:
            await simulation.stop()
        await runner.cleanup()
        api.store.close()


def _settle_collector() -> None:
    """Keep the garbage collector off what lives for good. What startup made (modules, schemas, the
    seeded objects, the store read from disk) stays for the process's life: it is frozen out of every
    later collection. And the collector's default thresholds, made for small heaps, walk every stored
    object again each time the heap grows by a quarter: 1,000 workloads' creates paid about a fifth
    of the server's CPU for five full collections that found nothing, since stored objects are JSON
    trees no cycle holds (an object's old version is freed by its reference count). Collecting the
    young generation ten times less often makes a burst of writes trigger far fewer full collections;
    the cycles a request does make (aiohttp's, asyncio's) are still collected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def _ssl_context(tls: Certificates | None) -> ssl.SSLContext | None:
    if tls is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls.cert, tls.key)
    return context


def _announce_port(site: web.TCPSite, port_file: Path | None) -> None:
    """Write the bound port (useful with port 0) atomically, for whoever started us."""
    server = site._server
    sockets = getattr(server, "sockets", None) or []
    port = sockets[0].getsockname()[1] if sockets else 0
    if port_file is not None:
        partial = port_file.with_suffix(".tmp")
        partial.write_text(str(port))
        partial.replace(port_file)


# Deep enough for the recursive decoders (ruamel's composer takes three frames a level) to read what
# clients send nested a few thousand levels; past that, a body is refused as too deep (`media`).
RECURSION_LIMIT = 12000


def serve_forever(options: ServerOptions) -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    asyncio.run(serve_async(options))
