"""The client's line streams over a real HTTP connection: watches drop blank keep-alive lines, logs keep
blank lines (they are content), and each stream is counted under its verb."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
from kubernetes.client import ApiClient, Configuration

from planner.kube.client import KubeClient


class _LinesHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"first\n\nthird\n\n" if "log" in self.path else b'{"a":1}\n\n{"b":2}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def lines_server() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _LinesHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_streams_drop_blank_keepalives_but_logs_keep_blank_lines(lines_server: str) -> None:
    configuration = Configuration(host=lines_server)
    client = KubeClient(ApiClient(configuration))
    assert list(client.stream_lines("/watch", query={})) == [b'{"a":1}', b'{"b":2}']
    assert list(client.stream_lines("/pod/log", query={}, keep_blank=True, verb="get")) == [
        b"first",
        b"",
        b"third",
        b"",
    ]
    assert client.log.by_verb == {"watch": 1, "get": 1}
