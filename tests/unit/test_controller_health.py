"""controller.health: the probe server's web-view routes, on a real socket with a hand-written page."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection

import pytest
from prometheus_client import CollectorRegistry

from planner.controller.health import HealthServer

PAGE = "<!doctype html><p>plans</p>"


def fetch(
    server: HealthServer, method: str, path: str, *, address: str | None = None
) -> tuple[int, dict[str, str], str]:
    host, _, port = (address or server.address).rpartition(":")
    connection = HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request(method, path)
        reply = connection.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read().decode()
    finally:
        connection.close()


@pytest.fixture
def slow_page() -> Iterator[threading.Event]:
    release = threading.Event()
    yield release
    release.set()


@pytest.fixture
def server(slow_page: threading.Event) -> Iterator[HealthServer]:
    def pages(path: str) -> str | None:
        if path == "/slow":
            slow_page.wait(10)
        if path == "/broken":
            raise KeyError("a bug")
        return PAGE if path in ("/", "/slow") else None

    served = HealthServer(
        "127.0.0.1:0",
        healthz=lambda: (True, "ok"),
        readyz=lambda: (False, "informers not synced"),
        registry=CollectorRegistry(),
        pages=pages,
    ).start()
    yield served
    served.stop()


def test_pages_are_html_unknown_paths_404_and_only_get_and_head_are_answered(server: HealthServer) -> None:
    assert server.web_address == server.address  # no web_listen: the pages beside the probes
    status, headers, body = fetch(server, "GET", "/?refresh=1")
    assert (status, headers["Content-Type"], body) == (200, "text/html; charset=utf-8", PAGE)
    assert headers["Content-Length"] == str(len(PAGE))
    status, headers, body = fetch(server, "HEAD", "/")
    assert (status, headers["Content-Length"], body) == (200, str(len(PAGE)), "")
    assert fetch(server, "GET", "/plans/shop/nope")[::2] == (404, "not found\n")
    status, headers, body = fetch(server, "POST", "/")
    assert (status, headers["Allow"], body) == (405, "GET, HEAD", "method not allowed\n")
    assert fetch(server, "GET", "/readyz")[::2] == (503, "informers not synced\n")
    assert fetch(server, "GET", "/broken")[::2] == (500, "the page failed: KeyError\n")
    assert fetch(server, "GET", "/healthz")[::2] == (200, "ok\n")


def test_a_page_being_built_never_holds_up_a_probe(server: HealthServer, slow_page: threading.Event) -> None:
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(fetch, server, "GET", "/slow")
        assert fetch(server, "GET", "/healthz")[::2] == (200, "ok\n")  # answered while /slow is unfinished
        assert not waiting.done()
        slow_page.set()
        assert waiting.result()[::2] == (200, PAGE)


def test_without_pages_only_the_probes_are_served() -> None:
    served = HealthServer(
        "127.0.0.1:0", healthz=lambda: (True, "ok"), readyz=lambda: (True, "ok"), registry=CollectorRegistry()
    ).start()
    try:
        assert fetch(served, "GET", "/")[::2] == (404, "not found\n")
    finally:
        served.stop()


def test_with_a_web_address_the_pages_are_served_there_only_and_the_probes_never_there() -> None:
    served = HealthServer(
        "127.0.0.1:0",
        healthz=lambda: (True, "ok"),
        readyz=lambda: (True, "leading"),
        registry=CollectorRegistry(),
        pages=lambda path: PAGE if path == "/" else None,
        web_listen="127.0.0.1:0",
    ).start()
    try:
        web = served.web_address
        assert web != served.address
        assert fetch(served, "GET", "/")[::2] == (404, "not found\n")
        assert fetch(served, "GET", "/readyz")[::2] == (200, "leading\n")
        assert fetch(served, "GET", "/metrics")[0] == 200
        assert fetch(served, "GET", "/", address=web)[::2] == (200, PAGE)
        assert fetch(served, "GET", "/healthz", address=web)[::2] == (404, "not found\n")
        assert fetch(served, "GET", "/metrics", address=web)[::2] == (404, "not found\n")
    finally:
        served.stop()
