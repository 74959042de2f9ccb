"""The client's own rate limit: on until a server shows API Priority and Fairness, then off unless the
user gave `--qps` (through `ClientOptions.qps`)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from planner.kube.client import ClientOptions, KubeClient
from planner.slim.cluster import ClusterHandle, kubeconfig_document, running_cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster() as handle:
        yield handle


class _PlainServer(BaseHTTPRequestHandler):
    """An API server without API Priority and Fairness: JSON answers, no flow schema header."""

    def do_GET(self) -> None:
        body = json.dumps({"kind": "Namespace", "metadata": {"name": "default"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        del args


@pytest.fixture
def plain_server(tmp_path: Path) -> Iterator[Path]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _PlainServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    url = f"http://127.0.0.1:{server.server_address[1]}"
    kubeconfig.write_text(json.dumps(kubeconfig_document(url, None)))
    try:
        yield kubeconfig
    finally:
        server.shutdown()
        thread.join()


def client_of(kubeconfig: Path, options: ClientOptions | None = None) -> KubeClient:
    return KubeClient.from_config(kubeconfig=str(kubeconfig), context=None, options=options)


def test_a_server_with_priority_and_fairness_lifts_the_clients_own_limit(cluster: ClusterHandle) -> None:
    client = client_of(cluster.kubeconfig)
    assert client.throttled  # nothing heard from the server yet
    client.request("GET", "/api/v1/namespaces/default")
    assert not client.throttled
    assert client.log.total == 1  # no probe of its own: the answer said it


def test_a_rate_the_user_gave_applies_whatever_the_server_says(cluster: ClusterHandle) -> None:
    client = client_of(cluster.kubeconfig, ClientOptions(qps=50))
    client.request("GET", "/api/v1/namespaces/default")
    assert client.throttled


def test_a_server_without_priority_and_fairness_keeps_the_limit(plain_server: Path) -> None:
    client = client_of(plain_server)
    assert client.request("GET", "/api/v1/namespaces/default")["metadata"] == {"name": "default"}
    assert client.throttled


class _KeepAliveServer(_PlainServer):
    """The same answers over HTTP/1.1 keep-alive, counting the connections clients open."""

    protocol_version = "HTTP/1.1"
    opened: ClassVar[list[tuple[str, int]]] = []

    def setup(self) -> None:
        super().setup()
        type(self).opened.append(self.client_address)

    def do_GET(self) -> None:
        time.sleep(0.02)  # a server's time per request: the clients' requests overlap
        super().do_GET()


def test_requests_in_flight_at_once_reuse_their_connections_past_five_per_cpu(tmp_path: Path) -> None:
    """An apply writes 16 objects at once while its informers hold their watches: every request in
    flight keeps its connection for the next, rather than paying a new TCP (and TLS) handshake."""
    _KeepAliveServer.opened.clear()  # counted per test, not per process
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(kubeconfig_document(f"http://127.0.0.1:{server.server_address[1]}", None))
    )
    client = client_of(kubeconfig, ClientOptions(qps=100_000))
    threads = 24
    barrier = threading.Barrier(threads)

    def requests() -> None:
        for _ in range(3):  # rounds of 24 at once, all done before the next (as an apply's waves)
            barrier.wait()
            client.request("GET", "/api/v1/namespaces/default", verb="get")

    try:
        workers = [threading.Thread(target=requests) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        server.shutdown()
    assert 0 < len(_KeepAliveServer.opened) <= threads, len(_KeepAliveServer.opened)
