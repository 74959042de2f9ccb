"""The controller's read-only web view end to end: one `planner controller --plans DIR` on an embedded
cluster, its pages fetched over raw HTTP and loaded in headless Chromium; what they show is compared
with what kubectl reads.
"""

from __future__ import annotations

import base64
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from http.client import HTTPConnection
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.browser import run_chromium, screenshot
from tests.e2e.conftest import Runner, http, write_plan
from tests.e2e.test_controller import Running, kubectl_json, ready_members, start_controller
from tests.simulated import eventually

SECRET_VALUE = "webview-secret-value-7c1e"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


def shop_plan(namespace: str) -> str:
    return (
        "apiVersion: planner.dev/v1\n"
        "kind: Plan\n"
        f"metadata: {{name: shop, namespace: {namespace}}}\n"
        "secrets:\n"
        f"  - name: api\n    data: {{token: {SECRET_VALUE}}}\n"
        "workloads:\n"
        "  - name: web\n"
        "    image: ghcr.io/acme/web:1\n"
        "    replicas: 2\n"
        "    volumes: [{secret: api, mountPath: /etc/api, readOnly: true}]\n"
        "warmPools:\n"
        "  - name: dev\n"
        "    size: 1\n"
        "    template: {image: ghcr.io/acme/devbox:1, rootfs: {size: 1Gi}, workspace: {size: 1Gi}}\n"
    )


@dataclass
class Served:
    controller: Running
    namespace: str

    def request(self, method: str, path: str) -> tuple[int, str, str]:
        """(status, Content-Type, body) of one raw HTTP request to the controller."""
        host, _, port = self.controller.address.rpartition(":")
        connection = HTTPConnection(host, int(port), timeout=10)
        try:
            connection.request(method, path)
            reply = connection.getresponse()
            return reply.status, reply.getheader("Content-Type") or "", reply.read().decode()
        finally:
            connection.close()


@pytest.fixture(scope="module")
def served(cluster: ClusterHandle, home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    namespace = "webview"
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    assert status == 201, body
    plans = tmp_path_factory.mktemp("plans")
    write_plan(plans, shop_plan(namespace))
    log = tmp_path_factory.mktemp("log") / "controller.log"
    controller = start_controller(
        cluster, home, log, "--plans", str(plans), "--resync", "1s", "--poll", "0.2s"
    )
    try:
        eventually(lambda: "plan shop: applied" in controller.output(), timeout=90)
        yield Served(controller, namespace)
    finally:
        controller.stop()


class Page(HTMLParser):
    """The table rows (cell texts) and the object tree's items (their own text, nested ones left out)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tree: list[str] = []
        self._cell: list[str] | None = None
        self._items: list[list[str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []
        elif tag in ("li", "ul") and self._items:
            self.tree.append(" ".join("".join(self._items[-1]).split()))
            self._items[-1] = []
        if tag == "li":
            self._items.append([])

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "li":
            text = " ".join("".join(self._items.pop()).split())
            if text:
                self.tree.append(text)

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._items:
            self._items[-1].append(data)


def pool_counts(kubectl: Runner, namespace: str) -> tuple[int, int]:
    """(ready unclaimed, claimed) members of pool `dev`, as kubectl reads them."""
    claimed = kubectl_json(
        kubectl, "get", "pvc", "-n", namespace, "-l", "planner.dev/pool=dev,planner.dev/claimed=true"
    )
    return len(ready_members(kubectl, namespace)), len(claimed["items"])


def test_the_pages_show_the_plan_its_objects_health_and_pools_and_never_a_secret_value(
    served: Served, kubectl: Runner
) -> None:
    namespace = served.namespace
    status, content_type, index = served.request("GET", "/")
    assert (status, content_type) == (200, "text/html; charset=utf-8"), index
    (row,) = [r for r in Page(index).rows if r and r[0] == f"{namespace}/shop"]
    source, ready, _message, _last, drift, generation = row[1:]
    assert (source.endswith("plan.yaml"), ready, drift, generation) == (
        True,
        "True ReconciliationSucceeded",
        "0 found, 0 corrected",
        "1",
    )

    pods = kubectl_json(kubectl, "get", "pods", "-n", namespace, "-l", "gobrave-workload=web")
    web_pods = sorted(p["metadata"]["name"] for p in pods["items"])
    assert len(web_pods) == 2

    def plan_page() -> list[str] | None:
        status, content_type, html = served.request("GET", f"/plans/{namespace}/shop")
        assert (status, content_type) == (200, "text/html; charset=utf-8"), html
        tree = Page(html).tree
        return tree if "Deployment/web Current 2/2 pods ready" in tree else None

    tree = eventually(plan_page, timeout=30)
    assert [f"Pod/{name} Current Running" for name in web_pods] == [
        t for t in tree if t.startswith("Pod/web")
    ]
    assert "Secret/api Current" in tree and "workload/web Current" in tree

    def pools_match() -> bool:
        rows = [r for r in Page(served.request("GET", "/")[2]).rows if r[:2] == [namespace, "dev"]]
        ready, claimed = pool_counts(kubectl, namespace)
        return rows == [[namespace, "dev", "1", str(ready), str(ready), str(claimed)]] and ready == 1

    eventually(pools_match, timeout=60)

    page = served.request("GET", f"/plans/{namespace}/shop")[2]
    drawn = "<svg" if shutil.which("dot") else "<pre>parent secret/"
    assert f'<div id="last-apply">{drawn}' in page  # the reconcile that created everything, drawn
    assert "create deployment/" in page
    pages = served.request("GET", "/")[2] + page
    for leak in (SECRET_VALUE, base64.b64encode(SECRET_VALUE.encode()).decode()):
        assert leak not in pages
    assert served.request("GET", f"/plans/{namespace}/nope")[:2] == (404, "text/plain; charset=utf-8")
    assert served.request("GET", "/plans/nope")[0] == 404
    status, _, body = served.request("POST", "/")
    assert (status, body) == (405, "method not allowed\n")
    status, _, body = served.request("HEAD", f"/plans/{namespace}/shop")
    assert (status, body) == (200, "")


def test_the_plan_page_renders_in_a_browser(served: Served, tmp_path: Path) -> None:
    """What a person sees, from Chromium's DOM (the page has no script: it works with JavaScript off),
    and a screenshot kept as an artifact."""
    url = f"http://{served.controller.address}/plans/{served.namespace}/shop"
    # no virtual time: it would run into the page's reload (a meta refresh) and dump that; scripts stay
    # on, as --dump-dom needs them, and the page has none
    dom = run_chromium("--dump-dom", url)
    assert f"<h1>Plan {served.namespace}/shop</h1>" in dom
    assert re.search(
        r'<div id="objects"><ul class="tree"><li>Secret/api <span class="ok">Current</span>', dom
    ), dom
    assert "<script" not in dom and SECRET_VALUE not in dom
    picture = screenshot(url, tmp_path / "controller-web-view.png", width=1000, height=700)
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = Path(__file__).resolve().parents[2] / ".cache" / "artifacts"
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copy(picture, keep / picture.name)
