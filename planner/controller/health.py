"""`/healthz`, `/readyz` and `/metrics` over HTTP, from a daemon thread.

`/healthz` is 200 while the process runs and no informer has failed for good; `/readyz` is 200 once
the informers have synced and, with leader election, while this replica leads or stands by healthily
(it has read the Lease within the lease duration), and 503 from the moment shutdown begins;
`/metrics` is the Prometheus text format of the controller's registry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Probe = Callable[[], tuple[bool, str]]  # (ok, a sentence saying why)


class HealthServer:
    def __init__(self, listen: str, *, healthz: Probe, readyz: Probe, registry: CollectorRegistry) -> None:
        host, _, port = listen.rpartition(":")
        routes = {"/healthz": healthz, "/readyz": readyz}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif path in routes:
                    ok, why = routes[path]()
                    self._send(200 if ok else 503, f"{why}\n".encode(), "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found\n", "text/plain; charset=utf-8")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return  # probes every few seconds would drown the controller's own log

        self.server = ThreadingHTTPServer((host.strip("[]") or "0.0.0.0", int(port)), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, name="health", daemon=True)

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
