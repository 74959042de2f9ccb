"""controller.health: the probe server's web-view routes, on a real socket with a hand-written page; and
/healthz's answer when an informer fails, from a hand-written API server's refusal."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.client import HTTPConnection
from typing import cast

import pytest
from prometheus_client import CollectorRegistry

from planner.controller.health import HealthServer, Probes
from planner.errors import CacheSyncError, api_error
from planner.kinds import PLAN
from planner.kube.client import KubeClient
from planner.kube.informer import Informer, InformerOptions

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


class RefusingApi:
    """An API server that answers every LIST with one error status."""

    def __init__(self, status: int, message: str) -> None:
        self.status, self.message = status, message

    def request(self, method: str, path: str, **options: object) -> dict[str, object]:
        raise api_error(
            self.status, {"kind": "Status", "reason": REASONS[self.status], "message": self.message}
        )


REASONS = {403: "Forbidden", 404: "NotFound"}
FORBIDDEN = (
    'plans.planner.dev is forbidden: User "system:serviceaccount:ops:planner" cannot list resource "plans" '
    'in API group "planner.dev" in the namespace "team-a"'
)


def failed_probes(status: int, message: str) -> tuple[tuple[bool, str], list[str]]:
    """/healthz's answer once the Plan informer of team-a failed with `status`, and what was logged."""
    told: list[str] = []
    informer = Informer(
        cast(KubeClient, RefusingApi(status, message)),
        PLAN,
        namespaces=frozenset({"team-a"}),
        options=InformerOptions(on_failure=told.append),
    ).start()
    with pytest.raises(CacheSyncError):
        informer.wait_until_synced(10)
    probes = Probes(
        informers=lambda: (informer,),
        loops=(),
        progress_deadline=60,
        stopping=threading.Event(),
        leading=lambda: True,
        election_healthy=lambda: True,
    )
    answers = (probes.healthz(), probes.healthz())
    assert answers[0] == answers[1]
    return answers[0], told


def test_healthz_names_why_an_informer_failed_and_the_failure_is_logged_once() -> None:
    healthz, told = failed_probes(403, FORBIDDEN)

    said = f"the plans cache (team-a): 403 Forbidden: {FORBIDDEN}"
    assert healthz == (False, f"informers failed: {said}")
    assert told == [f"{said}: it is not retried"]


def test_healthz_says_a_kind_the_server_does_not_serve_has_no_crd() -> None:
    healthz, told = failed_probes(404, "the server could not find the requested resource")

    assert healthz == (
        False,
        "informers failed: the plans cache (team-a): 404 NotFound: the server could not find the requested "
        "resource: the API server does not serve plans.planner.dev/v1 (is its CRD installed?)",
    )
    assert len(told) == 1
