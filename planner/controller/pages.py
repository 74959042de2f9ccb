"""The controller's read-only web view as HTML: a page of plans and warm pools, and a page per plan.

Server-rendered from a view model (`viewmodels`) the controller fills from what it already
keeps (its reconcile results, the generations' records, the informer caches), so this module is pure:
view in, HTML out.
No script is needed: the pages reload themselves (`<meta http-equiv="refresh">`), so they work with
JavaScript disabled; there are no forms and no links that change anything. Every text is escaped, and
the view model carries names, states, counts and planner's own messages, never an object's data, so no
Secret value can reach a page. The last apply is drawn as `plan --graph -o svg` draws it (Graphviz's
`dot`), or listed as its ordered tasks where Graphviz is not installed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape

from planner.controller.objecthealth import ObjectHealth
from planner.controller.viewmodels import LastApply, Overview, PlanView
from planner.errors import UsageError
from planner.generations import Listed
from planner.monitor.pool_members import PoolStatus
from planner.output.graph_view import Drawing, drawing, to_svg

REFRESH_SECONDS = 10
HEALTH_CLASSES = {
    "Current": "ok",
    "True": "ok",
    "InProgress": "busy",
    "Unknown": "busy",
    "Terminating": "busy",
    "Failed": "bad",
    "False": "bad",
    "NotFound": "bad",
}


_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #1f2328; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { text-align: left; padding: .3em .8em; border-bottom: 1px solid #d0d7de; vertical-align: top; }
th { background: #f6f8fa; }
.ok { color: #1a7f37; font-weight: 600; } .busy { color: #9a6700; font-weight: 600; }
.bad { color: #cf222e; font-weight: 600; } .drifted { background: #fff8c5; }
.corrected { background: #ddf4ff; } .drift { font-weight: 600; }
.muted { color: #57606a; } ul.tree { list-style: none; padding-left: 1.2em; }
pre { background: #f6f8fa; padding: .8em; overflow-x: auto; }
#last-apply svg { max-width: 100%; height: auto; }
""".strip()


def _page(title: str, body: Iterable[str]) -> str:
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">',
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
            *body,
            "</body></html>",
            "",
        ]
    )


def _state(value: str) -> str:
    return f'<span class="{HEALTH_CLASSES.get(value, "busy")}">{escape(value)}</span>'


def _ago(when: datetime | None, now: datetime) -> str:
    if when is None:
        return '<span class="muted">never</span>'
    seconds = max(0, int((now - when).total_seconds()))
    spoken = (
        f"{seconds}s" if seconds < 120 else f"{seconds // 60}m" if seconds < 7200 else f"{seconds // 3600}h"
    )
    return f'<time datetime="{when.isoformat()}">{spoken} ago</time>'


def _row(cells: Sequence[str], *, css: str = "") -> str:
    css_attribute = f' class="{css}"' if css else ""
    return f"<tr{css_attribute}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _table(headers: Sequence[str], rows: Sequence[str], *, empty: str) -> str:
    if not rows:
        return f'<p class="muted">{escape(empty)}</p>'
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


_DRIFT_TITLES = {
    "drifted": "the cluster moved away from what was applied, and it was not put back",
    "corrected": "the cluster moved away from what was applied; the controller put it back",
}


def _drift_mark(plan: PlanView) -> str:
    """How a plan's row is marked: `drifted` (drift left as found), `corrected`, or not at all."""
    return "drifted" if plan.drifted else "corrected" if plan.corrected else ""


def _drift(plan: PlanView, now: datetime) -> str:
    if not plan.drift_found:
        return '<span class="muted">none</span>'
    counts = f"{plan.drift_found} found, {plan.drift_corrected} corrected"
    when = f" {_ago(plan.drift_at, now)}" if plan.drift_at is not None else ""
    return f'<span class="drift" title="{_DRIFT_TITLES.get(_drift_mark(plan), "")}">{counts}</span>{when}'


def _plan_cells(plan: PlanView, now: datetime) -> list[str]:
    """Source, Ready, Message, Last reconcile, Last drift, Generation."""
    return [
        escape(plan.source),
        _state(plan.ready) + (f" {escape(plan.reason)}" if plan.reason else ""),
        escape(plan.message),
        _ago(plan.last_reconcile, now),
        _drift(plan, now),
        escape(str(plan.generation)) if plan.generation is not None else "",
    ]


def _plan_row(plan: PlanView, now: datetime) -> str:
    link = f'<a href="{plan.path}">{escape(plan.namespace)}/{escape(plan.name)}</a>'
    return _row([link, *_plan_cells(plan, now)], css=_drift_mark(plan))


def _pool_row(pool: PoolStatus) -> str:
    cells = [escape(pool.namespace), escape(pool.pool), str(pool.size), str(pool.ready), str(pool.unclaimed)]
    return _row([*cells, str(pool.claimed)])


def index_page(overview: Overview, *, now: datetime | None = None) -> str:
    """The plans a controller reconciles, with their state, and its warm pools."""
    now = now or datetime.now(UTC)
    role = "leader" if overview.leading else "standby (not leading: no reconciles run here)"
    plans = [_plan_row(plan, now) for plan in overview.plans]
    pools = [_pool_row(pool) for pool in overview.pools]
    headers = ["Plan", "Source", "Ready", "Message", "Last reconcile", "Last drift", "Generation"]
    return _page(
        "planner controller",
        [
            "<h1>planner controller</h1>",
            f'<p class="muted">{escape(overview.identity)} — {escape(role)}; read-only, reloads every '
            f"{REFRESH_SECONDS}s</p>",
            f"<h2>Plans ({len(plans)})</h2>",
            _table(headers, plans, empty="No plans yet."),
            f"<h2>Warm pools ({len(pools)})</h2>",
            _table(
                ["Namespace", "Pool", "Size", "Ready", "Unclaimed", "Claimed"], pools, empty="No warm pools."
            ),
        ],
    )


def _tree(objects: Sequence[ObjectHealth]) -> str:
    if not objects:
        return ""
    items = []
    for obj in objects:
        message = f' <span class="muted">{escape(obj.message)}</span>' if obj.message else ""
        label = f"{escape(obj.kind)}/{escape(obj.name)} {_state(obj.status)}{message}"
        items.append(f"<li>{label}{_tree(obj.children)}</li>")
    return f'<ul class="tree">{"".join(items)}</ul>'


def _generation_row(listed: Listed) -> str:
    cells = [str(listed.number), escape(listed.result), escape(listed.started), escape(listed.revision)]
    return _row([*cells, escape(listed.who), escape(listed.changes)])


def _task_list(drawn: Drawing, last: LastApply) -> str:
    lines = [
        f"{task.id}" + (f" <- {', '.join(task.predecessors)}" if task.predecessors else "")
        for task in last.execution.tasks
    ]
    return f"<pre>{escape(chr(10).join(lines))}</pre>"


def _last_apply(last: LastApply | None, now: datetime, *, svg: bool) -> str:
    if last is None:
        return '<p class="muted">No apply since the controller started.</p>'
    drawn = drawing(last.execution, last.changeset)
    caption = f"<p>{escape(drawn.caption)}, {_ago(last.finished, now)}</p>"
    try:
        picture = to_svg([drawn]) if svg else _task_list(drawn, last)
    except UsageError:  # no Graphviz here
        picture = _task_list(drawn, last)
    start = picture.find("<svg")  # inline: without the XML prologue and doctype dot writes first
    return caption + f'<div id="last-apply">{picture[start:] if start > 0 else picture}</div>'


def plan_page(plan: PlanView, *, now: datetime | None = None, svg: bool = True) -> str:
    """One plan: its state, its generations, its objects as a tree with health, the last apply's graph
    (`svg=False`: its task list, as without Graphviz)."""
    now = now or datetime.now(UTC)
    generations = [_generation_row(listed) for listed in plan.generations]
    return _page(
        f"plan {plan.namespace}/{plan.name}",
        [
            '<p><a href="/">← all plans</a></p>',
            f"<h1>Plan {escape(plan.namespace)}/{escape(plan.name)}</h1>",
            _table(
                ["Source", "Ready", "Message", "Last reconcile", "Last drift", "Generation"],
                [_row(_plan_cells(plan, now), css=_drift_mark(plan))],
                empty="",
            ),
            "<h2>Objects</h2>",
            f'<div id="objects">{_tree(plan.objects)}</div>'
            if plan.objects
            else '<p class="muted">No objects yet.</p>',
            f"<h2>Generations ({len(generations)})</h2>",
            _table(
                ["#", "Result", "Started", "Revision", "Who", "Changes"],
                generations,
                empty="None recorded yet.",
            ),
            "<h2>Last apply</h2>",
            _last_apply(plan.last_apply, now, svg=svg),
        ],
    )


__all__ = ["REFRESH_SECONDS", "ObjectHealth", "Overview", "PlanView", "index_page", "plan_page"]
