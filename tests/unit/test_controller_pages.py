"""controller.pages: the controller's pages from hand-built view models, read back with an HTML parser."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

from planner.controller.pages import ObjectHealth, Overview, PlanView, index_page, plan_page
from planner.controller.viewmodels import LastApply
from planner.generations import Listed
from planner.graph import solve
from planner.monitor.pool_members import PoolStatus
from tests.unit.test_output_graph import shop_changes

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


class Page(HTMLParser):
    """The page's table rows as cell texts, its links, its tree items and every tag seen."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.links: list[str] = []
        self.tags: list[str] = []
        self.tree: list[str] = []
        self.row_classes: list[str] = []
        self._cell: list[str] | None = None
        self._open_items: list[int] = []  # indexes into `tree` of the <li>s not yet closed
        self.feed(html)
        self.tree = [" ".join(item.split()) for item in self.tree]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        found = dict(attrs)
        if tag == "tr":
            self.rows.append([])
            self.row_classes.append(found.get("class") or "")
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "a":
            self.links.append(found.get("href") or "")
        elif tag == "li":
            self._open_items.append(len(self.tree))
            self.tree.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "li":
            self._open_items.pop()

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        for index in self._open_items:
            self.tree[index] += " " + data


def shop(**fields: object) -> PlanView:
    defaults: dict[str, object] = {
        "name": "shop",
        "namespace": "shop",
        "source": "plans/web-stack.yaml",
        "ready": "True",
        "reason": "ReconciliationSucceeded",
        "message": "applied generation 3",
        "last_reconcile": NOW - timedelta(seconds=42),
        "drift_found": 1,
        "drift_corrected": 1,
        "drift_at": NOW - timedelta(seconds=150),
        "generation": 3,
    }
    return PlanView(**{**defaults, **fields})  # type: ignore[arg-type]


def test_the_index_lists_plans_and_pools_and_marks_drift_corrected_and_drift_left() -> None:
    overview = Overview(
        identity="planner-0 (planner-system)",
        leading=True,
        plans=(
            shop(),
            shop(
                name="cart",
                ready="False",
                reason="ReconciliationFailed",
                message="x",
                drift_found=2,
                drift_corrected=0,
                drift_at=None,
                last_reconcile=None,
                generation=None,
            ),
            shop(name="docs", drift_found=0, drift_corrected=0, drift_at=None),
        ),
        pools=(
            PoolStatus(namespace="sandboxes", pool="devbox-pool", size=3, ready=2, unclaimed=3, claimed=1),
        ),
    )
    page = Page(index_page(overview, now=NOW))
    assert page.rows == [
        ["Plan", "Source", "Ready", "Message", "Last reconcile", "Last drift", "Generation"],
        [
            "shop/shop",
            "plans/web-stack.yaml",
            "True ReconciliationSucceeded",
            "applied generation 3",
            "42s ago",
            "1 found, 1 corrected 2m ago",
            "3",
        ],
        [
            "shop/cart",
            "plans/web-stack.yaml",
            "False ReconciliationFailed",
            "x",
            "never",
            "2 found, 0 corrected",
            "",
        ],
        [
            "shop/docs",
            "plans/web-stack.yaml",
            "True ReconciliationSucceeded",
            "applied generation 3",
            "42s ago",
            "none",
            "3",
        ],
        ["Namespace", "Pool", "Size", "Ready", "Unclaimed", "Claimed"],
        ["sandboxes", "devbox-pool", "3", "2", "3", "1"],
    ]
    assert page.row_classes[1:4] == ["corrected", "drifted", ""]
    assert page.links == ["/plans/shop/shop", "/plans/shop/cart", "/plans/shop/docs"]


def test_pages_reload_themselves_and_hold_no_form_or_script() -> None:
    html = index_page(Overview(identity="c", leading=False, plans=()), now=NOW)
    assert '<meta http-equiv="refresh" content="10">' in html
    assert {"form", "script", "button", "input"}.isdisjoint(Page(html).tags)
    assert "standby (not leading: no reconciles run here)" in html
    assert "No plans yet." in html


def test_every_text_is_escaped() -> None:
    html = index_page(
        Overview(identity="<b>", leading=True, plans=(shop(message="<script>alert(1)</script>"),))
    )
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_plan_page_shows_its_objects_as_a_tree_its_generations_and_the_last_graph() -> None:
    pods = (ObjectHealth(kind="Pod", name="web-7d9-abc", status="Current", message="ready 1/1"),)
    replica_set = ObjectHealth(kind="ReplicaSet", name="web-7d9", status="Current", children=pods)
    plan = shop(
        objects=(
            ObjectHealth(
                kind="Deployment",
                name="web",
                status="InProgress",
                message="available 0/1",
                children=(replica_set,),
            ),
            ObjectHealth(kind="PersistentVolumeClaim", name="data", status="Current", message="Bound"),
        ),
        generations=(
            Listed(
                number=3,
                result="succeeded",
                started="2026-12-01T11:59:00Z",
                revision="abc123",
                who="ci@host",
                changes="1 updated",
                rolled_back_from=None,
            ),
        ),
        last_apply=LastApply(
            execution=solve(shop_changes(), default_timeout=120.0),
            changeset=shop_changes(),
            finished=NOW - timedelta(seconds=30),
        ),
    )
    html = plan_page(plan, now=NOW, svg=False)
    page = Page(html)
    assert page.tree == [
        "Deployment/web InProgress available 0/1 ReplicaSet/web-7d9 Current Pod/web-7d9-abc Current ready 1/1",
        "ReplicaSet/web-7d9 Current Pod/web-7d9-abc Current ready 1/1",
        "Pod/web-7d9-abc Current ready 1/1",
        "PersistentVolumeClaim/data Current Bound",
    ]
    assert ["3", "succeeded", "2026-12-01T11:59:00Z", "abc123", "ci@host", "1 updated"] in page.rows
    assert "plan shop (namespace shop): 8 tasks, <time" in html
    assert "wait-ready deployment/shop/web &lt;- create deployment/shop/web\n" in html
    assert page.links == ["/"]
