"""The execution plan as a picture: Mermaid (GitHub and GitLab render it in Markdown) or Graphviz DOT.

One node per task, styled by the kind of change it makes (create, update, replace, delete, prune, wait,
and grey for a wait on an unchanged object), the tasks that destroy data marked; one edge per
predecessor, as `graph.solve` reduced them, so the picture is exactly the order `apply` follows. A plan
with more than `MAX_NODES` tasks is drawn collapsed: one node per (style, step, kind) with a count, so a
1,000-workload plan stays a readable picture inside a pull-request comment; the caption says so.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from planner.changeset import Change, ChangeSet
from planner.dataloss import destroys_data
from planner.errors import UsageError
from planner.graph import ExecutionPlan, Task
from planner.plan.durations import format_duration

PICTURE_FORMATS = ("mermaid", "dot", "svg")
NO_GRAPHVIZ = (
    "-o svg needs Graphviz's `dot` on PATH (Debian/Ubuntu: apt-get install graphviz); "
    "-o dot prints the same graph as text, and -o mermaid one GitHub renders"
)

MAX_NODES = 100
DATA_LOSS_MARK = "⚠ destroys data"

# Colours from GitHub's own diff palette, so a comment reads like the rest of a review.
STYLES: dict[str, tuple[str, str, str]] = {  # style: (fill, stroke, text)
    "create": ("#dafbe1", "#1a7f37", "#1f2328"),
    "update": ("#fff8c5", "#9a6700", "#1f2328"),
    "replace": ("#fbefff", "#8250df", "#1f2328"),
    "delete": ("#ffebe9", "#cf222e", "#1f2328"),
    "prune": ("#ffebe9", "#cf222e", "#1f2328"),
    "wait": ("#ddf4ff", "#0969da", "#1f2328"),
    "unchanged": ("#f6f8fa", "#8c959f", "#8c959f"),
    "bookkeeping": ("#f6f8fa", "#57606a", "#1f2328"),
}


@dataclass(frozen=True, kw_only=True)
class Node:
    id: str
    lines: tuple[str, ...]
    style: str
    data_loss: bool = False


@dataclass(frozen=True, kw_only=True)
class Drawing:
    """One plan's picture: `tasks` counts the execution plan's tasks, which equals `len(nodes)` unless
    the drawing is `collapsed`."""

    title: str
    nodes: tuple[Node, ...]
    edges: tuple[tuple[str, str], ...]
    tasks: int
    collapsed: bool = False

    @property
    def caption(self) -> str:
        shown = f"{self.tasks} tasks"
        if self.collapsed:
            shown += f", collapsed into {len(self.nodes)} groups by step and kind"
        return f"{self.title}: {shown}"


def _style(task: Task, change: Change | None) -> str:
    if task.action in ("ensure", "parent", "record-run"):
        return "bookkeeping"
    if change is None or change.action == "noop":
        return "unchanged"
    if task.is_wait:
        return "wait"
    if task.action == "delete-hook":
        return "delete"
    if change.action == "delete":
        return "delete" if change.transition else "prune"
    if change.action == "replace":
        return "replace"
    return "create" if task.action == "create" and change.action == "create" else "update"


def _destroys(task: Task, change: Change | None) -> bool:
    return change is not None and task.action == "delete" and destroys_data(change)


def _task_lines(task: Task, data_loss: bool) -> tuple[str, ...]:
    lines = [task.id]
    if task.is_wait and task.timeout is not None:
        lines.append(f"timeout {format_duration(task.timeout)}")
    if data_loss:
        lines.append(DATA_LOSS_MARK)
    return tuple(lines)


def drawing(execution: ExecutionPlan, changeset: ChangeSet, *, max_nodes: int = MAX_NODES) -> Drawing:
    """The picture of one plan's execution; collapsed by step and kind above `max_nodes` tasks."""
    changes = {change.ref: change for change in changeset.changes}
    title = f"plan {execution.plan} (namespace {execution.namespace})"
    nodes: list[Node] = []
    ids: dict[str, str] = {}
    for index, task in enumerate(execution.tasks):
        change = changes.get(task.ref)
        data_loss = _destroys(task, change)
        ids[task.id] = f"t{index}"
        style = _style(task, change)
        nodes.append(
            Node(id=f"t{index}", lines=_task_lines(task, data_loss), style=style, data_loss=data_loss)
        )
    edges = tuple((ids[before], ids[task.id]) for task in execution.tasks for before in task.predecessors)
    whole = Drawing(title=title, nodes=tuple(nodes), edges=edges, tasks=len(execution.tasks))
    return _collapsed(whole, execution.tasks) if len(nodes) > max_nodes else whole


def _collapsed(whole: Drawing, tasks: Sequence[Task]) -> Drawing:
    groups: dict[tuple[str, str, str], list[Node]] = {}
    for node, task in zip(whole.nodes, tasks, strict=True):
        groups.setdefault((node.style, task.action, task.ref.kind), []).append(node)
    group_of: dict[str, str] = {}
    nodes: list[Node] = []
    for index, ((style, action, kind), members) in enumerate(groups.items()):
        for member in members:
            group_of[member.id] = f"g{index}"
        data_loss = any(member.data_loss for member in members)
        lines = (f"{action} {kind} × {len(members)}", *((DATA_LOSS_MARK,) if data_loss else ()))
        nodes.append(Node(id=f"g{index}", lines=lines, style=style, data_loss=data_loss))
    edges = tuple(
        dict.fromkeys((group_of[a], group_of[b]) for a, b in whole.edges if group_of[a] != group_of[b])
    )
    return Drawing(title=whole.title, nodes=tuple(nodes), edges=edges, tasks=whole.tasks, collapsed=True)


# --- Mermaid -----------------------------------------------------------------------------------------


def _mermaid_text(text: str) -> str:
    """A label safe inside `["..."]`: Mermaid's entity codes for the characters its parser reads."""
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(char, code)
    return text


def to_mermaid(drawings: Sequence[Drawing]) -> str:
    """A Mermaid flowchart, left to right, one subgraph per plan."""
    lines = ["flowchart LR"]
    for style, (fill, stroke, colour) in STYLES.items():
        dashed = ",stroke-dasharray:5 5" if style == "prune" else ""
        lines.append(f"  classDef {style} fill:{fill},stroke:{stroke},color:{colour}{dashed}")
    lines.append("  classDef dataLoss stroke-width:4px")
    for index, drawn in enumerate(drawings):
        prefix = f"p{index}"
        lines.append(f'  subgraph {prefix}["{_mermaid_text(drawn.caption)}"]')
        for node in drawn.nodes:
            label = "<br/>".join(_mermaid_text(line) for line in node.lines)
            lines.append(f'    {prefix}{node.id}["{label}"]:::{node.style}')
        lines.append("  end")
        lines += [f"  {prefix}{before} --> {prefix}{after}" for before, after in drawn.edges]
        lost = [f"{prefix}{node.id}" for node in drawn.nodes if node.data_loss]
        if lost:
            lines.append(f"  class {','.join(lost)} dataLoss")
    return "\n".join(lines) + "\n"


# --- Graphviz DOT ------------------------------------------------------------------------------------


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(drawings: Sequence[Drawing]) -> str:
    """A Graphviz digraph, left to right, one cluster per plan."""
    lines = [
        "digraph plan {",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [color="#57606a"];',
    ]
    for index, drawn in enumerate(drawings):
        prefix = f"p{index}"
        lines.append(f"  subgraph cluster_{prefix} {{")
        lines.append(f'    label="{_dot_text(drawn.caption)}";')
        for node in drawn.nodes:
            fill, stroke, colour = STYLES[node.style]
            label = "\\n".join(_dot_text(line) for line in node.lines)
            extra = ', style="rounded,filled,dashed"' if node.style == "prune" else ""
            width = 3 if node.data_loss else 1
            lines.append(
                f'    {prefix}{node.id} [label="{label}", fillcolor="{fill}", color="{stroke}", '
                f'fontcolor="{colour}", penwidth={width}{extra}];'
            )
        lines.append("  }")
        lines += [f"  {prefix}{before} -> {prefix}{after};" for before, after in drawn.edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(drawings: Sequence[Drawing]) -> str:
    """The DOT picture laid out by Graphviz's `dot` as SVG."""
    dot = shutil.which("dot")
    if dot is None:
        raise UsageError(NO_GRAPHVIZ)
    laid_out = subprocess.run(
        [dot, "-Tsvg"], input=to_dot(drawings), capture_output=True, text=True, check=False
    )
    if laid_out.returncode != 0:
        raise UsageError(f"Graphviz's dot failed: {laid_out.stderr.strip()}")
    return laid_out.stdout


def picture(drawings: Sequence[Drawing], picture_format: str) -> str:
    """The drawings in one of `PICTURE_FORMATS`."""
    return {"mermaid": to_mermaid, "dot": to_dot, "svg": to_svg}[picture_format](drawings)


__all__ = [
    "MAX_NODES",
    "PICTURE_FORMATS",
    "Drawing",
    "Node",
    "drawing",
    "picture",
    "to_dot",
    "to_mermaid",
    "to_svg",
]
