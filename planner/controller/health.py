"""`/healthz`, `/readyz` and `/metrics` over HTTP, from one event-loop thread.

`/healthz` is 200 while the process runs, no informer has failed for good (else it names each and the
server's answer: `403 Forbidden: …`, a CRD not installed) and no work loop has stalled (`Heartbeat`); `/readyz` is 200 once the informers have synced and, with leader election, while this
replica leads or stands by healthily, and 503 from the moment shutdown begins (`Probes` answers both);
`/metrics` is the Prometheus text format of the controller's registry. Given `pages` (a path to its HTML, None for
none), any other GET is a page of the controller's read-only web view (`/`, `/plans/<ns>/<name>`) —
on the same address, or given `web_listen` there and only there (a Deployment keeps the pages on the
pod's loopback, for `kubectl port-forward`, while the kubelet probes the pod's address). Given `hooks`
(`--hooks-secret`), `POST /hooks/<name>` on the probes' address is the webhook receiver (`hooks`): its
body, at most `MAX_HOOK_BYTES`, is read within `READ_TIMEOUT` and handed over on a thread.

A kubelet's probe must be answered whatever else connects: the server is asyncio (an idle or
half-sent connection holds no thread), a request head must arrive within `READ_TIMEOUT`, and at most
`MAX_CONNECTIONS` are open — a new one closes the oldest that has not sent its request yet. Each answer
closes its connection (`Connection: close`), as a probe expects nothing more. A page is built on a
thread of its own (it may read the API), never on the loop that answers the probes.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from planner.kube.informer import Informer

Probe = Callable[[], tuple[bool, str]]  # (ok, a sentence saying why)
Pages = Callable[[str], str | None]  # a path's HTML page; None: no such page
Hook = Callable[[str, Mapping[str, str], bytes], tuple[int, str]]  # name, headers (lowercase), body

READ_TIMEOUT = 5.0
WRITE_TIMEOUT = 5.0
MAX_CONNECTIONS = 256
MAX_HEAD_BYTES = 8192
MAX_HOOK_BYTES = 4 * 1024 * 1024  # a push event's JSON; GitHub's are far smaller for a few commits
HOOKS = "/hooks/"
_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"
# Every answer: no script, style only inline, nothing framed or sniffed (the pages are plain HTML from
# cluster data, which must never become active content).
_HARDENING = (
    "Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Referrer-Policy: no-referrer\r\n"
)
_REASONS = {
    200: "OK",
    202: "Accepted",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class Heartbeat:
    """When a loop last made progress, and what it was doing then. A loop that has not beaten for its
    deadline is stalled (a blocked read, a wait that never ends): `/healthz` says so and fails, so the
    kubelet restarts the replica rather than it hanging on, healthy by appearance."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._last = time.monotonic()
        self._doing = ""

    def beat(self, doing: str = "") -> None:
        self._last, self._doing = time.monotonic(), doing

    def stalled(self, deadline: float) -> str | None:
        """A sentence when the loop has made no progress for `deadline` seconds, else None."""
        silent = time.monotonic() - self._last
        if silent <= deadline:
            return None
        doing = f" (at {self._doing})" if self._doing else ""
        return f"{self.name} has made no progress for {silent:.0f}s{doing}"


class Probes:
    """What `/healthz` and `/readyz` answer, from the controller's watches (`informers`: each None until
    started), its work loops' heartbeats, whether it is shutting down and how its election stands."""

    def __init__(
        self,
        *,
        informers: Callable[[], Iterable[Informer | None]],
        loops: Sequence[Heartbeat],
        progress_deadline: float,
        stopping: threading.Event,
        leading: Callable[[], bool],
        election_healthy: Callable[[], bool],
    ) -> None:
        self.informers, self.loops, self.progress_deadline = informers, loops, progress_deadline
        self.stopping, self.leading, self.election_healthy = stopping, leading, election_healthy

    def healthz(self) -> tuple[bool, str]:
        failed = [i.failure for i in self.informers() if i is not None and i.failure]
        if failed:
            return False, f"informers failed: {'; '.join(failed)}"
        for loop in self.loops:
            stalled = loop.stalled(self.progress_deadline)
            if stalled is not None:
                return False, stalled
        return True, "ok"

    def readyz(self) -> tuple[bool, str]:
        if self.stopping.is_set():
            return False, "shutting down"
        if not all(i is not None and i.synced for i in self.informers()):
            return False, "informers not synced"
        if not self.election_healthy():
            return False, "leader election: no contact with the Lease"
        return True, "leading" if self.leading() else "standing by"


class HealthServer:
    def __init__(
        self,
        listen: str,
        *,
        healthz: Probe,
        readyz: Probe,
        registry: CollectorRegistry,
        pages: Pages | None = None,
        web_listen: str | None = None,
        hooks: Hook | None = None,
    ) -> None:
        self._routes = {"/healthz": healthz, "/readyz": readyz}
        self._hooks = hooks
        self._registry = registry
        self._pages = pages
        self._page_builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="web-view")
        self._loop = asyncio.new_event_loop()
        self._waiting: dict[
            asyncio.StreamWriter, None
        ] = {}  # connections yet to send a request, oldest first
        self._open: set[asyncio.StreamWriter] = set()
        apart = web_listen if pages is not None else None
        self._server = self._listen(listen, probes=True, pages=apart is None)
        self._web = self._listen(apart, probes=False, pages=True) if apart is not None else None
        self._thread = threading.Thread(target=self._loop.run_forever, name="health", daemon=True)

    def _listen(self, listen: str, *, probes: bool, pages: bool) -> asyncio.Server:
        host, _, port = listen.rpartition(":")
        serve = functools.partial(self._serve, probes=probes, pages=pages)
        return self._loop.run_until_complete(
            asyncio.start_server(serve, host.strip("[]") or "0.0.0.0", int(port), limit=MAX_HEAD_BYTES)
        )

    @property
    def address(self) -> str:
        return _address(self._server)

    @property
    def web_address(self) -> str:
        """Where the pages are served: `web_listen`'s address, else `address`."""
        return _address(self._web or self._server)

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._page_builder.shutdown(wait=False, cancel_futures=True)

    async def _close(self) -> None:
        servers = [self._server, *([self._web] if self._web is not None else [])]
        for server in servers:
            server.close()
        for writer in list(self._open):
            writer.close()
        for server in servers:
            await server.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, probes: bool, pages: bool
    ) -> None:
        self._open.add(writer)
        self._waiting[writer] = None
        if len(self._open) > MAX_CONNECTIONS:
            oldest = next(iter(self._waiting))
            del self._waiting[oldest]
            oldest.close()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
            self._waiting.pop(writer, None)
            hook = await self._hook(head, reader) if probes and self._hooks is not None else None
            writer.write(hook or await self._answer(head, probes=probes, pages=pages))
            await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # gone, too slow or too long: nothing is owed
        finally:
            self._waiting.pop(writer, None)
            self._open.discard(writer)
            writer.close()

    async def _hook(self, head: bytes, reader: asyncio.StreamReader) -> bytes | None:
        """The answer to `POST /hooks/<name>` (None: the request is not one)."""
        lines = head.decode("latin-1").split("\r\n")
        method, path, *_ = [*lines[0].split(" "), "", ""]
        if method != "POST" or not path.startswith(HOOKS) or self._hooks is None:
            return None
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:] if ":" in line)
        }
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_HOOK_BYTES:
            return _response(413, b"the body is missing its length or too large\n", _TEXT)
        body = await asyncio.wait_for(reader.readexactly(length), READ_TIMEOUT)
        name = path.split("?", 1)[0].removeprefix(HOOKS)
        status, text = await self._loop.run_in_executor(self._page_builder, self._hooks, name, headers, body)
        return _response(status, text.encode(), _TEXT)

    async def _answer(self, head: bytes, *, probes: bool, pages: bool) -> bytes:
        method, path, *_ = [*head.split(b"\r\n", 1)[0].decode("latin-1").split(" "), "", ""]
        status, body, content_type = await self._route(method, path.split("?", 1)[0], probes, pages)
        allow = "Allow: GET, HEAD\r\n" if status == 405 else ""
        header = (
            f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n{allow}"
            f"{_HARDENING}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        return header.encode() + (b"" if method == "HEAD" else body)

    async def _route(self, method: str, path: str, probes: bool, pages: bool) -> tuple[int, bytes, str]:
        if method not in ("GET", "HEAD"):
            return 405, b"method not allowed\n", _TEXT
        if probes and path == "/metrics":
            return 200, generate_latest(self._registry), CONTENT_TYPE_LATEST
        if probes and path in self._routes:
            ok, why = self._routes[path]()
            return (200 if ok else 503), f"{why}\n".encode(), _TEXT
        page = None
        if pages and self._pages is not None:
            try:
                page = await self._loop.run_in_executor(self._page_builder, self._pages, path)
            except Exception as bug:  # a page's bug must not take the probes' server down
                return 500, f"the page failed: {type(bug).__name__}\n".encode(), _TEXT
        if page is None:
            return 404, b"not found\n", _TEXT
        return 200, page.encode(), _HTML


def _response(status: int, body: bytes, content_type: str) -> bytes:
    header = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {content_type}\r\n{_HARDENING}"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return header.encode() + body


def _address(server: asyncio.Server) -> str:
    host, port = server.sockets[0].getsockname()[:2]
    return f"{host!s}:{port}"
