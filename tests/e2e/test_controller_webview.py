"""The controller's read-only web view end to end: one `planner controller --plans DIR` on an embedded
cluster, its pages fetched over raw HTTP and loaded in headless Chromium; what they show — each plan's
row, a finished Job, a drifted plan once the controller corrected it — is compared with what kubectl
reads. One test, so one cluster and one controller serve every check.
"""

from __future__ import annotations

import base64
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from http.client import HTTPConnection
from pathlib import Path

import pytest

from planner.slim.cluster import ClusterHandle, running_cluster
from tests.browser import run_chromium
from tests.e2e.conftest import Runner, http, write_plan
from tests.e2e.test_controller import Running, kubectl_json, ready_members, start_controller
from tests.simulated import eventually

SECRET_VALUE = "webview-secret-value-7c1e"
NAMESPACE = "webview"


@pytest.fixture(scope="module")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(time_scale=0.1, simulate=True) as handle:
        yield handle


SHOP_PLAN = (
    "apiVersion: planner.dev/v1\n"
    "kind: Plan\n"
    f"metadata: {{name: shop, namespace: {NAMESPACE}}}\n"
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
BATCH_PLAN = (
    "apiVersion: planner.dev/v1\n"
    "kind: Plan\n"
    f"metadata: {{name: batch, namespace: {NAMESPACE}}}\n"
    "workloads:\n"
    "  - {name: migrate, kind: job, image: 'busybox:1.36'}\n"
)


@dataclass
class Served:
    controller: Running
    started: datetime

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

    def url(self, path: str) -> str:
        return f"http://{self.controller.address}{path}"


@pytest.fixture(scope="module")
def served(cluster: ClusterHandle, home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    status, body = http(cluster, "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    assert status == 201, body
    plans = tmp_path_factory.mktemp("plans")
    write_plan(plans, SHOP_PLAN)
    write_plan(plans, BATCH_PLAN, "batch.yaml")
    log = tmp_path_factory.mktemp("log") / "controller.log"
    started = datetime.now(UTC)
    controller = start_controller(  # a short --interval: a reconcile soon finds the drift the test makes
        cluster, home, log, "--plans", str(plans), "--resync", "1s", "--poll", "0.2s", "--interval", "3s"
    )
    try:
        for plan in ("shop", "batch"):
            eventually(lambda plan=plan: f"plan {plan}: applied" in controller.output(), timeout=90)
        yield Served(controller, started)
    finally:
        controller.stop()


@dataclass
class Row:
    cells: list[str] = field(default_factory=list)
    css: str = ""
    links: list[str] = field(default_factory=list)
    times: list[datetime] = field(default_factory=list)  # each <time datetime> in it


class Page(HTMLParser):
    """The table rows (cell texts, the row's class, its links and times) and the object tree's items
    (their own text, nested ones left out)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self.tree: list[str] = []
        self._cell: list[str] | None = None
        self._items: list[list[str]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tr":
            self.rows.append(Row(css=found.get("class") or ""))
        elif tag == "td":
            self._cell = []
        elif tag == "a" and self.rows and self._cell is not None:
            self.rows[-1].links.append(found.get("href") or "")
        elif tag == "time" and self._cell is not None:
            self.rows[-1].times.append(datetime.fromisoformat(found.get("datetime") or ""))
        elif tag in ("li", "ul") and self._items:
            self.tree.append(" ".join("".join(self._items[-1]).split()))
            self._items[-1] = []
        if tag == "li":
            self._items.append([])

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.rows[-1].cells.append(" ".join("".join(self._cell).split()))
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


def plan_rows(html: str) -> dict[str, Row]:
    """The index's plan rows (those with a link) by plan."""
    return {row.cells[0]: row for row in Page(html).rows if row.links}


def pool_counts(kubectl: Runner) -> tuple[int, int]:
    """(ready unclaimed, claimed) members of pool `dev`, as kubectl reads them."""
    claimed = kubectl_json(
        kubectl, "get", "pvc", "-n", NAMESPACE, "-l", "planner.dev/pool=dev,planner.dev/claimed=true"
    )
    return len(ready_members(kubectl, NAMESPACE)), len(claimed["items"])


def newest_generation(kubectl: Runner, plan: str) -> str:
    """The number of the plan's newest generation record, as kubectl lists them."""
    records = kubectl_json(
        kubectl, "get", "secrets", "-n", NAMESPACE, "-l", f"planner.dev/plan={plan},planner.dev/generation"
    )
    return str(max(int(r["metadata"]["labels"]["planner.dev/generation"]) for r in records["items"]))


def web_pods(kubectl: Runner) -> list[str]:
    pods = kubectl_json(kubectl, "get", "pods", "-n", NAMESPACE, "-l", "gobrave-workload=web")
    return sorted(p["metadata"]["name"] for p in pods["items"] if not p["metadata"].get("deletionTimestamp"))


def check_raw_pages(served: Served, kubectl: Runner) -> None:
    """The pages over raw HTTP: the plan's objects and their health, the pools' counts as kubectl reads
    them, the last apply drawn, no secret value anywhere, and nothing but GET and HEAD answered."""
    status, content_type, index = served.request("GET", "/")
    assert (status, content_type) == (200, "text/html; charset=utf-8"), index
    pods = web_pods(kubectl)
    assert len(pods) == 2

    def plan_page() -> list[str] | None:
        status, content_type, html = served.request("GET", f"/plans/{NAMESPACE}/shop")
        assert (status, content_type) == (200, "text/html; charset=utf-8"), html
        tree = Page(html).tree
        return tree if "Deployment/web Current 2/2 pods ready" in tree else None

    tree = eventually(plan_page, timeout=30)
    assert [f"Pod/{name} Current Running" for name in pods] == [t for t in tree if t.startswith("Pod/web")]
    assert "Secret/api Current" in tree and "workload/web Current" in tree

    def pools_match() -> bool:
        rows = [
            r.cells for r in Page(served.request("GET", "/")[2]).rows if r.cells[:2] == [NAMESPACE, "dev"]
        ]
        ready, claimed = pool_counts(kubectl)
        return rows == [[NAMESPACE, "dev", "1", str(ready), str(ready), str(claimed)]] and ready == 1

    eventually(pools_match, timeout=60)

    page = served.request("GET", f"/plans/{NAMESPACE}/shop")[2]
    drawn = "<svg" if shutil.which("dot") else "<pre>parent secret/"
    assert f'<div id="last-apply">{drawn}' in page  # the reconcile that created everything, drawn
    assert "create deployment/" in page
    pages = served.request("GET", "/")[2] + page
    for leak in (SECRET_VALUE, base64.b64encode(SECRET_VALUE.encode()).decode()):
        assert leak not in pages
    assert served.request("GET", f"/plans/{NAMESPACE}/nope")[:2] == (404, "text/plain; charset=utf-8")
    assert served.request("GET", "/plans/nope")[0] == 404
    status, _, body = served.request("POST", "/")
    assert (status, body) == (405, "method not allowed\n")
    status, _, body = served.request("HEAD", f"/plans/{NAMESPACE}/shop")
    assert (status, body) == (200, "")


def browse(served: Served, path: str, *, picture: Path | None = None) -> str:
    """The page's DOM as Chromium built it (and a screenshot of it, 1000x700, to `picture`). No virtual
    time: it would run into the page's reload (a meta refresh) and dump that; scripts stay on, as
    --dump-dom needs them, and the page has none."""
    shot = (f"--screenshot={picture}", "--window-size=1000,700") if picture is not None else ()
    dom = run_chromium(*shot, "--dump-dom", served.url(path))
    assert "<script" not in dom and SECRET_VALUE not in dom, dom
    return dom


PLAN_FILES = {"shop": "plan.yaml", "batch": "batch.yaml"}


def check_index_row(row: Row, plan: str, kubectl: Runner, since: datetime) -> tuple[str, str]:
    """A plan's row in the index as a person reads it: its link, file, Ready, last reconcile (a time
    between `since` and now), and its generation, the newest kubectl lists; (its drift cell, its class)."""
    source, ready, _message, last, drift, generation = row.cells[1:]
    assert row.links == [f"/plans/{NAMESPACE}/{plan}"]
    assert (Path(source).name, ready) == (PLAN_FILES[plan], "True ReconciliationSucceeded")
    assert re.fullmatch(r"\d+s ago", last) and since <= row.times[0] <= datetime.now(UTC), row
    assert generation == newest_generation(kubectl, plan)
    return drift, row.css


def test_the_pages_show_plans_objects_pools_and_corrected_drift_in_a_browser_and_never_a_secret(
    served: Served, kubectl: Runner, tmp_path: Path
) -> None:
    check_raw_pages(served, kubectl)

    # a row per plan, neither drifted
    rows = plan_rows(served.request("GET", "/")[2])
    assert sorted(rows) == [f"{NAMESPACE}/batch", f"{NAMESPACE}/shop"]
    for plan in ("batch", "shop"):
        assert check_index_row(rows[f"{NAMESPACE}/{plan}"], plan, kubectl, served.started) == ("none", "")
    assert newest_generation(kubectl, "shop") == "1"

    # a finished Job is complete, as kubectl's Job status says, its pod succeeded
    job = kubectl_json(kubectl, "get", "job", "migrate", "-n", NAMESPACE)
    assert job["status"]["succeeded"] == 1
    tree = Page(served.request("GET", f"/plans/{NAMESPACE}/batch")[2]).tree
    assert "Job/migrate Current Complete 1/1" in tree, tree
    assert [t.split()[1:] for t in tree if t.startswith("Pod/migrate-")] == [["Current", "Succeeded"]]

    # drift: someone scales the Deployment the controller owns; a reconcile finds and corrects it
    drifted_at = datetime.now(UTC)
    scaled = kubectl("scale", "deployment", "web", "-n", NAMESPACE, "--replicas=1")
    assert scaled.returncode == 0, scaled.stderr
    eventually(lambda: "plan shop: applied: applied 1 drift" in served.controller.output(), timeout=60)
    deployment = kubectl_json(kubectl, "get", "deployment", "web", "-n", NAMESPACE)
    assert deployment["spec"]["replicas"] == 2
    eventually(
        lambda: plan_rows(served.request("GET", "/")[2])[f"{NAMESPACE}/shop"].css == "corrected", timeout=30
    )

    # the index in Chromium: the drifted plan's row marked corrected, the other not
    rows = plan_rows(browse(served, "/"))
    assert sorted(rows) == [f"{NAMESPACE}/batch", f"{NAMESPACE}/shop"]
    drift, css = check_index_row(rows[f"{NAMESPACE}/shop"], "shop", kubectl, drifted_at)
    assert re.fullmatch(r"1 found, 1 corrected \d+s ago", drift) and css == "corrected", drift
    corrected_at = rows[f"{NAMESPACE}/shop"].times[1]
    assert drifted_at <= corrected_at <= datetime.now(UTC)
    assert newest_generation(kubectl, "shop") == "2"  # the correction's apply recorded one
    assert check_index_row(rows[f"{NAMESPACE}/batch"], "batch", kubectl, served.started) == ("none", "")

    # the plan's page: the same mark, and the Deployment back at 2 pods, those kubectl lists
    eventually(
        lambda: (
            "Deployment/web Current 2/2 pods ready"
            in Page(served.request("GET", f"/plans/{NAMESPACE}/shop")[2]).tree
        ),
        timeout=30,
    )
    picture = tmp_path / "controller-web-view.png"
    dom = browse(served, f"/plans/{NAMESPACE}/shop", picture=picture)
    page = Page(dom)
    (row,) = [r for r in page.rows if r.cells and Path(r.cells[0]).name == "plan.yaml"]
    assert (row.css, row.times[1]) == ("corrected", corrected_at)
    assert re.fullmatch(r"1 found, 1 corrected \d+s ago", row.cells[4]), row
    assert [f"Pod/{name} Current Running" for name in web_pods(kubectl)] == [
        t for t in page.tree if t.startswith("Pod/web")
    ]
    assert f"<h1>Plan {NAMESPACE}/shop</h1>" in dom
    assert re.search(
        r'<div id="objects"><ul class="tree"><li>Secret/api <span class="ok">Current</span>', dom
    )

    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = Path(__file__).resolve().parents[2] / ".cache" / "artifacts"
    keep.mkdir(parents=True, exist_ok=True)
    shutil.copy(picture, keep / picture.name)
